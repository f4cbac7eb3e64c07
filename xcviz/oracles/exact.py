"""The exact margin oracle: the true argmax over all classes but the excluded one."""
from __future__ import annotations

import numpy as np
import param
import scipy.sparse as sp

from ..engine.exact_search import exact_argmax, rank_among
from ..engine.threads import using_threads
from .base import ClassVectors


class ExactParams(param.Parameterized):
    """The exact oracle has nothing to tune."""


def feature_major(vectors: ClassVectors) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The class vectors as (features x classes) CSR arrays: the store's own snapshot when it has
    one, otherwise built from its rows."""
    if hasattr(vectors, "columns"):
        return vectors.columns()
    Wt = sp.csr_matrix(vectors.rows(np.arange(vectors.n_classes, dtype=np.int64)).T)
    return Wt.indptr.astype(np.int64), Wt.indices.astype(np.int64), Wt.data.astype(np.float64)


class ExactOracle:
    """argmax_{c != y} w_c . x over all C classes, in parallel over queries; the reference every
    approximate oracle's recall and margin error are measured against. It has no index to keep up:
    it re-reads the vectors whenever they changed (a store's `version`), whatever `update` is told."""

    name = "exact"

    def __init__(self, params: ExactParams | None = None, seed: int = 0, threads: int | None = None) -> None:
        self.params = params or ExactParams()
        self.threads = threads
        self.seed = int(seed)
        self.calls = 0  # salts the choice among classes tied at score 0 (see engine.exact_search)
        self._vectors: ClassVectors | None = None
        self._cols = None
        self._read = None  # the vectors' version the columns were read at

    def build(self, vectors: ClassVectors) -> None:
        self._vectors = vectors
        self._cols = None

    def update(self, classes: np.ndarray) -> None:
        """Nothing to re-index: queries read the current vectors."""

    def rescale(self, factor: float) -> None:
        """Nothing to re-index: queries read the current vectors."""

    def _queries(self, X: sp.csr_matrix, exclude: np.ndarray | None) -> tuple:
        """The current columns, X as int64/float64 CSR arrays and the excluded classes (-1: none)."""
        if self._vectors is None:
            raise RuntimeError("the exact oracle has no class vectors: call build() first")
        version = getattr(self._vectors, "version", None)
        if self._cols is None or version != self._read:
            self._cols = feature_major(self._vectors)
            self._read = version
        X = sp.csr_matrix(X)
        if X.shape[1] > self._vectors.n_features:
            raise ValueError(f"queries have {X.shape[1]} features, the class vectors {self._vectors.n_features}")
        ex = np.full(X.shape[0], -1, np.int64) if exclude is None else np.asarray(exclude, np.int64)
        return (*self._cols, X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data.astype(np.float64), ex)

    def search(self, X: sp.csr_matrix, exclude: np.ndarray | None = None,
               draw: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(best class, its inner product) per row of X; `draw` salts the ties (see MarginOracle.query)."""
        arrays = self._queries(X, exclude)
        if draw is None:
            self.calls += 1
            draw = self.calls
        salt = (self.seed * 0x9E3779B1 + draw) & 0x7FFFFFFFFFFFFFFF
        with using_threads(self.threads):
            return exact_argmax(*arrays, self._vectors.n_classes, 64, salt)

    def rank(self, X: sp.csr_matrix, answer: np.ndarray, exclude: np.ndarray | None = None) -> np.ndarray:
        """The rank of answer[i] among the exact scores of row i (exclude[i] left out): 1 + the
        number of classes scoring strictly higher, so 1 means an exact argmax."""
        arrays = self._queries(X, exclude)
        with using_threads(self.threads):
            return rank_among(*arrays, np.asarray(answer, np.int64), self._vectors.n_classes, 64)

    def query(self, X: sp.csr_matrix, exclude: np.ndarray | None = None, draw: int | None = None) -> np.ndarray:
        return self.search(X, exclude, draw)[0]
