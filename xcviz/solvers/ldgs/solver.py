"""LDGS (Yen et al., ICML 2018): mini-batch SGD on z = W phi(x) with search-based gradients, and
the gradient's error made visible.

The estimator (`gradient`) decides which classes a sample's loss and gradient see: all of them
(exact), a uniform sample (sampled softmax), the top Q of one spherical-clustering MIPS index
(mips, Algorithm 1) or of B indexes over blocks of h/B coordinates coupled by greedy message
passing (decomp, Algorithm 2). Whatever trains, each record measures on a fixed diagnostic
sample, against exact scores: the exact objective, accuracy (or P@k), the search recall of both
mips and decomp, the training estimator's gradient error and cosine, its loss error, |A| and
sum |S_j|, and the certificate share (see engine/ldgs.py and solvers/ldgs/search.py).

Mini-batch semantics: a batch's gradients are estimated in parallel with W (and V) as they were
at the batch start, then applied in a fixed order: W[k] -= eta sum_i g_ik phi_i (the batch's
gradients summed, as MEMOIR's listing does), summed in batch order within each class, so the model
does not depend on the thread count. W starts at the class means of phi, so the first scores
already rank the classes and the searches have structure to find (no sampling warm-up needed). The search
indexes re-index the rows a batch changed every `reindex_every` batches.
"""
from __future__ import annotations

import time
from typing import Callable, Iterator

import numpy as np
import param
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from ...models.embedding import EmbeddingModel
from ...engine.ldgs import (CE, MARGIN, all_scores, embedding_gradient, exact_loss_grad, forward, scatter, step_classes,
                           step_features)
from ...engine.ldgs_measure import support_stats, top_precision
from ...engine.sparse import take_rows
from ...oracles.block_index import REDUCTIONS, BlockSphericalIndex
from .._driver import Driver
from .._multiclass import kernel_rows, with_columns
from ..batch_schedule import BatchSchedule
from .search import ESTIMATORS, Estimate, Estimator, block_bounds
from .svd_cache import canonical, memoised

LOSSES = {"smoothed_margin": MARGIN, "ce": CE}
ITER_FIELDS = ("wall", "elapsed", "seconds", "epoch", "batch", "eta", "objective", "train_accuracy", "accuracy",
               "train_p_at_1", "p_at_1", "p_at_5", "search_recall", "search_recall_mips", "search_recall_decomp",
               "gradient_error", "gradient_error_row_mean", "gradient_cosine", "loss_error", "active_set", "retrieved",
               "certified_mips", "certified_decomp", "query_seconds", "rescore_seconds", "message_seconds", "update_seconds",
               "reindex_seconds", "diagnostic_seconds")
# the records' fields the dashboard's field table (app.ui.fields) draws no plot of: axes, training-sample
# twins of the plotted test metrics, bookkeeping
UNPLOTTED = ("wall", "elapsed", "epoch", "batch", "eta", "train_accuracy", "train_p_at_1", "search_recall",
             "certified_mips", "reindex_seconds", "diagnostic_seconds")
CLOCK = ("query_seconds", "rescore_seconds", "message_seconds", "update_seconds", "reindex_seconds")
DIAGNOSTIC_CHUNK = 64
BATCH_DIVERGED = 1e3  # a batch whose mean loss exceeds this multiple of the first batch's (at least 1) has diverged
DIVERGED = 20.0  # a run whose sample objective exceeds this multiple of its reference has diverged


class LdgsParams(param.Parameterized):
    """LDGS's parameters; the defaults are the paper's settings (section 5) but where the README's
    "Deviations from the paper" says otherwise (the step's cooling per epoch, the probes, the
    re-indexing)."""

    gradient = param.Selector(default="decomp", objects=list(ESTIMATORS), doc=(
        "How the loss gradient is estimated: exact (all K scores), sampled (positives + K/100 uniform "
        "negatives), mips (Algorithm 1: top Q of one spherical-clustering index), decomp (Algorithm 2: "
        "B block indexes and greedy message passing)."))
    loss = param.Selector(default="smoothed_margin", objects=list(LOSSES), doc=(
        "smoothed_margin: Nesterov-smoothed max-margin (10)-(11), gradient a bi-simplex projection; "
        "ce: cross-entropy (2)."))
    embedding = param.Selector(default="svd", objects=["svd", "learned"], doc=(
        "svd: phi(x) = fixed truncated-SVD projection of the normalised rows (last layer over fixed "
        "features); learned: phi(x) = V^T x, V trained jointly with W."))
    dim = param.Integer(default=0, bounds=(0, 4096), doc="Embedding dimension h; 0 = 128 (svd) or 100 (learned).")
    tanh = param.Boolean(default=False, doc="learned: phi(x) = tanh(V^T x) instead of V^T x.")
    deal = param.Boolean(default=True, doc=(
        "svd: deal the components (largest first) to decomp's blocks in turn, so that every block holds a "
        "like share of the spectrum; off: contiguous blocks, the largest components all in the first."))
    mu = param.Number(default=0.0, bounds=(0.0, 1e3), doc=(
        "Smoothing mu of the margin loss; 0 = the paper's (1 multiclass, 5 multi-label)."))
    eta0 = param.Number(default=1.0, bounds=(1e-8, 1e3), doc=(
        "Initial step; eta_t = eta0 / (1 + t / batches per epoch). The paper picks from {1, 0.1, 0.01}."))
    batch_size = param.Integer(default=10, bounds=(1, 10**6), doc="Samples per mini-batch (the paper's 10).")
    epochs = param.Integer(default=5, bounds=(1, 10**5), doc="Passes over the (shuffled) training set.")
    blocks = param.Integer(default=0, bounds=(0, 1024), doc=(
        "decomp: blocks B of h/B coordinates; 0 = the paper's (8 multiclass, 4 multi-label)."))
    steps = param.Integer(default=1, bounds=(1, 1000), doc="decomp: message-passing steps T (the paper's 1).")
    restrict = param.Boolean(default=True, doc=(
        "decomp: block j sees only its own retrieved classes S_j and the positives, and only the active set "
        "A is scored in every block (the paper's O(h Q + h B |A|)); off: every retrieved class is scored in "
        "every block first (O(h B Q), the same gradient when every block retrieves the same classes)."))
    tau2 = param.Number(default=1e-3, bounds=(0.0, 1.0), doc=(
        "Threshold of the active set A and of a gradient's support (recall, certificate)."))
    retrieve = param.Integer(default=0, bounds=(0, 10**8), doc=(
        "Q, classes kept per index query; 0 = max(sqrt K, K/100) (see default_retrieve)."))
    clusters = param.Integer(default=100, bounds=(1, 10**6), doc=(
        "Spherical k-means clusters per index (the paper's 100)."))
    probes = param.Integer(default=0, bounds=(0, 10**6), doc=(
        "Clusters probed per query; their members are scored on the index's coordinates, the best Q kept. "
        "0 = enough clusters to hold about Q classes multiclass (the paper's query: 1 for K = 50,000) and 5 Q "
        "multi-label (41 on Bibtex), ceil(f Q clusters / K) (see default_probes)."))
    reduction = param.Selector(default="cosine", objects=list(REDUCTIONS), doc=(
        "What the mips and decomp indexes cluster: cosine, the MIPS-to-cosine reduction (Auvolat et al.: "
        "each class row gains sqrt(M^2 - ||w||^2), the query 0, so the nearest direction is the largest "
        "inner product, norms included); none, the rows' directions alone (norms ignored)."))
    kmeans_iter = param.Integer(default=5, bounds=(1, 1000), doc="Lloyd iterations when an index is built.")
    sampled = param.Integer(default=0, bounds=(0, 10**8), doc="sampled: negatives drawn per sample; 0 = K/100.")
    reindex_every = param.Integer(default=50, bounds=(1, 10**6), doc=(
        "Batches between re-indexing the rows of W changed since, in every block index (1 = after "
        "every batch). Consecutive batches change mostly the same rows, so 50 batches of 10 re-index "
        "about what one batch changes, at a fifth of the cost of every 10 (see the README); the "
        "search reads the changed rows' new values at once either way."))
    normalize = param.Boolean(default=True, doc="L2-normalise every row before the embedding.")
    sample_size = param.Integer(default=200, bounds=(1, 10**6), doc=(
        "Training rows of the fixed diagnostic sample (exact scores, both searches, gradient errors)."))
    records_per_epoch = param.Integer(default=10, bounds=(1, 10**4), doc=(
        "Diagnostic records per epoch, evenly spaced (at most one per batch)."))
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="Seed of the SVD, V, the shuffles, samples and indexes.")


def positives(Y, n: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """(pos_ptr, pos_idx, K, multilabel) from a 0/1 label matrix or a vector of class ids."""
    if sp.issparse(Y):
        Y = sp.csr_matrix(Y)
        Y.sort_indices()
        multilabel = not np.all(np.diff(Y.indptr) == 1)
        return Y.indptr.astype(np.int64), Y.indices.astype(np.int64), Y.shape[1], bool(multilabel)
    y = np.asarray(Y, np.int64)
    if y.ndim != 1 or y.size != n:
        raise ValueError(f"class ids must be a vector of length {n}, got shape {y.shape}")
    if y.size and y.min() < 0:
        raise ValueError("class ids must be non-negative")
    return np.arange(n + 1, dtype=np.int64), y, int(y.max()) + 1 if y.size else 0, False


def _take(pos_ptr: np.ndarray, pos_idx: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positives of `rows`, as CSR."""
    return take_rows(pos_ptr, pos_idx, np.asarray(rows, np.int64))


def default_retrieve(K: int) -> int:
    """The default Q: max(sqrt K, K/100), the paper's batch query of K/100, at least sqrt K so that
    K/C <= Q and C <= Q can hold; capped at K. The same on multi-label data: a factor of the mean
    number of positives, once needed by decomp's contiguous blocks on Bibtex, only slowed it once
    the SVD components were dealt to the blocks (README, "Balanced blocks")."""
    return min(max(int(np.ceil(np.sqrt(K))), K // 100), K)


def default_probes(q: int, clusters: int, K: int, multilabel: bool) -> int:
    """The default clusters probed per query: enough to hold about Q classes on multiclass data (the
    paper's query of K/100 over 100 clusters: one cluster at K = 50,000) and about 5 Q on multi-label
    data, ceil(f Q min(C, K) / K) with f = 1 or 5. A multi-label row's gradient reaches the
    neighbourhoods of all its positives, and there the extra probes paid (Bibtex P@1 56.98 against
    54.39 at about Q); on multiclass problems they bought no accuracy (README, "Measured") at twice
    to four times decomp's time."""
    return int(np.ceil((5 if multilabel else 1) * q * min(clusters, K) / K))


def svd_basis(X: sp.csr_matrix, h: int, seed: int) -> np.ndarray:
    """D x h basis of the top-h right singular vectors of X (scipy svds, seeded start vector),
    largest first, each signed so that its largest entry is positive (a reproducible basis).
    Computed once per process for a matrix of the same content, h and seed (see svd_cache)."""
    h = min(h, min(X.shape) - 1)
    if h < 1:
        raise ValueError(f"the svd embedding needs at least 2 rows and 2 features, got {X.shape}")
    return memoised(canonical(X), h, seed, _svd_basis)


def _svd_basis(X: sp.csr_matrix, h: int, seed: int) -> np.ndarray:
    """svd_basis computed, for 1 <= h < min(X.shape)."""
    _, s, vt = svds(X, k=h, random_state=np.random.default_rng(seed))
    vt = vt[np.argsort(-s, kind="stable")]
    signs = np.sign(vt[np.arange(h), np.abs(vt).argmax(axis=1)])
    return np.ascontiguousarray((vt * signs[:, None]).T)


def dealt_components(bounds: np.ndarray) -> np.ndarray:
    """Column order of an SVD basis (largest component first) that deals its components to the
    blocks (contiguous columns bounds[j]..bounds[j+1]) in turn, like cards: block j gets components
    j, j + B, j + 2B, ... So every block holds a like share of the spectrum, where contiguous blocks
    left the first with most of the score variance and the last with almost none: the last blocks'
    searches ranked the classes by noise, and decomp (T = 1) fell 10 P@1 points under exact on
    Bibtex (README, "Balanced blocks"). The allocation of principal components to subspaces in
    optimised product quantisation (Ge et al., 2013), in its simplest form."""
    sizes = np.diff(bounds)
    dealt: list[list[int]] = [[] for _ in sizes]
    j = 0
    for c in range(int(sizes.sum())):
        while len(dealt[j]) == sizes[j]:
            j = (j + 1) % sizes.size
        dealt[j].append(c)
        j = (j + 1) % sizes.size
    return np.concatenate([np.array(d, np.int64) for d in dealt])


def frequency_rank(pos_idx: np.ndarray, K: int) -> np.ndarray:
    """rank[k] = class k's row in the W the solver trains: the classes by decreasing training
    frequency (ties by id), so that the rows that can be non-zero (W starts at the class means, and
    the searches never return a zero row) lie together at the top of W. The searches, the message
    passing and the updates read those rows scattered over a K x h array otherwise: on the issue's
    K = 50,000 problem, 1,895 live rows spread over 51 MB cost decomp's message passing a quarter
    more than the same rows packed. The model returned is in the caller's class order."""
    order = np.argsort(-np.bincount(pos_idx, minlength=K), kind="stable")
    rank = np.empty(K, np.int64)
    rank[order] = np.arange(K)
    return rank


def class_means(phi: np.ndarray, pos_ptr: np.ndarray, pos_idx: np.ndarray, K: int) -> np.ndarray:
    """K x h: row k the mean of phi over the rows with label k (zero for a class without rows)."""
    rows = np.repeat(np.arange(phi.shape[0]), np.diff(pos_ptr))
    W = np.zeros((K, phi.shape[1]))
    np.add.at(W, pos_idx, phi[rows])
    counts = np.bincount(pos_idx, minlength=K)
    W[counts > 0] /= counts[counts > 0, None]
    return W


def _support_stats(grad: np.ndarray, est: Estimate, tau2: float) -> tuple[np.ndarray, ...]:
    """Per sample: recall of the exact gradient's support (|g| > tau2) in U, relative l2 error and
    cosine of the estimated gradient (NaN where the exact gradient is 0), and the squared norms of
    the error and of the exact gradient (for the batch's error, `_batch_error`)."""
    n = grad.shape[0]
    recall, error, cosine, error2, norm2 = (np.empty(n) for _ in range(5))
    support_stats(grad, np.ascontiguousarray(est.U[:n]), np.ascontiguousarray(est.coef[:n]), est.count, tau2,
                  recall, error, cosine, error2, norm2)
    return recall, error, cosine, error2, norm2


def _batch_error(error2: np.ndarray, norm2: np.ndarray) -> float:
    """||g~ - g|| / ||g|| over the whole sample (Frobenius norms): the estimate's error as one step
    sees it; NaN where the exact gradient is 0 on every row."""
    total = float(norm2.sum())
    return float(np.sqrt(error2.sum() / total)) if total > 0.0 else np.nan


def _top_precision(S: np.ndarray, pos_ptr: np.ndarray, pos_idx: np.ndarray, k: int) -> np.ndarray:
    """P@k of every score row."""
    out = np.empty(S.shape[0])
    top_precision(S, pos_ptr, pos_idx, k, out)
    return out


def _scores(W: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """phi W^T by the numba kernel (see engine.ldgs_measure on why not BLAS)."""
    out = np.empty((phi.shape[0], W.shape[0]))
    all_scores(W, np.ascontiguousarray(phi), out)
    return out


class _Diagnostics:
    """The exact picture on a fixed training sample (and a validation sample)."""

    def __init__(self, rows: np.ndarray, pos: tuple, validation, params: LdgsParams, loss: int, mu: float,
                 multilabel: bool) -> None:
        self.rows, self.pos, self.validation = rows, pos, validation
        self.p, self.loss, self.mu, self.multilabel = params, loss, mu, multilabel
        self.rng_seed = params.seed

    def _quality(self, S: np.ndarray, ptr: np.ndarray, idx: np.ndarray) -> dict:
        if self.multilabel:
            return {"p_at_1": _top_precision(S, ptr, idx, 1), "p_at_5": _top_precision(S, ptr, idx, 5)}
        return {"accuracy": (S.argmax(axis=1) == idx).astype(float)}

    def objective(self, W: np.ndarray, embed: Callable) -> float:
        """The exact objective on the training sample (the `objective` of `measure`, alone)."""
        phi = embed(self.rows)
        ptr, idx = self.pos
        total = 0.0
        for start in range(0, phi.shape[0], DIAGNOSTIC_CHUNK):
            sel = np.arange(start, min(start + DIAGNOSTIC_CHUNK, phi.shape[0]))
            p_ptr, p_idx = _take(ptr, idx, sel)
            S = _scores(W, phi[sel])
            value, level = np.empty(sel.size), np.empty(sel.size)
            exact_loss_grad(S, p_ptr, p_idx, self.loss, self.mu, np.empty_like(S), value, level)
            total += float(value.sum())
        return total / phi.shape[0]

    def measure(self, W: np.ndarray, embed: Callable, estimators: dict, trained: str) -> dict:
        """One record's diagnostics; `estimators` maps mips, decomp and the trained kind to estimators."""
        phi = embed(self.rows)
        ptr, idx = self.pos
        parts: dict[str, list] = {}
        scratch = dict.fromkeys(CLOCK, 0.0)
        rng = np.random.default_rng([self.rng_seed, 11])
        for start in range(0, phi.shape[0], DIAGNOSTIC_CHUNK):
            sel = np.arange(start, min(start + DIAGNOSTIC_CHUNK, phi.shape[0]))
            p_ptr, p_idx = _take(ptr, idx, sel)
            S = _scores(W, phi[sel])
            grad = np.empty_like(S)
            value, level = np.empty(sel.size), np.empty(sel.size)
            exact_loss_grad(S, p_ptr, p_idx, self.loss, self.mu, grad, value, level)
            quality = self._quality(S, p_ptr, p_idx)
            add = {"objective": value, **{f"train_{k}": v for k, v in quality.items()}}
            for kind in {"mips", "decomp", trained}:
                est = estimators[kind](np.ascontiguousarray(phi[sel]), p_ptr, p_idx, scratch,
                                       with_certificate=kind in ("mips", "decomp"), rng=rng)
                recall, error, cosine, error2, norm2 = _support_stats(grad, est, self.p.tau2)
                if kind in ("mips", "decomp"):
                    add[f"search_recall_{kind}"] = recall
                    add[f"certified_{kind}"] = est.certified.astype(float)
                if kind == trained:
                    add.update(search_recall=recall, gradient_error_row_mean=error, gradient_cosine=cosine,
                               _error2=error2, _norm2=norm2,
                               loss_error=np.abs(est.value - value), active_set=est.n_active.astype(float),
                               retrieved=est.retrieved.astype(float))
            for k, v in add.items():
                parts.setdefault(k, []).append(v)
        sums = {k: parts.pop(k) for k in ("_error2", "_norm2")}
        out = {k: float(np.nanmean(np.concatenate(v))) if np.isfinite(np.concatenate(v)).any() else np.nan
               for k, v in parts.items()}
        out["gradient_error"] = _batch_error(*(np.concatenate(sums[k]) for k in ("_error2", "_norm2")))
        if self.validation is not None:
            Xv, v_ptr, v_idx = self.validation
            quality = self._quality(_scores(W, embed(Xv)), v_ptr, v_idx)
            out.update({k: float(v.mean()) for k, v in quality.items()})
        return out


def _check_step(W: np.ndarray, classes: np.ndarray, V: np.ndarray, features: np.ndarray | None, losses: np.ndarray,
                start: float, step: int, per_epoch: int, eta0: float) -> None:
    """Stop a diverging run at the step it diverges: the rows of W (and V) this step changed must
    stay finite, or the next batch's scores feed NaN and inf to the loss kernels (a learned
    embedding at eta0 = 1 made them divide by zero inside numba, issue #42), and the batch's mean
    estimated loss must stay below BATCH_DIVERGED times the first batch's (a search run at eta0 = 1
    ended `done` at an objective of 1.7e14). Reads only what the step touched: O(|classes| h)."""
    loss = float(np.mean(losses))
    finite = np.isfinite(W[classes]).all() and (features is None or np.isfinite(V[features]).all())
    if not (np.isfinite(loss) and finite):
        raise _diverged(f"{step // per_epoch + 1} (batch {step + 1})", "the model's weights are no longer finite", eta0)
    if loss > BATCH_DIVERGED * start:
        raise _diverged(f"{step // per_epoch + 1} (batch {step + 1})",
                        f"a batch's mean loss is {loss:.3g}, against {start:.3g} at the start", eta0)


def _diverged(epoch: str, what: str, eta0: float) -> ValueError:
    """The one error of a diverged run, whichever check found it: where, what, and the step to try."""
    return ValueError(f"LDGS diverged in epoch {epoch}: {what}; a smaller step size trains "
                      f"(eta0 is {eta0:g}: try --set eta0={eta0 / 10:g})")


def _check_diverged(objective: float, reference: float, epoch: int, eta0: float) -> None:
    """Stop a run whose step size made the model blow up: its numbers would be meaningless, and a run
    that ends as if it trained misleads. The learned embedding with the cross-entropy at eta0 = 1
    on Bibtex reached an objective of 1e75 within an epoch, then NaN; on a 40-class problem every
    estimator at eta0 = 10 ended at objectives of 1e78 to 1e267 with finite weights, so a finite
    model is not enough: the objective on the diagnostic sample must stay within DIVERGED times
    `reference` (the larger of its value at the start and log K, the cross-entropy of W = 0)."""
    if not objective <= DIVERGED * reference:
        raise _diverged(str(epoch), f"the objective on the diagnostic sample rose to {objective:.4g}, above "
                                    f"{DIVERGED:g} times {reference:.4g} (its start or log K, the larger)", eta0)


def is_multilabel(Y) -> bool:
    """Whether Y (a 0/1 label matrix or class ids) has a row with other than one label."""
    return sp.issparse(Y) and not np.all(np.diff(sp.csr_matrix(Y).indptr) == 1)


class _Ldgs(Driver):
    """LDGS's hooks on the driver skeleton. Its training time counts the batches alone: the SVD, the
    first index builds and the class means are set-up (as the paper times SGD)."""

    name = "ldgs"
    iter_fields = ITER_FIELDS
    setup_is_training = False

    def warm_up(self) -> None:
        """mips and decomp, with more kernels, paid most for a cold start."""
        settings = {**self.values, "epochs": 1, "dim": 8, "blocks": 0, "batch_size": 10, "reindex_every": 1,
                    "sample_size": 10, "retrieve": 0, "probes": 0, "clusters": 4, "sampled": 0}
        self.warm((), LdgsParams(**settings), multilabel=is_multilabel(self.Y))

    def setup(self) -> None:
        p = self.p
        self.Xr = Xr = kernel_rows(self.X, p.normalize)
        n, D = self.n, self.D = Xr.shape
        pos_ptr, pos_idx, K, multilabel = positives(self.Y, n)
        self.rank = frequency_rank(pos_idx, K)
        self.pos_ptr, self.pos_idx, self.K, self.multilabel = pos_ptr, self.rank[pos_idx], K, multilabel
        if n == 0 or K < 2:
            raise ValueError(f"nothing to train: {n} rows, {K} classes (LDGS needs at least 2)")
        self.loss = LOSSES[p.loss]
        self.mu = p.mu or (5.0 if multilabel else 1.0)
        self.B = B = p.blocks or (4 if multilabel else 8)
        h = p.dim or (128 if p.embedding == "svd" else 100)
        rng = np.random.default_rng([p.seed, 0])
        if p.embedding == "svd":
            V = svd_basis(Xr, h, p.seed)
        else:
            V = rng.normal(0.0, 1.0 / np.sqrt(h), (D, h))
        self.h = h = V.shape[1]
        if not 1 <= B <= h:
            raise ValueError(f"blocks must be between 1 and the embedding dimension {h}, got {B}")
        if p.embedding == "svd" and p.deal:  # every block a like share of the spectrum (see dealt_components)
            V = np.ascontiguousarray(V[:, dealt_components(block_bounds(h, B))])
        self.V = V
        self.tanh = p.tanh and p.embedding == "learned"
        # a record after a batch reads that batch's eta; the objective is checked for blow-ups after every epoch
        self.schedule = BatchSchedule(n, p.batch_size, p.epochs, p.records_per_epoch,
                                      np.random.default_rng([p.seed, 3]))
        self.total, self.batch, self.per_epoch = self.schedule.total, self.schedule.batch, self.schedule.per_epoch

    def embed(self, rows) -> np.ndarray:
        """phi of sparse rows, or of the training rows numbered `rows`."""
        sub = rows if sp.issparse(rows) else self.Xr[rows]
        return forward(sub.indptr.astype(np.int64), sub.indices.astype(np.int64), sub.data, self.V, self.tanh)

    def start(self) -> dict:
        p, K, h, Xr = self.p, self.K, self.h, self.Xr
        Xi = (Xr.indptr.astype(np.int64), Xr.indices.astype(np.int64), Xr.data)
        self.fixed = forward(*Xi, self.V, self.tanh) if p.embedding == "svd" else None
        self.W = W = class_means(self.fixed if self.fixed is not None else forward(*Xi, self.V, self.tanh),
                                 self.pos_ptr, self.pos_idx, K)
        self.q = q = min(p.retrieve or default_retrieve(K), K)
        common = dict(loss=self.loss, mu=self.mu, q=q, steps=p.steps, tau2=p.tau2,
                      sample=min(K, p.sampled or max(1, K // 100)), seed=p.seed, restrict=p.restrict)
        self.probes = probes = p.probes or default_probes(q, p.clusters, K, self.multilabel)
        self.indexes = {kind: BlockSphericalIndex(W, block_bounds(h, B), p.clusters, probes, p.kmeans_iter, p.seed,
                                                  p.reduction) for kind, B in (("mips", 1), ("decomp", self.B))}
        self.estimators = {kind: Estimator(kind, W, index=self.indexes.get(kind), **common) for kind in ESTIMATORS}
        self.dirty = {kind: np.zeros(K, np.bool_) for kind in self.indexes}
        sample = np.sort(np.random.default_rng([p.seed, 1]).choice(self.n, min(p.sample_size, self.n), replace=False))
        held_out = None
        if self.options.validation is not None:
            validation = self.options.validation
            Xv = kernel_rows(with_columns(validation[0], self.D), p.normalize)
            v_ptr, v_idx, _, _ = positives(validation[1], Xv.shape[0])
            v_idx = np.where(v_idx < K, self.rank[np.minimum(v_idx, K - 1)], v_idx)
            pick = np.sort(np.random.default_rng([p.seed, 2]).choice(Xv.shape[0], min(p.sample_size, Xv.shape[0]),
                                                                     replace=False))
            v_ptr, v_idx = _take(v_ptr, v_idx, pick)
            held_out = (Xv[pick], v_ptr, v_idx)
        self.diagnostics = _Diagnostics(sample, _take(self.pos_ptr, self.pos_idx, sample), held_out, p, self.loss,
                                        self.mu, self.multilabel)
        self.counters = dict.fromkeys(CLOCK, 0.0)
        self.eta = p.eta0
        self.reference = max(self.diagnostics.objective(W, self.embed), float(np.log(K)))
        return {"n": self.n, "n_features": self.D, "n_labels": K, "embedding_dim": h, "blocks": self.B,
                "retrieve": q, "probes": probes, "mu": self.mu, "multilabel": self.multilabel}

    def steps(self) -> Iterator[int]:
        K, W, V, Xr, fixed, tanh, clock = self.K, self.W, self.V, self.Xr, self.fixed, self.tanh, self.counters
        pos_ptr, pos_idx, per_epoch, estimator = self.pos_ptr, self.pos_idx, self.per_epoch, self.estimators[
            self.p.gradient]
        dense = np.zeros((K, self.batch))  # a batch's coefficients, class-major (see engine.ldgs.scatter)
        touched = np.zeros(K, np.bool_)
        hit = np.empty(K + 1, np.int64)  # the classes a batch changed (see engine.ldgs.scatter)
        # read once: a param attribute costs microseconds, and a small batch's bookkeeping adds up
        learned, eta0, reindex_every = self.p.embedding == "learned", self.p.eta0, self.p.reindex_every
        trained = self.indexes.get(self.p.gradient)  # None for exact and sampled
        trained_dirty = self.dirty.get(self.p.gradient)
        marks = list(self.dirty.values())
        start = None  # the first batch's mean estimated loss: the scale a diverging run leaves
        for rows in self.schedule:
            step = self.schedule.step
            eta = self.eta = eta0 / (1.0 + step / per_epoch)
            b_ptr, b_idx = _take(pos_ptr, pos_idx, rows)
            sub = Xr[rows] if fixed is None else None
            phi = fixed[rows] if fixed is not None else forward(
                sub.indptr.astype(np.int64), sub.indices.astype(np.int64), sub.data, V, tanh)
            est = estimator(phi, b_ptr, b_idx, clock)
            if start is None:
                start = max(1.0, float(np.mean(est.value[:len(rows)])))
            t0 = time.perf_counter()
            classes = hit[:scatter(est.U, est.coef, est.count, dense, touched, hit)]
            if learned:
                dphi = embedding_gradient(W, est.U, est.coef, est.count, phi, tanh)
            step_classes(W, classes, dense, touched, phi, eta)
            if learned:
                coo = sub.tocoo()
                order_f = np.argsort(coo.col, kind="stable")
                features, starts = np.unique(coo.col[order_f], return_index=True)
                feat_ptr = np.append(starts, coo.col.size).astype(np.int64)
                step_features(V, feat_ptr, features.astype(np.int64), coo.row[order_f].astype(np.int64),
                              coo.data[order_f], dphi, eta)
            t1 = time.perf_counter()
            _check_step(W, classes, V, features if learned else None, est.value[:len(rows)], start, step, per_epoch,
                        eta0)
            for mark in marks:
                mark[classes] = True
            if trained is not None:  # the search reads the changed rows' new values at once
                trained.refresh(classes)
                if (step + 1) % reindex_every == 0:
                    trained.update(np.flatnonzero(trained_dirty))
                    trained_dirty[:] = False
            t2 = time.perf_counter()
            clock["update_seconds"] += t1 - t0
            clock["reindex_seconds"] += t2 - t1
            yield step + 1

    def due(self, step: int) -> bool:
        return self.schedule.due(step)

    def after_step(self, step: int) -> None:
        if self.schedule.ends_epoch(step):
            last = self.last_row
            if last is not None and last["batch"] == step:
                objective = last["objective"]
            else:  # no record of this batch (no recorder): measured aside, not training time
                with self.clock.measuring():
                    objective = self.diagnostics.objective(self.W, self.embed)
            # W stays finite (_check_step): the objective is what can still blow up
            _check_diverged(objective, self.reference, step // self.per_epoch, self.p.eta0)

    def window(self, step: int) -> dict:
        row = {"batch": step, "epoch": step / self.per_epoch, "eta": self.eta, **self.counters}
        self.counters.update(dict.fromkeys(CLOCK, 0.0))
        return row

    def measure(self, step: int) -> dict:
        for kind, index in self.indexes.items():  # the diagnostic-only index catches up (not training time)
            if kind != self.p.gradient and self.dirty[kind].any():
                index.update(np.flatnonzero(self.dirty[kind]))
                self.dirty[kind][:] = False
        return self.diagnostics.measure(self.W, self.embed, self.estimators, self.p.gradient)

    def finish(self) -> None:
        """The last batch's picture, for the model's info, recorded when the schedule did not."""
        if self.last_row is None or self.last_row["batch"] != self.done:
            self.record(self.done)

    def model(self, info: dict) -> EmbeddingModel:
        epochs_done = self.done / self.per_epoch
        info.update({"batches": self.done, "epochs_done": epochs_done,
                     "epoch_seconds": self.train_seconds / max(epochs_done, 1e-12), "batch_size": self.batch,
                     "n_train": self.n, "embedding_dim": self.h, "blocks": self.B, "retrieve": self.q,
                     "probes": self.probes, "mu": self.mu, "multilabel": self.multilabel})
        last = self.last_row
        info.update({k: last[k] for k in ("objective", "search_recall", "gradient_cosine") if np.isfinite(last[k])})
        return EmbeddingModel(V=self.V, W=self.W[self.rank], tanh=self.tanh, normalize=self.p.normalize, solver="ldgs",
                              params=self.values, info=info)


def fit_ldgs(X: sp.spmatrix, Y, params: LdgsParams | None = None, **options) -> EmbeddingModel:
    """Train LDGS on X (n x D) and Y (n x K 0/1 matrix, multi-label rows kept as positive sets, or
    class ids). options: those of solvers._driver.FitOptions (an unknown one raises TypeError);
    validation (X, Y) is measured while training, progress(batches done, in all) follows every
    batch, stop() is asked between batches (a stopped run returns the model so far)."""
    return _Ldgs(X, Y, params or LdgsParams(), **options).fit()
