"""DS-MLR `sync` on a Dask cluster: Algorithm 1 with the data and the model partitioned.

Each row block of the G x G grid is scattered once to one worker (row block r to worker
r mod P) with its b, and stays there. The class blocks of W are futures: inner epoch s submits,
for every row block r, the SGD task of pair (r, (r + s) mod G) pinned to r's worker
(`submit(..., workers=[...])`) and taking the class block's latest future, so that W blocks
travel ring-wise from worker to worker as in Figure 1. Phase B passes the W blocks around once
more, each row block accumulating its partial log-sum-exps in ring order, and sets its b on its
worker. The tasks run the same numba kernels on the same numbers as `ThreadSync`, with the same
grid and the same row orders, so the model is the same bit for bit.

Sharded data (`xcviz.data.shards`): the driver reads only the manifest. Each worker streams the
part files once (`_load_blocks`), keeps the rows of its own row blocks, preprocesses them as
`prepare` would (rows are preprocessed one by one, so the numbers are the same) and returns only
each row's label count: the driver holds W, b and per-row counts, never X. The row blocks are the
same random partition as without shards, so the model is too; the price is that every worker
reads every part (P reads of the data, from a folder all workers see).

Sharded test parts (`Shards.test_split`): `WorkerEvaluator` has worker k mod P read test part k
once; each evaluation passes the W blocks around the parts as phase B does, keeping every row's
best class (ties to the smaller class, as argmax does), and returns per-class counts only: the
driver's accuracy and macro-F1 are those of `dsmlr.Evaluator` on the whole split, to the bit.

The driver (the store's single writer) gathers W and b once per outer iteration for the records.
A lost worker loses the row blocks scattered to it, which Dask cannot recompute: the epoch then
fails with a RuntimeError naming the cause, the run ends as failed, and a resume starts it again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...data.shards import Shards, read_part
from ...engine import dsmlr as K_
from ...metrics import macro_f1_counts
from ...compute.cluster import worker_addresses
from .problem import LabelCounts, Problem, State, prepare
from .threads_backend import ThreadSync

LOST_CHECK = 1.0  # seconds between two checks that the run's workers are still there


@dataclass
class Sizes(LabelCounts):
    """What the driver knows of a sharded Problem: its sizes, and each row's label count once the
    workers have read their blocks (lab_ptr: running sums, as in Problem)."""

    n_rows: int
    n_classes: int
    dim: int
    lab_ptr: np.ndarray

    @classmethod
    def of(cls, shards: Shards, bias: float) -> "Sizes":
        return cls(sum(p["labelled"] for p in shards.parts), shards.n_labels,
                   shards.n_features + (1 if bias > 0 else 0), np.zeros(1, np.int64))


def _row_block(prob: Problem, rows: np.ndarray) -> tuple:
    """The CSR rows and class lists of `rows`, re-indexed from 0, as a tuple of arrays."""
    starts, ends = prob.indptr[rows].astype(np.int64), prob.indptr[rows + 1].astype(np.int64)
    take = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)]) if rows.size else np.zeros(0, np.int64)
    indptr = np.concatenate(([0], np.cumsum(ends - starts))).astype(np.int64)
    ls, le = prob.lab_ptr[rows], prob.lab_ptr[rows + 1]
    ltake = np.concatenate([np.arange(a, b) for a, b in zip(ls, le)]) if rows.size else np.zeros(0, np.int64)
    lab_ptr = np.concatenate(([0], np.cumsum(le - ls))).astype(np.int64)
    return indptr, prob.indices[take], prob.data[take], lab_ptr, prob.lab_idx[ltake]


def _load_blocks(shards: Shards, wanted: dict[int, np.ndarray], normalize: bool, bias: float) -> dict:
    """On a worker: the row blocks `wanted` (block -> global numbers of its labelled rows, in the
    block's order) read from the part files, one part in memory at a time, each block as
    `_row_block` would cut it from the whole Problem."""
    offsets = np.concatenate(([0], np.cumsum([p["labelled"] for p in shards.parts])))
    pieces: dict[int, list] = {r: [] for r in wanted}
    for k, path in enumerate(shards.part_paths()):
        lo, hi = offsets[k], offsets[k + 1]
        if not any(((rows >= lo) & (rows < hi)).any() for rows in wanted.values()):
            continue
        part = read_part(path, shards.parts[k], shards.n_features, shards.n_labels)
        labelled = np.flatnonzero(np.diff(part.Y.indptr) > 0)
        for r, rows in wanted.items():
            at = np.flatnonzero((rows >= lo) & (rows < hi))
            if at.size:
                take = labelled[rows[at] - lo]
                pieces[r].append((at, part.X[take], part.Y[take]))
    out = {}
    for r, got in pieces.items():
        where = np.concatenate([g[0] for g in got])
        order = np.argsort(where)
        X = sp.vstack([g[1] for g in got], format="csr")[order]
        Y = sp.vstack([g[2] for g in got], format="csr")[order]
        prob = prepare(X, Y, normalize, bias, dim=shards.n_features + (1 if bias > 0 else 0), n_classes=shards.n_labels)
        out[r] = (prob.indptr.astype(np.int64), prob.indices, prob.data, prob.lab_ptr, prob.lab_idx)
    return out


def _load_test(test: Shards, k: int, normalize: bool, bias: float, dim: int, n_classes: int) -> tuple:
    """On a worker: test part k, preprocessed as the driver's Evaluator would, as arrays."""
    part = test.part(k)
    prob = prepare(part.X, part.Y, normalize, bias, dim=dim, n_classes=n_classes)
    return prob.indptr.astype(np.int64), prob.indices, prob.data, prob.lab_ptr, prob.lab_idx, dim


def _top_task(part: tuple, state: tuple | None, wblock: tuple, c0: int) -> tuple:
    """A test part's best score and class so far, after meeting one class block of W. The scores
    are the Evaluator's (W = V * scale, the same sparse product row by row); a tie keeps the
    smaller class, so that blocks met in any order give argmax over all classes."""
    indptr, indices, data, _, _, dim = part
    X = sp.csr_matrix((data, indices, indptr), shape=(indptr.shape[0] - 1, dim))
    scores = np.asarray(X @ (wblock[0] * wblock[1][:, None]).T)
    arg = scores.argmax(axis=1)
    best, arg = scores[np.arange(scores.shape[0]), arg], arg + c0
    if state is None:
        return best, arg
    better = (best > state[0]) | ((best == state[0]) & (arg < state[1]))
    return np.where(better, best, state[0]), np.where(better, arg, state[1])


def _count_task(part: tuple, state: tuple, n_classes: int) -> tuple:
    """(right, copies, per-class true positives, true and predicted counts) of a test part, each
    row counted once per class it has (the replicated test set)."""
    lab_ptr, truth = part[3], part[4]
    predicted = np.repeat(state[1], np.diff(lab_ptr))
    hit = predicted == truth
    return (int(hit.sum()), int(truth.size), np.bincount(truth[hit], minlength=n_classes),
            np.bincount(truth, minlength=n_classes), np.bincount(predicted, minlength=n_classes))


def _pick(blocks: dict, r: int) -> tuple:
    return blocks[r]


def _counts(block: tuple) -> np.ndarray:
    return np.diff(block[3])


def _sgd_task(block: tuple, b: np.ndarray, perm: np.ndarray, wblock: tuple, c0: int, c1: int, step: float,
              lam: float, clip: float) -> tuple:
    """One (row block, class block) pair of phase A on a worker; returns the new class block,
    the clips and the compute seconds. The inputs are copied: a worker may share them."""
    t0 = time.perf_counter()
    V, scale = wblock[0].copy(), wblock[1].copy()
    clips = K_.sgd_block(*block, b, perm, c0, c1, c0, V, scale, step, lam, clip)
    return (V, scale), clips, time.perf_counter() - t0


def _first(result: tuple):
    return result[0]


def _lse_task(block: tuple, state: tuple | None, wblock: tuple, c0: int, c1: int) -> tuple:
    """One pair of phase B: the class block's partial sums added to the row block's."""
    n = block[0].shape[0] - 1
    if state is None:
        state = (np.full(n, -np.inf), np.zeros(n), np.zeros(n))
    mm, ss, tr = (a.copy() for a in state)
    K_.lse_step(*block, np.arange(n), c0, c1, c0, wblock[0], wblock[1], mm, ss, tr)
    return mm, ss, tr


def _b_task(state: tuple) -> np.ndarray:
    return K_.b_from_lse(state[0], state[1])


def _true_task(state: tuple) -> np.ndarray:
    return state[2]


class DaskSync(ThreadSync):
    """Algorithm 1 on a dask.distributed Client; the same grid and orders as ThreadSync."""

    def __init__(self, client, prob: Problem, G: int, seed: int, shards: Shards | None = None,
                 preprocess: tuple[bool, float] = (True, 1.0)) -> None:
        """prob: the whole Problem, scattered by row blocks; or with `shards`, a Problem of the
        sizes only (n_rows, n_classes, dim; no rows), the workers reading their row blocks from the
        parts (preprocessed by `preprocess` = (normalize, bias)) and the driver getting each row's
        label count into prob.lab_ptr."""
        workers = worker_addresses(client)
        if not workers:
            raise RuntimeError("the Dask cluster has no workers")
        super().__init__(prob, G, len(workers), seed)
        self.client, self.addresses = client, workers
        self.owner = [workers[r % len(workers)] for r in range(G)]
        self.rows = [self.blocks[a:b] for a, b in zip(self.row_ptr[:-1], self.row_ptr[1:])]
        if shards is None:
            self.data = [client.scatter(_row_block(prob, rows), workers=[self.owner[r]], hash=False)
                         for r, rows in enumerate(self.rows)]
        else:
            self.data = self._load(shards, *preprocess)
        self.b = [client.scatter(np.full(rows.size, -np.log(prob.n_classes)), workers=[self.owner[r]], hash=False)
                  for r, rows in enumerate(self.rows)]
        zero = (np.zeros((0, prob.dim)), np.ones(0))
        self.W = [client.scatter((np.zeros((b - a, prob.dim)), np.ones(b - a)) if b > a else zero, hash=False)
                  for a, b in zip(self.class_ptr[:-1], self.class_ptr[1:])]
        self.where = [None] * G  # the worker holding each class block's latest version

    def _load(self, shards: Shards, normalize: bool, bias: float) -> list:
        """Each worker reads its row blocks from the parts; the label counts come back to
        prob.lab_ptr (the driver's only per-row state besides b)."""
        data = [None] * self.G
        for w in self.addresses:
            mine = {r: self.rows[r] for r in range(self.G) if self.owner[r] == w}
            if not mine:
                continue
            loaded = self.client.submit(_load_blocks, shards, mine, normalize, bias, workers=[w],
                                        allow_other_workers=False, pure=False)
            for r in mine:
                data[r] = self.client.submit(_pick, loaded, r, workers=[w], pure=False)
        counts = self._gather([self.client.submit(_counts, f, workers=[self.owner[r]], pure=False)
                               for r, f in enumerate(data)])
        per_row = np.zeros(self.prob.n_rows, np.int64)
        for rows, c in zip(self.rows, counts):
            per_row[rows] = c
        self.prob.lab_ptr = np.concatenate(([0], np.cumsum(per_row))).astype(np.int64)
        return data

    def _gather(self, futures):
        """The futures' results. Tasks are pinned to their row block's worker: when one of the run's
        workers leaves (killed; a nanny restarts it under another address) they would wait for it
        for ever, so the wait checks the workers every LOST_CHECK seconds and fails the run."""
        from distributed import wait

        while True:
            try:
                wait(futures, timeout=LOST_CHECK)
                break
            except TimeoutError:
                gone = sorted(set(self.addresses) - set(worker_addresses(self.client)))
                if gone:
                    raise self._lost(RuntimeError(f"worker {gone[0]} left the cluster")) from None
            except Exception as exc:  # a lost worker takes its scattered row blocks with it
                raise self._lost(exc) from exc
        try:
            return self.client.gather(futures)
        except Exception as exc:
            raise self._lost(exc) from exc

    @staticmethod
    def _lost(exc: Exception) -> RuntimeError:
        return RuntimeError(f"Dask sync failed ({type(exc).__name__}: {exc}); a worker was probably lost, "
                            "its row blocks cannot be recomputed: resume the run to start it again")

    def epoch(self, st: State, step: float, lam: float, clip: float) -> dict:
        t0 = time.perf_counter()
        perms = self.permutations()
        slot = {w: i for i, w in enumerate(self.addresses)}
        moved = np.zeros(self.n_workers)
        blocks = np.zeros(self.n_workers)
        pieces = []
        for s in range(self.G):
            for r in range(self.G):
                c = (r + s) % self.G
                w = self.owner[r]
                if self.where[c] is not None and self.where[c] != w:
                    moved[slot[w]] += st.V.nbytes * (self.class_ptr[c + 1] - self.class_ptr[c]) / max(st.V.shape[0], 1)
                out = self.client.submit(_sgd_task, self.data[r], self.b[r], perms[r], self.W[c],
                                         int(self.class_ptr[c]), int(self.class_ptr[c + 1]), step, lam, clip,
                                         workers=[w], allow_other_workers=False, pure=False)
                self.W[c] = self.client.submit(_first, out, workers=[w], pure=False)
                self.where[c] = w
                blocks[slot[w]] += 1
                pieces.append((slot[w], out))
        results = self._gather([f for _, f in pieces])
        wall = time.perf_counter() - t0
        busy = np.zeros(self.n_workers)
        clips = 0
        for (k, _), (_, n_clips, seconds) in zip(pieces, results):
            busy[k] += seconds
            clips += n_clips
        for c, (V, scale) in enumerate(self._gather(self.W)):
            st.V[self.class_ptr[c]:self.class_ptr[c + 1]] = V
            st.scale[self.class_ptr[c]:self.class_ptr[c + 1]] = scale
        return {"clipped": clips, "compute_seconds": busy, "idle_seconds": np.maximum(wall - busy, 0.0),
                "bytes_moved": moved, "blocks": blocks}

    def phase_b(self, st: State) -> np.ndarray:
        true_parts = []
        for r in range(self.G):
            state, w = None, self.owner[r]
            for s in range(self.G):
                c = (r + s) % self.G
                state = self.client.submit(_lse_task, self.data[r], state, self.W[c], int(self.class_ptr[c]),
                                           int(self.class_ptr[c + 1]), workers=[w], pure=False)
            self.b[r] = self.client.submit(_b_task, state, workers=[w], pure=False)
            true_parts.append(self.client.submit(_true_task, state, workers=[w], pure=False))
        b_parts = self._gather(self.b)
        true = np.zeros(self.prob.n_rows)
        for rows, b, tr in zip(self.rows, b_parts, self._gather(true_parts)):
            st.b[rows] = b
            true[rows] = tr
        return true

    def close(self) -> None:
        """Release the run's futures (scattered row blocks, b and W blocks): the cluster forgets
        data no client holds."""
        self.data, self.b, self.W = [], [], []


class WorkerEvaluator:
    """Test accuracy and macro-F1 of a DaskSync run on its workers, over sharded test parts: part
    k read once by worker k mod P; the driver gets per-class counts, never the rows."""

    def __init__(self, engine: DaskSync, test: Shards, normalize: bool, bias: float) -> None:
        self.engine = engine
        self.active = sum(p["labelled"] for p in test.parts) > 0
        self.owner = [engine.addresses[k % len(engine.addresses)] for k in range(len(test.parts))]
        self.parts = [engine.client.submit(_load_test, test, k, normalize, bias, engine.prob.dim, engine.prob.n_classes,
                                           workers=[w], allow_other_workers=False, pure=False)
                      for k, w in enumerate(self.owner)]

    def __call__(self, W=None) -> dict:
        """The metrics of the W the workers hold (the driver's copy, W, is the same and unused)."""
        if not self.active:
            return {}
        e = self.engine
        counts = []
        for k, (part, w) in enumerate(zip(self.parts, self.owner)):
            state = None
            for s in range(e.G):
                c = (k + s) % e.G
                state = e.client.submit(_top_task, part, state, e.W[c], int(e.class_ptr[c]), workers=[w], pure=False)
            counts.append(e.client.submit(_count_task, part, state, e.prob.n_classes, workers=[w], pure=False))
        got = e._gather(counts)
        right, copies = sum(g[0] for g in got), sum(g[1] for g in got)
        tp, true_counts, pred_counts = (sum(g[i] for g in got) for i in (2, 3, 4))
        return {"accuracy": right / copies, "macro_f1": macro_f1_counts(tp, true_counts, pred_counts)}
