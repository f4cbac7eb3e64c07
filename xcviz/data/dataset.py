"""In-memory multi-label dataset: sparse features X and a sparse 0/1 label matrix Y.

Both matrices are kept in canonical CSR form (float64, sorted indices, no duplicates) so that
solvers can rely on that layout without re-checking it.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


def _canonical_csr(m) -> sp.csr_matrix:
    """Return `m` as canonical float64 CSR, copying only when the layout has to change."""
    out = sp.csr_matrix(m, dtype=np.float64)
    if not out.has_canonical_format:
        out = out.copy()
        out.sum_duplicates()
    return out


@dataclass
class Dataset:
    """Features `X` (n x D) and labels `Y` (n x L, all stored values 1.0) of n data points."""

    X: sp.csr_matrix
    Y: sp.csr_matrix
    name: str = ""
    path: str | None = None
    # a LIBSVM file's labels are arbitrary integers: the one of each column of Y (None: the columns
    # are the labels, as in XC files)
    label_values: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.X = _canonical_csr(self.X)
        self.Y = _canonical_csr(self.Y)
        if self.X.shape[0] != self.Y.shape[0]:
            raise ValueError(f"X has {self.X.shape[0]} rows but Y has {self.Y.shape[0]}")
        if np.any(self.Y.data != 1.0):
            Y = self.Y.copy()
            Y.eliminate_zeros()
            if np.any(Y.data != 1.0):
                raise ValueError("Y must be a 0/1 matrix (a label occurs at most once per row)")
            self.Y = Y

    @property
    def n(self) -> int:
        """Number of data points (rows)."""
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Number of feature columns D."""
        return self.X.shape[1]

    @property
    def n_labels(self) -> int:
        """Number of label columns L (including labels that never occur)."""
        return self.Y.shape[1]

    @property
    def is_multiclass(self) -> bool:
        """True when every row has exactly one label."""
        return bool(np.all(np.diff(self.Y.indptr) == 1))

    def label_stats(self) -> dict:
        """Summary statistics in the style of the Extreme Classification Repository tables."""
        per_row = np.diff(self.Y.indptr)
        per_label = np.bincount(self.Y.indices, minlength=self.n_labels)
        occurring = int(np.count_nonzero(per_label))
        n = self.n
        return {
            "n": n,
            "d": self.n_features,
            "l": self.n_labels,
            "avg_labels": self.Y.nnz / n if n else 0.0,
            "max_labels": int(per_row.max()) if n else 0,
            "avg_nnz": self.X.nnz / n if n else 0.0,
            "labels_occurring": occurring,
            "avg_points_per_label": self.Y.nnz / occurring if occurring else 0.0,
            "rows_without_labels": int(np.count_nonzero(per_row == 0)),
        }
