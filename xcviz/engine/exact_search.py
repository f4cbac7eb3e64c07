"""Exact maximum-inner-product search with one excluded class, for the exact margin oracle.

W is given feature-major (features x classes), so a query visits only the classes sharing a
feature with it; every class it does not visit scores exactly 0. Ties among visited classes go to
the smaller class id. When the best is an unvisited class (score 0), all of those tie: the answer
is the first one at or after a position hashed from (salt, row), so that a fresh model's all-zero
rows do not send every margin to class 0. Answers depend on neither the thread count nor the
chunking.
"""
import numpy as np
from numba import njit, prange

from .mips import mix64


@njit(cache=True, nogil=True, inline="always")
def _accumulate(col_ptr, col_cls, col_val, indptr, indices, data, i, acc, mark, touched):
    """acc[c] = w_c . x_i for every class c sharing a feature with row i (listed in touched[:nt],
    marked in mark); returns nt."""
    nt = 0
    for p in range(indptr[i], indptr[i + 1]):
        f = indices[p]
        xv = data[p]
        for q in range(col_ptr[f], col_ptr[f + 1]):
            c = col_cls[q]
            if not mark[c]:
                mark[c] = True
                touched[nt] = c
                nt += 1
            acc[c] += xv * col_val[q]
    return nt


@njit(cache=True, nogil=True, inline="always")
def _clear(acc, mark, touched, nt):
    """Undo _accumulate's writes, leaving acc zero and mark false."""
    for t in range(nt):
        acc[touched[t]] = 0.0
        mark[touched[t]] = False


@njit(cache=True, nogil=True, parallel=True)
def exact_argmax(col_ptr, col_cls, col_val, indptr, indices, data, exclude, n_classes, chunk, salt):
    """(best class != exclude[i], its score) for every CSR row i; exclude[i] < 0 excludes nothing."""
    n = indptr.shape[0] - 1
    best = np.full(n, -1, np.int64)
    score = np.full(n, -np.inf)
    n_chunks = (n + chunk - 1) // chunk
    for ch in prange(n_chunks):
        acc = np.zeros(n_classes)
        mark = np.zeros(n_classes, np.bool_)
        touched = np.empty(n_classes, np.int64)
        for i in range(ch * chunk, min(n, (ch + 1) * chunk)):
            nt = _accumulate(col_ptr, col_cls, col_val, indptr, indices, data, i, acc, mark, touched)
            ex = exclude[i]
            b = -1
            bs = -np.inf
            for t in range(nt):
                c = touched[t]
                if c != ex and (acc[c] > bs or (acc[c] == bs and c < b)):
                    b = c
                    bs = acc[c]
            if bs < 0.0 or b < 0:
                start = np.int64(mix64(np.uint64(salt) + np.uint64(i)) % np.uint64(n_classes))
                for step in range(n_classes):
                    c = (start + step) % n_classes
                    if not mark[c] and c != ex:
                        b = c
                        bs = 0.0
                        break
            _clear(acc, mark, touched, nt)
            best[i] = b
            score[i] = bs
    return best, score


@njit(cache=True, nogil=True)
def uniform_other(seed, call, exclude, n_classes):
    """A uniformly random class != exclude[i] per row, a pure function of (seed, call, row): the
    inexact margin of eq. (2) of MEMOIR, reproducible whatever the thread count."""
    n = exclude.shape[0]
    out = np.empty(n, np.int64)
    base = mix64(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(call))
    for i in range(n):
        ex = exclude[i]
        span = n_classes - 1 if ex >= 0 else n_classes
        r = np.int64(mix64(base + np.uint64(i)) % np.uint64(span))
        if ex >= 0 and r >= ex:
            r += 1
        out[i] = r
    return out


@njit(cache=True, nogil=True, parallel=True)
def rank_among(col_ptr, col_cls, col_val, indptr, indices, data, exclude, answer, n_classes, chunk):
    """For every CSR row i: 1 + the number of classes other than exclude[i] and answer[i] whose
    score is strictly above answer[i]'s (1 = the answer is an exact argmax, ties counting as found).
    Classes the row shares no feature with score 0."""
    n = indptr.shape[0] - 1
    rank = np.empty(n, np.int64)
    n_chunks = (n + chunk - 1) // chunk
    for ch in prange(n_chunks):
        acc = np.zeros(n_classes)
        mark = np.zeros(n_classes, np.bool_)
        touched = np.empty(n_classes, np.int64)
        for i in range(ch * chunk, min(n, (ch + 1) * chunk)):
            nt = _accumulate(col_ptr, col_cls, col_val, indptr, indices, data, i, acc, mark, touched)
            ex = exclude[i]
            a = answer[i]
            sa = acc[a]
            better = 0
            for t in range(nt):
                c = touched[t]
                if c != ex and c != a and acc[c] > sa:
                    better += 1
            if sa < 0.0:  # every class without a shared feature (score 0) beats it too
                better += n_classes - nt - (1 if not mark[a] else 0) - (1 if ex >= 0 and not mark[ex] else 0)
            _clear(acc, mark, touched, nt)
            rank[i] = better + 1
    return rank
