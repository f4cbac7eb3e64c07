"""The spherical-clustering kernels of engine/mips.py against brute force: the blocked nearest
centroid (the re-index of every spherical index) gives the argmax of one dot product per (row,
centroid) summed in coordinate order, ties to the smaller centroid, zero rows spread by id."""
import numpy as np
import pytest

from xcviz.engine.mips import nearest_centroid, unit_rows
from xcviz.engine.threads import max_threads, using_threads


def _brute(U, ids, C):
    """One dot product per (row, centroid), summed in coordinate order in Python floats."""
    out = np.empty(U.shape[0], np.int64)
    for i, u in enumerate(U.tolist()):
        if not any(u):
            out[i] = ids[i] % C.shape[0]
            continue
        best, best_v = 0, -np.inf
        for k, c in enumerate(C.tolist()):
            v = 0.0
            for a, b in zip(u, c):
                v += a * b
            if v > best_v:
                best, best_v = k, v
        out[i] = best
    return out


@pytest.mark.parametrize("n,dim,clusters", [(1, 3, 1), (37, 16, 100), (203, 37, 300)])
def test_nearest_centroid_is_the_brute_force_argmax(n, dim, clusters):
    """Sizes around the kernel's tiles (8 rows) and chunks (128 centroids), zero rows and exact ties
    (repeated centroids, rows equal to a repeated centroid) included."""
    rng = np.random.default_rng(n)
    C = rng.normal(size=(clusters, dim))
    if clusters > 10:
        C[clusters - 3] = C[clusters - 7] = C[2]  # a three-way tie, the smallest index must win
    unit_rows(C)
    U = rng.normal(size=(n, dim))
    U[::5] = 0.0  # no direction: cluster id mod clusters
    if clusters > 10 and n > 3:
        U[3] = C[2]
    unit_rows(U)
    ids = rng.permutation(10 * n)[:n].astype(np.int64)
    got = nearest_centroid(U, ids, C)
    np.testing.assert_array_equal(got, _brute(U, ids, C))
    if clusters > 10 and n > 3:
        assert got[3] == 2


def test_nearest_centroid_does_not_depend_on_the_thread_count():
    rng = np.random.default_rng(5)
    U, C = rng.normal(size=(1001, 16)), rng.normal(size=(257, 16))
    U[::3] = 0.0
    ids = np.arange(1001, dtype=np.int64)
    with using_threads(1):
        one = nearest_centroid(U, ids, C)
    with using_threads(max_threads()):
        many = nearest_centroid(U, ids, C)
    np.testing.assert_array_equal(one, many)
