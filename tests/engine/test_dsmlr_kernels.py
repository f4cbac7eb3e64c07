"""DS-MLR kernels against dense numpy references: the surrogate bound and its tightness, the
L-BFGS gradient against finite differences, the lazily scaled SGD step against the dense step (13)."""
import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz.data.synthetic import generate
from xcviz.engine import dsmlr as K_
from xcviz.solvers.dsmlr.solver import objective_parts, prepare, splits, variational_gap


def _problem(seed=1, n=120, d=20, k=6):
    ds = generate(n, d, k, avg_labels=1.6, avg_nnz=6, seed=seed)
    return prepare(ds.X, ds.Y, True, 1.0)


def _dense(prob):
    X = sp.csr_matrix((prob.data, prob.indices, prob.indptr), shape=(prob.n_rows, prob.dim)).toarray()
    Y = np.zeros((prob.n_rows, prob.n_classes))
    for i in range(prob.n_rows):
        Y[i, prob.lab_idx[prob.lab_ptr[i]:prob.lab_ptr[i + 1]]] = 1.0
    return X, Y, np.diff(prob.lab_ptr).astype(float)


def _l1(prob, W, lam):
    """(2) on the replicated data set: a row with n_i classes counts n_i times."""
    X, Y, n = _dense(prob)
    Z = X @ W.T
    lse = np.log(np.exp(Z).sum(1))
    return 0.5 * lam * (W ** 2).sum() + ((n * lse).sum() - (Y * Z).sum()) / n.sum()


def _l2(prob, W, b, lam):
    """(10) summed term by term: sum_i sum_k f_ki(w_k, b_i) over the replicated copies."""
    X, Y, n = _dense(prob)
    N, K = n.sum(), prob.n_classes
    Z = X @ W.T
    f = (lam / (2 * N)) * (W ** 2).sum(1)[None, :] * n[:, None] - Y * Z / N \
        + n[:, None] * (np.exp(Z + b[:, None]) / N - b[:, None] / (N * K) - 1 / (N * K))
    return f.sum()


PROB = _problem()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.floats(0.05, 3.0), st.floats(0.0, 2.0))
def test_surrogate_is_an_upper_bound_tight_at_the_closed_form_b(seed, w_scale, b_noise):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(PROB.n_classes, PROB.dim)) * w_scale
    lam = 0.01
    b_star = np.empty(PROB.n_rows)
    true = np.zeros(PROB.n_rows)
    K_.exact_b(PROB.indptr, PROB.indices, PROB.data, PROB.lab_ptr, PROB.lab_idx, splits(PROB.n_classes, 3), W,
               np.ones(PROB.n_classes), 4, b_star, true)
    l1 = _l1(PROB, W, lam)
    assert np.isclose(objective_parts(PROB, W, np.ones(PROB.n_classes), lam, b_star, true), l1, rtol=1e-12)
    assert np.isclose(_l2(PROB, W, b_star, lam), l1, rtol=1e-10)  # equality at b*
    b = b_star + rng.normal(size=PROB.n_rows) * b_noise
    l2 = _l2(PROB, W, b, lam)
    gap, _ = variational_gap(PROB, b, b_star)
    assert l2 >= l1 - 1e-12
    assert np.isclose(l2 - l1, gap, rtol=1e-7, atol=1e-12)  # the variational gap is exactly L2 - L1


def test_gradient_matches_finite_differences_and_the_dense_objective():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(PROB.n_classes, PROB.dim)) * 0.7
    G = np.empty_like(W)
    value = K_.loss_gradient(PROB.indptr, PROB.indices, PROB.data, PROB.lab_ptr, PROB.lab_idx, W, 0.03,
                             splits(PROB.n_classes, 4), 5, G)
    assert np.isclose(value, _l1(PROB, W, 0.03), rtol=1e-12)
    eps = 1e-6
    for k, j in [(0, 0), (2, 5), (5, PROB.dim - 1), (3, 11)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[k, j] += eps
        Wm[k, j] -= eps
        fd = (_l1(PROB, Wp, 0.03) - _l1(PROB, Wm, 0.03)) / (2 * eps)
        assert np.isclose(G[k, j], fd, rtol=1e-5, atol=1e-9)


def test_lazy_scaled_steps_equal_the_dense_update_13():
    """sgd_block on V * scale against w_k <- (1 - s lam n_i) w_k - s (n_i e^{min(w.x + b, clip)} - y_ik) x_i."""
    rng = np.random.default_rng(4)
    X, Y, n = _dense(PROB)
    W = rng.normal(size=(PROB.n_classes, PROB.dim)) * 0.3
    b = rng.normal(size=PROB.n_rows) - 1.0
    rows = rng.permutation(PROB.n_rows)[:50]
    step, lam, clip = 0.3, 0.8, 0.8  # a low clip, so that some exponents are clipped
    assert step * lam * n.max() < 1
    ref = W.copy()
    clips = 0
    shrink = np.prod(1 - step * lam * n[rows])
    assert shrink < 1e-6  # the scale goes below FOLD_BELOW: a fold happens on the way
    for i in rows:
        for k in range(1, 5):
            z = X[i] @ ref[k] + b[i]
            clips += z > clip
            g = n[i] * np.exp(min(z, clip)) - Y[i, k]
            ref[k] = (1 - step * lam * n[i]) * ref[k] - step * g * X[i]
    V, scale = W.copy(), np.ones(PROB.n_classes)
    got = K_.sgd_block(PROB.indptr, PROB.indices, PROB.data, PROB.lab_ptr, PROB.lab_idx, b, rows, 1, 5, 0, V, scale,
                       step, lam, clip)
    assert got == clips > 0
    assert scale[1:5].max() < 1.0 and scale[0] == 1.0  # the decay went to the scale
    assert np.allclose(V * scale[:, None], ref, rtol=1e-9, atol=1e-12)
    # the same block through a class-block-local V (base = c0), as a Dask worker runs it
    Vb, sb = W[1:5].copy(), np.ones(4)
    K_.sgd_block(PROB.indptr, PROB.indices, PROB.data, PROB.lab_ptr, PROB.lab_idx, b, rows, 1, 5, 1, Vb, sb, step,
                 lam, clip)
    assert np.array_equal(Vb, V[1:5]) and np.array_equal(sb, scale[1:5])


def test_lc_class_solves_its_problem():
    """One LC class problem at fixed b: Newton's answer has a vanishing gradient; each Newton step
    took at least one CG step."""
    rng = np.random.default_rng(5)
    X, Y, n = _dense(PROB)
    b = rng.normal(size=PROB.n_rows) - 2.0
    t = Y[:, 2].copy()
    w = np.zeros(PROB.dim)
    C = 3.0
    ws, wsn, act = np.empty((7, PROB.dim)), np.empty((3, PROB.n_rows)), np.empty(PROB.n_rows, np.int64)
    steps, cg = K_.lc_class(PROB.indptr, PROB.indices, PROB.data, b, t, n, w, C, 1e-10, 50, ws, wsn, act)
    grad = w + C * X.T @ (n * np.exp(X @ w + b) - t)
    assert steps > 1 and cg >= steps and np.linalg.norm(grad) < 1e-7
