"""DS-MLR's synchronous (Algorithm 1) and asynchronous (Algorithm 2) outer iterations on numba threads."""
from __future__ import annotations

import threading
import time

import numpy as np

from ...engine import dsmlr as K_
from .problem import Problem, State, splits

POLL = 0.002  # seconds between the driver's looks at the async workers' progress


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
    """Algorithm 2 on threads, without a barrier: one Python thread per worker, each running the
    nogil kernel `async_worker` over its own row block while the G class blocks circulate through
    the queues. The driver never waits for an outer iteration to end: it watches the workers'
    counts of outer iterations and, to record, pauses them (each parks at its next block boundary),
    reads W and b, and resumes them. Pausing delays the workers but changes none of their numbers."""

    def __init__(self, prob: Problem, st: State, G: int, n_workers: int, seed: int, step0: float, lam: float,
                 clip: float, epochs: int) -> None:
        self.prob, self.st, self.G, self.n_workers = prob, st, G, n_workers
        self.settings = (step0, lam, clip, epochs)
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
        self.control = np.zeros(1, np.int64)
        self.epochs_done = np.zeros(n_workers, np.int64)
        self.arrivals = np.zeros(n_workers, np.int64)
        self.run_max = np.full(prob.n_rows, -np.inf)
        self.run_sum = np.zeros(prob.n_rows)
        self.counters = {k: np.zeros(n_workers, np.int64) for k in ("busy", "idle", "blocks", "clips")}
        self.last = {k: v.copy() for k, v in self.counters.items()}
        self.seen = np.zeros(n_workers, np.int64)  # the longest queue since the last pause
        self.cond = threading.Condition()
        self.parked = 0
        self.ended = 0
        self.errors: list[Exception] = []
        self.threads = [threading.Thread(target=self._work, args=(w,), name=f"dsmlr-async-{w}", daemon=True)
                        for w in range(n_workers)]
        self.started = False

    def start(self) -> None:
        """Start the workers (once)."""
        self.started = True
        for thread in self.threads:
            thread.start()

    def _work(self, w: int) -> None:
        """Worker w's thread: run the kernel; when it pauses, park until resumed or stopped."""
        p, st, (step0, lam, clip, epochs), c = self.prob, self.st, self.settings, self.counters
        try:
            while True:
                status = K_.async_worker(w, p.indptr, p.indices, p.data, p.lab_ptr, p.lab_idx, st.b, self.order,
                                         self.row_ptr, self.class_ptr, st.V, st.scale, step0, lam, clip, epochs,
                                         self.queue, self.heads, self.tails, self.control, self.epochs_done,
                                         self.arrivals, self.run_max, self.run_sum, c["busy"], c["idle"], c["blocks"],
                                         c["clips"], self.seen)
                if status != K_.PAUSED:
                    return
                with self.cond:
                    self.parked += 1
                    self.cond.notify_all()
                    self.cond.wait_for(lambda: self.control[0] != K_.PAUSE)
                    self.parked -= 1
        except Exception as exc:  # noqa: BLE001 (any failure is handed to the driver by `wait_for`)
            self.errors.append(exc)
        finally:
            with self.cond:
                self.ended += 1
                self.cond.notify_all()

    def _raise(self) -> None:
        if self.errors:
            raise RuntimeError("a DS-MLR async worker failed") from self.errors[0]

    def wait_for(self, t: int) -> None:
        """Return once every worker has finished t outer iterations (the driver sleeps meanwhile:
        the workers run on)."""
        while self.epochs_done.min() < t:
            self._raise()
            if self.ended == self.n_workers:
                break
            time.sleep(POLL)
        self._raise()

    def progress(self) -> float:
        """The workers' mean outer iterations done, counting the blocks of the unfinished ones."""
        return float(np.mean(self.epochs_done + self.arrivals / self.G))

    def pause(self) -> dict:
        """Park every running worker at its next block boundary; returns each worker's counters
        since the last pause (the record's worker fields) and the clips in all."""
        with self.cond:
            self.control[0] = K_.PAUSE
            self.cond.wait_for(lambda: self.parked + self.ended == self.n_workers)
        delta = {k: v - self.last[k] for k, v in self.counters.items()}
        self.last = {k: v.copy() for k, v in self.counters.items()}
        seen, self.seen[:] = self.seen.astype(float), 0
        block_bytes = self.st.V.nbytes / self.G
        return {"clipped": int(delta["clips"].sum()), "compute_seconds": delta["busy"] * 1e-9,
                "idle_seconds": delta["idle"] * 1e-9, "bytes_moved": delta["blocks"] * block_bytes,
                "blocks": delta["blocks"].astype(float), "queue_length": seen}

    def resume(self) -> None:
        """Let the parked workers go on."""
        with self.cond:
            self.control[0] = K_.RUN
            self.cond.notify_all()

    def close(self) -> None:
        """Stop the workers at their next block boundary and wait for them (idempotent)."""
        with self.cond:
            self.control[0] = K_.STOP
            self.cond.notify_all()
        if self.started:
            for thread in self.threads:
                thread.join()
