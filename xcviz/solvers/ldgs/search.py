"""LDGS's four gradient estimators over a batch: exact, sampled, mips (Algorithm 1) and decomp
(Algorithm 2), all returning the candidate set U of every sample with the estimated dL/dz on it.

exact: all K classes scored (a batch in one pass over W); U = the gradient's support (its
non-zero classes). sampled: the positives plus
K/100 classes drawn uniformly (sampled softmax, Jean et al. 2014), rescored exactly. mips: the top
Q classes of one spherical-clustering index over the whole phi(x), scored by the search itself, plus
the positives. decomp: the top Q classes S_j of each of B block indexes (over h/B coordinates each)
with the block scores the search computed; block j sees S_j and the positives P (the rest count as
minus infinity); T greedy message-passing steps restricted to the active set A, whose members
alone are scored in the blocks that did not retrieve them (the paper's O(h Q + h B |A|) per sample
instead of O(h B Q) for scoring the whole union in every block; `restrict=False` does the latter).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...engine.ldgs import all_scores, certify, complete_scores, estimate, exact_estimate, rescore, search_estimate
from ...oracles.block_index import BlockSphericalIndex

ESTIMATORS = ("exact", "sampled", "mips", "decomp")


@dataclass
class Estimate:
    """One batch's estimate: U[i, :count[i]] the candidates of sample i, coef their dL/dz, value the
    estimated losses, n_active |A| (or the gradient's support above tau2), retrieved sum_j |S_j|
    (or |U|), certified the retrieval certificate (searches, when asked)."""

    U: np.ndarray
    count: np.ndarray
    coef: np.ndarray
    value: np.ndarray
    n_active: np.ndarray
    retrieved: np.ndarray
    certified: np.ndarray | None = None


def block_bounds(h: int, blocks: int) -> np.ndarray:
    """Column offsets of `blocks` contiguous blocks of h coordinates (sizes differ by at most 1)."""
    return np.array([round(j * h / blocks) for j in range(blocks + 1)], np.int64)


class Estimator:
    """A gradient estimator bound to the live W (K x h). `index` is the block index of the
    searches (None for exact and sampled); `clock` accumulates query, rescore and message seconds."""

    def __init__(self, kind: str, W: np.ndarray, *, loss: int, mu: float, q: int, steps: int, tau2: float,
                 sample: int, index: BlockSphericalIndex | None = None, seed: int = 0, restrict: bool = True) -> None:
        self.kind, self.W, self.loss, self.mu = kind, W, loss, mu
        self.q, self.steps, self.tau2, self.sample = q, steps, tau2, sample
        self.index, self.restrict = index, restrict
        self.rng = np.random.default_rng([seed, 7])

    def __call__(self, phi: np.ndarray, pos_ptr: np.ndarray, pos_idx: np.ndarray, clock: dict,
                 with_certificate: bool = False, rng: np.random.Generator | None = None) -> Estimate:
        phi = np.ascontiguousarray(phi)
        if self.kind == "exact":
            return self._exact(phi, pos_ptr, pos_idx, clock)
        if self.kind == "sampled":
            return self._sampled(phi, pos_ptr, pos_idx, clock, rng or self.rng)
        return self._search(phi, pos_ptr, pos_idx, clock, with_certificate)

    def _exact(self, phi, pos_ptr, pos_idx, clock) -> Estimate:
        n, K = phi.shape[0], self.W.shape[0]
        t0 = time.perf_counter()
        scores = np.empty((n, K))
        all_scores(self.W, phi, scores)
        t1 = time.perf_counter()
        U, coef = np.empty((n, K), np.int64), np.empty((n, K))
        count, value, n_active = np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64)
        exact_estimate(scores, pos_ptr, pos_idx, self.tau2, self.loss, self.mu, U, coef, count, value, n_active)
        t2 = time.perf_counter()
        clock["rescore_seconds"] += t1 - t0
        clock["message_seconds"] += t2 - t1
        return Estimate(U, count, coef, value, n_active, np.full(n, K))

    def _sampled(self, phi, pos_ptr, pos_idx, clock, rng) -> Estimate:
        n, h = phi.shape
        K = self.W.shape[0]
        max_pos = int(np.diff(pos_ptr).max()) if n else 0
        t0 = time.perf_counter()
        cand_ptr = np.arange(n + 1, dtype=np.int64) * self.sample
        cands = rng.integers(0, K, n * self.sample).astype(np.int64)
        t1 = time.perf_counter()
        width = self.sample + max_pos
        U, is_pos, Z = np.empty((n, width), np.int64), np.empty((n, width), np.bool_), np.empty((n, width, 1))
        count = np.empty(n, np.int64)
        rescore(self.W, phi, np.array([0, h], np.int64), cand_ptr, cands, pos_ptr, pos_idx, False, U, is_pos, Z,
                count)
        t2 = time.perf_counter()
        coef, value, n_active = np.empty((n, width)), np.empty(n), np.empty(n, np.int64)
        estimate(Z, is_pos, count, self.tau2, self.loss, self.mu, coef, value, n_active)
        t3 = time.perf_counter()
        clock["query_seconds"] += t1 - t0
        clock["rescore_seconds"] += t2 - t1
        clock["message_seconds"] += t3 - t2
        return Estimate(U, count, coef, value, n_active, np.full(n, self.sample))

    def _search(self, phi, pos_ptr, pos_idx, clock, with_certificate) -> Estimate:
        n = phi.shape[0]
        K = self.W.shape[0]
        index = self.index
        B = index.n_blocks
        max_pos = int(np.diff(pos_ptr).max()) if n else 0
        t0 = time.perf_counter()
        S, V, cut, probed = index.search(phi, self.q)
        t1 = time.perf_counter()
        width = B * self.q + max_pos
        U, is_pos = np.empty((n, width), np.int64), np.empty((n, width), np.bool_)
        Z, known = np.empty((n, B, width)), np.empty((n, B, width), np.bool_)  # block-major
        count, coef = np.empty(n, np.int64), np.empty((n, width))
        value, n_active, retrieved = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
        search_estimate(self.W, phi, index.bounds, S, V, pos_ptr, pos_idx, self.steps, self.tau2, self.loss, self.mu,
                        self.restrict, U, is_pos, Z, known, count, coef, value, n_active, retrieved)
        t2 = time.perf_counter()
        clock["query_seconds"] += t1 - t0
        clock["message_seconds"] += t2 - t1
        result = Estimate(U, count, coef, value, n_active, retrieved)
        if with_certificate:
            upper = np.zeros(n)
            for j in range(B):
                upper += index.upper_bound(phi, j, np.ascontiguousarray(probed[:, j]), np.ascontiguousarray(cut[:, j]))
            complete_scores(self.W, phi, index.bounds, U, count, Z, known)
            result.certified = np.empty(n, np.bool_)
            certify(Z, is_pos, count, upper, K, self.loss, self.mu, self.tau2, result.certified)
        return result
