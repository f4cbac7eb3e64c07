"""DS-MLR's synchronous (Algorithm 1) and asynchronous (Algorithm 2) outer iterations on numba threads."""
from __future__ import annotations


import numpy as np

from ...engine import dsmlr as K_
from .problem import Problem, State, splits


class ThreadSync:
    """Algorithm 1 on numba threads: the grid, one outer iteration per `epoch` call."""

    def __init__(self, prob: Problem, G: int, n_workers: int, seed: int) -> None:
        self.prob, self.G, self.n_workers = prob, G, n_workers
        self.rng = np.random.default_rng([seed, 0])
        self.blocks = self.rng.permutation(prob.n_rows)  # rows -> row blocks, fixed for the run
        self.row_ptr = splits(prob.n_rows, G)
        self.class_ptr = splits(prob.n_classes, G)

    def permutations(self) -> list[np.ndarray]:
        """This epoch's order of each row block's rows (positions within the block); drawn the
        same way for every backend, so that threads and Dask visit the rows alike."""
        return [self.rng.permutation(b - a) for a, b in zip(self.row_ptr[:-1], self.row_ptr[1:])]

    def epoch(self, st: State, step: float, lam: float, clip: float) -> dict:
        p = self.prob
        order = np.concatenate([self.blocks[a:b][perm] for a, b, perm in
                                zip(self.row_ptr[:-1], self.row_ptr[1:], self.permutations())])
        busy = np.zeros(self.n_workers, np.int64)
        done = np.zeros(self.n_workers, np.int64)
        clips, wall = K_.sync_epoch(p.indptr, p.indices, p.data, p.lab_ptr, p.lab_idx, st.b, order,
                                    self.row_ptr, self.class_ptr, st.V, st.scale, step, lam, clip, self.n_workers,
                                    busy, done)
        block_bytes = st.V.nbytes / self.G
        return {"clipped": int(clips), "compute_seconds": busy * 1e-9, "idle_seconds": (wall - busy) * 1e-9,
                "bytes_moved": done * block_bytes, "blocks": done.astype(float)}

    def phase_b(self, st: State) -> np.ndarray:
        """b exactly (in place), the W blocks meeting each row block in ring order; returns the
        rows' true-class scores."""
        p = self.prob
        true = np.zeros(p.n_rows)
        K_.phase_b_grid(p.indptr, p.indices, p.data, p.lab_ptr, p.lab_idx, self.blocks, self.row_ptr,
                        self.class_ptr, st.V, st.scale, st.b, true)
        return true


class ThreadAsync:
    """Algorithm 2 on numba threads: one row block per thread, G class blocks in the queues."""

    def __init__(self, prob: Problem, G: int, n_workers: int, seed: int) -> None:
        self.prob, self.G, self.n_workers = prob, G, n_workers
        rng = np.random.default_rng([seed, 0])
        self.order = rng.permutation(prob.n_rows)
        self.row_ptr = splits(prob.n_rows, n_workers)
        self.class_ptr = splits(prob.n_classes, G)
        self.queue = np.zeros((n_workers, G + 1), np.int64)
        self.heads = np.zeros(n_workers, np.int64)
        self.tails = np.zeros(n_workers, np.int64)
        for c in range(G):  # Algorithm 2, lines 4-7: every block into a random worker's queue
            q = int(rng.integers(n_workers))
            self.queue[q, self.tails[q]] = c
            self.tails[q] += 1

    def epoch(self, st: State, step: float, lam: float, clip: float) -> dict:
        p = self.prob
        busy, idle, done, clips, seen = (np.zeros(self.n_workers, np.int64) for _ in range(5))
        K_.async_epoch(p.indptr, p.indices, p.data, p.lab_ptr, p.lab_idx, st.b, self.order, self.row_ptr,
                       self.class_ptr, st.V, st.scale, step, lam, clip, self.queue, self.heads, self.tails, busy,
                       idle, done, clips, seen)
        return {"clipped": int(clips.sum()), "compute_seconds": busy * 1e-9, "idle_seconds": idle * 1e-9,
                "bytes_moved": done * (st.V.nbytes / self.G), "blocks": done.astype(float),
                "queue_length": seen.astype(float)}
