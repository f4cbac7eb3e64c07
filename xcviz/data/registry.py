"""The bundled real data sets and the one function that turns a name or a path into data.

Bundled sets live in the project's `data/` folder (override with XCVIZ_DATA), one folder per set
with `NAME_train.txt.xz`, `NAME_test.txt.xz` and a `SOURCE.md` giving their provenance. Nothing is
downloaded, ever.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .dataset import Dataset
from .errors import DatasetFormatError
from .shards import Shards, is_sharded, open_shards
from .sizes import refuse_unused_sizes
from .textio import detect_format, load_cached, read_libsvm


BUNDLED = ("bibtex", "delicious")


def data_dir() -> Path:
    """The folder holding the bundled data sets."""
    env = os.environ.get("XCVIZ_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def bundled() -> list[str]:
    """Names of the bundled data sets present on this machine."""
    return [name for name in BUNDLED if (data_dir() / name / f"{name}_train.txt.xz").exists()]


def _split_path(name: str, split: str) -> Path:
    return data_dir() / name / f"{name}_{split}.txt.xz"


def bundled_files(name: str) -> list[Path]:
    """The (train, test) files of a bundled data set."""
    return [_split_path(name, s) for s in ("train", "test")]


def load(name: str) -> tuple[Dataset, Dataset]:
    """The (train, test) splits of a bundled data set, e.g. load("bibtex")."""
    if name not in BUNDLED:
        raise KeyError(f"no bundled data set {name!r}; bundled: {', '.join(BUNDLED)}")
    train, test = (load_cached(_split_path(name, s)) for s in ("train", "test"))
    train.name, test.name = f"{name}/train", f"{name}/test"
    return train, test


def load_files(train_path: str | Path, test_path: str | Path | None = None, *, n_features: int | None = None,
               for_training: bool = True, labels: list[int] | None = None) -> tuple[Dataset, Dataset | None]:
    """A training file and an optional test file, XC text or LIBSVM (detected), gz/xz or plain.

    XC files go through the npz cache, and their headers fix D and L: a test file reaching beyond
    the training file's is refused. LIBSVM files declare neither: the test file uses the training
    file's label map, and both splits are widened to the larger D and L (unless `n_features` is
    given), so a feature or class seen only in the test split is simply never predicted. A test
    file must be in the training file's format; `for_training` refuses an XC training file whose
    header declares far larger sizes than its rows use. `labels`: a LIBSVM file's labels by column
    as a model trained on it keeps them (`label_values`), to read a test file on its own with its
    training file's map (labels the model never saw get the columns after)."""
    fmt = detect_format(train_path)
    if test_path is not None and detect_format(test_path) != fmt:
        raise DatasetFormatError(str(test_path), 1, f"is not in the format of the training file {train_path} "
                                 f"({'an XC file starts with the header N D L' if fmt == 'xc' else 'LIBSVM, no header'})")
    if fmt == "libsvm":
        given = None if labels is None else {int(v): k for k, v in enumerate(labels)}
        train, label_map = read_libsvm(train_path, n_features=n_features, label_map=given)
        train = _trainable(train) if for_training else train
        if test_path is None:
            return _labelled(train, label_map), None
        seen = len(label_map)
        test, label_map = read_libsvm(test_path, n_features=n_features, label_map=label_map)
        width = max(train.n_features, test.n_features)
        if for_training:  # the test file widens what is trained: checked like the training file
            refuse_unused_sizes(str(test_path), train.n + test.n, {"D": (width, train.X.nnz + test.X.nnz)},
                                "with the training file's, the")
            unseen = len(label_map) - seen
            if unseen > max(UNSEEN_FLOOR, seen):
                raise DatasetFormatError(str(test_path), None, f"holds {unseen} labels the training file never has "
                                         f"(it has {seen}): refused (training would allocate for each)")
        return (_labelled(_reshaped(train, width, len(label_map)), label_map),
                _labelled(_reshaped(test, width, len(label_map)), label_map))
    train = load_cached(train_path, format="xc")
    train = _trainable(train) if for_training else train
    if test_path is None:
        return train, None
    return train, _test_for(train, load_cached(test_path, format="xc"))


UNSEEN_FLOOR = 2**10  # a LIBSVM test file may add this many labels unseen in training, or as many as it has


def _trainable(train: Dataset) -> Dataset:
    """A training set whose D and L its rows can use (`refuse_unused_sizes`)."""
    refuse_unused_sizes(str(train.path), train.n, {"D": (train.n_features, train.X.nnz),
                                                   "L": (train.n_labels, train.Y.nnz)})
    return train


def _labelled(ds: Dataset, label_map: dict[int, int]) -> Dataset:
    """ds with the label of each of its columns (a LIBSVM map: label -> column)."""
    values = np.empty(len(label_map), np.int64)
    values[list(label_map.values())] = list(label_map)
    ds.label_values = values
    return ds


def _test_for(train: Dataset, test: Dataset) -> Dataset:
    """An XC test set checked against, and shaped like, its training set; one of no rows is refused
    (every caller evaluates on it, after training)."""
    if test.n == 0:
        raise DatasetFormatError(str(test.path), None, "no rows to test on")
    for what, got, limit, index in (("feature", test.n_features, train.n_features, test.X.indices),
                                    ("label", test.n_labels, train.n_labels, test.Y.indices)):
        if got > limit and index.size and index.max() >= limit:
            raise DatasetFormatError(str(test.path), None, f"has {what} index {int(index.max())}, "
                                     f"but the training file has only {limit} {what}s")
    return _reshaped(test, train.n_features, train.n_labels)


def _reshaped(ds: Dataset, n_features: int, n_labels: int) -> Dataset:
    """The same rows with X n x n_features and Y n x n_labels (indices must fit)."""
    X = sp.csr_matrix((ds.X.data, ds.X.indices, ds.X.indptr), shape=(ds.n, n_features))
    Y = sp.csr_matrix((ds.Y.data, ds.Y.indices, ds.Y.indptr), shape=(ds.n, n_labels))
    return Dataset(X=X, Y=Y, name=ds.name, path=ds.path)


def resolve(spec: str, test: str | None = None) -> tuple[Dataset | Shards, Dataset | None]:
    """A bundled name ("bibtex"), a training-file path (with an optional test path) or a sharded
    folder (`xcviz shard`; its rows unread until asked for, its test split unless `test` is given)."""
    if is_sharded(spec):
        shards = open_shards(spec)
        if test is None:
            return shards, shards.test_split()
        if detect_format(test) != "xc":
            raise DatasetFormatError(test, 1, "is not an XC file (header N D L) like the parts of a sharded folder")
        return shards, _test_for(shards, load_cached(test, format="xc"))
    if spec in BUNDLED and not Path(spec).exists():
        train, bundled_test = load(spec)
        if test is None:
            return train, bundled_test
        if detect_format(test) != "xc":
            raise DatasetFormatError(test, 1, f"is not an XC file (header N D L) like the bundled {spec}")
        return train, _test_for(train, load_cached(test, format="xc"))
    return load_files(spec, test)
