"""The bundled real data sets and the one function that turns a name or a path into data.

Bundled sets live in the project's `data/` folder (override with XCVIZ_DATA), one folder per set
with `NAME_train.txt.xz`, `NAME_test.txt.xz` and a `SOURCE.md` giving their provenance. Nothing is
downloaded, ever.
"""
from __future__ import annotations

import os
from pathlib import Path

import scipy.sparse as sp

from .dataset import Dataset
from .errors import DatasetFormatError
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


def load(name: str) -> tuple[Dataset, Dataset]:
    """The (train, test) splits of a bundled data set, e.g. load("bibtex")."""
    if name not in BUNDLED:
        raise KeyError(f"no bundled data set {name!r}; bundled: {', '.join(BUNDLED)}")
    train, test = (load_cached(_split_path(name, s)) for s in ("train", "test"))
    train.name, test.name = f"{name}/train", f"{name}/test"
    return train, test


def load_files(train_path: str | Path, test_path: str | Path | None = None, *,
               n_features: int | None = None) -> tuple[Dataset, Dataset | None]:
    """A training file and an optional test file, XC text or LIBSVM (detected), gz/xz or plain.

    XC files go through the npz cache, and their headers fix D and L: a test file reaching beyond
    the training file's is refused. LIBSVM files declare neither: the test file uses the training
    file's label map, and both splits are widened to the larger D and L (unless `n_features` is
    given), so a feature or class seen only in the test split is simply never predicted."""
    if detect_format(train_path) == "libsvm":
        train, label_map = read_libsvm(train_path, n_features=n_features)
        if test_path is None:
            return train, None
        test, label_map = read_libsvm(test_path, n_features=n_features, label_map=label_map)
        width = max(train.n_features, test.n_features)
        return _reshaped(train, width, len(label_map)), _reshaped(test, width, len(label_map))
    train = load_cached(train_path)
    if test_path is None:
        return train, None
    test = load_cached(test_path)
    for what, got, limit, index in (("feature", test.n_features, train.n_features, test.X.indices),
                                    ("label", test.n_labels, train.n_labels, test.Y.indices)):
        if got > limit and index.size and index.max() >= limit:
            raise DatasetFormatError(str(test.path), None, f"has {what} index {int(index.max())}, "
                                     f"but the training file has only {limit} {what}s")
    return train, _reshaped(test, train.n_features, train.n_labels)


def _reshaped(ds: Dataset, n_features: int, n_labels: int) -> Dataset:
    """The same rows with X n x n_features and Y n x n_labels (indices must fit)."""
    X = sp.csr_matrix((ds.X.data, ds.X.indices, ds.X.indptr), shape=(ds.n, n_features))
    Y = sp.csr_matrix((ds.Y.data, ds.Y.indices, ds.Y.indptr), shape=(ds.n, n_labels))
    return Dataset(X=X, Y=Y, name=ds.name, path=ds.path)


def resolve(spec: str, test: str | None = None) -> tuple[Dataset, Dataset | None]:
    """A bundled name ("bibtex") or a training-file path (with an optional test path)."""
    if spec in BUNDLED and test is None and not Path(spec).exists():
        return load(spec)
    return load_files(spec, test)
