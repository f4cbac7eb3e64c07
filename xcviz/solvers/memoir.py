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
from typing import Iterator

import numpy as np
import param
import scipy.sparse as sp

from ..data.transforms import replicate_multiclass
from ..metrics import macro_f1
from ..models.sparse import SparseModel
from ..oracles.exact import ExactOracle
from ..oracles.registry import ORACLES, make_oracle
from ._driver import Driver
from ._multiclass import kernel_rows, with_columns
from .batch_schedule import BatchSchedule
from .classweights import ClassWeights

# the margin error's upper quantiles: eps at delta = 0.5, 0.1, 0.05, 0.01, 0, the (eps, delta) picture of Theorem 1
ERROR_QUANTILES = {"margin_error_p50": 0.5, "margin_error_p90": 0.9, "margin_error_p95": 0.95,
                   "margin_error_p99": 0.99, "margin_error_max": 1.0}
ITER_FIELDS = ("wall", "elapsed", "diagnostic_seconds", "seconds", "epoch", "batch", "eta", "objective", "hinge",
               "violators", "oracle_recall", "oracle_recall_at_1", "oracle_recall_at_10", "oracle_rank_p50",
               "margin_error", *ERROR_QUANTILES, "query_seconds", "update_seconds", "step_seconds", "truncation_change",
               "truncations_skipped", "nnz", "memory_mb", "train_accuracy", "accuracy", "macro_f1")
# the records' fields the dashboard's field table (app.ui.fields) draws no plot of: axes, the run's
# bookkeeping and the diagnostics the runs table and the report show
UNPLOTTED = ("wall", "elapsed", "diagnostic_seconds", "epoch", "batch", "eta", "hinge", "oracle_rank_p50",
             *ERROR_QUANTILES, "step_seconds", "truncations_skipped", "memory_mb", "train_accuracy")
# lam when unset: l1 the paper's; l2 not the paper's 1, which caps ||W|| at 1 on unit-normalised rows
# and learns next to nothing (Bibtex, 5 epochs: about 1.4% accuracy, where 1e-4 reaches about 19%).
# The page, the CLI and the API all take it from here (issue 40: the page had 1e-4, the CLI 1).
DEFAULT_LAMBDA = {"l2": 1e-4, "l1": 1e-6}
# the oracle's random draw the diagnostics ask with; training batch t asks with draw t + 1, so
# recording never moves a training draw (the random oracle's classes, tie-breaking)
DIAGNOSTIC_DRAW = 0
# a record's window counters (reset after every record)
_COUNTERS = {"query_seconds": 0.0, "update_seconds": 0.0, "step_seconds": 0.0, "violators": 0, "seen": 0,
             "truncation_change": 0.0, "skipped": 0, "truncations": 0}



class MemoirParams(*(params for params, _ in ORACLES.values())):
    """MEMOIR's parameters (defaults from the paper's Table 4) and those of every margin oracle."""

    variant = param.Selector(default="l2", objects=["l2", "l1"], doc=(
        "l2: Algorithm 1 (Pegasos with projection); l1: Algorithm 2 (truncated SGD, sparse W)."))
    oracle = param.Selector(default="exact", objects=list(ORACLES), doc=(
        "How the margin class argmax_{c != y} w_c.x is found: exact, or approximately."))
    lam = param.Number(default=None, allow_None=True, bounds=(0.0, 1e6), doc=(
        "Regularisation lambda; unset = 1e-4 for l2 (the paper's 1 caps ||W|| at 1 on unit-length rows: about "
        "1.4% accuracy on Bibtex, where 1e-4 reaches about 19%) and the paper's 1e-6 for l1."))
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


class _Memoir(Driver):
    """MEMOIR's hooks on the driver skeleton: its setup, mini-batch steps, diagnostics and model."""

    name = "memoir"
    iter_fields = ITER_FIELDS

    def warm_up(self) -> None:
        settings = {**self.values, "epochs": 1, "records_per_epoch": 1, "sample_size": 20}
        self.warm((), MemoirParams(**settings), multilabel=False)

    def setup(self) -> None:
        p = self.p
        X, self.y, self.n_classes = as_multiclass(self.X, self.Y)
        if X.shape[0] == 0 or self.n_classes < 2:
            raise ValueError(f"nothing to train: {X.shape[0]} rows, {self.n_classes} classes (MEMOIR needs at least 2)")
        self.lam = DEFAULT_LAMBDA[p.variant] if p.lam is None else p.lam
        if p.variant == "l2" and (self.lam <= 0 or p.eta0 * self.lam >= 1):
            raise ValueError(f"l2 needs lam > 0 and eta0 * lam < 1 (the decay 1 - eta*lam must stay in (0, 1)); "
                             f"got lam={self.lam}, eta0={p.eta0}")
        self.Xr = kernel_rows(X, p.normalize)
        self.n, self.dim = self.Xr.shape
        self.validation = None
        if self.options.validation is not None:
            Xv, yv, _ = as_multiclass(*self.options.validation)
            self.validation = (kernel_rows(with_columns(Xv, self.dim), p.normalize), yv)
        self.batch = min(self.n, p.batch_size or max(1, round(100 * np.sqrt(self.n_classes))))
        shuffles = np.random.default_rng([p.seed, 0])  # its own stream: the shuffles do not depend on the sample
        self.schedule = BatchSchedule(self.n, self.batch, p.epochs, p.records_per_epoch, shuffles)
        self.total, self.per_epoch = self.schedule.total, self.schedule.per_epoch
        self.weights = ClassWeights(self.n_classes, self.dim)

    def start(self) -> dict:
        p = self.p
        self.oracle = make_oracle(p.oracle, p, seed=p.seed, threads=self.n_threads)
        self.oracle.build(self.weights)
        self.weights.on_fold.append(self.oracle.rescale)
        self.dirty = np.zeros(self.n_classes, np.bool_)
        # the objective the steps descend: lam against the mean hinge for a mean step, lam / |b| for a sum
        self.diagnostics = _Diagnostics(self.Xr, self.y, self.validation, p.sample_size,
                                        np.random.default_rng([p.seed, 1]),
                                        self.lam if p.batch_step == "mean" else self.lam / self.batch, p.variant,
                                        self.n_threads, p.recall_tolerance)
        self.counters = dict(_COUNTERS)  # since the last record
        self.truncation_totals = {"change": 0.0, "skipped": 0, "truncations": 0}
        self.spent = {"query_seconds": 0.0, "update_seconds": 0.0, "step_seconds": 0.0}  # the whole run's
        self.pending = None  # "build" or "update": the index change due before the oracle is asked again
        self.eta = p.eta0
        return {"n": self.n, "n_features": self.dim, "n_labels": self.n_classes}

    def refresh(self) -> float:
        """Apply the pending index change (deferred to the next query, so a change that no query
        would see, after the last batch, costs nothing); returns the seconds it took."""
        if self.pending is None:
            return 0.0
        t = time.monotonic()
        if self.pending == "build":
            self.oracle.build(self.weights)
        else:
            self.oracle.update(np.flatnonzero(self.dirty))
        self.dirty[:] = False
        self.pending = None
        took = time.monotonic() - t
        self.spent["update_seconds"] += took
        return took

    def steps(self) -> Iterator[int]:
        p, weights, oracle, clock, Xr, y = self.p, self.weights, self.oracle, self.counters, self.Xr, self.y
        for rows in self.schedule:
            step = self.schedule.step
            eta = self.eta = p.eta0 / (1.0 + p.eta_step * step)
            Xb, yb = Xr[rows], y[rows]
            clock["update_seconds"] += self.refresh()
            t0 = time.monotonic()
            r = oracle.query(Xb, yb, draw=step + 1)
            t1 = time.monotonic()
            s_true, s_other = weights.pair_scores(Xb.indptr, Xb.indices, Xb.data, yb, r)
            step_size = eta if p.batch_step == "sum" else eta / rows.size
            if p.variant == "l2":
                decay = 1.0 - eta * self.lam
                gap = decay * (s_other - s_true) if p.violation_test == "after_decay" else s_other - s_true
                violators = np.flatnonzero(1.0 + gap > 0.0)
                weights.multiply(decay)
                weights.apply(violators, Xb.indptr, Xb.indices, Xb.data, yb, r, step_size)
                radius = 1.0 / np.sqrt(self.lam)
                if weights.norm > radius:
                    weights.multiply(radius / weights.norm)
                changed = np.unique(np.concatenate([yb[violators], r[violators]]))
            else:
                violators = np.flatnonzero(1.0 + s_other - s_true > 0.0)
                weights.apply(violators, Xb.indptr, Xb.indices, Xb.data, yb, r, step_size)
                changed = np.unique(np.concatenate([yb, r]))
                _truncate(weights, changed, self.n_classes / changed.size * self.lam * eta, p, clock,
                          self.truncation_totals)
            weights.end_iterate()
            t2 = time.monotonic()
            self.dirty[changed] = True
            if step == 0:  # an index built on W = 0 is degenerate: build it on the first real W
                self.pending = "build"
            elif (step + 1) % p.reindex_every == 0:
                self.pending = "update"
            clock["query_seconds"] += t1 - t0
            clock["step_seconds"] += t2 - t1
            self.spent["query_seconds"] += t1 - t0
            self.spent["step_seconds"] += t2 - t1
            clock["violators"] += violators.size
            clock["seen"] += rows.size
            yield step + 1

    def due(self, step: int) -> bool:
        return self.schedule.due(step)

    def after_step(self, step: int) -> None:
        """After an epoch: l1's store, grown by the entries its truncations emptied, is compacted."""
        if self.schedule.ends_epoch(step) and self.p.variant == "l1" and \
                self.weights.n_entries > 1.25 * max(self.weights.nnz, 1):
            self.weights.compact(keep_average=self.p.average)

    def window(self, step: int) -> dict:
        clock = self.counters
        row = {"batch": step, "epoch": step / self.per_epoch, "eta": self.eta,
               "violators": clock["violators"] / max(1, clock["seen"]),
               **{k: clock[k] for k in ("query_seconds", "update_seconds", "step_seconds")}}
        if clock["truncations"]:
            row.update(truncation_change=clock["truncation_change"],
                       truncations_skipped=clock["skipped"] / clock["truncations"])
        row["update_seconds"] += self.refresh()  # the index change the next batch's query needs: training
        self.counters.update(_COUNTERS)
        return row

    def measure(self, step: int) -> dict:
        """The diagnostics (exact scores and oracle queries on the sample), timed apart like DS-MLR's
        and LDGS's: `wall` and the run's train_seconds are training alone, so a Compare of oracles
        at equal time compares their training (on Bibtex at the defaults the diagnostics took 0.9
        to 2.2 times the training itself, spherical to exact)."""
        return self.diagnostics.measure(self.weights, self.oracle)

    def finish(self) -> None:
        # where an indexed oracle's time went (index builds and updates, class sketches, candidate
        # search, exact re-ranking), the diagnostics' queries included when recording
        self.oracle_seconds = {**self.spent, **{f"oracle_{k}_seconds": v
                                                for k, v in getattr(self.oracle, "seconds", {}).items()}}
        self.refresh()
        self.final = self.diagnostics.measure(self.weights, self.oracle)

    def model(self, info: dict) -> SparseModel:
        p, weights, totals, seconds = self.p, self.weights, self.truncation_totals, self.train_seconds
        step = self.done
        W = weights.average() if p.average else weights.matrix()
        W.eliminate_zeros()
        info.update({"batches": step, "epochs_done": step / self.per_epoch,
                     "epoch_seconds": seconds / max(step / self.per_epoch, 1e-12), "batch_size": self.batch,
                     "n_train": self.n, "w_memory_mb": weights.memory_bytes / 2**20, **self.oracle_seconds,
                     **({"truncation_change_max": totals["change"],
                         "truncations_skipped": totals["skipped"] / totals["truncations"]}
                        if totals["truncations"] else {}),
                     **{k: float(self.final[k]) for k in ("oracle_recall", "oracle_recall_at_1",
                                                          "oracle_recall_at_10", "oracle_rank_p50", "margin_error",
                                                          "objective") if k in self.final}})
        return SparseModel(weights=W, bias_weights=np.zeros(self.n_classes), bias=0.0, normalize=p.normalize,
                           solver="memoir", params=self.values, info=info)


def fit_memoir(X: sp.spmatrix, Y, params: MemoirParams | None = None, **options) -> SparseModel:
    """Train MEMOIR on X (n x D) and Y (n x C 0/1 matrix or class ids; multi-label rows are
    replicated). options: those of solvers._driver.FitOptions (an unknown one raises TypeError);
    validation (X, Y) is measured while training, progress(batches done, batches in all) follows
    every batch, stop() is asked between batches (a stopped run returns the model so far,
    info["cancelled"] true)."""
    return _Memoir(X, Y, params or MemoirParams(), **options).fit()
