"""Kernels of a growable sparse C x D weight matrix: one linked row of entries per class.

Multiclass SGD touches a few classes per instance and must cost O(nnz of the batch) per step, not
O(C x D). Entries live in flat pools (class, feature, value, next entry of the same class); a
hash table maps (class, feature) to its entry, so reads and writes are O(1) and memory is
O(nnz(W) + C). Pools never move inside a kernel: the Python side reserves room before each step.
Keys are class * D + feature in int64; the table uses linear probing with a power-of-two size.
"""
import numpy as np
from numba import njit, prange

EMPTY = -1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True, inline="always")
def _slot(key, shift):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))


@njit(cache=True, nogil=True)
def find(table_keys, table_entries, shift, key):
    """The entry of `key`, or -1."""
    mask = table_keys.shape[0] - 1
    s = _slot(key, shift)
    while True:
        k = table_keys[s]
        if k == key:
            return table_entries[s]
        if k == EMPTY:
            return -1
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def insert(table_keys, table_entries, shift, key, entry):
    """Map `key` (not in the table yet) to `entry`."""
    mask = table_keys.shape[0] - 1
    s = _slot(key, shift)
    while table_keys[s] != EMPTY:
        s = (s + 1) & mask
    table_keys[s] = key
    table_entries[s] = entry


@njit(cache=True, nogil=True)
def rehash(ent_class, ent_feat, n_entries, n_features, table_keys, table_entries, shift):
    """Fill an empty table with the first n_entries entries."""
    for e in range(n_entries):
        insert(table_keys, table_entries, shift, ent_class[e] * n_features + ent_feat[e], e)


@njit(cache=True, nogil=True)
def add_scaled_row(cls, coef, x_idx, x_val, n_features, table_keys, table_entries, shift, ent_class, ent_feat,
                   val, ref, ref_coef, next_entry, row_head, row_len, n_entries):
    """W[cls] += coef * x, creating missing entries; ref[e] += ref_coef * coef * x_f alongside (the
    averaging accumulator). Returns (new n_entries, change of ||W||_F^2)."""
    dsq = 0.0
    for p in range(x_idx.shape[0]):
        f = np.int64(x_idx[p])
        key = cls * n_features + f
        e = find(table_keys, table_entries, shift, key)
        if e < 0:
            e = n_entries
            n_entries += 1
            ent_class[e] = cls
            ent_feat[e] = f
            val[e] = 0.0
            ref[e] = 0.0
            next_entry[e] = row_head[cls]
            row_head[cls] = e
            row_len[cls] += 1
            insert(table_keys, table_entries, shift, key, e)
        d = coef * x_val[p]
        dsq += d * (2.0 * val[e] + d)
        val[e] += d
        ref[e] += ref_coef * d
    return n_entries, dsq


@njit(cache=True, nogil=True)
def dot_row(cls, x_idx, x_val, n_features, table_keys, table_entries, shift, val):
    """W[cls] . x by hash lookups: O(nnz(x))."""
    s = 0.0
    base = cls * n_features
    for p in range(x_idx.shape[0]):
        e = find(table_keys, table_entries, shift, base + np.int64(x_idx[p]))
        if e >= 0:
            s += val[e] * x_val[p]
    return s


@njit(cache=True, nogil=True, parallel=True)
def pair_scores(indptr, indices, data, a, b, n_features, table_keys, table_entries, shift, val):
    """W[a_i] . x_i and W[b_i] . x_i for every row i (b_i < 0 gives 0)."""
    n = indptr.shape[0] - 1
    sa = np.zeros(n)
    sb = np.zeros(n)
    for i in prange(n):
        xi = indices[indptr[i]:indptr[i + 1]]
        xv = data[indptr[i]:indptr[i + 1]]
        sa[i] = dot_row(a[i], xi, xv, n_features, table_keys, table_entries, shift, val)
        if b[i] >= 0:
            sb[i] = dot_row(b[i], xi, xv, n_features, table_keys, table_entries, shift, val)
    return sa, sb


@njit(cache=True, nogil=True, parallel=True)
def group_entries(keys, others, val, n_entries, n_keys, parts):
    """The non-zero entries grouped by `keys` as CSR (ptr over keys, `others`, value), each key's in
    entry order: the class-major snapshot re-ranking reads and the feature-major columns exact search
    reads. The entries are split into `parts` ranges counted and placed side by side; the result does
    not depend on `parts`."""
    counts = np.zeros((parts, n_keys), np.int64)
    for p in prange(parts):
        for e in range(n_entries * p // parts, n_entries * (p + 1) // parts):
            if val[e] != 0.0:
                counts[p, keys[e]] += 1
    ptr = np.zeros(n_keys + 1, np.int64)
    offsets = np.empty((parts, n_keys), np.int64)
    for k in range(n_keys):
        run = ptr[k]
        for p in range(parts):
            offsets[p, k] = run
            run += counts[p, k]
        ptr[k + 1] = run
    idx = np.empty(ptr[-1], np.int64)
    out = np.empty(ptr[-1])
    for p in prange(parts):
        fill = offsets[p]
        for e in range(n_entries * p // parts, n_entries * (p + 1) // parts):
            if val[e] != 0.0:
                q = fill[keys[e]]
                idx[q] = others[e]
                out[q] = val[e]
                fill[keys[e]] = q + 1
    return ptr, idx, out


@njit(cache=True, nogil=True, parallel=True)
def best_among(cand_ptr, cands, indptr, indices, data, exclude, row_ptr, row_feat, row_val, n_features, n_chunks):
    """Per query row: the candidate != exclude with the largest W[c] . x (smallest id on ties),
    W given by its class-major `group_entries` snapshot.

    The (row, candidate) pairs are grouped by class; a chunk of classes scatters each class row
    once into a dense buffer and sums every pair's x against it, in x's order. So each class row is
    read once per call and every lookup lands in one buffer, where a hash lookup per (class,
    feature) missed the cache; the scores, and so the answers, do not depend on `n_chunks`."""
    n = indptr.shape[0] - 1
    n_classes = row_ptr.shape[0] - 1
    n_pairs = cand_ptr[n]
    start = np.zeros(n_classes + 1, np.int64)
    for q in range(n_pairs):
        start[cands[q] + 1] += 1
    for c in range(n_classes):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    order = np.empty(n_pairs, np.int64)
    owner = np.empty(n_pairs, np.int64)
    for i in range(n):
        for q in range(cand_ptr[i], cand_ptr[i + 1]):
            order[fill[cands[q]]] = q
            owner[q] = i
            fill[cands[q]] += 1
    # class ranges holding about equal numbers of pairs
    bounds = np.searchsorted(start, np.arange(n_chunks + 1) * (n_pairs / n_chunks))
    bounds[0] = 0
    bounds[n_chunks] = n_classes
    scores = np.empty(n_pairs)
    for ch in prange(n_chunks):
        buf = np.zeros(n_features)
        for c in range(bounds[ch], bounds[ch + 1]):
            if start[c + 1] == start[c]:
                continue
            for k in range(row_ptr[c], row_ptr[c + 1]):
                buf[row_feat[k]] = row_val[k]
            for t in range(start[c], start[c + 1]):
                q = order[t]
                i = owner[q]
                s = 0.0
                for p in range(indptr[i], indptr[i + 1]):
                    s += buf[indices[p]] * data[p]
                scores[q] = s
            for k in range(row_ptr[c], row_ptr[c + 1]):
                buf[row_feat[k]] = 0.0
    best = np.full(n, -1, np.int64)
    score = np.full(n, -np.inf)
    for i in prange(n):
        for q in range(cand_ptr[i], cand_ptr[i + 1]):
            c = np.int64(cands[q])
            if c == exclude[i]:
                continue
            if scores[q] > score[i] or (scores[q] == score[i] and c < best[i]):
                score[i] = scores[q]
                best[i] = c
    return best, score


@njit(cache=True, nogil=True)
def gather_rows(classes, row_head, row_len, next_entry, ent_feat, val, skip_zeros):
    """CSR (indptr, feature indices sorted per row, values) of the given classes' rows."""
    indptr = np.zeros(classes.shape[0] + 1, np.int64)
    for r in range(classes.shape[0]):
        indptr[r + 1] = indptr[r] + row_len[classes[r]]
    idx = np.empty(indptr[-1], np.int64)
    out = np.empty(indptr[-1])
    pos = 0
    for r in range(classes.shape[0]):
        start = pos
        e = row_head[classes[r]]
        while e >= 0:
            if not (skip_zeros and val[e] == 0.0):
                idx[pos] = ent_feat[e]
                out[pos] = val[e]
                pos += 1
            e = next_entry[e]
        order = np.argsort(idx[start:pos])
        idx[start:pos] = idx[start:pos][order]
        out[start:pos] = out[start:pos][order]
        indptr[r + 1] = pos
    return indptr, idx[:pos], out[:pos]


@njit(cache=True, nogil=True)
def threshold_effect(classes, threshold, row_head, next_entry, val):
    """(sum of squares of the rows of `classes`, the same after soft-thresholding them by
    `threshold`): what a truncation would do to ||W||_2, without doing it."""
    before = 0.0
    after = 0.0
    for r in range(classes.shape[0]):
        e = row_head[classes[r]]
        while e >= 0:
            v = abs(val[e])
            before += v * v
            if v > threshold:
                after += (v - threshold) * (v - threshold)
            e = next_entry[e]
    return before, after


@njit(cache=True, nogil=True)
def soft_threshold_rows(classes, threshold, row_head, next_entry, val, ref, ref_coef):
    """W[c] <- sign(W[c]) max(|W[c]| - threshold, 0) for the given classes (eq. 13 of MEMOIR), and
    ref[e] += ref_coef * (change of val[e]) as every change of V (the running sum of iterates).
    Returns (entries zeroed by this call, change of ||W||_1)."""
    zeroed = 0
    dl1 = 0.0
    for r in range(classes.shape[0]):
        e = row_head[classes[r]]
        while e >= 0:
            v = val[e]
            if v > threshold:
                val[e] = v - threshold
                dl1 -= threshold
            elif v < -threshold:
                val[e] = v + threshold
                dl1 -= threshold
            elif v != 0.0:
                val[e] = 0.0
                dl1 -= abs(v)
                zeroed += 1
            ref[e] += ref_coef * (val[e] - v)
            e = next_entry[e]
    return zeroed, dl1


@njit(cache=True, nogil=True)
def fold_scale(val, ref, acc, n_entries, scale, weight):
    """One O(nnz) pass when the lazy scale is renormalised: acc += weight * val - ref (the running
    sum of iterates, see solvers.memoir), ref <- 0, val <- scale * val. Returns ||W||_F^2 and ||W||_1
    of the rescaled values, recomputed exactly."""
    sq = 0.0
    l1 = 0.0
    for e in range(n_entries):
        acc[e] += weight * val[e] - ref[e]
        ref[e] = 0.0
        v = val[e] * scale
        val[e] = v
        sq += v * v
        l1 += abs(v)
    return sq, l1


@njit(cache=True, nogil=True)
def link_rows(ent_class, n_entries, next_entry, row_head, row_len):
    """Rebuild every class's linked row from the entries' classes (after a compaction)."""
    row_head[:] = -1
    row_len[:] = 0
    for e in range(n_entries - 1, -1, -1):
        c = ent_class[e]
        next_entry[e] = row_head[c]
        row_head[c] = e
        row_len[c] += 1
