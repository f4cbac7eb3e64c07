"""Spherical-clustering margin oracle (Auvolat et al. 2015), the MIPS structure of LDGS.

Class vectors are sketched to `cluster_dim` dimensions and normalised; spherical k-means groups
them into `clusters` clusters. A query probes the `probes` clusters whose centroids have the
largest inner product with its sketch, and every member of those clusters is re-ranked exactly
(or, with `cluster_candidates` k > 0, the k members with the largest sketched inner product).

Updates: a changed class is re-sketched and moved to its nearest centroid; cluster sums are kept
exact incrementally, so each centroid stays the normalised mean of its current members (O(dim) per
moved class plus O(clusters * dim) per update call). Rule for a full refresh: once the classes
re-indexed since the last refresh reach C (on average every class changed once), one Lloyd pass
re-assigns every class and recomputes every centroid, an amortised O(clusters * dim) per changed
class. Empty clusters are re-seeded with a hashed non-zero class; zero vectors (a fresh model) have
no direction and are spread over the clusters by id.
"""
from __future__ import annotations

import numpy as np
import param
import scipy.sparse as sp

from ..engine.mips import (
    cluster_sums,
    gather_members,
    initial_centroids,
    members,
    move_rows,
    nearest_centroid,
    normalised_centroids,
    shortlist,
    top_clusters,
    unit_rows,
)
from .indexed import IndexedOracle
from .sketch import Sketch


class SphericalParams(param.Parameterized):
    """Parameters of the spherical-clustering margin oracle."""

    clusters = param.Integer(default=0, bounds=(0, 1_000_000), doc=(
        "Number of spherical k-means clusters; 0 = round(sqrt(C)), which balances the centroid "
        "scan against the members re-ranked (LDGS). Capped at C."))
    probes = param.Integer(default=8, bounds=(1, 100_000), doc=(
        "Clusters probed per query (largest centroid inner product first); all their members are "
        "re-ranked exactly, about probes * C / clusters classes."))
    kmeans_iter = param.Integer(default=10, bounds=(1, 1000), doc=(
        "Lloyd iterations of spherical k-means at build time, from centroids at random classes."))
    cluster_candidates = param.Integer(default=64, bounds=(0, 1_000_000), doc=(
        "0 = re-rank every member of the probed clusters exactly; k > 0 = first keep the k members "
        "with the largest sketched inner product (cluster_dim flops each), then re-rank those."))
    cluster_dim = param.Integer(default=64, bounds=(8, 1024), doc=(
        "Dimension of the random projection the clustering works on (C * dim floats of memory)."))


class SphericalOracle(IndexedOracle):
    """Approximate margin oracle by probing the best spherical clusters, exact re-ranking."""

    name = "spherical"

    def __init__(self, params: SphericalParams | None = None, seed: int = 0, threads: int | None = None) -> None:
        super().__init__(params or SphericalParams(), seed, threads)
        self.refreshes = 0

    def _index(self) -> None:
        p = self.params
        C = self.vectors.n_classes
        K = min(C, p.clusters or max(1, round(np.sqrt(C))))
        self._ids = np.arange(C, dtype=np.int64)
        self._sketch = Sketch(p.cluster_dim, self.vectors.n_features, self.seed)
        self._unit, _ = self._sketch_classes(self._ids, self._sketch)
        self._length = np.sqrt((self._unit ** 2).sum(axis=1))
        unit_rows(self._unit)
        self.centroids = initial_centroids(self._unit, K, self.seed)
        for _ in range(p.kmeans_iter):
            self._lloyd()
        self._changed = 0
        self.refreshes = 0
        self._members = None

    def _lloyd(self) -> None:
        """Re-assign every class to its nearest centroid, then recompute the centroids."""
        self._assign = nearest_centroid(self._unit, self._ids, self.centroids)
        self._sums, self._sizes = cluster_sums(self._unit, self._assign, self.centroids.shape[0])
        self.centroids = normalised_centroids(self._sums, self._sizes, self._unit, self._assign, self.seed)

    def _reindex(self, classes: np.ndarray) -> None:
        fresh, _ = self._sketch_classes(classes, self._sketch)
        self._length[classes] = np.sqrt((fresh ** 2).sum(axis=1))
        unit_rows(fresh)
        moved_to = nearest_centroid(fresh, classes, self.centroids)
        move_rows(self._unit, self._assign, fresh, classes, moved_to, self._sums, self._sizes)
        self._changed += classes.size
        if self._changed >= self._ids.size:
            self._lloyd()
            self._changed = 0
            self.refreshes += 1
        else:
            self.centroids = normalised_centroids(self._sums, self._sizes, self._unit, self._assign, self.seed)
        self._members = None

    def _candidates(self, X: sp.spmatrix, draw: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        if self._members is None:
            self._members = members(self._assign, self.centroids.shape[0])
        Q = self._sketch(X)
        cand_ptr, cands = gather_members(top_clusters(Q, self.centroids, self.params.probes), *self._members)
        if self.params.cluster_candidates:
            return shortlist(cand_ptr, cands, Q, self._unit, self._length, self.params.cluster_candidates)
        return cand_ptr, cands
