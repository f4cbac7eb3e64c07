"""PPDSparse (Yen et al., KDD 2017): one-vs-all elastic-net linear models solved in the dual.

Per label the primal is F(w) = lam*||w_{-0}||_1 + 0.5*tau*||w||^2 + C * sum_i loss(y_i w.x_i), with
the bias w_0 untouched by the l1 term and loss the hinge or the squared hinge (LIBLINEAR scaling,
max(0, 1 - m)^2). Its dual is

    G(a) = 0.5*tau*||w(a)||^2 - sum_i a_i (+ sum_i a_i^2 / (4C) for the squared hinge),
    w(a) = prox(X^T diag(y) a) / tau, 0 <= a_i <= U (U = C hinge, infinity squared hinge),

where prox soft-thresholds every coordinate but the bias by lam. The greedy active-set method
(Algorithm 1) starts from the label's positives, adds per outer iteration the kappa rows of most
negative dual gradient (14) found by a column-wise search over a sparsified w (Algorithm 3, R
draws; two-level sparsification of Section 5.3 skips column entries below a threshold), minimises
over the active set by S passes of randomised dual coordinate descent (Algorithm 2), and drops
rows whose a_i returned to zero. It stops when an exact search finds no row violating by more
than eps and the last coordinate pass moved no projected gradient by more than eps.

Every label seeds numba's per-thread generator with seed + label, so results do not depend on
the number of threads.

The arguments that travel together reach `train_block` as named tuples (numba compiles their field
reads away): the training rows (`indptr`, `indices`, `data`: the solvers' `TrainingRows`), X's
`Columns`, the `Positives` of each label and the `Settings`; each worker's `Scratch` reaches
`solve_label` as one.
"""
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .atomic import fetch_add
from .clock import monotonic_ns
from .positives import Positives  # noqa: F401  (the drivers pass K.Positives)
from .topk import insert_topk

HINGE = 0
SQUARED_HINGE = 1

ITER_FIELDS = ("wall", "seconds", "objective", "dual_objective", "duality_gap", "active_set", "nnz",
               "nnz_search", "rows_touched", "search_seconds", "solve_seconds", "maintain_seconds")
LABEL_FIELDS = ("iterations", "seconds", "n_pos", "objective", "dual_objective", "duality_gap", "alpha_l1",
                "w_l1", "status", "nnz", "wall")

STATUS_CONVERGED = 0
STATUS_MAX_ITER = 1
STATUS_NAMES = ("converged", "max_iter")


class Columns(NamedTuple):
    """X in CSC; with x_threshold > 0 each column's entries sorted by decreasing magnitude (the two-level search)."""

    ptr: np.ndarray
    row: np.ndarray
    val: np.ndarray


class Settings(NamedTuple):
    """The solver's constants, the same for every label of a run (the driver's parameters)."""

    loss: int             # HINGE or SQUARED_HINGE
    C: float
    lam: float            # l1 weight
    tau: float            # l2 weight
    kappa: int            # rows added to the active set per outer iteration
    passes: int           # coordinate-descent passes per outer iteration
    draws: int            # samples of the sparsified w in the search, 0: exact search
    x_threshold: float    # entries of X the search skips
    eps: float
    max_iter: int
    bias_index: int       # the bias feature's column, -1 without one
    bias_value: float
    seed: int             # label l's generator starts from seed + l


class Scratch(NamedTuple):
    """One worker's arrays for `solve_label`: zeroed (mark: -1) between labels."""

    alpha: np.ndarray     # per row: dual variables, in the active set, the active set, search scores
    in_a: np.ndarray
    active: np.ndarray
    score: np.ndarray
    touched: np.ndarray
    seen: np.ndarray
    u: np.ndarray         # per feature: X^T diag(y) alpha and its support
    supp_mark: np.ndarray
    supp: np.ndarray
    w_idx: np.ndarray     # w's non-zeros and their sparsified sample
    w_val: np.ndarray
    s_idx: np.ndarray
    s_val: np.ndarray
    mark: np.ndarray
    cumulative: np.ndarray
    top_row: np.ndarray   # per search: the kappa best rows and their violations
    top_val: np.ndarray


@njit(cache=True, nogil=True)
def _weight(uj, is_bias, lam, inv_tau):
    """w_j from u_j (u = X^T diag(y) a): soft-thresholded by lam unless it is the bias, times 1/tau."""
    if is_bias:
        return uj * inv_tau
    if uj > lam:
        return (uj - lam) * inv_tau
    if uj < -lam:
        return (uj + lam) * inv_tau
    return 0.0


@njit(cache=True, nogil=True)
def sparsify(w_idx, w_val, nnz, draws, out_idx, out_val, mark, cumulative):
    """Algorithm 3: an unbiased sparse estimate of w from `draws` samples j ~ |w_j| / ||w||_1.

    Writes the support into out_idx/out_val (using `mark` as a dense scratch of -1) and returns
    its size. E[w~] = w and Var[<w~, x>] <= ||w||_1^2 max|x|^2 / draws (Theorem 4.1)."""
    total = 0.0
    for q in range(nnz):
        total += abs(w_val[q])
        cumulative[q] = total
    if total == 0.0:
        return 0
    count = 0
    step = total / draws
    for _ in range(draws):
        r = np.random.random() * total
        lo, hi = 0, nnz - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cumulative[mid] <= r:
                lo = mid + 1
            else:
                hi = mid
        j = w_idx[lo]
        inc = step if w_val[lo] > 0 else -step
        if mark[j] < 0:
            mark[j] = count
            out_idx[count] = j
            out_val[count] = inc
            count += 1
        else:
            out_val[mark[j]] += inc
    for q in range(count):
        mark[out_idx[q]] = -1
    return count


@njit(cache=True, nogil=True)
def _loss(d, loss):
    """loss at 1 - y_i w.x_i = d: max(0, d) (hinge) or max(0, d)^2 (squared hinge)."""
    if d <= 0.0:
        return 0.0
    return d if loss == HINGE else d * d


@njit(cache=True, nogil=True)
def _search(s_idx, s_val, s_nnz, bias_w, c_ptr, c_row, c_val, x_threshold, y, in_a, n_outside, loss, eps, kappa,
            score, touched, seen, top_row, top_val):
    """The kappa rows outside the active set with the most negative dual gradient, below -eps.

    A row outside the set has a_i = 0 and gradient y_i (bias_w + sum_j s_j x_ij) - 1. With
    x_threshold > 0 the columns of X are sorted by decreasing |x_ij|, so the two-level
    sparsification stops a column at the first entry below it. Rows that share no feature with s only see the bias; they are scanned
    only while the bias alone leaves negatives violating. Returns (rows found, rows touched: the
    distinct rows reached through a column or read by the bias-only scan, the sum of the losses of
    the n_outside rows outside the active set). The rows outside are negatives (every positive stays
    in the set), so the untouched ones lose loss(1 + bias_w) each; the sum is the loss of w at those
    rows when s is w and x_threshold is 0."""
    n_touched = 0
    for q in range(s_nnz):
        j = s_idx[q]
        sv = s_val[q]
        for p in range(c_ptr[j], c_ptr[j + 1]):
            v = c_val[p]
            if abs(v) < x_threshold:
                break
            i = c_row[p]
            if seen[i] == 0:
                seen[i] = 1
                touched[n_touched] = i
                n_touched += 1
            score[i] += sv * v
    found = 0
    outside_loss = 0.0
    touched_outside = 0
    for t in range(n_touched):
        i = touched[t]
        if in_a[i] == 0:
            touched_outside += 1
            violation = 1.0 - y[i] * (bias_w + score[i])
            outside_loss += _loss(violation, loss)
            if violation > eps:
                found = insert_topk(i, violation, kappa, top_row, top_val, found)
    untouched_negative = 1.0 + bias_w
    outside_loss += (n_outside - touched_outside) * _loss(untouched_negative, loss)
    scanned = 0
    if untouched_negative > eps and (found < kappa or untouched_negative > top_val[kappa - 1]):
        for i in range(y.shape[0]):
            if seen[i] == 0:
                scanned += 1
                if in_a[i] == 0 and y[i] < 0:
                    found = insert_topk(i, untouched_negative, kappa, top_row, top_val, found)
                    if found == kappa and top_val[kappa - 1] >= untouched_negative:
                        break
    for t in range(n_touched):
        i = touched[t]
        score[i] = 0.0
        seen[i] = 0
    return found, n_touched + scanned, outside_loss


@njit(cache=True, nogil=True)
def _row_margin(indptr, indices, data, i, w):
    acc = 0.0
    for k in range(indptr[i], indptr[i + 1]):
        acc += data[k] * w[indices[k]]
    return acc


@njit(cache=True, nogil=True)
def _search_rows(indptr, indices, data, w, y, in_a, loss, eps, kappa, top_row, top_val):
    """Exact search row by row: cheaper than by columns once w touches most columns of X.
    Returns (rows found, rows touched: all of them, the sum of the losses of the rows outside the set)."""
    found = 0
    outside_loss = 0.0
    for i in range(y.shape[0]):
        if in_a[i] == 0:
            violation = 1.0 - y[i] * _row_margin(indptr, indices, data, i, w)
            outside_loss += _loss(violation, loss)
            if violation > eps:
                found = insert_topk(i, violation, kappa, top_row, top_val, found)
    return found, y.shape[0], outside_loss


@njit(cache=True, nogil=True)
def _coordinate_descent(indptr, indices, data, rownorm2, y, alpha, u, w, supp_mark, supp, n_supp, active, n_active,
                        passes, loss, C, lam, tau, bias_index, timed):
    """Algorithm 2: `passes` randomly permuted passes of dual coordinate descent over the active set,
    maintaining u = X^T diag(y) a and w = w(a) (13) after every change.

    Returns (support size of u, largest projected-gradient violation of the last pass, nanoseconds
    spent maintaining u and w, measured only when `timed`)."""
    upper = C if loss == HINGE else np.inf
    diag = 0.0 if loss == HINGE else 0.5 / C
    pg_max = 0.0
    maintain_ns = 0
    t_m = 0
    inv_tau = 1.0 / tau
    for _ in range(passes):
        for q in range(n_active - 1, 0, -1):
            r = np.random.randint(0, q + 1)
            active[q], active[r] = active[r], active[q]
        pg_max = 0.0
        for q in range(n_active):
            i = active[q]
            g = y[i] * _row_margin(indptr, indices, data, i, w) - 1.0 + diag * alpha[i]
            a = alpha[i]
            if a == 0.0:
                pg = min(g, 0.0)
            elif a >= upper:
                pg = max(g, 0.0)
            else:
                pg = g
            pg_max = max(pg_max, abs(pg))
            if pg == 0.0:
                continue
            h = rownorm2[i] / tau + diag
            new = min(max(a - g / h, 0.0), upper)
            delta = new - a
            if delta == 0.0:
                continue
            alpha[i] = new
            c = delta * y[i]
            if timed:
                t_m = monotonic_ns()
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                u[j] += c * data[k]
                w[j] = _weight(u[j], j == bias_index, lam, inv_tau)
                if supp_mark[j] == 0:
                    supp_mark[j] = 1
                    supp[n_supp] = j
                    n_supp += 1
            if timed:
                maintain_ns += monotonic_ns() - t_m
    return n_supp, pg_max, maintain_ns


@njit(cache=True, nogil=True)
def _norms(w, supp, n_supp, bias_index):
    """(||w||^2, ||w||_1 without the bias) of a w that is zero outside supp."""
    sq = 0.0
    l1 = 0.0
    for q in range(n_supp):
        j = supp[q]
        sq += w[j] * w[j]
        if j != bias_index:
            l1 += abs(w[j])
    return sq, l1


@njit(cache=True, nogil=True)
def _dual(alpha, active, n_active, w, supp, n_supp, loss, C, tau, bias_index):
    """G(alpha) for the materialised w = w(alpha), zero outside supp (alpha zero outside the active set)."""
    dual = 0.5 * tau * _norms(w, supp, n_supp, bias_index)[0]
    for q in range(n_active):
        a = alpha[active[q]]
        dual -= a
        if loss == SQUARED_HINGE:
            dual += a * a / (4.0 * C)
    return dual


@njit(cache=True, nogil=True)
def _primal(indptr, indices, data, y, active, n_active, w, supp, n_supp, outside_loss, loss, C, lam, tau, bias_index):
    """F(w) for w zero outside supp. Its losses are outside_loss (the rows outside the active set,
    summed by an exact search) plus a pass over the active rows; a negative outside_loss asks for a
    pass over all rows instead."""
    sq, l1 = _norms(w, supp, n_supp, bias_index)
    if outside_loss < 0.0:
        losses = 0.0
        for i in range(y.shape[0]):
            losses += _loss(1.0 - y[i] * _row_margin(indptr, indices, data, i, w), loss)
    else:
        losses = outside_loss
        for q in range(n_active):
            i = active[q]
            losses += _loss(1.0 - y[i] * _row_margin(indptr, indices, data, i, w), loss)
    return lam * l1 + 0.5 * tau * sq + C * losses


@njit(cache=True, nogil=True)
def _exact_search(indptr, indices, data, w, w_idx, w_val, nnz, bias_w, c_ptr, c_row, c_val, x_threshold, y, in_a,
                  n_outside, loss, eps, kappa, score, touched, seen, top_row, top_val):
    """Search with the exact w: by columns (two-level threshold honoured), or by rows when the
    columns of w would cover more than half of X anyway. Returns (rows found, rows touched, the
    losses of the rows outside the set: exact when x_threshold is 0)."""
    cost = 0
    for q in range(nnz):
        cost += c_ptr[w_idx[q] + 1] - c_ptr[w_idx[q]]
    if x_threshold == 0.0 and 2 * cost > indptr[indptr.shape[0] - 1]:
        return _search_rows(indptr, indices, data, w, y, in_a, loss, eps, kappa, top_row, top_val)
    return _search(w_idx, w_val, nnz, bias_w, c_ptr, c_row, c_val, x_threshold, y, in_a, n_outside, loss, eps, kappa,
                   score, touched, seen, top_row, top_val)


@njit(cache=True, nogil=True)
def _keep_violating(indptr, indices, data, w, y, eps, top_row, found):
    """Keep, in order, the first `found` rows of top_row whose exact violation 1 - y_i w.x_i exceeds eps."""
    kept = 0
    for q in range(found):
        i = top_row[q]
        if 1.0 - y[i] * _row_margin(indptr, indices, data, i, w) > eps:
            top_row[kept] = i
            kept += 1
    return kept


@njit(cache=True, nogil=True)
def solve_label(rows, rownorm2, columns, y, n_pos, settings, seed, t0_ns, record, rec, summary, w, scratch):
    """Algorithm 1 for one label (y = +-1 per row), its generator seeded with `seed`.

    w (zero on entry) is maintained as w(alpha) throughout and holds the solution at the end. The
    arrays of `scratch` are of the right size, zeroed (mark: -1) on entry and left so."""
    indptr, indices, data = rows.indptr, rows.indices, rows.data
    c_ptr, c_row, c_val = columns
    loss, C, lam, tau, kappa, passes, draws, x_threshold, eps, max_iter, bias_index, bias_value, _ = settings
    (alpha, in_a, active, score, touched, seen, u, supp_mark, supp, w_idx, w_val, s_idx, s_val, mark,
     cumulative, top_row, top_val) = scratch
    t_start = monotonic_ns()
    np.random.seed(seed)
    n = y.shape[0]
    n_active = 0
    for i in range(n):
        if y[i] > 0:
            active[n_active] = i
            in_a[i] = 1
            n_active += 1
    n_supp = 0
    pg_last = np.inf
    outside_loss = -1.0
    status = STATUS_MAX_ITER
    it = 0
    t_prev = t_start
    while it < max_iter:
        t_a = monotonic_ns()
        nnz = 0
        for q in range(n_supp):
            j = supp[q]
            if w[j] != 0.0 and j != bias_index:
                w_idx[nnz] = j
                w_val[nnz] = w[j]
                nnz += 1
        bias_w = w[bias_index] * bias_value if bias_index >= 0 else 0.0
        t_b = monotonic_ns()
        n_outside = n - n_active
        if draws <= 0 or nnz <= draws:
            s_nnz = nnz
            found, n_touched, outside_loss = _exact_search(
                indptr, indices, data, w, w_idx, w_val, nnz, bias_w, c_ptr, c_row, c_val, x_threshold, y, in_a,
                n_outside, loss, eps, kappa, score, touched, seen, top_row, top_val)
        else:
            s_nnz = sparsify(w_idx, w_val, nnz, draws, s_idx, s_val, mark, cumulative)
            found, n_touched, outside_loss = _search(s_idx, s_val, s_nnz, bias_w, c_ptr, c_row, c_val, x_threshold, y,
                                                     in_a, n_outside, loss, eps, kappa, score, touched, seen,
                                                     top_row, top_val)
        if s_nnz < nnz or x_threshold > 0.0:
            # an inexact search (sparsified w or thresholded X) only proposes: keep the rows that truly
            # violate, and let only an exact, unthresholded search declare that none is left
            outside_loss = -1.0
            found = _keep_violating(indptr, indices, data, w, y, eps, top_row, found)
            if found == 0:
                found, n_exact, outside_loss = _exact_search(
                    indptr, indices, data, w, w_idx, w_val, nnz, bias_w, c_ptr, c_row, c_val, 0.0, y, in_a,
                    n_outside, loss, eps, kappa, score, touched, seen, top_row, top_val)
                n_touched += n_exact
        t_c = monotonic_ns()
        if record and it > 0:
            # the previous iteration's primal: w has not moved since, and an exact search has just
            # summed the losses of the rows outside the active set (outside_loss < 0: it has not)
            primal = _primal(indptr, indices, data, y, active, n_active, w, supp, n_supp, outside_loss, loss, C, lam,
                             tau, bias_index)
            rec[it - 1, 2] = primal
            rec[it - 1, 4] = primal + rec[it - 1, 3]
        if found == 0 and pg_last <= eps:
            status = STATUS_CONVERGED
            break
        t_s = monotonic_ns()
        for q in range(found):
            i = top_row[q]
            active[n_active] = i
            in_a[i] = 1
            n_active += 1
        n_supp, pg_last, maintain_ns = _coordinate_descent(indptr, indices, data, rownorm2, y, alpha, u, w, supp_mark,
                                                           supp, n_supp, active, n_active, passes, loss, C, lam,
                                                           tau, bias_index, record)
        kept = 0
        for q in range(n_active):
            i = active[q]
            if alpha[i] > 0.0 or y[i] > 0:
                active[kept] = i
                kept += 1
            else:
                in_a[i] = 0
        n_active = kept
        t_d = monotonic_ns()
        it += 1
        if record:
            # the primal waits for the next iteration's search (or the end) to need no pass over all rows
            dual = _dual(alpha, active, n_active, w, supp, n_supp, loss, C, tau, bias_index)
            nnz_now = 0
            for q in range(n_supp):
                if w[supp[q]] != 0.0:
                    nnz_now += 1
            t_now = monotonic_ns()
            rec[it - 1, 0] = (t_now - t0_ns) * 1e-9
            rec[it - 1, 1] = (t_now - t_prev) * 1e-9
            rec[it - 1, 3] = dual
            rec[it - 1, 5] = n_active
            rec[it - 1, 6] = nnz_now
            rec[it - 1, 7] = s_nnz
            rec[it - 1, 8] = n_touched
            rec[it - 1, 9] = (t_c - t_b) * 1e-9
            rec[it - 1, 10] = (t_d - t_s - maintain_ns) * 1e-9
            rec[it - 1, 11] = (t_b - t_a + maintain_ns) * 1e-9
            t_prev = t_now
    # converged: the last search was exact and w has not moved since; stopped at max_iter: a full pass
    primal = _primal(indptr, indices, data, y, active, n_active, w, supp, n_supp,
                     outside_loss if status == STATUS_CONVERGED else -1.0, loss, C, lam, tau, bias_index)
    dual = _dual(alpha, active, n_active, w, supp, n_supp, loss, C, tau, bias_index)
    if record and status == STATUS_MAX_ITER:
        rec[it - 1, 2] = primal
        rec[it - 1, 4] = primal + rec[it - 1, 3]
    alpha_l1 = 0.0
    for q in range(n_active):
        alpha_l1 += alpha[active[q]]
    w_l1 = 0.0
    nnz = 0
    for q in range(n_supp):
        j = supp[q]
        if w[j] != 0.0:
            nnz += 1
            if j != bias_index:
                w_l1 += abs(w[j])
    t_end = monotonic_ns()
    summary[0] = it
    summary[1] = (t_end - t_start) * 1e-9
    summary[2] = n_pos
    summary[3] = primal
    summary[4] = dual
    summary[5] = primal + dual
    summary[6] = alpha_l1
    summary[7] = w_l1
    summary[8] = status
    summary[9] = nnz
    summary[10] = (t_end - t0_ns) * 1e-9
    for q in range(n_active):
        i = active[q]
        alpha[i] = 0.0
        in_a[i] = 0
    for q in range(n_supp):
        j = supp[q]
        u[j] = 0.0
        supp_mark[j] = 0


@njit(cache=True, nogil=True, parallel=True)
def train_block(rows, rownorm2, columns, positives, labels, settings, t0_ns, record, n_workers, W_out, rec, summ):
    """Solve the labels of a block; workers take labels from a shared atomic counter (see newton)."""
    n = rows.indptr.shape[0] - 1
    pos_ptr, pos_rows = positives.ptr, positives.rows
    dim = W_out.shape[1]
    counter = np.zeros(1, np.int64)
    for _worker in prange(n_workers):
        y = np.empty(n)
        alpha = np.zeros(n)
        in_a = np.zeros(n, np.uint8)
        active = np.empty(n, np.int64)
        score = np.zeros(n)
        touched = np.empty(n, np.int64)
        seen = np.zeros(n, np.uint8)
        u = np.zeros(dim)
        supp_mark = np.zeros(dim, np.uint8)
        supp = np.empty(dim, np.int64)
        w_idx = np.empty(dim, np.int64)
        w_val = np.empty(dim)
        s_idx = np.empty(dim, np.int64)
        s_val = np.empty(dim)
        mark = np.full(dim, -1, np.int64)
        cumulative = np.empty(dim)
        top_row = np.empty(settings.kappa, np.int64)
        top_val = np.empty(settings.kappa)
        scratch = Scratch(alpha, in_a, active, score, touched, seen, u, supp_mark, supp, w_idx, w_val, s_idx, s_val,
                          mark, cumulative, top_row, top_val)
        while True:
            b = fetch_add(counter, 0, 1)
            if b >= labels.shape[0]:
                break
            lab = labels[b]
            for i in range(n):
                y[i] = -1.0
            for q in range(pos_ptr[lab], pos_ptr[lab + 1]):
                y[pos_rows[q]] = 1.0
            solve_label(rows, rownorm2, columns, y, pos_ptr[lab + 1] - pos_ptr[lab], settings, settings.seed + lab,
                        t0_ns, record, rec[b], summ[b], W_out[b], scratch)
