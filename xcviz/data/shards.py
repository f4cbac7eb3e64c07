"""Sharded data sets: a folder of XC part files and a manifest, read part by part where needed.

For data that does not fit in one process (DS-MLR's "data does not fit" regime): `xcviz shard DATA
OUTDIR --parts N` writes the training rows in order as N XC files `part-00000.txt`, ... (each with
its own header "n_p D L"), the test split (if any) likewise as up to N parts `test-00000.txt`, ...,
and `manifest.json`:

    {"format": "xcviz-shards", "version": 1, "name": ..., "n_rows": N, "n_features": D,
     "n_labels": L, "parts": [{"file": "part-00000.txt", "rows": n_0, "labelled": m_0}, ...],
     "test_parts": [{"file": "test-00000.txt", ...}, ...], "test": null}

Folders written before the test split was sharded name it as one file, `"test": "test.txt"`
(no `test_parts`); they are still read, that file whole.

`labelled` counts a part's rows with at least one label (the rows a multiclass solver trains on),
so that a Dask worker can place the global row numbers of its row blocks without the driver ever
reading a part. File names are bare names inside the folder (no path separators): the manifest
cannot point a reader elsewhere. Any solver can train on a sharded folder (`Shards.X` / `.Y`
read every part, concatenated); DS-MLR's sync on Dask never does: its workers read the parts
(`xcviz.solvers.dsmlr.distributed`), and its workers evaluate the test parts the same way.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._util.atomic_write import sync_files, write_atomic
from .._util.jsontext import TooDeep, loads_bounded
from .._util.regular_file import open_regular
from .dataset import Dataset
from .errors import DatasetFormatError
from .sizes import refuse_unused_sizes
from .textio import max_size, read_xc, write_xc

MANIFEST = "manifest.json"
FORMAT = "xcviz-shards"
MAX_PARTS = 4096
MAX_MANIFEST_BYTES = 2**20
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def is_sharded(path: str | os.PathLike) -> bool:
    """Whether `path` is a folder holding a shard manifest."""
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


@dataclass
class Shards:
    """A sharded training set: its sizes and parts from the manifest; rows are read only when
    `X`, `Y` or `part` is asked for."""

    folder: Path
    n_rows: int
    n_features: int
    n_labels: int
    parts: list[dict]
    test: str | None = None  # an unsharded test split (folders of before test_parts)
    name: str = ""
    test_parts: list[dict] = field(default_factory=list)
    _whole: Dataset | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return self.n_rows

    def files(self) -> list[Path]:
        """Every file a run on this data reads: the manifest, the parts, the test split."""
        return ([self.folder / MANIFEST] + self.part_paths() + [self.folder / p["file"] for p in self.test_parts]
                + ([self.folder / self.test] if self.test else []))

    def part_paths(self) -> list[Path]:
        return [self.folder / p["file"] for p in self.parts]

    def part(self, k: int) -> Dataset:
        """Part k, checked against the manifest (sizes, row counts)."""
        return read_part(self.folder / self.parts[k]["file"], self.parts[k], self.n_features, self.n_labels)

    def dataset(self) -> Dataset:
        """Every part, in order, as one Dataset (for solvers that train in one process)."""
        if self._whole is None:
            try:
                parts = [self.part(k) for k in range(len(self.parts))]
                whole = Dataset(X=sp.vstack([p.X for p in parts], format="csr"),
                                Y=sp.vstack([p.Y for p in parts], format="csr"), name=self.name, path=str(self.folder))
            except MemoryError:
                raise MemoryError(f"{self.folder}: not enough memory to read its {self.n_rows} rows into this "
                                  "process (DS-MLR's sync on a Dask cluster reads a sharded folder on its workers "
                                  "instead)") from None
            refuse_unused_sizes(str(self.folder / MANIFEST), whole.n, {"D": (whole.n_features, whole.X.nnz),
                                                                     "L": (whole.n_labels, whole.Y.nnz)}, "the parts'")
            self._whole = whole
        return self._whole

    @property
    def X(self) -> sp.csr_matrix:
        return self.dataset().X

    @property
    def Y(self) -> sp.csr_matrix:
        return self.dataset().Y

    @property
    def is_multiclass(self) -> bool:
        return self.dataset().is_multiclass

    def test_split(self) -> "Shards | Dataset | None":
        """The test split, shaped like the training set: its parts as Shards of their own (rows
        unread until asked for, so that DS-MLR's Dask workers can evaluate them), the one file of
        an older folder read here, or None."""
        if self.test_parts:
            return Shards(self.folder, sum(p["rows"] for p in self.test_parts), self.n_features, self.n_labels,
                          self.test_parts, name=f"{self.name}/test")
        if self.test is None:
            return None
        ds = read_xc(self.folder / self.test, name=f"{self.name}/test")
        if (ds.n_features, ds.n_labels) != (self.n_features, self.n_labels):
            raise DatasetFormatError(str(self.folder / self.test), 1, f"declares D = {ds.n_features}, L = "
                                     f"{ds.n_labels}; the manifest says D = {self.n_features}, L = {self.n_labels}")
        return ds


def read_part(path: Path, entry: dict, n_features: int, n_labels: int) -> Dataset:
    """One part file, refused (naming it) when its header or rows disagree with the manifest."""
    ds = read_xc(path)
    labelled = int(np.count_nonzero(np.diff(ds.Y.indptr)))
    if (ds.n, ds.n_features, ds.n_labels, labelled) != (entry["rows"], n_features, n_labels, entry["labelled"]):
        raise DatasetFormatError(str(path), 1, f"has {ds.n} rows ({labelled} with a label), D = {ds.n_features}, "
                                 f"L = {ds.n_labels}; the manifest says {entry['rows']} ({entry['labelled']}), "
                                 f"D = {n_features}, L = {n_labels}: the folder was changed after sharding")
    return ds


def _count(manifest: Path, where: str, value, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise DatasetFormatError(str(manifest), None, f"{where} must be an integer from 0 to {limit}")
    return value


def _entries(manifest: Path, key: str, raw, n_rows: int) -> list[dict]:
    """The checked part list `key` of a manifest (file names, row counts)."""
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_PARTS:
        raise DatasetFormatError(str(manifest), None, f"{key} must be a list of 1 to {MAX_PARTS} entries")
    parts = []
    for k, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise DatasetFormatError(str(manifest), None, f"{key}[{k}] must be an object")
        rows = _count(manifest, f"{key}[{k}].rows", entry.get("rows"), n_rows)
        parts.append({"file": _file_name(manifest, f"{key}[{k}].file", entry.get("file")), "rows": rows,
                      "labelled": _count(manifest, f"{key}[{k}].labelled", entry.get("labelled"), rows)})
    return parts


def _file_name(manifest: Path, where: str, value) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value) or value == MANIFEST:
        raise DatasetFormatError(str(manifest), None, f"{where} must be a plain file name inside the folder "
                                 "(letters, digits, '.', '_', '-')")
    return value


def open_shards(folder: str | os.PathLike) -> Shards:
    """The sharded data set in `folder`, its manifest checked (types, bounds, file names)."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    try:
        with open_regular(manifest) as f:
            if os.fstat(f.fileno()).st_size > MAX_MANIFEST_BYTES:
                raise DatasetFormatError(str(manifest), None, f"larger than {MAX_MANIFEST_BYTES} bytes")
            meta = loads_bounded(f.read().decode("utf-8"))
    except TooDeep as exc:
        raise DatasetFormatError(str(manifest), None, f"{exc} in a shard manifest") from None
    except OSError as exc:
        raise DatasetFormatError(str(manifest), None, f"cannot read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise DatasetFormatError(str(manifest), line, "not a JSON shard manifest") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != 1:
        raise DatasetFormatError(str(manifest), None, f"not a shard manifest (format {FORMAT!r}, version 1)")
    limit = max_size()
    n_rows = _count(manifest, "n_rows", meta.get("n_rows"), 2**40)
    d = _count(manifest, "n_features", meta.get("n_features"), limit)
    l = _count(manifest, "n_labels", meta.get("n_labels"), limit)
    parts = _entries(manifest, "parts", meta.get("parts"), n_rows)
    if sum(p["rows"] for p in parts) != n_rows:
        raise DatasetFormatError(str(manifest), None, f"the parts' rows do not add up to n_rows = {n_rows}")
    test_parts = [] if meta.get("test_parts") is None else _entries(manifest, "test_parts", meta["test_parts"], 2**40)
    test = meta.get("test")
    test = None if test is None else _file_name(manifest, "test", test)
    if test is not None and test_parts:
        raise DatasetFormatError(str(manifest), None, "names both a test file and test_parts")
    name = meta.get("name") if isinstance(meta.get("name"), str) else folder.name
    return Shards(folder, n_rows, d, l, parts, test, name[:200], test_parts=test_parts)


def write_shards(train: Dataset, folder: str | os.PathLike, parts: int, test: Dataset | None = None) -> Shards:
    """Write `train` as `parts` contiguous, near-equal XC parts (and `test` likewise, in as many
    parts or one per row if fewer) into the new or empty `folder`; the manifest is written last,
    whole, after the parts are synced, so a folder without one is no data set, even after a power cut."""
    folder = Path(folder)
    most = min(MAX_PARTS, max(train.n, 1))
    if not 1 <= parts <= most:
        why = "the training rows" if most == train.n else f"at most {MAX_PARTS} parts"
        raise ValueError(f"--parts must be from 1 to {most} ({why}), got {parts}")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder}: exists and is not an empty folder (choose a new one)")
    folder.mkdir(parents=True, exist_ok=True)
    entries = _write_parts(folder, "part", train, parts)
    test_entries = _write_parts(folder, "test", test, min(parts, test.n)) if test is not None and test.n else []
    meta = {"format": FORMAT, "version": 1, "name": train.name or folder.name, "n_rows": train.n,
            "n_features": train.n_features, "n_labels": train.n_labels, "parts": entries,
            "test_parts": test_entries or None, "test": None}
    sync_files(folder / e["file"] for e in entries + test_entries)  # the parts on disk before the manifest
    # as readable as the parts beside it (the helper's temporary file is owner-only)
    write_atomic(folder / MANIFEST, (json.dumps(meta, indent=1) + "\n").encode("utf-8"), mode=0o644)
    return open_shards(folder)


def _write_parts(folder: Path, prefix: str, ds: Dataset, parts: int) -> list[dict]:
    """`ds` as `parts` contiguous, near-equal XC files prefix-00000.txt, ...; their manifest entries."""
    bounds = (np.arange(parts + 1) * ds.n) // parts
    entries = []
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        piece = Dataset(X=ds.X[a:b], Y=ds.Y[a:b])
        write_xc(folder / f"{prefix}-{k:05d}.txt", piece)
        entries.append({"file": f"{prefix}-{k:05d}.txt", "rows": int(b - a),
                        "labelled": int(np.count_nonzero(np.diff(piece.Y.indptr)))})
    return entries
