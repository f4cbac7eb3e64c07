"""Top-k prediction for a sparse linear one-vs-all model, in parallel over row chunks.

Scores are X W^T + bias; W is given feature-major (CSR of W^T) so that each row of X visits only
the labels that share a feature with it. Ties are broken towards the smaller label index, so the
result does not depend on the number of threads or on the chunking. Index arrays are best passed
unsigned (uint64 indptr, uint32 indices), which spares numba's wraparound checks.
"""
import numpy as np
from numba import njit, prange

from .topk import insert_topk


@njit(cache=True, nogil=True, parallel=True)
def predict_topk(x_indptr, x_indices, x_data, wt_indptr, wt_indices, wt_data, bias, k, chunk):
    """Return (labels, scores), each n x k, of the k best labels of every row of X.

    wt_*: W^T in CSR (features x labels); bias: per-label score offset (length L)."""
    n = x_indptr.shape[0] - 1
    n_labels = bias.shape[0]
    out_lab = np.full((n, k), -1, np.int64)
    out_val = np.full((n, k), -np.inf)
    n_chunks = (n + chunk - 1) // chunk
    for c in prange(n_chunks):
        scores = np.empty(n_labels)
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            for lab in range(n_labels):
                scores[lab] = bias[lab]
            for p in range(x_indptr[i], x_indptr[i + 1]):
                f = x_indices[p]
                xv = x_data[p]
                for q in range(wt_indptr[f], wt_indptr[f + 1]):
                    scores[wt_indices[q]] += xv * wt_data[q]
            top_lab = out_lab[i]
            top_val = out_val[i]
            count = 0
            for lab in range(n_labels):
                count = insert_topk(lab, scores[lab], k, top_lab, top_val, count)
    return out_lab, out_val
