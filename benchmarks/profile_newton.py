"""Where the one-vs-all Newton engine spends its time, per kernel: `python benchmarks/profile_newton.py [NAME ...]`.

Re-runs the Newton loop of xcviz.engine.newton label by label on one thread with a clock around
every phase (set-up, X w and gradient with the preconditioner, the CG solve, line search; each
solve's Hessian-vector products are run again alone to time them apart from the vector updates), then times pruning and recording of the real driver, kernel loading in a fresh process,
and this machine's copy bandwidth. The Hessian products' effective bandwidth counts the bytes they
must read: each active row's values and indices (read twice, the second time from cache, so
counted once) and the vector entries they gather and scatter.
"""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
from numba import njit

from xcviz.engine import newton as K
from xcviz.engine.clock import monotonic_ns

PHASES = ("set-up", "X w, loss, gradient and preconditioner", "CG: Hessian-vector products", "CG: vector updates",
          "line search (X s and losses)")  # the CG solve is timed whole; its products are re-timed apart


@njit(cache=True, nogil=True)
def _profile(indptr, indices, data, pos_ptr, pos_rows, labels, init_vec, colsum, bias_index, W, acc, bytes_hv):
    """The per-label loop of newton.train_block/newton.newton (MSI start, squared hinge, C 1, eps 0.01)
    with acc[phase] += nanoseconds (acc[3]: the whole CG solve; acc[2]: its Hessian products run again
    alone); bytes_hv[0] counts the Hessian products' bytes, [1] their count."""
    n = indptr.shape[0] - 1
    dim = W.shape[1]
    wsd = np.empty((9, dim))
    wsn = np.empty((4, n))
    act = np.empty(n, np.int64)
    cptr = np.empty(n + 1, np.uint64)
    cidx = np.empty(K.compact_capacity(indptr[n]), indices.dtype)
    cval = np.empty(cidx.shape[0], data.dtype)
    summ = np.empty((labels.shape[0], len(K.LABEL_FIELDS)))
    C = 1.0
    for b in range(labels.shape[0]):
        t = monotonic_ns()
        # set-up: targets, positives' sum, gradient norm at 0, MSI start (as _label_setup)
        lab = labels[b]
        w = W[b]
        y = wsn[0]
        psum = wsd[8]
        y[:] = -1.0
        psum[:] = 0.0
        for q in range(pos_ptr[lab], pos_ptr[lab + 1]):
            i = pos_rows[q]
            y[i] = 1.0
            for k in range(indptr[i], indptr[i + 1]):
                psum[indices[k]] += data[k]
        npos = pos_ptr[lab + 1] - pos_ptr[lab]
        g0 = 0.0
        for j in range(dim):
            gj = 2.0 * C * (2.0 * psum[j] - colsum[j])
            g0 += gj * gj
        gnorm0 = np.sqrt(g0)
        K._msi_start(w, psum, npos, n, init_vec, 1.0, -2.0)
        tol = 0.01 * max(1, min(npos, n - npos)) / n * gnorm0
        g, s, r, d, hd, z, M = wsd[0], wsd[1], wsd[2], wsd[3], wsd[4], wsd[5], wsd[6]
        wx, xs, hcoef = wsn[1], wsn[2], wsn[3]
        t2 = monotonic_ns()
        acc[0] += t2 - t
        t = t2
        K._xv(indptr, indices, data, w, wx)
        wtw = K._regularised_dot(w, w, False, bias_index)
        f = K._loss_sum(0, C, y, wx) + 0.5 * wtw
        nact, ncomp, _ = K._gradient(0, C, indptr, indices, data, y, wx, w, False, bias_index, g, act, hcoef, M,
                                     cptr, cidx, cval)
        gnorm = K._norm(g)
        t2 = monotonic_ns()
        acc[1] += t2 - t
        t = t2
        it = 0
        while gnorm > tol and it < 1000:
            cg_steps = K._pcg_rows(indptr, indices, data, act, nact, hcoef, cptr, cidx, cval, ncomp, False, bias_index,
                                   0.5, g, M, s, r, d, hd, z)
            t2 = monotonic_ns()
            acc[3] += t2 - t
            # the solve's Hessian products again, alone on the clock (outside the loop's phases)
            for _ in range(cg_steps):
                K._hess_vec_rows(indptr, indices, data, act, nact, hcoef, cptr, cidx, cval, ncomp, d, False, bias_index, hd)
            t3 = monotonic_ns()
            acc[2] += t3 - t2
            rows_nnz = 0
            for a in range(nact):
                rows_nnz += indptr[act[a] + 1] - indptr[act[a]]
            # values + indices once, d gathered and hd scattered per entry, act and hcoef per row, hd = d
            bytes_hv[0] += cg_steps * (rows_nnz * (8 + 4 + 8 + 16) + nact * 16 + dim * 16)
            bytes_hv[1] += cg_steps
            t = monotonic_ns()
            step, f, wtw = K._line_search(0, C, indptr, indices, data, y, w, s, g, wx, xs, f, wtw, False, bias_index)
            t2 = monotonic_ns()
            acc[4] += t2 - t
            t = t2
            if step == 0.0:
                break
            it += 1
            nact, ncomp, _ = K._gradient(0, C, indptr, indices, data, y, wx, w, False, bias_index, g, act, hcoef,
                                         M, cptr, cidx, cval)
            gnorm = K._norm(g)
            t2 = monotonic_ns()
            acc[1] += t2 - t
            t = t2
    return summ


def copy_bandwidth() -> float:
    """Bytes per second of a large array copy (read + write counted), best of 5."""
    a = np.ones(2**25)
    b = np.empty_like(a)
    best = np.inf
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return 2 * a.nbytes / best


_FRESH = """
import time, numpy as np, scipy.sparse as sp
from xcviz.solvers.dismec import DismecParams, fit_dismec
X = sp.random(60, 30, density=0.3, format="csr", random_state=0)
Y = sp.random(60, 4, density=0.3, format="csr", random_state=1)
t = time.perf_counter(); fit_dismec(X, Y, DismecParams(), threads=2); first = time.perf_counter() - t
t = time.perf_counter(); fit_dismec(X, Y, DismecParams(), threads=2); second = time.perf_counter() - t
print(first - second)
"""


def kernel_loading(repeats: int = 5) -> float:
    """Median extra seconds of a fresh process's first (tiny) training call over its second."""
    runs = [float(subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, check=True)
                  .stdout.split()[-1]) for _ in range(repeats)]
    return float(np.median(runs))


def profile(name: str) -> dict:
    from xcviz.data import load
    from xcviz.records.sinks import MemorySink
    from xcviz.solvers._onevsall.blocks import prepare_problem
    from xcviz.solvers.dismec import DismecParams, fit_dismec

    train, _ = load(name)
    prob = prepare_problem(train.X, train.Y, True, 1.0, order_rows=True)  # as fit_dismec
    rows = prob.rows
    labels = np.arange(prob.n_labels, dtype=np.int64)
    W = np.zeros((labels.size, prob.dim))
    acc = np.zeros(len(PHASES), np.int64)
    bytes_hv = np.zeros(2, np.int64)
    args = (rows.indptr, rows.indices, rows.data, prob.pos_ptr, prob.pos_rows)
    _profile(*args, labels[:2], rows.colsum / prob.n, rows.colsum, prob.bias_index, W[:2], acc.copy(), bytes_hv.copy())
    _profile(*args, labels, rows.colsum / prob.n, rows.colsum, prob.bias_index, W, acc, bytes_hv)
    fit_dismec(train.X, train.Y, threads=1)
    t = time.perf_counter()
    fit_dismec(train.X, train.Y, threads=1)
    driver = time.perf_counter() - t
    t = time.perf_counter()
    fit_dismec(train.X, train.Y, threads=1, recorder=MemorySink())
    recorded = time.perf_counter() - t
    from xcviz.engine.sparse import prune_block
    t = time.perf_counter()
    prune_block(W, labels, prob.n_features, DismecParams().prune_threshold)
    prune = time.perf_counter() - t
    t = time.perf_counter()
    prepare_problem(train.X, train.Y, True, 1.0, order_rows=True)
    prep = time.perf_counter() - t
    acc[3] -= acc[2]  # the CG solve less its Hessian products: the vector updates
    phases = dict(zip(PHASES, acc * 1e-9))
    total = float(acc.sum()) * 1e-9
    return {"phases": phases, "loop": total, "driver": driver, "recording": recorded - driver, "pruning": prune,
            "preparing": prep, "hv_bytes_per_s": bytes_hv[0] / (acc[2] * 1e-9), "hv_count": int(bytes_hv[1])}


def render(results: dict, bandwidth: float, loading: float, load: str) -> list[str]:
    lines = ["## Where the time goes (Newton engine, MSI, 1 thread)", "",
             "`benchmarks/profile_newton.py`: the Newton loop re-run label by label with a clock around each "
             "phase; the driver's pruning, recording (memory sink) and row preparation timed apart; kernel "
             "loading is the extra time of a fresh process's first training call over its second (median of 5 "
             f"processes). Machine load (1/5/15 min): {load}.", "",
             "| phase | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for phase in PHASES:
        lines.append(f"| {phase} | " + " | ".join(
            f"{r['phases'][phase]:.3f} s ({100 * r['phases'][phase] / r['loop']:.0f}%)" for r in results.values()) + " |")
    for key, label in (("loop", "whole profiled loop"), ("driver", "fit_dismec, 1 thread, recording off"),
                       ("preparing", "row preparation (normalise, bias, unsigned indices)"),
                       ("pruning", "pruning to CSR"), ("recording", "recording (memory sink) on top")):
        lines.append(f"| {label} | " + " | ".join(f"{r[key]:.3f} s" for r in results.values()) + " |")
    lines.append("| Hessian products: effective bandwidth | " + " | ".join(
        f"{r['hv_bytes_per_s'] / 1e9:.2f} GB/s ({100 * r['hv_bytes_per_s'] / bandwidth:.0f}% of copy)"
        for r in results.values()) + " |")
    lines.append("| Hessian products per run | " + " | ".join(str(r["hv_count"]) for r in results.values()) + " |")
    lines += ["", f"Copy bandwidth (numpy copy of 256 MB, read + write, best of 5): {bandwidth / 1e9:.2f} GB/s. "
              f"Kernel loading in a fresh process: {loading:.3f} s.", ""]
    return lines


if __name__ == "__main__":
    import os

    names = sys.argv[1:] or ["bibtex", "delicious"]
    out = {name: profile(name) for name in names}
    print("\n".join(render(out, copy_bandwidth(), kernel_loading(), " / ".join(f"{v:.1f}" for v in os.getloadavg()))))
