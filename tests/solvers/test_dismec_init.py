"""Initialisers as the MSI paper reads them: OvA-Primal's starting vector solves the all-negative
problem (15) with the paper's regulariser R[w] = 0.5||w||^2 over every weight, the bias included
(checked against scipy's L-BFGS on (15)), and its feature part is not the bias start's zero; MSI's
t follows the loss."""
import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from xcviz.solvers._onevsall.blocks import training_rows
from xcviz.solvers.dismec import DismecParams, fit_dismec, ovap_start


def _rows_and_start(X, **params):
    rows = training_rows(X, True, 1.0)
    dim = rows.colsum.shape[0]
    w = ovap_start(rows, dim, dim - 1, DismecParams(init="ovap", **params))
    Xb = sp.csr_matrix((rows.data, rows.indices.astype(np.int64), rows.indptr.astype(np.int64)), shape=(X.shape[0], dim))
    return Xb, w


def _all_negative_objective(Xb, C=1.0):
    """(15) for the squared hinge, every row negative: 0.5||w||^2 + C sum_i max(0, 1 + w.x_i)^2."""
    def f(w):
        d = np.maximum(0.0, 1.0 + Xb @ w)
        return 0.5 * w @ w + C * d @ d, w + 2.0 * C * (Xb.T @ d)
    return f


def test_ovap_solves_the_papers_all_negative_problem(bibtex):
    train, _ = bibtex
    Xb, w = _rows_and_start(train.X)
    f = _all_negative_objective(Xb)
    ref = minimize(f, np.zeros(Xb.shape[1]), jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "maxiter": 5000})
    assert f(w)[0] <= ref.fun * (1 + 1e-4)
    np.testing.assert_allclose(w, ref.x, atol=2e-3 * np.abs(ref.x).max())


def test_ovap_feature_part_is_not_negligible(bibtex):
    """With the bias regularised, stationarity gives w = -2C sum_i d_i x_i: the features carry the
    weighted mean of the rows (on Bibtex about a quarter of the bias weight); with the bias free
    (the named option), the bias alone reaches -1 and the features are left at ~1e-4 of it."""
    train, _ = bibtex
    _, w = _rows_and_start(train.X)
    assert w[-1] < -0.5
    assert np.linalg.norm(w[:-1]) > 0.1 * abs(w[-1])
    _, w_free = _rows_and_start(train.X, ovap_regularize_bias=False)
    assert np.linalg.norm(w_free[:-1]) < 1e-2 * abs(w_free[-1])


def test_msi_t_follows_the_loss_unless_set(bibtex):
    """The MSI paper's t: -2 with the squared hinge, -3 with the logistic loss."""
    train, _ = bibtex
    X, Y = train.X[:1500], sp.csc_matrix(train.Y[:1500])[:, :10]

    def weights(**params):
        return fit_dismec(X, Y, DismecParams(init="msi", max_iter=1, prune_threshold=0.0, **params), threads=1).weights

    assert (weights(loss="logistic") != weights(loss="logistic", msi_t=-3.0)).nnz == 0
    assert (weights(loss="logistic") != weights(loss="logistic", msi_t=-2.0)).nnz > 0
    assert (weights() != weights(msi_t=-2.0)).nnz == 0
