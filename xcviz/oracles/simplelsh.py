"""SimpleLSH margin oracle (Neyshabur & Srebro 2015), the LSH of MEMOIR-LSH.

Class vectors go through the asymmetric transform P(w) = [w/M, sqrt(1 - ||w/M||^2)] and queries
through Q(x) = [x/||x||, 0], which turns maximum inner product into maximum cosine; signed random
projections give each a `hash_bits`-bit code. A query's candidates are the `lsh_candidates` classes
nearest in Hamming distance (a popcount scan with a counting select: O(C) per query with a small
constant), re-ranked exactly. M is a running bound on the class norms, kept within a factor
(1 + lsh_norm_slack)^2 of the largest norm: when an update leaves that band, every code is
recomputed from the stored projections (O(C * bits), no re-reading of vectors; counted in `rehashes`).
"""
from __future__ import annotations

import numpy as np
import param
import scipy.sparse as sp

from ..engine.mips import hamming_nearest, sign_codes, simplelsh_codes
from .indexed import IndexedOracle
from .sketch import Sketch

CHUNK = 32


class SimpleLSHParams(param.Parameterized):
    """Parameters of the SimpleLSH margin oracle."""

    hash_bits = param.Integer(default=64, bounds=(8, 64), doc=(
        "Bits of each SimpleLSH code (signed random projections); MEMOIR's Table 4 uses 64."))
    lsh_candidates = param.Integer(default=100, bounds=(1, 100_000), doc=(
        "Classes nearest to the query's code in Hamming distance that are re-ranked exactly; more "
        "raises recall and costs one exact inner product each."))
    lsh_norm_slack = param.Number(default=0.1, bounds=(0.0, 10.0), doc=(
        "Head room of the norm bound M over the largest class norm: M = (1 + slack) * max norm, "
        "reset (and every code recomputed) when the largest norm exceeds M or falls below "
        "M / (1 + slack)^2."))


class SimpleLSHOracle(IndexedOracle):
    """Approximate margin oracle by SimpleLSH codes and Hamming ranking, exact re-ranking."""

    name = "simplelsh"

    def __init__(self, params: SimpleLSHParams | None = None, seed: int = 0, threads: int | None = None) -> None:
        super().__init__(params or SimpleLSHParams(), seed, threads)
        self.rehashes = 0

    def _index(self) -> None:
        p = self.params
        C = self.vectors.n_classes
        self._sketch = Sketch(p.hash_bits, self.vectors.n_features, self.seed)
        self._extra = self._sketch.signs(self.vectors.n_features)
        self._proj, self._norms = self._sketch_classes(np.arange(C, dtype=np.int64), self._sketch)
        self.rehashes = 0
        self._rehash()

    def _rehash(self) -> None:
        """A new bound M from the largest norm, and every code again."""
        top = float(self._norms.max())
        self.bound = (1.0 + self.params.lsh_norm_slack) * top if top > 0.0 else 1.0
        self._codes = simplelsh_codes(self._proj, self._norms, self._extra, self.bound)

    def _outside_band(self, top: float) -> bool:
        """Whether the largest norm left [M / (1 + slack)^2, M] (M = 1 while every vector is zero)."""
        if top == 0.0:
            return self.bound != 1.0
        return top > self.bound or top * (1.0 + self.params.lsh_norm_slack) ** 2 < self.bound

    def _reindex(self, classes: np.ndarray) -> None:
        proj, norms = self._sketch_classes(classes, self._sketch)
        self._proj[classes] = proj
        self._norms[classes] = norms
        if self._outside_band(float(self._norms.max())):
            self.rehashes += 1
            self._rehash()
        else:
            self._codes[classes] = simplelsh_codes(proj, norms, self._extra, self.bound)

    def _candidates(self, X: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
        queries = sign_codes(self._sketch(X))
        return hamming_nearest(queries, self._codes, self.params.lsh_candidates, CHUNK)
