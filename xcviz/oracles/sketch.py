"""Random projection of sparse vectors to a few dense dimensions, shared by the HNSW, SimpleLSH and
spherical-clustering oracles. The projection's entries are hashed from (feature, dimension, seed),
so nothing of size D x dim is ever stored: D can be 10^6."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..engine.mips import feature_signs, sketch_rows
from .arrays import csr_arrays


class Sketch:
    """x -> S x with S a dim x D Rademacher matrix / sqrt(dim) (inner products kept in expectation)."""

    def __init__(self, dim: int, n_features: int, seed: int) -> None:
        self.dim = int(dim)
        self.n_features = int(n_features)
        self.seed = int(seed) & 0x7FFFFFFFFFFFFFFF

    def __call__(self, X: sp.spmatrix) -> np.ndarray:
        """S x for every row of X, n x dim float64."""
        return sketch_rows(*csr_arrays(X, self.n_features), self.dim, self.seed)

    def signs(self, feature: int) -> np.ndarray:
        """The +-1 entries of S (unscaled) for one feature index, e.g. an appended coordinate."""
        return feature_signs(int(feature), self.dim, self.seed)
