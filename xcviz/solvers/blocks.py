"""What every one-vs-all solver driver shares: the prepared training rows, the positives of each
label, turning a block's record arrays into record columns, and assembling pruned CSR weights."""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..engine.sparse import prepare_rows, prune_block
from ..models import SparseModel

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


class Problem(NamedTuple):
    """A one-vs-all training problem as every driver's kernels take it."""

    n: int
    n_features: int
    n_labels: int
    rows: TrainingRows
    dim: int                # columns the kernels see: features, plus the bias column if any
    pos_ptr: np.ndarray
    pos_rows: np.ndarray
    n_pos: np.ndarray
    bias_index: int         # the bias column, or -1 without a bias


def prepare_problem(X: sp.spmatrix, Y: sp.spmatrix, normalize: bool, bias: float) -> Problem:
    """Check X and Y and prepare them; refuses what no one-vs-all solver can train (mismatched
    rows, no rows, no labels)."""
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    if X.shape[0] == 0 or Y.shape[1] == 0:
        raise ValueError(f"nothing to train: {X.shape[0]} rows, {Y.shape[1]} labels")
    rows = training_rows(X, normalize, bias)
    dim = rows.colsum.shape[0]
    pos_ptr, pos_rows = positives(Y)
    return Problem(X.shape[0], X.shape[1], Y.shape[1], rows, dim, pos_ptr, pos_rows, np.diff(pos_ptr),
                   dim - 1 if bias > 0 else -1)


def begin_recording(recorder, *, run: str, solver: str, params: dict, n_threads: int, problem: Problem,
                    iter_fields: tuple[str, ...], label_fields: tuple[str, ...]) -> None:
    """The `begin` record every driver sends: what runs on what, and which fields follow."""
    recorder.begin({"run": run, "solver": solver, "params": params, "threads": n_threads, "n": problem.n,
                    "n_features": problem.n_features, "n_labels": problem.n_labels,
                    "iter_fields": list(iter_fields), "label_fields": list(label_fields)})


def finish_model(result: "BlockResult", *, problem: Problem, solver: str, params: dict, bias: float,
                 normalize: bool, iterations_name: str, seconds: float, n_threads: int, recorder=None) -> SparseModel:
    """The model of a finished block loop, its training summary, and the sink's `end` record."""
    info = {"train_seconds": seconds, iterations_name: result.iterations, "threads": n_threads, "n_train": problem.n}
    model = SparseModel(weights=result.weights, bias_weights=result.bias_weights, bias=bias, normalize=normalize,
                        solver=solver, params=params, info=info)
    if recorder is not None:
        recorder.end({**info, "model_nnz": model.nnz})
    return model


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
        self.labels: list[np.ndarray] = []
        self.rows: list[sp.csr_matrix] = []

    def add(self, W: np.ndarray, labels: np.ndarray, n_features: int, threshold: float) -> sp.csr_matrix:
        """Prune block W (rows = labels, in any order); returns the block's rows in label order."""
        order = np.argsort(labels)
        counts, indices, values = prune_block(W, order, n_features, threshold)
        piece = sp.csr_matrix((values, indices, np.concatenate([[0], np.cumsum(counts)])),
                              shape=(labels.size, n_features))
        self.labels.append(labels[order])
        self.rows.append(piece)
        return piece

    def matrix(self, n_labels: int, n_features: int) -> sp.csr_matrix:
        """All labels' rows, in label order (labels never added stay empty)."""
        return assemble_rows(self.labels, self.rows, n_labels, n_features)


def assemble_rows(labels: list[np.ndarray], rows: list[sp.csr_matrix], n_labels: int, n_features: int) -> sp.csr_matrix:
    """The L x D matrix whose row labels[k][r] is rows[k][r]; rows not given are empty."""
    if not labels:
        return sp.csr_matrix((n_labels, n_features))
    order = np.concatenate(labels)
    stacked = sp.vstack(rows, format="csr")
    if order.size == n_labels and np.array_equal(order, np.arange(n_labels)):
        return stacked  # every label, already in order: no placement (and no extra copy) needed
    place = sp.csr_matrix((np.ones(order.size), (order, np.arange(order.size))), shape=(n_labels, order.size))
    out = (place @ stacked).tocsr()
    out.sort_indices()
    return out


def block_size(n_labels: int, dim: int, rec_len: int, n_fields: int, n_threads: int,
               budget: int = 64 * 2**20) -> int:
    """Labels per block: within a memory budget for weights and records, and at least ten blocks'
    worth of progress reports on large problems."""
    per_label = 8 * (dim + rec_len * n_fields)
    return int(max(1, min(n_labels, budget // per_label, max(-(-n_labels // 10), 64 * n_threads))))


class BlockResult(NamedTuple):
    """What a block loop produced: pruned weights, bias weights, total iterations."""

    weights: sp.csr_matrix
    bias_weights: np.ndarray
    iterations: int


def train_in_blocks(n_labels: int, n_features: int, dim: int, n_pos: np.ndarray, *,
                    solve: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None],
                    iter_fields: tuple[str, ...], label_fields: tuple[str, ...], converged: int,
                    first_iteration: int, bias_index: int, prune_threshold: float, n_threads: int,
                    rec_len: int, recorder=None, label_extras: Callable[[dict], dict] | None = None,
                    progress: Callable[[int, int], None] | None = None, skip: np.ndarray | None = None,
                    stop: Callable[[], bool] | None = None,
                    on_block: Callable[[np.ndarray, sp.csr_matrix, np.ndarray], None] | None = None) -> BlockResult:
    """The block loop every one-vs-all driver runs around its kernel.

    Labels go in blocks of consecutive indices, each ordered heaviest first (so that no worker is
    left with a head label at the end); solve(labels, W, rec, summ) trains one block into
    preallocated arrays. After each block the weights are pruned into CSR pieces, the records go to
    the sink (label_extras may add per-label columns) and progress(done, total) is called.

    For background runs: labels in `skip` (already trained) are left out, `stop()` is asked before
    every block (true: return with the labels trained so far), and on_block(labels, weights,
    bias_weights) receives each block's pruned rows, in increasing label order, to persist them."""
    todo = np.arange(n_labels, dtype=np.int64)
    if skip is not None and len(skip):
        todo = np.setdiff1d(todo, skip)
    block = block_size(n_labels, dim, rec_len, len(iter_fields), n_threads)
    pieces = WeightPieces()
    bias_weights = np.zeros(n_labels)
    iterations = 0
    done = n_labels - todo.size
    for start in range(0, todo.size, block):
        if stop is not None and stop():
            break
        labels = todo[start:start + block]
        labels = labels[np.argsort(-n_pos[labels], kind="stable")]
        W = np.zeros((labels.size, dim))
        rec = np.zeros((labels.size, rec_len, len(iter_fields)))
        summ = np.zeros((labels.size, len(label_fields)))
        solve(labels, W, rec, summ)
        iterations += int(summ[:, 0].sum())
        if bias_index >= 0:
            bias_weights[labels] = W[:, bias_index]
        piece = pieces.add(W, labels, n_features, prune_threshold)
        if recorder is not None:
            recorder.write("iteration", iteration_columns(labels, summ, rec, iter_fields, first_iteration))
            cols = label_columns(labels, summ, label_fields, converged)
            recorder.write("label", label_extras(cols) if label_extras else cols)
        if on_block is not None:
            ordered = np.sort(labels)
            on_block(ordered, piece, bias_weights[ordered])
        done += labels.size
        if progress is not None:
            progress(int(done), n_labels)
    return BlockResult(pieces.matrix(n_labels, n_features), bias_weights, iterations)
