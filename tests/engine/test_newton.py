"""Properties of the Newton kernel: MSI's defining equations, the stopping rule, determinism."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz.data.synthetic import generate
from xcviz.engine import newton as K
from xcviz.engine.newton import _msi_start
from xcviz.records.sinks import MemorySink
from xcviz.solvers.dismec import DismecParams, fit_dismec, preprocess


@settings(max_examples=60, deadline=None)
@given(n=st.integers(5, 40), d=st.integers(2, 12), npos=st.integers(1, 4), seed=st.integers(0, 10_000),
       s=st.floats(0.5, 3.0), t=st.floats(-4.0, -0.5))
def test_msi_separates_the_means(n, d, npos, seed, s, t):
    """<w0, p_mean> = s and <w0, n_mean> = t, the two equations (21) that define MSI."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) * (rng.random((n, d)) < 0.6)
    X[:, -1] = 1.0
    pos = rng.choice(n, size=npos, replace=False)
    mask = np.zeros(n, bool)
    mask[pos] = True
    psum = X[mask].sum(axis=0)
    p_mean, n_mean, x_mean = psum / npos, X[~mask].mean(axis=0), X.mean(axis=0)
    w = np.empty(d)
    _msi_start(w, psum, npos, n, x_mean, s, t)
    if abs(np.dot(p_mean, x_mean)) ** 2 > (1 - 1e-9) * np.dot(p_mean, p_mean) * np.dot(x_mean, x_mean):
        return  # p_mean parallel to x_mean: only <w0, p_mean> = s can hold (checked below)
    assert np.dot(w, p_mean) == pytest.approx(s, rel=1e-8, abs=1e-8)
    assert np.dot(w, n_mean) == pytest.approx(t, rel=1e-8, abs=1e-8)


def test_msi_degenerate_cases_keep_the_positive_margin():
    """No negatives, or all rows identical: the min-norm w with <w0, p_mean> = s; no positives:
    <w0, x_mean> = t."""
    X = np.tile(np.array([0.5, 0.5, 1.0]), (4, 1))
    w = np.empty(3)
    _msi_start(w, X[:2].sum(axis=0), 2, 4, X.mean(axis=0), 1.0, -2.0)
    assert np.dot(w, X[0]) == pytest.approx(1.0)
    _msi_start(w, X.sum(axis=0), 4, 4, X.mean(axis=0), 1.0, -2.0)
    assert np.dot(w, X[0]) == pytest.approx(1.0)
    _msi_start(w, np.zeros(3), 0, 4, X.mean(axis=0), 1.0, -2.0)
    assert np.dot(w, X[0]) == pytest.approx(-2.0)
    assert np.all(np.isfinite(w))


@pytest.fixture(scope="module")
def small():
    return generate(600, 300, 40, avg_labels=3, avg_nnz=20, seed=3)


@pytest.mark.parametrize("init", ["zero", "bias", "ovap", "msi"])
def test_stopping_rule_is_relative_to_the_gradient_at_zero(small, init):
    """Every converged label meets ||g(w)|| <= eps*max(1, min(#pos, #neg))/n*||g(0)||, and
    ||g(0)|| is the gradient at w = 0 (computed here independently: -2C X^T y)."""
    sink = MemorySink()
    p = DismecParams(init=init)
    fit_dismec(small.X, small.Y, p, threads=1, recorder=sink)
    labels = sink.labels.sort_values("label")
    Xb = preprocess(small.X, p)
    n = Xb.shape[0]
    y = -np.ones((n, small.n_labels))
    Yc = sp.coo_matrix(small.Y)
    y[Yc.row, Yc.col] = 1.0
    g0 = np.linalg.norm(-2.0 * (Xb.T @ y), axis=0)
    np.testing.assert_allclose(labels["grad_norm0"].to_numpy(), g0, rtol=1e-10)
    npos = labels["n_pos"].to_numpy()
    tol = 0.01 * np.maximum(1, np.minimum(npos, n - npos)) / n * g0
    assert labels["converged"].all()
    assert np.all(labels["grad_norm"].to_numpy() <= tol)


def test_objective_decreases_and_records_are_complete(small):
    sink = MemorySink()
    fit_dismec(small.X, small.Y, DismecParams(init="msi"), threads=2, recorder=sink)
    it, lab = sink.iterations, sink.labels
    assert len(it) == int((lab["iterations"] + 1).sum())
    for label, traj in it.groupby("label"):
        obj = traj.sort_values("iteration")["objective"].to_numpy()
        assert np.all(np.diff(obj) < 0), label
        row = lab[lab["label"] == label].iloc[0]
        assert obj[0] == row["objective_init"] and obj[-1] == row["objective"]
    steps = it[it["iteration"] > 0]
    assert ((steps["step_size"] > 0) & (steps["step_size"] <= 1)).all()
    assert (steps["cg_steps"] >= 1).all()
    assert (it["active_set"] <= small.n).all()


@pytest.mark.parametrize("init", ["zero", "msi", "ovap"])
def test_results_do_not_depend_on_thread_count(small, init):
    p = DismecParams(init=init)
    one = fit_dismec(small.X, small.Y, p, threads=1)
    two = fit_dismec(small.X, small.Y, p, threads=2)
    assert (one.weights != two.weights).nnz == 0
    np.testing.assert_array_equal(one.bias_weights, two.bias_weights)


def test_rows_ordered_by_length_are_the_same_problem(small):
    """prepare_problem(order_rows=True) permutes X's rows (shortest first) and renumbers Y's
    positives to match; the Newton engine's models on both orders differ by rounding only."""
    from xcviz.solvers._onevsall.blocks import prepare_problem

    plain = prepare_problem(small.X, small.Y, True, 1.0)
    ordered = prepare_problem(small.X, small.Y, True, 1.0, order_rows=True)
    lengths = np.diff(ordered.rows.indptr.astype(np.int64))
    assert (np.diff(lengths) >= 0).all() and not (np.diff(np.diff(plain.rows.indptr.astype(np.int64))) >= 0).all()

    def dense(prob):
        X = sp.csr_matrix((prob.rows.data, prob.rows.indices.astype(np.int64), prob.rows.indptr.astype(np.int64)),
                          shape=(prob.n, prob.dim)).toarray()
        Y = sp.csc_matrix((np.ones(prob.pos_rows.size), prob.pos_rows, prob.pos_ptr), shape=(prob.n, prob.n_labels))
        return X, Y.toarray()

    (Xp, Yp), (Xo, Yo) = dense(plain), dense(ordered)
    key = lambda X, Y: sorted(map(tuple, np.hstack([X, Y])))  # noqa: E731 - the rows as a multiset
    assert key(Xp, Yp) == key(Xo, Yo)
    np.testing.assert_allclose(ordered.rows.colsum, plain.rows.colsum, rtol=1e-12)
    model = fit_dismec(small.X, small.Y, DismecParams(prune_threshold=0.0), threads=1)
    W = model.weights.toarray()
    from xcviz.solvers import dismec
    original = dismec.prepare_problem
    try:
        dismec.prepare_problem = lambda X, Y, normalize, bias, order_rows=False: original(X, Y, normalize, bias)
        unordered = fit_dismec(small.X, small.Y, DismecParams(prune_threshold=0.0), threads=1)
    finally:
        dismec.prepare_problem = original
    np.testing.assert_allclose(W, unordered.weights.toarray(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("loss, init, max_iter", [(K.SQUARED_HINGE, K.INIT_MSI, 1000),
                                                  (K.SQUARED_HINGE, K.INIT_ZERO, 2), (K.LOGISTIC, K.INIT_ZERO, 1000)])
def test_labels_trained_together_are_bitwise_those_trained_alone(small, loss, init, max_iter):
    """train_block trains SLOTS labels per worker together, sharing each pass over X: every label's
    weights, stopping status, iterations and recorded trajectory are bitwise what `newton` gives for
    that label alone (its sums run in the same order), whatever labels share its passes."""
    from xcviz.solvers._onevsall.blocks import prepare_problem

    prob = prepare_problem(small.X, small.Y, True, 1.0, order_rows=True)
    rows, n, dim = prob.rows, prob.n, prob.dim
    labels = np.argsort(-prob.n_pos, kind="stable").astype(np.int64)  # heaviest first, as the driver
    settings = K.Settings(loss, 1.0, 0.01, 0.5, max_iter, False, prob.bias_index, -1.0, 1.0, -2.0)
    positives = K.Positives(prob.pos_ptr, prob.pos_rows)
    init_vec = rows.colsum / n
    fields = len(K.ITER_FIELDS)
    W = np.zeros((labels.size, dim))
    rec = np.zeros((labels.size, max_iter + 1, fields))
    summ = np.zeros((labels.size, len(K.LABEL_FIELDS)))
    K.train_block(rows, dim, positives, labels, init, init_vec, settings, 0, True, 2, W, rec, summ,
                  K.workspace(n, dim, rows.indptr[-1], 2, np.uint32))
    cap = K.compact_capacity(rows.indptr[-1])
    same = [2, 3, 4, 5, 6, 7]  # the fields that are not clocks
    for b in range(labels.size):
        w, y, psum = np.empty(dim), np.empty(n), np.empty(dim)
        gnorm0, tol, npos = K._label_setup(b, rows, positives, labels, init, init_vec, settings, w, y, psum)
        work, workn = np.empty((7, dim)), np.empty((3, n))
        r, s = np.zeros((max_iter + 1, fields)), np.zeros(len(K.LABEL_FIELDS))
        it = K.newton(rows.indptr, rows.indices, rows.data, y, w, tol, gnorm0, loss, 1.0, 0.5, max_iter, False,
                      prob.bias_index, *work, *workn, np.empty(n, np.int64), np.empty(n + 1, np.uint64),
                      np.empty(cap, np.uint32), np.empty(cap), 0, True, r, s)
        np.testing.assert_array_equal(W[b], w)
        assert summ[b, 2] == npos and summ[b, 0] == it
        np.testing.assert_array_equal(summ[b, [0, 3, 4, 5, 6, 7, 8]], s[[0, 3, 4, 5, 6, 7, 8]])
        np.testing.assert_array_equal(rec[b, :it + 1][:, same], r[:it + 1][:, same])
    status = summ[:, K.LABEL_FIELDS.index("status")]
    assert (status == K.STATUS_MAX_ITER).any() if max_iter == 2 else (status == K.STATUS_CONVERGED).all()
