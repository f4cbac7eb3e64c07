"""Truncated-CG Newton for one-vs-all L2-regularised linear models (LIBLINEAR 2.4x `-s 2` / DiSMEC).

Per label the objective is 0.5*||w||^2 + C * sum_i loss(y_i w.x_i), the bias coordinate optionally
left out of the regulariser (LIBLINEAR `-R`). The Newton step solves H p = -g by preconditioned CG
(diagonal preconditioner, alpha_pcg = 0.01, quadratic-model stopping rule with eps_cg = 0.5) and is
followed by a backtracking line search (halving, eta = 0.01, at most 20 steps), exactly as
LIBLINEAR's `newton.cpp`. For the squared hinge, Hessian-vector products run over the active set
{i : y_i w.x_i < 1} only: the implicit negative mining that makes good initialisers fast.

Stopping rule, the same for every initialiser: ||g(w)|| <= eps * max(1, min(#pos, #neg)) / n *
||g(0)||, the gradient at w = 0, never at the starting point.

`train_block` trains a block of labels in parallel (workers take labels dynamically, one
workspace each); every label is computed by the same sequential code, so results do not depend on
the number of threads. Pass X's indptr as uint64 and its indices as uint32: with unsigned indices
numba drops the negative-index wraparound checks from the inner loops, which halves their cost.
Per-iteration diagnostics are written into a preallocated
(label x iteration x field) array; per-label summaries into a (label x field) array.
"""
import numpy as np
from numba import njit, prange

from .atomic import fetch_add
from .clock import monotonic_ns

SQUARED_HINGE = 0
LOGISTIC = 1

INIT_ZERO = 0
INIT_BIAS = 1
INIT_VECTOR = 2
INIT_MSI = 3

ITER_FIELDS = ("wall", "seconds", "objective", "grad_norm", "active_set", "cg_steps", "step_size", "nnz")
LABEL_FIELDS = ("iterations", "seconds", "n_pos", "objective", "objective_init", "grad_norm",
                "grad_norm0", "status", "nnz", "wall")

STATUS_CONVERGED = 0
STATUS_MAX_ITER = 1
STATUS_LINE_SEARCH_FAILED = 2
STATUS_NO_PROGRESS = 3
STATUS_NAMES = ("converged", "max_iter", "line_search_failed", "no_progress")

_ALPHA_PCG = 0.01
_ETA = 0.01
_MAX_LINESEARCH = 20


@njit(cache=True, nogil=True)
def _loss(loss, m):
    """Loss of margin m = y * w.x, without the factor C."""
    if loss == SQUARED_HINGE:
        d = 1.0 - m
        return d * d if d > 0.0 else 0.0
    if m >= 0.0:
        return np.log1p(np.exp(-m))
    return -m + np.log1p(np.exp(m))


@njit(cache=True, nogil=True)
def _row_dot(indices, data, v, k0, k1):
    """x_i . v over entries k0..k1 of a row, in four independent partial sums: a single running
    sum makes every multiply-add wait for the previous one, four let them overlap (same order on
    every run and thread count)."""
    one = np.uint64(1)
    two = np.uint64(2)
    three = np.uint64(3)
    four = np.uint64(4)
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    k = k0
    while k + four <= k1:
        a0 += data[k] * v[indices[k]]
        a1 += data[k + one] * v[indices[k + one]]
        a2 += data[k + two] * v[indices[k + two]]
        a3 += data[k + three] * v[indices[k + three]]
        k += four
    while k < k1:
        a0 += data[k] * v[indices[k]]
        k += one
    return (a0 + a1) + (a2 + a3)


@njit(cache=True, nogil=True)
def _xv(indptr, indices, data, v, out):
    """out = X v over all rows."""
    for i in range(out.shape[0]):
        out[i] = _row_dot(indices, data, v, indptr[i], indptr[i + 1])


@njit(cache=True, nogil=True)
def _regularised_dot(a, b, reg_bias, bias_index):
    """a.b without the bias coordinate when the bias is not regularised."""
    acc = 0.0
    for j in range(a.shape[0]):
        acc += a[j] * b[j]
    if bias_index >= 0 and not reg_bias:
        acc -= a[bias_index] * b[bias_index]
    return acc


@njit(cache=True, nogil=True)
def _loss_sum(loss, C, y, wx):
    acc = 0.0
    for i in range(wx.shape[0]):
        acc += _loss(loss, y[i] * wx[i])
    return C * acc


@njit(cache=True, nogil=True)
def _gradient(loss, C, indptr, indices, data, y, wx, w, reg_bias, bias_index, g, act, hcoef, M, cptr, cidx, cval):
    """g = grad L(w); fills the active set `act`, its Hessian weights and, in the same pass over
    the active rows, the diagonal preconditioner M of the next CG solve and a contiguous copy of
    the active rows (cptr/cidx/cval, as many leading active rows as cidx holds): the Hessian
    products of the CG solve then stream through them instead of jumping between rows of X.
    Returns (size of the active set, number of rows copied)."""
    for j in range(g.shape[0]):
        g[j] = w[j]
        M[j] = 1.0
    if bias_index >= 0 and not reg_bias:
        M[bias_index] = 0.0
    nact = 0
    ncomp = 0
    cap = np.uint64(cidx.shape[0])
    pos = np.uint64(0)
    cptr[0] = 0
    n = wx.shape[0]
    if loss == SQUARED_HINGE:
        for i in range(n):  # the active set without a branch per row (rows in and out alternate unpredictably)
            act[nact] = i
            nact += 1 if y[i] * wx[i] < 1.0 else 0
    else:
        for i in range(n):
            act[i] = i
        nact = n
    for a in range(nact):
        i = act[a]
        m = y[i] * wx[i]
        if loss == SQUARED_HINGE:
            gc = 2.0 * C * y[i] * (m - 1.0)
            h = 2.0 * C
        else:
            sig = 1.0 / (1.0 + np.exp(-m))
            gc = C * (sig - 1.0) * y[i]
            h = C * sig * (1.0 - sig)
        hcoef[a] = h
        k0 = indptr[i]
        k1 = indptr[i + 1]
        if ncomp == a and pos + (k1 - k0) <= cap:
            for k in range(k0, k1):
                j = indices[k]
                x = data[k]
                g[j] += gc * x
                M[j] += h * x * x
                cidx[pos] = j
                cval[pos] = x
                pos += np.uint64(1)
            ncomp += 1
            cptr[ncomp] = pos
        else:
            for k in range(k0, k1):
                g[indices[k]] += gc * data[k]
                M[indices[k]] += h * data[k] * data[k]
    if bias_index >= 0 and not reg_bias:
        g[bias_index] -= w[bias_index]
    for j in range(M.shape[0]):
        M[j] = (1.0 - _ALPHA_PCG) + _ALPHA_PCG * M[j]
    return nact, ncomp


@njit(cache=True, nogil=True)
def _preconditioner(indptr, indices, data, act, nact, hcoef, reg_bias, bias_index, M):
    """The diagonal preconditioner of CG for a caller whose gradient comes from elsewhere (DS-MLR's
    per-class Newton); the one-vs-all loop builds it inside `_gradient`'s pass instead."""
    for j in range(M.shape[0]):
        M[j] = 1.0
    if bias_index >= 0 and not reg_bias:
        M[bias_index] = 0.0
    for a in range(nact):
        i = act[a]
        for k in range(indptr[i], indptr[i + 1]):
            M[indices[k]] += hcoef[a] * data[k] * data[k]
    for j in range(M.shape[0]):
        M[j] = (1.0 - _ALPHA_PCG) + _ALPHA_PCG * M[j]


@njit(cache=True, nogil=True)
def _hess_vec_rows(indptr, indices, data, act, nact, hcoef, cptr, cidx, cval, ncomp, d, reg_bias, bias_index, hd):
    """hd = H d, summing over the active set only: its first ncomp rows from their contiguous
    copy (see `_gradient`), the rest through `act`."""
    for j in range(d.shape[0]):
        hd[j] = d[j]
    for a in range(ncomp):
        k0 = cptr[a]
        k1 = cptr[a + 1]
        c = hcoef[a] * _row_dot(cidx, cval, d, k0, k1)
        for k in range(k0, k1):
            hd[cidx[k]] += c * cval[k]
    for a in range(ncomp, nact):
        i = act[a]
        c = hcoef[a] * _row_dot(indices, data, d, indptr[i], indptr[i + 1])
        for k in range(indptr[i], indptr[i + 1]):
            hd[indices[k]] += c * data[k]
    if bias_index >= 0 and not reg_bias:
        hd[bias_index] -= d[bias_index]


@njit(cache=True, nogil=True)
def _hess_vec(indptr, indices, data, act, nact, hcoef, d, reg_bias, bias_index, hd):
    """hd = H d over the active rows of X, read through `act` (no contiguous copy)."""
    none = np.zeros(1, np.uint64)
    _hess_vec_rows(indptr, indices, data, act, nact, hcoef, none, indices[:0], data[:0], 0, d, reg_bias,
                   bias_index, hd)


@njit(cache=True, nogil=True)
def _pcg(indptr, indices, data, act, nact, hcoef, reg_bias, bias_index, cg_eps, g, M, s, r, d, hd, z):
    """Preconditioned CG on H s = -g, the active rows read through `act` (DS-MLR's per-class Newton)."""
    none = np.zeros(1, np.uint64)
    return _pcg_rows(indptr, indices, data, act, nact, hcoef, none, indices[:0], data[:0], 0, reg_bias, bias_index,
                     cg_eps, g, M, s, r, d, hd, z)


@njit(cache=True, nogil=True)
def _pcg_rows(indptr, indices, data, act, nact, hcoef, cptr, cidx, cval, ncomp, reg_bias, bias_index, cg_eps,
              g, M, s, r, d, hd, z):
    """Preconditioned CG on H s = -g with LIBLINEAR's quadratic-model stopping rule (the active
    rows as `_hess_vec_rows` takes them)."""
    dim = g.shape[0]
    ztr = 0.0
    for j in range(dim):
        s[j] = 0.0
        r[j] = -g[j]
        z[j] = r[j] / M[j]
        d[j] = z[j]
        ztr += z[j] * r[j]
    cgtol = min(cg_eps, np.sqrt(np.sqrt(ztr)))
    max_cg = max(dim, 5)
    q_old = 0.0
    cg_iter = 0
    while cg_iter < max_cg:
        cg_iter += 1
        _hess_vec_rows(indptr, indices, data, act, nact, hcoef, cptr, cidx, cval, ncomp, d, reg_bias, bias_index, hd)
        dhd = 0.0
        for j in range(dim):
            dhd += d[j] * hd[j]
        if dhd <= 1.0e-16:
            break
        alpha = ztr / dhd
        q_new = 0.0
        for j in range(dim):
            s[j] += alpha * d[j]
            r[j] -= alpha * hd[j]
            q_new += s[j] * (r[j] - g[j])
        q_new *= -0.5
        q_diff = q_new - q_old
        if q_new > 0.0 or q_diff > 0.0:
            break
        if cg_iter * q_diff >= cgtol * q_new:
            break
        q_old = q_new
        ztr_new = 0.0
        for j in range(dim):
            z[j] = r[j] / M[j]
            ztr_new += z[j] * r[j]
        beta = ztr_new / ztr
        for j in range(dim):
            d[j] = z[j] + beta * d[j]
        ztr = ztr_new
    return cg_iter


@njit(cache=True, nogil=True)
def _line_search(loss, C, indptr, indices, data, y, w, s, g, wx, xs, f_old, wtw, reg_bias, bias_index):
    """Backtracking line search along s; updates w and wx on success.

    Returns (step, f_new, wTw_new); step = 0 means failure (w unchanged)."""
    acc1 = 0.0  # the loss of the full step, summed in the pass that computes X s
    for i in range(wx.shape[0]):
        xs[i] = _row_dot(indices, data, s, indptr[i], indptr[i + 1])
        acc1 += _loss(loss, y[i] * (wx[i] + xs[i]))
    sts = _regularised_dot(s, s, reg_bias, bias_index)
    wts = _regularised_dot(w, s, reg_bias, bias_index)
    gts = 0.0
    for j in range(s.shape[0]):
        gts += g[j] * s[j]
    alpha = 1.0
    for trial in range(_MAX_LINESEARCH):
        acc = acc1
        if trial > 0:
            acc = 0.0
            for i in range(wx.shape[0]):
                acc += _loss(loss, y[i] * (wx[i] + alpha * xs[i]))
        f_new = C * acc + 0.5 * (alpha * alpha * sts + 2.0 * alpha * wts + wtw)
        if f_new - f_old <= _ETA * alpha * gts:
            for i in range(wx.shape[0]):
                wx[i] += alpha * xs[i]
            for j in range(w.shape[0]):
                w[j] += alpha * s[j]
            return alpha, f_new, wtw + alpha * alpha * sts + 2.0 * alpha * wts
        alpha *= 0.5
    return 0.0, f_old, wtw


@njit(cache=True, nogil=True)
def compact_capacity(nnz):
    """Entries of a worker's contiguous copy of the active rows: a third of X's, enough for the
    active sets good initialisers give (15-20% of the rows); rows beyond it are read in place."""
    return nnz // np.uint64(3)


@njit(cache=True, nogil=True)
def _norm(v):
    acc = 0.0
    for j in range(v.shape[0]):
        acc += v[j] * v[j]
    return np.sqrt(acc)


@njit(cache=True, nogil=True)
def _count_nonzero(v):
    c = 0
    for j in range(v.shape[0]):
        if v[j] != 0.0:
            c += 1
    return c


@njit(cache=True, nogil=True)
def newton(indptr, indices, data, y, w, tol, gnorm0, loss, C, cg_eps, max_iter, reg_bias, bias_index,
           g, s, r, d, hd, z, M, wx, xs, hcoef, act, cptr, cidx, cval, t0_ns, record, rec, summary):
    """Minimise one label's objective from the starting point in `w` (updated in place).

    cptr (n + 1), cidx and cval (any length, even 0) receive the contiguous copy of the active rows
    each Newton iteration (see `_gradient`).

    rec[t] receives the diagnostics after Newton iteration t (t = 0: the starting point) when
    `record` is true; summary receives LABEL_FIELDS (except n_pos, filled by the caller)."""
    t_start = monotonic_ns()
    _xv(indptr, indices, data, w, wx)
    wtw = _regularised_dot(w, w, reg_bias, bias_index)
    f = _loss_sum(loss, C, y, wx) + 0.5 * wtw
    nact, ncomp = _gradient(loss, C, indptr, indices, data, y, wx, w, reg_bias, bias_index, g, act, hcoef, M,
                            cptr, cidx, cval)
    gnorm = _norm(g)
    f_init = f
    t_prev = monotonic_ns()
    if record:
        rec[0, 0] = (t_prev - t0_ns) * 1e-9
        rec[0, 1] = (t_prev - t_start) * 1e-9
        rec[0, 2] = f
        rec[0, 3] = gnorm
        rec[0, 4] = nact
        rec[0, 5] = 0.0
        rec[0, 6] = 0.0
        rec[0, 7] = _count_nonzero(w)
    status = STATUS_CONVERGED
    it = 0
    if gnorm > tol:
        status = STATUS_MAX_ITER
        while it < max_iter:
            cg_steps = _pcg_rows(indptr, indices, data, act, nact, hcoef, cptr, cidx, cval, ncomp, reg_bias,
                                 bias_index, cg_eps, g, M, s, r, d, hd, z)
            f_old = f
            step, f, wtw = _line_search(loss, C, indptr, indices, data, y, w, s, g, wx, xs, f, wtw,
                                        reg_bias, bias_index)
            if step == 0.0:
                status = STATUS_LINE_SEARCH_FAILED
                break
            it += 1
            nact, ncomp = _gradient(loss, C, indptr, indices, data, y, wx, w, reg_bias, bias_index, g, act, hcoef,
                                    M, cptr, cidx, cval)
            gnorm = _norm(g)
            if record:
                t_now = monotonic_ns()
                rec[it, 0] = (t_now - t0_ns) * 1e-9
                rec[it, 1] = (t_now - t_prev) * 1e-9
                rec[it, 2] = f
                rec[it, 3] = gnorm
                rec[it, 4] = nact
                rec[it, 5] = cg_steps
                rec[it, 6] = step
                rec[it, 7] = _count_nonzero(w)
                t_prev = t_now
            if gnorm <= tol:
                status = STATUS_CONVERGED
                break
            if abs(f_old - f) <= 1.0e-12 * abs(f):
                status = STATUS_NO_PROGRESS
                break
    t_end = monotonic_ns()
    summary[0] = it
    summary[1] = (t_end - t_start) * 1e-9
    summary[3] = f
    summary[4] = f_init
    summary[5] = gnorm
    summary[6] = gnorm0
    summary[7] = status
    summary[8] = _count_nonzero(w)
    summary[9] = (t_end - t0_ns) * 1e-9
    return it


@njit(cache=True, nogil=True)
def _msi_start(w, psum, npos, n, xbar, s_target, t_target):
    """Mean-separating start: the min-norm w in span(p_mean, x_mean) with <w, p_mean> = s and
    <w, n_mean> = t. Degenerate cases (no positives, no negatives, p_mean parallel to x_mean)
    fall back to the min-norm vector meeting the one constraint that still makes sense."""
    dim = w.shape[0]
    nneg = n - npos
    if npos == 0:
        xx = 0.0
        for j in range(dim):
            xx += xbar[j] * xbar[j]
        c = t_target / xx if xx > 0.0 else 0.0
        for j in range(dim):
            w[j] = c * xbar[j]
        return
    pp = 0.0
    xp = 0.0
    xx = 0.0
    for j in range(dim):
        pj = psum[j] / npos
        pp += pj * pj
        xp += pj * xbar[j]
        xx += xbar[j] * xbar[j]
    det = n * (pp * xx - xp * xp)
    if nneg == 0 or det <= 1e-12 * n * pp * xx:
        c = s_target / pp if pp > 0.0 else 0.0
        for j in range(dim):
            w[j] = c * psum[j] / npos
        return
    a = n * xx - npos * xp
    b = n * xp - npos * pp
    u = (s_target * a - xp * nneg * t_target) / det
    v = (pp * nneg * t_target - s_target * b) / det
    for j in range(dim):
        w[j] = u * psum[j] / npos + v * xbar[j]


@njit(cache=True, nogil=True)
def _train_label(b, indptr, indices, data, pos_ptr, pos_rows, labels, init_mode, init_vec, colsum,
                 loss, C, eps, cg_eps, max_iter, reg_bias, bias_index, bias_weight, msi_s, msi_t,
                 t0_ns, record, W_out, rec, summ, wsd, wsn, act, cptr, cidx, cval):
    """Set up label `labels[b]` (targets, gradient at zero, starting point) and run Newton."""
    n = indptr.shape[0] - 1
    dim = wsd.shape[1]
    lab = labels[b]
    w = W_out[b]
    psum = wsd[8]
    y = wsn[0]
    for i in range(n):
        y[i] = -1.0
    for j in range(dim):
        psum[j] = 0.0
    p0 = pos_ptr[lab]
    p1 = pos_ptr[lab + 1]
    for q in range(p0, p1):
        i = pos_rows[q]
        y[i] = 1.0
        for k in range(indptr[i], indptr[i + 1]):
            psum[indices[k]] += data[k]
    npos = p1 - p0
    c0 = 2.0 * C if loss == SQUARED_HINGE else 0.5 * C
    g0 = 0.0
    for j in range(dim):
        gj = c0 * (2.0 * psum[j] - colsum[j])
        g0 += gj * gj
    gnorm0 = np.sqrt(g0)
    if init_mode == INIT_MSI:
        _msi_start(w, psum, npos, n, init_vec, msi_s, msi_t)
    elif init_mode == INIT_VECTOR:
        for j in range(dim):
            w[j] = init_vec[j]
    else:
        for j in range(dim):
            w[j] = 0.0
        if init_mode == INIT_BIAS and bias_index >= 0:
            w[bias_index] = bias_weight
    tol = eps * max(1, min(npos, n - npos)) / n * gnorm0
    newton(indptr, indices, data, y, w, tol, gnorm0, loss, C, cg_eps, max_iter, reg_bias, bias_index,
           wsd[0], wsd[1], wsd[2], wsd[3], wsd[4], wsd[5], wsd[6], wsn[1], wsn[2], wsn[3], act,
           cptr, cidx, cval, t0_ns, record, rec[b], summ[b])
    summ[b, 2] = npos


@njit(cache=True, nogil=True, parallel=True)
def train_block(indptr, indices, data, dim, pos_ptr, pos_rows, labels, init_mode, init_vec, colsum,
                loss, C, eps, cg_eps, max_iter, reg_bias, bias_index, bias_weight, msi_s, msi_t,
                t0_ns, record, n_workers, W_out, rec, summ):
    """Train the labels in `labels`; W_out[b] gets label b's weights.

    n_workers prange iterations each take the next untrained label from a shared atomic counter
    (dynamic scheduling) and keep one workspace for all their labels. pos_ptr/pos_rows: the rows
    where each label is positive (CSC of Y). init_vec is the starting vector for INIT_VECTOR and
    the mean instance for INIT_MSI; colsum = sum of all rows, for the gradient at zero."""
    n = indptr.shape[0] - 1
    cap = compact_capacity(indptr[n])
    counter = np.zeros(1, np.int64)
    for _worker in prange(n_workers):
        wsd = np.empty((9, dim))
        wsn = np.empty((4, n))
        act = np.empty(n, np.int64)
        cptr = np.empty(n + 1, np.uint64)
        cidx = np.empty(cap, indices.dtype)
        cval = np.empty(cap, data.dtype)
        while True:
            b = fetch_add(counter, 0, 1)
            if b >= labels.shape[0]:
                break
            _train_label(b, indptr, indices, data, pos_ptr, pos_rows, labels, init_mode, init_vec, colsum,
                         loss, C, eps, cg_eps, max_iter, reg_bias, bias_index, bias_weight, msi_s, msi_t,
                         t0_ns, record, W_out, rec, summ, wsd, wsn, act, cptr, cidx, cval)


@njit(cache=True, nogil=True)
def train_all_negative(indptr, indices, data, dim, colsum, loss, C, eps, cg_eps, max_iter, reg_bias,
                       bias_index, t0_ns):
    """The OvA-Primal starting vector: the solution for a label with no positives.

    `max_iter` below the default stops it early (the paper's appendix: an exactly converged
    all-negative solution sits on the hinge, where Newton steps are poor)."""
    n = indptr.shape[0] - 1
    y = -np.ones(n)
    w = np.zeros(dim)
    work = np.empty((7, dim))
    workn = np.empty((3, n))
    act = np.empty(n, np.int64)
    cptr = np.empty(n + 1, np.uint64)
    cidx = np.empty(compact_capacity(indptr[n]), indices.dtype)
    cval = np.empty(cidx.shape[0], data.dtype)
    c0 = 2.0 * C if loss == SQUARED_HINGE else 0.5 * C
    gnorm0 = c0 * _norm(colsum)
    tol = eps / n * gnorm0
    rec = np.empty((1, len(ITER_FIELDS)))
    summary = np.empty(len(LABEL_FIELDS))
    newton(indptr, indices, data, y, w, tol, gnorm0, loss, C, cg_eps, max_iter, reg_bias, bias_index,
           work[0], work[1], work[2], work[3], work[4], work[5], work[6], workn[0], workn[1], workn[2],
           act, cptr, cidx, cval, t0_ns, False, rec, summary)
    return w
