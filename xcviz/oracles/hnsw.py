"""HNSW margin oracle: a hierarchical navigable small-world graph (hnswlib, inner-product space)
over sketched class vectors, the graph family of MEMOIR's SW-graph oracle.

Class vectors are projected to `sketch_dim` dimensions (inner products kept in expectation), the
graph returns the `hnsw_candidates` classes with the largest sketched inner product, and those are
re-ranked exactly. `update` re-inserts changed classes under their own ids, which hnswlib treats as
an in-place update of the element and its links (nmslib/hnswlib#303, PR #216); when at least
`hnsw_rebuild_fraction` of the classes changed, it builds a fresh graph instead, which is cheaper
than repairing most of one and gives a better graph.

Reproducible by default: each graph is built and updated on one thread, so it depends only on the
seed, never on the thread count. `hnsw_shards` > 1 splits the classes (class c to shard c mod S)
into S graphs built and updated side by side, one thread each: still reproducible, up to S times
faster to build on S cores, and every query searches all S graphs. `hnsw_build_threads` > 1 is the
documented non-reproducible fast mode: hnswlib inserts with that many threads, so the graph (and
the run) depends on thread timing. Queries run on all threads.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import param
import scipy.sparse as sp

from .._util.extras import require
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
    hnsw_rebuild_fraction = param.Number(default=0.5, bounds=(0.0, 1.0), doc=(
        "An update that changes at least this share of the classes builds a fresh graph instead of "
        "re-inserting them one by one (1 = always re-insert)."))
    hnsw_shards = param.Integer(default=1, bounds=(1, 64), doc=(
        "Graphs the classes are split into, built and updated in parallel, one thread each "
        "(reproducible); a query searches every graph for hnsw_candidates each."))
    hnsw_build_threads = param.Integer(default=1, bounds=(1, 256), doc=(
        "Threads hnswlib inserts with. 1 = reproducible; more is faster but NOT reproducible: the "
        "graph depends on the order the threads happen to insert in."))


class HNSWOracle(IndexedOracle):
    """Approximate margin oracle by HNSW search over sketched class vectors, exact re-ranking."""

    name = "hnsw"

    def __init__(self, params: HNSWParams | None = None, seed: int = 0, threads: int | None = None) -> None:
        super().__init__(params or HNSWParams(), seed, threads)

    def _index(self) -> None:
        require("hnswlib", "hnsw", "the HNSW oracle")
        import hnswlib

        p = self.params
        C = self.vectors.n_classes
        self._sketch = Sketch(p.sketch_dim, self.vectors.n_features, self.seed)
        shards = min(p.hnsw_shards, C)
        self._k = min(p.hnsw_candidates, -(-C // shards))
        self._graphs = []
        for s in range(shards):
            graph = hnswlib.Index(space="ip", dim=p.sketch_dim)
            graph.init_index(max_elements=len(range(s, C, shards)), ef_construction=p.hnsw_ef_construction, M=p.hnsw_M,
                             random_seed=(self.seed + s) & 0x7FFFFFFF)
            graph.set_ef(max(p.hnsw_ef, self._k))
            self._graphs.append(graph)
        self._insert(np.arange(C, dtype=np.int64), skip_zero=True)

    def _insert(self, classes: np.ndarray, skip_zero: bool = False) -> None:
        """(Re-)insert `classes` into their shards' graphs, the shards side by side. skip_zero
        leaves out zero vectors (a fresh graph): they score 0 against every query, and a class
        that later changes is inserted by the update that follows its change."""
        sketches, norms = self._sketch_classes(classes, self._sketch)
        if skip_zero:
            classes, sketches = classes[norms > 0], sketches[norms > 0]
        sketches = sketches.astype(np.float32)
        shards = len(self._graphs)
        threads = self.params.hnsw_build_threads

        def insert(s: int) -> None:
            mine = classes % shards == s
            if mine.any():
                self._graphs[s].add_items(sketches[mine], classes[mine], num_threads=threads)

        if shards == 1:
            insert(0)
            return
        with ThreadPoolExecutor(max_workers=min(shards, numba.get_num_threads())) as pool:
            list(pool.map(insert, range(shards)))  # hnswlib releases the GIL while it inserts

    def _reindex(self, classes: np.ndarray) -> None:
        if classes.size >= self.params.hnsw_rebuild_fraction * self.vectors.n_classes:
            self._index()
        else:
            self._insert(classes)

    def _candidates(self, X: sp.spmatrix, draw: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        queries = self._sketch(X).astype(np.float32)
        rows = [_search(graph, queries, min(self._k, graph.get_current_count()))
                for graph in self._graphs if graph.get_current_count()]
        per_row = [np.concatenate(found) for found in zip(*rows)] if rows else [np.empty(0)] * X.shape[0]
        indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
        np.cumsum([len(found) for found in per_row], out=indptr[1:])
        return indptr, (np.concatenate(per_row) if per_row else np.empty(0)).astype(np.int64)


def _search(graph, queries: np.ndarray, k: int) -> list[np.ndarray]:
    """Each query's k nearest classes in `graph`, or as many as the graph's search reaches: with few
    links per node (hnsw_M = 2) a search can end with fewer than k, and hnswlib then refuses the
    whole batch ("Cannot return the results in a contiguous 2D array"). Such a batch is asked again
    row by row, each row for k, k/2, ... classes until its search fills them."""
    try:
        return list(graph.knn_query(queries, k=k, num_threads=numba.get_num_threads())[0])
    except RuntimeError:
        pass
    found = []
    for query in queries:
        width = k
        while True:
            try:
                found.append(graph.knn_query(query[None, :], k=width, num_threads=1)[0][0])
                break
            except RuntimeError:
                if width == 1:
                    found.append(np.empty(0, dtype=np.uint64))
                    break
                width //= 2
    return found
