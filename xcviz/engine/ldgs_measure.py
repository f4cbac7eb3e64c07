"""Kernels of LDGS's per-record diagnostics: how an estimated gradient compares with the exact one,
and the precision of score rows. Numba, not BLAS: the diagnostics run between training batches,
and OpenBLAS's threads, which keep spinning for a while after a call, took the cores from the
numba threads of the next batches (a Bibtex run trained 6x slower with records than without)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .topk import insert_topk


@njit(cache=True, nogil=True, parallel=True)
def support_stats(grad, U, coef, count, tau2, recall, error, cosine, error2, norm2):
    """Per sample i: recall[i] = the share of the exact gradient's support (|grad[i]| > tau2) among
    the candidates U[i, :count[i]] (distinct classes); error[i] = the relative l2 error of the
    estimate coef[i, :count[i]] (zero outside U) against grad[i]; cosine[i] = their cosine (0 for a
    zero estimate). NaN where the exact gradient has no support (recall) or is 0 (error, cosine).
    error2[i] and norm2[i] are the squared norms of the error and of grad[i], so that a caller can
    form the batch's relative error sqrt(sum error2 / sum norm2), which tiny-gradient rows cannot
    dominate as they dominate the mean of the per-row ratios."""
    n, K = grad.shape
    for i in prange(n):
        support, gg = 0, 0.0
        for k in range(K):
            support += abs(grad[i, k]) > tau2
            gg += grad[i, k] * grad[i, k]
        found, inside, dot, ee, diff = 0, 0.0, 0.0, 0.0, 0.0
        for t in range(count[i]):
            g, e = grad[i, U[i, t]], coef[i, t]
            found += abs(g) > tau2
            inside += g * g
            dot += e * g
            ee += e * e
            diff += (e - g) * (e - g)
        recall[i] = found / support if support else np.nan
        error2[i] = diff + max(gg - inside, 0.0)  # with the mass U misses
        norm2[i] = gg
        if gg > 0.0:
            error[i] = np.sqrt(error2[i] / gg)
            cosine[i] = dot / np.sqrt(gg * ee) if ee > 0.0 else 0.0
        else:
            error[i] = np.nan
            cosine[i] = np.nan


@njit(cache=True, nogil=True, parallel=True)
def top_precision(S, pos_ptr, pos_idx, k, out):
    """out[i] = P@k of score row S[i] against the positives pos_idx[pos_ptr[i]:pos_ptr[i+1]]
    (ties go to the smaller class)."""
    n, K = S.shape
    k = min(k, K)
    for i in prange(n):
        top_i = np.empty(k, np.int64)
        top_v = np.empty(k)
        count = 0
        for c in range(K):
            count = insert_topk(c, S[i, c], k, top_i, top_v, count)
        hits = 0
        for t in range(count):
            for p in range(pos_ptr[i], pos_ptr[i + 1]):
                if pos_idx[p] == top_i[t]:
                    hits += 1
                    break
        out[i] = hits / k
