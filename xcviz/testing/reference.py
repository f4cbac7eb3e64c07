"""The reference solver: liblinear-official trained label by label, for tests and benchmarks.

LIBLINEAR has no multi-label mode, so a one-vs-all model is a loop over labels of binary `-s 2`
problems on the same instances. The problem is built once (per thread) and only its targets change per label,
so what is timed is LIBLINEAR's solver, not Python conversion. liblinear-official is a test
dependency, imported only here.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp


def _import_liblinear():
    try:
        from liblinear import liblinear, liblinearutil
    except ImportError as exc:
        raise ImportError("the reference solver needs liblinear-official: pip install liblinear-official") from exc
    return liblinear, liblinearutil


def liblinear_ova(X: sp.csr_matrix, Y: sp.spmatrix, options: str = "-s 2 -c 1 -e 0.01 -B 1 -R",
                  threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Train one LIBLINEAR binary model per label of Y on X (rows used as given).

    With `threads` > 1 the labels are dealt round-robin to that many threads, each with its own copy
    of the problem (ctypes releases the GIL while LIBLINEAR trains, as in LibMultiLabel's one-vs-rest):
    the loop on as many cores as the solvers it is compared with. The weights do not depend on it.

    Returns (W, b): dense L x D feature weights and the L bias weights, oriented so that a positive
    score means "label relevant"."""
    liblinear, util = _import_liblinear()
    X = sp.csr_matrix(X, dtype=np.float64)
    Y = sp.csc_matrix(Y)
    n, d = X.shape
    param = liblinear.parameter(options + " -q")
    W = np.zeros((Y.shape[1], d))
    b = np.zeros(Y.shape[1])

    def train_labels(labels: range) -> None:
        prob = liblinear.problem(np.full(n, -1.0), X)
        targets = np.ctypeslib.as_array(prob.y, (n,))
        for lab in labels:
            targets[:] = -1.0
            targets[Y.indices[Y.indptr[lab]:Y.indptr[lab + 1]]] = 1.0
            model = util.train(prob, param)
            w, bias = model.get_decfun(0)
            sign = 1.0 if model.get_labels()[0] == 1 else -1.0
            W[lab] = sign * np.asarray(w[:d])
            b[lab] = sign * bias

    shares = [range(t, Y.shape[1], threads) for t in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(train_labels, shares))
    return W, b


def squared_hinge_objective(X: sp.csr_matrix, Y: sp.spmatrix, W: np.ndarray, b: np.ndarray, C: float = 1.0,
                            bias: float = 1.0) -> np.ndarray:
    """Per-label 0.5*||w||^2 + C * sum max(0, 1 - y (w.x + bias*b))^2, bias weight unregularised."""
    X = sp.csr_matrix(X)
    scores = np.asarray(X @ W.T) + bias * b[None, :]
    y = -np.ones(scores.shape)
    Yc = sp.coo_matrix(Y)
    y[Yc.row, Yc.col] = 1.0
    hinge = np.maximum(0.0, 1.0 - y * scores)
    return 0.5 * np.einsum("ld,ld->l", W, W) + C * (hinge ** 2).sum(axis=0)
