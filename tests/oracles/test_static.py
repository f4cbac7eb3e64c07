"""StaticVectors: exact re-ranking over a fixed CSR matrix."""
import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.oracles.arrays import csr_arrays
from xcviz.oracles.static import StaticVectors

from .conftest import brute_force


def all_candidates(n: int, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n + 1, dtype=np.int64) * n_classes, np.tile(np.arange(n_classes, dtype=np.int64), n)


def test_best_among_all_classes_is_brute_force(problem):
    V = StaticVectors(problem.W)
    n = problem.X.shape[0]
    best, score = V.best_among(*all_candidates(n, V.n_classes), *csr_arrays(problem.X, V.n_features), problem.y)
    assert np.array_equal(best, brute_force(problem.W, problem.X, problem.y))
    expected = (problem.X @ problem.W.T).toarray()[np.arange(n), best]
    np.testing.assert_allclose(score, expected, rtol=1e-12, atol=1e-12)


def test_long_rows_are_looked_up_by_binary_search():
    """A class row much longer than the query takes the binary-search path; same answers."""
    rng = np.random.default_rng(0)
    W = sp.random(50, 3000, density=0.5, random_state=rng, format="csr")
    X = sp.random(20, 3000, density=0.005, random_state=rng, format="csr")
    V = StaticVectors(W)
    best, _ = V.best_among(*all_candidates(20, 50), *csr_arrays(X, 3000), np.full(20, -1))
    assert np.array_equal(best, brute_force(W, X))


def test_ties_go_to_the_smallest_id_and_empty_lists_give_minus_one():
    W = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]))
    V = StaticVectors(W)
    X = sp.csr_matrix(np.array([[2.0, 0.0], [2.0, 0.0], [2.0, 0.0]]))
    cand_ptr = np.array([0, 3, 5, 5])
    cands = np.array([2, 1, 0, 0, 2])
    best, score = V.best_among(cand_ptr, cands, *csr_arrays(X, 2), np.array([-1, 0, -1]))
    assert best.tolist() == [0, 2, -1]
    assert score.tolist() == [2.0, 2.0, -np.inf]


def test_rows_and_shape(problem):
    V = StaticVectors(problem.W)
    assert (V.n_classes, V.n_features) == problem.W.shape
    assert (V.rows(np.array([5, 1])) != problem.W[[5, 1]]).nnz == 0
    with pytest.raises(TypeError):
        StaticVectors(np.ones((2, 2)))
