"""HNSW margin oracle: a hierarchical navigable small-world graph (hnswlib, inner-product space)
over sketched class vectors, the graph family of MEMOIR's SW-graph oracle.

Class vectors are projected to `sketch_dim` dimensions (inner products kept in expectation), the
graph returns the `hnsw_candidates` classes with the largest sketched inner product, and those are
re-ranked exactly. `update` re-inserts changed classes under their own ids, which hnswlib treats as
an in-place update of the element and its links (nmslib/hnswlib#303, PR #216). The graph is built and
updated on one thread, so it depends only on the seed, never on the thread count; queries run on
all threads.
"""
from __future__ import annotations

import hnswlib
import numba
import numpy as np
import param
import scipy.sparse as sp

from .indexed import IndexedOracle
from .sketch import Sketch


class HNSWParams(param.Parameterized):
    """Parameters of the HNSW margin oracle."""

    hnsw_M = param.Integer(default=16, bounds=(2, 128), doc=(
        "Links per node of the HNSW graph: more raises recall and memory (C * 2M links) and build time."))
    hnsw_ef_construction = param.Integer(default=100, bounds=(8, 4096), doc=(
        "Size of the candidate list while inserting a class: larger builds a better graph, slower."))
    hnsw_ef = param.Integer(default=64, bounds=(1, 65_536), doc=(
        "Size of the candidate list while searching (raised to hnsw_candidates if below): the main "
        "recall/speed knob at query time."))
    hnsw_candidates = param.Integer(default=32, bounds=(1, 10_000), doc=(
        "Classes the graph returns per query, re-ranked exactly by their true inner product."))
    sketch_dim = param.Integer(default=128, bounds=(8, 1024), doc=(
        "Dimension of the random projection the graph is built on: more keeps inner products more "
        "faithfully, costs memory (C * dim floats) and time."))


class HNSWOracle(IndexedOracle):
    """Approximate margin oracle by HNSW search over sketched class vectors, exact re-ranking."""

    name = "hnsw"

    def __init__(self, params: HNSWParams | None = None, seed: int = 0, threads: int | None = None) -> None:
        super().__init__(params or HNSWParams(), seed, threads)

    def _index(self) -> None:
        p = self.params
        C = self.vectors.n_classes
        self._sketch = Sketch(p.sketch_dim, self.vectors.n_features, self.seed)
        self._k = min(p.hnsw_candidates, C)
        self._graph = hnswlib.Index(space="ip", dim=p.sketch_dim)
        self._graph.init_index(max_elements=C, ef_construction=p.hnsw_ef_construction, M=p.hnsw_M,
                               random_seed=self.seed & 0x7FFFFFFF)
        self._insert(np.arange(C, dtype=np.int64))
        self._graph.set_ef(max(p.hnsw_ef, self._k))

    def _insert(self, classes: np.ndarray) -> None:
        sketches, _ = self._sketch_classes(classes, self._sketch)
        self._graph.add_items(sketches.astype(np.float32), classes, num_threads=1)

    def _reindex(self, classes: np.ndarray) -> None:
        self._insert(classes)

    def _candidates(self, X: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
        labels, _ = self._graph.knn_query(self._sketch(X).astype(np.float32), k=self._k,
                                          num_threads=numba.get_num_threads())
        n = labels.shape[0]
        return np.arange(n + 1, dtype=np.int64) * self._k, labels.astype(np.int64).ravel()
