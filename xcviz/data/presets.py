"""Synthetic problems shaped like the Extreme Classification Repository's data sets.

`like("amazon-670k", scale=0.1)` returns a (train, test) pair with the published shape of the
real set (rows scaled by `scale`, labels too, so points per label and labels per row are kept;
features D and nnz per row are kept) and the statistics of real data, which the plain
`generate()` lacks (Zipf labels drawn independently, Poisson counts, nearly separable features):

- label frequencies with a power-law tail (exponent alpha of P(frequency = f) ~ f^-alpha): label
  weights are the Pareto law's quantiles, the head clipped so no label is on more than HEAD_SHARE of rows;
- over-dispersed labels per row (1 + negative binomial) and nnz per row (gamma-Poisson);
- co-occurring labels: labels belong to latent topics (clusters of about CLUSTER_SIZE labels); a
  row has a home topic and draws `cluster_share` of its labels from it;
- tf-idf features whose document frequencies follow a power law: background terms from a Zipf law
  over the vocabulary, the rest from the row's labels' signatures, which are drawn from their
  topic's shared vocabulary;
- difficulty: `signal` (the share of a row's terms that come from its labels' signatures) and
  `confusion` (the share of those taken from another label of the same topic), set per preset so
  that one-vs-all Newton (DiSMEC) reaches about the published P@1.

The targets of the statistics that no paper publishes are the median over the three real sets we
have (measured with xcviz.data.stats on their training splits; REAL_STATS). This code path is new:
`generate()` keeps its keywords and its random stream.
"""
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from xcviz.data.dataset import Dataset
from xcviz.data.synthetic import _distinct_per_row, _tfidf

CLUSTER_SIZE = 20  # labels per latent topic
TOPIC_WORDS = 100  # features in a topic's shared vocabulary, from which its labels' signatures come
SIGNATURE = 20  # features in a label's signature
HEAD_SHARE = 0.06  # the most frequent label is expected on at most this share of rows (caps its co-occurrence)
TOPIC_JITTER = 1.0  # log-normal sigma of the popularity order that groups labels into topics

# Measured by xcviz.data.stats.describe on the training splits (see docs/data.md).
REAL_STATS = {
    #             alpha_labels labels/row dispersion alpha_df nnz/row nnz_cv pair_pmi
    "bibtex": (2.61, 2.38, 1.14, 2.03, 68.5, 0.51, 2.63),
    "delicious": (1.79, 19.05, 1.33, 1.80, 18.5, 2.16, 0.52),
    "debian-tags": (1.48, 3.71, 2.91, 1.72, 30.3, 0.71, 1.29),
}
_MEDIAN = np.median(np.array(list(REAL_STATS.values())), axis=0)
LABEL_EXPONENT, LABELS_DISPERSION, DF_EXPONENT, NNZ_CV, PAIR_PMI = (float(_MEDIAN[i]) for i in (0, 2, 3, 5, 6))


@dataclass(frozen=True)
class Shape:
    """A published data set: its shape and statistics, and the generator's difficulty knobs for it."""

    n_train: int
    n_test: int
    d: int
    labels: int
    avg_labels: float  # labels per row (1 for a multi-class set)
    avg_points: float  # points per label, as published (n_train * avg_labels / labels, rounded)
    avg_nnz: float  # features per row
    published_p1: float  # DiSMEC's published P@1 (accuracy for multi-class LSHTC1)
    signal: float  # the generator's knobs, calibrated against published_p1
    confusion: float
    cluster_share: float = 0.85

    @property
    def multiclass(self) -> bool:
        """One label per row."""
        return self.avg_labels == 1.0


# Shapes: the Extreme Classification Repository's table (manikvarma.org/downloads/XC/XMLRepository.html:
# D, L, N train / test, points per label, labels per point), the same in the PPDSparse paper's Tables
# 1-3 (/work/shared/papers/ppdsparse-kdd2017.txt) and, for WikiLSHTC-325K's 3.19 and 17.46, the LDGS
# paper's Table 2 (EURLex-4K's 25.73 points per label counts train and test rows). Features per row:
# figures commonly reported for the repository's BoW files (EURLex-4K 236.7, Wiki10-31K 673.4,
# AmazonCat-13K 71.1, Amazon-670K 75.7, WikiLSHTC-325K 42.2; recalled, not yet checked against the
# files) and for LSHTC1 the DS-MLR paper's 0.049% density of 347,256 features (170). Published P@1:
# DiSMEC on the XC repository's results table (EURLex-4K 82.40, Wiki10-31K 85.20, Amazon-670K 44.78,
# WikiLSHTC-325K 64.94), PPDSparse's Table 1 for AmazonCat-13K (DiSMEC 92.72) and its Table 3 for
# LSHTC1's multi-class accuracy (22.74). Signal and confusion are calibrated by Newton MSI runs so that
# its P@1 lands within 10 points of the published one, at the scale benchmarks/presets_bench.py names
# (P@1 moves with the scale below about a tenth); its table in BENCHMARKS.md and docs/data.md.
PRESETS: dict[str, Shape] = {
    "eurlex-4k": Shape(15539, 3809, 5000, 3993, 5.31, 25.73, 236.7, 82.40, signal=0.18, confusion=0.3),
    "wiki10-31k": Shape(14146, 6616, 101938, 30938, 18.64, 8.52, 673.4, 85.20, signal=0.18, confusion=0.3),
    "amazoncat-13k": Shape(1186239, 306782, 203882, 13330, 5.04, 448.57, 71.1, 92.72, signal=0.3, confusion=0.2),
    "amazon-670k": Shape(490449, 153025, 135909, 670091, 5.45, 3.99, 75.7, 44.78, signal=0.15, confusion=0.5),
    "wikilshtc-325k": Shape(1778351, 587084, 1617899, 325056, 3.19, 17.46, 42.2, 64.94, signal=0.3, confusion=0.3),
    "lshtc1": Shape(88806, 5000, 347255, 12294, 1.0, 7.22, 170.0, 22.74, signal=0.03, confusion=0.7),
}


def _zipf_draw(rng: np.random.Generator, size: int, d: int, s: float) -> np.ndarray:
    """Integers in [0, d) with P(f) proportional to (f + 1)^-s, by inverting the continuous CDF."""
    u = rng.random(size)
    top = (d + 1.0) ** (1.0 - s)
    return np.minimum((1.0 + u * (top - 1.0)) ** (1.0 / (1.0 - s)) - 1.0, d - 1).astype(np.int64)


def _label_weights(n_labels: int, avg_labels: float, alpha: float) -> np.ndarray:
    """Label weights summing to 1 whose values follow the Pareto law x^-alpha (its quantiles at
    (rank + 1/2) / L), the head clipped so that no label is expected on more than HEAD_SHARE of the rows."""
    x = ((np.arange(n_labels) + 0.5) / n_labels) ** (-1.0 / (alpha - 1.0))
    cap = x[0]
    while True:
        w = np.minimum(x, cap)
        w /= w.sum()
        if w[0] * avg_labels <= HEAD_SHARE or cap <= x[-1]:  # uniform weights when labels are too few for the cap
            return w
        cap /= 1.25


def _negbin_extra(rng: np.random.Generator, mean: float, dispersion: float, size: int) -> np.ndarray:
    """Counts of the given mean and variance / mean ratio (gamma-Poisson; plain Poisson at ratio <= 1)."""
    if mean <= 0:
        return np.zeros(size, dtype=np.int64)
    if dispersion <= 1.0:
        return rng.poisson(mean, size)
    shape = mean / (dispersion - 1.0)
    return rng.poisson(rng.gamma(shape, mean / shape, size))


def _labels(rng: np.random.Generator, n: int, shape: Shape, n_labels: int) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Y, each row's home topic and each label's topic (module docstring)."""
    w = _label_weights(n_labels, shape.avg_labels, LABEL_EXPONENT)
    n_clusters = max(1, n_labels // CLUSTER_SIZE)
    # topics gather labels of similar popularity (rank times a log-normal jitter), so head labels share
    # topics and co-occur, as real head tags do
    topic = np.empty(n_labels, dtype=np.int64)
    topic[np.argsort(np.arange(1, n_labels + 1) * rng.lognormal(0.0, TOPIC_JITTER, n_labels))] = (
        np.arange(n_labels) * n_clusters // n_labels)
    order = np.argsort(topic, kind="stable")
    cum = np.cumsum(w[order])
    bounds = np.searchsorted(topic[order], np.arange(n_clusters + 1))
    lo = np.concatenate([[0.0], cum])[bounds[:-1]]
    mass = np.concatenate([[0.0], cum])[bounds[1:]] - lo
    home = np.minimum(np.searchsorted(np.cumsum(mass), rng.random(n) * mass.sum(), side="right"), n_clusters - 1)

    def draw(size: int) -> np.ndarray:
        return order[np.minimum(np.searchsorted(cum, rng.random(size), side="right"), n_labels - 1)]

    if shape.multiclass:
        counts = np.ones(n, dtype=np.int64)
    else:
        mean, ratio = shape.avg_labels, LABELS_DISPERSION
        counts = 1 + _negbin_extra(rng, mean - 1.0, ratio * mean / (mean - 1.0), n)
    counts = np.minimum(counts, n_labels)
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    label = draw(rows.size)
    within = (rng.random(rows.size) < shape.cluster_share) | shape.multiclass
    u = lo[home[rows[within]]] + rng.random(within.sum()) * mass[home[rows[within]]]
    label[within] = order[np.minimum(np.searchsorted(cum, u, side="right"), n_labels - 1)]
    keys, _ = _distinct_per_row(rng, rows * n_labels + label, n_labels, draw)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sp.csr_matrix((np.ones(keys.size), keys % n_labels, indptr), shape=(n, n_labels)), home, topic


# Shapes of our own beside the published ones. lshtc1-margin (issue #41): LSHTC1's multi-class shape
# and topics (CLUSTER_SIZE sibling classes drawing their signatures from one TOPIC_WORDS vocabulary),
# with more signal and less confusion than LSHTC1's, so that a class is told apart from
# its siblings by its own words: there the class of the margin matters. Measured (MEMOIR, lam 1e-4,
# 5 epochs, 2,000 classes at scale 0.1): exact 71.8% against random's 66.6%; at LSHTC1's first-guess
# knobs (signal 0.1, confusion 0.5, 3 epochs) random led, 36.2% to 26.0%: half the signature draws from a
# sibling make the violating sibling noise.
VARIANTS: dict[str, Shape] = {
    "lshtc1-margin": replace(PRESETS["lshtc1"], published_p1=float("nan"), signal=0.15, confusion=0.3),
}


def preset(name: str) -> Shape:
    """The shape named `name`: a published one (PRESETS) or one of ours (VARIANTS)."""
    shapes = {**PRESETS, **VARIANTS}
    if name not in shapes:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(shapes)}")
    return shapes[name]


def _features(rng: np.random.Generator, Y: sp.csr_matrix, topic: np.ndarray, shape: Shape) -> sp.csr_matrix:
    """X: gamma-Poisson terms per row, `signal` of them from label signatures, the rest Zipf background;
    values (1 + log tf) * log((n + 1) / df), rows L2-normalised."""
    n, n_labels = Y.shape
    d = shape.d
    n_topics = int(topic.max()) + 1
    topic_words = rng.integers(0, d, (n_topics, TOPIC_WORDS))
    signatures = topic_words[topic[:, None], rng.integers(0, TOPIC_WORDS, (n_labels, SIGNATURE))]

    terms = np.clip(_negbin_extra(rng, shape.avg_nnz, NNZ_CV**2 * shape.avg_nnz, n), 1, d)  # variance cv^2 mean^2
    from_signatures = rng.binomial(terms, shape.signal)
    rows = np.repeat(np.arange(n, dtype=np.int64), from_signatures)
    per_row = np.diff(Y.indptr)
    has = per_row[rows] > 0
    rows = rows[has]
    label = Y.indices[Y.indptr[rows] + (rng.random(rows.size) * per_row[rows]).astype(np.int64)]
    confused = rng.random(label.size) < shape.confusion
    # a confuser: another label of the same topic, found among the labels sorted by topic
    by_topic = np.argsort(topic, kind="stable")
    start = np.searchsorted(topic[by_topic], topic[label[confused]])
    size = np.searchsorted(topic[by_topic], topic[label[confused]], side="right") - start
    label[confused] = by_topic[start + (rng.random(confused.sum()) * size).astype(np.int64)]
    signature_keys = rows * d + signatures[label, rng.integers(0, SIGNATURE, label.size)]
    n_background = terms - np.bincount(rows, minlength=n)
    rows = np.repeat(np.arange(n, dtype=np.int64), n_background)

    def background(size: int) -> np.ndarray:
        return _zipf_draw(rng, size, d, 1.0 / (DF_EXPONENT - 1.0))

    keys, hits = _distinct_per_row(rng, np.concatenate([signature_keys, rows * d + background(rows.size)]), d,
                                   background)
    return _tfidf(keys, hits, terms, d)


def scaled(name: str, scale: float = 1.0, labels: int | None = None) -> Shape:
    """The preset `name` with its rows and labels multiplied by `scale` (at least one of each); `labels`,
    when given, is the label count K instead, with the labels per row kept, so that the positives a
    label, N * labels per row / K, change with K at a fixed N (the PPDSparse paper's n_p, Section 3)."""
    base = preset(name)
    if not 0.0 < scale <= 1.0:
        raise ValueError(f"scale must be in (0, 1], got {scale}")
    if labels is not None and labels < 1:
        raise ValueError(f"labels must be at least 1, got {labels}")
    labels = max(1, round(base.labels * scale)) if labels is None else labels
    return Shape(max(1, round(base.n_train * scale)), max(1, round(base.n_test * scale)), base.d, labels,
                 min(base.avg_labels, labels), base.avg_points, base.avg_nnz, base.published_p1, base.signal,
                 base.confusion, base.cluster_share)


def like(name: str, scale: float = 1.0, *, seed: int = 0, labels: int | None = None) -> tuple[Dataset, Dataset]:
    """A (train, test) pair shaped like the published data set `name` (PRESETS), scaled by `scale`; with
    `labels`, K labels instead of the preset's scaled ones (`scaled`)."""
    shape = scaled(name, scale, labels)
    rng = np.random.default_rng(seed)
    n = shape.n_train + shape.n_test
    Y, _, topic = _labels(rng, n, shape, shape.labels)
    X = _features(rng, Y, topic, shape)
    tag = (name if scale == 1.0 else f"{name}x{scale:g}") + ("" if labels is None else f"-K{labels}")
    return (Dataset(X[: shape.n_train], Y[: shape.n_train], name=f"{tag}-train"),
            Dataset(X[shape.n_train:], Y[shape.n_train:], name=f"{tag}-test"))


def like_with_labels(name: str, n_train: int, n_labels: int, *, seed: int = 0,
                     labels: int | None = None) -> tuple[Dataset, Dataset]:
    """The preset `name` scaled to n_train training rows (with `labels`, generated with K labels: `scaled`),
    restricted to n_labels of its labels (drawn with `seed` among those with a training positive; all of
    them if fewer), the test split to its rows that carry one of them: per-label work at a size N whose
    full label set would not fit in minutes."""
    train, test = like(name, n_train / preset(name).n_train, seed=seed, labels=labels)
    candidates = np.flatnonzero(np.diff(sp.csc_matrix(train.Y).indptr) > 0)
    sample = np.sort(np.random.default_rng(seed).choice(candidates, min(n_labels, candidates.size), replace=False))
    Y_test = test.Y[:, sample]
    keep = np.flatnonzero(np.diff(Y_test.indptr) > 0)
    tag = f"{name}@{n_train}/{sample.size}" + ("" if labels is None else f"-K{labels}")
    return (Dataset(train.X, train.Y[:, sample], name=f"{tag}-train"),
            Dataset(test.X[keep], Y_test[keep], name=f"{tag}-test"))
