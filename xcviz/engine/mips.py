"""Kernels of the approximate margin oracles: hashed sketches, SimpleLSH codes and Hamming ranking,
spherical clustering, candidate lists and exact re-ranking over a fixed CSR matrix.

Every result is independent of the thread count: parallel loops only split independent rows (or
queries), each summed in a fixed order, and every tie goes to the smaller index. Index arrays are
int64 (indptr) and int32/int64 (indices); the hash arithmetic is all uint64, never mixed with int64
(numba would turn the mix into float64).
"""
import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

from .topk import insert_topk

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_FEATURE = np.uint64(0xD6E8FEB86659FD93)
_BLOCK = np.uint64(0xA0761D6478BD642F)


@intrinsic
def popcount(typingctx, x):
    """Number of set bits of a uint64 (one popcnt instruction)."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


@njit(cache=True, nogil=True)
def mix64(z):
    """splitmix64's finaliser: a well-mixed uint64 from a uint64."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def sign_bits(feature, block, seed):
    """64 random signs (one bit each) of `feature` for sketch dimensions 64*block .. 64*block+63."""
    return mix64(np.uint64(seed) * _GOLDEN ^ np.uint64(feature) * _FEATURE ^ (np.uint64(block) + np.uint64(1)) * _BLOCK)


@njit(cache=True, nogil=True)
def _sketch_row(indptr, indices, data, i, out, seed):
    dim = out.shape[0]
    for p in range(indptr[i], indptr[i + 1]):
        v = data[p]
        f = indices[p]
        for b in range((dim + 63) // 64):
            bits = sign_bits(f, b, seed)
            for j in range(64 * b, min(dim, 64 * b + 64)):
                out[j] += v if (bits >> np.uint64(j - 64 * b)) & np.uint64(1) else -v


@njit(cache=True, nogil=True, parallel=True)
def sketch_rows(indptr, indices, data, dim, seed):
    """S x for every CSR row x: S is the dim x D Rademacher matrix / sqrt(dim) whose entries are
    hashed from (feature, dimension, seed), so nothing of size D is stored (E ||S x||^2 = ||x||^2)."""
    n = indptr.shape[0] - 1
    out = np.zeros((n, dim))
    for i in prange(n):
        _sketch_row(indptr, indices, data, i, out[i], seed)
    out *= 1.0 / np.sqrt(dim)
    return out


@njit(cache=True, nogil=True)
def feature_signs(feature, dim, seed):
    """The sketch's column of one feature, unscaled (+-1 entries)."""
    out = np.empty(dim)
    for b in range((dim + 63) // 64):
        bits = sign_bits(feature, b, seed)
        for j in range(64 * b, min(dim, 64 * b + 64)):
            out[j] = 1.0 if (bits >> np.uint64(j - 64 * b)) & np.uint64(1) else -1.0
    return out


@njit(cache=True, nogil=True, parallel=True)
def row_norms(indptr, data):
    """Euclidean norm of every CSR row."""
    n = indptr.shape[0] - 1
    out = np.empty(n)
    for i in prange(n):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * data[p]
        out[i] = np.sqrt(s)
    return out


@njit(cache=True, nogil=True, parallel=True)
def simplelsh_codes(proj, norms, extra, bound):
    """SimpleLSH codes of class vectors: bit j = sign of a_j . P(w), P(w) = [w/M, sqrt(1-||w/M||^2)].

    proj: n x bits sketches S w (S = Rademacher / sqrt(bits), so a_j . w = sqrt(bits) proj[:, j]);
    extra: the +-1 entries of the a_j on the appended coordinate; bound: M >= every norm."""
    n, bits = proj.shape
    codes = np.zeros(n, np.uint64)
    root = np.sqrt(bits)
    for i in prange(n):
        r = norms[i] / bound
        tail = np.sqrt(max(0.0, 1.0 - r * r))
        code = np.uint64(0)
        for j in range(bits):
            if root * proj[i, j] / bound + extra[j] * tail > 0.0:
                code |= np.uint64(1) << np.uint64(j)
        codes[i] = code
    return codes


@njit(cache=True, nogil=True, parallel=True)
def sign_codes(proj):
    """Codes of queries, Q(x) = [x/||x||, 0]: bit j = sign of a_j . x (scaling does not matter)."""
    n, bits = proj.shape
    codes = np.zeros(n, np.uint64)
    for i in prange(n):
        code = np.uint64(0)
        for j in range(bits):
            if proj[i, j] > 0.0:
                code |= np.uint64(1) << np.uint64(j)
        codes[i] = code
    return codes


@njit(cache=True, nogil=True)
def _cut(hist, k):
    """Counting select over a histogram of Hamming distances (k <= its total): the distance `cut`
    at which the k nearest end, and how many of them lie at `cut` itself."""
    below = 0
    cut = 0
    while below + hist[cut] < k:
        below += hist[cut]
        cut += 1
    return cut, k - below


@njit(cache=True, nogil=True, parallel=True)
def hamming_nearest(queries, codes, k, chunk, salt):
    """The k codes nearest to each query in Hamming distance, as candidate lists (cand_indptr,
    candidates), k per query. One popcount scan per query and a counting select over the 65
    possible distances: O(C) with a small constant, no sort. Ties at the cut are taken in a
    circular order starting at a class hashed from (salt, query): SimpleLSH gives many classes the
    same code, and taking the smallest ids would hand every query the same few classes."""
    n = queries.shape[0]
    n_codes = codes.shape[0]
    k = min(k, n_codes)
    cand = np.empty(n * k, np.int64)
    n_chunks = (n + chunk - 1) // chunk
    for ch in prange(n_chunks):
        dist = np.empty(n_codes, np.uint8)
        hist = np.empty(65, np.int64)
        for i in range(ch * chunk, min(n, (ch + 1) * chunk)):
            q = queries[i]
            hist[:] = 0
            for c in range(n_codes):
                d = popcount(q ^ codes[c])
                dist[c] = d
                hist[d] += 1
            cut, at_cut = _cut(hist, k)
            pos = i * k
            start = np.int64(mix64(np.uint64(salt) + np.uint64(i)) % np.uint64(n_codes))
            for step in range(n_codes):
                c = (start + step) % n_codes
                d = dist[c]
                if d < cut:
                    cand[pos] = c
                    pos += 1
                elif d == cut and at_cut > 0:
                    cand[pos] = c
                    pos += 1
                    at_cut -= 1
    return np.arange(n + 1, dtype=np.int64) * k, cand


@njit(cache=True, nogil=True)
def _band_key(code, band, bits):
    """Bits band*bits .. band*bits + bits - 1 of a code, as a bucket number (int64)."""
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    return np.int64((code >> np.uint64(band * bits)) & mask)


@njit(cache=True, nogil=True, parallel=True)
def band_tables(codes, bands, bits):
    """Bucket tables of banded LSH: band b holds the codes by their bits b*bits .. b*bits+bits-1.
    Counting sort per band (parallel over bands), O(C) each: bucket_ptr (bands x 2^bits + 1) and
    bucket_ids (bands x C), the classes of bucket t of band b being
    bucket_ids[b, bucket_ptr[b, t]:bucket_ptr[b, t + 1]], in increasing order."""
    n = codes.shape[0]
    size = np.int64(1) << np.int64(bits)
    ptr = np.zeros((bands, size + 1), np.int64)
    ids = np.empty((bands, n), np.int64)
    for b in prange(bands):
        row = ptr[b]
        for c in range(n):
            row[_band_key(codes[c], b, bits) + 1] += 1
        for t in range(size):
            row[t + 1] += row[t]
        fill = row[:size].copy()
        for c in range(n):
            key = _band_key(codes[c], b, bits)
            ids[b, fill[key]] = c
            fill[key] += 1
    return ptr, ids


@njit(cache=True, nogil=True)
def _visit_bucket(q, codes, bucket_ptr, bucket_ids, band, key, cap, seen, touched, dist, hist, m, crowd):
    """Add the unseen classes of one bucket to a query's union (their Hamming distances to
    `dist`, `hist`), or, if it holds more than `cap`, remember it in `crowd` when it is the least
    crowded so far. Returns the union's new size."""
    lo = bucket_ptr[band, key]
    hi = bucket_ptr[band, key + 1]
    if hi - lo > cap:
        if crowd[0] < 0 or hi - lo < crowd[2]:
            crowd[0], crowd[1], crowd[2] = band, lo, hi - lo
        return m
    for p in range(lo, hi):
        c = bucket_ids[band, p]
        if not seen[c] and m < touched.shape[0]:
            seen[c] = True
            d = popcount(q ^ codes[c])
            touched[m] = c
            dist[m] = d
            hist[d] += 1
            m += 1
    return m


@njit(cache=True, nogil=True, parallel=True)
def banded_nearest(queries, codes, bucket_ptr, bucket_ids, bits, cap, k, chunk, salt):
    """Sublinear candidate lists from banded LSH tables (see `band_tables`): for each query the
    union of its buckets over all bands, buckets holding more than `cap` classes left out, and of
    that union the k nearest codes in full Hamming distance (ties at the cut: by a hash of (salt,
    query, class), for the reason given in `hamming_nearest`).

    Returns (cand, counts, crowded): query i's candidates are cand[i*k : i*k + counts[i]]
    (k = min(k, C)). When every bucket of a query is empty, the buckets one bit away in each band
    are probed instead (multi-probe LSH). When every bucket it looked at is over the cap, `cap`
    members of the least crowded one stand in for the union (crowded[i] is true); counts[i] = 0
    only when all of them are empty (the caller decides what to do). Each chunk of queries de-duplicates with its own marker array of size C, reset
    through the list of touched classes, so a query costs O(its union) and not O(C)."""
    n = queries.shape[0]
    n_codes = codes.shape[0]
    bands = bucket_ptr.shape[0]
    k = min(k, n_codes)
    cand = np.empty(n * k, np.int64)
    counts = np.zeros(n, np.int64)
    crowded = np.zeros(n, np.bool_)
    n_chunks = (n + chunk - 1) // chunk
    for ch in prange(n_chunks):
        seen = np.zeros(n_codes, np.bool_)
        touched = np.empty(min(n_codes, bands * cap), np.int64)
        dist = np.empty(touched.shape[0], np.uint8)
        hist = np.empty(65, np.int64)
        crowd = np.empty(3, np.int64)
        for i in range(ch * chunk, min(n, (ch + 1) * chunk)):
            q = queries[i]
            hist[:] = 0
            crowd[0] = -1  # the least crowded bucket over the cap: band, start, size
            m = 0
            for b in range(bands):
                m = _visit_bucket(q, codes, bucket_ptr, bucket_ids, b, _band_key(q, b, bits), cap, seen, touched,
                                  dist, hist, m, crowd)
            if m == 0 and crowd[0] < 0:
                # every bucket of the query is empty: probe the buckets one bit away in each band
                # (multi-probe LSH), under the same cap
                for b in range(bands):
                    key = _band_key(q, b, bits)
                    for flip in range(bits):
                        m = _visit_bucket(q, codes, bucket_ptr, bucket_ids, b, key ^ (np.int64(1) << np.int64(flip)),
                                          cap, seen, touched, dist, hist, m, crowd)
            if m == 0 and crowd[0] >= 0:
                # every bucket of the query is crowded: `cap` members of the least crowded one, from
                # a hashed offset (they share that band's bits with the query)
                crowded[i] = True
                band, lo, size = crowd[0], crowd[1], crowd[2]
                start = np.int64(mix64(np.uint64(salt) + np.uint64(i)) % np.uint64(size))
                for j in range(min(cap, size)):
                    c = bucket_ids[band, lo + (start + j) % size]
                    d = popcount(q ^ codes[c])
                    touched[m] = c
                    dist[m] = d
                    hist[d] += 1
                    m += 1
            for t in range(m):
                seen[touched[t]] = False
            kept = min(k, m)
            counts[i] = kept
            if kept == 0:
                continue
            cut, at_cut = _cut(hist, kept)
            pos = i * k
            ties = 0
            for t in range(m):
                if dist[t] < cut:
                    cand[pos] = touched[t]
                    pos += 1
                elif dist[t] == cut:
                    touched[ties] = touched[t]  # ties <= t: compacting in place reads before it writes
                    ties += 1
            tied = touched[:ties]
            if ties > at_cut:
                base = mix64(np.uint64(salt) + np.uint64(i))
                order = np.empty(ties, np.uint64)
                for t in range(ties):
                    order[t] = mix64(base ^ np.uint64(tied[t]))
                tied = tied[np.argsort(order)]
            cand[pos:pos + at_cut] = tied[:at_cut]
    return cand, counts, crowded


@njit(cache=True, nogil=True)
def _sq(u):
    s = 0.0
    for j in range(u.shape[0]):
        s += u[j] * u[j]
    return s


@njit(cache=True, nogil=True, inline="always")
def _to_unit(u):
    """u scaled to unit length in place (a zero row stays zero)."""
    s = _sq(u)
    if s > 0.0:
        f = 1.0 / np.sqrt(s)
        for d in range(u.shape[0]):  # not u *= f: a row expression allocates a temporary
            u[d] *= f


@njit(cache=True, nogil=True, parallel=True)
def unit_rows(U):
    """U with every non-zero row scaled to unit length, in place."""
    for i in prange(U.shape[0]):
        _to_unit(U[i])


@njit(cache=True, nogil=True, parallel=True)
def nearest_centroid(U, ids, centroids):
    """For every row of U (the unit sketch of class ids[i]), the centroid with the largest inner
    product (ties: smaller index). A zero row has no direction: it goes to cluster ids[i] mod K, so
    the zero classes of a fresh model spread over the clusters instead of filling one.

    Blocked: the centroids are transposed once (dim x clusters, centroid-major), and a tile of
    non-zero rows is scored against a chunk of centroids by axpy passes that run along the
    centroids (vectorised, the chunk stays in cache for the tile). Each inner product is still
    summed in coordinate order from 0, so the scores, and the argmax, are the ones of one dot
    product per (row, centroid), bit for bit; tiles are independent, so any thread count agrees."""
    n, dim = U.shape
    n_clusters = centroids.shape[0]
    out = np.empty(n, np.int64)
    nonzero = np.empty(n, np.bool_)
    for i in prange(n):
        nonzero[i] = _sq(U[i]) != 0.0
        if not nonzero[i]:
            out[i] = ids[i] % n_clusters
    rows = np.flatnonzero(nonzero)
    cent_t = np.ascontiguousarray(centroids.T)
    tile, chunk = 8, 128
    for t in prange((rows.shape[0] + tile - 1) // tile):
        lo = t * tile
        hi = min(rows.shape[0], lo + tile)
        acc = np.empty(chunk)
        best = np.zeros(tile, np.int64)
        best_v = np.full(tile, -np.inf)
        for c0 in range(0, n_clusters, chunk):
            w = min(chunk, n_clusters - c0)
            for r in range(hi - lo):
                u = U[rows[lo + r]]
                acc[:w] = 0.0
                for d in range(dim):
                    x = u[d]
                    row = cent_t[d, c0:c0 + w]
                    for c in range(w):
                        acc[c] += x * row[c]
                for c in range(w):
                    if acc[c] > best_v[r]:
                        best[r] = c0 + c
                        best_v[r] = acc[c]
        for r in range(hi - lo):
            out[rows[lo + r]] = best[r]
    return out


@njit(cache=True, nogil=True)
def cluster_sums(U, assign, n_clusters):
    """Sum of the rows of U in each cluster, and each cluster's size (sequential: a fixed order)."""
    sums = np.zeros((n_clusters, U.shape[1]))
    sizes = np.zeros(n_clusters, np.int64)
    for i in range(U.shape[0]):
        c = assign[i]
        for d in range(U.shape[1]):  # explicit: see move_rows
            sums[c, d] += U[i, d]
        sizes[c] += 1
    return sums, sizes


@njit(cache=True, nogil=True)
def move_rows(unit, assign, fresh, classes, moved_to, sums, sizes):
    """Re-index `classes` (distinct) in place: class k = classes[t] (unit row unit[k], cluster
    assign[k]) takes the unit row fresh[t] and the cluster moved_to[t], and the cluster sums stay
    exact (the old row subtracted from its cluster, the new one added to its new one, class after
    class). One pass that reads each old row where it lies, where gathering the old rows and
    assignments and then scattering the new ones were four numpy operations over the classes (a
    fifth of a re-index). Explicit loops over the coordinates: a row expression (sums[c] -= unit[k])
    allocated a temporary per row, five times the cost of the sums themselves."""
    dim = sums.shape[1]
    for t in range(classes.shape[0]):
        k = classes[t]
        a, b = assign[k], moved_to[t]
        for d in range(dim):
            sums[a, d] -= unit[k, d]
        sizes[a] -= 1
        for d in range(dim):
            sums[b, d] += fresh[t, d]
            unit[k, d] = fresh[t, d]
        sizes[b] += 1
        assign[k] = b


@njit(cache=True, nogil=True, parallel=True)
def unit_block_rows(W, classes, lo, hi, bound):
    """The rows `classes` of W[:, lo:hi], each scaled to unit length (a zero row stays zero): the
    numbers of `unit_rows` on a copy, in one pass over the rows instead of a gather and a pass.

    bound M > 0: the MIPS-to-cosine reduction (Auvolat et al. 2015; SimpleLSH's P): each non-zero
    row gains the coordinate sqrt(M^2 - ||w||^2) (0 if ||w|| > M) before the scaling, so that the
    unit rows' inner product with a query [x, 0] is w.x / M, the inner product itself (the norm
    counts), not the cosine. The rows then have hi - lo + 1 columns."""
    width = hi - lo + (1 if bound > 0.0 else 0)
    out = np.zeros((classes.shape[0], width))
    for t in prange(classes.shape[0]):
        k = classes[t]
        for d in range(lo, hi):
            out[t, d - lo] = W[k, d]
        if bound > 0.0:
            s = _sq(out[t, :hi - lo])
            if s > 0.0:
                out[t, hi - lo] = np.sqrt(max(0.0, bound * bound - s))
        _to_unit(out[t])
    return out


@njit(cache=True, nogil=True)
def normalised_centroids(sums, sizes, U, assign, seed):
    """Unit centroids from cluster sums. An empty (or zero) cluster is re-seeded with a hashed pick,
    uniform over the non-zero rows of U that are not alone in their cluster, so no cluster stays
    dead. Uniform, not the first such row after a hashed position: with the non-zero rows packed
    together (LDGS's frequency-ordered W), that scan landed nearly every pick on one row."""
    n_clusters = sums.shape[0]
    cent = sums.copy()
    eligible = np.empty(0, np.int64)
    looked = False
    for k in range(n_clusters):
        s = _sq(cent[k])
        if sizes[k] > 0 and s > 0.0:
            cent[k] *= 1.0 / np.sqrt(s)
            continue
        cent[k] = 0.0
        if not looked:  # once: sizes and U do not change in this loop
            eligible = _eligible_rows(sizes, U, assign)
            looked = True
        if eligible.shape[0] > 0:
            pick = mix64(np.uint64(seed) * _GOLDEN ^ (np.uint64(k) + np.uint64(1)) * _BLOCK)
            cent[k] = U[eligible[np.int64(pick % np.uint64(eligible.shape[0]))]]
    return cent


@njit(cache=True, nogil=True)
def _eligible_rows(sizes, U, assign):
    """The rows a dead cluster may be re-seeded with: non-zero, and not alone in their cluster."""
    n = U.shape[0]
    keep = np.zeros(n, np.bool_)
    for i in range(n):
        keep[i] = sizes[assign[i]] > 1 and _sq(U[i]) > 0.0
    return np.flatnonzero(keep)


def initial_centroids(U: np.ndarray, n_clusters: int, seed: int) -> np.ndarray:
    """Spherical k-means' starting centroids: n_clusters rows of U drawn uniformly (seeded) among the
    non-zero ones when there are enough (a zero row has no direction to start a cluster from), else
    among all, in row order."""
    nonzero = np.flatnonzero((U != 0.0).any(axis=1))
    pool = nonzero if nonzero.size >= n_clusters else np.arange(U.shape[0])
    return U[np.sort(np.random.default_rng(seed).choice(pool, n_clusters, replace=False))].copy()


@njit(cache=True, nogil=True, parallel=True)
def top_clusters(Q, centroids, probes):
    """For every query row, the `probes` centroids with the largest inner product, best first."""
    n = Q.shape[0]
    n_clusters = centroids.shape[0]
    probes = min(probes, n_clusters)
    out = np.empty((n, probes), np.int64)
    for i in prange(n):
        top_v = np.full(probes, -np.inf)
        top_k = out[i]
        count = 0
        for k in range(n_clusters):
            v = 0.0
            for j in range(Q.shape[1]):
                v += Q[i, j] * centroids[k, j]
            count = insert_topk(k, v, probes, top_k, top_v, count)
    return out


@njit(cache=True, nogil=True)
def members(assign, n_clusters):
    """Cluster membership as CSR lists (member_ptr, member_ids), ids increasing within a cluster."""
    ptr = np.zeros(n_clusters + 1, np.int64)
    for i in range(assign.shape[0]):
        ptr[assign[i] + 1] += 1
    for k in range(n_clusters):
        ptr[k + 1] += ptr[k]
    fill = ptr[:-1].copy()
    ids = np.empty(assign.shape[0], np.int64)
    for i in range(assign.shape[0]):
        ids[fill[assign[i]]] = i
        fill[assign[i]] += 1
    return ptr, ids


@njit(cache=True, nogil=True, parallel=True)
def gather_members(probed, member_ptr, member_ids):
    """Candidate lists: every member of every probed cluster of each query."""
    n, probes = probed.shape
    cand_ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        total = 0
        for t in range(probes):
            k = probed[i, t]
            total += member_ptr[k + 1] - member_ptr[k]
        cand_ptr[i + 1] = cand_ptr[i] + total
    cand = np.empty(cand_ptr[n], np.int64)
    for i in prange(n):
        pos = cand_ptr[i]
        for t in range(probes):
            k = probed[i, t]
            for p in range(member_ptr[k], member_ptr[k + 1]):
                cand[pos] = member_ids[p]
                pos += 1
    return cand_ptr, cand


@njit(cache=True, nogil=True)
def _search(indices, lo, hi, f):
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < f:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, parallel=True)
def best_among_rows(cand_ptr, cands, w_indptr, w_indices, w_data, indptr, indices, data, exclude, n_features,
                    chunk):
    """Exact re-ranking over a C x D CSR matrix with sorted column indices (see ClassVectors).

    Each chunk of queries scatters its query into a dense buffer; a short class row is summed over
    the buffer, a long one is looked up by binary search for each query feature."""
    n = indptr.shape[0] - 1
    best = np.full(n, -1, np.int64)
    score = np.full(n, -np.inf)
    n_chunks = (n + chunk - 1) // chunk
    for ch in prange(n_chunks):
        buf = np.zeros(n_features)
        for i in range(ch * chunk, min(n, (ch + 1) * chunk)):
            nx = indptr[i + 1] - indptr[i]
            for p in range(indptr[i], indptr[i + 1]):
                buf[indices[p]] = data[p]
            b = -1
            bs = -np.inf
            for t in range(cand_ptr[i], cand_ptr[i + 1]):
                c = cands[t]
                if c == exclude[i]:
                    continue
                lo = w_indptr[c]
                hi = w_indptr[c + 1]
                v = 0.0
                if hi - lo <= 8 * nx:
                    for q in range(lo, hi):
                        v += w_data[q] * buf[w_indices[q]]
                else:
                    for p in range(indptr[i], indptr[i + 1]):
                        q = _search(w_indices, lo, hi, indices[p])
                        if q < hi and w_indices[q] == indices[p]:
                            v += w_data[q] * data[p]
                if v > bs or (v == bs and c < b):
                    b = c
                    bs = v
            best[i] = b
            score[i] = bs
            for p in range(indptr[i], indptr[i + 1]):
                buf[indices[p]] = 0.0
    return best, score


@njit(cache=True, nogil=True)
def fill_missing(best, exclude, n_classes, seed):
    """Replace -1 answers by a class != exclude[i] hashed from (seed, row i), in place."""
    for i in range(best.shape[0]):
        if best[i] >= 0:
            continue
        h = mix64(np.uint64(seed) * _GOLDEN ^ (np.uint64(i) + np.uint64(1)) * _FEATURE)
        if exclude[i] >= 0:
            c = np.int64(h % np.uint64(n_classes - 1))
            best[i] = c + 1 if c >= exclude[i] else c
        else:
            best[i] = np.int64(h % np.uint64(n_classes))


@njit(cache=True, nogil=True, parallel=True)
def shortlist(cand_ptr, cands, Q, U, scale, k):
    """Keep, of each query's candidates, the k with the largest sketched inner product
    Q[i] . (scale[c] * U[c]) (ties: earlier candidate), as new candidate lists."""
    n = cand_ptr.shape[0] - 1
    out_ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        out_ptr[i + 1] = out_ptr[i] + min(k, cand_ptr[i + 1] - cand_ptr[i])
    out = np.empty(out_ptr[n], np.int64)
    for i in prange(n):
        m = out_ptr[i + 1] - out_ptr[i]
        top_v = np.full(max(m, 1), -np.inf)
        top_c = out[out_ptr[i]:out_ptr[i + 1]]
        count = 0
        for t in range(cand_ptr[i], cand_ptr[i + 1]):
            c = cands[t]
            v = 0.0
            for j in range(Q.shape[1]):
                v += Q[i, j] * U[c, j]
            count = insert_topk(c, v * scale[c], m, top_c, top_v, count)
    return out_ptr, out
