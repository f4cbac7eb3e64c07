"""SimpleLSH margin oracle (Neyshabur & Srebro 2015), the LSH of MEMOIR-LSH.

Class vectors go through the asymmetric transform P(w) = [w/M, sqrt(1 - ||w/M||^2)] and queries
through Q(x) = [x/||x||, 0], which turns maximum inner product into maximum cosine; signed random
projections give each a `hash_bits`-bit code. A query's candidates are the `lsh_candidates` classes
nearest in Hamming distance, re-ranked exactly. By default every class is ranked (a popcount scan,
O(C) per query): the paper's method. `lsh_bands` > 0 is a faster option that is not the paper's:
banded multi-table LSH cuts the code into `lsh_bands` bands of `lsh_band_bits` bits, each band has
a bucket table (rebuilt by counting sort, O(C * bands), whenever codes change), and a query ranks
by full Hamming distance only the union of its buckets, a few hundred classes instead of C; it
cuts recall@1 several times (measured in docs/families/memoir.md and BENCHMARKS.md). M is a running bound on the class norms, kept within
a factor (1 + lsh_norm_slack)^2 of the largest norm: when an update leaves that band, every code is
recomputed from the stored projections (O(C * bits), no re-reading of vectors; counted in `rehashes`).
"""
from __future__ import annotations

import numpy as np
import param
import scipy.sparse as sp

from ..engine.mips import (
    band_tables,
    banded_nearest,
    hamming_nearest,
    sign_codes,
    simplelsh_codes,
)
from .indexed import IndexedOracle
from .norm_bound import norm_bound, outside_band
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
    lsh_bands = param.Integer(default=0, bounds=(0, 64), doc=(
        "0 (default, the paper's method): rank every class by Hamming distance (a popcount scan, O(C) "
        "per query). Otherwise the bands (hash tables) the code is cut into; a query ranks only the "
        "union of its buckets: faster, with a recall@1 several times lower at 8 bands of 8 bits. "
        "lsh_bands * lsh_band_bits must not exceed hash_bits."))
    lsh_band_bits = param.Integer(default=8, bounds=(1, 20), doc=(
        "Bits per band: a table has 2^bits buckets. More bits make buckets smaller (faster, lower "
        "recall per band)."))
    lsh_bucket_cap = param.Integer(default=0, bounds=(0, 10**8), doc=(
        "Buckets holding more classes than this are skipped (0 = 8 * lsh_candidates). The transform "
        "maps every class of small norm relative to M to nearly the same code, so the crowded "
        "buckets hold classes with small inner products. A query whose every bucket is crowded "
        "ranks `cap` members of its least crowded bucket (counted in the oracle's `crowded`); one "
        "whose buckets are all empty ranks every class (counted in `full_scans`)."))


class SimpleLSHOracle(IndexedOracle):
    """Approximate margin oracle by SimpleLSH codes and (banded) Hamming ranking, exact re-ranking.

    `rehashes` counts the recomputations of every code, `full_scans` the queries that ranked every
    class because their buckets were all empty or over the cap (both since the last build)."""

    name = "simplelsh"

    def __init__(self, params: SimpleLSHParams | None = None, seed: int = 0, threads: int | None = None) -> None:
        params = params or SimpleLSHParams()
        if params.lsh_bands * params.lsh_band_bits > params.hash_bits:
            raise ValueError(f"lsh_bands * lsh_band_bits = {params.lsh_bands} * {params.lsh_band_bits} exceeds "
                             f"hash_bits = {params.hash_bits}")
        super().__init__(params, seed, threads)
        self.rehashes = 0
        self.full_scans = 0
        self.crowded = 0
        self.calls = 0  # salts the order of Hamming ties, so that runs repeat exactly

    def _index(self) -> None:
        p = self.params
        C = self.vectors.n_classes
        self._sketch = Sketch(p.hash_bits, self.vectors.n_features, self.seed)
        self._extra = self._sketch.signs(self.vectors.n_features)
        self._proj, self._norms = self._sketch_classes(np.arange(C, dtype=np.int64), self._sketch)
        self.rehashes = 0
        self.full_scans = 0
        self.crowded = 0
        self._rehash()

    def _rehash(self) -> None:
        """A new bound M from the largest norm, and every code again."""
        self.bound = norm_bound(float(self._norms.max()), self.params.lsh_norm_slack)
        self._codes = simplelsh_codes(self._proj, self._norms, self._extra, self.bound)
        self._tabulate()

    def _tabulate(self) -> None:
        """The bucket tables of the current codes (nothing to do for a full scan)."""
        if self.params.lsh_bands:
            self._bucket_ptr, self._bucket_ids = band_tables(self._codes, self.params.lsh_bands,
                                                             self.params.lsh_band_bits)

    def _reindex(self, classes: np.ndarray) -> None:
        proj, norms = self._sketch_classes(classes, self._sketch)
        self._proj[classes] = proj
        self._norms[classes] = norms
        if outside_band(float(self._norms.max()), self.bound, self.params.lsh_norm_slack):
            self.rehashes += 1
            self._rehash()
        else:
            self._codes[classes] = simplelsh_codes(proj, norms, self._extra, self.bound)
            self._tabulate()

    def _candidates(self, X: sp.spmatrix, draw: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        if not self._norms.any():
            # Every class scores 0, so any class is exact: no candidates, and the base class answers
            # a hashed class per row. A full scan would answer class 0 for every row, and a solver's
            # first step would then pile every margin on it, whose norm would then set M and map
            # every other class to one code.
            return np.zeros(X.shape[0] + 1, np.int64), np.empty(0, np.int64)
        queries = sign_codes(self._sketch(X))
        if draw is None:
            self.calls += 1
            draw = self.calls
        salt = (self.seed * 0x9E3779B1 + draw) & 0x7FFFFFFFFFFFFFFF
        if not p.lsh_bands:
            return hamming_nearest(queries, self._codes, p.lsh_candidates, CHUNK, salt)
        k = min(p.lsh_candidates, self._codes.size)
        cand, counts, crowded = banded_nearest(queries, self._codes, self._bucket_ptr, self._bucket_ids, p.lsh_band_bits,
                                      p.lsh_bucket_cap or 8 * p.lsh_candidates, k, CHUNK, salt)
        self.crowded += int(crowded.sum())
        cand = cand.reshape(-1, k)
        empty = np.flatnonzero(counts == 0)
        if empty.size:
            self.full_scans += int(empty.size)
            cand[empty] = hamming_nearest(queries[empty], self._codes, k, CHUNK, salt)[1].reshape(-1, k)
            counts[empty] = k
        cand_ptr = np.zeros(counts.size + 1, np.int64)
        np.cumsum(counts, out=cand_ptr[1:])
        return cand_ptr, cand[np.arange(k) < counts[:, None]]
