"""Statistics that say whether a multi-label data set behaves like real XMC data.

Used to calibrate the generator's presets (xcviz.data.presets) against real sets (Bibtex,
Delicious, debian-tags), by their test and by notebook 06, which draws real against generated.
Every statistic reads only the sparse matrices, in O(nnz) time and memory, except the
co-occurrence measure (O(sum over rows of labels^2)).

- Label frequency law: the tail exponent alpha of P(frequency = f) ~ f^-alpha, by the Pareto
  maximum-likelihood fit of scipy.stats over labels seen at least `xmin` times (Clauset, Shalizi and
  Newman 2009, eq. 3.7 with their continuity correction xmin - 1/2).
- Labels per row: mean and dispersion (variance / mean; 1 for Poisson, above 1 for real data).
- Feature law: the same Pareto exponent for feature document frequencies, and nnz per row (mean,
  coefficient of variation).
- Co-occurrence: the median pointwise mutual information log(n c_ij / (c_i c_j)) of the most
  frequent label pairs; 0 when labels are drawn independently of each other, positive when they
  share topics.
"""
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp
import scipy.stats

TOP_PAIRS = 200  # label pairs the co-occurrence measure looks at
XMIN = 5.0  # the power-law fits ignore counts below this: Poisson noise, not the law, shapes them


def power_law_exponent(counts: np.ndarray, xmin: float | None = None) -> float:
    """Tail exponent alpha of P(x) ~ x^-alpha for positive integer `counts`, by maximum likelihood.

    `xmin` defaults to the 10th percentile of the positive counts, so the head-heavy bottom of small
    sets (Bibtex's labels all occur 50+ times) and a few singletons do not dominate the fit.
    """
    x = np.asarray(counts, dtype=np.float64)
    x = x[x > 0]
    if xmin is None:
        xmin = max(XMIN, float(np.percentile(x, 10)))
    tail = x[x >= xmin]
    if tail.size < 2:
        return float("nan")
    b, _, _ = scipy.stats.pareto.fit(tail, floc=0.0, fscale=xmin - 0.5)
    return float(b + 1.0)


def top_pair_pmis(Y: sp.csr_matrix, top: int = TOP_PAIRS) -> np.ndarray:
    """PMI (natural log) of the `top` most frequent co-occurring label pairs of Y, most frequent first."""
    Y = sp.csr_matrix(Y, dtype=np.float64)
    C = sp.triu(Y.T @ Y, k=1).tocoo()
    freq = np.asarray(Y.sum(axis=0)).ravel()
    best = np.argsort(C.data, kind="stable")[::-1][:top]
    return np.log(Y.shape[0] * C.data[best] / (freq[C.row[best]] * freq[C.col[best]]))


@dataclass
class Stats:
    """The calibrated statistics of one data set (see the module docstring)."""

    n: int
    d: int
    labels: int
    label_exponent: float
    labels_per_row: float
    labels_dispersion: float
    feature_df_exponent: float
    nnz_per_row: float
    nnz_cv: float
    pair_pmi: float

    def as_dict(self) -> dict:
        """The statistics as a plain dict (for tables and DataFrames)."""
        return asdict(self)


def describe(X: sp.csr_matrix, Y: sp.csr_matrix) -> Stats:
    """The statistics of one data set (features X, 0/1 labels Y)."""
    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    per_row = np.diff(Y.indptr).astype(np.float64)
    nnz = np.diff(X.indptr).astype(np.float64)
    return Stats(
        n=X.shape[0], d=X.shape[1], labels=Y.shape[1],
        label_exponent=power_law_exponent(np.bincount(Y.indices, minlength=Y.shape[1])),
        labels_per_row=float(per_row.mean()),
        labels_dispersion=float(per_row.var() / per_row.mean()),
        feature_df_exponent=power_law_exponent(np.bincount(X.indices, minlength=X.shape[1])),
        nnz_per_row=float(nnz.mean()),
        nnz_cv=float(nnz.std() / nnz.mean()),
        pair_pmi=float(np.median(pmis)) if (pmis := top_pair_pmis(Y)).size else 0.0,
    )
