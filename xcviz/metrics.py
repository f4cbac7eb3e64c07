"""Extreme-classification (XC) and multiclass evaluation metrics.

The XC metrics take the true labels ``Y`` as an ``n x L`` scipy.sparse matrix
whose non-zeros mark the relevant labels, and ``topk`` as an ``n x K`` integer
array of predicted label indices, best first, where ``-1`` pads empty slots.
They return fractions in [0, 1]; ``evaluate`` reports percentages.

A label predicted several times in one row counts once, at its best rank, so
every metric scores the predicted *set* and stays within [0, 1].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Integral
from typing import NamedTuple

import numba
import numpy as np
import scipy.sparse as sp


@numba.njit(cache=True, nogil=True)
def _hit_matrix(indptr: np.ndarray, indices: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Mark ``head[i, r]`` when it is a relevant label of row ``i`` not already hit.

    Binary search in the row's sorted CSR indices; ``claimed`` (one flag per
    stored label) makes a repeated prediction count only at its first rank.
    """
    n, k = head.shape
    hit = np.zeros((n, k), dtype=np.bool_)
    claimed = np.zeros(indices.shape[0], dtype=np.bool_)
    for i in range(n):
        start = indptr[i]
        row = indices[start : indptr[i + 1]]
        for r in range(k):
            label = head[i, r]
            if label < 0:
                continue
            pos = np.searchsorted(row, label)
            if pos < row.shape[0] and row[pos] == label and not claimed[start + pos]:
                claimed[start + pos] = True
                hit[i, r] = True
    return hit


@numba.njit(cache=True, nogil=True)
def _ideal_rank_gains(
    indptr: np.ndarray, indices: np.ndarray, inv_prop: np.ndarray, k: int
) -> np.ndarray:
    """Sum over rows of the r-th largest inverse propensity among the row's labels.

    Entry ``r`` (0-based, ``r < k``) is the total gain an ideal ranking places
    at rank ``r + 1``; prefixes of it give the PSP/PSnDCG normalisers at any k.
    """
    gains = np.zeros(k)
    for i in range(indptr.shape[0] - 1):
        weights = np.sort(inv_prop[indices[indptr[i] : indptr[i + 1]]])
        m = weights.shape[0]
        for r in range(min(k, m)):
            gains[r] += weights[m - 1 - r]
    return gains


class _Hits(NamedTuple):
    """Correct predictions as parallel arrays: row, 0-based rank and label of each."""

    rows: np.ndarray
    ranks: np.ndarray
    labels: np.ndarray

    def upto(self, k: int) -> _Hits:
        """The hits within the first ``k`` ranks."""
        keep = self.ranks < k
        return _Hits(self.rows[keep], self.ranks[keep], self.labels[keep])


def _find_hits(Y: sp.csr_matrix, head: np.ndarray) -> _Hits:
    """Locate the correct predictions of ``head`` (already validated) in ``Y``."""
    rows, ranks = np.nonzero(_hit_matrix(Y.indptr, Y.indices, head))
    return _Hits(rows, ranks, head[rows, ranks])


def _discounts(k: int) -> np.ndarray:
    """DCG discounts 1 / log2(r + 1) for ranks r = 1..k."""
    return 1.0 / np.log2(np.arange(2, k + 2))


def _check_k(k: int, n_cols: int) -> None:
    """Require ``k`` to be an integer in [1, n_cols]."""
    if isinstance(k, bool) or not isinstance(k, Integral) or not 1 <= k <= n_cols:
        raise ValueError(f"k must be an integer in [1, {n_cols}] (columns of topk), got {k!r}")


def _canonical_labels(Y: sp.spmatrix) -> sp.csr_matrix:
    """Return ``Y`` as CSR with sorted, unique, non-zero entries, leaving ``Y`` intact.

    The hit lookup binary-searches each row's indices, so they must be sorted
    and unique; explicitly stored zeros are not relevant labels.
    """
    if not sp.issparse(Y) or Y.ndim != 2:
        raise ValueError("Y must be a 2-D scipy.sparse matrix")
    if Y.shape[0] == 0:
        raise ValueError("Y has no rows")
    Y = sp.csr_matrix(Y)
    if not Y.has_canonical_format or np.any(Y.data == 0):
        Y = Y.copy()
        Y.sum_duplicates()
        Y.eliminate_zeros()
    return Y


def _prepare(Y: sp.spmatrix, topk: np.ndarray, ks: Sequence[int]) -> tuple[sp.csr_matrix, np.ndarray]:
    """Validate the inputs of an XC metric evaluated at every k in ``ks``.

    Returns the canonical label matrix and the first ``max(ks)`` columns of ``topk``.
    """
    Y = _canonical_labels(Y)
    topk = np.asarray(topk)
    if topk.ndim != 2 or not np.issubdtype(topk.dtype, np.integer):
        raise ValueError(f"topk must be a 2-D integer array, got {topk.ndim}-D {topk.dtype}")
    n_rows, n_labels = Y.shape
    if topk.shape[0] != n_rows:
        raise ValueError(f"Y has {n_rows} rows but topk has {topk.shape[0]}")
    if len(ks) == 0:
        raise ValueError("ks must not be empty")
    for k in ks:
        _check_k(k, topk.shape[1])
    head = topk[:, : max(ks)]
    if head.min() < -1 or head.max() >= n_labels:
        raise ValueError(f"topk entries must be -1 or label indices in [0, {n_labels})")
    return Y, head


def _check_inv_prop(inv_prop: np.ndarray, n_labels: int) -> np.ndarray:
    """Require one finite, non-negative inverse propensity per label."""
    inv_prop = np.asarray(inv_prop, dtype=np.float64)
    if inv_prop.shape != (n_labels,):
        raise ValueError(f"inv_prop must have shape ({n_labels},), got {inv_prop.shape}")
    if not np.all(np.isfinite(inv_prop)) or np.any(inv_prop < 0):
        raise ValueError("inv_prop must be finite and non-negative")
    return inv_prop


def _precision(hits: _Hits, Y: sp.csr_matrix, k: int) -> float:
    """Hits per row and rank slot, averaged over all n x k slots."""
    return hits.rows.size / (Y.shape[0] * k)


def _ndcg(hits: _Hits, Y: sp.csr_matrix, k: int) -> float:
    """Per-row DCG over the ideal DCG of min(k, |y|) hits, averaged over all rows."""
    discounts = _discounts(k)
    dcg = np.bincount(hits.rows, weights=discounts[hits.ranks], minlength=Y.shape[0])
    n_true = np.diff(Y.indptr)
    ideal = np.concatenate(([0.0], np.cumsum(discounts)))[np.minimum(n_true, k)]
    labelled = n_true > 0
    return float(np.sum(dcg[labelled] / ideal[labelled]) / Y.shape[0])


def _recall(hits: _Hits, Y: sp.csr_matrix) -> float:
    """Per-row share of true labels hit, averaged over labelled rows."""
    n_true = np.diff(Y.indptr)
    labelled = n_true > 0
    if not labelled.any():
        return 0.0
    found = np.bincount(hits.rows, minlength=Y.shape[0])
    return float(np.mean(found[labelled] / n_true[labelled]))


def _coverage(hits: _Hits, Y: sp.csr_matrix) -> float:
    """Distinct labels hit over distinct labels relevant anywhere."""
    relevant = np.unique(Y.indices).size
    return np.unique(hits.labels).size / relevant if relevant else 0.0


def _psp(hits: _Hits, inv_prop: np.ndarray, ideal: np.ndarray) -> float:
    """Total 1/p of the hits over the oracle total ``ideal.sum()`` (ideal: rank-wise oracle gains up to k)."""
    best = ideal.sum()
    return float(inv_prop[hits.labels].sum() / best) if best > 0 else 0.0


def _psndcg(hits: _Hits, inv_prop: np.ndarray, ideal: np.ndarray) -> float:
    """Rank-discounted total 1/p of the hits over the discounted oracle gains ``ideal``."""
    discounts = _discounts(ideal.size)
    best = ideal @ discounts
    return float(inv_prop[hits.labels] @ discounts[hits.ranks] / best) if best > 0 else 0.0


def precision_at_k(Y: sp.spmatrix, topk: np.ndarray, k: int) -> float:
    """P@k: mean over all rows of |top-k ∩ y| / k; unlabelled rows score 0 (as in pyxclib)."""
    Y, head = _prepare(Y, topk, (k,))
    return _precision(_find_hits(Y, head), Y, k)


def ndcg_at_k(Y: sp.spmatrix, topk: np.ndarray, k: int) -> float:
    """nDCG@k: per-row DCG over the ideal DCG of min(k, |y|) hits, averaged over all rows.

    Unlabelled rows score 0, matching P@k's convention.
    """
    Y, head = _prepare(Y, topk, (k,))
    return _ndcg(_find_hits(Y, head), Y, k)


def recall_at_k(Y: sp.spmatrix, topk: np.ndarray, k: int) -> float:
    """R@k: mean of |top-k ∩ y| / |y| over the rows with at least one label (0 if none)."""
    Y, head = _prepare(Y, topk, (k,))
    return _recall(_find_hits(Y, head), Y)


def coverage_at_k(Y: sp.spmatrix, topk: np.ndarray, k: int) -> float:
    """Fraction of the labels relevant somewhere in ``Y`` hit in some row's top-k (0 if none)."""
    Y, head = _prepare(Y, topk, (k,))
    return _coverage(_find_hits(Y, head), Y)


def propensities(Y_train: sp.spmatrix, A: float = 0.55, B: float = 1.5) -> np.ndarray:
    """Jain et al. (2016) label propensities p_l = 1 / (1 + C (N_l + B)^-A).

    C = (log N - 1)(B + 1)^A with N training rows and N_l positives of label l;
    rare labels get small p, so 1/p up-weights them in PSP/PSnDCG.  The formula
    needs log N > 1 (N >= 3) and B > 0 to give propensities in (0, 1].
    """
    Y_train = _canonical_labels(Y_train)
    n_rows, n_labels = Y_train.shape
    if n_rows < 3:
        raise ValueError(f"propensities need at least 3 training rows, got {n_rows}")
    if B <= 0:
        raise ValueError(f"B must be positive, got {B}")
    counts = np.bincount(Y_train.indices, minlength=n_labels)
    C = (np.log(n_rows) - 1.0) * (B + 1.0) ** A
    return 1.0 / (1.0 + C * np.exp(-A * np.log(counts + B)))


def psp_at_k(Y: sp.spmatrix, topk: np.ndarray, k: int, inv_prop: np.ndarray) -> float:
    """Propensity-scored P@k as pyxclib's ``psprecision``.

    Total 1/p of the hits over all rows, divided by the total an oracle would
    get by ranking each row's true labels by decreasing 1/p.
    """
    Y, head = _prepare(Y, topk, (k,))
    inv_prop = _check_inv_prop(inv_prop, Y.shape[1])
    ideal = _ideal_rank_gains(Y.indptr, Y.indices, inv_prop, k)
    return _psp(_find_hits(Y, head), inv_prop, ideal)


def psndcg_at_k(Y: sp.spmatrix, topk: np.ndarray, k: int, inv_prop: np.ndarray) -> float:
    """Propensity-scored nDCG@k: PSP@k with each gain 1/p discounted by 1/log2(rank + 1).

    Both the achieved and the oracle gains are summed over all rows before dividing.
    """
    Y, head = _prepare(Y, topk, (k,))
    inv_prop = _check_inv_prop(inv_prop, Y.shape[1])
    ideal = _ideal_rank_gains(Y.indptr, Y.indices, inv_prop, k)
    return _psndcg(_find_hits(Y, head), inv_prop, ideal)


def evaluate(
    Y: sp.spmatrix,
    topk: np.ndarray,
    ks: Sequence[int] = (1, 3, 5),
    inv_prop: np.ndarray | None = None,
) -> dict[str, float]:
    """All XC metrics at every k in ``ks``, in percent, keyed like ``"p@1"``.

    Keys are grouped by metric (p, ndcg, recall, coverage, then psp, psndcg
    when ``inv_prop`` is given).  Hits are found once, at the largest k.
    """
    Y, head = _prepare(Y, topk, ks)
    hits = _find_hits(Y, head)
    metrics: dict[str, Callable[[_Hits, int], float]] = {
        "p": lambda h, k: _precision(h, Y, k),
        "ndcg": lambda h, k: _ndcg(h, Y, k),
        "recall": lambda h, k: _recall(h, Y),
        "coverage": lambda h, k: _coverage(h, Y),
    }
    if inv_prop is not None:
        weights = _check_inv_prop(inv_prop, Y.shape[1])
        ideal = _ideal_rank_gains(Y.indptr, Y.indices, weights, head.shape[1])
        metrics["psp"] = lambda h, k: _psp(h, weights, ideal[:k])
        metrics["psndcg"] = lambda h, k: _psndcg(h, weights, ideal[:k])
    hits_at = {k: hits.upto(k) for k in ks}
    return {f"{name}@{k}": 100.0 * score(hits_at[k], k) for name, score in metrics.items() for k in ks}


def _check_classes(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Require two non-empty 1-D class arrays of equal length."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape or y_true.size == 0:
        raise ValueError(
            f"y_true and y_pred must be non-empty 1-D arrays of equal length, "
            f"got shapes {y_true.shape} and {y_pred.shape}"
        )
    return y_true, y_pred


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of samples whose predicted class equals the true class."""
    y_true, y_pred = _check_classes(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Unweighted mean F1 = 2TP / (2TP + FP + FN) over classes seen in y_true or y_pred.

    Same as scikit-learn's ``f1_score(average="macro")``: a class that is only
    predicted (or only true) counts with F1 = 0.
    """
    y_true, y_pred = _check_classes(y_true, y_pred)
    classes, codes = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    true_codes, pred_codes = codes[: y_true.size], codes[y_true.size :]
    n_classes = classes.size
    tp = np.bincount(true_codes[true_codes == pred_codes], minlength=n_classes)
    true_counts = np.bincount(true_codes, minlength=n_classes)
    return macro_f1_counts(tp, true_counts, np.bincount(pred_codes, minlength=n_classes))


def macro_f1_counts(tp: np.ndarray, true_counts: np.ndarray, pred_counts: np.ndarray) -> float:
    """`macro_f1` from per-class counts (true positives, true and predicted occurrences), e.g.
    summed over parts of a test set evaluated apart; classes with no occurrence are not counted."""
    # 2TP + FP + FN = (TP + FN) + (TP + FP) = true count + predicted count.
    support = true_counts + pred_counts
    seen = support > 0
    return float(np.mean(2 * tp[seen] / support[seen]))
