"""Synthetic extreme multi-label problems with learnable, class-conditional sparse features.

Labels follow a Zipf law (label 0 is the head label). Each label owns a small random signature
of features; about half of a row's term draws come from its labels' signatures, the rest from a
Zipf-like background vocabulary, so a linear model can learn the labels. The `noise` knob makes
classes confusable (without it a multiclass problem is almost linearly separable): each signature
draw comes, with probability `noise`, from the signature of one of the label's CONFUSERS
neighbouring labels (l+1 .. l+CONFUSERS mod L) instead, so the right class competes with a few
wrong ones whose scores are close, as in face identities or fine-grained tags. Everything is vectorised
numpy and memory stays O(nnz + labels * signature size), so Amazon-670K-sized problems take seconds.
"""
from typing import Callable

import numpy as np
import scipy.sparse as sp

from xcviz.data.dataset import Dataset

_SIGNATURE_SIZES = (10, 20)
_PATIENCE = 16
CONFUSERS = 3


def _contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Membership of `keys` in the sorted array `sorted_keys`."""
    if sorted_keys.size == 0:
        return np.zeros(keys.size, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[pos] == keys


def _distinct_per_row(
    rng: np.random.Generator, keys: np.ndarray, width: int, draw: Callable[[int], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Make keys row * width + value distinct within rows by redrawing the value of each repeat.

    Repeats are redrawn with `draw`; after _PATIENCE rounds the few still colliding (rows that
    need most of a steep distribution's support) are redrawn uniformly, so the loop ends fast.
    Returns the sorted distinct keys (same count per row as the input) and every key hit by a
    repeat, once per hit; the feature generator turns those hits into term counts.
    """
    keys = np.sort(keys)
    repeat = np.zeros(keys.size, dtype=bool)
    repeat[1:] = keys[1:] == keys[:-1]
    settled, hits = keys[~repeat], [keys[repeat]]
    added = np.empty(0, dtype=np.int64)
    pending = keys[repeat] // width
    rounds = 0
    while pending.size:
        values = draw(pending.size) if rounds < _PATIENCE else rng.integers(0, width, pending.size)
        candidates = np.sort(pending * width + values)
        taken = _contains(settled, candidates) | _contains(added, candidates)
        taken[1:] |= candidates[1:] == candidates[:-1]
        hits.append(candidates[taken])
        added = np.sort(np.concatenate([added, candidates[~taken]]), kind="stable")
        pending = candidates[taken] // width
        rounds += 1
    return np.sort(np.concatenate([settled, added]), kind="stable"), np.concatenate(hits)


def _labels(rng: np.random.Generator, n: int, n_labels: int, avg_labels: float, zipf: float) -> sp.csr_matrix:
    """Y with 1 + Poisson(avg_labels - 1) distinct labels per row, label l drawn with p ∝ (l+1)^-zipf."""
    cdf = np.cumsum(np.arange(1, n_labels + 1, dtype=np.float64) ** -zipf)
    cdf /= cdf[-1]

    def draw(size: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), n_labels - 1)

    counts = np.minimum(1 + rng.poisson(avg_labels - 1, n), n_labels)
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    keys, _ = _distinct_per_row(rng, rows * n_labels + draw(rows.size), n_labels, draw)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sp.csr_matrix((np.ones(keys.size), keys % n_labels, indptr), shape=(n, n_labels))


def _features(rng: np.random.Generator, Y: sp.csr_matrix, d: int, avg_nnz: float, noise: float = 0.0) -> sp.csr_matrix:
    """X with Poisson(avg_nnz) distinct terms per row; half the draws come from label signatures.

    A repeated draw raises that term's count tf and is replaced by a background term, so nnz per
    row stays exact. Values are (1 + log tf) * log((n + 1) / df), rows L2-normalised.
    """
    n, n_labels = Y.shape
    log_vocabulary = np.log(d + 1.0)

    def background(size: int) -> np.ndarray:
        # Continuous Zipf (exponent 1) by inverse CDF: P(f) ≈ log((f+2)/(f+1)) / log(d+1).
        return np.minimum(np.exp(rng.random(size) * log_vocabulary).astype(np.int64) - 1, d - 1)

    # Signatures are uniform over the vocabulary so that labels rarely share them.
    sizes = np.minimum(rng.integers(_SIGNATURE_SIZES[0], _SIGNATURE_SIZES[1] + 1, n_labels), d)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    signatures = rng.integers(0, d, sizes.sum())

    terms = np.clip(rng.poisson(avg_nnz, n), 1, d)
    from_signatures = rng.binomial(terms, 0.5)
    rows = np.repeat(np.arange(n, dtype=np.int64), from_signatures)
    labels_per_row = np.diff(Y.indptr)
    label = Y.indices[Y.indptr[rows] + (rng.random(rows.size) * labels_per_row[rows]).astype(np.int64)]
    if noise > 0.0:
        confused = rng.random(label.size) < noise
        label[confused] = (label[confused] + rng.integers(1, CONFUSERS + 1, confused.sum())) % n_labels
    slot = (rng.random(rows.size) * sizes[label]).astype(np.int64)
    signature_keys = rows * d + signatures[starts[label] + slot]
    rows = np.repeat(np.arange(n, dtype=np.int64), terms - from_signatures)
    background_keys = rows * d + background(rows.size)

    keys, hits = _distinct_per_row(rng, np.concatenate([signature_keys, background_keys]), d, background)
    return _tfidf(keys, hits, terms, d)


def _tfidf(keys: np.ndarray, hits: np.ndarray, terms: np.ndarray, d: int) -> sp.csr_matrix:
    """The n x d matrix of the sorted distinct keys row * d + feature (`terms` per row), valued
    (1 + log tf) * log((n + 1) / df) with tf = 1 + the key's repeats in `hits`, rows L2-normalised."""
    n = terms.size
    tf = 1.0 + np.bincount(np.searchsorted(keys, np.sort(hits)), minlength=keys.size)
    indices = keys % d
    rows = keys // d
    idf = np.log((1.0 + n) / np.bincount(indices, minlength=d)[indices])
    data = (1.0 + np.log(tf)) * idf
    data /= np.sqrt(np.bincount(rows, weights=data**2, minlength=n))[rows]
    indptr = np.concatenate([[0], np.cumsum(terms)])
    return sp.csr_matrix((data, indices, indptr), shape=(n, d))


def generate(
    n: int,
    d: int,
    labels: int,
    *,
    avg_labels: float = 5.0,
    avg_nnz: float = 75.0,
    zipf: float = 1.0,
    multiclass: bool = False,
    noise: float = 0.0,
    seed: int = 0,
    name: str = "synthetic",
) -> Dataset:
    """A reproducible n x d problem with `labels` Zipf-distributed labels and tf-idf-like rows.

    `multiclass=True` gives exactly one label per row (avg_labels is then ignored). `noise` in
    [0, 1): the share of signature draws taken from a confuser label's signature (module docstring);
    0 keeps the stream of earlier versions, so the same seed gives the same problem.
    """
    if min(n, d, labels) < 1:
        raise ValueError("n, d and labels must be positive")
    if not np.isfinite([avg_labels, avg_nnz, zipf]).all():
        raise ValueError("avg_labels, avg_nnz and zipf must be finite numbers")
    if not multiclass and avg_labels < 1:
        raise ValueError("avg_labels must be at least 1")
    if not multiclass and avg_labels > labels:
        raise ValueError(f"avg_labels ({avg_labels:g}) cannot exceed the number of labels ({labels}): a row holds "
                         "each label once")
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must be in [0, 1), got {noise}")
    if avg_nnz <= 0 or zipf < 0:
        raise ValueError("avg_nnz must be positive and zipf non-negative")
    if avg_nnz > 1e9:  # numpy's Poisson sampler refuses means near 1e19; rows are clipped to d features anyway
        raise ValueError(f"avg_nnz must be at most 1e9 (a row holds each of the d features once), got {avg_nnz:g}")
    rng = np.random.default_rng(seed)
    Y = _labels(rng, n, labels, 1.0 if multiclass else avg_labels, zipf)
    X = _features(rng, Y, d, avg_nnz, noise)
    return Dataset(X, Y, name=name)


def split(ds: Dataset, test_fraction: float, seed: int = 0) -> tuple[Dataset, Dataset]:
    """Random (train, test) row split with round(test_fraction * n) test rows; D and L are kept."""
    if not 0.0 <= test_fraction <= 1.0:
        raise ValueError("test_fraction must be between 0 and 1")
    order = np.random.default_rng(seed).permutation(ds.n)
    n_test = round(test_fraction * ds.n)
    test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
    return (
        Dataset(ds.X[train], ds.Y[train], name=f"{ds.name}-train"),
        Dataset(ds.X[test], ds.Y[test], name=f"{ds.name}-test"),
    )
