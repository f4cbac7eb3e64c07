"""Sparse-matrix kernels around training: the preprocessed training matrix and pruned weights.

Both exist to keep training's extra memory small: the training rows are normalised, given their
bias column and converted to unsigned indices in one pass (one copy instead of four), and each
block of dense weight vectors is pruned straight into CSR pieces.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def prepare_rows(indptr, indices, data, n_features, normalize, bias, order=None):
    """X's rows, in the given order if any (row r is X's row order[r]), with unit norm (if
    `normalize`) and a last column of value `bias` (if > 0).

    Returns (indptr uint64, indices uint32, data float64, column sums): unsigned indices spare the
    Newton loops numba's wraparound checks; the column sums give every label's gradient at zero."""
    n = indptr.shape[0] - 1
    extra = 1 if bias > 0.0 else 0
    out_ptr = np.empty(n + 1, np.uint64)
    out_idx = np.empty(indices.shape[0] + n * extra, np.uint32)
    out_val = np.empty(indices.shape[0] + n * extra)
    colsum = np.zeros(n_features + extra)
    pos = 0
    out_ptr[0] = 0
    for r in range(n):
        i = r
        if order is not None:
            i = order[r]
        scale = 1.0
        if normalize:
            sq = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                sq += data[k] * data[k]
            if sq > 0.0:
                scale = 1.0 / np.sqrt(sq)
        for k in range(indptr[i], indptr[i + 1]):
            v = data[k] * scale
            out_idx[pos] = indices[k]
            out_val[pos] = v
            colsum[indices[k]] += v
            pos += 1
        if extra:
            out_idx[pos] = n_features
            out_val[pos] = bias
            colsum[n_features] += bias
            pos += 1
        out_ptr[r + 1] = pos
    return out_ptr, out_idx, out_val, colsum


@njit(cache=True, nogil=True)
def prune_block(W, order, n_cols, threshold):
    """CSR pieces of W[order, :n_cols] keeping entries with |w| >= threshold (and w != 0).

    Returns (entries per row, column indices int32, values), rows in the given order."""
    counts = np.zeros(order.shape[0], np.int64)
    for r in range(order.shape[0]):
        row = W[order[r]]
        c = 0
        for j in range(n_cols):
            if row[j] != 0.0 and abs(row[j]) >= threshold:
                c += 1
        counts[r] = c
    idx = np.empty(counts.sum(), np.int32)
    val = np.empty(counts.sum())
    pos = 0
    for r in range(order.shape[0]):
        row = W[order[r]]
        for j in range(n_cols):
            if row[j] != 0.0 and abs(row[j]) >= threshold:
                idx[pos] = j
                val[pos] = row[j]
                pos += 1
    return counts, idx, val
