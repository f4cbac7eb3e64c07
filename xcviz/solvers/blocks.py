"""What every one-vs-all solver driver shares: the prepared training rows, the positives of each
label, turning a block's record arrays into record columns, and assembling pruned CSR weights."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..engine.sparse import prepare_rows, prune_block

INT_FIELDS = frozenset({"iterations", "n_pos", "status", "nnz", "active_set", "cg_steps", "nnz_search"})


class TrainingRows(NamedTuple):
    """The training matrix as the kernels take it (see engine.sparse.prepare_rows)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    colsum: np.ndarray


def training_rows(X: sp.spmatrix, normalize: bool, bias: float) -> TrainingRows:
    """Rows L2-normalised if asked, a bias column of value `bias` appended if > 0, unsigned indices."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    return TrainingRows(*prepare_rows(X.indptr, X.indices, X.data, X.shape[1], normalize, float(bias)))


def positives(Y: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """(pointer, rows): the training rows where each label is positive (Y in CSC)."""
    Yc = sp.csc_matrix(Y)
    Yc.sort_indices()
    return Yc.indptr, Yc.indices


def label_columns(labels: np.ndarray, summ: np.ndarray, fields: tuple[str, ...], converged: int) -> dict:
    """Label records of a block: one row per label, `fields` from the summary array."""
    cols = {"label": labels.astype(np.int64)}
    for j, name in enumerate(fields):
        cols[name] = summ[:, j].astype(np.int64) if name in INT_FIELDS else summ[:, j]
    cols["converged"] = cols["status"] == converged
    return cols


def iteration_columns(labels: np.ndarray, summ: np.ndarray, rec: np.ndarray, fields: tuple[str, ...],
                      first: int) -> dict:
    """Iteration records of a block: rec[b, t] is iteration first + t of label b, which ran
    summ[b, 0] iterations (plus its starting point when first == 0)."""
    iters = summ[:, 0].astype(np.int64)
    mask = np.arange(rec.shape[1])[None, :] < (iters + (1 - first))[:, None]
    rows, its = np.nonzero(mask)
    values = rec[rows, its]
    cols = {"label": labels[rows].astype(np.int64), "iteration": its.astype(np.int64) + first}
    for j, name in enumerate(fields):
        cols[name] = values[:, j].astype(np.int64) if name in INT_FIELDS else values[:, j]
    return cols


class WeightPieces:
    """Collects each block's kept weights as CSR pieces and assembles the L x D matrix."""

    def __init__(self) -> None:
        self.counts, self.indices, self.values = [], [], []

    def add(self, W: np.ndarray, labels: np.ndarray, n_features: int, threshold: float) -> None:
        """Prune block W (rows = labels, in any order) and keep its rows in label order."""
        c, i, v = prune_block(W, np.argsort(labels), n_features, threshold)
        self.counts.append(c)
        self.indices.append(i)
        self.values.append(v)

    def matrix(self, n_labels: int, n_features: int) -> sp.csr_matrix:
        indptr = np.concatenate([[0], np.cumsum(np.concatenate(self.counts))])
        return sp.csr_matrix((np.concatenate(self.values), np.concatenate(self.indices), indptr),
                             shape=(n_labels, n_features))


def block_size(n_labels: int, dim: int, rec_len: int, n_fields: int, n_threads: int,
               budget: int = 64 * 2**20) -> int:
    """Labels per block: within a memory budget for weights and records, and at least ten blocks'
    worth of progress reports on large problems."""
    per_label = 8 * (dim + rec_len * n_fields)
    return int(max(1, min(n_labels, budget // per_label, max(-(-n_labels // 10), 64 * n_threads))))
