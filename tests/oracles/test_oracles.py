"""The three approximate oracles on one random problem: recall against brute force, exclusion,
updates, standalone search, thread-count independence, fallback and bad input.

Recall floors sit below the values measured on this problem (C 2000, D 5000, 600 queries; in
brackets: without exclusion / own class excluded): HNSW with ef 200, 50 candidates, sketch 256
(1.00 / 0.90), SimpleLSH defaults (a full Hamming ranking, the paper's: 0.64 / 0.42), SimpleLSH
banded, 8 bands of 8 bits (0.14 / 0.07), spherical defaults (0.95 / 0.71), spherical
re-ranking all members of its 8 probed clusters (0.95 / 0.75).
"""
import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.oracles.hnsw import HNSWOracle, HNSWParams
from xcviz.oracles.simplelsh import SimpleLSHOracle, SimpleLSHParams
from xcviz.oracles.spherical import SphericalOracle, SphericalParams
from xcviz.oracles.static import StaticVectors

from .conftest import C, Swappable, brute_force, noisy_rows, random_classes

# name -> (factory, recall floor without exclusion, recall floor with the own class excluded)
ORACLES = {
    "hnsw": (lambda **kw: HNSWOracle(HNSWParams(hnsw_ef=200, hnsw_candidates=50, sketch_dim=256), **kw), 0.95, 0.85),
    "simplelsh": (lambda **kw: SimpleLSHOracle(SimpleLSHParams(), **kw), 0.55, 0.35),
    "simplelsh banded": (lambda **kw: SimpleLSHOracle(SimpleLSHParams(lsh_bands=8, lsh_band_bits=8), **kw), 0.1, 0.04),
    "spherical": (lambda **kw: SphericalOracle(SphericalParams(), **kw), 0.9, 0.6),
    "spherical all members": (lambda **kw: SphericalOracle(SphericalParams(cluster_candidates=0), **kw), 0.9, 0.65),
}


SLOW = {"hnsw", "simplelsh banded"}  # seconds each to build or search (the `slow` tier)


@pytest.fixture(scope="module",
                params=[pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in ORACLES])
def built(request, problem):
    make, floor, floor_excluded = ORACLES[request.param]
    oracle = make(seed=0, threads=1)
    oracle.build(StaticVectors(problem.W))
    return oracle, make, floor, floor_excluded


def recall(oracle, W, X, exclude=None) -> float:
    return float(np.mean(oracle.query(X, exclude) == brute_force(W, X, exclude)))


def test_recall_against_brute_force(built, problem):
    oracle, _, floor, floor_excluded = built
    assert recall(oracle, problem.W, problem.X) > floor
    assert recall(oracle, problem.W, problem.X, problem.y) > floor_excluded


def test_the_excluded_class_is_never_returned(built, problem):
    oracle, *_ = built
    answer = oracle.query(problem.X, problem.y)
    assert answer.dtype == np.int64 and answer.shape == problem.y.shape
    assert np.all(answer != problem.y) and answer.min() >= 0 and answer.max() < C


def test_same_answers_on_one_and_two_threads(built, problem):
    _, make, *_ = built
    answers = []
    for threads in (1, 2):  # fresh oracles: an oracle's answers may depend on how often it was asked
        oracle = make(seed=0, threads=threads)
        oracle.build(StaticVectors(problem.W))
        answers.append(oracle.query(problem.X, problem.y))
    assert np.array_equal(*answers)


def test_update_follows_changed_vectors(built, problem):
    _, make, floor, _ = built
    rng = np.random.default_rng(5)
    changed = rng.choice(C, 200, replace=False)
    W2 = problem.W.tolil()
    W2[changed] = random_classes(changed.size, 7)
    W2 = W2.tocsr()
    vectors = Swappable(problem.W)
    oracle = make(seed=0, threads=1)
    oracle.build(vectors)
    vectors.set(W2)
    oracle.update(changed)
    X2 = noisy_rows(W2, rng.choice(changed, 300), 8)
    assert recall(oracle, W2, X2) > floor
    dominant = int(changed[0])
    W3 = W2.tolil()
    W3[dominant] = 50.0 * X2[0].toarray()
    vectors.set(W3.tocsr())
    oracle.update(np.array([dominant]))
    assert oracle.query(X2[[0]]).tolist() == [dominant]


def test_rescale_keeps_the_index_valid(built, problem):
    _, make, _, floor_excluded = built
    vectors = Swappable(problem.W)
    oracle = make(seed=0, threads=1)
    oracle.build(vectors)
    vectors.set((3.0 * problem.W).tocsr())
    oracle.rescale(3.0)
    oracle.update(np.arange(0, C, 7))
    assert recall(oracle, problem.W, problem.X, problem.y) > floor_excluded


def test_standalone_search_without_exclusion(built):
    _, make, *_ = built
    W = sp.identity(50, format="csr") * 2.0 + sp.csr_matrix(np.full((50, 50), 0.01))
    alone = make(seed=1, threads=1)
    alone.build(StaticVectors(W))
    X = sp.identity(50, format="csr")[[3, 17, 42]]
    assert alone.query(X).tolist() == [3, 17, 42]


def test_nothing_but_the_excluded_class_falls_back_to_another(problem):
    oracle = HNSWOracle(HNSWParams(hnsw_candidates=1), seed=3, threads=1)
    oracle.build(StaticVectors(problem.W))
    top = oracle.query(problem.X)
    fallback = oracle.query(problem.X, top)
    assert np.all(fallback != top) and fallback.min() >= 0 and fallback.max() < C
    assert np.array_equal(fallback, oracle.query(problem.X, top))


def test_bad_input_raises(built, problem):
    oracle, make, *_ = built
    with pytest.raises(RuntimeError, match="build"):
        make().query(problem.X)
    with pytest.raises(ValueError, match="features"):
        oracle.query(problem.X[:, :10])
    with pytest.raises(ValueError, match="one class per query"):
        oracle.query(problem.X, problem.y[:3])
    with pytest.raises(ValueError, match="classes must lie"):
        oracle.update(np.array([C]))
    with pytest.raises(ValueError, match="at least 2 classes"):
        make().build(StaticVectors(problem.W[:1]))
    with pytest.raises(ValueError, match="threads"):
        make(threads=0).build(StaticVectors(problem.W))


@pytest.mark.parametrize("params, name, value", [
    (HNSWParams, "hnsw_M", 1), (HNSWParams, "sketch_dim", 4), (HNSWParams, "hnsw_candidates", 0),
    (SimpleLSHParams, "hash_bits", 65), (SimpleLSHParams, "lsh_candidates", 0),
    (SimpleLSHParams, "lsh_norm_slack", -1.0), (SimpleLSHParams, "lsh_bands", 65),
    (SimpleLSHParams, "lsh_band_bits", 0), (SimpleLSHParams, "lsh_bucket_cap", -1), (SphericalParams, "probes", 0), (SphericalParams, "clusters", -1),
])
def test_parameters_out_of_bounds_are_refused(params, name, value):
    with pytest.raises(ValueError, match=name):
        params(**{name: value})


def test_parameter_names_are_unique_and_free_for_the_solver():
    solver = {"lam", "eta0", "eta_step", "batch_size", "epochs", "variant", "oracle", "seed", "normalize",
              "average", "sample_size", "threads"}
    names = [set(p.param) - {"name"} for p in (HNSWParams, SimpleLSHParams, SphericalParams)]
    assert sum(len(n) for n in names) == len(set().union(*names))
    assert not set().union(*names) & solver
