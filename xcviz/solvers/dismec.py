"""DiSMEC-style one-vs-all solver: parameters, the block loop around the Newton kernel, records.

The driver prepares the training rows once (L2 rows, bias column, unsigned indices), computes what
the initialisers need (mean instance, the all-negative solution for OvA-Primal), then trains labels
block by block on numba threads. After each block it prunes small weights into CSR pieces, hands
the block's records to the sink and reports progress.
"""
from __future__ import annotations

import time
from functools import partial
from typing import NamedTuple

import numpy as np
import param
import scipy.sparse as sp

from ..engine import newton as K
from ..engine.threads import using_threads
from ..models.sparse import SparseModel
from ._onevsall.label_sample import note_sample, sample_columns
from ._onevsall.run import run_blocks, warm_up
from ._onevsall.blocks import (Problem, TrainingRows, begin_recording, finish_model, prepare_problem, problem_data,
                               training_rows)
from ._driver import one_vs_all
from .params import label_sample_param, param_dict

INITS = ("zero", "bias", "ovap", "msi")
LOSSES = ("squared_hinge", "logistic")
# the records' fields the dashboard's field table (app.ui.fields) draws no plot of: axes, keys, counts
UNPLOTTED = ("wall", "grad_norm", "iterations", "n_pos", "objective_init", "grad_norm0", "status")
MSI_T = {"squared_hinge": -2.0, "logistic": -3.0}  # the MSI paper's target margin of the negatives per loss


class DismecParams(param.Parameterized):
    """Parameters of the one-vs-all truncated-CG Newton solver (LIBLINEAR `-s 2` / DiSMEC)."""

    init = param.Selector(default="msi", objects=list(INITS), doc=(
        "Starting point: zero; bias (only the bias weight set); ovap (OvA-Primal: the solution of "
        "the all-negative problem); msi (mean-separating: separates the positives' mean from the "
        "negatives' mean)."))
    loss = param.Selector(default="squared_hinge", objects=list(LOSSES), doc=(
        "Binary loss: squared hinge max(0, 1 - m)^2 (LIBLINEAR -s 2) or logistic log(1 + e^-m) (-s 0)."))
    C = param.Number(default=1.0, bounds=(1e-6, 1e6), doc="Weight of the loss against 0.5*||w||^2.")
    eps = param.Number(default=0.01, bounds=(1e-8, 10.0), doc=(
        "Stopping tolerance: ||g(w)|| <= eps * max(1, min(#pos, #neg)) / n * ||g(0)||."))
    max_iter = param.Integer(default=1000, bounds=(1, 100000), doc="Newton iterations per label, at most.")
    cg_eps = param.Number(default=0.5, bounds=(1e-6, 1.0), doc="Conjugate-gradient tolerance (LIBLINEAR eps_cg).")
    bias = param.Number(default=1.0, bounds=(0.0, 1000.0), doc=(
        "Value of the bias feature appended to every row (LIBLINEAR -B); 0 means no bias."))
    regularize_bias = param.Boolean(default=False, doc=(
        "Include the bias weight in the regulariser (off: LIBLINEAR -R, the DiSMEC++ default)."))
    normalize = param.Boolean(default=True, doc="L2-normalise every row before training and prediction.")
    prune_threshold = param.Number(default=0.01, bounds=(0.0, 100.0), doc=(
        "After training, feature weights with |w| below this are dropped (bias weights are kept)."))
    bias_weight = param.Number(default=-1.0, bounds=(-100.0, 100.0), doc=(
        "Starting bias weight of the bias initialiser; the paper's scaled variants are -0.9 and -2."))
    msi_s = param.Number(default=1.0, bounds=(-100.0, 100.0), doc="MSI target margin of the positives' mean.")
    msi_t = param.Number(default=None, allow_None=True, bounds=(-100.0, 100.0), doc=(
        "MSI target margin of the negatives' mean; unset = the paper's for the loss: -2 for the squared "
        "hinge, -3 for the logistic loss."))
    ovap_max_iter = param.Integer(default=1000, bounds=(1, 100000), doc=(
        "Newton iterations for the all-negative problem of OvA-Primal; a small value (e.g. 2) stops "
        "it early, which the paper recommends since its exact solution sits on the hinge."))
    ovap_regularize_bias = param.Boolean(default=True, doc=(
        "Regularise the bias weight in OvA-Primal's all-negative problem (15), whatever regularize_bias "
        "says for the labels: the paper's R[w] = 0.5||w||^2 covers the bias feature x_0, as LIBLINEAR "
        "(which Fang et al. built on) does without -R. With the bias free, any w with bias <= -1 and no "
        "features solves (15), and the start is the bias initialiser under another name."))
    label_sample = label_sample_param()


def preprocess(X: sp.spmatrix, p: DismecParams) -> sp.csr_matrix:
    """The training matrix the kernels see, as scipy CSR: rows normalised if asked, bias column appended."""
    rows = training_rows(X, p.normalize, p.bias)
    return sp.csr_matrix((rows.data, rows.indices.astype(np.int32), rows.indptr.astype(np.int64)),
                         shape=(X.shape[0], rows.colsum.shape[0]))


class DismecData(NamedTuple):
    """What every block's kernel reads: the prepared rows, the positives, the starting point and the
    solver's constants (built by `dismec_data`, by the driver and by each Dask worker from the rows it
    reads, or scattered to the workers when the fit was given arrays only)."""

    rows: TrainingRows
    dim: int
    pos_ptr: np.ndarray
    pos_rows: np.ndarray
    init_mode: int
    init_vec: np.ndarray
    constants: tuple     # loss, C, eps, cg_eps, max_iter, regularize_bias, bias_index, bias_weight, msi_s, msi_t
    record: bool


def dismec_data(prob: Problem, init_mode: int, init_vec: np.ndarray | None, constants: tuple,
                record: bool) -> DismecData:
    """The kernel's data of a prepared problem; init_vec None is the rows' column means (the start
    of init zero, bias and msi), made here from the rows, so a Dask task need not carry it."""
    return DismecData(prob.rows, prob.dim, prob.pos_ptr, prob.pos_rows, init_mode,
                      prob.rows.colsum / prob.n if init_vec is None else init_vec, constants, record)


def dismec_block(data: DismecData, labels: np.ndarray, W: np.ndarray, rec: np.ndarray, summ: np.ndarray, *,
                 n_threads: int, t0_ns: int) -> None:
    """Train one block of labels on n_threads numba threads (records' wall clock from t0_ns)."""
    rows = data.rows
    work = K.workspace(rows.indptr.shape[0] - 1, data.dim, int(rows.indptr[-1]), n_threads, rows.indices.dtype)
    K.train_block(rows, data.dim, K.Positives(data.pos_ptr, data.pos_rows), labels, data.init_mode, data.init_vec,
                  K.Settings(*data.constants), t0_ns, data.record, n_threads, W, rec, summ, work)


def ovap_start(rows, dim: int, bias_index: int, p: DismecParams, t0_ns: int = 0) -> np.ndarray:
    """OvA-Primal's starting vector: the solution of the all-negative problem (15) on the kernel's
    training rows (solvers._onevsall.blocks.training_rows), shared by every label."""
    loss = K.SQUARED_HINGE if p.loss == "squared_hinge" else K.LOGISTIC
    return K.train_all_negative(rows, dim, loss, p.C, p.eps, p.cg_eps, p.ovap_max_iter, p.ovap_regularize_bias,
                                bias_index, t0_ns)


def fit_dismec(X: sp.spmatrix, Y: sp.spmatrix, params: DismecParams | None = None, **options) -> SparseModel:
    """Train one Newton-solved linear classifier per label of Y (n x L) on X (n x D).

    options: those of solvers._driver.FitOptions (an unknown one raises TypeError). recorder: a
    sink (see xcviz.records.sinks) or None for recording off. progress(done, total) is called after
    every block of labels. cluster: None for numba threads here, or a (Client, ClusterInfo) pair
    from xcviz.compute.cluster.connect to train the blocks on Dask workers. skip, stop and
    on_block (solvers._onevsall.run.run_blocks) serve runs that can be cancelled and resumed."""
    threads, recorder, run, progress, cluster, background, phase = one_vs_all("dismec", options)
    p = params or DismecParams()
    if p.init == "bias" and p.bias == 0:
        raise ValueError("init='bias' needs a bias feature (bias > 0)")
    compile_seconds = warm_up("dismec", fit_dismec, p, threads=threads, record=recorder is not None, cluster=cluster,
                              phase=phase)
    t_start = time.monotonic()
    t0_ns = time.monotonic_ns()
    n_labels = Y.shape[1]
    Y, labels = sample_columns(Y, p.label_sample)
    prob = prepare_problem(X, Y, p.normalize, p.bias, order_rows=True)
    rows, dim, bias_index = prob.rows, prob.dim, prob.bias_index
    loss = K.SQUARED_HINGE if p.loss == "squared_hinge" else K.LOGISTIC
    msi_t = p.msi_t if p.msi_t is not None else MSI_T[p.loss]
    record = recorder is not None
    rec_len = p.max_iter + 1 if record else 1

    with using_threads(threads) as n_threads:
        if record:
            begin_recording(recorder, run=run, solver="dismec", params=param_dict(p), n_threads=n_threads,
                            problem=prob, iter_fields=K.ITER_FIELDS, label_fields=K.LABEL_FIELDS)
        if p.init == "ovap":
            init_mode = K.INIT_VECTOR
            init_vec = ovap_start(rows, dim, bias_index, p, t0_ns)
        else:
            init_mode = {"zero": K.INIT_ZERO, "bias": K.INIT_BIAS, "msi": K.INIT_MSI}[p.init]
            init_vec = None
        args = (init_mode, init_vec, (loss, p.C, p.eps, p.cg_eps, p.max_iter, p.regularize_bias, bias_index,
                                      p.bias_weight, p.msi_s, msi_t), record)
        data = dismec_data(prob, *args)
        prepare = partial(problem_data, build=dismec_data, args=args, normalize=p.normalize, bias=p.bias,
                          order_rows=True, labels=labels)
        result = run_blocks(dismec_block, data, prob, cluster=cluster, n_threads=n_threads, t0_ns=t0_ns,
                            prepare=prepare,
                            iter_fields=K.ITER_FIELDS, label_fields=K.LABEL_FIELDS, converged=K.STATUS_CONVERGED,
                            first_iteration=0, prune_threshold=p.prune_threshold, rec_len=rec_len,
                            recorder=recorder, progress=progress, **background)
    model = finish_model(result, problem=prob, solver="dismec", params=param_dict(p), bias=p.bias,
                         normalize=p.normalize, iterations_name="newton_iterations",
                         seconds=time.monotonic() - t_start - result.info.get("scatter_seconds", 0.0),
                         compile_seconds=compile_seconds, n_threads=n_threads, recorder=recorder)
    return note_sample(model, labels, n_labels)
