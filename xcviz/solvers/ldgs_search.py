"""LDGS's four gradient estimators over a batch: exact, sampled, mips (Algorithm 1) and decomp
(Algorithm 2), all returning the candidate set U of every sample with the estimated dL/dz on it.

exact: U = all K classes. sampled: the positives plus K/100 classes drawn uniformly (sampled
softmax, Jean et al. 2014). mips: the top Q classes of one spherical-clustering index over the
whole phi(x), plus the positives, rescored exactly. decomp: the top Q classes of each of B block
indexes (over h/B coordinates each), their union plus the positives rescored exactly in every
block, then T greedy message-passing steps. Classes outside U count as minus infinity.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..engine.ldgs import certify, estimate, rescore
from ..oracles.block_index import BlockSphericalIndex

ESTIMATORS = ("exact", "sampled", "mips", "decomp")


@dataclass
class Estimate:
    """One batch's estimate: U[i, :count[i]] the candidates of sample i, coef their dL/dz, Z their
    block scores (n x |U| x B), value the estimated losses, n_active |A| (or the gradient's support
    above tau2), retrieved sum_j |S_j| (or |U|), certified the retrieval certificate (searches only)."""

    U: np.ndarray
    is_pos: np.ndarray
    Z: np.ndarray
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
                 sample: int, index: BlockSphericalIndex | None = None, seed: int = 0) -> None:
        self.kind, self.W, self.loss, self.mu = kind, W, loss, mu
        self.q, self.steps, self.tau2, self.sample = q, steps, tau2, sample
        self.index = index
        self.rng = np.random.default_rng([seed, 7])

    def __call__(self, phi: np.ndarray, pos_ptr: np.ndarray, pos_idx: np.ndarray, clock: dict,
                 with_certificate: bool = False, rng: np.random.Generator | None = None) -> Estimate:
        n, h = phi.shape
        K = self.W.shape[0]
        max_pos = int(np.diff(pos_ptr).max()) if n else 0
        t0 = time.perf_counter()
        upper = np.zeros(n)
        if self.kind == "exact":
            bounds = np.array([0, h], np.int64)
            cand_ptr = np.arange(n + 1, dtype=np.int64) * K
            cands = np.tile(np.arange(K, dtype=np.int64), n)
            width, retrieved, distinct = K, np.full(n, K), True
        elif self.kind == "sampled":
            bounds = np.array([0, h], np.int64)
            cand_ptr = np.arange(n + 1, dtype=np.int64) * self.sample
            cands = (rng or self.rng).integers(0, K, n * self.sample).astype(np.int64)
            width, retrieved, distinct = self.sample + max_pos, np.full(n, self.sample), False
        else:
            bounds = self.index.bounds
            B = self.index.n_blocks
            S, cut, probed = self.index.search(phi, self.q)
            if with_certificate:
                for j in range(B):
                    upper += self.index.upper_bound(phi, j, np.ascontiguousarray(probed[:, j]),
                                                    np.ascontiguousarray(cut[:, j]))
            flat = S.reshape(n, -1)
            keep = flat >= 0
            retrieved = keep.sum(axis=1)
            cand_ptr = np.concatenate([[0], np.cumsum(retrieved)]).astype(np.int64)
            cands = flat[keep]
            width, distinct = B * self.q + max_pos, False
        t1 = time.perf_counter()
        B = bounds.size - 1
        U = np.empty((n, width), np.int64)
        is_pos = np.empty((n, width), np.bool_)
        Z = np.empty((n, width, B))
        count = np.empty(n, np.int64)
        rescore(self.W, phi, bounds, cand_ptr, cands, pos_ptr, pos_idx, distinct, U, is_pos, Z, count)
        t2 = time.perf_counter()
        coef = np.empty((n, width))
        value = np.empty(n)
        n_active = np.empty(n, np.int64)
        estimate(Z, is_pos, count, self.steps, self.tau2, self.loss, self.mu, coef, value, n_active)
        t3 = time.perf_counter()
        clock["query_seconds"] += t1 - t0
        clock["rescore_seconds"] += t2 - t1
        clock["message_seconds"] += t3 - t2
        result = Estimate(U, is_pos, Z, count, coef, value, n_active, retrieved)
        if with_certificate and self.index is not None:
            result.certified = np.empty(n, np.bool_)
            certify(Z, is_pos, count, upper, K, self.loss, self.mu, self.tau2, result.certified)
        return result
