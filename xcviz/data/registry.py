"""The bundled real data sets and the one function that turns a name or a path into data.

Bundled sets live in the project's `data/` folder (override with XCVIZ_DATA), one folder per set
with `NAME_train.txt.xz`, `NAME_test.txt.xz` and a `SOURCE.md` giving their provenance. Nothing is
downloaded, ever.
"""
from __future__ import annotations

import os
from pathlib import Path

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

    XC files go through the npz cache. LIBSVM label values are mapped to columns by the training
    file's map, so both splits agree; the test split gets the training split's width."""
    if detect_format(train_path) == "libsvm":
        train, label_map = read_libsvm(train_path, n_features=n_features)
        if test_path is None:
            return train, None
        test, _ = read_libsvm(test_path, n_features=n_features, label_map=label_map)
    else:
        train = load_cached(train_path)
        if test_path is None:
            return train, None
        test = load_cached(test_path)
    return train, _conform(test, train)


def _conform(test: Dataset, train: Dataset) -> Dataset:
    """Give the test split the training split's width; refuse a test split that is wider."""
    import scipy.sparse as sp

    if test.n_features > train.n_features and test.X.nnz and test.X.indices.max() >= train.n_features:
        raise DatasetFormatError(str(test.path), None, f"has feature index {int(test.X.indices.max())}, "
                                 f"but the training file has only {train.n_features} features")
    if test.n_labels > train.n_labels and test.Y.nnz and test.Y.indices.max() >= train.n_labels:
        raise DatasetFormatError(str(test.path), None, f"has label index {int(test.Y.indices.max())}, "
                                 f"but the training file has only {train.n_labels} labels")
    X = sp.csr_matrix((test.X.data, test.X.indices, test.X.indptr), shape=(test.n, train.n_features))
    Y = sp.csr_matrix((test.Y.data, test.Y.indices, test.Y.indptr), shape=(test.n, train.n_labels))
    return Dataset(X=X, Y=Y, name=test.name, path=test.path)


def resolve(spec: str, test: str | None = None) -> tuple[Dataset, Dataset | None]:
    """A bundled name ("bibtex") or a training-file path (with an optional test path)."""
    if spec in BUNDLED and test is None and not Path(spec).exists():
        return load(spec)
    return load_files(spec, test)
