"""Spherical-clustering MIPS indexes over column blocks of a dense K x h matrix (LDGS's search).

One index per block of coordinates [bounds[j], bounds[j+1]): the block rows of W are normalised
and grouped by spherical k-means (Auvolat et al. 2015), with the kernels of the sparse
`SphericalOracle` (engine/mips.py) applied to the dense block rows directly, without a sketch. A
query probes the clusters whose centroids have the largest inner product with its block of phi(x);
their live members (non-zero block rows, the only ones listed) are scored on the block, straight
from W's rows (each a contiguous h/B run, two cache lines at h/B = 16), and the best Q kept, with
their block scores.
Scoring from W needs no copy to keep fresh: an earlier layout of transposed "panels", contiguous
for a cluster's members only right after a re-layout, read up to h/B scattered cache lines per
member and cost more to refresh and lay out than the search itself (BENCHMARKS.md). Updates follow
the oracle's rule: a changed row is moved to its
nearest centroid in every block, cluster sums stay exact, and one Lloyd pass re-assigns every row
once the re-indexed rows reach K. One block (bounds = [0, h]) is Algorithm 1's index.

What is clustered (`reduction`): "cosine" (the default) the MIPS-to-cosine reduction of Auvolat et
al. that the LDGS paper builds on: every non-zero block row w gains sqrt(M^2 - ||w||^2) (M the
block's norm bound) and the query 0, so that the reduced rows' cosine with the query ranks the
classes by inner product, norms included; "none" clusters the rows' directions alone (the index
before issue 41): a long row among short ones in another direction sits in a cluster the query
does not probe. The reduced centroids' extra coordinate meets the query's 0, so the search probes
with their block coordinates, as before. M is (1 + NORM_SLACK) times the median norm (not the
largest, see BOUND_QUANTILE), reset by the rule of norm_bound.py when that level leaves its band;
a reset re-reads every row and re-assigns it (one Lloyd pass). A row longer than M is clamped
onto the sphere (extra coordinate 0): it is indexed by its direction alone, as "none" indexes
every row.
"""
from __future__ import annotations

import numpy as np

from ..engine.ldgs import block_live, cone_bound, cone_stats, live_members, search_blocks
from ..engine.mips import (cluster_sums, initial_centroids, move_rows, nearest_centroid, normalised_centroids,
                           unit_block_rows)
from .norm_bound import norm_bound, outside_band

REDUCTIONS = ("cosine", "none")
NORM_SLACK = 0.1  # M's head room over the norm level (SimpleLSH's default lsh_norm_slack)
# M follows this quantile of the non-zero block-row norms, not their maximum: LDGS's norms are skewed
# (the bench's K = 50,000 problem after 2 epochs: median 0.31, 99th percentile 3.4, largest 8.9), and
# M at the largest put nearly every row on the appended axis, one crowded direction; rows above M
# are clamped onto the sphere (their direction alone). Measured there (recall of the true top 10,
# docs/families/ldgs.md): the median beat the 0.9 and 0.99 quantiles and the maximum
BOUND_QUANTILE = 0.5


class _Block:
    """The index of one block: unit (or reduced unit) rows, centroids, assignment and cluster sums
    (the member lists of all blocks are built together, see BlockSphericalIndex.stacked)."""

    def __init__(self, W: np.ndarray, lo: int, hi: int, n_clusters: int, kmeans_iter: int, seed: int,
                 assign: np.ndarray, reduced: bool) -> None:
        self.lo, self.hi, self.seed, self.reduced = lo, hi, seed, reduced
        self.assign = assign  # a row of the index's B x K assignment, written in place
        K = W.shape[0]
        self.ids = np.arange(K, dtype=np.int64)
        self._read(W)
        self.centroids = initial_centroids(self.unit, n_clusters, seed)
        for _ in range(kmeans_iter):
            self.lloyd()
        self.changed = 0
        self.resets = 0  # resets of M (every row re-read) since the build

    def _read(self, W: np.ndarray) -> None:
        """Every row's norm, the bound M (0: no reduction) and the unit rows, from W."""
        self.norms = self.norms_of(W, self.ids)
        self.bound = norm_bound(self.level(), NORM_SLACK) if self.reduced else 0.0
        self.unit = unit_block_rows(W, self.ids, self.lo, self.hi, self.bound)

    def level(self) -> float:
        """The norm M follows: the BOUND_QUANTILE quantile of the non-zero rows' norms (0 if none)."""
        live = self.norms[self.norms > 0.0]
        return float(np.quantile(live, BOUND_QUANTILE)) if live.size else 0.0

    def norms_of(self, W: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """The norms of the block rows `classes` of W."""
        block = W[classes, self.lo:self.hi]
        return np.sqrt(np.einsum("ij,ij->i", block, block))

    def lloyd(self) -> None:
        self.assign[:] = nearest_centroid(self.unit, self.ids, self.centroids)
        self.sums, self.sizes = cluster_sums(self.unit, self.assign, self.centroids.shape[0])
        self.centroids = normalised_centroids(self.sums, self.sizes, self.unit, self.assign, self.seed)

    def update(self, W: np.ndarray, classes: np.ndarray) -> None:
        if self.reduced:
            self.norms[classes] = self.norms_of(W, classes)
            if outside_band(self.level(), self.bound, NORM_SLACK):  # a new M: every row again
                self._read(W)
                self.lloyd()
                self.changed = 0
                self.resets += 1
                return
        fresh = unit_block_rows(W, classes, self.lo, self.hi, self.bound)
        moved_to = nearest_centroid(fresh, classes, self.centroids)
        move_rows(self.unit, self.assign, fresh, classes, moved_to, self.sums, self.sizes)
        self.changed += classes.size
        if self.changed >= self.ids.size:
            self.lloyd()
            self.changed = 0
        else:
            self.centroids = normalised_centroids(self.sums, self.sizes, self.unit, self.assign, self.seed)


class BlockSphericalIndex:
    """B spherical-clustering indexes, one per column block of W (kept by reference: the search
    scores members from W's current rows, so a caller changing rows in place calls `refresh`, which
    keeps the live flags, or `update`, which also re-indexes them)."""

    def __init__(self, W: np.ndarray, bounds: np.ndarray, clusters: int = 100, probes: int = 5,
                 kmeans_iter: int = 5, seed: int = 0, reduction: str = "cosine") -> None:
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {', '.join(REDUCTIONS)}, not {reduction!r}")
        self.W = W
        self.reduction = reduction
        self.bounds = np.asarray(bounds, np.int64)
        self.probes = probes
        n_clusters = max(1, min(clusters, W.shape[0]))
        B = self.bounds.shape[0] - 1
        self._assign = np.empty((B, W.shape[0]), np.int64)
        self.blocks = [_Block(W, int(lo), int(hi), n_clusters, kmeans_iter, seed + j, self._assign[j],
                              reduction == "cosine")
                       for j, (lo, hi) in enumerate(zip(self.bounds[:-1], self.bounds[1:]))]
        self._lists = (np.empty((B, n_clusters + 1), np.int64), np.empty((B, W.shape[0]), np.int64),
                       np.empty((B, n_clusters), np.bool_))
        self._live = np.zeros((self.n_blocks, W.shape[0]), np.bool_)  # block_live compares with these
        self._whole = np.zeros(W.shape[0], np.bool_)  # live in every block: block_live skips them
        block_live(W, self.bounds, np.arange(W.shape[0], dtype=np.int64), self._live, self._whole)
        self._stacked: tuple | None = None

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    def stacked(self) -> tuple[np.ndarray, ...]:
        """(centroids B x max block width x C, member_ptr B x (C+1), member_ids B x K (the first
        member_ptr[j, C] used), live B x K, has_dead B x C) of all blocks, the layout of
        engine.ldgs.search_blocks. The member lists hold the live classes only (live[j, k]: class
        k's block row is non-zero; a zero row has no direction, scores 0 and is never retrieved): a
        fresh model's zero rows, spread over the clusters, are most of K on sparse label sets, and
        scanning them cost a search most of its time. has_dead[j, c] says whether cluster c holds
        zero rows (they count as 0 in the cut). Rebuilt after an update and when a zero row comes
        alive; the search reads the members' block rows from W itself, so changed values need no
        copy."""
        if self._stacked is None:
            width = int(np.diff(self.bounds).max())
            C = self.blocks[0].centroids.shape[0]
            cent = np.zeros((self.n_blocks, width, C))
            for j, b in enumerate(self.blocks):
                cent[j, :b.hi - b.lo] = b.centroids[:, :b.hi - b.lo].T  # a reduced one's extra meets the query's 0
            ptr, ids, has_dead = self._lists
            live_members(self._assign, self._live, ptr, ids, has_dead)
            self._stacked = (cent, ptr, ids, self._live, has_dead)
        return self._stacked

    def refresh(self, classes: np.ndarray) -> None:
        """Take note of the rows `classes` of W changed in place: their live flags follow (the
        clustering stays as it is until `update`)."""
        if len(classes):
            if block_live(self.W, self.bounds, np.asarray(classes, np.int64), self._live, self._whole):
                self._stacked = None  # a zero row came alive: the member lists grow

    def search(self, phi: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(S, V, cut, probed): the top q classes of every block per query (n x B x q, -1 padding),
        their block scores (n x B x q), the best block score left out (n x B) and the probed
        clusters (n x B x probes)."""
        n = phi.shape[0]
        cent, ptr, ids, live, has_dead = self.stacked()
        probes = min(self.probes, cent.shape[2])
        S = np.empty((n, self.n_blocks, q), np.int64)
        V = np.empty((n, self.n_blocks, q))
        cut = np.empty((n, self.n_blocks))
        probed = np.empty((n, self.n_blocks, probes), np.int64)
        search_blocks(np.ascontiguousarray(phi), self.W, self.bounds, cent, ptr, ids, live, has_dead, q, S, V, cut,
                      probed)
        return S, V, cut, probed

    def update(self, classes: np.ndarray) -> None:
        """Re-index `classes` (rows of W that changed) in every block."""
        classes = np.asarray(classes, np.int64)
        if classes.size:
            for b in self.blocks:
                b.update(self.W, classes)
            self.refresh(classes)
            self._stacked = None

    def upper_bound(self, phi: np.ndarray, j: int, probed: np.ndarray, cut: np.ndarray) -> np.ndarray:
        """Per query, an upper bound of block j's score of every class it did not keep (see cone_bound)."""
        b = self.blocks[j]
        r_max, r_min, cos_min = cone_stats(self.W, b.lo, b.hi, b.assign, b.centroids, b.bound)
        return cone_bound(np.ascontiguousarray(phi), b.lo, b.hi, b.centroids, b.sizes, probed, r_max, r_min,
                          cos_min, cut)
