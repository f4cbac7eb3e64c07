"""The Newton engine's inner kernels against plain numpy: the four-sum row dot product, the
gradient pass that also builds the CG preconditioner and the contiguous copy of the active rows,
the Hessian product over that copy, and the line search whose full-step loss is summed in the X s
pass (benchmarks/profile_newton.py says why they are shaped this way)."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz.engine import newton as K


def _rows(n, d, density, seed):
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    X.data -= 0.5
    return X, X.indptr.astype(np.uint64), X.indices.astype(np.uint32), X.data


@settings(max_examples=40, deadline=None)
@given(length=st.integers(0, 13), seed=st.integers(0, 10_000))
def test_row_dot_matches_numpy_for_every_tail_length(length, seed):
    """Rows of 0..13 entries cover the four-way loop and every remainder."""
    rng = np.random.default_rng(seed)
    idx = rng.choice(20, size=length, replace=False).astype(np.uint32)
    val = rng.normal(size=length)
    v = rng.normal(size=20)
    got = K._row_dot(idx, val, v, np.uint64(0), np.uint64(length))
    assert got == pytest.approx(float(np.dot(val, v[idx])), rel=1e-12, abs=1e-12)


def test_pass_for_several_labels_is_bitwise_one_pass_per_label():
    """`_xv_slots` computes X v for SLOTS vectors in one pass over X; rows of 0..13 entries cover the
    four-way loop and every remainder, and each column equals `_xv`'s X v exactly (same sums, same
    order), which is what keeps a label's result independent of the labels beside it."""
    rng = np.random.default_rng(7)
    lengths = np.tile(np.arange(14), 3)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint64)
    indices = np.concatenate([rng.choice(30, size=m, replace=False) for m in lengths]).astype(np.uint32)
    data = rng.normal(size=indices.size)
    V = rng.normal(size=(30, K.SLOTS))
    out = np.empty((K.SLOTS, lengths.size))
    K._xv_slots(indptr, indices, data, V, out)
    X = sp.csr_matrix((data, indices.astype(np.int64), indptr.astype(np.int64)), shape=(lengths.size, 30))
    for q in range(K.SLOTS):
        one = np.empty(lengths.size)
        K._xv(indptr, indices, data, np.ascontiguousarray(V[:, q]), one)
        np.testing.assert_array_equal(out[q], one)
        np.testing.assert_allclose(out[q], X @ V[:, q], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", [K.SQUARED_HINGE, K.LOGISTIC])
@pytest.mark.parametrize("reg_bias", [False, True])
def test_gradient_pass_builds_gradient_active_set_and_preconditioner(loss, reg_bias):
    X, indptr, indices, data = _rows(60, 9, 0.4, 1)
    rng = np.random.default_rng(2)
    y = np.where(rng.random(60) < 0.3, 1.0, -1.0)
    w = rng.normal(size=9)
    w[[1, 4]] = 0.0  # zeros among the weights: the nonzeros `_gradient` counts are 7
    wx = X @ w
    C, bias = 0.7, 8
    g, M, hcoef = np.empty(9), np.empty(9), np.empty(60)
    act = np.empty(60, np.int64)
    cptr, cidx, cval = np.empty(61, np.uint64), np.empty(X.nnz, np.uint32), np.empty(X.nnz)
    nact, ncomp, nnz = K._gradient(loss, C, indptr, indices, data, y, wx, w, reg_bias, bias, g, act, hcoef, M,
                                   cptr, cidx, cval)
    assert ncomp == nact  # room for every active row
    assert nnz == np.count_nonzero(w)  # the recorded nnz, counted in the pass that starts g from w
    m = y * wx
    if loss == K.SQUARED_HINGE:
        active = np.flatnonzero(m < 1)
        coef, h = 2 * C * y * (m - 1), np.full(60, 2 * C)
    else:
        active = np.arange(60)
        sig = 1 / (1 + np.exp(-m))
        coef, h = C * (sig - 1) * y, C * sig * (1 - sig)
    reg = w.copy()
    if not reg_bias:
        reg[bias] = 0.0
    Xa = X[active].toarray()
    np.testing.assert_array_equal(act[:nact], active)
    np.testing.assert_allclose(hcoef[:nact], h[active], rtol=1e-12)
    np.testing.assert_allclose(g, reg + Xa.T @ coef[active], rtol=1e-10, atol=1e-12)
    diag = (0.0 if not reg_bias else 1.0) * (np.arange(9) == bias) + (np.arange(9) != bias) + (Xa ** 2).T @ h[active]
    np.testing.assert_allclose(M, 0.99 + 0.01 * diag, rtol=1e-12)
    copy = sp.csr_matrix((cval[:cptr[nact]], cidx[:cptr[nact]], cptr[:nact + 1].astype(np.int64)), shape=(nact, 9))
    np.testing.assert_array_equal(copy.toarray(), Xa)


@pytest.mark.parametrize("room", [0, 37, 10_000])
@pytest.mark.parametrize("reg_bias", [False, True])
def test_hessian_product_over_the_copied_and_the_remaining_active_rows(room, reg_bias):
    """H d = d (bias coordinate left out unless regularised) + X_A^T diag(h) X_A d, whether the
    gradient pass had room to copy none, some (a prefix) or all of the active rows."""
    X, indptr, indices, data = _rows(80, 11, 0.3, 5)
    rng = np.random.default_rng(6)
    y = np.where(rng.random(80) < 0.3, 1.0, -1.0)
    w = rng.normal(size=11) * 0.5
    wx = X @ w
    g, M, hcoef, act = np.empty(11), np.empty(11), np.empty(80), np.empty(80, np.int64)
    cptr, cidx, cval = np.empty(81, np.uint64), np.empty(room, np.uint32), np.empty(room)
    nact, ncomp, _ = K._gradient(K.SQUARED_HINGE, 1.3, indptr, indices, data, y, wx, w, reg_bias, 10, g, act, hcoef, M,
                              cptr, cidx, cval)
    assert 0 < nact and (ncomp == 0 if room == 0 else 0 < ncomp) and (ncomp == nact) == (room == 10_000)
    d = rng.normal(size=11)
    hd = np.empty(11)
    K._hess_vec_rows(indptr, indices, data, act, nact, hcoef, cptr, cidx, cval, ncomp, d, reg_bias, 10, hd)
    Xa = X[act[:nact]].toarray()
    expected = d + Xa.T @ (hcoef[:nact] * (Xa @ d))
    if not reg_bias:
        expected[10] -= d[10]
    np.testing.assert_allclose(hd, expected, rtol=1e-12, atol=1e-12)
    plain = np.empty(11)
    K._hess_vec(indptr, indices, data, act, nact, hcoef, d, reg_bias, 10, plain)
    np.testing.assert_array_equal(plain, hd)  # the same sums in the same order


def test_line_search_takes_the_full_step_or_halves_it_as_liblinear():
    """The accepted step is the first of 1, 1/2, 1/4, ... meeting f(w + a s) - f(w) <= 0.01 a g.s,
    and w, X w and w.w are updated to it."""
    X, indptr, indices, data = _rows(50, 7, 0.5, 3)
    rng = np.random.default_rng(4)
    y = np.where(rng.random(50) < 0.4, 1.0, -1.0)

    def f(w):
        return np.sum(np.maximum(0, 1 - y * (X @ w)) ** 2) + 0.5 * w @ w

    steps = []
    for scale in (0.05, 40.0):  # a good step, and one far too long that must be halved
        w = rng.normal(size=7) * 0.1
        g = w + X.T @ (2 * y * np.minimum(0, y * (X @ w) - 1))
        s = -g * scale
        expected = next(a for a in 0.5 ** np.arange(20) if f(w + a * s) - f(w) <= 0.01 * a * g @ s)
        w_k, wx = w.copy(), X @ w
        step, f_new, wtw = K._line_search(K.SQUARED_HINGE, 1.0, indptr, indices, data, y, w_k, s, g, wx,
                                          np.empty(50), f(w), w @ w, True, -1)
        assert step == expected
        steps.append(step)
        np.testing.assert_allclose(w_k, w + step * s, rtol=1e-12)
        np.testing.assert_allclose(wx, X @ w_k, rtol=1e-10, atol=1e-12)
        assert f_new == pytest.approx(f(w_k), rel=1e-10) and wtw == pytest.approx(w_k @ w_k, rel=1e-10)
    assert steps[0] == 1.0 and steps[1] < 1.0
