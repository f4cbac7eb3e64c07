"""The search side of LDGS's kernels: block searches against brute force (top Q with the exact block
scores, the cut, ties), the search after W changes, the margin loss's pre-filter, the exact
scores, and the restricted message passing (Algorithm 2 over the active set) against the
unrestricted one where they must agree."""
import numpy as np
import pytest

from xcviz.engine.ldgs import CE, MARGIN, all_scores, bisimplex_thresholds, block_live, loss_grad, search_estimate
from xcviz.oracles.block_index import BlockSphericalIndex
from xcviz.solvers.ldgs.search import Estimator, block_bounds

from tests.solvers.test_ldgs import _clock, _dense


def _problem(K=300, h=16, n=8, seed=0, n_pos=2):
    rng = np.random.default_rng(seed)
    W = rng.normal(0, 1, (K, h))
    phi = rng.normal(0, 1, (n, h))
    ptr = np.arange(n + 1, dtype=np.int64) * n_pos
    idx = np.concatenate([np.sort(rng.choice(K, n_pos, replace=False)) for _ in range(n)]).astype(np.int64)
    return W, phi, ptr, idx


@pytest.mark.parametrize("blocks,probes,q", [(1, 3, 20), (4, 2, 10), (4, 20, 500)])
def test_block_search_keeps_the_q_best_probed_members_with_their_exact_block_scores(blocks, probes, q):
    W, phi, _, _ = _problem(seed=1)
    W[::7] = W[3]  # repeated rows: ties in every block
    W[1::11, :4] = 0.0  # zero in the first block (of 4): never retrieved there, 0 in the cut
    W[2::13] = 0.0  # zero everywhere
    bounds = block_bounds(16, blocks)
    index = BlockSphericalIndex(W, bounds, clusters=20, probes=probes, seed=3)
    S, V, cut, probed = index.search(phi, q)
    _, ptr, ids, live, _ = index.stacked()
    for j in range(blocks):  # the member lists: the live rows of every cluster, none else
        assign = index.blocks[j].assign
        for c in range(ptr.shape[1] - 1):
            listed = ids[j, ptr[j, c]:ptr[j, c + 1]]
            np.testing.assert_array_equal(listed, np.flatnonzero((assign == c) & W[:, bounds[j]:bounds[j + 1]].any(1)))
    for i in range(phi.shape[0]):
        for j in range(blocks):
            lo, hi = bounds[j], bounds[j + 1]
            probed_rows = np.flatnonzero(np.isin(index.blocks[j].assign, probed[i, j]))  # every member, zeros too
            zero = ~W[probed_rows, lo:hi].any(axis=1)
            np.testing.assert_array_equal(live[j, probed_rows], ~zero)
            pool = probed_rows[~zero]
            scores = W[pool, lo:hi] @ phi[i, lo:hi]
            kept = S[i, j][S[i, j] >= 0]
            assert kept.size == min(q, pool.size) and np.unique(kept).size == kept.size
            assert np.isin(kept, pool).all()
            np.testing.assert_allclose(V[i, j, :kept.size], W[kept, lo:hi] @ phi[i, lo:hi], rtol=1e-12, atol=1e-12)
            left = np.setdiff1d(pool, kept)
            best_left = (W[left, lo:hi] @ phi[i, lo:hi]).max() if left.size else -np.inf
            if left.size:  # nothing left out beats anything kept
                assert best_left <= V[i, j, :kept.size].min() + 1e-12
            want = max(best_left, 0.0) if zero.any() else best_left
            assert cut[i, j] == pytest.approx(want, abs=1e-12)
            np.testing.assert_allclose(np.sort(scores)[::-1][:kept.size], np.sort(V[i, j, :kept.size])[::-1],
                                       atol=1e-12)


def test_a_search_scores_changed_rows_and_refresh_follows_their_zeros():
    W, phi, _, _ = _problem(seed=2)
    W[9, 4:8] = 0.0  # class 9 is dead in block 1 only: never retrieved there
    index = BlockSphericalIndex(W, block_bounds(16, 4), clusters=10, probes=10, seed=0)
    S, _, _, _ = index.search(phi, 300)
    assert (9 in S[0, 1]) is False and ((S[0] >= 0).sum(axis=1) == [300, 299, 300, 300]).all()
    changed = np.array([5, 17, 240])
    W[changed] += 3.0
    index.refresh(changed)
    S, V, _, _ = index.search(phi, 300)  # every member kept: all K scores of every block
    for j, (lo, hi) in enumerate(zip(index.bounds[:-1], index.bounds[1:])):
        kept = S[0, j] >= 0
        np.testing.assert_allclose(V[0, j, kept], W[S[0, j, kept], lo:hi] @ phi[0, lo:hi], atol=1e-12)
    W[9, 4:8] = 0.5  # alive again: the member lists must take it back
    index.refresh(np.array([9]))
    S, V, _, _ = index.search(phi, 300)
    assert ((S[0] >= 0).sum(axis=1) == 300).all() and (S[0] == 9).any(axis=1).all()
    np.testing.assert_allclose(V[0, 1][S[0, 1] == 9], W[9, 4:8] @ phi[0, 4:8], atol=1e-12)
    W[9, 4:8] = 0.0  # live in every block, then zero again: it stays listed and scores its exact 0
    index.refresh(np.array([9]))
    S, V, _, _ = index.search(phi, 300)
    assert ((S[0] >= 0).sum(axis=1) == 300).all() and V[0, 1][S[0, 1] == 9].tolist() == [0.0]


def test_block_live_counts_the_block_rows_that_came_alive():
    W = np.zeros((4, 6))
    bounds = block_bounds(6, 3)
    live, whole = np.zeros((3, 4), np.bool_), np.zeros(4, np.bool_)
    W[1, 0] = W[1, 5] = W[3, 2] = 1.0
    assert block_live(W, bounds, np.arange(4, dtype=np.int64), live, whole) == 3
    assert live.tolist() == [[False, True, False, False], [False, False, False, True], [False, True, False, False]]
    W[1, 0], W[2, 3] = 0.0, 2.0  # one block row dies, one wakes; the rows not passed keep their flags
    assert block_live(W, bounds, np.array([1, 2], np.int64), live, whole) == 1
    assert live.tolist() == [[False, False, False, False], [False, False, True, True], [False, True, False, False]]
    assert not whole.any()
    W[0] = 1.0  # live in every block: flagged whole, and not read again
    assert block_live(W, bounds, np.array([0], np.int64), live, whole) == 3
    assert whole.tolist() == [True, False, False, False] and live[:, 0].all()
    W[0] = 0.0
    assert block_live(W, bounds, np.array([0], np.int64), live, whole) == 0 and live[:, 0].all()


@pytest.mark.parametrize("mu", [1.0, 5.0])
def test_the_margin_prefilter_leaves_the_gradient_unchanged(mu):
    """Michelot's floor drops negatives the projection would zero anyway: loss_grad equals the
    projection computed on every negative and positive, ties included, with one positive (the
    sort-free path started at Michelot's threshold) and several, in every regime of the total; its
    loss, summed over the gathered candidates alone, equals the sum over every class."""
    rng = np.random.default_rng(7)
    regimes = set()
    for trial in range(16):
        m = 3000
        scale = [0.05, 0.5, 2.0, 8.0][trial % 4]
        z = np.where(rng.random(m) < 0.6, 0.0, rng.normal(0, scale, m))  # many exact ties
        pos = np.zeros(m, np.bool_)
        n_pos = 1 if trial < 8 else trial - 6
        pos[rng.choice(m, n_pos, replace=False)] = True
        if trial in (3, 7):  # the positive above every negative: alpha = 0
            z[pos] = z.max() + 2.0
        if trial in (1, 5):  # the positive within the margin of the best negatives: a shared total
            z[pos] = z.max() + 0.5
        g = np.empty(m)
        value = loss_grad(z, pos, MARGIN, mu, g, np.empty(1))
        v = np.where(pos, z, z + 1.0) / mu
        tn, tp = bisimplex_thresholds(v[~pos], v[pos])
        want = np.where(pos, np.minimum(v - tp, 0.0), np.maximum(v - tn, 0.0)) if np.isfinite(tn) else np.zeros(m)
        np.testing.assert_allclose(g, want, atol=1e-12)
        assert value == pytest.approx(mu * (v * want - 0.5 * want ** 2).sum(), rel=1e-12, abs=1e-12)
        if n_pos == 1:
            regimes.add("zero" if not np.isfinite(tn) else "shared" if tn == tp else "capped")
    assert regimes == {"zero", "shared", "capped"}


def test_exact_scores_match_blas():
    rng = np.random.default_rng(0)
    W, phi = rng.normal(size=(1000, 37)), rng.normal(size=(6, 37))
    out = np.empty((6, 1000))
    all_scores(W, phi, out)
    np.testing.assert_allclose(out, phi @ W.T, rtol=1e-12, atol=1e-12)


def _search(W, phi, ptr, idx, loss, blocks, q, probes, restrict, steps=1):
    index = BlockSphericalIndex(W, block_bounds(W.shape[1], blocks), clusters=12, probes=probes, seed=5)
    est = Estimator("decomp", W, loss=loss, mu=1.0, q=q, steps=steps, tau2=1e-3, sample=1, index=index,
                    restrict=restrict)
    return est(phi, ptr, idx, _clock())


@pytest.mark.parametrize("loss", [CE, MARGIN])
@pytest.mark.parametrize("steps", [1, 4])
def test_restricted_messages_equal_the_unrestricted_ones_when_every_block_retrieves_every_class(loss, steps):
    W, phi, ptr, idx = _problem(seed=4)
    K = W.shape[0]
    full = _search(W, phi, ptr, idx, loss, 4, K, 12, restrict=True, steps=steps)
    unrestricted = _search(W, phi, ptr, idx, loss, 4, K, 12, restrict=False, steps=steps)
    np.testing.assert_array_equal(_dense(full, K), _dense(unrestricted, K))
    np.testing.assert_array_equal(full.value, unrestricted.value)
    exact = Estimator("exact", W, loss=loss, mu=1.0, q=K, steps=1, tau2=1e-3, sample=1)(phi, ptr, idx, _clock())
    assert (full.value >= exact.value - 1e-9).all()  # Theorem 1: G(Lambda) >= L(z) (Jensen)


@pytest.mark.parametrize("loss", [CE, MARGIN])
def test_restriction_only_scores_the_active_set_in_the_blocks_that_missed_it(loss):
    """With partial retrieval the two differ, and the restricted run scores, beyond the searches,
    only the positives and A in the blocks that did not retrieve them (the paper's O(h B |A|))."""
    W, phi, ptr, idx = _problem(K=400, seed=6)
    index = BlockSphericalIndex(W, block_bounds(16, 4), clusters=12, probes=3, seed=5)
    S, V, _, _ = index.search(phi, 30)
    n, B, q = S.shape
    width = B * q + 2
    out = {}
    for restrict in (True, False):
        U, is_pos = np.empty((n, width), np.int64), np.empty((n, width), np.bool_)
        Z, known = np.empty((n, B, width)), np.empty((n, B, width), np.bool_)  # block-major
        count, coef = np.empty(n, np.int64), np.empty((n, width))
        value, n_active, n_retrieved = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
        search_estimate(W, phi, index.bounds, S, V, ptr, idx, 1, 1e-3, loss, 1.0, restrict, U, is_pos, Z,
                        known, count, coef, value, n_active, n_retrieved)
        np.testing.assert_array_equal(n_retrieved, (S >= 0).sum(axis=(1, 2)))
        out[restrict] = (U, is_pos, known.transpose(0, 2, 1), count, coef, n_active)
    U, is_pos, known, count, coef, n_active = out[True]
    for i in range(n):
        c = count[i]
        retrieved = np.zeros((c, B), bool)
        for j in range(B):
            retrieved[np.isin(U[i, :c], S[i, j]), j] = True
        extra = known[i, :c] & ~retrieved  # scored beyond the searches
        completed = extra.any(axis=1) & ~is_pos[i, :c]
        assert completed.sum() <= n_active[i]
        rest = ~completed & ~is_pos[i, :c]  # outside A and P: a block knows what it retrieved, nothing more
        np.testing.assert_array_equal(known[i, :c][rest], retrieved[rest])
        assert out[False][2][i, :c].all()  # unrestricted: every candidate in every block
    if loss == CE:  # every candidate carries some CE gradient: what a block does not see shows
        assert any((out[True][4][i, :count[i]] != out[False][4][i, :count[i]]).any() for i in range(n))
