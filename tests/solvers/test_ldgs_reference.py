"""The numba engine's LDGS estimators against the plain-numpy transcription of the paper
(xcviz.solvers.ldgs.reference): on searches that miss classes, every sample's candidates, gradient,
loss and active set; and the transcription's own loss against a QP solver and finite differences,
so that it is a check of its own and not a copy of the engine."""
import numpy as np
import pytest

from xcviz.engine.ldgs import CE, MARGIN
from xcviz.oracles.block_index import BlockSphericalIndex
from xcviz.solvers.ldgs.reference import bisimplex_projection, decomposed_gradient, exact_gradient, loss
from xcviz.solvers.ldgs.search import Estimator, block_bounds

from tests.engine.test_ldgs_kernels import _brute_projection, random_levels
from tests.engine.test_ldgs_search_kernels import _problem
from tests.solvers.test_ldgs import _clock, _dense

NAMES = {CE: "ce", MARGIN: "smoothed_margin"}
LOSSES = [(CE, 1.0), (MARGIN, 1.0), (MARGIN, 5.0)]


def _block_scores(W, phi, bounds, i):
    """K x B: the exact block scores of sample i."""
    return np.stack([W[:, lo:hi] @ phi[i, lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])], axis=1)


def _compare(est, W, phi, ptr, idx, index, q, kind, mu, **options):
    """Every sample's engine estimate (est) against decomposed_gradient on the same searches."""
    S = index.search(phi, q)[0]
    active = []
    for i in range(phi.shape[0]):
        retrieved = [S[i, j][S[i, j] >= 0] for j in range(S.shape[1])]
        U, grad, value, n_active = decomposed_gradient(_block_scores(W, phi, index.bounds, i), retrieved,
                                                       idx[ptr[i]:ptr[i + 1]], kind, mu=mu, **options)
        c = est.count[i]
        order = np.argsort(est.U[i, :c])
        np.testing.assert_array_equal(est.U[i, :c][order], U)
        np.testing.assert_allclose(est.coef[i, :c][order], grad, rtol=1e-9, atol=1e-12)
        assert est.value[i] == pytest.approx(value, rel=1e-9, abs=1e-12)
        assert est.n_active[i] == n_active
        active.append(n_active)
    return active


@pytest.mark.parametrize("loss_id,mu", LOSSES)
@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("restrict", [True, False])
@pytest.mark.parametrize("n_pos", [1, 3])
def test_decomp_is_the_papers_algorithm_2(loss_id, mu, steps, restrict, n_pos):
    """Four blocks probing 3 of 12 clusters for Q = 30 of 400 classes: each block misses most
    classes, so the union, the completion of A in the blocks that missed it and the messages are
    all exercised."""
    W, phi, ptr, idx = _problem(K=400, h=16, n=8, seed=11, n_pos=n_pos)
    index = BlockSphericalIndex(W, block_bounds(16, 4), clusters=12, probes=3, seed=5)
    est = Estimator("decomp", W, loss=loss_id, mu=mu, q=30, steps=steps, tau2=1e-3, sample=1, index=index,
                    restrict=restrict)(phi, ptr, idx, _clock())
    U_sizes = est.count
    active = _compare(est, W, phi, ptr, idx, index, 30, NAMES[loss_id], mu, steps=steps, restrict=restrict)
    assert (U_sizes < 400).all() and 0 < max(active)  # partial retrieval, and messages that moved


@pytest.mark.parametrize("loss_id,mu", LOSSES)
def test_mips_is_the_papers_algorithm_1(loss_id, mu):
    W, phi, ptr, idx = _problem(K=400, h=16, n=8, seed=12, n_pos=2)
    index = BlockSphericalIndex(W, block_bounds(16, 1), clusters=12, probes=3, seed=5)
    est = Estimator("mips", W, loss=loss_id, mu=mu, q=40, steps=1, tau2=1e-3, sample=1, index=index)(
        phi, ptr, idx, _clock())
    _compare(est, W, phi, ptr, idx, index, 40, NAMES[loss_id], mu)


@pytest.mark.parametrize("loss_id,mu", LOSSES)
def test_exact_is_the_loss_of_all_k_scores(loss_id, mu):
    W, phi, ptr, idx = _problem(K=400, h=16, n=8, seed=13, n_pos=2)
    est = Estimator("exact", W, loss=loss_id, mu=mu, q=400, steps=1, tau2=1e-3, sample=1)(phi, ptr, idx, _clock())
    dense = _dense(est, W.shape[0])
    for i in range(phi.shape[0]):
        value, grad = exact_gradient(W @ phi[i], idx[ptr[i]:ptr[i + 1]], NAMES[loss_id], mu)
        np.testing.assert_allclose(dense[i], grad, rtol=1e-9, atol=1e-12)
        assert est.value[i] == pytest.approx(value, rel=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_the_reference_projection_matches_a_qp_solver(seed):
    v, positive = random_levels(seed)  # a shared total below 1, and one capped at 1
    alpha = bisimplex_projection(v, positive)
    brute = _brute_projection(v, positive)  # an interior-point answer: close, never better than the exact one
    np.testing.assert_allclose(alpha, brute, atol=1e-4)
    assert ((alpha - v) ** 2).sum() <= ((brute - v) ** 2).sum() + 1e-10
    assert alpha[~positive].sum() == pytest.approx(-alpha[positive].sum(), abs=1e-12)
    assert alpha[~positive].sum() <= 1 + 1e-12


@pytest.mark.parametrize("kind,mu", [("ce", 1.0), ("smoothed_margin", 1.0), ("smoothed_margin", 5.0)])
def test_the_reference_losses_gradients_match_finite_differences(kind, mu):
    rng = np.random.default_rng(3)
    for _ in range(10):
        z = rng.normal(0, 2, 9)
        positive = np.arange(9) < 2
        _, grad = loss(z, positive, kind, mu)
        step = 1e-6
        numeric = [(loss(z + step * e, positive, kind, mu)[0] - loss(z - step * e, positive, kind, mu)[0]) / (2 * step)
                   for e in np.eye(9)]
        np.testing.assert_allclose(grad, numeric, atol=1e-6)


def test_an_unknown_loss_is_refused():
    with pytest.raises(ValueError, match="loss must be one of"):
        loss(np.zeros(3), np.array([True, False, False]), "hinge", 1.0)
