"""Truncated-CG Newton for one-vs-all L2-regularised linear models (LIBLINEAR 2.4x `-s 2` / DiSMEC).

Per label the objective is 0.5*||w||^2 + C * sum_i loss(y_i w.x_i), the bias coordinate optionally
left out of the regulariser (LIBLINEAR `-R`). The Newton step solves H p = -g by preconditioned CG
(diagonal preconditioner, alpha_pcg = 0.01, quadratic-model stopping rule with eps_cg = 0.5) and is
followed by a backtracking line search (halving, eta = 0.01, at most 20 steps), exactly as
LIBLINEAR's `newton.cpp`. For the squared hinge, Hessian-vector products run over the active set
{i : y_i w.x_i < 1} only: the implicit negative mining that makes good initialisers fast.

Stopping rule, the same for every initialiser: ||g(w)|| <= eps * max(1, min(#pos, #neg)) / n *
||g(0)||, the gradient at w = 0, never at the starting point.

`train_block` trains a block of labels in parallel (workers take labels dynamically), each worker
SLOTS labels at a time that share every pass over all of X (X w of a new label, X s of the line
search): one pass reads each row once for all of them. Every label's arithmetic is still that of
`newton` run on it alone, sum for sum, so results depend neither on the labels that share its
passes nor on the number of threads. Pass X's indptr as uint64 and its indices as uint32: with
unsigned indices numba drops the negative-index wraparound checks from the inner loops, which
halves their cost. Per-iteration diagnostics are written into a preallocated (label x iteration x
field) array; per-label summaries into a (label x field) array.

The arguments that travel together reach `train_block` as named tuples (numba compiles their field
reads away): the training rows (`indptr`, `indices`, `data`, `colsum`: the solvers' `TrainingRows`),
the `Positives` of each label, the `Settings` and the `Workspace`.
"""
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .atomic import fetch_add
from .clock import monotonic_ns
from .positives import Positives  # noqa: F401  (the drivers pass K.Positives)

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
_COPY_SHARE = 3  # a worker's copy of the active rows holds 1/_COPY_SHARE of X's entries (compact_capacity)
SLOTS = 4  # labels a worker trains together, sharing each pass over X (the width of _xv_slots)


class Settings(NamedTuple):
    """The solver's constants, the same for every label of a run."""

    loss: int            # SQUARED_HINGE or LOGISTIC
    C: float
    eps: float           # stopping tolerance (module docstring)
    cg_eps: float
    max_iter: int
    reg_bias: bool       # the bias weight in the regulariser
    bias_index: int      # the bias feature's column, -1 without one
    bias_weight: float   # INIT_BIAS's starting bias weight
    msi_s: float         # INIT_MSI's target margins of the positives' and the negatives' means
    msi_t: float


class Workspace(NamedTuple):
    """The arrays `train_block`'s workers train in (see `workspace`), the first axis the worker."""

    wsd: np.ndarray      # SLOTS labels' dense vectors: g s r d hd z M - psum
    wsn: np.ndarray      # their per-row vectors: y, X w, Hessian weights
    act: np.ndarray      # their active sets
    cptr: np.ndarray     # their row pointers into the copy of the active rows
    cidx: np.ndarray     # the copy buffer: indices and values
    cval: np.ndarray
    V: np.ndarray        # the columns and results of the shared pass (`_xv_slots`)
    XV: np.ndarray
    istate: np.ndarray   # the slots' integer and float state
    fstate: np.ndarray
    counter: np.ndarray  # the next label to take, shared by the workers


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
    Returns (size of the active set, number of rows copied, nonzeros of w: counted in the pass
    that starts g from w, so the recorded `nnz` needs no pass of its own)."""
    nnz = 0
    for j in range(g.shape[0]):
        g[j] = w[j]
        M[j] = 1.0
        nnz += 1 if w[j] != 0.0 else 0
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
    return nact, ncomp, nnz


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
    _xv(indptr, indices, data, s, xs)
    return _backtrack(loss, C, y, w, s, g, wx, xs, f_old, wtw, reg_bias, bias_index)


@njit(cache=True, nogil=True)
def _backtrack(loss, C, y, w, s, g, wx, xs, f_old, wtw, reg_bias, bias_index):
    """The line search once xs = X s is known: halve the step from 1 until the sufficient decrease
    holds (LIBLINEAR's rule); each trial costs O(n), no pass over X."""
    acc1 = 0.0  # the loss of the full step
    for i in range(wx.shape[0]):
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
    return nnz // np.uint64(_COPY_SHARE)


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
def _record_iteration(row, now_ns, t0_ns, seconds, f, gnorm, nact, cg_steps, step, nnz):
    """One row of ITER_FIELDS (`nnz`: w's nonzeros, from `_gradient`)."""
    row[0] = (now_ns - t0_ns) * 1e-9
    row[1] = seconds
    row[2] = f
    row[3] = gnorm
    row[4] = nact
    row[5] = cg_steps
    row[6] = step
    row[7] = nnz


@njit(cache=True, nogil=True)
def _finish(summary, it, seconds, f, f_init, gnorm, gnorm0, status, w, now_ns, t0_ns):
    """LABEL_FIELDS of a finished label, except n_pos (filled by the caller)."""
    summary[0] = it
    summary[1] = seconds
    summary[3] = f
    summary[4] = f_init
    summary[5] = gnorm
    summary[6] = gnorm0
    summary[7] = status
    summary[8] = _count_nonzero(w)
    summary[9] = (now_ns - t0_ns) * 1e-9


@njit(cache=True, nogil=True)
def _status_after(it, max_iter, gnorm, tol, f_old, f):
    """The status a label stops with after Newton iteration `it` (0: at its starting point), or -1
    to go on."""
    if gnorm <= tol:
        return STATUS_CONVERGED
    if it > 0 and abs(f_old - f) <= 1.0e-12 * abs(f):
        return STATUS_NO_PROGRESS
    if it >= max_iter:
        return STATUS_MAX_ITER
    return -1


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
    nact, ncomp, nnz = _gradient(loss, C, indptr, indices, data, y, wx, w, reg_bias, bias_index, g, act, hcoef, M,
                                 cptr, cidx, cval)
    gnorm = _norm(g)
    f_init = f
    t_prev = monotonic_ns()
    if record:
        _record_iteration(rec[0], t_prev, t0_ns, (t_prev - t_start) * 1e-9, f, gnorm, nact, 0, 0.0, nnz)
    it = 0
    status = _status_after(0, max_iter, gnorm, tol, f, f)
    while status < 0:
        cg_steps = _pcg_rows(indptr, indices, data, act, nact, hcoef, cptr, cidx, cval, ncomp, reg_bias,
                             bias_index, cg_eps, g, M, s, r, d, hd, z)
        f_old = f
        step, f, wtw = _line_search(loss, C, indptr, indices, data, y, w, s, g, wx, xs, f, wtw, reg_bias, bias_index)
        if step == 0.0:
            status = STATUS_LINE_SEARCH_FAILED
            break
        it += 1
        nact, ncomp, nnz = _gradient(loss, C, indptr, indices, data, y, wx, w, reg_bias, bias_index, g, act,
                                     hcoef, M, cptr, cidx, cval)
        gnorm = _norm(g)
        if record:
            t_now = monotonic_ns()
            _record_iteration(rec[it], t_now, t0_ns, (t_now - t_prev) * 1e-9, f, gnorm, nact, cg_steps, step, nnz)
            t_prev = t_now
        status = _status_after(it, max_iter, gnorm, tol, f_old, f)
    t_end = monotonic_ns()
    _finish(summary, it, (t_end - t_start) * 1e-9, f, f_init, gnorm, gnorm0, status, w, t_end, t0_ns)
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
def _label_setup(b, rows, positives, labels, init_mode, init_vec, settings, w, y, psum):
    """Label `labels[b]`'s targets y and starting point w; returns (||g(0)||, stopping tolerance,
    number of positives)."""
    indptr, indices, data, colsum = rows.indptr, rows.indices, rows.data, rows.colsum
    pos_ptr, pos_rows = positives.ptr, positives.rows
    loss, C, eps, bias_index = settings.loss, settings.C, settings.eps, settings.bias_index
    n = indptr.shape[0] - 1
    dim = w.shape[0]
    lab = labels[b]
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
        _msi_start(w, psum, npos, n, init_vec, settings.msi_s, settings.msi_t)
    elif init_mode == INIT_VECTOR:
        for j in range(dim):
            w[j] = init_vec[j]
    else:
        for j in range(dim):
            w[j] = 0.0
        if init_mode == INIT_BIAS and bias_index >= 0:
            w[bias_index] = settings.bias_weight
    tol = eps * max(1, min(npos, n - npos)) / n * gnorm0
    return gnorm0, tol, npos


@njit(cache=True, nogil=True)
def _xv_slots(indptr, indices, data, V, out):
    """out[q, i] = x_i . V[:, q] for the SLOTS columns of V (dim x SLOTS, C order), in one pass over
    X: each row's indices and values are read once for every column, and the columns' entries of a
    feature sit side by side (one vector load). Each sum runs in `_row_dot`'s order (four partial
    sums per column), so out[q] is bitwise what `_xv` gives for V[:, q]."""
    one = np.uint64(1)
    two = np.uint64(2)
    three = np.uint64(3)
    four = np.uint64(4)
    for i in range(out.shape[1]):
        k1 = indptr[i + 1]
        a00, a01, a02, a03 = 0.0, 0.0, 0.0, 0.0  # a<partial sum><column>
        a10, a11, a12, a13 = 0.0, 0.0, 0.0, 0.0
        a20, a21, a22, a23 = 0.0, 0.0, 0.0, 0.0
        a30, a31, a32, a33 = 0.0, 0.0, 0.0, 0.0
        k = indptr[i]
        while k + four <= k1:
            j = indices[k]
            x = data[k]
            a00 += x * V[j, 0]
            a01 += x * V[j, 1]
            a02 += x * V[j, 2]
            a03 += x * V[j, 3]
            j = indices[k + one]
            x = data[k + one]
            a10 += x * V[j, 0]
            a11 += x * V[j, 1]
            a12 += x * V[j, 2]
            a13 += x * V[j, 3]
            j = indices[k + two]
            x = data[k + two]
            a20 += x * V[j, 0]
            a21 += x * V[j, 1]
            a22 += x * V[j, 2]
            a23 += x * V[j, 3]
            j = indices[k + three]
            x = data[k + three]
            a30 += x * V[j, 0]
            a31 += x * V[j, 1]
            a32 += x * V[j, 2]
            a33 += x * V[j, 3]
            k += four
        while k < k1:
            j = indices[k]
            x = data[k]
            a00 += x * V[j, 0]
            a01 += x * V[j, 1]
            a02 += x * V[j, 2]
            a03 += x * V[j, 3]
            k += one
        out[0, i] = (a00 + a10) + (a20 + a30)
        out[1, i] = (a01 + a11) + (a21 + a31)
        out[2, i] = (a02 + a12) + (a22 + a32)
        out[3, i] = (a03 + a13) + (a23 + a33)


_EMPTY = 0
_STARTING = 1
_ITERATING = 2


@njit(cache=True, nogil=True)
def _train_slots(rows, dim, positives, labels, init_mode, init_vec, settings, t0_ns, record, W_out, rec, summ,
                 work, worker):
    """One worker's share of a block: SLOTS labels at a time, in rounds, in the worker's part of
    the block's workspace (`workspace`).

    In a round every slot either takes the next label from `counter` and sets it up, or runs the CG
    solve of its label's Newton iteration; then one pass over X computes X w of the new labels and
    X s (the line search's product) of the others together (`_xv_slots`); then each slot finishes
    its step alone: line search on the known X s, gradient pass with its active rows copied into
    its part of the worker's copy buffer (cidx/cval, shared by the slots in slot order), stopping
    rule. A slot whose label stops takes a new one in the next round. Each label's arithmetic is
    that of `newton`, operation for operation, so its weights do not depend on the slot, the other
    labels or the thread count. Recorded seconds of a label: its own work plus an equal share of
    each pass it took part in."""
    indptr, indices, data = rows.indptr, rows.indices, rows.data
    loss, C, cg_eps, max_iter = settings.loss, settings.C, settings.cg_eps, settings.max_iter
    reg_bias, bias_index = settings.reg_bias, settings.bias_index
    wsd, wsn, act, cptr = work.wsd[worker], work.wsn[worker], work.act[worker], work.cptr[worker]
    cidx, cval, V, XV = work.cidx[worker], work.cval[worker], work.V[worker], work.XV[worker]
    istate, fstate, counter = work.istate[worker], work.fstate[worker], work.counter
    n = indptr.shape[0] - 1
    n_labels = labels.shape[0]
    for q in range(SLOTS):
        for j in range(istate.shape[0]):
            istate[j, q] = 0
        for j in range(fstate.shape[0]):
            fstate[j, q] = 0.0
    slot_b, state, it, nact, ncomp, offset, cg, it_ns, total_ns = (
        istate[0], istate[1], istate[2], istate[3], istate[4], istate[5], istate[6], istate[7], istate[8])
    f, wtw, gnorm, gnorm0, tol, f_init = fstate[0], fstate[1], fstate[2], fstate[3], fstate[4], fstate[5]
    exhausted = False
    while True:
        live = 0
        for q in range(SLOTS):
            t = monotonic_ns()
            if state[q] == _EMPTY and not exhausted:
                b = fetch_add(counter, 0, 1)
                if b >= n_labels:
                    exhausted = True
                else:
                    w = W_out[b]
                    g0, tq, npos = _label_setup(b, rows, positives, labels, init_mode, init_vec, settings, w,
                                                wsn[q, 0], wsd[q, 8])
                    summ[b, 2] = npos
                    gnorm0[q] = g0
                    tol[q] = tq
                    slot_b[q] = b
                    state[q] = _STARTING
                    it[q] = 0
                    cg[q] = 0
                    total_ns[q] = 0
                    it_ns[q] = 0
                    for j in range(dim):
                        V[j, q] = w[j]
            elif state[q] == _ITERATING:
                cg[q] = _pcg_rows(indptr, indices, data, act[q], nact[q], wsn[q, 2], cptr[q], cidx[offset[q]:],
                                  cval[offset[q]:], ncomp[q], reg_bias, bias_index, cg_eps, wsd[q, 0], wsd[q, 6],
                                  wsd[q, 1], wsd[q, 2], wsd[q, 3], wsd[q, 4], wsd[q, 5])
                s = wsd[q, 1]
                for j in range(dim):
                    V[j, q] = s[j]
            if state[q] != _EMPTY:
                live += 1
                it_ns[q] += monotonic_ns() - t
        if live == 0:
            break
        t = monotonic_ns()
        if live == 1:  # the end of the block: one label left, the plain pass (the same sums)
            for q in range(SLOTS):
                if state[q] == _STARTING:
                    _xv(indptr, indices, data, W_out[slot_b[q]], XV[q])
                elif state[q] == _ITERATING:
                    _xv(indptr, indices, data, wsd[q, 1], XV[q])
        else:
            _xv_slots(indptr, indices, data, V, XV)
        share = (monotonic_ns() - t) // live
        used = 0
        for q in range(SLOTS):
            if state[q] == _EMPTY:
                continue
            t = monotonic_ns()
            it_ns[q] += share
            b = slot_b[q]
            w = W_out[b]
            g = wsd[q, 0]
            y = wsn[q, 0]
            wx = wsn[q, 1]
            status = -1
            step = 0.0
            f_old = f[q]
            if state[q] == _STARTING:
                xw = XV[q]
                for i in range(n):
                    wx[i] = xw[i]
                wtw[q] = _regularised_dot(w, w, reg_bias, bias_index)
                f[q] = _loss_sum(loss, C, y, wx) + 0.5 * wtw[q]
                f_init[q] = f[q]
            else:
                step, fq, wq = _backtrack(loss, C, y, w, wsd[q, 1], g, wx, XV[q], f[q], wtw[q], reg_bias, bias_index)
                f[q] = fq
                wtw[q] = wq
                if step == 0.0:
                    status = STATUS_LINE_SEARCH_FAILED
                else:
                    it[q] += 1
            if status < 0:
                na, nc, nz = _gradient(loss, C, indptr, indices, data, y, wx, w, reg_bias, bias_index, g, act[q],
                                       wsn[q, 2], wsd[q, 6], cptr[q], cidx[used:], cval[used:])
                nact[q] = na
                ncomp[q] = nc
                offset[q] = used
                used += np.int64(cptr[q, nc])
                gnorm[q] = _norm(g)
                t_now = monotonic_ns()
                it_ns[q] += t_now - t
                t = t_now
                if record:
                    _record_iteration(rec[b, it[q]], t_now, t0_ns, it_ns[q] * 1e-9, f[q], gnorm[q], na, cg[q], step, nz)
                total_ns[q] += it_ns[q]
                it_ns[q] = 0
                status = _status_after(it[q], max_iter, gnorm[q], tol[q], f_old, f[q])
                state[q] = _ITERATING
            if status >= 0:
                t_end = monotonic_ns()
                total_ns[q] += it_ns[q] + (t_end - t)
                _finish(summ[b], it[q], total_ns[q] * 1e-9, f[q], f_init[q], gnorm[q], gnorm0[q], status, w, t_end,
                        t0_ns)
                state[q] = _EMPTY


def workspace(n: int, dim: int, nnz: int, n_workers: int, index_dtype) -> Workspace:
    """The arrays `train_block`'s workers train in, allocated here rather than in the kernel (a
    kernel that allocates makes every fresh process import numba's array library when it loads
    it: BENCHMARKS.md, "Kernel loading"); per worker: SLOTS labels' dense vectors (g s r d hd z M
    - psum), their per-row vectors (y, X w, Hessian weights), active sets and row pointers of the
    copied active rows, the copy buffer (`compact_capacity` entries), the columns and results of
    the shared pass (`_xv_slots`), and the slots' integer and float state; then the shared label
    counter. Reusable across blocks of the same problem."""
    cap = nnz // _COPY_SHARE
    return Workspace(np.empty((n_workers, SLOTS, 9, dim)), np.empty((n_workers, SLOTS, 3, n)),
                     np.empty((n_workers, SLOTS, n), np.int64), np.empty((n_workers, SLOTS, n + 1), np.uint64),
                     np.empty((n_workers, cap), index_dtype), np.empty((n_workers, cap)),
                     np.zeros((n_workers, dim, SLOTS)), np.zeros((n_workers, SLOTS, n)),
                     np.zeros((n_workers, 9, SLOTS), np.int64), np.zeros((n_workers, 6, SLOTS)), np.zeros(1, np.int64))


@njit(cache=True, nogil=True, parallel=True)
def train_block(rows, dim, positives, labels, init_mode, init_vec, settings, t0_ns, record, n_workers, W_out, rec,
                summ, work):
    """Train the labels in `labels` (of `positives`) on `rows`; W_out[b] gets label b's weights.

    n_workers prange iterations each take the next untrained label from a shared atomic counter
    (dynamic scheduling) and train SLOTS labels at a time (`_train_slots`) in their part of `work`,
    from `workspace(n, dim, nnz, n_workers, rows.indices.dtype)`. init_vec is the starting vector
    for INIT_VECTOR and the mean instance for INIT_MSI; rows.colsum = sum of all rows, for the
    gradient at zero."""
    work.counter[0] = 0
    for w in prange(n_workers):
        _train_slots(rows, dim, positives, labels, init_mode, init_vec, settings, t0_ns, record, W_out, rec, summ,
                     work, w)


@njit(cache=True, nogil=True)
def train_all_negative(rows, dim, loss, C, eps, cg_eps, max_iter, reg_bias, bias_index, t0_ns):
    """The OvA-Primal starting vector: the solution for a label with no positives.

    `max_iter` below the default stops it early (the paper's appendix: an exactly converged
    all-negative solution sits on the hinge, where Newton steps are poor)."""
    indptr, indices, data, colsum = rows.indptr, rows.indices, rows.data, rows.colsum
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
