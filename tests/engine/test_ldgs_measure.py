"""LDGS's diagnostic kernels against plain numpy and hand computations."""
import numpy as np

from xcviz.engine.ldgs_measure import support_stats, top_precision


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
    got = np.empty((3, n))
    support_stats(grad, U, coef, count, 0.5, *got)
    np.testing.assert_allclose(got.T, _reference(grad, U, coef, count, 0.5), rtol=1e-12, equal_nan=True)
    assert got[2, 3] == 0.0 and np.isnan(got[:, 5]).all()
    full = np.empty((3, 1))  # every class in U with the exact gradient: recall 1, error 0, cosine 1
    support_stats(grad[:1], np.arange(K)[None, :], grad[:1], np.array([K]), 0.5, *full)
    np.testing.assert_allclose(full[:, 0], [1.0, 0.0, 1.0], atol=1e-12)


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
