"""Checked numpy views of the inputs every oracle takes: CSR query rows and excluded classes."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def csr_arrays(X: sp.spmatrix, n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr int64, indices int32, data float64) of X as CSR with `n_features` columns."""
    if not sp.issparse(X):
        raise TypeError(f"queries must be a scipy sparse matrix, got {type(X).__name__}")
    X = sp.csr_matrix(X)
    if X.shape[1] != n_features:
        raise ValueError(f"queries have {X.shape[1]} features, the class vectors {n_features}")
    return (np.ascontiguousarray(X.indptr, np.int64), np.ascontiguousarray(X.indices, np.int32),
            np.ascontiguousarray(X.data, np.float64))


def exclusions(exclude: np.ndarray | None, n_rows: int, n_classes: int) -> np.ndarray:
    """The excluded class of every row as int64, -1 where nothing is excluded (exclude=None)."""
    if exclude is None:
        return np.full(n_rows, -1, np.int64)
    out = np.ascontiguousarray(exclude, np.int64)
    if out.shape != (n_rows,):
        raise ValueError(f"exclude must hold one class per query row ({n_rows}), got shape {out.shape}")
    if out.size and (out.min() < -1 or out.max() >= n_classes):
        raise ValueError(f"exclude holds a class outside 0..{n_classes - 1}")
    return out


def class_ids(classes: np.ndarray, n_classes: int) -> np.ndarray:
    """`classes` as sorted unique int64 ids, checked against the number of classes."""
    out = np.unique(np.asarray(classes, np.int64))
    if out.size and (out[0] < 0 or out[-1] >= n_classes):
        raise ValueError(f"classes must lie in 0..{n_classes - 1}")
    return out
