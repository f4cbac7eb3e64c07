"""The margin-oracle contract: maximum-inner-product search over class vectors, excluding one class.

A multiclass solver asks, for each instance x of class y, for argmax_{c != y} w_c . x (the
"margin" class of the Crammer-Singer hinge). An oracle answers exactly or approximately and keeps
its index in step with the weights through `update(changed classes)`. The same objects serve plain
maximum-inner-product search over a fixed CSR matrix (`StaticVectors`, `exclude=None`).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np
import scipy.sparse as sp


class ClassVectors(Protocol):
    """Read access to C class vectors in R^D, all up to one common positive scale (so an argmax of
    inner products is unchanged). The solver's live weight store and `StaticVectors` both provide it."""

    n_classes: int
    n_features: int

    def rows(self, classes: np.ndarray) -> sp.csr_matrix:
        """The vectors of `classes` (int64), one CSR row each, in the order given."""

    def best_among(self, cand_indptr: np.ndarray, candidates: np.ndarray, indptr: np.ndarray,
                   indices: np.ndarray, data: np.ndarray, exclude: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact re-ranking: for query i (CSR row i of indptr/indices/data), the candidate in
        candidates[cand_indptr[i]:cand_indptr[i+1]] other than exclude[i] with the largest inner
        product (smallest class id on ties), and that product. -1 and -inf when there is none."""


class MarginOracle(Protocol):
    """What a multiclass solver needs from an oracle."""

    name: str

    def build(self, vectors: ClassVectors) -> None:
        """Index every class of `vectors` (kept by reference: `update` re-reads from it)."""

    def query(self, X: sp.csr_matrix, exclude: np.ndarray | None = None, draw: int | None = None) -> np.ndarray:
        """For every row x of X: a class c != exclude[i] with (approximately) the largest w_c . x.
        int64, one per row; exclude=None excludes nothing. `draw` numbers the random draw that
        salts the oracle's random choices (ties, random classes): None takes the oracle's next one
        (its call counter advances); a caller asking aside, such as a diagnostic, passes its own
        so that the main caller's draws, and so its run, stay the same."""

    def update(self, classes: np.ndarray) -> None:
        """Re-index `classes`, whose vectors changed since they were last indexed."""

    def rescale(self, factor: float) -> None:
        """Every class vector was multiplied by `factor` > 0 (a weight store folded its lazy scale
        into its rows): keep the index consistent without re-indexing every class."""
