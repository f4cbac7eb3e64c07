"""One-vs-all block training on Dask workers.

The driver (the run's process) scatters the kernel's data once to every worker (`broadcast=True`,
never inside the task graph), submits one task per block of labels and consumes the results with
`as_completed`, handing each to the same BlockCollector a threads run uses: the store stays
single-writer and the dashboard cannot tell the backends apart. A task runs solvers.blocks.
solve_block, the threads run's own per-block code, on the worker's numba threads, so every label
runs the same sequential code and the model is bit-identical to a threads run.

Blocks are balanced by label frequency: labels sorted by positives are dealt to the blocks in a
snake order (head labels spread over all blocks), and there are TASKS_PER_WORKER blocks per worker
(a worker that finishes early takes the next) but never fewer than MIN_BLOCK_LABELS labels per
block, so that Dask's ~1 ms per task stays noise next to a block's training.
"""
from __future__ import annotations

import threading
import time
import uuid
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..engine.threads import using_threads
from .blocks import BlockCollector, BlockPlan, BlockResult, block_size, data_nbytes, labels_to_train, solve_block

TASKS_PER_WORKER = 16
MIN_BLOCK_LABELS = 8

_KERNEL = threading.Lock()  # one block at a time per worker process, whatever its --nthreads


def balanced_blocks(todo: np.ndarray, n_pos: np.ndarray, n_blocks: int) -> list[np.ndarray]:
    """`todo` split into n_blocks blocks of near-equal size and weight: labels by decreasing
    positives (ties by index) dealt in snake order 0, 1, ..., B-1, B-1, ..., 0; each block stays
    ordered heaviest first."""
    n_blocks = max(1, min(n_blocks, todo.size))
    order = todo[np.argsort(-n_pos[todo], kind="stable")]
    lap = np.arange(order.size) % (2 * n_blocks)
    slot = np.where(lap < n_blocks, lap, 2 * n_blocks - 1 - lap)
    return [order[slot == b] for b in range(n_blocks)]


def block_count(n_todo: int, n_workers: int, plan: BlockPlan, n_threads: int) -> int:
    """Blocks for `n_todo` labels on `n_workers`: TASKS_PER_WORKER each, at least MIN_BLOCK_LABELS
    labels per block, and no block above the threads loop's memory budget (blocks.block_size)."""
    largest = block_size(n_todo, plan.dim, plan.rec_len, len(plan.iter_fields), n_threads)
    wanted = min(TASKS_PER_WORKER * n_workers, -(-n_todo // MIN_BLOCK_LABELS))
    return max(1, wanted, -(-n_todo // largest))


def run_task(block_fn: Callable, data, labels: np.ndarray, plan: BlockPlan, n_threads: int | None,
             epoch: float, record: bool) -> tuple:
    """A Dask task: train one block on this worker's numba threads; returns the BlockOutput and its
    telemetry (worker, start, end, seconds, labels, bytes). Records' wall clock counts from the
    driver's `epoch` (Unix time), through this machine's clock."""
    from distributed import get_worker

    start = time.time()
    t0_ns = time.monotonic_ns() - int((start - epoch) * 1e9)
    with _KERNEL, using_threads(n_threads) as used:
        out = solve_block(lambda lab, W, rec, summ: block_fn(data, lab, W, rec, summ, n_threads=used, t0_ns=t0_ns),
                          labels, plan, record)
    end = time.time()
    return out, {"worker": get_worker().address, "start": start, "end": end, "seconds": end - start,
                 "labels": int(labels.size), "bytes": out.nbytes}


def train_on_cluster(cluster: tuple, block_fn: Callable, data, plan: BlockPlan, n_labels: int, n_pos: np.ndarray, *,
                     epoch: float, recorder=None, progress: Callable[[int, int], None] | None = None,
                     skip: np.ndarray | None = None, stop: Callable[[], bool] | None = None,
                     on_block: Callable[[np.ndarray, sp.csr_matrix, np.ndarray], None] | None = None) -> BlockResult:
    """solvers.blocks.train_in_blocks on the Dask cluster (Client, ClusterInfo): same arguments
    (block_fn and data instead of a closure), same records, same model. stop() is asked after every
    finished block; true cancels the blocks not yet done. The result's info holds the cluster's
    description, workers, cluster_start_seconds and scatter_seconds."""
    from distributed import as_completed

    client, info = cluster
    todo = labels_to_train(n_labels, skip)
    collector = BlockCollector(n_labels, plan.n_features, n_labels - todo.size, recorder=recorder,
                               progress=progress, on_block=on_block)
    t0 = time.monotonic()
    [shared] = client.scatter([data], broadcast=True, hash=False)
    scatter_seconds = time.monotonic() - t0
    blocks = balanced_blocks(todo, n_pos, block_count(todo.size, info.workers, plan, info.threads or 1))
    run_id = uuid.uuid4().hex[:8]
    record = recorder is not None
    pending = {}
    for b, labels in enumerate(blocks):
        if labels.size:
            future = client.submit(run_task, block_fn, shared, labels, plan, info.threads, epoch, record,
                                   key=f"xcviz-{run_id}-block-{b}", retries=0)
            pending[future.key] = (b, future)
    try:
        for future in as_completed([f for _, f in pending.values()]):
            b, _ = pending.pop(future.key)
            out, task = future.result()
            collector.add(out, {"task": b, **task})
            if stop is not None and pending and stop():
                break
    finally:
        if pending:
            client.cancel([f for _, f in pending.values()])
        client.cancel([shared])
    extra = {**info.as_dict(), "scatter_seconds": round(scatter_seconds, 4), "blocks": len(blocks),
             "data_bytes": data_nbytes(data)}
    extra.pop("dask_dashboard", None)
    return collector.result(extra)
