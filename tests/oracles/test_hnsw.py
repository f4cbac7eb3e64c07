"""What the HNSW oracle relies on in hnswlib: add_items with an existing id replaces that element
in place (nmslib/hnswlib#303), it does not add a second one."""
import hnswlib
import numpy as np


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
