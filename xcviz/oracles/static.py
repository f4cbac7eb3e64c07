"""A fixed CSR matrix as `ClassVectors`, so that every oracle also serves plain maximum-inner-
product search over given vectors (build on StaticVectors(W), query with exclude=None)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..engine.mips import best_among_rows
from .arrays import csr_arrays

CHUNK = 64


class StaticVectors:
    """C x D class vectors that never change (a copy of W with sorted column indices)."""

    def __init__(self, W: sp.spmatrix) -> None:
        if not sp.issparse(W):
            raise TypeError(f"W must be a scipy sparse matrix, got {type(W).__name__}")
        W = sp.csr_matrix(W, dtype=np.float64, copy=True)
        W.sum_duplicates()
        W.sort_indices()
        self.n_classes, self.n_features = W.shape
        self._W = W
        self._arrays = csr_arrays(W, self.n_features)

    def rows(self, classes: np.ndarray) -> sp.csr_matrix:
        """The vectors of `classes`, one CSR row each, in the order given."""
        return self._W[np.asarray(classes, np.int64)]

    def best_among(self, cand_indptr: np.ndarray, candidates: np.ndarray, indptr: np.ndarray,
                   indices: np.ndarray, data: np.ndarray, exclude: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The best candidate != exclude[i] of each query row and its inner product (see
        `ClassVectors.best_among`); parallel over queries, smallest id on ties."""
        return best_among_rows(np.asarray(cand_indptr, np.int64), np.asarray(candidates, np.int64),
                               *self._arrays, np.asarray(indptr, np.int64), indices,
                               np.asarray(data, np.float64), np.asarray(exclude, np.int64), self.n_features,
                               CHUNK)
