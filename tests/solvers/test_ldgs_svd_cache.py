"""LDGS's SVD basis is computed once per process for a matrix of the same content, h and seed
(xcviz/solvers/ldgs/svd_cache.py): what the memo returns is what svds computes, bit for bit; any
change to the matrix, h or the seed computes anew; the memo stays within its bounds; and no caller
can change what the next one gets."""
from collections import OrderedDict

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from xcviz.data.synthetic import generate
from xcviz.solvers.ldgs import solver, svd_cache
from xcviz.solvers.ldgs.solver import LdgsParams, fit_ldgs, svd_basis


@pytest.fixture(autouse=True)
def calls(monkeypatch) -> list[tuple]:
    """An empty memo for each test, and the shapes, k and seeds of the svds calls it makes."""
    monkeypatch.setattr(svd_cache, "_bases", OrderedDict())
    made = []

    def counted(X, k, random_state):
        made.append((X.shape, k))
        return svds(X, k=k, random_state=random_state)

    monkeypatch.setattr(solver, "svds", counted)
    return made


def _matrix(seed: int = 0) -> sp.csr_matrix:
    return sp.random(60, 40, density=0.2, format="csr", random_state=seed)


def _fresh(X: sp.csr_matrix, h: int, seed: int) -> np.ndarray:
    """The basis by hand: scipy svds on X as float64, largest component first, each signed so that
    its largest entry is positive."""
    _, s, vt = svds(X.astype(np.float64), k=h, random_state=np.random.default_rng(seed))
    vt = vt[np.argsort(-s, kind="stable")]
    return (vt * np.sign(vt[np.arange(h), np.abs(vt).argmax(axis=1)])[:, None]).T


def test_the_memoised_basis_equals_a_fresh_svds_computation_bit_for_bit(calls):
    X = _matrix()
    expected = _fresh(X, 8, 3)
    first, second = svd_basis(X, 8, 3), svd_basis(X, 8, 3)
    assert len(calls) == 1
    for basis in (first, second):
        assert basis.dtype == np.float64 and basis.flags.c_contiguous and basis.flags.writeable
        np.testing.assert_array_equal(basis, expected)


def test_a_matrix_of_the_same_content_does_not_call_svds_again(calls):
    X = _matrix()
    svd_basis(X, 8, 0)
    same = sp.csr_matrix((X.data.copy(), X.indices.copy(), X.indptr.copy()), shape=X.shape)
    svd_basis(same, 8, 0)
    assert calls == [(X.shape, 8)]


def _one_value(X):
    Y = X.copy()
    Y.data[7] += 1e-9
    return Y


def _one_column(X):
    Y = X.copy()
    row = np.searchsorted(Y.indptr, 7, side="right") - 1
    free = np.setdiff1d(np.arange(X.shape[1]), Y.indices[Y.indptr[row]:Y.indptr[row + 1]])[0]
    Y.indices[7] = free
    Y.has_sorted_indices = False
    Y.sort_indices()
    return Y


def _one_more_column(X):
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], X.shape[1] + 1))


def _one_more_row(X):
    return sp.vstack([X, sp.csr_matrix((1, X.shape[1]))], format="csr")


@pytest.mark.parametrize("change", [_one_value, _one_column, _one_more_column, _one_more_row],
                         ids=["one value", "one column index", "one more column", "one more empty row"])
def test_a_changed_matrix_computes_anew(change, calls):
    X = _matrix()
    svd_basis(X, 8, 0)
    Y = change(X)
    np.testing.assert_array_equal(svd_basis(Y, 8, 0), _fresh(Y, 8, 0))
    assert len(calls) == 2


@pytest.mark.parametrize("h,seed", [(7, 0), (8, 1)])
def test_another_h_or_seed_computes_anew(h, seed, calls):
    X = _matrix()
    svd_basis(X, 8, 0)
    np.testing.assert_array_equal(svd_basis(X, h, seed), _fresh(X, h, seed))
    assert len(calls) == 2


def test_the_memo_keeps_the_most_recently_used_bases_up_to_its_bound(calls):
    X = _matrix()
    for seed in range(svd_cache.MAX_ENTRIES):
        svd_basis(X, 8, seed)
    svd_basis(X, 8, 0)  # used again: now the most recent
    svd_basis(X, 8, svd_cache.MAX_ENTRIES)  # one more: the least recently used (seed 1) goes
    assert len(svd_cache._bases) == svd_cache.MAX_ENTRIES
    assert len(calls) == svd_cache.MAX_ENTRIES + 1
    svd_basis(X, 8, 0)
    assert len(calls) == svd_cache.MAX_ENTRIES + 1
    svd_basis(X, 8, 1)
    assert len(calls) == svd_cache.MAX_ENTRIES + 2


def test_the_memo_keeps_no_more_bytes_than_its_bound(calls, monkeypatch):
    X = _matrix()
    one = X.shape[1] * 8 * 8  # D x h doubles
    monkeypatch.setattr(svd_cache, "MAX_BYTES", 5 * one // 2)
    for seed in range(3):
        svd_basis(X, 8, seed)
    assert sum(b.nbytes for b in svd_cache._bases.values()) == 2 * one
    svd_basis(X, 24, 0)  # larger than the bound alone: computed, not kept
    svd_basis(X, 24, 0)
    assert len(calls) == 5 and len(svd_cache._bases) == 2


def test_a_caller_writing_into_its_basis_does_not_change_the_next_callers(calls):
    X = _matrix()
    expected = _fresh(X, 8, 0)
    computed = svd_basis(X, 8, 0)
    computed[:] = 0.0
    remembered = svd_basis(X, 8, 0)
    np.testing.assert_array_equal(remembered, expected)
    remembered[:] = 1.0
    np.testing.assert_array_equal(svd_basis(X, 8, 0), expected)
    assert len(calls) == 1


def test_a_second_training_on_the_same_data_reuses_the_basis(calls):
    data = generate(200, 50, 10, multiclass=True, seed=0)
    p = LdgsParams(epochs=1, dim=8, sample_size=20, records_per_epoch=1)
    one, two = (fit_ldgs(data.X, data.Y, p, threads=1) for _ in range(2))
    assert [shape for shape, _ in calls].count(data.X.shape) == 1
    np.testing.assert_array_equal(one.V, two.V)
    np.testing.assert_array_equal(one.W, two.W)
