"""What a cluster would buy: the makespan of a one-vs-all run predicted for P workers from a
finished run's per-label seconds, under the block scheduler of solvers._onevsall.dask_backend.

Model (its assumptions, stated wherever it is drawn):
- a label takes the seconds it took in the measured run, on one thread, wherever it runs (same
  machines, no memory-bandwidth contention between workers);
- labels go in blocks exactly as a Dask run would cut them (solvers._onevsall.dask_backend.block_plan): the
  blocks are handed out in order to whichever worker is free first (greedy list scheduling, what
  Dask does with one thread per worker), each block paying `task_overhead` seconds (Dask's
  per-task cost, ~1 ms);
- the data goes to every worker once before the first task, one copy after the other from the
  driver at `bandwidth` bytes per second (scatter with broadcast), so it costs P * bytes / bandwidth.
The makespan is the broadcast plus the last worker's finishing time.
"""
from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from ..solvers._onevsall.blocks import BlockPlan
from ..solvers._onevsall.dask_backend import block_plan

TASK_OVERHEAD = 1e-3     # seconds Dask spends per task (scheduler, serialisation, transfer of a small result)
BANDWIDTH = 1.0e9        # bytes per second from the driver to one worker (10 Gbit/s Ethernet, roughly)
WORKERS = tuple(2 ** k for k in range(11))  # 1 ... 1024


class Prediction(NamedTuple):
    """Predicted seconds per worker count: total, of which broadcast, and the compute makespan."""

    workers: np.ndarray
    seconds: np.ndarray
    broadcast: np.ndarray
    compute: np.ndarray
    blocks: np.ndarray


def list_schedule(costs: np.ndarray, workers: int) -> float:
    """Finishing time of the last of `workers` workers taking `costs` in order, each the next when free."""
    free = [0.0] * min(workers, max(1, costs.size))
    for cost in costs:
        heapq.heappush(free, heapq.heappop(free) + float(cost))
    return max(free)


def predict_makespan(label_seconds: np.ndarray, n_pos: np.ndarray, data_bytes: float, *,
                     workers=WORKERS, task_overhead: float = TASK_OVERHEAD, bandwidth: float = BANDWIDTH,
                     plan: BlockPlan | None = None) -> Prediction:
    """The predicted makespan for each worker count (see the module's assumptions). label_seconds
    and n_pos: one entry per label (a finished run's label records); plan sizes the blocks (default:
    no memory cap)."""
    label_seconds = np.asarray(label_seconds, dtype=float)
    n_pos = np.asarray(n_pos)
    labels = np.arange(label_seconds.size)
    plan = plan or BlockPlan(n_features=1, dim=1, rec_len=1, iter_fields=("x",), label_fields=("x",), converged=0,
                             first_iteration=0, bias_index=-1, prune_threshold=0.0)
    rows = []
    for p in workers:
        blocks = block_plan(labels, n_pos, int(p), plan)
        costs = np.array([label_seconds[b].sum() + task_overhead for b in blocks])
        compute = list_schedule(costs, int(p))
        broadcast = int(p) * data_bytes / bandwidth
        rows.append((p, broadcast + compute, broadcast, compute, len(blocks)))
    cols = np.array(rows, dtype=float).T
    return Prediction(cols[0].astype(int), cols[1], cols[2], cols[3], cols[4].astype(int))
