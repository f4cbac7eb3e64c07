"""DS-MLR: multinomial logistic regression in its doubly separable form, and its baselines.

Modes (the parameter Compare varies):
- `sync`: Algorithm 1 on numba threads: rows and classes in a fixed G x G grid, G inner epochs of
  disjoint (row block, class block) pairs per outer iteration, then phase B computes every b_i
  exactly. The model does not depend on the thread count (nor on the backend: the Dask run of
  `xcviz.solvers.dsmlr.distributed` gives the same model).
- `async`: Algorithm 2 (NOMAD-style), without a barrier: one thread per row block, the class
  blocks circulating through per-thread FIFO queues in a ring; a thread updates whichever block
  arrives, passes it on, refreshes its own b after every G blocks and steps with its own outer
  iteration's eta. The driver pauses the threads only to record (docs/families/dsmlr.md, "What
  async synchronises"). The model depends on the thread count (the row blocks and the queues are
  per thread); for a given thread count the workers' numbers do not depend on the scheduler (the
  ring keeps the blocks' order), but the recorded objectives do (where each thread was when
  paused), and a stopped run's model does.
- `lbfgs`: scipy's L-BFGS on the exact objective (2), with a parallel numba gradient.
- `lc`: the Log-Concavity baseline (Gopal & Yang): alternate the exact b with the K independent
  per-class problems at fixed b, each solved by truncated Newton (engine.newton's CG).

Preprocessing: rows L2-normalised (Theorem 1 assumes bounded rows), a bias feature of value
`bias` appended and regularised like every other weight. A multi-label row stands for one copy
per label (the objective is that of the replicated data set, N = number of copies) but keeps one
row and one b: the SGD steps of its copies are summed into one step, the same expected step at
1/n_i of the cost. Start: W = 0 and b_i = -log K, the exact b at W = 0; the paper's listings
initialise "b = 1/K", which is a_i = e^{b_i}, not b_i.

Step: eta_t = alpha / (N K sqrt(t)) in outer iteration t = 1, 2, ... (for `async`, each thread's
own t): alpha is the step one
epoch's N K updates add up to (the per-epoch equivalent), decaying as Theorem 1 assumes. One
update's step is alpha / (N sqrt(t)): the default alpha, min(1000, N / 2, N / (2 lam max n_i)),
keeps it at most 1/2 and the decay 1 - alpha lam n_i / N at least 1/2
(a fixed 1000 diverged below N = 1000, silently), and an SGD run whose objective rises above
DIVERGED times its start (log K) fails, after recording that outer iteration, naming a smaller
alpha.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import param
import scipy.sparse as sp
from scipy.optimize import minimize

from ...data.shards import Shards
from ...engine import dsmlr as K_
from ...models.sparse import SparseModel
from ..._util.memory_check import check_fits
from .._driver import Driver
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
                 *B_QUANTILES, *D_QUANTILES, "clipped", "accuracy", "macro_f1", "newton_steps", "cg_steps")
# one value per worker (the record's label is the worker)
WORKER_FIELDS = ("compute_seconds", "idle_seconds", "bytes_moved", "blocks", "queue_length")
ITER_FIELDS = SHARED_FIELDS + WORKER_FIELDS
# the records' fields the dashboard's field table (app.ui.fields) draws no plot of: axes, b's and d's
# quantiles, counts
UNPLOTTED = ("wall", "epoch", "eta", "surrogate", *B_QUANTILES, *D_QUANTILES, "clipped", "bytes_moved", "blocks",
             "newton_steps")


class DsmlrParams(param.Parameterized):
    """DS-MLR's parameters and those of its baselines."""

    mode = param.Selector(default="sync", objects=list(MODES), doc=(
        "sync: Algorithm 1 (G x G grid, deterministic); async: Algorithm 2 (NOMAD queues in a ring, no "
        "barrier; its model depends on the thread count); lbfgs: scipy L-BFGS on (2); lc: Log-Concavity (exact b, per-class Newton)."))
    lam = param.Number(default=1e-4, bounds=(1e-12, 1e3), doc="L2 regularisation lambda of (2).")
    alpha = param.Number(default=0.0, bounds=(0.0, 1e9), doc=(
        "Per-epoch step alpha = eta N K (eta = alpha / (N K)); outer iteration t uses alpha / sqrt(t). "
        "0: min(1000, N / 2, N / (2 lam max n_i)), one update's step alpha / N at most 1/2 and its decay at "
        "least 1/2 (N: rows, a multi-label row counted per label; n_i: a row's labels)."))
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


def step_alpha(p: DsmlrParams, n_total: int, most: int = 1) -> float:
    """The per-epoch step alpha a run uses: the given one, or for 0 min(ALPHA, N / 2, N / (2 lam
    most)), most the largest n_i: one update's step alpha / N at most 1/2 (at 1 the synthetic runs
    diverged from N = 1,600 on) and its decay 1 - alpha lam n_i / N at least 1/2, so that the
    default is never refused (it was at lam 0.5 on Bibtex, whose rows have up to 28 labels)."""
    return float(p.alpha) if p.alpha > 0 else min(ALPHA, n_total / 2, n_total / (2 * p.lam * most))


def _check(prob: Problem, p: DsmlrParams) -> None:
    """Refuse a problem with nothing to train, and an SGD step whose decay leaves (0, 1) (sync and
    async only: lbfgs and lc take no such step, issue 41)."""
    if prob.n_rows == 0 or prob.n_classes < 2:
        raise ValueError(f"nothing to train: {prob.n_rows} rows with a class, {prob.n_classes} classes "
                         "(DS-MLR needs at least 2)")
    if p.mode not in ("sync", "async"):
        return
    most = int(prob.weights.max())
    alpha = step_alpha(p, prob.n_total, most)
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


def cluster_refusal(p: DsmlrParams) -> str | None:
    """Why `p` cannot train on a Dask cluster (None if it can): checked before a cluster starts too,
    since a local cluster shut down as it came up could print tracebacks beside the refusal."""
    return None if p.mode == "sync" else f"dsmlr runs on a Dask cluster in mode 'sync' only, not {p.mode!r}"


class _Dsmlr(Driver):
    """DS-MLR's hooks on the driver skeleton: its problem, engine, outer iterations (or scipy's
    L-BFGS iterations), records (one row per worker) and model."""

    name = "dsmlr"
    iter_fields = ITER_FIELDS

    def warm_up(self) -> None:
        """A local run only: on Dask the kernels run in the workers' processes."""
        if self.options.cluster is None:
            settings = {**self.values, "epochs": 2, "optimum": None, "alpha": 0.0}  # no step too large for it
            self.warm((), DsmlrParams(**settings), multilabel=self.Y is None or sp.issparse(self.Y))

    def setup(self) -> None:
        p, X, Y, cluster = self.p, self.X, self.Y, self.options.cluster
        self.client = cluster[0] if isinstance(cluster, tuple) else cluster
        if self.client is not None and (refusal := cluster_refusal(p)):
            raise ValueError(refusal)
        self.shards = None
        if isinstance(X, Shards):  # read by the Dask workers; without a cluster, here
            if self.client is not None:
                self.shards, prob = X, Sizes.of(X, p.bias)
                if prob.n_rows == 0 or prob.n_classes < 2:
                    _check(prob, p)
            else:
                X, Y = X.X, X.Y
        if self.shards is None:
            prob = prepare(X, Y, p.normalize, p.bias)
            _check(prob, p)
        self.prob = prob
        validation = self.options.validation
        self.test_parts = validation if isinstance(validation, Shards) else None
        if self.test_parts is not None and not (self.client is not None and p.mode == "sync"):
            validation, self.test_parts = (self.test_parts.X, self.test_parts.Y), None
        val = None
        if validation is not None and self.test_parts is None:
            val = prepare(validation[0], validation[1], p.normalize, p.bias, dim=prob.dim, n_classes=prob.n_classes)
        self.evaluate = Evaluator(val)
        self.G = max(1, min(p.grid, prob.n_classes, prob.n_rows))
        n_classes = prob.n_classes
        copies = LBFGS_COPIES if p.mode == "lbfgs" else 2
        check_fits(f"DS-MLR's dense weights ({n_classes:,} classes x {prob.dim:,} features, {copies} copies in mode "
                   f"{p.mode!r})", copies * 8 * n_classes * prob.dim,
                   "train fewer classes or features, or a solver with a sparse model (dismec, ppdsparse, memoir)")
        self.st = State(np.zeros((n_classes, prob.dim)), np.ones(n_classes), np.full(prob.n_rows, -np.log(n_classes)))
        self.total = p.epochs

    def start(self) -> dict:
        p, prob = self.p, self.prob
        self.n_workers = self.n_threads
        if p.mode == "sync" and self.client is not None:
            self.engine = DaskSync(self.client, prob, self.G, p.seed, self.shards, (p.normalize, p.bias))
            self.n_workers = self.engine.n_workers
            if self.shards is not None:  # the rows' label counts are known now
                _check(prob, p)
            if self.test_parts is not None:
                self.evaluate = WorkerEvaluator(self.engine, self.test_parts, p.normalize, p.bias)
        elif p.mode == "sync":
            self.engine = ThreadSync(prob, self.G, self.n_threads, p.seed)
        self.alpha = step_alpha(p, prob.n_total, int(prob.weights.max()))
        if p.mode == "async":
            self.engine = ThreadAsync(prob, self.st, self.G, self.n_threads, p.seed, self.alpha / prob.n_total, p.lam,
                                      p.clip, p.epochs)
        elif p.mode != "sync":
            self.engine = None
        self.clipped = 0
        self.objective0 = self.objective = float(np.log(prob.n_classes))  # L1(0)
        # what the next record reads: epoch, step, objective, the b the step used (None: no gap), W, workers
        self.latest = {"epoch": 0, "eta": 0.0, "b_old": None, "W": self.st.W, "workers": {}, "extra": {"clipped": 0}}
        return {"n": prob.n_total, "n_rows": prob.n_rows, "n_features": prob.dim, "n_labels": prob.n_classes,
                "workers": self.n_workers}

    def steps(self) -> Iterator[int]:
        if self.p.mode == "async":
            return self._async_iterations()
        return self._lbfgs() if self.p.mode == "lbfgs" else self._outer_iterations()

    def _async_iterations(self) -> Iterator[int]:
        """Algorithm 2 with no barrier: the workers run on their own; a step ends once the slowest
        has finished one more outer iteration, when the driver pauses them all to record (the others
        may be further on; a driver that woke late finds more done, and its step counts them all),
        then resumes them. The record's `epoch` is the workers' mean progress in outer iterations."""
        prob, st, engine = self.prob, self.st, self.engine
        engine.start()
        t = 0
        try:
            while t < self.p.epochs:
                engine.wait_for(t + 1)
                workers = engine.pause()
                t = int(engine.epochs_done.min())
                extra = {"clipped": workers.pop("clipped")}
                self.clipped += extra["clipped"]
                with self.clock.measuring():  # the workers' own b; the exact one is a measurement
                    b_used = st.b.copy()
                    true = _phase_b(prob, st)
                self.objective = objective_parts(prob, st.V, st.scale, self.p.lam, st.b, true)
                eta = self.alpha / (prob.n_total * prob.n_classes * np.sqrt(t))  # the slowest worker's
                self.latest = {"epoch": engine.progress(), "eta": eta, "b_old": b_used, "W": st.W, "workers": workers,
                               "extra": extra}
                yield t
                engine.resume()
        finally:
            engine.close()

    def _outer_iterations(self) -> Iterator[int]:
        p, prob, n_classes = self.p, self.prob, self.prob.n_classes
        for t in range(1, p.epochs + 1):
            st = self.st
            eta = self.alpha / (prob.n_total * n_classes * np.sqrt(t))
            b_old = st.b.copy()
            if p.mode == "lc":
                steps, cg = np.zeros(n_classes, np.int64), np.zeros(n_classes, np.int64)
                W = st.W()
                K_.lc_classes(prob.indptr, prob.indices, prob.data, prob.lab_ptr, prob.lab_idx, st.b, W, p.lam,
                              p.lc_tol, p.lc_newton, self.n_threads, steps, cg)
                st = self.st = State(W, np.ones(n_classes), st.b)
                workers = {}
                extra = {"clipped": 0, "newton_steps": float(steps.mean()), "cg_steps": cg.sum() / max(steps.sum(), 1)}
                true = _phase_b(prob, st)
                b_used = b_old
            else:
                workers = self.engine.epoch(st, eta * n_classes, p.lam, p.clip)
                extra = {"clipped": workers.pop("clipped")}
                self.clipped += extra["clipped"]
                true = self.engine.phase_b(st)
                b_used = b_old
            self.objective = objective_parts(prob, st.V, st.scale, p.lam, st.b, true)
            self.latest = {"epoch": t, "eta": eta, "b_old": b_used, "W": st.W, "workers": workers, "extra": extra}
            yield t

    def after_step(self, step: int) -> None:
        if self.p.mode == "async":
            self.st.b[:] = self.latest["b_old"]  # the workers go on with their own b
        if self.p.mode in ("sync", "async"):
            try:
                _check_diverged(self.objective, self.objective0, step, self.alpha)
            except ValueError:
                self.finish()  # the paused async workers stop now, not when the steps are collected
                raise

    def _lbfgs(self) -> Iterator[int]:
        """scipy L-BFGS-B (unbounded) on (2); one record per iteration, epoch = gradient evaluations."""
        prob, st = self.prob, self.st
        fun = lbfgs_objective(prob, self.p.lam)
        evals = [0]

        def counted(w):
            evals[0] += 1
            return fun(w)

        def callback(intermediate_result):
            with self.clock.measuring():
                st.V[:] = intermediate_result.x.reshape(st.V.shape)
                _phase_b(prob, st)
            self.objective = float(intermediate_result.fun)
            self.latest = {"epoch": evals[0], "eta": 0.0, "b_old": None, "W": lambda: st.V, "workers": {}, "extra": {}}
            if not self.step_done(self.done + 1):
                raise StopIteration

        result = minimize(counted, st.V.ravel(), jac=True, method="L-BFGS-B", callback=callback,
                          options={"maxiter": self.p.epochs, "maxcor": LBFGS_MEMORY, "gtol": 1e-10, "ftol": 1e-14})
        st.V[:] = result.x.reshape(st.V.shape)
        _phase_b(prob, st)
        self.objective = float(result.fun)
        return iter(())

    def measure(self, step: int) -> dict:
        """The whole record is a measurement: the gap of b, the optimum's gap, the test metrics."""
        latest, prob, b_new = self.latest, self.prob, self.st.b
        row = {"epoch": latest["epoch"], "eta": latest["eta"], "objective": self.objective,
               **{k: float(np.quantile(b_new, q)) for k, q in B_QUANTILES.items()}}
        if latest["b_old"] is not None:
            gap, d = variational_gap(prob, latest["b_old"], b_new)
            row.update(variational_gap=gap, surrogate=self.objective + gap,
                       **{k: float(np.quantile(d, q)) for k, q in D_QUANTILES.items()})
        if self.p.optimum is not None:
            row["optimum_gap"] = (self.objective - self.p.optimum) / max(abs(self.p.optimum), 1e-300)
        row.update(latest["extra"])
        if self.evaluate.active:
            row.update(self.evaluate(latest["W"]))
        return row

    def write(self, row: dict) -> None:
        """One row per worker: the shared fields repeated, the worker fields its own."""
        n_workers, workers = self.n_workers, self.latest["workers"]
        cols = {k: np.full(n_workers, v, dtype=float) for k, v in row.items()
                if k not in WORKER_FIELDS and k not in ("iteration", "label")}
        for k in WORKER_FIELDS:
            cols[k] = np.asarray(workers.get(k, np.full(n_workers, np.nan)), dtype=float)
        cols["iteration"] = np.full(n_workers, row["iteration"])
        cols["label"] = np.arange(n_workers)
        self.recorder.write("iteration", cols)

    def finish(self) -> None:
        if self.engine is not None and hasattr(self.engine, "close"):
            self.engine.close()

    def model(self, info: dict) -> SparseModel:
        p, seconds, done = self.p, self.train_seconds, self.done
        W = self.st.folded()
        info.update({"mode": p.mode, "epochs_done": done, "epoch_seconds": seconds / max(done, 1),
                     "workers": self.n_workers, "grid": self.G, "n_train": self.prob.n_total,
                     "n_rows": self.prob.n_rows, "objective": float(self.objective), "clipped": self.clipped,
                     "alpha": self.alpha, "w_memory_mb": W.nbytes / 2**20})
        if isinstance(self.options.cluster, tuple):
            info.update(cluster=self.options.cluster[1].cluster,
                        cluster_start_seconds=self.options.cluster[1].cluster_start_seconds)
        bias_weights, weights = _model_weights(W, p.bias > 0)
        return SparseModel(weights=weights, bias_weights=bias_weights, bias=p.bias, normalize=p.normalize,
                           solver="dsmlr", params=self.values, info=info)


def fit_dsmlr(X: sp.spmatrix, Y, params: DsmlrParams | None = None, **options) -> SparseModel:
    """Train DS-MLR (or a baseline, by `mode`) on X (n x D) and Y (n x K 0/1 matrix or class ids),
    or on a sharded data set (X a data.shards.Shards, Y None): on a Dask cluster its workers read
    the parts and the driver never holds the rows; without one it is read here.

    options: those of solvers._driver.FitOptions (an unknown one raises TypeError). cluster: the
    (Client, ClusterInfo) of xcviz.compute.cluster (the run spec's `cluster`) or a bare
    dask.distributed Client, for `sync` on Dask (xcviz.solvers.dsmlr.distributed). validation:
    (X, Y) whose accuracy and macro-F1 are recorded, or sharded test parts (a Shards,
    `Shards.test_split`): evaluated on the workers of a Dask `sync`, else read here.
    progress(outer iterations done, all); stop() is asked between outer iterations (a stopped run
    returns the model so far)."""
    return _Dsmlr(X, Y, params or DsmlrParams(), **options).fit()


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
