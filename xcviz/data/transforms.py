"""Feature transforms applied before training: tf-idf weighting, row normalisation, bias column.

Each function returns a new matrix and leaves its input untouched, so a split's raw features can
be transformed several ways (e.g. test rows with the training split's idf).
"""
import numpy as np
import scipy.sparse as sp


def _csr_copy(X) -> sp.csr_matrix:
    """A canonical float64 CSR copy of X, safe to modify in place."""
    out = sp.csr_matrix(X, dtype=np.float64, copy=True)
    out.sum_duplicates()
    return out


def tfidf(X, idf: np.ndarray | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Scale raw term values by idf = log(N / df), df = rows where the feature is non-zero.

    Features that never occur get idf 0. Pass the training split's `idf` to apply it as is to
    other splits. Returns the weighted matrix and the idf vector used.
    """
    out = _csr_copy(X)
    n, d = out.shape
    if idf is None:
        df = np.bincount(out.indices[out.data != 0], minlength=d)
        idf = np.zeros(d)
        occurs = df > 0
        idf[occurs] = np.log(n / df[occurs])
    else:
        idf = np.asarray(idf, dtype=np.float64)
        if idf.shape != (d,):
            raise ValueError(f"idf has shape {idf.shape}, expected ({d},)")
    out.data *= idf[out.indices]
    return out, idf


def l2_normalize(X) -> sp.csr_matrix:
    """Scale each row to unit L2 norm; all-zero rows stay zero."""
    out = _csr_copy(X)
    rows = np.repeat(np.arange(out.shape[0]), np.diff(out.indptr))
    norms = np.sqrt(np.bincount(rows, weights=out.data**2, minlength=out.shape[0]))
    scale = np.zeros_like(norms)
    np.divide(1.0, norms, out=scale, where=norms > 0)
    out.data *= scale[rows]
    return out


def add_bias(X, value: float = 1.0) -> sp.csr_matrix:
    """Append a column holding `value` in every row; value 0 adds no column (returns a copy of X)."""
    out = _csr_copy(X)
    if value == 0:
        return out
    bias = sp.csr_matrix(np.full((out.shape[0], 1), float(value)))
    return sp.hstack([out, bias], format="csr")


def replicate_multiclass(X, Y) -> tuple[sp.csr_matrix, np.ndarray]:
    """Multi-label data as multiclass: each row once per label it has (rows without a label are
    dropped), as MEMOIR's paper did for LSHTC. Returns (X replicated, class of each new row)."""
    Y = sp.csr_matrix(Y)
    rows = np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr))
    return sp.csr_matrix(X)[rows], Y.indices.astype(np.int64)
