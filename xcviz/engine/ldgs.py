"""LDGS kernels (Yen et al., ICML 2018): losses on candidate sets, the exact bi-simplex projection,
top-Q block retrieval, exact rescoring, greedy message passing (Algorithm 2) and the SGD steps.

Scores are z = W phi(x), W dense K x h. An estimator hands the kernels, for every sample, a set U
of candidate classes (all K, a sample, or what the searches retrieved, always with the positives);
classes outside U count as minus infinity, so they take no part in the loss nor in its gradient.
The losses are the cross-entropy (2) and Nesterov's smoothed max-margin (10)-(11), whose gradient
is the projection of (z + 1_N) / mu onto the bi-simplex
C = {alpha : sum_N alpha = -sum_P alpha <= 1, alpha_N >= 0, alpha_P <= 0}.

Every parallel loop writes its own rows only, and the SGD steps sum a batch's contributions in
batch order inside each class (or feature), so the model does not depend on the thread count.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .topk import insert_topk
from .weightstore import EMPTY, find, insert

CE = 0
MARGIN = 1


@njit(cache=True, nogil=True)
def simplex_threshold(u, s):
    """theta with sum(max(u - theta, 0)) = s > 0: the sort-based projection onto {a >= 0, sum a = s}
    (Duchi et al. 2008)."""
    return _sorted_simplex_threshold(np.sort(u)[::-1], s)


@njit(cache=True, nogil=True)
def _sorted_simplex_threshold(v, s):
    """`simplex_threshold` of values already sorted in decreasing order."""
    css = 0.0
    theta = v[0] - s
    for i in range(v.shape[0]):
        css += v[i]
        t = (css - s) / (i + 1)
        if v[i] > t:
            theta = t
        else:
            break
    return theta


@njit(cache=True, nogil=True)
def _merge(a, b):
    """The sorted union (with repeats) of two sorted arrays, in linear time."""
    out = np.empty(a.shape[0] + b.shape[0])
    i, j = 0, 0
    for t in range(out.shape[0]):
        if j == b.shape[0] or (i < a.shape[0] and a[i] <= b[j]):
            out[t] = a[i]
            i += 1
        else:
            out[t] = b[j]
            j += 1
    return out


@njit(cache=True, nogil=True)
def _excess(a, ca, b, cb, t):
    """F(t) = sum_N (a - t)_+ - sum_P (t - b)_+ for sorted a, b with prefix sums ca, cb."""
    ia = np.searchsorted(a, t, side="right")
    ib = np.searchsorted(b, t, side="left")
    return (ca[-1] - ca[ia]) - (a.shape[0] - ia) * t - (ib * t - cb[ib])


@njit(cache=True, nogil=True)
def bisimplex_thresholds(vn, vp):
    """Thresholds (tn, tp) of the projection of v onto the bi-simplex: alpha_N = max(vn - tn, 0),
    alpha_P = min(vp - tp, 0). With s = sum alpha_N free in [0, 1], the optimal s has one shared
    threshold t solving sum (vn - t)_+ = sum (t - vp)_+ (a decreasing piecewise-linear equation);
    when that s exceeds 1, s = 1 and the two sides are projections onto unit simplices. (inf, -inf)
    means alpha = 0. One positive (multiclass) needs no sort (`_one_positive_thresholds`); more
    go through `_sorted_bisimplex_thresholds`."""
    if vn.shape[0] == 0 or vp.shape[0] == 0:
        return np.inf, -np.inf
    if vp.shape[0] == 1:
        return _one_positive_thresholds(vn, vp[0], _unit_simplex_threshold(vn))
    return _sorted_bisimplex_thresholds(vn, vp)


@njit(cache=True, nogil=True)
def _michelot(buf, n, floor):
    """Michelot's passes for the unit simplex over buf[:n] from a lower bound `floor` of its
    threshold: keep the values above the floor (compacted to the front, in order), raise the floor
    to (their sum - 1) / their count, until the set stands still. Returns (how many are kept, the
    threshold)."""
    while True:
        total, kept = 0.0, 0
        for r in range(n):  # branch-free: which values stay is data, not a predictable branch
            v = buf[r]
            keep = v > floor
            buf[kept] = v
            total += v if keep else 0.0
            kept += keep
        n = kept
        raised = (total - 1.0) / n
        if raised <= floor:
            return n, floor
        floor = raised


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _raised_floor(buf, n, floor):
    """(sum of the values of buf[:n] above floor - 1) / their count (floor itself if none is):
    Michelot's next floor without the compaction, summed in any order so that the pass is
    vectorised. It is a lower bound of the unit-simplex threshold of buf[:n] for any floor (the
    mean of any k values less 1/k is), up to the rounding of the sum."""
    total, count = 0.0, 0.0
    for r in range(n):
        keep = buf[r] > floor
        total += buf[r] if keep else 0.0
        count += 1.0 if keep else 0.0
    return (total - 1.0) / count if count > 0.0 else floor


@njit(cache=True, nogil=True)
def _unit_simplex_threshold(v):
    """theta with sum (v - theta)_+ = 1, by Michelot's passes from max - 1 (no sort)."""
    return _michelot(v.copy(), v.shape[0], v.max() - 1.0)[1]


@njit(cache=True, nogil=True)
def _one_positive_thresholds(a, b, tau):
    """`bisimplex_thresholds` with the single positive level b, without sorting, given the
    unit-simplex threshold tau of a. The shared t > b solves F(t) = sum (a - t)_+ - (t - b) = 0;
    F(tau) = 1 - (tau - b). So tau >= b + 1 means s = t - b >= 1: s = 1, t_N = tau, t_P = b + 1
    (alpha_P = -1). Otherwise the root lies above max(b, tau), and the map t -> (b + sum_{a > t} a)
    / (1 + #{a > t}) rises monotonically from there to it and stops (Michelot's argument: below
    the root it gives at least t and at most the root), after as many passes as the active set
    shrinks; starting at tau instead of b saves the passes that would only climb to it. A map
    that falls is rounding at the root (a level equal to it leaves the set at t and joins it
    again one ulp below: the passes flipped between the two for ever) and ends the passes too."""
    if a.max() <= b:
        return np.inf, -np.inf
    if tau - b >= 1.0:
        return tau, b + 1.0
    t = max(b, tau)
    count = -1
    while True:
        total, n = b, 1
        for r in range(a.shape[0]):
            if a[r] > t:
                total += a[r]
                n += 1
        if n == count or total / n < t:
            break
        count = n
        t = total / n
    return t, t


@njit(cache=True, nogil=True)
def _sorted_bisimplex_thresholds(vn, vp):
    """`bisimplex_thresholds` by a sort and a binary search over the breakpoints of the shared
    threshold's equation; each side is sorted once: the breakpoints are their merge and the simplex
    projections reuse them."""
    a = np.sort(vn)
    b = np.sort(vp)
    if a[-1] <= b[0]:
        return np.inf, -np.inf
    ca = np.zeros(a.shape[0] + 1)
    cb = np.zeros(b.shape[0] + 1)
    for i in range(a.shape[0]):
        ca[i + 1] = ca[i] + a[i]
    for i in range(b.shape[0]):
        cb[i + 1] = cb[i] + b[i]
    c = _merge(a, b)
    lo, hi = 0, c.shape[0] - 1  # F(c[0]) >= 0 always: find the last breakpoint with F >= 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _excess(a, ca, b, cb, c[mid]) >= 0.0:
            lo = mid
        else:
            hi = mid - 1
    r = c[lo]
    ia = np.searchsorted(a, r, side="right")
    ib = np.searchsorted(b, r, side="right")
    active = (a.shape[0] - ia) + ib
    if active == 0:
        return np.inf, -np.inf
    t = ((ca[-1] - ca[ia]) + cb[ib]) / active
    s = 0.0
    for i in range(a.shape[0]):
        if a[i] > t:
            s += a[i] - t
    if s <= 1.0:
        return t, t
    return _sorted_simplex_threshold(a[::-1], 1.0), -_sorted_simplex_threshold(-b, 1.0)


@njit(cache=True, nogil=True)
def loss_grad(z, pos, loss, mu, grad, extra):
    """Loss of the candidate scores z (positives flagged by pos; every other class is -inf), its
    gradient dL/dz into grad. extra[0]: the log-partition (CE) or the score level v above which a
    new negative would enter the margin gradient (MARGIN); used by the certificate."""
    m = z.shape[0]
    if loss == CE:
        return _ce_loss_grad(z, pos, grad, extra)
    lv = np.empty(m)
    maxn, minp, n_pos = -np.inf, np.inf, 0
    for k in range(m):
        v = _level(z[k], pos[k], mu)
        lv[k] = v
        if pos[k]:
            minp = min(minp, v)
            n_pos += 1
        else:
            maxn = max(maxn, v)
    return margin_from_levels(lv, pos, n_pos, maxn, minp, mu, grad, extra)


@njit(cache=True, nogil=True, inline="always")
def _level(z, positive, mu):
    """A class's margin level: (z + 1) / mu for a negative, z / mu for a positive (no division when
    mu = 1, where it is the identity). `loss_grad` and the block losses share it, bit for bit."""
    v = z if positive else z + 1.0
    return v if mu == 1.0 else v / mu


@njit(cache=True, nogil=True)
def _ce_loss_grad(z, pos, grad, extra):
    """`loss_grad` of the cross-entropy."""
    m = z.shape[0]
    n_pos = 0
    for k in range(m):
        n_pos += pos[k]
    if n_pos == 0 or m == 0:
        grad[:] = 0.0
        extra[0] = np.inf
        return 0.0
    zmax = -np.inf
    for k in range(m):
        zmax = max(zmax, z[k])
    total = 0.0
    for k in range(m):
        total += np.exp(z[k] - zmax)
    lse = zmax + np.log(total)
    value = 0.0
    for k in range(m):
        p = np.exp(z[k] - lse)
        grad[k] = n_pos * p - (1.0 if pos[k] else 0.0)
        if pos[k]:
            value += lse - z[k]
    extra[0] = lse
    return value


@njit(cache=True, nogil=True)
def margin_from_levels(lv, pos, n_pos, maxn, minp, mu, grad, extra):
    """`loss_grad` of the smoothed max-margin from the levels lv (see there), with their count of
    positives, largest negative and smallest positive level, which the caller finds in the pass
    that computes them.

    The N threshold is at least the threshold tau of the unit-simplex projection of the negatives
    (their total is at most 1), found by Michelot's passes over the negatives above max - 1
    (gathered once): only negatives above tau and positives within 1 of the smallest can be
    non-zero, so the sort runs on those alone and the result is exact. Two vectorised passes
    (`_raised_floor`) first raise the floor to (sum of a subset - 1) / its size, a lower bound of
    tau (less a relative 1e-9 for its rounding), so that the exact passes start near tau (as close
    as Condat's online pass, 2016, without its chain of dependent branches): they end on the same
    set, the negatives above tau, from any lower bound. Three passes over the levels in all: the
    caller's, one gathering both sides' candidates (branch-free: every level is stored, the counts
    advance by predicate), and one writing the gradient (two selects, vectorised). The loss sums
    over the gathered candidates alone: a non-zero alpha needs a negative above tn >= tau or a
    positive below tp <= min + 1, all of them gathered (a zero alpha adds exactly 0)."""
    m = lv.shape[0]
    if n_pos == 0 or m == 0 or maxn == -np.inf:
        grad[:] = 0.0
        extra[0] = np.inf
        return 0.0
    buf = np.empty(m)
    vp = np.empty(n_pos + 1)  # + 1: the last positive's store lands before its count is known
    nn, npp = 0, 0
    floor = maxn - 1.0
    ceiling = minp + 1.0
    for k in range(m):
        v = lv[k]
        p = pos[k]
        buf[nn] = v
        nn += (v > floor) & (not p)
        vp[npp] = v
        npp += (v < ceiling) & p
    rho = _raised_floor(buf, nn, _raised_floor(buf, nn, floor))
    nn, tau = _michelot(buf, nn, max(floor, rho - 1e-9 * (1.0 + abs(rho))))
    if npp == 1:
        tn, tp = _one_positive_thresholds(buf[:nn], vp[0], tau)
    else:
        tn, tp = bisimplex_thresholds(buf[:nn], vp[:npp])
    extra[0] = tn if tn != np.inf else minp
    for k in range(m):
        v = lv[k]
        grad[k] = min(v - tp, 0.0) if pos[k] else max(v - tn, 0.0)
    value = 0.0
    for r in range(nn):
        alpha = max(buf[r] - tn, 0.0)
        value += buf[r] * alpha - 0.5 * alpha * alpha
    for r in range(npp):
        alpha = min(vp[r] - tp, 0.0)
        value += vp[r] * alpha - 0.5 * alpha * alpha
    return mu * value


@njit(cache=True, nogil=True)
def _dot(W, k, phi, i, lo, hi):
    """W[k, lo:hi] . phi[i, lo:hi], summed in coordinate order (the order of the search's
    `_block_scores`, so a rescored block score equals the searched one bit for bit)."""
    v = 0.0
    for d in range(lo, hi):
        v += W[k, d] * phi[i, d]
    return v


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _fast_dot(a, b):
    """a . b with the reduction vectorised (reassociated; the same order on any thread count)."""
    v = 0.0
    for d in range(a.shape[0]):
        v += a[d] * b[d]
    return v


@njit(cache=True, nogil=True, parallel=True)
def all_scores(W, phi, out):
    """out[i, k] = W[k] . phi[i] for every class (the exact estimator's scores): parallel over chunks
    of classes, every row of W read once per batch and dotted with all the batch's queries."""
    n, K = phi.shape[0], W.shape[0]
    chunk = 256
    for c in prange((K + chunk - 1) // chunk):
        for k in range(c * chunk, min(K, (c + 1) * chunk)):
            w = W[k]
            for i in range(n):
                out[i, k] = _fast_dot(w, phi[i])


@njit(cache=True, nogil=True, parallel=True)
def block_live(W, bounds, classes, live, whole):
    """live[j, k] = whether class k's block row j of W is non-zero, for every k of `classes` (a zero
    block row has no direction to cluster by and scores 0 for every query); whole[k] = live in
    every block. A class already live in every block is not read again: a batch's classes are
    mostly those, and reading their rows cost more than the rest of the bookkeeping; a block row
    that returns to exactly 0 after that (a cancellation SGD all but never produces) stays listed,
    and the search scores it (its exact 0) like any member. Returns how many block rows came alive
    (were zero before): in one pass, where comparing copies of the flags before and after cost a
    batch of updates more than the flags themselves."""
    B = bounds.shape[0] - 1
    woke = 0
    for t in prange(classes.shape[0]):
        k = classes[t]
        if whole[k]:
            continue
        all_live = True
        for j in range(B):
            nonzero = False
            for d in range(bounds[j], bounds[j + 1]):
                if W[k, d] != 0.0:
                    nonzero = True
                    break
            woke += nonzero and not live[j, k]
            live[j, k] = nonzero
            all_live = all_live and nonzero
        whole[k] = all_live
    return woke


@njit(cache=True, nogil=True)
def live_members(assign, live, ptr, ids, has_dead):
    """The search's member lists of B block indexes (assign, live: B x K), in place: member_ptr
    B x (C+1) and member_ids (B x K, the first member_ptr[j, C] entries used) with the live classes
    of each cluster, ids increasing; has_dead (B x C) whether a cluster holds zero rows. One
    counting pass and one fill per block, into the caller's arrays (no K-sized allocation)."""
    B, K = assign.shape
    n_clusters = has_dead.shape[1]
    ptr[:] = 0
    has_dead[:] = False
    fill = np.empty(n_clusters, np.int64)
    for j in range(B):
        for k in range(K):
            if live[j, k]:
                ptr[j, assign[j, k] + 1] += 1
            else:
                has_dead[j, assign[j, k]] = True
        for c in range(n_clusters):
            ptr[j, c + 1] += ptr[j, c]
        fill[:] = ptr[j, :n_clusters]
        for k in range(K):
            if live[j, k]:
                ids[j, fill[assign[j, k]]] = k
                fill[assign[j, k]] += 1


@njit(cache=True, nogil=True, inline="always")
def _eight_dots(W, k, phi, i, lo, hi, out):
    """out[u] = W[k[u], lo:hi] . phi[i, lo:hi] for the eight rows k, each summed in coordinate order
    from 0 (the numbers of `_dot`, bit for bit): eight independent sums keep eight rows of W in
    flight (the rows are scattered over W: their loads, not the additions, bound this loop)."""
    k0, k1, k2, k3, k4, k5, k6, k7 = k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]
    v0, v1, v2, v3, v4, v5, v6, v7 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for d in range(lo, hi):
        x = phi[i, d]
        v0 += W[k0, d] * x
        v1 += W[k1, d] * x
        v2 += W[k2, d] * x
        v3 += W[k3, d] * x
        v4 += W[k4, d] * x
        v5 += W[k5, d] * x
        v6 += W[k6, d] * x
        v7 += W[k7, d] * x
    out[0], out[1], out[2], out[3] = v0, v1, v2, v3
    out[4], out[5], out[6], out[7] = v4, v5, v6, v7


@njit(cache=True, nogil=True)
def _block_scores(W, at, m, phi, i, lo, hi, s):
    """s[r] = W[at[r], lo:hi] . phi[i, lo:hi] for r < m, each summed in coordinate order from 0 (the
    numbers of `_dot`, bit for bit), eight rows at a time (`_eight_dots`): independent sums keep
    the pipeline and the memory system busy where one row's sum would wait on each addition."""
    r = 0
    while r + 8 <= m:
        _eight_dots(W, at[r:r + 8], phi, i, lo, hi, s[r:r + 8])
        r += 8
    for t in range(r, m):
        s[t] = _dot(W, at[t], phi, i, lo, hi)


@njit(cache=True, nogil=True, parallel=True)
def search_blocks(phi, W, bounds, centroids, member_ptr, member_ids, live, has_dead, q, S, V, cut, probed):
    """The block searches of every query, in one pass: in block j (coordinates bounds[j] ..
    bounds[j+1]), the probed.shape[2] clusters whose centroids (centroids[j, :, c] in block
    coordinates, B x width x C: coordinate-major, so that the C sums run side by side instead of one
    chain of additions per centroid) have the largest inner product with the query's block
    (probed[i, j]), then, among their members (member_ids[j, member_ptr[j, c]:member_ptr[j, c+1]],
    scored from their block rows of W, eight rows at a time, see `_block_scores`), the (at most) q
    classes with the largest block score into S[i, j] (-1 padding; ties go to the earlier member)
    with those scores in V[i, j]; cut[i, j] = the largest block score of a member left out (-inf if
    none). A zero block row (not live: no direction to cluster by, block score 0 for every query)
    is never kept; the member lists hold live rows (a row gone zero since is skipped here) and
    has_dead[j, c] flags a cluster with zero rows, which count in the cut as 0. The selection is a
    linear-time partition, not a sort."""
    n = phi.shape[0]
    B = bounds.shape[0] - 1
    C = centroids.shape[2]
    n_probes = probed.shape[2]
    for i in prange(n):
        top_v = np.empty(n_probes)
        cv = np.empty(C)
        for j in range(B):
            lo, hi = bounds[j], bounds[j + 1]
            top_k = probed[i, j]
            top_v[:] = -np.inf
            count = 0
            cv[:] = 0.0
            for d in range(lo, hi):  # every centroid's sum at once, each in coordinate order
                x = phi[i, d]
                for c in range(C):
                    cv[c] += x * centroids[j, d - lo, c]
            for c in range(C):
                count = insert_topk(c, cv[c], n_probes, top_k, top_v, count)
            m = 0
            for t in range(count):
                m += member_ptr[j, top_k[t] + 1] - member_ptr[j, top_k[t]]
            s = np.empty(m)
            at = np.empty(m, np.int64)
            m = 0
            zeros = False
            for t in range(count):
                zeros = zeros or has_dead[j, top_k[t]]
                for p in range(member_ptr[j, top_k[t]], member_ptr[j, top_k[t] + 1]):
                    k = member_ids[j, p]
                    if not live[j, k]:
                        zeros = True
                        continue
                    at[m] = k
                    m += 1
            s = s[:m]
            _block_scores(W, at, m, phi, i, lo, hi, s)
            S[i, j, :] = -1
            if m <= q:
                for r in range(m):
                    S[i, j, r] = at[r]
                    V[i, j, r] = s[r]
                cut[i, j] = 0.0 if zeros else -np.inf
                continue
            threshold = np.partition(s.copy(), m - q)[m - q]  # the q-th largest block score
            r = 0
            for x in range(m):
                if s[x] > threshold:
                    S[i, j, r] = at[x]
                    V[i, j, r] = s[x]
                    r += 1
            left = -np.inf
            for x in range(m):
                if s[x] == threshold and r < q:
                    S[i, j, r] = at[x]
                    V[i, j, r] = s[x]
                    r += 1
                elif s[x] <= threshold:
                    left = max(left, s[x])
            cut[i, j] = max(left, 0.0) if zeros else left


@njit(cache=True, nogil=True, parallel=True)
def rescore(W, phi, bounds, cand_ptr, cands, pos_ptr, pos_idx, distinct, U, is_pos, Z, count):
    """Exact block scores of every candidate: U[i, :count[i]] = the sorted union of the query's
    candidates and its positives (taken as given when `distinct`: sorted, unique, positives in),
    Z[i, t, j] = W[U[i, t], block j] . phi[i, block j], is_pos[i, t] whether U[i, t] is positive."""
    n = phi.shape[0]
    B = bounds.shape[0] - 1
    for i in prange(n):
        pa, pb = pos_ptr[i], pos_ptr[i + 1]
        if distinct:
            ids = cands[cand_ptr[i]:cand_ptr[i + 1]]
        else:
            ids = np.unique(np.concatenate((cands[cand_ptr[i]:cand_ptr[i + 1]], pos_idx[pa:pb])))
        positives = np.sort(pos_idx[pa:pb])
        c = ids.shape[0]
        for t in range(c):
            k = ids[t]
            U[i, t] = k
            p = np.searchsorted(positives, k)
            is_pos[i, t] = p < positives.shape[0] and positives[p] == k
            for j in range(B):
                Z[i, t, j] = _dot(W, k, phi, i, bounds[j], bounds[j + 1])
        count[i] = c


@njit(cache=True, nogil=True)
def _complete(zb, present, t, W, phi, i, bounds, ids):
    """Score candidate t (class ids[t]) exactly in every block where it was not retrieved (zb,
    present: B x c, block-major). The missing blocks' sums run side by side (independent additions
    instead of one chain per block), each in coordinate order from 0: the numbers of `_dot`, bit
    for bit."""
    B = zb.shape[0]
    k = ids[t]
    width = 0
    for j in range(B):
        if not present[j, t]:
            zb[j, t] = 0.0
            width = max(width, bounds[j + 1] - bounds[j])
    for d in range(width):
        for j in range(B):
            col = bounds[j] + d
            if not present[j, t] and col < bounds[j + 1]:
                zb[j, t] += W[k, col] * phi[i, col]
    for j in range(B):
        present[j, t] = True


@njit(cache=True, nogil=True)
def _complete_many(zb, present, members, n_members, todo, W, phi, i, bounds, ids):
    """`_complete` of the candidates todo[:] (each once), eight at a time: the eight rows' sums of
    one block run side by side (`_eight_dots`), and only the blocks a candidate lacks take the
    result, which also lists it among their members (members[j, :n_members[j]], see `_block_loss`)."""
    B = zb.shape[0]
    n = todo.shape[0]
    vals = np.empty(8)
    rows = np.empty(8, np.int64)
    r = 0
    while r + 8 <= n:
        for u in range(8):
            rows[u] = ids[todo[r + u]]
        for j in range(B):
            missing = False
            for u in range(8):
                missing = missing or not present[j, todo[r + u]]
            if not missing:
                continue
            _eight_dots(W, rows, phi, i, bounds[j], bounds[j + 1], vals)
            for u in range(8):
                t = todo[r + u]
                if not present[j, t]:
                    zb[j, t] = vals[u]
                    present[j, t] = True
                    members[j, n_members[j]] = t
                    n_members[j] += 1
        r += 8
    for t in todo[r:]:
        for j in range(B):
            if not present[j, t]:
                members[j, n_members[j]] = t
                n_members[j] += 1
        _complete(zb, present, t, W, phi, i, bounds, ids)


@njit(cache=True, nogil=True)
def _block_loss(zb, lam, members, n_members, j, pos, loss, mu, x, xp, at, g, extra):
    """L(B (z~_j + lambda_j)) of block j over its members, the candidates present in it
    (members[j, :n_members[j]]; the others are -inf; zb, lam: B x c, block-major); the gradient in
    g[:m] for the candidates at[:m] = its members. Returns m. Walking the members alone, not all c
    candidates, is what keeps a block's work to what it retrieved (about c / B before the active set
    is completed). The margin loss's levels are computed in the gathering pass itself (see
    `loss_grad`, whose numbers these are, bit for bit, on the candidates in members' order)."""
    B = zb.shape[0]
    m = n_members[j]
    if loss == CE:
        for r in range(m):
            t = members[j, r]
            x[r] = B * (zb[j, t] + lam[j, t])
            xp[r] = pos[t]
            at[r] = t
        extra[1] = loss_grad(x[:m], xp[:m], loss, mu, g[:m], extra)
        return m
    maxn, minp, n_pos = -np.inf, np.inf, 0
    for r in range(m):
        t = members[j, r]
        p = pos[t]
        v = _level(B * (zb[j, t] + lam[j, t]), p, mu)
        x[r] = v
        xp[r] = p
        at[r] = t
        maxn = max(maxn, v if not p else -np.inf)  # selects, not branches: which candidates are
        minp = min(minp, v if p else np.inf)  # positives is data
        n_pos += p
    extra[1] = margin_from_levels(x[:m], xp[:m], n_pos, maxn, minp, mu, g[:m], extra)
    return m


@njit(cache=True, nogil=True)
def decomposed_loss(zb, lam, members, n_members, pos, loss, mu, coef):
    """G(Lambda) = (1/B) sum_j L(B (z~_j + lambda_j)) (Theorem 1's objective, each block over its
    members, see `_block_loss`); coef = (1/B) sum_j of the block gradients (Algorithm 2's output)."""
    B, c = zb.shape
    x, g, xp, at, extra = np.empty(c), np.empty(c), np.empty(c, np.bool_), np.empty(c, np.int64), np.empty(2)
    coef[:] = 0.0
    value = 0.0
    share = 1.0 / B
    for j in range(B):
        m = _block_loss(zb, lam, members, n_members, j, pos, loss, mu, x, xp, at, g, extra)
        value += extra[1] / B
        for r in range(m):
            coef[at[r]] += g[r] * share
    return value


@njit(cache=True, nogil=True)
def messages(zb, present, members, n_members, pos, steps, tau2, loss, mu, lam, trace, W, phi, i, bounds, ids):
    """Algorithm 2's loop on one sample, restricted to the active set: T = steps greedy steps from
    lam (zb, present, lam: B x c, block-major; lam starts at 0 and moves on A only; block j's
    members listed in members[j, :n_members[j]]). Each step computes A (candidates with a block
    gradient above tau2 in some block, each block over its members), scores A exactly in the blocks
    that did not retrieve it (O(h |A|)) and moves lambda_k towards z~_k / B - z~_kj on A only
    (O(B |A|)). When trace has steps + 1 entries, trace[t] = G(Lambda) after t steps (trace[0]:
    before). Returns |A| of the last step."""
    B, c = zb.shape
    x, g, xp, at, extra = np.empty(c), np.empty(c), np.empty(c, np.bool_), np.empty(c, np.int64), np.empty(2)
    active = np.zeros(c, np.bool_)
    todo = np.empty(c, np.int64)
    scratch = np.empty(c)
    tracing = trace.shape[0] == steps + 1
    if tracing:
        trace[0] = decomposed_loss(zb, lam, members, n_members, pos, loss, mu, scratch)
    n_active = 0
    for t in range(1, steps + 1):
        active[:] = False
        for j in range(B):
            m = _block_loss(zb, lam, members, n_members, j, pos, loss, mu, x, xp, at, g, extra)
            for r in range(m):
                active[at[r]] |= abs(g[r]) > tau2
        eta = 2.0 / (t + 2.0)
        n_active = 0
        for k in range(c):  # A in increasing order, branch-free
            todo[n_active] = k
            n_active += active[k]
        _complete_many(zb, present, members, n_members, todo[:n_active], W, phi, i, bounds, ids)
        for r in range(n_active):
            k = todo[r]
            zt = 0.0
            for j in range(B):
                zt += zb[j, k]
            for j in range(B):
                lam[j, k] = eta * (zt / B - zb[j, k]) + (1.0 - eta) * lam[j, k]
        if tracing:
            trace[t] = decomposed_loss(zb, lam, members, n_members, pos, loss, mu, scratch)
    return n_active


@njit(cache=True, nogil=True)
def greedy_messages(zb, pos, steps, tau2, loss, mu, lam, trace):
    """`messages` with every candidate scored in every block, zb and lam c x B (lam updated in place)."""
    c, B = zb.shape
    present = np.ones((B, c), np.bool_)
    members = np.empty((B, c), np.int64)
    for j in range(B):
        members[j] = np.arange(c)
    lam_b = np.ascontiguousarray(lam.T)
    none = np.empty((0, 1))
    n_active = messages(np.ascontiguousarray(zb.T), present, members, np.full(B, c), pos, steps, tau2, loss, mu, lam_b,
                        trace, none, none, 0, np.zeros(B + 1, np.int64), np.zeros(c, np.int64))
    lam[:] = lam_b.T
    return n_active


@njit(cache=True, nogil=True)
def _union(S, V, pos_ptr, pos_idx, i, U, is_pos, Z, present):
    """Sample i's candidates: U[i, :u] = its positives, then the union of the S_j in retrieval
    order, each class once; Z[i, j, s], present[i, j, s] = the block scores retrieved (block-major).
    The classes map to their slots s through the weight store's hash table (weightstore.find/insert)
    sized to the sample's entries (a few kB, so it stays in cache, where a K-sized map misses on
    nearly every look-up). Returns (u, members, n_members): block j's retrieved slots in
    members[j, :n_members[j]], in retrieval order (room for every entry: the blocks gain members
    as `_complete_many` scores candidates in them)."""
    B, q = S.shape[1], S.shape[2]
    entries = pos_ptr[i + 1] - pos_ptr[i]
    for j in range(B):
        for t in range(q):
            if S[i, j, t] < 0:
                break
            entries += 1
    present[i, :, :entries] = False
    bits = 4
    while (1 << bits) < 2 * entries:
        bits += 1
    keys = np.full(1 << bits, EMPTY, np.int64)
    slots = np.empty(1 << bits, np.int64)
    shift = 64 - bits
    members = np.empty((B, entries), np.int64)
    n_members = np.zeros(B, np.int64)
    u = 0
    for p in range(pos_ptr[i], pos_ptr[i + 1]):
        k = pos_idx[p]
        if find(keys, slots, shift, k) >= 0:
            continue
        insert(keys, slots, shift, k, u)
        U[i, u] = k
        is_pos[i, u] = True
        u += 1
    for j in range(B):
        for t in range(q):
            k = S[i, j, t]
            if k < 0:
                break
            s = find(keys, slots, shift, k)
            if s < 0:
                s = u
                insert(keys, slots, shift, k, u)
                U[i, u] = k
                is_pos[i, u] = False
                u += 1
            Z[i, j, s] = V[i, j, t]
            present[i, j, s] = True
            members[j, n_members[j]] = s
            n_members[j] += 1
    return u, members, n_members


@njit(cache=True, nogil=True, parallel=True)
def search_estimate(W, phi, bounds, S, V, pos_ptr, pos_idx, steps, tau2, loss, mu, restrict,
                    U, is_pos, Z, present, count, coef, value, n_active, retrieved):
    """mips (one block) and decomp (Algorithm 2) from the block searches S (ids, -1 padding) and
    their block scores V: the candidates U[i, :count[i]] are the positives then the union of the
    S_j in retrieval order (see `_union`); block j knows its own retrieved scores (Z[i, j, t],
    present[i, j, t]: n x B x width, block-major) and the positives' (scored exactly in every
    block); `restrict` = False scores every candidate in every block first (the unrestricted
    message passing, O(h |U|)). Then `steps` greedy steps and the output gradient
    coef[i, :count[i]] = (1/B) sum_j grad L(B (z~_j + lambda_j)), value[i] = G(Lambda), retrieved[i] =
    sum_j |S_j|."""
    n, B = S.shape[0], S.shape[1]
    if Z.shape[1] != B or present.shape[1] != B:
        raise ValueError("Z and present are n x B x width (block-major)")
    for i in prange(n):
        u, members, n_members = _union(S, V, pos_ptr, pos_idx, i, U, is_pos, Z, present)
        retrieved[i] = n_members.sum()  # the S_j alone: the positives join the blocks' members below
        ids = U[i, :u]
        zb = Z[i, :, :u]
        known = present[i, :, :u]
        pos = is_pos[i, :u]
        todo = np.empty(u, np.int64)
        m = 0
        for s in range(u):
            if pos[s] or not restrict:
                todo[m] = s
                m += 1
        _complete_many(zb, known, members, n_members, todo[:m], W, phi, i, bounds, ids)
        lam = np.zeros((B, u))
        out = coef[i, :u]
        if B == 1:
            value[i] = decomposed_loss(zb, lam, members, n_members, pos, loss, mu, out)
            m = 0
            for s in range(u):
                m += abs(out[s]) > tau2
            n_active[i] = m
        else:
            n_active[i] = messages(zb, known, members, n_members, pos, steps, tau2, loss, mu, lam, np.empty(0), W, phi,
                                   i, bounds, ids)
            value[i] = decomposed_loss(zb, lam, members, n_members, pos, loss, mu, out)
        count[i] = u


@njit(cache=True, nogil=True, parallel=True)
def complete_scores(W, phi, bounds, U, count, Z, present):
    """Score every candidate exactly in every block (Z, present: n x B x width; the certificate
    needs the exact scores of U)."""
    for i in prange(U.shape[0]):
        c = count[i]
        for t in range(c):
            _complete(Z[i, :, :c], present[i, :, :c], t, W, phi, i, bounds, U[i, :c])


@njit(cache=True, nogil=True, parallel=True)
def estimate(Z, is_pos, count, tau2, loss, mu, coef, value, n_active):
    """The loss (value[i]) and gradient (coef[i, :count[i]]) of one-block candidate scores Z[i, :, 0]
    (sampled softmax); n_active[i] = the gradient's support above tau2."""
    n = Z.shape[0]
    for i in prange(n):
        c = count[i]
        g = coef[i, :c]
        extra = np.empty(1)
        value[i] = loss_grad(Z[i, :c, 0].copy(), is_pos[i, :c], loss, mu, g, extra)
        m = 0
        for k in range(c):
            m += abs(g[k]) > tau2
        n_active[i] = m


@njit(cache=True, nogil=True)
def _row_loss_grad(S, pos_ptr, pos_idx, i, loss, mu, grad, extra):
    """`loss_grad` of the full score row S[i] (all K classes), its positives flagged from pos_idx."""
    pos = np.zeros(S.shape[1], np.bool_)
    for p in range(pos_ptr[i], pos_ptr[i + 1]):
        pos[pos_idx[p]] = True
    return loss_grad(S[i], pos, loss, mu, grad, extra)


@njit(cache=True, nogil=True, parallel=True)
def exact_estimate(S, pos_ptr, pos_idx, tau2, loss, mu, U, coef, count, value, n_active):
    """The exact estimator's output from all K scores S: the loss (value[i]) and the gradient's
    support, U[i, :count[i]] the classes with a non-zero dL/dz in increasing order and coef[i,
    :count[i]] their dL/dz (compacted in place from the dense row, while it is in cache), so that
    the update reads the support alone and not all K coefficients; n_active[i] = the support above
    tau2."""
    n, K = S.shape
    for i in prange(n):
        g = coef[i]
        value[i] = _row_loss_grad(S, pos_ptr, pos_idx, i, loss, mu, g, np.empty(1))
        c, m = 0, 0
        for k in range(K):
            v = g[k]
            if v != 0.0:
                g[c] = v
                U[i, c] = k
                c += 1
                m += abs(v) > tau2
        count[i] = c
        n_active[i] = m


@njit(cache=True, nogil=True, parallel=True)
def exact_loss_grad(S, pos_ptr, pos_idx, loss, mu, grad, value, level):
    """The exact loss (value), gradient (grad, n x K) and entering level (see loss_grad) of score rows S."""
    for i in prange(S.shape[0]):
        extra = np.empty(1)
        value[i] = _row_loss_grad(S, pos_ptr, pos_idx, i, loss, mu, grad[i], extra)
        level[i] = extra[0]


@njit(cache=True, nogil=True, parallel=True)
def cone_stats(W, lo, hi, assign, centroids, bound):
    """Per cluster of a block index: the largest and smallest member norm and the smallest cosine
    between a member and its centroid (for the retrieval certificate's cone bound). bound M > 0:
    the index clusters the reduced rows u = [w, sqrt(M^2 - ||w||^2)] (see mips.unit_block_rows) and
    its centroids have the extra coordinate: the norms and cosines are those of u (a query [x, 0]
    scores u.[x, 0] = w.x, so the cone bound holds for u as it does for w)."""
    C = centroids.shape[0]
    K = W.shape[0]
    r_max = np.zeros(C)
    r_min = np.full(C, np.inf)
    cos_min = np.full(C, 1.0)
    norms = np.empty(K)
    cosines = np.empty(K)
    for k in prange(K):
        s, d = 0.0, 0.0
        for t in range(lo, hi):
            s += W[k, t] * W[k, t]
            d += W[k, t] * centroids[assign[k], t - lo]
        if bound > 0.0 and s > 0.0:  # a zero row stays zero: no direction, not reduced
            tail = np.sqrt(max(0.0, bound * bound - s))
            s += tail * tail
            d += tail * centroids[assign[k], hi - lo]
        norms[k] = np.sqrt(s)
        cosines[k] = d / norms[k] if norms[k] > 0.0 else 1.0
    for k in range(K):
        c = assign[k]
        r_max[c] = max(r_max[c], norms[k])
        r_min[c] = min(r_min[c], norms[k])
        cos_min[c] = min(cos_min[c], cosines[k])
    return r_max, r_min, cos_min


@njit(cache=True, nogil=True, parallel=True)
def cone_bound(phi, lo, hi, centroids, sizes, probed, r_max, r_min, cos_min, cut):
    """Upper bound of the block score of every class a query did not keep: the largest of cut[i]
    (probed but not kept) and, over the clusters not probed, max_w w.q <= ||w|| ||q|| cos(angle(q,
    centroid) - largest member angle)."""
    n, C = phi.shape[0], centroids.shape[0]
    out = np.empty(n)
    for i in prange(n):
        qn = 0.0
        for t in range(lo, hi):
            qn += phi[i, t] * phi[i, t]
        qn = np.sqrt(qn)
        best = cut[i]
        seen = np.zeros(C, np.bool_)
        for t in range(probed.shape[1]):
            seen[probed[i, t]] = True
        for c in range(C):
            if seen[c] or sizes[c] == 0:
                continue
            d = 0.0
            for t in range(lo, hi):
                d += phi[i, t] * centroids[c, t - lo]
            angle_q = np.arccos(min(1.0, max(-1.0, d / qn))) if qn > 0.0 else 0.0
            gap = angle_q - np.arccos(min(1.0, max(-1.0, cos_min[c])))
            cosine = 1.0 if gap <= 0.0 else np.cos(gap)
            bound = qn * (r_max[c] * cosine if cosine >= 0.0 else r_min[c] * cosine)
            best = max(best, bound)
        out[i] = best
    return out


@njit(cache=True, nogil=True, parallel=True)
def certify(Z, is_pos, count, upper, n_classes, loss, mu, tau2, out):
    """Whether the retrieval certifies, per sample, that no class outside U could enter the exact
    gradient of the loss on U: every such class scores at most upper[i] (the summed block bounds);
    margin: (upper + 1) / mu must not exceed the entering level; CE: the outside classes' total
    gradient mass |P| (K - |U|) exp(upper - lse_U) must stay below tau2."""
    n, B = Z.shape[0], Z.shape[1]
    for i in prange(n):
        c = count[i]
        if c >= n_classes:
            out[i] = True
            continue
        z = np.zeros(c)
        for k in range(c):
            for j in range(B):
                z[k] += Z[i, j, k]
        g = np.empty(c)
        extra = np.empty(1)
        pos = is_pos[i, :c]
        loss_grad(z, pos, loss, mu, g, extra)
        n_pos = 0
        for k in range(c):
            n_pos += pos[k]
        if loss == CE:
            out[i] = n_pos * (n_classes - c) * np.exp(upper[i] - extra[0]) <= tau2
        else:
            out[i] = (upper[i] + 1.0) / mu <= extra[0]


@njit(cache=True, nogil=True, parallel=True)
def forward(indptr, indices, data, V, tanh):
    """phi(x) = V^T x for CSR rows x (tanh applied when asked)."""
    n, h = indptr.shape[0] - 1, V.shape[1]
    out = np.zeros((n, h))
    for i in prange(n):
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            for d in range(h):
                out[i, d] += data[p] * V[f, d]
        if tanh:
            for d in range(h):
                out[i, d] = np.tanh(out[i, d])
    return out


@njit(cache=True, nogil=True)
def scatter(U, coef, count, dense, touched, classes):
    """dense[U[i, t], i] = coef[i, t] for non-zero coefficients (dense is K x batch: a class's
    coefficients over the batch are one short contiguous run for `step_classes`); touched[k] marks
    the classes hit, listed once each in classes[:m] in the order first hit (so that no pass over
    all K finds them). Returns m."""
    m = 0
    for i in range(U.shape[0]):
        for t in range(count[i]):
            if coef[i, t] != 0.0:
                k = U[i, t]
                dense[k, i] = coef[i, t]
                classes[m] = k
                m += not touched[k]
                touched[k] = True
    return m


@njit(cache=True, nogil=True, parallel=True)
def embedding_gradient(W, U, coef, count, phi, tanh):
    """d loss / d (V^T x) of every sample: sum_k coef_k w_k, times 1 - phi^2 under tanh."""
    n, h = U.shape[0], W.shape[1]
    out = np.zeros((n, h))
    for i in prange(n):
        for t in range(count[i]):
            c = coef[i, t]
            if c != 0.0:
                k = U[i, t]
                for d in range(h):
                    out[i, d] += c * W[k, d]
        if tanh:
            for d in range(h):
                out[i, d] *= 1.0 - phi[i, d] * phi[i, d]
    return out


@njit(cache=True, nogil=True, parallel=True)
def step_classes(W, classes, dense, touched, phi, step):
    """W[k] -= step * sum_i dense[k, i] phi_i for every k of `classes` (dense: K x batch), summing in
    batch order; then dense[k] = 0 and touched[k] = False, ready for the next batch (see `scatter`)."""
    n, h = phi.shape
    for t in prange(classes.shape[0]):
        k = classes[t]
        for i in range(n):
            c = dense[k, i]
            if c != 0.0:
                for d in range(h):
                    W[k, d] -= step * c * phi[i, d]
                dense[k, i] = 0.0
        touched[k] = False


@njit(cache=True, nogil=True, parallel=True)
def step_features(V, feat_ptr, features, rows, values, dphi, step):
    """V[f] -= step * sum_i x_if dphi_i over the batch's features (grouped by feature, rows in batch order)."""
    h = V.shape[1]
    for t in prange(features.shape[0]):
        f = features[t]
        for p in range(feat_ptr[t], feat_ptr[t + 1]):
            i = rows[p]
            for d in range(h):
                V[f, d] -= step * values[p] * dphi[i, d]
