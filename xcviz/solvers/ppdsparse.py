"""PPDSparse driver: parameters, the block loop around the dual active-set kernel, records, the model.

The model keeps w(alpha) exactly as the solver found it: the l1 term already makes it sparse, so
there is no pruning step (prune_threshold 0 by default).
"""
from __future__ import annotations

import time
from functools import partial
from typing import NamedTuple

import numpy as np
import param
import scipy.sparse as sp

from ..engine import ppdsparse as K
from ..engine.threads import using_threads
from ..models.sparse import SparseModel
from ._onevsall.label_sample import note_sample, sample_columns
from ._onevsall.run import run_blocks, warm_up
from ._onevsall.blocks import Problem, TrainingRows, begin_recording, finish_model, prepare_problem, problem_data
from ._driver import one_vs_all
from .params import label_sample_param, param_dict

LOSSES = ("squared_hinge", "hinge")
# the per-label bounds with_bounds adds to the kernel's label fields
BOUND_FIELDS = ("alpha_bound", "w_bound", "alpha_bound_strict", "w_bound_strict")
# the records' fields the dashboard's field table (app.ui.fields) draws no plot of: axes, keys, norms, bounds
UNPLOTTED = ("wall", "iterations", "n_pos", "alpha_l1", "w_l1", "status", *BOUND_FIELDS)


class PPDSparseParams(param.Parameterized):
    """Parameters of PPDSparse (Yen et al., KDD 2017); defaults from the paper but lam (measured, issue #38)."""

    lam = param.Number(default=0.1, bounds=(0.0, 100.0), doc=(
        "l1 weight lambda of the elastic net (the bias is never l1-penalised); 0 gives the plain L2 SVM. "
        "0.1, not the paper's 0.01: on Bibtex, Delicious, debian-tags and the EURLex-4K generator it gave "
        "P@1/3/5 within 0.12 points of 0.01's or better and 0.31-0.85x its non-zeros in about the same time "
        "(docs/families/ppdsparse.md)."))
    tau = param.Number(default=1.0, bounds=(1e-6, 1e6), doc="l2 weight tau: 0.5*tau*||w||^2.")
    C = param.Number(default=1.0, bounds=(1e-6, 1e6), doc=(
        "Weight of the loss. The squared hinge is LIBLINEAR's max(0, 1 - m)^2; the paper's Section 5.2 "
        "writes 0.5 max(0, 1 - m)^2 with no C, so C = 0.5 gives the paper's objective (C = 1 weighs the "
        "loss twice as much as the paper)."))
    loss = param.Selector(default="squared_hinge", objects=list(LOSSES), doc=(
        "hinge max(0, 1 - m) or squared hinge max(0, 1 - m)^2 (the paper's Section 5.2 finds it better)."))
    kappa = param.Integer(default=1000, bounds=(1, 10**7), doc=(
        "Rows added to the active set per outer iteration (the paper gives no default; of 10, 100, 300 and "
        "1000, 1000 was fastest on Delicious and within 20% of the best on Bibtex)."))
    passes = param.Integer(default=3, bounds=(1, 10000), doc="S: coordinate-descent passes over the active set.")
    draws = param.Integer(default=0, bounds=(0, 10**8), doc=(
        "R: samples of the random sparsification of w used in the search (Algorithm 3); 0 searches with the "
        "exact w. With ||w||_1 known, R = 2||w||_1^2 / delta^2 bounds the search error by delta (Theorem 4.1). "
        "It pays when w has many more non-zeros than R (large D); on Bibtex the exact search is faster."))
    x_threshold = param.Number(default=0.0, bounds=(0.0, 1e6), doc=(
        "Two-level sparsification (Section 5.3): the search skips entries of X below this magnitude "
        "(columns are sorted by magnitude); 0 turns it off."))
    eps = param.Number(default=0.1, bounds=(1e-10, 10.0), doc=(
        "Stop when an exact search finds no row with dual gradient below -eps and the last coordinate pass "
        "saw no projected gradient above eps (0.1, LIBLINEAR's default for its dual solvers)."))
    max_iter = param.Integer(default=200, bounds=(1, 100000), doc="Outer iterations per label, at most.")
    bias = param.Number(default=1.0, bounds=(0.0, 1000.0), doc="Value of the bias feature; 0 means no bias.")
    normalize = param.Boolean(default=True, doc="L2-normalise every row before training and prediction.")
    prune_threshold = param.Number(default=0.0, bounds=(0.0, 100.0), doc=(
        "Feature weights with |w| below this are dropped after training (0: keep the solver's exact support)."))
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="Seed of the random passes and draws (per label: seed + label).")
    label_sample = label_sample_param()


def _columns(X: sp.csr_matrix, by_magnitude: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X in CSC, each column's entries sorted by decreasing |x_ij| when by_magnitude: the two-level
    search (x_threshold > 0) stops a column at its first entry below the threshold; without one the
    search reads whole columns in any order, and the sort (8 s of 13 s of set-up at 150,000 rows of
    Amazon-670K's shape) is skipped."""
    Xc = sp.csc_matrix(X)
    if not by_magnitude:
        return Xc.indptr.astype(np.int64), Xc.indices.astype(np.int64), Xc.data
    col_of = np.repeat(np.arange(Xc.shape[1]), np.diff(Xc.indptr))
    order = np.lexsort((-np.abs(Xc.data), col_of))
    return Xc.indptr.astype(np.int64), Xc.indices[order].astype(np.int64), Xc.data[order]


def paper_bounds(n_pos: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """The bounds as the paper states them: ||alpha||_1 <= 4 n_p (Thm 3.3), ||w||_1 <= 2 n_p / lam (Thm 3.2)."""
    with np.errstate(divide="ignore"):
        return 4.0 * n_pos, np.where(lam > 0, 2.0 * n_pos / lam, np.inf)


def trivial_objective(n_pos: np.ndarray, n: int, p: PPDSparseParams) -> np.ndarray:
    """F of the trivial solution the proofs compare with: bias weight -1/bias (every margin -1), so
    F = 0.5*tau/bias^2 + C * n_p * loss(-1); without a bias, w = 0 and F = C * n.

    The theorems' bounds follow from it for any C, tau and loss: ||w||_1 <= F / lam and
    ||alpha||_1 <= 2 F; with the paper's C = tau = 1, bias 1 and hinge, F = 0.5 + 2 n_p, where the
    paper writes 2 n_p."""
    if p.bias == 0:
        return np.full(n_pos.shape, p.C * n, dtype=float)
    loss_at_minus_one = 2.0 if p.loss == "hinge" else 4.0
    return 0.5 * p.tau / p.bias ** 2 + p.C * n_pos * loss_at_minus_one


class PPDSparseData(NamedTuple):
    """What every block's kernel reads (built by `ppdsparse_data`, by the driver and by each Dask
    worker from the rows it reads, or scattered to the workers when the fit was given arrays only)."""

    rows: TrainingRows
    rownorm2: np.ndarray
    columns: tuple       # X's columns (sorted by magnitude for the two-level search): pointer, rows, values
    pos_ptr: np.ndarray
    pos_rows: np.ndarray
    constants: tuple     # loss, C, lam, tau, kappa, passes, draws, x_threshold, eps, max_iter, bias_index, bias, seed
    record: bool


def ppdsparse_data(prob: Problem, search: bool, constants: tuple, record: bool) -> PPDSparseData:
    """The kernel's data of a prepared problem: its rows, their squared norms and X's columns
    (sorted by magnitude for the two-level search when `search`)."""
    n, rows = prob.n, prob.rows
    features = sp.csr_matrix((rows.data, rows.indices.astype(np.int64), rows.indptr.astype(np.int64)),
                             shape=(n, prob.dim))[:, :prob.n_features]
    rownorm2 = np.bincount(np.repeat(np.arange(n), np.diff(rows.indptr.astype(np.int64))), weights=rows.data ** 2,
                           minlength=n)
    return PPDSparseData(rows, rownorm2, _columns(features, search), prob.pos_ptr, prob.pos_rows, constants, record)


def ppdsparse_block(data: PPDSparseData, labels: np.ndarray, W: np.ndarray, rec: np.ndarray, summ: np.ndarray, *,
                    n_threads: int, t0_ns: int) -> None:
    """Train one block of labels on n_threads numba threads (records' wall clock from t0_ns)."""
    K.train_block(data.rows, data.rownorm2, K.Columns(*data.columns), K.Positives(data.pos_ptr, data.pos_rows),
                  labels, K.Settings(*data.constants), t0_ns, data.record, n_threads, W, rec, summ)


def with_bounds(cols: dict, *, n: int, lam: float, tau: float, C: float, loss: str, bias: float) -> dict:
    """A block's label records with the paper's bounds and the strict ones (see trivial_objective)."""
    p = PPDSparseParams(lam=lam, tau=tau, C=C, loss=loss, bias=bias)
    n_pos_block = cols["n_pos"].astype(float)
    cols["alpha_bound"], cols["w_bound"] = paper_bounds(n_pos_block, lam)
    trivial = trivial_objective(n_pos_block, n, p)
    cols["alpha_bound_strict"] = 2.0 * trivial
    cols["w_bound_strict"] = trivial / lam if lam > 0 else np.full(trivial.shape, np.inf)
    return cols


def fit_ppdsparse(X: sp.spmatrix, Y: sp.spmatrix, params: PPDSparseParams | None = None, **options) -> SparseModel:
    """Train one elastic-net linear classifier per label of Y by PPDSparse's dual active-set method.

    options as for fit_dismec."""
    threads, recorder, run, progress, cluster, background, phase = one_vs_all("ppdsparse", options)
    p = params or PPDSparseParams()
    compile_seconds = warm_up("ppdsparse", fit_ppdsparse, p, threads=threads, record=recorder is not None,
                              cluster=cluster, phase=phase)
    t_start = time.monotonic()
    t0_ns = time.monotonic_ns()
    n_labels = Y.shape[1]
    Y, labels = sample_columns(Y, p.label_sample)
    prob = prepare_problem(X, Y, p.normalize, p.bias)
    n = prob.n
    loss = K.SQUARED_HINGE if p.loss == "squared_hinge" else K.HINGE
    record = recorder is not None
    rec_len = p.max_iter if record else 1
    args = (p.x_threshold > 0, (loss, p.C, p.lam, p.tau, p.kappa, p.passes, p.draws, p.x_threshold, p.eps,
                                p.max_iter, prob.bias_index, float(p.bias), p.seed), record)
    data = ppdsparse_data(prob, *args)
    prepare = partial(problem_data, build=ppdsparse_data, args=args, normalize=p.normalize, bias=p.bias,
                      order_rows=False, labels=labels)

    with using_threads(threads) as n_threads:
        if record:
            begin_recording(recorder, run=run, solver="ppdsparse", params=param_dict(p), n_threads=n_threads,
                            problem=prob, iter_fields=K.ITER_FIELDS, label_fields=K.LABEL_FIELDS)
        extras = partial(with_bounds, n=n, lam=p.lam, tau=p.tau, C=p.C, loss=p.loss, bias=p.bias)
        result = run_blocks(ppdsparse_block, data, prob, cluster=cluster, n_threads=n_threads, t0_ns=t0_ns,
                            prepare=prepare,
                            iter_fields=K.ITER_FIELDS, label_fields=K.LABEL_FIELDS, converged=K.STATUS_CONVERGED,
                            first_iteration=1, prune_threshold=p.prune_threshold, rec_len=rec_len,
                            recorder=recorder, label_extras=extras, progress=progress, **background)
    model = finish_model(result, problem=prob, solver="ppdsparse", params=param_dict(p), bias=p.bias,
                         normalize=p.normalize, iterations_name="outer_iterations",
                         seconds=time.monotonic() - t_start - result.info.get("scatter_seconds", 0.0),
                         compile_seconds=compile_seconds, n_threads=n_threads, recorder=recorder)
    return note_sample(model, labels, n_labels)
