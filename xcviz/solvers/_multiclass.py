"""Row preparation the multiclass families share (MEMOIR, LDGS): rows as the kernels read them, and
a test set cut or widened to the training data's features."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..engine.sparse import prepare_rows


def kernel_rows(X: sp.spmatrix, normalize: bool) -> sp.csr_matrix:
    """X as float64 CSR with sorted, int64 indices, its rows L2-normalised if asked."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    ptr, idx, val, _ = prepare_rows(X.indptr, X.indices, X.data, X.shape[1], normalize, 0.0)
    return sp.csr_matrix((val, idx.astype(np.int64), ptr.astype(np.int64)), shape=X.shape)


def with_columns(X: sp.spmatrix, dim: int) -> sp.csr_matrix:
    """X with exactly `dim` columns: features the training data never had carry no weight."""
    X = sp.csr_matrix(X)
    return X[:, :dim] if X.shape[1] >= dim else sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], dim))
