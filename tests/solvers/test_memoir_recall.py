"""Oracle recall with a stated tolerance and by rank: the exact oracle's rank against brute force,
and near-ties that an exact-match recall would call misses."""
import numpy as np
import scipy.sparse as sp

from xcviz.oracles.exact import ExactOracle
from xcviz.oracles.static import StaticVectors
from xcviz.solvers.classweights import ClassWeights
from xcviz.solvers.memoir import _Diagnostics


def test_rank_is_one_plus_the_classes_scoring_strictly_higher():
    """Against dense numpy scores, negative ones included (classes sharing no feature score 0)."""
    rng = np.random.default_rng(0)
    C, D, n = 300, 200, 150
    W = sp.random(C, D, density=0.03, random_state=rng, format="csr", data_rvs=rng.standard_normal)
    X = sp.random(n, D, density=0.05, random_state=rng, format="csr", data_rvs=rng.standard_normal)
    exclude = rng.integers(0, C, n)
    answer = (exclude + 1 + rng.integers(0, C - 1, n)) % C
    oracle = ExactOracle(threads=2)
    oracle.build(StaticVectors(W))
    S = (X @ W.T).toarray()
    own = S[np.arange(n), answer]
    S[np.arange(n), exclude] = -np.inf
    S[np.arange(n), answer] = -np.inf
    expected = 1 + (S > own[:, None]).sum(1)
    assert np.array_equal(oracle.rank(X, answer, exclude), expected)
    assert (own < 0).any() and (expected > 100).any()  # the zero-score classes were counted
    best = oracle.query(X, exclude)
    assert np.all(oracle.rank(X, best, exclude) == 1)


class Twin:
    """An oracle answering the near-duplicate of the exact margin class."""

    def __init__(self, exact, twin):
        self.exact, self.twin = exact, twin

    def query(self, X, exclude, draw=None):
        best = self.exact.query(X, exclude, draw)
        return np.where(self.twin[best] == exclude, best, self.twin[best])


def test_a_near_tie_is_found_within_the_tolerance_and_ranked_second():
    """Classes come in pairs 1e-4 apart: answering the twin of the margin class costs the step
    1e-4, so it is found within the stated tolerance (0.01) and ranked second, where an exact-match
    recall would read 0."""
    rng = np.random.default_rng(1)
    base = sp.random(50, 80, density=0.2, random_state=rng, format="csr", data_rvs=rng.random)
    W = sp.vstack([base, base + 1e-4 * (base != 0)]).tocsr()   # class c + 50 scores above class c
    twin = np.concatenate([np.arange(50, 100), np.arange(50)])
    weights = ClassWeights.from_matrix(W)
    X = sp.random(200, 80, density=0.3, random_state=rng, format="csr", data_rvs=rng.random)
    y = rng.integers(0, 100, 200)
    diag = _Diagnostics(X, y, None, 200, rng, 0.0, "l2", 2, tolerance=0.01)
    exact = ExactOracle(threads=2)
    exact.build(weights)
    out = diag.measure(weights, Twin(exact, twin))
    assert out["oracle_recall"] == 1.0
    assert out["oracle_recall_at_1"] < 0.1 and out["oracle_recall_at_10"] == 1.0
    assert out["oracle_rank_p50"] == 2.0
    assert 0 < out["margin_error"] <= 1e-3
