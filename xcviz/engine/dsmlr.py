"""DS-MLR kernels: multinomial logistic regression in its doubly separable form (Raman et al.).

Rows x_i are CSR (a regularised bias feature already appended), classes y_i in [0, K). The exact
objective (2) is

    L1(W) = lam/2 ||W||^2 - (1/N) sum_i w_{y_i}.x_i + (1/N) sum_i log sum_k exp(w_k.x_i),

and the surrogate (10), with one variational parameter b_i = log a_i per row,

    L2(W, b) = lam/2 ||W||^2 - (1/N) sum_i w_{y_i}.x_i + (1/N) sum_i (e^{b_i} sum_k e^{w_k.x_i} - b_i - 1),

so L2(W, b) - L1(W) = (1/N) sum_i (e^{d_i} - 1 - d_i) >= 0 with d_i = b_i - b*_i and
b*_i = -log sum_k exp(w_k.x_i) (the closed form (9)/(18), computed here as a shifted log-sum-exp).

W is dense, stored as V (K x D) times a per-class scale s_k: the stochastic step (13)

    w_k <- (1 - eta K lam) w_k - eta K (exp(w_k.x_i + b_i) - y_ik) x_i

multiplies s_k (O(1)) and adds a multiple of x_i to v_k (O(nnz(x_i))). Exponents w_k.x_i + b_i
above `clip` are clipped to it (a stale b can make them large) and counted.

The `sync` kernels process a G x G grid of (row block, class block) pairs, one stratum of G
disjoint pairs at a time; each pair is computed by the same sequential code whichever worker takes
it, so the model does not depend on the thread count. Phase B's log-sum-exp is computed per class
block and combined in class-block order, so that a distributed run that gets the partial sums from
elsewhere (xcviz.solvers.dsmlr.distributed) gets the same numbers bit for bit. The `async` kernel is
NOMAD-style: one call per worker thread, no barrier (async_worker).
"""
import numpy as np
from numba import njit, prange

from .atomic import fetch_add
from .clock import monotonic_ns
from .newton import _norm, _pcg, _preconditioner, _xv

# fold the per-class scale into V below this (the decay per step is 1 - eta K lam, close to 1)
FOLD_BELOW = 1e-6


@njit(cache=True, nogil=True)
def _dot(V, k, indptr, indices, data, i):
    acc = 0.0
    for q in range(indptr[i], indptr[i + 1]):
        acc += data[q] * V[k, indices[q]]
    return acc


@njit(cache=True, nogil=True)
def _first_label(lab_ptr, lab_idx, i, c0):
    """The position of row i's first class >= c0 in its sorted class list."""
    p = lab_ptr[i]
    while p < lab_ptr[i + 1] and lab_idx[p] < c0:
        p += 1
    return p


@njit(cache=True, nogil=True)
def sgd_block(indptr, indices, data, lab_ptr, lab_idx, b, rows, c0, c1, base, V, scale, step, lam, clip):
    """Steps (13) for every (row, class) pair of rows x [c0, c1), row-major in the given order;
    class k is row k - base of V and scale (base = 0 for the whole W, c0 for one class block).

    A row with n_i classes stands for its n_i replicated copies: its step is the sum of theirs,
    w_k <- (1 - step lam n_i) w_k - step (n_i exp(w_k.x_i + b_i) - y_ik) x_i, step = eta K.
    Returns the number of clipped exponents."""
    clips = 0
    for r in range(rows.shape[0]):
        i = rows[r]
        bi = b[i]
        weight = lab_ptr[i + 1] - lab_ptr[i]
        decay = 1.0 - step * lam * weight
        p = _first_label(lab_ptr, lab_idx, i, c0)
        end = lab_ptr[i + 1]
        for k in range(c0, c1):
            s = scale[k - base]
            z = s * _dot(V, k - base, indptr, indices, data, i) + bi
            if z > clip:
                z = clip
                clips += 1
            g = weight * np.exp(z)
            if p < end and lab_idx[p] == k:
                g -= 1.0
                p += 1
            s *= decay
            coef = -step * g / s
            for q in range(indptr[i], indptr[i + 1]):
                V[k - base, indices[q]] += coef * data[q]
            if s < FOLD_BELOW:
                for j in range(V.shape[1]):
                    V[k - base, j] *= s
                s = 1.0
            scale[k - base] = s
    return clips


@njit(cache=True, nogil=True)
def partial_lse(indptr, indices, data, lab_ptr, lab_idx, rows, c0, c1, base, V, scale, part_max, part_sum,
                true_score):
    """For each row of `rows` (its r-th entry written at position r): the shifted partial sum of
    class block [c0, c1), part_sum = sum_k exp(z_k - part_max) with part_max = max_k z_k, and
    true_score[r] += the scores of the row's classes in the block."""
    zs = np.empty(c1 - c0)
    for r in range(rows.shape[0]):
        i = rows[r]
        m = -np.inf
        p = _first_label(lab_ptr, lab_idx, i, c0)
        end = lab_ptr[i + 1]
        for k in range(c0, c1):
            z = scale[k - base] * _dot(V, k - base, indptr, indices, data, i)
            zs[k - c0] = z
            if z > m:
                m = z
            if p < end and lab_idx[p] == k:
                true_score[r] += z
                p += 1
        acc = 0.0
        for k in range(c1 - c0):
            acc += np.exp(zs[k] - m)
        part_max[r] = m
        part_sum[r] = acc


@njit(cache=True, nogil=True)
def combine_lse(m_old, s_old, m_new, s_new):
    """(max, shifted sum) of two partial log-sum-exps, in this order."""
    m = max(m_old, m_new)
    if m == -np.inf:
        return m, 0.0
    return m, s_old * np.exp(m_old - m) + s_new * np.exp(m_new - m)


@njit(cache=True, nogil=True)
def lse_step(indptr, indices, data, lab_ptr, lab_idx, rows, c0, c1, base, V, scale, run_max, run_sum, true_score):
    """Phase B of Algorithm 1 for one (row block, class block) pair: the block's partial sums
    combined into the rows' running (max, shifted sum), in the order the blocks arrive."""
    n = rows.shape[0]
    pm = np.empty(n)
    ps = np.empty(n)
    partial_lse(indptr, indices, data, lab_ptr, lab_idx, rows, c0, c1, base, V, scale, pm, ps, true_score)
    for r in range(n):
        run_max[r], run_sum[r] = combine_lse(run_max[r], run_sum[r], pm[r], ps[r])


@njit(cache=True, nogil=True)
def b_from_lse(run_max, run_sum):
    """b_i = -(max + log shifted sum) with numba's log, as phase_b_grid computes it: numpy's
    vectorised log differs from it in the last bit for about 0.1% of values, which would make a
    Dask run's model differ from the threads run's."""
    out = np.empty(run_max.shape[0])
    for r in range(run_max.shape[0]):
        out[r] = -(run_max[r] + np.log(run_sum[r]))
    return out


@njit(cache=True, nogil=True, parallel=True)
def phase_b_grid(indptr, indices, data, lab_ptr, lab_idx, row_order, row_ptr, class_ptr, V, scale, b_out, true_out):
    """Phase B of Algorithm 1 on the grid: row block r meets the class blocks in ring order
    r, r + 1, ... (mod G), as the W blocks pass around; then b_i = -(max + log shifted sum)."""
    n_blocks = row_ptr.shape[0] - 1
    for r in prange(n_blocks):
        rows = row_order[row_ptr[r]:row_ptr[r + 1]]
        n = rows.shape[0]
        mm = np.full(n, -np.inf)
        ss = np.zeros(n)
        tr = np.zeros(n)
        for s in range(n_blocks):
            c = (r + s) % n_blocks
            lse_step(indptr, indices, data, lab_ptr, lab_idx, rows, class_ptr[c], class_ptr[c + 1], 0, V, scale,
                     mm, ss, tr)
        for q in range(n):
            b_out[rows[q]] = -(mm[q] + np.log(ss[q]))
            true_out[rows[q]] = tr[q]


@njit(cache=True, nogil=True, parallel=True)
def exact_b(indptr, indices, data, lab_ptr, lab_idx, class_ptr, V, scale, n_chunks, b_out, true_out):
    """Phase B: b_out[i] = -log sum_k exp(w_k.x_i), combined over the class blocks of class_ptr in
    order; true_out[i] = sum of w_y.x_i over the row's classes y. Rows are split into n_chunks
    fixed chunks (any thread count gives the same numbers)."""
    n = indptr.shape[0] - 1
    n_blocks = class_ptr.shape[0] - 1
    for chunk in prange(n_chunks):
        lo = chunk * n // n_chunks
        hi = (chunk + 1) * n // n_chunks
        rows = np.arange(lo, hi)
        pm = np.empty(hi - lo)
        ps = np.empty(hi - lo)
        mm = np.full(hi - lo, -np.inf)
        ss = np.zeros(hi - lo)
        tr = np.zeros(hi - lo)
        for c in range(n_blocks):
            partial_lse(indptr, indices, data, lab_ptr, lab_idx, rows, class_ptr[c], class_ptr[c + 1], 0, V, scale,
                        pm, ps, tr)
            for r in range(hi - lo):
                mm[r], ss[r] = combine_lse(mm[r], ss[r], pm[r], ps[r])
        for r in range(hi - lo):
            b_out[lo + r] = -(mm[r] + np.log(ss[r]))
            true_out[lo + r] = tr[r]


@njit(cache=True, nogil=True, parallel=True)
def squared_norm(V, scale):
    """||W||_F^2 = sum_k s_k^2 ||v_k||^2 (summed per class, then in class order)."""
    per = np.empty(V.shape[0])
    for k in prange(V.shape[0]):
        acc = 0.0
        for j in range(V.shape[1]):
            acc += V[k, j] * V[k, j]
        per[k] = scale[k] * scale[k] * acc
    return per.sum()


@njit(cache=True, nogil=True)
def fold_all(V, scale):
    """Fold every class's scale into V (W = V afterwards, scale = 1)."""
    for k in range(V.shape[0]):
        if scale[k] != 1.0:
            for j in range(V.shape[1]):
                V[k, j] *= scale[k]
            scale[k] = 1.0


@njit(cache=True, nogil=True, parallel=True)
def sync_epoch(indptr, indices, data, lab_ptr, lab_idx, b, row_order, row_ptr, class_ptr, V, scale, step, lam, clip,
               n_workers, busy_ns, blocks_done):
    """Phase A of Algorithm 1: G inner epochs; inner epoch s processes the stratum of pairs
    (row block r, class block (r + s) mod G), disjoint in rows and classes. n_workers prange
    iterations take the pairs of a stratum dynamically from a shared counter; busy_ns[w] and
    blocks_done[w] accumulate each worker's compute. Returns (clips, summed stratum wall ns)."""
    n_blocks = row_ptr.shape[0] - 1
    clips = np.zeros(n_blocks, np.int64)
    wall = 0
    for s in range(n_blocks):
        counter = np.zeros(1, np.int64)
        t0 = monotonic_ns()
        for w in prange(n_workers):
            while True:
                r = fetch_add(counter, 0, 1)
                if r >= n_blocks:
                    break
                c = (r + s) % n_blocks
                t1 = monotonic_ns()
                clips[r] += sgd_block(indptr, indices, data, lab_ptr, lab_idx, b, row_order[row_ptr[r]:row_ptr[r + 1]],
                                      class_ptr[c], class_ptr[c + 1], 0, V, scale, step, lam, clip)
                busy_ns[w] += monotonic_ns() - t1
                blocks_done[w] += 1
        wall += monotonic_ns() - t0
    return clips.sum(), wall


# async_worker's control word (control[0], set by the driver, read atomically by the workers) and
# its return values
RUN, PAUSE, STOP = 0, 1, 2
FINISHED, PAUSED, STOPPED = 0, 1, 2


@njit(cache=True, nogil=True)
def async_worker(p, indptr, indices, data, lab_ptr, lab_idx, b, row_order, row_ptr, class_ptr, V, scale, step0, lam,
                 clip, n_epochs, queue, heads, tails, control, epochs_done, arrivals, run_max, run_sum, busy_ns,
                 idle_ns, blocks_done, clips, queue_seen):
    """Worker p of Algorithm 2 (NOMAD-style, no barrier), called from its own thread; resumable.

    Worker p owns the rows row_order[row_ptr[p]:row_ptr[p+1]] and their b. The G class blocks
    circulate in a ring: queue[p] is a ring buffer (single producer p - 1, single consumer p;
    tails[p] advanced atomically after the slot is written). The worker pops a block as soon as
    one is there, updates it over its rows (13) with its own step step0 / sqrt(t), t its own outer
    iteration (epochs_done[p] + 1), adds the block's partial log-sum-exp to its rows' running
    (run_max, run_sum), and pushes the block to worker p + 1. Every G blocks (one of each: FIFO
    queues on a ring keep the blocks' cyclic order, so each worker meets them in a fixed periodic
    order) it refreshes its b from the partial sums and counts an outer iteration, without waiting
    for anyone. Returns FINISHED after n_epochs outer iterations, PAUSED or STOPPED when control[0]
    asks (checked between blocks and while waiting); all its state is in the arrays, so a call
    after PAUSED resumes where it stopped. busy_ns, idle_ns (waiting for a block), blocks_done,
    clips and queue_seen (the longest queue found) accumulate per worker."""
    lo = row_ptr[p]
    hi = row_ptr[p + 1]
    rows = row_order[lo:hi]
    n_workers = row_ptr.shape[0] - 1
    n_blocks = class_ptr.shape[0] - 1
    nxt = (p + 1) % n_workers
    cap = queue.shape[1]
    pm = np.empty(hi - lo)
    ps = np.empty(hi - lo)
    tr = np.zeros(hi - lo)
    t_wait = monotonic_ns()
    while epochs_done[p] < n_epochs:
        flag = fetch_add(control, 0, 0)
        if flag != RUN:
            idle_ns[p] += monotonic_ns() - t_wait
            return PAUSED if flag == PAUSE else STOPPED
        head = heads[p]
        tail = fetch_add(tails, p, 0)
        if head == tail:
            continue
        t1 = monotonic_ns()
        idle_ns[p] += t1 - t_wait
        queue_seen[p] = max(queue_seen[p], tail - head)
        c = queue[p, head % cap]
        heads[p] = head + 1
        step = step0 / np.sqrt(epochs_done[p] + 1.0)
        clips[p] += sgd_block(indptr, indices, data, lab_ptr, lab_idx, b, rows, class_ptr[c], class_ptr[c + 1], 0, V,
                              scale, step, lam, clip)
        partial_lse(indptr, indices, data, lab_ptr, lab_idx, rows, class_ptr[c], class_ptr[c + 1], 0, V, scale, pm, ps,
                    tr)
        for r in range(hi - lo):
            run_max[lo + r], run_sum[lo + r] = combine_lse(run_max[lo + r], run_sum[lo + r], pm[r], ps[r])
        blocks_done[p] += 1
        arrivals[p] += 1
        if arrivals[p] == n_blocks:
            for r in range(hi - lo):
                b[rows[r]] = -(run_max[lo + r] + np.log(run_sum[lo + r]))
                run_max[lo + r] = -np.inf
                run_sum[lo + r] = 0.0
            arrivals[p] = 0
            fetch_add(epochs_done, p, 1)
        queue[nxt, tails[nxt] % cap] = c
        fetch_add(tails, nxt, 1)
        t_wait = monotonic_ns()
        busy_ns[p] += t_wait - t1
    return FINISHED


@njit(cache=True, nogil=True, parallel=True)
def loss_gradient(indptr, indices, data, lab_ptr, lab_idx, W, lam, class_ptr, n_chunks, G):
    """L1(W) and its gradient into G (K x D), for L-BFGS; a row with n_i classes counts n_i times
    (N = sum n_i). Pass 1 (rows in n_chunks fixed chunks): every row's log-sum-exp; pass 2 (one
    class block per worker): G_k = lam w_k + (1/N) sum_i (n_i p_ik - y_ik) x_i, each class summed
    in row order. Deterministic for any thread count."""
    n = indptr.shape[0] - 1
    n_total = lab_ptr[n] - lab_ptr[0]
    ones = np.ones(W.shape[0])
    neg_lse = np.empty(n)
    true = np.zeros(n)
    exact_b(indptr, indices, data, lab_ptr, lab_idx, class_ptr, W, ones, n_chunks, neg_lse, true)
    for c in prange(class_ptr.shape[0] - 1):
        c0 = class_ptr[c]
        c1 = class_ptr[c + 1]
        for k in range(c0, c1):
            for j in range(W.shape[1]):
                G[k, j] = lam * W[k, j]
        for i in range(n):
            weight = lab_ptr[i + 1] - lab_ptr[i]
            p = _first_label(lab_ptr, lab_idx, i, c0)
            for k in range(c0, c1):
                coef = weight * np.exp(_dot(W, k, indptr, indices, data, i) + neg_lse[i])
                if p < lab_ptr[i + 1] and lab_idx[p] == k:
                    coef -= 1.0
                    p += 1
                coef /= n_total
                for q in range(indptr[i], indptr[i + 1]):
                    G[k, indices[q]] += coef * data[q]
    value = 0.0
    for i in range(n):
        value += (lab_ptr[i + 1] - lab_ptr[i]) * (-neg_lse[i]) - true[i]
    return 0.5 * lam * squared_norm(W, ones) + value / n_total


# ---- LC: one class's problem at fixed b, by the one-vs-all truncated Newton (engine.newton's CG)

@njit(cache=True, nogil=True)
def _lc_value(C, wx, b, t, nw, wtw):
    acc = 0.0
    for i in range(wx.shape[0]):
        acc += nw[i] * np.exp(wx[i] + b[i]) - t[i] * wx[i]
    return C * acc + 0.5 * wtw


@njit(cache=True, nogil=True)
def _lc_gradient(C, indptr, indices, data, wx, b, t, nw, w, g, act, hcoef):
    for j in range(g.shape[0]):
        g[j] = w[j]
    for i in range(wx.shape[0]):
        e = nw[i] * np.exp(wx[i] + b[i])
        act[i] = i
        hcoef[i] = C * e
        gc = C * (e - t[i])
        for q in range(indptr[i], indptr[i + 1]):
            g[indices[q]] += gc * data[q]
    return wx.shape[0]


@njit(cache=True, nogil=True)
def lc_class(indptr, indices, data, b, t, nw, w, C, tol_rel, max_iter, ws, wsn, act):
    """Minimise 0.5 ||w||^2 + C sum_i (n_i exp(w.x_i + b_i) - t_i w.x_i) from w (in place): the
    LC method's per-class problem (lam N times its share of L2 at fixed b, C = 1/(lam N)), by
    Newton steps from engine.newton (preconditioned CG on the Hessian I + C X' diag(e) X, Armijo
    backtracking by halving). Stops at ||g|| <= tol_rel ||g(start)||. Returns its Newton steps and
    CG steps (the cost model of docs/families/dsmlr.md counts both)."""
    g, s, r, d, hd, z, M = ws[0], ws[1], ws[2], ws[3], ws[4], ws[5], ws[6]
    wx, xs, hcoef = wsn[0], wsn[1], wsn[2]
    _xv(indptr, indices, data, w, wx)
    wtw = 0.0
    for j in range(w.shape[0]):
        wtw += w[j] * w[j]
    f = _lc_value(C, wx, b, t, nw, wtw)
    nact = _lc_gradient(C, indptr, indices, data, wx, b, t, nw, w, g, act, hcoef)
    tol = tol_rel * _norm(g)
    it = 0
    cg = 0
    while it < max_iter and _norm(g) > tol:
        _preconditioner(indptr, indices, data, act, nact, hcoef, True, -1, M)
        cg += _pcg(indptr, indices, data, act, nact, hcoef, True, -1, 0.1, g, M, s, r, d, hd, z)
        _xv(indptr, indices, data, s, xs)
        sts = 0.0
        wts = 0.0
        gts = 0.0
        for j in range(w.shape[0]):
            sts += s[j] * s[j]
            wts += w[j] * s[j]
            gts += g[j] * s[j]
        alpha = 1.0
        accepted = False
        for _ in range(30):
            acc = 0.0
            for i in range(wx.shape[0]):
                m = wx[i] + alpha * xs[i]
                acc += nw[i] * np.exp(m + b[i]) - t[i] * m
            f_new = C * acc + 0.5 * (wtw + 2.0 * alpha * wts + alpha * alpha * sts)
            if f_new - f <= 0.01 * alpha * gts:
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            break
        for i in range(wx.shape[0]):
            wx[i] += alpha * xs[i]
        for j in range(w.shape[0]):
            w[j] += alpha * s[j]
        wtw += 2.0 * alpha * wts + alpha * alpha * sts
        f = f_new
        it += 1
        nact = _lc_gradient(C, indptr, indices, data, wx, b, t, nw, w, g, act, hcoef)
    return it, cg


@njit(cache=True, nogil=True, parallel=True)
def lc_classes(indptr, indices, data, lab_ptr, lab_idx, b, W, lam, tol_rel, max_iter, n_workers, steps, cg_steps):
    """LC's W step: the K per-class problems at fixed b, workers taking classes dynamically;
    steps[k] and cg_steps[k] get class k's Newton and CG steps. Each class is the same sequential
    computation on any worker, so the result does not depend on the thread count."""
    n = indptr.shape[0] - 1
    dim = W.shape[1]
    counter = np.zeros(1, np.int64)
    C = 1.0 / (lam * (lab_ptr[n] - lab_ptr[0]))
    nw = np.empty(n)
    for i in range(n):
        nw[i] = lab_ptr[i + 1] - lab_ptr[i]
    for _w in prange(n_workers):
        ws = np.empty((7, dim))
        wsn = np.empty((3, n))
        act = np.empty(n, np.int64)
        t = np.empty(n)
        while True:
            k = fetch_add(counter, 0, 1)
            if k >= W.shape[0]:
                break
            for i in range(n):
                t[i] = 0.0
                for p in range(lab_ptr[i], lab_ptr[i + 1]):
                    if lab_idx[p] == k:
                        t[i] = 1.0
            steps[k], cg_steps[k] = lc_class(indptr, indices, data, b, t, nw, W[k], C, tol_rel, max_iter, ws, wsn, act)
