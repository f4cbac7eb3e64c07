"""The training rows and the pruned weight pieces of engine/sparse.py, against plain scipy/NumPy."""
import numpy as np
import scipy.sparse as sp

from xcviz.engine.sparse import prepare_rows, prune_block


def test_prune_block_keeps_the_large_entries_of_the_ordered_rows_across_chunks():
    rng = np.random.default_rng(3)
    W = rng.normal(scale=0.05, size=(11, 9))
    W[rng.random(W.shape) < 0.3] = 0.0
    W[2] = 0.0  # a row with nothing kept
    order = rng.permutation(11)
    expect = np.where(np.abs(W[order, :7]) >= 0.04, W[order, :7], 0.0)
    for chunk in (1, 3, 256):
        counts, idx, val = prune_block(W, order, 7, 0.04, chunk=chunk)
        got = sp.csr_matrix((val, idx, np.concatenate([[0], np.cumsum(counts)])), shape=(11, 7))
        assert idx.dtype == np.int32 and got.has_sorted_indices
        np.testing.assert_array_equal(got.toarray(), expect)
        assert got.nnz == np.count_nonzero(expect)
    counts, idx, val = prune_block(W, order, 7, 0.0)
    assert counts.sum() == np.count_nonzero(W[:, :7])  # threshold 0: every non-zero, no explicit zeros


def test_prepare_rows_normalises_orders_and_appends_the_bias_column():
    X = sp.csr_matrix(np.array([[3.0, 0.0, 4.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]))
    order = np.array([1, 2, 0])
    ptr, idx, val, colsum = prepare_rows(X.indptr, X.indices, X.data, 3, True, 0.5, order)
    got = sp.csr_matrix((val, idx.astype(np.int32), ptr.astype(np.int64)), shape=(3, 4)).toarray()
    np.testing.assert_allclose(got, [[0.0, 1.0, 0.0, 0.5], [0.0, 0.0, 0.0, 0.5], [0.6, 0.0, 0.8, 0.5]])
    np.testing.assert_allclose(colsum, got.sum(axis=0))
    assert ptr.dtype == np.uint64 and idx.dtype == np.uint32
    ptr, idx, val, colsum = prepare_rows(X.indptr, X.indices, X.data, 3, False, 0.0)
    np.testing.assert_array_equal(sp.csr_matrix((val, idx.astype(np.int32), ptr.astype(np.int64)), shape=(3, 3)).toarray(),
                                  X.toarray())
