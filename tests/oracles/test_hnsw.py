"""What the HNSW oracle relies on in hnswlib: add_items with an existing id replaces that element
in place (nmslib/hnswlib#303), it does not add a second one."""
import hnswlib
import numpy as np
import pytest
import scipy.sparse as sp


def test_add_items_with_an_existing_id_replaces_the_vector():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((200, 16)).astype(np.float32)
    graph = hnswlib.Index(space="ip", dim=16)
    graph.init_index(max_elements=200, ef_construction=50, M=8, random_seed=1)
    graph.add_items(vectors, np.arange(200), num_threads=1)
    query = rng.standard_normal((1, 16)).astype(np.float32)
    graph.add_items(100.0 * query, np.array([7]), num_threads=1)
    assert graph.get_current_count() == 200
    np.testing.assert_allclose(graph.get_items([7])[0], 100.0 * query[0], rtol=1e-6)
    graph.set_ef(50)
    labels, _ = graph.knn_query(query, k=1, num_threads=1)
    assert labels[0, 0] == 7


def _built(problem, threads, **params):
    from xcviz.oracles.hnsw import HNSWOracle, HNSWParams
    from xcviz.oracles.static import StaticVectors

    oracle = HNSWOracle(HNSWParams(hnsw_ef=100, hnsw_candidates=32, sketch_dim=128, **params), seed=0, threads=threads)
    oracle.build(StaticVectors(problem.W))
    return oracle


@pytest.mark.slow
def test_sharded_graphs_are_reproducible_and_keep_recall(problem):
    """Shards built side by side, one thread each: the same answers for 1 and 2 threads, and run
    after run; a query searches every shard, so recall stays near the single graph's."""
    from .conftest import brute_force

    truth = brute_force(problem.W, problem.X, problem.y)
    answers = [_built(problem, threads, hnsw_shards=2).query(problem.X, problem.y) for threads in (1, 2, 2)]
    assert np.array_equal(answers[0], answers[1]) and np.array_equal(answers[1], answers[2])
    single = _built(problem, 2).query(problem.X, problem.y)
    assert np.mean(answers[0] == truth) > np.mean(single == truth) - 0.05
    assert np.mean(answers[0] == truth) > 0.6


@pytest.mark.slow
def test_an_update_of_most_classes_builds_a_fresh_graph(problem):
    """Above hnsw_rebuild_fraction of the classes, update() rebuilds: its answers are those of an
    oracle built afresh on the same vectors (and so reproducible)."""
    from .conftest import Swappable, random_classes

    vectors = Swappable(problem.W)
    kept = _built(problem, 2)
    kept.build(vectors)
    vectors.set(random_classes(problem.W.shape[0], 9))
    kept.update(np.arange(problem.W.shape[0] * 3 // 4))
    fresh = _built(problem, 2)
    fresh.build(vectors)
    assert np.array_equal(kept.query(problem.X, problem.y), fresh.query(problem.X, problem.y))


def test_a_fresh_graph_leaves_out_zero_classes_and_an_update_brings_them_in(problem):
    """Zero class vectors are not inserted into a fresh graph (a third of the classes here; at
    MEMOIR's first build about half of them): the graph holds only the others, every answer is a
    class != the excluded one, and once a zero class changes, the update inserts it and a query
    near it finds it."""
    from xcviz.oracles.static import StaticVectors

    from .conftest import Swappable

    W = problem.W.tolil()
    zero = np.arange(0, W.shape[0], 3)
    W[zero] = 0
    vectors = Swappable(W.tocsr())
    oracle = _built(problem, 2)
    oracle.build(vectors)
    assert oracle._graphs[0].get_current_count() == W.shape[0] - zero.size
    answer = oracle.query(problem.X, problem.y)
    assert np.all((answer >= 0) & (answer != problem.y))
    assert not np.isin(answer, zero).any()
    vectors.set(problem.W)
    oracle.update(zero[:5])
    assert oracle._graphs[0].get_current_count() == W.shape[0] - zero.size + 5
    found = oracle.query(problem.W[zero[:5]])  # each class's own vector as the query
    assert np.mean(found == zero[:5]) >= 0.8
    empty = _built(problem, 1)
    empty.build(StaticVectors(sp.csr_matrix(problem.W.shape)))  # W = 0: nothing to insert
    assert empty._graphs[0].get_current_count() == 0
    assert np.all(empty.query(problem.X, problem.y) != problem.y)
