"""What every one-vs-all solver driver shares: the prepared training rows, the positives of each
label, turning a block's record arrays into record columns, and assembling pruned CSR weights."""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse as sp

from ...engine.sparse import prepare_rows, prune_block
from ...models.sparse import SparseModel

INT_FIELDS = frozenset({"iterations", "n_pos", "status", "nnz", "active_set", "cg_steps", "nnz_search", "rows_touched"})


class TrainingRows(NamedTuple):
    """The training matrix as the kernels take it (see engine.sparse.prepare_rows)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    colsum: np.ndarray


def training_rows(X: sp.spmatrix, normalize: bool, bias: float, order: np.ndarray | None = None) -> TrainingRows:
    """Rows L2-normalised if asked, a bias column of value `bias` appended if > 0, unsigned
    indices; in the given order if any (row r is X's row order[r])."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    if order is None:
        return TrainingRows(*prepare_rows(X.indptr, X.indices, X.data, X.shape[1], normalize, float(bias)))
    return TrainingRows(*prepare_rows(X.indptr, X.indices, X.data, X.shape[1], normalize, float(bias), order))


def by_length(X: sp.spmatrix) -> np.ndarray:
    """The rows of X ordered by their number of non-zeros (stable). Rows of equal length in a
    row give the kernels' loops over a row the same trip count row after row, which the branch
    predictor learns: on Delicious (rows of 1 to 25 entries) the Newton engine runs about a third
    faster on rows in this order (BENCHMARKS.md, "Where the time goes")."""
    X = sp.csr_matrix(X)
    return np.argsort(np.diff(X.indptr), kind="stable")


def positives(Y: sp.spmatrix, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(pointer, rows): the training rows where each label is positive (Y in CSC), numbered as in
    training_rows(..., order) when an order is given."""
    Yc = sp.csc_matrix(Y, copy=order is not None)
    if order is not None:
        position = np.empty(order.size, Yc.indices.dtype)
        position[order] = np.arange(order.size, dtype=Yc.indices.dtype)
        Yc.indices = position[Yc.indices]
        Yc.has_sorted_indices = False
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


def prepare_problem(X: sp.spmatrix, Y: sp.spmatrix, normalize: bool, bias: float, order_rows: bool = False) -> Problem:
    """Check X and Y and prepare them; refuses what no one-vs-all solver can train (mismatched
    rows, no rows, no labels). order_rows: the rows in `by_length` order (for solvers whose
    result does not depend on the order of the rows, such as the Newton engine's)."""
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    if X.shape[0] == 0 or Y.shape[1] == 0:
        raise ValueError(f"nothing to train: {X.shape[0]} rows, {Y.shape[1]} labels")
    order = by_length(X) if order_rows else None
    rows = training_rows(X, normalize, bias, order)
    dim = rows.colsum.shape[0]
    pos_ptr, pos_rows = positives(Y, order)
    return Problem(X.shape[0], X.shape[1], Y.shape[1], rows, dim, pos_ptr, pos_rows, np.diff(pos_ptr),
                   dim - 1 if bias > 0 else -1)


def problem_data(X: sp.spmatrix, Y: sp.spmatrix, build: Callable, args: tuple, *, normalize: bool, bias: float,
                 order_rows: bool, labels: np.ndarray | None = None):
    """A kernel's data made from X and Y as a driver makes it: build(prepare_problem(...), *args), on
    Y's columns `labels` when the driver trains a label sample (label_sample.sample_columns).
    What a Dask worker runs on the rows it read itself (dask_backend.DataRecipe), so that its data
    is the driver's, array for array."""
    if labels is not None:
        Y = sp.csr_matrix(Y)[:, labels].tocsr()
    return build(prepare_problem(X, Y, normalize, bias, order_rows), *args)


def begin_recording(recorder, *, run: str, solver: str, params: dict, n_threads: int, problem: Problem,
                    iter_fields: tuple[str, ...], label_fields: tuple[str, ...]) -> None:
    """The `begin` record every driver sends: what runs on what, and which fields follow."""
    recorder.begin({"run": run, "solver": solver, "params": params, "threads": n_threads, "n": problem.n,
                    "n_features": problem.n_features, "n_labels": problem.n_labels,
                    "iter_fields": list(iter_fields), "label_fields": list(label_fields)})


def finish_model(result: "BlockResult", *, problem: Problem, solver: str, params: dict, bias: float,
                 normalize: bool, iterations_name: str, seconds: float, n_threads: int, compile_seconds: float = 0.0,
                 recorder=None) -> SparseModel:
    """The model of a finished block loop, its training summary (training and, apart, the kernels'
    warm-up seconds), and the sink's `end` record."""
    info = {"train_seconds": seconds, "compile_seconds": compile_seconds, iterations_name: result.iterations, "threads": n_threads, "n_train": problem.n,
            **result.info}
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


BLOCK_BUDGET = 64 * 2**20  # bytes of weights and records one block may hold


def labels_within_budget(dim: int, rec_len: int, n_fields: int, budget: int = BLOCK_BUDGET) -> int:
    """The most labels whose weights and records fit in `budget` bytes (at least one)."""
    return max(1, budget // (8 * (dim + rec_len * n_fields)))


def block_size(n_labels: int, dim: int, rec_len: int, n_fields: int, n_threads: int,
               budget: int = BLOCK_BUDGET) -> int:
    """Labels per block: within a memory budget for weights and records, and at least ten blocks'
    worth of progress reports on large problems."""
    within = labels_within_budget(dim, rec_len, n_fields, budget)
    return int(max(1, min(n_labels, within, max(-(-n_labels // 10), 64 * n_threads))))


class BlockPlan(NamedTuple):
    """How a block's arrays become its output: sizes, record fields, pruning (small and picklable,
    so a Dask task carries it; the data the kernel reads travels apart)."""

    n_features: int
    dim: int
    rec_len: int
    iter_fields: tuple[str, ...]
    label_fields: tuple[str, ...]
    converged: int
    first_iteration: int
    bias_index: int
    prune_threshold: float
    label_extras: Callable[[dict], dict] | None = None


class BlockOutput(NamedTuple):
    """A trained block: its labels in increasing order, their pruned weight rows and bias weights,
    the Newton/outer iterations they took, and their records (None when recording is off)."""

    labels: np.ndarray
    weights: sp.csr_matrix
    bias_weights: np.ndarray
    iterations: int
    iteration_records: dict | None
    label_records: dict | None

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the block carries (what a Dask task sends back)."""
        arrays = [self.labels, self.weights.data, self.weights.indices, self.weights.indptr, self.bias_weights]
        for cols in (self.iteration_records, self.label_records):
            arrays += list(cols.values()) if cols else []
        return int(sum(np.asarray(a).nbytes for a in arrays))


def solve_block(solve: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None], labels: np.ndarray,
                plan: BlockPlan, record: bool) -> BlockOutput:
    """Train one block (labels ordered heaviest first) with solve(labels, W, rec, summ) into fresh
    arrays, prune its weights and turn its arrays into record columns. The same code runs in a
    threads run and inside a Dask task."""
    W = np.zeros((labels.size, plan.dim))
    rec = np.zeros((labels.size, plan.rec_len, len(plan.iter_fields)))
    summ = np.zeros((labels.size, len(plan.label_fields)))
    solve(labels, W, rec, summ)
    order = np.argsort(labels)
    counts, indices, values = prune_block(W, order, plan.n_features, plan.prune_threshold)
    piece = sp.csr_matrix((values, indices, np.concatenate([[0], np.cumsum(counts)])),
                          shape=(labels.size, plan.n_features))
    bias = W[order, plan.bias_index] if plan.bias_index >= 0 else np.zeros(labels.size)
    iteration_records = label_records = None
    if record:
        iteration_records = iteration_columns(labels, summ, rec, plan.iter_fields, plan.first_iteration)
        label_records = label_columns(labels, summ, plan.label_fields, plan.converged)
        if plan.label_extras is not None:
            label_records = plan.label_extras(label_records)
    return BlockOutput(labels[order], piece, bias, int(summ[:, 0].sum()), iteration_records, label_records)


TASK_FIELDS = ("task", "worker", "start", "end", "labels", "seconds", "bytes")


class BlockCollector:
    """The driver's side of a block loop, the same for threads and Dask: each finished block's
    records and telemetry go to the sink (the run store's single writer), its weights to
    on_block(labels, weights, bias_weights), progress(done, total) is called, and the pieces are
    kept to assemble the model."""

    def __init__(self, n_labels: int, n_features: int, done: int, *, recorder=None,
                 progress: Callable[[int, int], None] | None = None,
                 on_block: Callable[[np.ndarray, sp.csr_matrix, np.ndarray], None] | None = None) -> None:
        self.n_labels, self.n_features, self.done = n_labels, n_features, done
        self.recorder, self.progress, self.on_block = recorder, progress, on_block
        self.labels: list[np.ndarray] = []
        self.rows: list[sp.csr_matrix] = []
        self.bias_weights = np.zeros(n_labels)
        self.iterations = 0

    def add(self, out: BlockOutput, task: dict | None = None) -> None:
        """Keep and record one block; `task` is its telemetry (TASK_FIELDS, one value each)."""
        self.labels.append(out.labels)
        self.rows.append(out.weights)
        self.bias_weights[out.labels] = out.bias_weights
        self.iterations += out.iterations
        if self.recorder is not None:
            if out.iteration_records is not None:
                self.recorder.write("iteration", out.iteration_records)
                self.recorder.write("label", out.label_records)
            if task is not None:
                self.recorder.write("task", {k: np.array([task[k]]) for k in TASK_FIELDS})
        if self.on_block is not None:
            self.on_block(out.labels, out.weights, out.bias_weights)
        self.done += out.labels.size
        if self.progress is not None:
            self.progress(int(self.done), self.n_labels)

    def result(self, info: dict | None = None) -> "BlockResult":
        return BlockResult(assemble_rows(self.labels, self.rows, self.n_labels, self.n_features), self.bias_weights,
                           self.iterations, info or {})


def labels_to_train(n_labels: int, skip: np.ndarray | None) -> np.ndarray:
    """Every label, less those in `skip` (already trained by an earlier session of the run)."""
    todo = np.arange(n_labels, dtype=np.int64)
    return np.setdiff1d(todo, skip) if skip is not None and len(skip) else todo


class BlockResult(NamedTuple):
    """What a block loop produced: pruned weights, bias weights, total iterations, and what the
    loop adds to the model's info (a Dask run: its cluster and scatter time)."""

    weights: sp.csr_matrix
    bias_weights: np.ndarray
    iterations: int
    info: dict


def data_nbytes(data) -> int:
    """Bytes of the arrays in a kernel's data (nested tuples of arrays and scalars): what a Dask
    run sends to every worker."""
    if isinstance(data, np.ndarray):
        return int(data.nbytes)
    if isinstance(data, tuple):
        return sum(data_nbytes(x) for x in data)
    return 8
