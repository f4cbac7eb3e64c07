"""A small memo of LDGS's SVD bases, keyed by the matrix's content, so that an identical SVD is
computed once per process.

Why: the `svd` embedding starts every LDGS training with a truncated SVD (scipy `svds`) of the
normalised training rows, and whoever trains several estimators on the same data paid it every
time: notebook 04 under `CI=true` computed three identical SVDs of a 3,518 x 347,255 matrix (10-25 s
each on 2 busy cores), five of its synthetic problem's and six of Bibtex's, and the Delicious climb
test two (0.5-3.5 s each). The result depends only on the matrix, h and the seed, so it is kept for the
next call.

The key is a BLAKE2b digest of the matrix's canonical CSR arrays (shape, and the dtype and bytes of
data, indices and indptr), with h and the seed: one value changed anywhere computes anew. The memo
keeps the most recently used `MAX_ENTRIES` bases, at most `MAX_BYTES` in all (a basis is D x h
doubles: 355 MB for that matrix at h = 128), and hands out copies, so a caller that writes into its
basis cannot change what the next caller gets (a read-only array instead is another type to numba:
every kernel it was passed to would compile again for it).
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Callable

import numpy as np
import scipy.sparse as sp

MAX_ENTRIES = 4
MAX_BYTES = 2**30

_bases: OrderedDict[tuple[bytes, int, int], np.ndarray] = OrderedDict()
_lock = threading.Lock()


def canonical(X: sp.spmatrix) -> sp.csr_matrix:
    """X as float64 CSR in canonical format (sorted indices, no duplicates): the arrays the digest
    reads and the SVD runs on. A matrix already so is returned as it is, without a copy."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def digest(X: sp.csr_matrix) -> bytes:
    """BLAKE2b of a CSR matrix's shape and of the dtype and bytes of its data, indices and indptr."""
    h = hashlib.blake2b(digest_size=32)
    h.update(np.asarray(X.shape, np.int64).tobytes())
    for array in (X.data, X.indices, X.indptr):
        array = np.ascontiguousarray(array)
        h.update(array.dtype.str.encode())
        h.update(np.int64(array.size).tobytes())
        h.update(memoryview(array).cast("B"))
    return h.digest()


def memoised(X: sp.csr_matrix, h: int, seed: int, compute: Callable[[sp.csr_matrix, int, int], np.ndarray]
             ) -> np.ndarray:
    """compute(X, h, seed), or a copy of the basis it returned for a matrix of the same content with
    the same h and seed. Two threads that miss together both compute; the memo keeps one."""
    key = (digest(X), h, seed)
    with _lock:
        basis = _bases.get(key)
        if basis is not None:
            _bases.move_to_end(key)
            return basis.copy()
    basis = compute(X, h, seed)
    kept = basis.copy()
    kept.flags.writeable = False
    with _lock:
        if kept.nbytes <= MAX_BYTES:
            _bases[key] = kept
            _bases.move_to_end(key)
            while len(_bases) > MAX_ENTRIES or sum(b.nbytes for b in _bases.values()) > MAX_BYTES:
                _bases.popitem(last=False)
    return basis
