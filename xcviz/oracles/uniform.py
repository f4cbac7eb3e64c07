"""The random margin oracle: a uniformly random class other than the true one (MEMOIR eq. 2)."""
from __future__ import annotations

import numpy as np
import param
import scipy.sparse as sp

from ..engine.exact_search import uniform_other
from .base import ClassVectors


class UniformParams(param.Parameterized):
    """The random oracle has nothing to tune; its draws follow the run's seed."""


class UniformOracle:
    """Ignores the weights: the cheapest inexact margin, and the worst; a baseline for the others.
    Draws depend only on (seed, draw number, row), so runs repeat exactly."""

    name = "random"

    def __init__(self, params: UniformParams | None = None, seed: int = 0, threads: int | None = None) -> None:
        self.params = params or UniformParams()
        self.seed = int(seed)
        self.calls = 0
        self.n_classes = 0

    def build(self, vectors: ClassVectors) -> None:
        if vectors.n_classes < 2:
            raise ValueError("the random oracle needs at least 2 classes")
        self.n_classes = vectors.n_classes

    def update(self, classes: np.ndarray) -> None:
        """Nothing to re-index."""

    def rescale(self, factor: float) -> None:
        """Nothing to re-index."""

    def query(self, X: sp.csr_matrix, exclude: np.ndarray | None = None, draw: int | None = None) -> np.ndarray:
        if self.n_classes == 0:
            raise RuntimeError("the random oracle has no classes: call build() first")
        ex = np.full(X.shape[0], -1, np.int64) if exclude is None else np.asarray(exclude, np.int64)
        if draw is None:
            self.calls += 1
            draw = self.calls
        return uniform_other(self.seed, draw, ex, self.n_classes)
