"""A dataset named by where it lives, small enough to travel with every Dask task, and the
per-process cache that resolves it.

A cluster run's workers read their training data themselves instead of receiving it from the
driver: a scatter with `broadcast=True` is trimmed back to one copy by Dask's memory manager
(distributed#8657), and every byte of it passes through the driver's connection. A `DataSource`
names the data as the run spec does (a bundled name, a file or a sharded folder, and a test file
or None) with the size and modification time of every file it reads, so that a worker reading a
file that changed since the driver read it fails, naming the file, instead of training on other
rows. `training_data` reads it once per process and keeps the last few read (`CACHED`).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

from .dataset import Dataset
from .registry import BUNDLED, bundled_files, resolve
from .shards import is_sharded, open_shards

CACHED = 2  # datasets a process keeps: a worker serves one run at a time, and may see the next's start


def data_files(dataset: str, test: str | None = None) -> tuple[list[Path], list[Path]]:
    """The files `resolve(dataset, test)` reads: the bundled data's, and the others (a file, a test
    file, a sharded folder's manifest (first), parts and test split)."""
    tests = [Path(test)] if test is not None else []
    if dataset in BUNDLED and not Path(dataset).exists():
        return bundled_files(dataset), tests
    if is_sharded(dataset):
        return [], open_shards(dataset).files() + tests
    return [], [Path(dataset), *tests]


class DataChanged(RuntimeError):
    """A file of a DataSource differs from the one the driver stamped."""


class DataSource(NamedTuple):
    """dataset and test as in the run spec (xcviz.data.registry.resolve); stamp: (path, size,
    mtime_ns) of every file read, taken where the run was launched."""

    dataset: str
    test: str | None
    stamp: tuple[tuple[str, int, int], ...]

    @classmethod
    def of(cls, dataset: str, test: str | None = None) -> DataSource:
        """The source of `dataset` (and `test`), stamped with the files it reads as they are now."""
        bundled, own = data_files(dataset, test)
        return cls(dataset, test, tuple(_stamp(f) for f in [*bundled, *own]))

    def check(self) -> None:
        """Raise DataChanged naming the first file whose size or modification time differs."""
        for path, size, mtime in self.stamp:
            try:
                now = _stamp(path)
            except OSError as exc:
                raise DataChanged(f"training file {path} cannot be read here: {exc.strerror}") from None
            if now[1:] != (size, mtime):
                raise DataChanged(f"training file {path} differs from the one the run was launched with "
                                  "(size or modification time)")


def _stamp(path: str | os.PathLike) -> tuple[str, int, int]:
    st = os.stat(path)
    return os.fspath(path), int(st.st_size), int(st.st_mtime_ns)


_CACHE: OrderedDict[DataSource, Dataset] = OrderedDict()
_LOCK = threading.Lock()


def training_data(source: DataSource) -> Dataset:
    """The training set `source` names, read once per process (its files checked against the
    stamp first, every time: a cached copy of a file since rewritten is not reused)."""
    source.check()
    with _LOCK:
        if source in _CACHE:
            _CACHE.move_to_end(source)
            return _CACHE[source]
        train, _ = resolve(source.dataset, source.test)
        if not isinstance(train, Dataset):  # a sharded folder: its parts read and stacked here
            train = train.dataset()
        _CACHE[source] = train
        while len(_CACHE) > CACHED:
            _CACHE.popitem(last=False)
        return train
