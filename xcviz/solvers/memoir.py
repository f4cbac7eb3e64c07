"""MEMOIR: multiclass SVMs trained by mini-batch subgradient steps with an inexact margin.

Algorithm 1 (variant "l2") is Pegasos for the Crammer-Singer hinge: decay W by (1 - eta*lam),
move w_y towards and w_r away from every instance that violates the margin under the decayed W,
project onto the ball of radius 1/sqrt(lam). Algorithm 2 ("l1") drops the decay and
soft-thresholds the touched classes (eq. 13) when that changes ||W||_2 little (Theorem 3's
condition). Each follows the paper by default; `violation_test`, `truncation` and `batch_step`
name the alternatives (the test before the decay, truncation after every batch, a step divided
by the batch size).
The margin class r = argmax_{c != y} w_c.x comes from a pluggable oracle (xcviz.oracles), exact or
approximate; the diagnostics measure what the approximation costs (recall, margin error) against
the exact oracle on a fixed sample.

Mini-batch semantics: all margin classes of a batch are found with W as it was at the batch start
(so queries run in parallel), then the updates are applied in batch order. The paper's listing
updates W inside the batch loop; with the parallel queries its implementation describes, a batch
sees one W, which is what this does.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import param
import scipy.sparse as sp

from ..data.transforms import replicate_multiclass
from ..engine.sparse import prepare_rows
from ..engine.threads import using_threads
from ..metrics import macro_f1
from ..models.sparse import SparseModel
from ..oracles.exact import ExactOracle
from ..oracles.registry import ORACLES, make_oracle
from .batch_schedule import BatchSchedule
from .classweights import ClassWeights
from .params import param_dict
from .warmup import code_paths, warm_once

# the margin error's upper quantiles: eps at delta = 0.5, 0.1, 0.05, 0.01, 0, the (eps, delta) picture of Theorem 1
ERROR_QUANTILES = {"margin_error_p50": 0.5, "margin_error_p90": 0.9, "margin_error_p95": 0.95,
                   "margin_error_p99": 0.99, "margin_error_max": 1.0}
ITER_FIELDS = ("wall", "elapsed", "diagnostic_seconds", "seconds", "epoch", "batch", "eta", "objective", "hinge",
               "violators", "oracle_recall", "oracle_recall_at_1", "oracle_recall_at_10", "oracle_rank_p50",
               "margin_error", *ERROR_QUANTILES, "query_seconds", "update_seconds", "step_seconds", "truncation_change",
               "truncations_skipped", "nnz", "memory_mb", "train_accuracy", "accuracy", "macro_f1")
PAPER_LAMBDA = {"l2": 1.0, "l1": 1e-6}
# the oracle's random draw the diagnostics ask with; training batch t asks with draw t + 1, so
# recording never moves a training draw (the random oracle's classes, tie-breaking)
DIAGNOSTIC_DRAW = 0


# l2 at the paper's lam = 1 learns next to nothing on unit-normalised rows: the dashboard starts at
# LEARNING_LAM instead, and the CLI says PAPER_LAM_NOTE when it trains l2 with lam unset
LEARNING_LAM = 1e-4
PAPER_LAM_NOTE = ("the paper's lambda = 1 (MEMOIR l2's default) caps ||W|| at 1: about 1.4% accuracy on Bibtex, "
                  "where lambda = 1e-4 reaches about 19%")


class MemoirParams(*(params for params, _ in ORACLES.values())):
    """MEMOIR's parameters (defaults from the paper's Table 4) and those of every margin oracle."""

    variant = param.Selector(default="l2", objects=["l2", "l1"], doc=(
        "l2: Algorithm 1 (Pegasos with projection); l1: Algorithm 2 (truncated SGD, sparse W)."))
    oracle = param.Selector(default="exact", objects=list(ORACLES), doc=(
        "How the margin class argmax_{c != y} w_c.x is found: exact, or approximately."))
    lam = param.Number(default=None, allow_None=True, bounds=(0.0, 1e6), doc=(
        "Regularisation lambda; unset = the paper's (1 for l2, 1e-6 for l1)."))
    eta0 = param.Number(default=0.1, bounds=(1e-8, 1e3), doc="Initial step eta_0 of eta_t = eta_0 / (1 + eta_step t).")
    eta_step = param.Number(default=0.02, bounds=(0.0, 1e3), doc="Step decay eta_step; t counts mini-batches.")
    batch_size = param.Integer(default=0, bounds=(0, 10**8), doc=(
        "Instances per mini-batch; 0 = the paper's 100 sqrt(C), at most n."))
    epochs = param.Integer(default=5, bounds=(1, 10**5), doc="Passes over the (shuffled) training set.")
    violation_test = param.Selector(default="after_decay", objects=["after_decay", "before_decay"], doc=(
        "l2: whether a batch instance violates the margin (1 + w_r.x - w_y.x > 0) is decided with W after "
        "the step's decay by (1 - eta*lam), as Algorithm 1 lists it (after_decay), or before it (before_decay)."))
    truncation = param.Selector(default="when_small", objects=["when_small", "always"], doc=(
        "l1: truncate (eq. 13) only when it lowers ||W||_2 by at most truncation_tolerance * ||W||_2, the "
        "condition Theorem 3 assumes (when_small), or after every batch (always). Either way the change "
        "is recorded (truncation_change)."))
    truncation_tolerance = param.Number(default=0.01, bounds=(0.0, 1e6), doc=(
        "l1, truncation when_small: the largest relative change of ||W||_2 a truncation may cause (the "
        "epsilon of Theorem 3, which the paper leaves open)."))
    batch_step = param.Selector(default="sum", objects=["sum", "mean"], doc=(
        "sum: every violator of a batch moves W by eta x, as the paper's listings do; mean: by eta x / |b| "
        "(Pegasos's mini-batch step), which makes the ball of radius 1/sqrt(lam) the right one for "
        "lam * 0.5||W||^2 + mean hinge (with sum, the steps descend (lam/|b|) 0.5||W||^2 + mean hinge, "
        "whose solution the ball over-constrains by sqrt(|b|))."))
    average = param.Boolean(default=False, doc=(
        "Return the average of the iterates (the W-bar of the theorems) instead of the last one."))
    normalize = param.Boolean(default=True, doc="L2-normalise every row (the theorems assume ||x|| <= 1).")
    sample_size = param.Integer(default=1000, bounds=(0, 10**7), doc=(
        "Training rows of the fixed diagnostic sample (objective, recall and margin error, exactly)."))
    reindex_every = param.Integer(default=1, bounds=(1, 10**6), doc=(
        "Mini-batches between updates of the oracle's index (1 = after every batch, as the paper); "
        "the classes changed in between are re-indexed together. Larger is faster and staler."))
    recall_tolerance = param.Number(default=0.01, bounds=(0.0, 1e6), doc=(
        "oracle_recall counts an answer as found when its score is within this of the exact margin "
        "class's (in units of the hinge's margin, 1): near-ties between classes cost the step nothing."))
    records_per_epoch = param.Integer(default=10, bounds=(1, 10**4), doc=(
        "Diagnostic records per epoch, evenly spaced (at most one per batch)."))
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="Seed of the shuffles, the sample and the oracles.")


def _rows(X: sp.spmatrix, normalize: bool) -> sp.csr_matrix:
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    ptr, idx, val, _ = prepare_rows(X.indptr, X.indices, X.data, X.shape[1], normalize, 0.0)
    return sp.csr_matrix((val, idx.astype(np.int64), ptr.astype(np.int64)), shape=X.shape)


def _with_columns(X: sp.spmatrix, dim: int) -> sp.csr_matrix:
    """X with exactly `dim` columns: features the training data never had carry no weight."""
    X = sp.csr_matrix(X)
    return X[:, :dim] if X.shape[1] >= dim else sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], dim))


def as_multiclass(X: sp.spmatrix, Y) -> tuple[sp.spmatrix, np.ndarray, int]:
    """(X, class per row, number of classes): Y as a 0/1 matrix (multi-label rows are replicated,
    one copy per label) or as a vector of class ids."""
    if sp.issparse(Y):
        if not np.all(np.diff(sp.csr_matrix(Y).indptr) == 1):
            X, y = replicate_multiclass(X, Y)
            return X, y, Y.shape[1]
        return X, sp.csr_matrix(Y).indices.astype(np.int64), Y.shape[1]
    y = np.asarray(Y, np.int64)
    if y.ndim != 1 or y.size != X.shape[0]:
        raise ValueError(f"class ids must be a vector of length {X.shape[0]}, got shape {y.shape}")
    if y.size and y.min() < 0:
        raise ValueError("class ids must be non-negative")
    return X, y, int(y.max()) + 1 if y.size else 0


class _Diagnostics:
    """The exact picture on a fixed training sample (and a validation sample): objective, oracle
    recall and margin error, accuracy.

    Oracle recall is given three ways: within the stated tolerance of the exact margin class's score
    (`oracle_recall`), and by the rank of the oracle's class among the exact scores (1 + the classes
    scoring strictly higher): recall@1 (an exact argmax, ties included), recall@10 and the median
    rank. Where classes nearly tie, an exact-match recall reads 0 while the margin error is small.

    The objective is the one the steps descend: the loss step sums the subgradients of a batch
    (the paper's listing does not divide by |b|), so the regularisation weighs lam/|b| against the
    mean hinge: (lam/|b|) 0.5 ||W||_F^2 (l2) or (lam/|b|) ||W||_1 (l1, whose truncation removes
    lam * eta per step and class on average) plus the mean Crammer-Singer hinge, exact margins."""

    def __init__(self, X: sp.csr_matrix, y: np.ndarray, validation, sample: int, rng, lam: float, variant: str,
                 threads: int | None, tolerance: float = 0.01) -> None:
        pick = np.sort(rng.choice(X.shape[0], min(sample, X.shape[0]), replace=False))
        self.X, self.y = X[pick], y[pick]
        self.val = None
        if validation is not None:
            Xv, yv = validation
            pick = np.sort(rng.choice(Xv.shape[0], min(max(sample, 1), Xv.shape[0]), replace=False))
            self.val = (Xv[pick], yv[pick])
        self.lam, self.variant, self.tolerance = lam, variant, tolerance
        self.exact = ExactOracle(threads=threads)

    def measure(self, weights: ClassWeights, oracle) -> dict:
        self.exact.build(weights)
        out = {"nnz": weights.nnz, "memory_mb": weights.memory_bytes / 2**20}
        reg = self.lam * (0.5 * weights.norm ** 2 if self.variant == "l2" else weights.l1_norm())
        if self.X.shape[0]:
            best, best_v = self.exact.search(self.X, self.y)
            answer = oracle.query(self.X, self.y, draw=DIAGNOSTIC_DRAW)
            true_s, answer_s = weights.pair_scores(self.X.indptr, self.X.indices, self.X.data, self.y, answer)
            best_s = weights.scale * best_v
            error = np.maximum(best_s - answer_s, 0.0)
            hinge = np.maximum(0.0, 1.0 + best_s - true_s).mean()
            predicted, _ = self.exact.search(self.X)
            rank = self.exact.rank(self.X, answer, self.y)
            out.update(objective=reg + hinge, hinge=hinge, oracle_recall=float(np.mean(error <= self.tolerance)),
                       oracle_recall_at_1=float(np.mean(rank == 1)), oracle_recall_at_10=float(np.mean(rank <= 10)),
                       oracle_rank_p50=float(np.median(rank)),
                       margin_error=float(error.mean()), train_accuracy=float(np.mean(predicted == self.y)),
                       **{k: float(np.quantile(error, q)) for k, q in ERROR_QUANTILES.items()})
        if self.val is not None and self.val[0].shape[0]:
            predicted, _ = self.exact.search(self.val[0])
            out["accuracy"] = float(np.mean(predicted == self.val[1]))
            out["macro_f1"] = macro_f1(self.val[1], predicted)
        return out


def _truncate(weights: ClassWeights, classes: np.ndarray, threshold: float, p: MemoirParams, clock: dict,
              totals: dict) -> None:
    """Eq. (13) on the rows of `classes`, unless (truncation "when_small") it would lower ||W||_2 by
    more than truncation_tolerance * ||W||_2; the largest change applied and the skips are counted
    for the records (clock, per window) and the summary (totals)."""
    change = weights.truncation_change(classes, threshold)
    clock["truncations"] += 1
    totals["truncations"] += 1
    if p.truncation == "always" or change <= p.truncation_tolerance * weights.norm:
        weights.soft_threshold(classes, threshold)
        clock["truncation_change"] = max(clock["truncation_change"], change)
        totals["change"] = max(totals["change"], change)
    else:
        clock["skipped"] += 1
        totals["skipped"] += 1


def _warm_kernels(p: MemoirParams, threads: int | None, recording: bool, validating: bool) -> None:
    """Compile (or load from numba's cache) the kernels a run of these settings calls, its oracle's
    and its records' included, on a tiny problem before the clock starts (see solvers.warmup)."""
    from ..data.synthetic import generate
    from ..records.sinks import NullSink

    def tiny_fit() -> None:
        tiny = generate(60, 40, 12, multiclass=True, avg_nnz=6, seed=0)
        settings = {**param_dict(p), "epochs": 1, "records_per_epoch": 1, "sample_size": 20}
        fit_memoir(tiny.X, tiny.Y, MemoirParams(**settings), threads=threads,
                   recorder=NullSink() if recording else None, validation=(tiny.X, tiny.Y) if validating else None)

    warm_once(("memoir", code_paths(p), recording, validating), tiny_fit)


def fit_memoir(X: sp.spmatrix, Y, params: MemoirParams | None = None, *, threads: int | None = None, recorder=None,
               run: str = "run", progress: Callable[[int, int], None] | None = None,
               stop: Callable[[], bool] | None = None, validation=None, **_background) -> SparseModel:
    """Train MEMOIR on X (n x D) and Y (n x C 0/1 matrix or class ids; multi-label rows are
    replicated). validation: (X, Y) to measure accuracy on while training. progress(batches done,
    batches in all) after every batch; stop() is asked between batches (a stopped run returns the
    model so far, info["cancelled"] true)."""
    p = params or MemoirParams()
    _warm_kernels(p, threads, recorder is not None, validation is not None)
    t_start = time.monotonic()
    X, y, n_classes = as_multiclass(X, Y)
    if X.shape[0] == 0 or n_classes < 2:
        raise ValueError(f"nothing to train: {X.shape[0]} rows, {n_classes} classes (MEMOIR needs at least 2)")
    lam = PAPER_LAMBDA[p.variant] if p.lam is None else p.lam
    if p.variant == "l2" and (lam <= 0 or p.eta0 * lam >= 1):
        raise ValueError(f"l2 needs lam > 0 and eta0 * lam < 1 (the decay 1 - eta*lam must stay in (0, 1)); "
                         f"got lam={lam}, eta0={p.eta0}")
    Xr = _rows(X, p.normalize)
    n, dim = Xr.shape
    if validation is not None:
        Xv, yv, _ = as_multiclass(*validation)
        validation = (_rows(_with_columns(Xv, dim), p.normalize), yv)
    batch = min(n, p.batch_size or max(1, round(100 * np.sqrt(n_classes))))
    shuffles = np.random.default_rng([p.seed, 0])  # its own stream: the shuffles do not depend on the sample
    weights = ClassWeights(n_classes, dim)
    values = param_dict(p)

    with using_threads(threads) as n_threads:
        oracle = make_oracle(p.oracle, p, seed=p.seed, threads=n_threads)
        oracle.build(weights)
        weights.on_fold.append(oracle.rescale)
        dirty = np.zeros(n_classes, np.bool_)
        # the objective the steps descend: lam against the mean hinge for a mean step, lam / |b| for a sum
        diagnostics = _Diagnostics(Xr, y, validation, p.sample_size, np.random.default_rng([p.seed, 1]),
                                   lam if p.batch_step == "mean" else lam / batch, p.variant, n_threads,
                                   p.recall_tolerance)
        if recorder is not None:
            recorder.begin({"run": run, "solver": "memoir", "params": values, "threads": n_threads, "n": n,
                            "n_features": dim, "n_labels": n_classes, "iter_fields": list(ITER_FIELDS),
                            "label_fields": []})
        clock = {"query_seconds": 0.0, "update_seconds": 0.0, "step_seconds": 0.0, "violators": 0, "seen": 0,
                 "truncation_change": 0.0, "skipped": 0, "truncations": 0}
        truncation_totals = {"change": 0.0, "skipped": 0, "truncations": 0}
        spent = {"query_seconds": 0.0, "update_seconds": 0.0, "step_seconds": 0.0}  # the whole run's
        t_window = time.monotonic()
        written = 0
        measuring = 0.0  # the records' diagnostics so far: not training time
        pending = None  # "build" or "update": the index change due before the oracle is asked again

        def refresh() -> float:
            """Apply the pending index change (deferred to the next query, so a change that no query
            would see, after the last batch, costs nothing); returns the seconds it took."""
            nonlocal pending
            if pending is None:
                return 0.0
            t = time.monotonic()
            if pending == "build":
                oracle.build(weights)
            else:
                oracle.update(np.flatnonzero(dirty))
            dirty[:] = False
            pending = None
            took = time.monotonic() - t
            spent["update_seconds"] += took
            return took

        def compact(_epoch: int) -> None:
            """After an epoch: l1's store, grown by the entries its truncations emptied, is compacted."""
            if p.variant == "l1" and weights.n_entries > 1.25 * max(weights.nnz, 1):
                weights.compact(keep_average=p.average)

        def record(step: int, eta: float) -> None:
            """One record; its diagnostics (exact scores and oracle queries on the sample) are timed
            apart, like DS-MLR's and LDGS's: `wall` and the run's train_seconds are training alone, so
            a Compare of oracles at equal time compares their training (on Bibtex at the defaults the
            diagnostics took 0.9 to 2.2 times the training itself, spherical to exact)."""
            nonlocal t_window, written, measuring
            if recorder is None:
                return
            now = time.monotonic()
            row = {**dict.fromkeys(ITER_FIELDS, np.nan), "iteration": written, "label": 0, "batch": step,
                   "epoch": step / per_epoch, "eta": eta, "wall": now - t_start - measuring, "elapsed": now - t_start,
                   "seconds": now - t_window, "violators": clock["violators"] / max(1, clock["seen"])}
            row.update({k: clock[k] for k in ("query_seconds", "update_seconds", "step_seconds")})
            if clock["truncations"]:
                row.update(truncation_change=clock["truncation_change"],
                           truncations_skipped=clock["skipped"] / clock["truncations"])
            row["update_seconds"] += refresh()  # the index change the next batch's query needs: training
            t0 = time.monotonic()
            row.update(diagnostics.measure(weights, oracle))
            row["diagnostic_seconds"] = time.monotonic() - t0
            recorder.write("iteration", {k: np.array([v]) for k, v in row.items()})
            clock.update(query_seconds=0.0, update_seconds=0.0, step_seconds=0.0, violators=0, seen=0,
                         truncation_change=0.0, skipped=0, truncations=0)
            written += 1
            t_window = time.monotonic()
            measuring += t_window - t0

        schedule = BatchSchedule(n, batch, p.epochs, p.records_per_epoch, shuffles, stop=stop, progress=progress,
                                 record=lambda step: record(step, eta), end_epoch=compact)  # the last batch's eta
        per_epoch = schedule.per_epoch
        eta = p.eta0
        record(0, eta)
        for rows in schedule:
            step = schedule.step
            eta = p.eta0 / (1.0 + p.eta_step * step)
            Xb, yb = Xr[rows], y[rows]
            clock["update_seconds"] += refresh()
            t0 = time.monotonic()
            r = oracle.query(Xb, yb, draw=step + 1)
            t1 = time.monotonic()
            s_true, s_other = weights.pair_scores(Xb.indptr, Xb.indices, Xb.data, yb, r)
            step_size = eta if p.batch_step == "sum" else eta / rows.size
            if p.variant == "l2":
                decay = 1.0 - eta * lam
                gap = decay * (s_other - s_true) if p.violation_test == "after_decay" else s_other - s_true
                violators = np.flatnonzero(1.0 + gap > 0.0)
                weights.multiply(decay)
                weights.apply(violators, Xb.indptr, Xb.indices, Xb.data, yb, r, step_size)
                radius = 1.0 / np.sqrt(lam)
                if weights.norm > radius:
                    weights.multiply(radius / weights.norm)
                changed = np.unique(np.concatenate([yb[violators], r[violators]]))
            else:
                violators = np.flatnonzero(1.0 + s_other - s_true > 0.0)
                weights.apply(violators, Xb.indptr, Xb.indices, Xb.data, yb, r, step_size)
                changed = np.unique(np.concatenate([yb, r]))
                _truncate(weights, changed, n_classes / changed.size * lam * eta, p, clock, truncation_totals)
            weights.end_iterate()
            t2 = time.monotonic()
            dirty[changed] = True
            if step == 0:  # an index built on W = 0 is degenerate: build it on the first real W
                pending = "build"
            elif (step + 1) % p.reindex_every == 0:
                pending = "update"
            clock["query_seconds"] += t1 - t0
            clock["step_seconds"] += t2 - t1
            spent["query_seconds"] += t1 - t0
            spent["step_seconds"] += t2 - t1
            clock["violators"] += violators.size
            clock["seen"] += rows.size
        step, cancelled = schedule.step, schedule.cancelled
        seconds = time.monotonic() - t_start - measuring
        # where an indexed oracle's time went (index builds and updates, class sketches, candidate
        # search, exact re-ranking), the diagnostics' queries included when recording
        oracle_seconds = {**spent, **{f"oracle_{k}_seconds": v for k, v in getattr(oracle, "seconds", {}).items()}}
        refresh()
        final = diagnostics.measure(weights, oracle)
    W = weights.average() if p.average else weights.matrix()
    W.eliminate_zeros()
    info = {"train_seconds": seconds, "batches": step, "epochs_done": step / per_epoch,
            "epoch_seconds": seconds / max(step / per_epoch, 1e-12), "batch_size": batch, "threads": n_threads,
            "n_train": n, "cancelled": cancelled, "w_memory_mb": weights.memory_bytes / 2**20, **oracle_seconds,
            **({"truncation_change_max": truncation_totals["change"],
                "truncations_skipped": truncation_totals["skipped"] / truncation_totals["truncations"]}
               if truncation_totals["truncations"] else {}),
            **{k: float(final[k]) for k in ("oracle_recall", "oracle_recall_at_1", "oracle_recall_at_10",
                                            "oracle_rank_p50", "margin_error", "objective") if k in final}}
    model = SparseModel(weights=W, bias_weights=np.zeros(n_classes), bias=0.0, normalize=p.normalize,
                        solver="memoir", params=values, info=info)
    if recorder is not None:
        recorder.end(info)
    return model
