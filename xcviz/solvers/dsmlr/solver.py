"""DS-MLR: multinomial logistic regression in its doubly separable form, and its baselines.

Modes (the parameter Compare varies):
- `sync`: Algorithm 1 on numba threads: rows and classes in a fixed G x G grid, G inner epochs of
  disjoint (row block, class block) pairs per outer iteration, then phase B computes every b_i
  exactly. The model does not depend on the thread count (nor on the backend: the Dask run of
  `xcviz.solvers.dsmlr.distributed` gives the same model).
- `async`: Algorithm 2 (NOMAD-style): class blocks circulate through per-thread queues; a thread
  refreshes its own b after seeing every class block. Not deterministic: the order in which
  blocks meet threads depends on the scheduler.
- `lbfgs`: scipy's L-BFGS on the exact objective (2), with a parallel numba gradient.
- `lc`: the Log-Concavity baseline (Gopal & Yang): alternate the exact b with the K independent
  per-class problems at fixed b, each solved by truncated Newton (engine.newton's CG).

Preprocessing: rows L2-normalised (Theorem 1 assumes bounded rows), a bias feature of value
`bias` appended and regularised like every other weight. A multi-label row stands for one copy
per label (the objective is that of the replicated data set, N = number of copies) but keeps one
row and one b: the SGD steps of its copies are summed into one step, the same expected step at
1/n_i of the cost. Start: W = 0 and b_i = -log K, the exact b at W = 0; the paper's listings
initialise "b = 1/K", which is a_i = e^{b_i}, not b_i.

Step: eta_t = alpha / (N K sqrt(t)) in outer iteration t = 1, 2, ...: alpha is the step one
epoch's N K updates add up to (the per-epoch equivalent), decaying as Theorem 1 assumes. One
update's step is alpha / (N sqrt(t)): the default alpha, min(1000, N / 2), keeps it at most 1/2
(a fixed 1000 diverged below N = 1000, silently), and an SGD run whose objective rises above
DIVERGED times its start (log K) fails, after recording that outer iteration, naming a smaller
alpha.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import param
import scipy.sparse as sp
from scipy.optimize import minimize

from ...data.shards import Shards
from ...engine import dsmlr as K_
from ...engine.threads import using_threads
from ...models.sparse import SparseModel
from ..._util.memory_check import check_fits
from ..params import param_dict
from ..warmup import code_paths, warm_once
from .distributed import DaskSync, Sizes, WorkerEvaluator
from .problem import Evaluator, Problem, State, objective_parts, prepare, splits, variational_gap
from .threads_backend import ThreadAsync, ThreadSync

MODES = ("sync", "async", "lbfgs", "lc")
LBFGS_MEMORY = 10  # L-BFGS-B's stored corrections (scipy's maxcor)
ALPHA = 1000.0  # the default per-epoch step on data with N >= 2,000 rows (smaller data: N / 2)
DIVERGED = 20.0  # an SGD run whose objective exceeds this multiple of its start (log K) has diverged
# W's copies at the peak, measured: data + 2 x W for sync, async and LC; 24 x W for L-BFGS-B at m = 10,
# its 2 m correction pairs and a few vectors besides (scipy reserves (2 m + 5) W-sized vectors, not all
# touched)
LBFGS_COPIES = 2 * LBFGS_MEMORY + 4
B_QUANTILES = {"b_p05": 0.05, "b_p50": 0.5, "b_p95": 0.95}
D_QUANTILES = {"d_p50": 0.5, "d_p95": 0.95, "d_max": 1.0}
# shared by every worker's row of an outer iteration
SHARED_FIELDS = ("wall", "seconds", "epoch", "eta", "objective", "surrogate", "variational_gap", "optimum_gap",
                 *B_QUANTILES, *D_QUANTILES, "clipped", "accuracy", "macro_f1")
# one value per worker (the record's label is the worker)
WORKER_FIELDS = ("compute_seconds", "idle_seconds", "bytes_moved", "blocks", "queue_length")
ITER_FIELDS = SHARED_FIELDS + WORKER_FIELDS


class DsmlrParams(param.Parameterized):
    """DS-MLR's parameters and those of its baselines."""

    mode = param.Selector(default="sync", objects=list(MODES), doc=(
        "sync: Algorithm 1 (G x G grid, deterministic); async: Algorithm 2 (NOMAD queues, not "
        "deterministic); lbfgs: scipy L-BFGS on (2); lc: Log-Concavity (exact b, per-class Newton)."))
    lam = param.Number(default=1e-4, bounds=(1e-12, 1e3), doc="L2 regularisation lambda of (2).")
    alpha = param.Number(default=0.0, bounds=(0.0, 1e9), doc=(
        "Per-epoch step alpha = eta N K (eta = alpha / (N K)); outer iteration t uses alpha / sqrt(t). "
        "0: min(1000, N / 2), one update's step alpha / N at most 1/2 (N: rows, a multi-label row counted "
        "per label)."))
    epochs = param.Integer(default=20, bounds=(1, 10**5), doc=(
        "Outer iterations T (sync, async: epochs over all N K pairs; lc: b/W alternations; lbfgs: iterations)."))
    grid = param.Integer(default=16, bounds=(1, 4096), doc=(
        "G of the G x G grid of sync (row blocks x class blocks), independent of the thread count; "
        "async uses G class blocks over one row block per thread. At most K and N."))
    clip = param.Number(default=20.0, bounds=(1.0, 700.0), doc=(
        "Exponents w_k.x_i + b_i above this are clipped in the SGD steps (a stale b can make them large); "
        "clips are counted in the records."))
    lc_newton = param.Integer(default=5, bounds=(1, 1000), doc="lc: Newton steps per class and outer iteration, at most.")
    lc_tol = param.Number(default=0.1, bounds=(1e-12, 1.0), doc=(
        "lc: a class's Newton stops when its gradient norm falls below this fraction of its starting one."))
    normalize = param.Boolean(default=True, doc="L2-normalise every row (Theorem 1 assumes ||x|| <= r).")
    bias = param.Number(default=1.0, bounds=(0.0, 1e3), doc="Value of the regularised bias feature (0 = none).")
    optimum = param.Number(default=None, allow_None=True, bounds=(-1e12, 1e12), doc=(
        "A reference optimum of (2), e.g. L-BFGS's: records then hold (L1 - optimum) / |optimum|."))
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="Seed of the row-block assignment and the shuffles.")


def step_alpha(p: DsmlrParams, n_total: int) -> float:
    """The per-epoch step alpha a run uses: the given one, or min(ALPHA, N / 2) for 0 (one update's
    step alpha / N at most 1/2: at 1 the synthetic runs diverged from N = 1,600 on)."""
    return float(p.alpha) if p.alpha > 0 else min(ALPHA, n_total / 2)


def _check(prob: Problem, p: DsmlrParams) -> None:
    if prob.n_rows == 0 or prob.n_classes < 2:
        raise ValueError(f"nothing to train: {prob.n_rows} rows with a class, {prob.n_classes} classes "
                         "(DS-MLR needs at least 2)")
    most = int(prob.weights.max())
    alpha = step_alpha(p, prob.n_total)
    if alpha / prob.n_total * p.lam * most >= 1.0:
        raise ValueError(f"the decay 1 - eta K lam n_i must stay in (0, 1): alpha * lam * {most} / N = "
                         f"{alpha * p.lam * most / prob.n_total:.3g} >= 1; lower alpha or lam")


def _check_diverged(objective: float, start: float, t: int, alpha: float) -> None:
    """Fail a run whose objective rose above DIVERGED times its start: its steps are too large for
    its data (the records up to here show the climb)."""
    if not objective <= DIVERGED * start:
        raise ValueError(f"DS-MLR diverged in outer iteration {t}: the objective rose to {objective:.4g} from "
                         f"{start:.4g} at the start; its step is too large for this data: try --set "
                         f"alpha={alpha / 10:.3g} (it was {alpha:.3g})")


def _warm_kernels(p: DsmlrParams, threads: int | None, multilabel: bool, recording: bool, validating: bool) -> None:
    """Compile (or load from numba's cache) the kernels a local run of these settings calls, its
    records' included, on a tiny problem before the clock starts (see solvers.warmup)."""
    from ...data.synthetic import generate
    from ...records.sinks import NullSink

    def tiny_fit() -> None:
        tiny = generate(60, 40, 12, multiclass=not multilabel, avg_labels=2, avg_nnz=6, seed=0)
        settings = {**param_dict(p), "epochs": 2, "optimum": None, "alpha": 0.0}  # no step too large for it
        fit_dsmlr(tiny.X, tiny.Y, DsmlrParams(**settings), threads=threads,
                  recorder=NullSink() if recording else None, validation=(tiny.X, tiny.Y) if validating else None)

    warm_once(("dsmlr", code_paths(p), multilabel, recording, validating), tiny_fit)


def fit_dsmlr(X: sp.spmatrix, Y, params: DsmlrParams | None = None, *, threads: int | None = None, recorder=None,
              run: str = "run", progress: Callable[[int, int], None] | None = None,
              stop: Callable[[], bool] | None = None, validation=None, client=None, cluster=None,
              **_background) -> SparseModel:
    """Train DS-MLR (or a baseline, by `mode`) on X (n x D) and Y (n x K 0/1 matrix or class ids),
    or on a sharded data set (X a data.shards.Shards, Y None): with a Dask client its workers read
    the parts and the driver never holds the rows; without one it is read here.

    validation: (X, Y) whose accuracy and macro-F1 are recorded, or sharded test parts (a Shards,
    `Shards.test_split`): evaluated on the workers of a Dask `sync`, else read here. client: a
    dask.distributed Client for `sync` on Dask (xcviz.solvers.dsmlr.distributed); cluster: the (Client, ClusterInfo) of
    xcviz.compute.cluster (the run spec's `cluster`), the same. progress(outer iterations done, all);
    stop() is asked between outer iterations (a stopped run returns the model so far)."""
    p = params or DsmlrParams()
    if client is None and cluster is None:  # on Dask the kernels run in the workers' processes
        _warm_kernels(p, threads, Y is None or sp.issparse(Y), recorder is not None, validation is not None)
    t_start = time.monotonic()
    if cluster is not None:
        client = cluster[0]
    if client is not None and p.mode != "sync":
        raise ValueError(f"dsmlr runs on a Dask cluster in mode 'sync' only, not {p.mode!r}")
    shards = None
    if isinstance(X, Shards):  # read by the Dask workers; without a cluster, here
        if client is not None:

            shards, prob = X, Sizes.of(X, p.bias)
            if prob.n_rows == 0 or prob.n_classes < 2:
                _check(prob, p)
        else:
            X, Y = X.X, X.Y
    if shards is None:
        prob = prepare(X, Y, p.normalize, p.bias)
        _check(prob, p)
    test_parts = validation if isinstance(validation, Shards) else None
    if test_parts is not None and not (client is not None and p.mode == "sync"):
        validation, test_parts = (test_parts.X, test_parts.Y), None
    val = None
    if validation is not None and test_parts is None:
        val = prepare(validation[0], validation[1], p.normalize, p.bias, dim=prob.dim, n_classes=prob.n_classes)
    evaluate = Evaluator(val)
    G = max(1, min(p.grid, prob.n_classes, prob.n_rows))
    values = param_dict(p)
    n_classes = prob.n_classes
    copies = LBFGS_COPIES if p.mode == "lbfgs" else 2
    check_fits(f"DS-MLR's dense weights ({n_classes:,} classes x {prob.dim:,} features, {copies} copies in mode "
               f"{p.mode!r})", copies * 8 * n_classes * prob.dim,
               "train fewer classes or features, or a solver with a sparse model (dismec, ppdsparse, memoir)")
    st = State(np.zeros((n_classes, prob.dim)), np.ones(n_classes), np.full(prob.n_rows, -np.log(n_classes)))

    with using_threads(threads) as n_threads:
        n_workers = n_threads
        if p.mode == "sync" and client is not None:

            engine = DaskSync(client, prob, G, p.seed, shards, (p.normalize, p.bias))
            n_workers = engine.n_workers
            if shards is not None:  # the rows' label counts are known now
                _check(prob, p)
            if test_parts is not None:

                evaluate = WorkerEvaluator(engine, test_parts, p.normalize, p.bias)
        elif p.mode == "sync":
            engine = ThreadSync(prob, G, n_threads, p.seed)
        elif p.mode == "async":
            engine = ThreadAsync(prob, G, n_threads, p.seed)
        else:
            engine = None
        N = prob.n_total
        alpha = step_alpha(p, N)
        if recorder is not None:
            recorder.begin({"run": run, "solver": "dsmlr", "params": values, "threads": n_threads, "n": N,
                            "n_rows": prob.n_rows, "n_features": prob.dim, "n_labels": n_classes,
                            "workers": n_workers, "iter_fields": list(ITER_FIELDS), "label_fields": []})
        clock = {"measure": 0.0, "last": 0.0, "clipped": 0}

        def record(t: float, eta: float, objective: float, b_old, b_new, W, workers: dict, extra: dict,
                   iteration: int | None = None) -> None:
            t0 = time.monotonic()
            train_wall = t0 - t_start - clock["measure"]
            row = dict.fromkeys(ITER_FIELDS, np.nan)
            row.update(wall=train_wall, seconds=train_wall - clock["last"], epoch=t, eta=eta, objective=objective)
            row.update({k: float(np.quantile(b_new, q)) for k, q in B_QUANTILES.items()})
            if b_old is not None:
                gap, d = variational_gap(prob, b_old, b_new)
                row.update(variational_gap=gap, surrogate=objective + gap,
                           **{k: float(np.quantile(d, q)) for k, q in D_QUANTILES.items()})
            if p.optimum is not None:
                row["optimum_gap"] = (objective - p.optimum) / max(abs(p.optimum), 1e-300)
            row.update(extra)
            if evaluate.active:
                row.update(evaluate(W))
            clock["last"] = train_wall
            if recorder is not None:
                cols = {k: np.full(n_workers, v, dtype=float) for k, v in row.items() if k not in WORKER_FIELDS}
                for k in WORKER_FIELDS:
                    cols[k] = np.asarray(workers.get(k, np.full(n_workers, np.nan)), dtype=float)
                cols["iteration"] = np.full(n_workers, int(round(t)) if iteration is None else iteration)
                cols["label"] = np.arange(n_workers)
                recorder.write("iteration", cols)
            clock["measure"] += time.monotonic() - t0

        objective0 = float(np.log(n_classes))  # L1(0)
        if recorder is not None or evaluate.active:
            record(0, 0.0, objective0, None, st.b, st.W, {}, {"clipped": 0})
        cancelled, done = False, 0
        objective = objective0
        if p.mode == "lbfgs":
            objective, done, cancelled, st = _run_lbfgs(prob, p, st, record, progress, stop, clock, t_start)
        else:
            for t in range(1, p.epochs + 1):
                if stop is not None and stop():
                    cancelled = True
                    break
                eta = alpha / (N * n_classes * np.sqrt(t))
                b_old = st.b.copy()
                if p.mode == "lc":
                    steps = np.zeros(n_classes, np.int64)
                    W = st.W()
                    K_.lc_classes(prob.indptr, prob.indices, prob.data, prob.lab_ptr, prob.lab_idx, st.b, W, p.lam,
                                  p.lc_tol, p.lc_newton, n_threads, steps)
                    st = State(W, np.ones(n_classes), st.b)
                    workers = {}
                    extra = {"clipped": 0, "blocks": float(steps.sum())}
                    true = _phase_b(prob, st)
                    b_used = b_old
                else:
                    workers = engine.epoch(st, eta * n_classes, p.lam, p.clip)
                    extra = {"clipped": workers.pop("clipped")}
                    clock["clipped"] += extra["clipped"]
                    if p.mode == "async":  # the workers' own b; the exact one is a measurement
                        t0 = time.monotonic()
                        b_used = st.b.copy()
                        true = _phase_b(prob, st)
                        clock["measure"] += time.monotonic() - t0
                    else:
                        true = engine.phase_b(st)
                        b_used = b_old
                objective = objective_parts(prob, st.V, st.scale, p.lam, st.b, true)
                record(t, eta, objective, b_used, st.b, st.W, workers, extra)
                if p.mode != "lc":
                    _check_diverged(objective, objective0, t, alpha)
                if p.mode == "async":
                    st.b[:] = b_used  # the workers go on with their own b
                done = t
                if progress is not None:
                    progress(t, p.epochs)
        if engine is not None and hasattr(engine, "close"):
            engine.close()
    seconds = time.monotonic() - t_start - clock["measure"]
    W = st.folded()
    info = {"mode": p.mode, "train_seconds": seconds, "epochs_done": done, "epoch_seconds": seconds / max(done, 1),
            "threads": n_threads, "workers": n_workers, "grid": G, "n_train": N, "n_rows": prob.n_rows,
            "cancelled": cancelled, "objective": float(objective), "clipped": clock["clipped"], "alpha": alpha,
            "w_memory_mb": W.nbytes / 2**20}
    if cluster is not None:
        info.update(cluster=cluster[1].cluster, cluster_start_seconds=cluster[1].cluster_start_seconds)
    bias_weights, weights = _model_weights(W, p.bias > 0)
    model = SparseModel(weights=weights, bias_weights=bias_weights, bias=p.bias, normalize=p.normalize,
                        solver="dsmlr", params=values, info=info)
    if recorder is not None:
        recorder.end(info)
    return model


def _model_weights(W: np.ndarray, has_bias: bool) -> tuple[np.ndarray, sp.csr_matrix]:
    """(bias weights, feature weights as CSR with every entry stored) from the dense K x D' W,
    without a copy of W: the bias column is squeezed out in place, row after row (each row moves
    left, never over a row not yet moved), and the CSR values are a view of W's memory. W is
    unusable afterwards. The index array (int32) is the only new K x D array."""
    k, width = W.shape
    bias_weights = W[:, -1].copy() if has_bias else np.zeros(k)
    d = width - 1 if has_bias else width
    flat = W.reshape(-1)
    if has_bias:
        for r in range(k):
            flat[r * d:(r + 1) * d] = flat[r * width:r * width + d]
    indices = np.tile(np.arange(d, dtype=np.int32), k)
    return bias_weights, sp.csr_matrix((flat[:k * d], indices, np.arange(k + 1, dtype=np.int64) * d), shape=(k, d))


def _phase_b(prob: Problem, st: State) -> np.ndarray:
    """b exactly for st's W, in place (one class block: the numbers of a G = 1 grid)."""
    true = np.zeros(prob.n_rows)
    K_.exact_b(prob.indptr, prob.indices, prob.data, prob.lab_ptr, prob.lab_idx, np.array([0, prob.n_classes]),
               st.V, st.scale, max(1, min(64, prob.n_rows)), st.b, true)
    return true


def lbfgs_objective(prob: Problem, lam: float, n_blocks: int = 64) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """w (flattened K x D) -> (L1, gradient), by the parallel numba kernel."""
    class_ptr = splits(prob.n_classes, max(1, min(n_blocks, prob.n_classes)))
    chunks = max(1, min(64, prob.n_rows))

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        W = w.reshape(prob.n_classes, prob.dim)
        G = np.empty_like(W)
        value = K_.loss_gradient(prob.indptr, prob.indices, prob.data, prob.lab_ptr, prob.lab_idx, W, lam, class_ptr,
                                 chunks, G)
        return value, G.ravel()

    return fun


class _Stop(Exception):
    pass


def _run_lbfgs(prob, p, st, record, progress, stop, clock, t_start):
    """scipy L-BFGS-B (unbounded) on (2); one record per iteration, epoch = gradient evaluations."""
    fun = lbfgs_objective(prob, p.lam)
    evals = [0]

    def counted(w):
        evals[0] += 1
        return fun(w)

    state = {"iter": 0, "f": float(np.log(prob.n_classes)), "cancelled": False, "x": st.V.ravel()}

    def callback(intermediate_result):
        state["iter"] += 1
        state["f"] = float(intermediate_result.fun)
        state["x"] = intermediate_result.x
        t0 = time.monotonic()
        st.V[:] = intermediate_result.x.reshape(st.V.shape)
        _phase_b(prob, st)
        clock["measure"] += time.monotonic() - t0
        record(evals[0], 0.0, state["f"], None, st.b, lambda: st.V, {}, {}, iteration=state["iter"])
        if progress is not None:
            progress(state["iter"], p.epochs)
        if stop is not None and stop():
            state["cancelled"] = True
            raise StopIteration

    result = minimize(counted, st.V.ravel(), jac=True, method="L-BFGS-B", callback=callback,
                      options={"maxiter": p.epochs, "maxcor": LBFGS_MEMORY, "gtol": 1e-10, "ftol": 1e-14})
    st.V[:] = result.x.reshape(st.V.shape)
    _phase_b(prob, st)
    return float(result.fun), state["iter"], state["cancelled"], st
