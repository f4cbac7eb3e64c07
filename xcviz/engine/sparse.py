"""Sparse-matrix kernels around training: the preprocessed training matrix, pruned weights and a
CSR row gather (a mini-batch's positives).

Both exist to keep training's extra memory small: the training rows are normalised, given their
bias column and converted to unsigned indices in one pass (one copy instead of four), and each
block of dense weight vectors is pruned into CSR pieces a chunk of rows at a time.
"""
import numpy as np
from numba import njit


def prepare_rows(indptr, indices, data, n_features, normalize, bias, order=None):
    """X's rows, in the given order if any (row r is X's row order[r]), with unit norm (if
    `normalize`) and a last column of value `bias` (if > 0).

    Returns (indptr uint64, indices uint32, data float64, column sums): unsigned indices spare the
    Newton loops numba's wraparound checks; the column sums give every label's gradient at zero.
    The arrays are allocated here, not in the kernel: a kernel that allocates makes every fresh
    process import numba's array library when it loads (BENCHMARKS.md, "Kernel loading")."""
    n = indptr.shape[0] - 1
    extra = 1 if bias > 0.0 else 0
    out_ptr = np.empty(n + 1, np.uint64)
    out_idx = np.empty(indices.shape[0] + n * extra, np.uint32)
    out_val = np.empty(indices.shape[0] + n * extra)
    colsum = np.zeros(n_features + extra)
    if order is None:
        order = np.arange(n, dtype=np.int64)
    _fill_rows(indptr, indices, data, n_features, normalize, float(bias), order, out_ptr, out_idx, out_val, colsum)
    return out_ptr, out_idx, out_val, colsum


@njit(cache=True, nogil=True)
def _fill_rows(indptr, indices, data, n_features, normalize, bias, order, out_ptr, out_idx, out_val, colsum):
    """The work of `prepare_rows` into its preallocated arrays."""
    n = indptr.shape[0] - 1
    extra = 1 if bias > 0.0 else 0
    pos = 0
    out_ptr[0] = 0
    for r in range(n):
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


PRUNE_CHUNK_ENTRIES = 2**16  # weights per chunk of `prune_block`: its temporaries stay near 2 MB


def prune_block(W, order, n_cols, threshold, chunk: int | None = None):
    """CSR pieces of W[order, :n_cols] keeping entries with |w| >= threshold (and w != 0).

    Returns (entries per row, column indices int32, values), rows in the given order. NumPy, a
    chunk of rows at a time, by default PRUNE_CHUNK_ENTRIES weights' worth: the temporaries of a
    chunk (its rows, their kept positions and values) are about 4 times the chunk's bytes, and on
    small problems they made the peak of a whole training (BENCHMARKS.md, "Peak memory"). NumPy
    rather than a kernel: one compiled kernel fewer to load."""
    if chunk is None:
        chunk = max(1, PRUNE_CHUNK_ENTRIES // max(n_cols, 1))
    counts = np.empty(order.shape[0], np.int64)
    idx, val = [], []
    for start in range(0, order.shape[0], chunk):
        rows = W[order[start:start + chunk], :n_cols]
        if threshold > 0.0:
            keep = rows >= threshold
            keep |= rows <= -threshold
        else:
            keep = np.abs(rows) > 0.0  # w != 0 and not NaN, as |w| >= 0 asks
        r, c = np.nonzero(keep)
        counts[start:start + rows.shape[0]] = np.bincount(r, minlength=rows.shape[0])
        idx.append(c.astype(np.int32))
        val.append(rows[r, c])
    if not idx:
        return counts, np.empty(0, np.int32), np.empty(0)
    return counts, np.concatenate(idx), np.concatenate(val)


@njit(cache=True, nogil=True)
def take_rows(indptr, indices, rows):
    """(indptr, indices) of the CSR rows `rows` (int64), in that order: one pass, where the numpy
    expression took a dozen array operations, a tenth of a small LDGS batch's bookkeeping."""
    ptr = np.empty(rows.shape[0] + 1, np.int64)
    ptr[0] = 0
    for r in range(rows.shape[0]):
        ptr[r + 1] = ptr[r] + indptr[rows[r] + 1] - indptr[rows[r]]
    out = np.empty(ptr[-1], np.int64)
    for r in range(rows.shape[0]):
        out[ptr[r]:ptr[r + 1]] = indices[indptr[rows[r]]:indptr[rows[r] + 1]]
    return ptr, out
