"""ClassWeights.best_among: the approximate oracles' exact re-ranking over a live weight store, read
through its class-major snapshot."""
import numba
import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.oracles.arrays import csr_arrays
from xcviz.solvers.classweights import ClassWeights

C, D, N, K = 300, 2000, 400, 12


def trained_store(seed: int = 0) -> ClassWeights:
    """A store grown by updates as training grows it (entries in update order, classes interleaved),
    with a lazy scale and a truncated row (explicit zero entries)."""
    rng = np.random.default_rng(seed)
    X = sp.random(3000, D, density=0.01, random_state=rng, format="csr", data_rvs=rng.standard_normal)
    store = ClassWeights(C, D)
    indptr, indices, data = csr_arrays(X, D)
    for batch in np.array_split(np.arange(X.shape[0]), 10):
        store.apply(batch, indptr, indices, data, rng.integers(0, C, X.shape[0]), rng.integers(0, C, X.shape[0]), 0.1)
        store.multiply(0.9)
    store.soft_threshold(np.array([7]), 1e9)
    return store


def queries(seed: int) -> tuple:
    """Query rows, candidate lists (duplicates, the excluded class, an empty list) and exclusions."""
    rng = np.random.default_rng(seed)
    X = sp.random(N, D, density=0.02, random_state=rng, format="csr", data_rvs=rng.standard_normal)
    sizes = rng.integers(0, K, N)
    sizes[3] = 0
    cand_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    cands = rng.integers(0, C, cand_ptr[-1]).astype(np.int64)
    cands[cand_ptr[5]:cand_ptr[6]] = 7  # only the truncated class
    exclude = np.where(rng.random(N) < 0.5, cands[np.minimum(cand_ptr[:-1], cand_ptr[-1] - 1)], -1).astype(np.int64)
    return X, cand_ptr, cands, exclude


def test_best_among_is_the_best_candidate_by_the_hash_lookups_scores():
    store = trained_store()
    X, cand_ptr, cands, exclude = queries(1)
    indptr, indices, data = csr_arrays(X, D)
    best, score = store.best_among(cand_ptr, cands, indptr, indices, data, exclude)
    # every pair scored by the store's hash lookups (pair_scores: the same sums, in x's order)
    owner = np.repeat(np.arange(N), np.diff(cand_ptr))
    pairs = X[owner]
    hashed, _ = store.pair_scores(*csr_arrays(pairs, D), cands, np.full(owner.size, -1))
    np.testing.assert_allclose(hashed, (pairs.multiply(store.matrix()[cands])).sum(1).A1, rtol=1e-12, atol=1e-12)
    for i in range(N):
        allowed = [(hashed[q], -cands[q]) for q in range(cand_ptr[i], cand_ptr[i + 1]) if cands[q] != exclude[i]]
        top = max(allowed, default=(-np.inf, 1))
        assert (best[i], score[i] * store.scale) == (-top[1], top[0])


def test_the_answer_does_not_depend_on_the_thread_count():
    store = trained_store()
    X, cand_ptr, cands, exclude = queries(2)
    arrays = csr_arrays(X, D)
    before = numba.get_num_threads()
    answers = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            store.version += 1  # the snapshot is cut again with this many parts
            answers.append(store.best_among(cand_ptr, cands, *arrays, exclude))
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(answers[0][0], answers[1][0]) and np.array_equal(answers[0][1], answers[1][1])


@pytest.mark.parametrize("change", ["apply", "truncate"])
def test_a_change_of_the_weights_is_seen_by_the_next_re_ranking(change):
    store = trained_store()
    x = sp.csr_matrix(([1.0], ([0], [11])), shape=(1, D))
    arrays = csr_arrays(x, D)
    lists = (np.array([0, 2], np.int64), np.array([4, 5], np.int64))
    store.apply(np.array([0]), *arrays, np.array([5]), np.array([4]), 1e3)
    assert store.best_among(*lists, *arrays, np.array([-1]))[0][0] == 5
    if change == "apply":
        store.apply(np.array([0]), *arrays, np.array([4]), np.array([5]), 1e4)
        expected = (4, store.matrix()[4, 11] / store.scale)
    else:
        store.soft_threshold(np.array([5]), 1e9)
        expected = (5, 0.0)  # class 5 truncated to zero still beats class 4's negative score
    best, score = store.best_among(*lists, *arrays, np.array([-1]))
    assert (best[0], score[0]) == expected


def test_ties_go_to_the_smallest_class_and_excluded_only_lists_to_minus_one():
    W = sp.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0], [2.0, 0.0], [1.0, 1.0]]))
    store = ClassWeights.from_matrix(W)
    X = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 0.0]]))
    best, score = store.best_among(np.array([0, 3, 4]), np.array([2, 3, 1, 1]), *csr_arrays(X, 2), np.array([-1, 1]))
    assert best.tolist() == [1, -1] and score.tolist() == [2.0, -np.inf]
