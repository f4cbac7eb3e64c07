"""LDGS's diagnostic kernels against plain numpy and hand computations."""
import numpy as np

from xcviz.engine.ldgs_measure import support_stats, top_precision
from xcviz.solvers.ldgs.solver import _batch_error


def _reference(grad, U, coef, count, tau2):
    """The definitions, one sample at a time."""
    out = []
    for i in range(grad.shape[0]):
        ids, e, g = U[i, :count[i]], coef[i, :count[i]], grad[i]
        support = np.abs(g) > tau2
        recall = support[ids].sum() / support.sum() if support.any() else np.nan
        gg = g @ g
        if gg == 0:
            out.append((recall, np.nan, np.nan))
            continue
        inside = g[ids]
        error = np.sqrt((((e - inside) ** 2).sum() + max(gg - inside @ inside, 0.0)) / gg)
        cosine = e @ inside / np.sqrt(gg * (e @ e)) if e @ e > 0 else 0.0
        out.append((recall, error, cosine))
    return np.array(out)


def test_support_stats_match_their_definitions():
    rng = np.random.default_rng(0)
    n, K, width = 7, 40, 15
    grad = rng.normal(size=(n, K)) * (rng.random((n, K)) < 0.3)
    grad[5] = 0.0  # no support, no norm: NaN
    U = np.stack([rng.permutation(K)[:width] for _ in range(n)])
    coef = rng.normal(size=(n, width))
    coef[3] = 0.0  # a zero estimate: cosine 0
    count = rng.integers(1, width + 1, n)
    got = np.empty((5, n))
    support_stats(grad, U, coef, count, 0.5, *got)
    np.testing.assert_allclose(got[:3].T, _reference(grad, U, coef, count, 0.5), rtol=1e-12, equal_nan=True)
    assert got[2, 3] == 0.0 and np.isnan(got[:3, 5]).all()
    np.testing.assert_allclose(got[4], (grad ** 2).sum(axis=1), rtol=1e-12)
    full = np.empty((5, 1))  # every class in U with the exact gradient: recall 1, error 0, cosine 1
    support_stats(grad[:1], np.arange(K)[None, :], grad[:1], np.array([K]), 0.5, *full)
    np.testing.assert_allclose(full[:3, 0], [1.0, 0.0, 1.0], atol=1e-12)


def test_the_batch_error_is_the_ratio_of_norms_that_tiny_rows_cannot_dominate():
    """gradient_error is ||g~ - g|| / ||g|| over the batch, by hand; a row whose gradient is tiny
    and whose estimate misses it entirely takes the mean of the per-row ratios to 50 while the batch's
    error stays near the large row's 0.1."""
    grad = np.array([[3.0, 4.0, 0.0], [1e-6, 0.0, 0.0]])
    estimate = np.array([[3.0, 4.0, 0.5], [5e-5, 0.0, 0.0]])  # row 0 off by 0.5 of 5, row 1 by 49x its size
    U, count = np.tile(np.arange(3), (2, 1)), np.array([3, 3])
    out = np.empty((5, 2))
    support_stats(grad, U, estimate, count, 0.0, *out)
    np.testing.assert_allclose(out[1], [0.1, 49.0], rtol=1e-9)  # the per-row ratios
    by_hand = np.linalg.norm(estimate - grad) / np.linalg.norm(grad)
    assert abs(_batch_error(out[3], out[4]) - by_hand) < 1e-12 and abs(by_hand - 0.1) < 1e-3
    assert np.isnan(_batch_error(np.zeros(2), np.zeros(2)))


def test_top_precision_by_hand():
    S = np.array([[0.1, 0.9, 0.5, 0.3], [0.4, 0.4, 0.0, 0.2]])
    ptr, idx = np.array([0, 2, 3]), np.array([1, 3, 1])
    out = np.empty(2)
    top_precision(S, ptr, idx, 1, out)
    np.testing.assert_array_equal(out, [1.0, 0.0])  # row 1's tie goes to class 0
    top_precision(S, ptr, idx, 2, out)
    np.testing.assert_array_equal(out, [0.5, 0.5])
    top_precision(S, ptr, idx, 9, out)  # k beyond K: all classes
    np.testing.assert_array_equal(out, [0.5, 0.25])
