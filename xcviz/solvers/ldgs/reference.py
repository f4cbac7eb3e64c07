"""LDGS's losses and its gradient estimators on one sample, in plain numpy, transcribed from the paper
(Yen et al., ICML 2018) to be read beside it: the cross-entropy (2), the smoothed max-margin
(10)-(11) with its bi-simplex projection found by bisection, Algorithm 1 (search) and Algorithm 2
(greedy message passing). No public implementation of the paper exists, so this is what the numba
engine (engine/ldgs.py) is held to: the tests compare every estimator's candidates, gradient, loss
and active set with these functions, and a user can do the same on any sample (README, "Checking
LDGS by hand"). Slow on purpose: sets and loops where the engine has kernels.

Conventions (the engine's, and the issue's): a class a block did not retrieve counts as minus
infinity there, so it takes no part in that block's loss nor in its gradient; a class in the active
set A is scored exactly in every block once A is known (the paper's O(h B |A|) completion)."""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

LOSSES = ("smoothed_margin", "ce")


def cross_entropy(z: np.ndarray, positive: np.ndarray) -> tuple[float, np.ndarray]:
    """(2): sum over positives of log sum_k exp(z_k) - z_p, and its gradient |P| softmax(z) - 1_P."""
    if z.size == 0 or not positive.any():
        return 0.0, np.zeros(z.size)
    lse = logsumexp(z)
    return float((lse - z[positive]).sum()), positive.sum() * np.exp(z - lse) - positive


def _root(f, lo: float, hi: float) -> float:
    """The point where the non-increasing f changes sign in [lo, hi] (f(lo) >= 0 >= f(hi)), by
    bisection down to adjacent floats."""
    for _ in range(2100):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if f(mid) >= 0.0 else (lo, mid)
    return lo


def bisimplex_projection(v: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """The Euclidean projection of v onto C = {alpha : sum_N alpha = -sum_P alpha <= 1, alpha_N >= 0,
    alpha_P <= 0}. By its KKT conditions alpha_N = (v_N - t_N)_+ and alpha_P = -(t_P - v_P)_+: one
    shared threshold t_N = t_P = t with sum (v_N - t)_+ = sum (t - v_P)_+ while that total is at
    most 1; otherwise the total is 1 and each side is a unit-simplex projection of its own."""
    vn, vp = v[~positive], v[positive]
    alpha = np.zeros(v.size)
    if vn.size == 0 or vp.size == 0 or vn.max() <= vp.min():
        return alpha  # no negative above a positive: alpha = 0 is optimal
    lo, hi = min(vn.min(), vp.min()) - 1.0, max(vn.max(), vp.max()) + 1.0
    above = lambda t: np.maximum(vn - t, 0.0).sum()  # noqa: E731
    below = lambda t: np.maximum(t - vp, 0.0).sum()  # noqa: E731
    t = _root(lambda t: above(t) - below(t), lo, hi)
    tn = tp = t
    if above(t) > 1.0:
        tn = _root(lambda t: above(t) - 1.0, lo, hi)
        tp = _root(lambda t: 1.0 - below(t), lo, hi)
    alpha[~positive] = np.maximum(vn - tn, 0.0)
    alpha[positive] = -np.maximum(tp - vp, 0.0)
    return alpha


def smoothed_margin(z: np.ndarray, positive: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
    """(10)-(11): with v = (z + 1_N) / mu, the gradient is alpha = proj_C(v) and the loss
    max_alpha <z + 1_N, alpha> - mu/2 ||alpha||^2 = mu (<v, alpha> - ||alpha||^2 / 2)."""
    v = (z + ~positive) / mu
    alpha = bisimplex_projection(v, positive)
    return float(mu * (v @ alpha - 0.5 * alpha @ alpha)), alpha


def loss(z: np.ndarray, positive: np.ndarray, kind: str, mu: float) -> tuple[float, np.ndarray]:
    """The loss `kind` (see LOSSES) of the scores z and its gradient dL/dz."""
    if kind == "ce":
        return cross_entropy(z, positive)
    if kind == "smoothed_margin":
        return smoothed_margin(z, positive, mu)
    raise ValueError(f"loss must be one of {', '.join(LOSSES)}, not {kind!r}")


def exact_gradient(scores: np.ndarray, positives, kind: str, mu: float = 1.0) -> tuple[float, np.ndarray]:
    """The loss of all K scores and its gradient over all K classes (the `exact` estimator)."""
    positive = np.zeros(scores.size, bool)
    positive[list(positives)] = True
    return loss(scores, positive, kind, mu)


def decomposed_gradient(block_scores: np.ndarray, retrieved: list, positives, kind: str, *, mu: float = 1.0,
                        steps: int = 1, tau2: float = 1e-3,
                        restrict: bool = True) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Algorithm 2 on one sample (Algorithm 1 when there is one block). block_scores: K x B, the
    exact block scores z_j = W^(j) phi^(j)(x), of which a block reads only the classes it knows;
    retrieved[j]: the classes S_j its search returned; positives: P. Returns (U, gradient on U,
    G(Lambda), |A| of the last step), U the sorted union of P and the S_j. With one block lambda
    stays 0 (lambda* = z - z_1 = 0) and A is the gradient's support above tau2: Algorithm 1.

    Step 2: block j knows S_j and P (every class of U when not `restrict`). Steps 3-8, `steps` times:
    A = the classes with a block gradient above tau2 in some block (each block's loss over the
    classes it knows), scored in every block; lambda moves towards lambda*_k = z_k / B - z_jk on A
    with eta = 2 / (t + 2). Step 9: the output (1/B) sum_j grad L(B (z~_j + lambda_j))."""
    K, B = block_scores.shape
    P = {int(k) for k in positives}
    S = [{int(k) for k in s} for s in retrieved]
    U = np.array(sorted(P.union(*S)), np.int64)
    known = [P | S[j] if restrict else set(U.tolist()) for j in range(B)]
    lam = np.zeros((K, B))

    def block(j: int) -> tuple[np.ndarray, float, np.ndarray]:
        ids = np.array(sorted(known[j]), np.int64)
        value, grad = loss(B * (block_scores[ids, j] + lam[ids, j]), np.isin(ids, list(P)), kind, mu)
        return ids, value, grad

    active: set = set()
    for t in range(1, steps + 1):
        active = set()
        for j in range(B):
            ids, _, grad = block(j)
            active |= set(ids[np.abs(grad) > tau2].tolist())
        for j in range(B):
            known[j] |= active
        eta = 2.0 / (t + 2.0)
        for k in active:
            star = block_scores[k].sum() / B - block_scores[k]
            lam[k] = eta * star + (1.0 - eta) * lam[k]
    gradient, value = np.zeros(K), 0.0
    for j in range(B):
        ids, v, grad = block(j)
        gradient[ids] += grad / B
        value += v / B
    return U, gradient[U], value, len(active)
