"""What the approximate oracles share: a candidate list per query, re-ranked exactly by the class
vectors, with a deterministic fallback when a list holds nothing but the excluded class."""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..engine.mips import fill_missing, row_norms
from ..engine.threads import using_threads
from .arrays import class_ids, csr_arrays, exclusions
from .base import ClassVectors
from .sketch import Sketch

READ_BLOCK = 8192
# rows are read divided by the frame (see `rescale`): below this the index is built again, so that
# they stay far inside float32's range (HNSW's graph holds float32 sketches; 3.4e38 at most)
FRAME_FLOOR = 1e-20


class IndexedOracle:
    """Base of the approximate oracles. A subclass implements `_index()` (index every class),
    `_reindex(classes)` (re-index changed classes) and `_candidates(X)` (candidate lists).

    `seconds` says where the oracle's time went, cumulative: `index` (builds and updates, of
    which `sketch` projecting class vectors), `candidates` (the index's search, query sketches
    included) and `rerank` (exact inner products of the candidates)."""

    name = "indexed"

    def __init__(self, params, seed: int = 0, threads: int | None = None) -> None:
        self.params = params
        self.seed = int(seed)
        self.threads = threads
        self.vectors: ClassVectors | None = None
        self._frame = 1.0
        self.seconds = {"index": 0.0, "sketch": 0.0, "candidates": 0.0, "rerank": 0.0}

    def build(self, vectors: ClassVectors) -> None:
        """Index every class of `vectors` (kept by reference: `update` re-reads from it)."""
        if vectors.n_classes < 2:
            raise ValueError(f"a margin oracle needs at least 2 classes, got {vectors.n_classes}")
        self.vectors = vectors
        self._frame = 1.0
        t = time.perf_counter()
        with using_threads(self.threads):
            self._index()
        self.seconds["index"] += time.perf_counter() - t

    def update(self, classes: np.ndarray) -> None:
        """Re-index `classes`, whose vectors changed since they were last indexed."""
        ids = class_ids(classes, self._built().n_classes)
        if ids.size:
            t = time.perf_counter()
            with using_threads(self.threads):
                self._reindex(ids)
            self.seconds["index"] += time.perf_counter() - t

    def rescale(self, factor: float) -> None:
        """Every class vector was multiplied by `factor` > 0 (a weight store folding its scale into
        its rows): rows read from now on are divided by the accumulated factor, so the index stays
        valid without re-indexing anything."""
        if not factor > 0.0:
            raise ValueError(f"rescale factor must be positive, got {factor}")
        self._frame *= float(factor)
        if self._frame < FRAME_FLOOR:  # before rows / frame leave float32: index the rows as they are now
            self.build(self.vectors)

    def query(self, X: sp.spmatrix, exclude: np.ndarray | None = None, draw: int | None = None) -> np.ndarray:
        """For every row x of X a class != exclude[i] with (approximately) the largest w_c . x;
        `draw` as in MarginOracle.query."""
        vectors = self._built()
        indptr, indices, data = csr_arrays(X, vectors.n_features)
        n = indptr.shape[0] - 1
        excl = exclusions(exclude, n, vectors.n_classes)
        if n == 0:
            return np.empty(0, np.int64)
        with using_threads(self.threads):
            t0 = time.perf_counter()
            cand_ptr, cands = self._candidates(X, draw)
            t1 = time.perf_counter()
            best, _ = vectors.best_among(cand_ptr, cands, indptr, indices, data, excl)
            best = np.array(best, np.int64)
            fill_missing(best, excl, vectors.n_classes, self.seed & 0x7FFFFFFFFFFFFFFF)
        self.seconds["candidates"] += t1 - t0
        self.seconds["rerank"] += time.perf_counter() - t1
        return best

    def _built(self) -> ClassVectors:
        if self.vectors is None:
            raise RuntimeError(f"the {self.name} oracle has no index yet: call build(vectors) first")
        return self.vectors

    def _rows(self, classes: np.ndarray) -> sp.csr_matrix:
        """Rows of `classes` in the frame of the index (see `rescale`)."""
        rows = self._built().rows(classes)
        if self._frame != 1.0:
            rows = rows * (1.0 / self._frame)
        return rows

    def _sketch_classes(self, classes: np.ndarray, sketch: Sketch) -> tuple[np.ndarray, np.ndarray]:
        """Sketches and Euclidean norms of the vectors of `classes`, read a block at a time so that
        memory stays O(block + C * dim)."""
        t = time.perf_counter()
        out = np.empty((classes.size, sketch.dim))
        norms = np.empty(classes.size)
        for start in range(0, classes.size, READ_BLOCK):
            block = classes[start:start + READ_BLOCK]
            rows = sp.csr_matrix(self._rows(block), dtype=np.float64)
            out[start:start + block.size] = sketch(rows)
            norms[start:start + block.size] = row_norms(rows.indptr.astype(np.int64), rows.data)
        self.seconds["sketch"] += time.perf_counter() - t
        return out, norms

    def _index(self) -> None:
        raise NotImplementedError

    def _reindex(self, classes: np.ndarray) -> None:
        raise NotImplementedError

    def _candidates(self, X: sp.spmatrix, draw: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError
