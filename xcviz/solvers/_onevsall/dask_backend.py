"""One-vs-all block training on Dask workers.

Each worker reads the training data itself from where the run names it (a DataRecipe: the
xcviz.data.source.DataSource and how the family prepares its kernel's data), once per process
(`recipe_data`), so the rows never pass through the driver or the scheduler: a broadcast scatter is
trimmed back to one copy by Dask's memory manager (distributed#8657) and all of it leaves through
the driver's connection. Arrays handed to a fit directly (a notebook) have no source: the driver
scatters them to every worker (`broadcast=True`, never inside the task graph). The driver submits
one task per block of labels and consumes the results with `as_completed`, handing each to the same
BlockCollector a threads run uses: the store stays single-writer and the dashboard cannot tell the
backends apart. A task runs blocks.solve_block, the threads run's own per-block code, on the
worker's numba threads, so every label runs the same sequential code and the model is
bit-identical to a threads run. With a blocks folder, a task writes its weights there and returns
their checksum instead (block_files).

Blocks are guided and stratified (`block_plan`): each block takes 1/(GUIDE x workers) of the labels
still unplanned, so blocks shrink as the run goes on (OpenMP's guided schedule), but never below
MIN_BLOCK_LABELS labels nor above the threads loop's memory budget; the labels, sorted by positives,
are dealt so that every block holds an even sample from head to tail (a block of s labels gets the
labels at the quantiles (k + 1/2)/s), each block heaviest first. Large blocks early keep the number of
tasks low (a task costs the driver and the workers about 5 ms of CPU here, BENCHMARKS.md "Dask"); small
blocks at the end leave no worker with a long last block while the others idle.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ...data.source import DataSource, training_data
from ...engine.threads import using_threads
from .block_files import BlockFile, read_block_file, write_block_file
from .blocks import (BlockCollector, BlockPlan, BlockResult, data_nbytes, labels_to_train, labels_within_budget,
                     solve_block)

GUIDE = 2
MIN_BLOCK_LABELS = 8

_KERNEL = threading.Lock()  # one block at a time per worker process, whatever its --nthreads
PREPARED = 2  # prepared data a worker process keeps (by recipe): one run's, and the next's as it starts
_PREPARED: OrderedDict[str, object] = OrderedDict()


@dataclass(frozen=True)
class DataRecipe:
    """What a task carries instead of the data: where the rows are (source), how the family turns
    them into its kernel's data (prepare(X, Y), picklable: blocks.problem_data with the family's
    builder), a digest of both that keys each worker's cache, and the prepared data's size."""

    source: DataSource
    prepare: Callable
    key: str
    nbytes: int

    @classmethod
    def of(cls, source: DataSource, prepare: Callable, nbytes: int) -> DataRecipe:
        return cls(source, prepare, hashlib.sha256(pickle.dumps((source, prepare))).hexdigest(), nbytes)


def recipe_data(recipe: DataRecipe):
    """The kernel's data of `recipe` in this process: read and prepared at its first task, reused by
    the next (the source's files are checked against their stamp every time)."""
    recipe.source.check()
    if recipe.key not in _PREPARED:
        train = training_data(recipe.source)
        _PREPARED[recipe.key] = recipe.prepare(train.X, train.Y)
        while len(_PREPARED) > PREPARED:
            _PREPARED.popitem(last=False)
    _PREPARED.move_to_end(recipe.key)
    return _PREPARED[recipe.key]


def guided_sizes(n_todo: int, n_workers: int, largest: int) -> list[int]:
    """Block sizes for `n_todo` labels on `n_workers`: each 1/(GUIDE * n_workers) of the labels left
    (rounded up), at least MIN_BLOCK_LABELS, at most `largest`; a remainder below MIN_BLOCK_LABELS
    joins the block before it (within `largest`)."""
    sizes, left = [], int(n_todo)
    largest = max(1, int(largest))
    while left > 0:
        size = min(left, largest, max(MIN_BLOCK_LABELS, -(-left // (GUIDE * max(1, n_workers)))))
        if 0 < left - size < MIN_BLOCK_LABELS:
            size = min(left, largest)
        sizes.append(size)
        left -= size
    return sizes


def stratified_blocks(todo: np.ndarray, n_pos: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """`todo` cut into blocks of the given sizes, each an even sample of the labels ranked by
    decreasing positives (ties by index): block b's k-th label is the one at rank quantile
    (k + 1/2) / sizes[b]. Each block stays ordered heaviest first."""
    order = todo[np.argsort(-n_pos[todo], kind="stable")]
    sizes = np.asarray(sizes, dtype=np.int64)
    owner = np.repeat(np.arange(sizes.size), sizes)
    quantile = np.concatenate([(np.arange(s) + 0.5) / s for s in sizes]) if sizes.size else np.zeros(0)
    dealt = owner[np.argsort(quantile, kind="stable")]            # dealt[j]: the block of the j-th heaviest
    grouped = order[np.argsort(dealt, kind="stable")]             # by block, heaviest first inside each
    return np.split(grouped, np.cumsum(sizes)[:-1])


def block_plan(todo: np.ndarray, n_pos: np.ndarray, n_workers: int, plan: BlockPlan) -> list[np.ndarray]:
    """The blocks a Dask run submits, in submission order, for the labels `todo` on `n_workers`:
    guided sizes within the threads loop's memory budget per block (a worker trains one block at a
    time), stratified by positives."""
    largest = labels_within_budget(plan.dim, plan.rec_len, len(plan.iter_fields))
    return stratified_blocks(todo, n_pos, guided_sizes(todo.size, n_workers, largest))


def run_task(block_fn: Callable, data, labels: np.ndarray, plan: BlockPlan, n_threads: int | None,
             epoch: float, record: bool, weights_to: tuple[str, str] | None = None) -> tuple:
    """A Dask task: train one block on this worker's numba threads; returns the BlockOutput and its
    telemetry (worker, start, end, seconds, labels, bytes). `data` is the kernel's data or a
    DataRecipe this worker resolves (recipe_data; its first task reads the files). weights_to:
    (folder, name) where the block's weights are written, the BlockOutput then carrying their
    BlockFile instead (block_files). Records' wall clock counts from the driver's `epoch` (Unix
    time), through this machine's clock."""
    from distributed import get_worker

    start = time.time()
    t0_ns = time.monotonic_ns() - int((start - epoch) * 1e9)
    with _KERNEL, using_threads(n_threads) as used:
        if isinstance(data, DataRecipe):
            data = recipe_data(data)
        out = solve_block(lambda lab, W, rec, summ: block_fn(data, lab, W, rec, summ, n_threads=used, t0_ns=t0_ns),
                          labels, plan, record)
    end = time.time()
    nbytes = out.nbytes
    if weights_to is not None:
        out = out._replace(weights=write_block_file(*weights_to, out.labels, out.weights))
    return out, {"worker": get_worker().address, "start": start, "end": end, "seconds": end - start,
                 "labels": int(labels.size), "bytes": nbytes}


def train_on_cluster(cluster: tuple, block_fn: Callable, data, plan: BlockPlan, n_labels: int, n_pos: np.ndarray, *,
                     epoch: float, recorder=None, progress: Callable[[int, int], None] | None = None,
                     skip: np.ndarray | None = None, stop: Callable[[], bool] | None = None,
                     on_block: Callable[[np.ndarray, sp.csr_matrix, np.ndarray], None] | None = None,
                     blocks_dir: str | None = None) -> BlockResult:
    """threads_backend.train_in_blocks on the Dask cluster (Client, ClusterInfo): same arguments
    (block_fn and data, or a DataRecipe its workers resolve, instead of a closure), same records,
    same model. stop() is asked after every finished block; true cancels the blocks not yet done.
    With `blocks_dir` (a folder the workers and the driver share, the run's), each task writes its
    weights there and the driver reads them back, checked (block_files.read_block_file raises
    BlockFileError naming a block whose file changed), then removes the file.
    The result's info holds the cluster's description, workers, cluster_start_seconds,
    scatter_seconds (0 for a recipe), data_bytes and data_from ("workers" or "driver")."""
    from distributed import as_completed

    client, info = cluster
    todo = labels_to_train(n_labels, skip)
    collector = BlockCollector(n_labels, plan.n_features, n_labels - todo.size, recorder=recorder,
                               progress=progress, on_block=on_block)
    t0 = time.monotonic()
    scattered = not isinstance(data, DataRecipe)
    [shared] = client.scatter([data], broadcast=True, hash=False) if scattered else [data]
    scatter_seconds = time.monotonic() - t0
    blocks = block_plan(todo, n_pos, info.workers, plan)
    run_id = uuid.uuid4().hex[:8]
    record = recorder is not None
    pending = {}
    for b, labels in enumerate(blocks):
        if labels.size:
            key = f"xcviz-{run_id}-block-{b}"
            weights_to = None if blocks_dir is None else (blocks_dir, key)
            future = client.submit(run_task, block_fn, shared, labels, plan, info.threads, epoch, record, weights_to,
                                   key=key, retries=0)
            pending[future.key] = (b, future)
    try:
        for future in as_completed([f for _, f in pending.values()]):
            b, _ = pending.pop(future.key)
            out, task = future.result()
            written = out.weights if isinstance(out.weights, BlockFile) else None
            if written is not None:
                out = out._replace(weights=read_block_file(written, out.labels))
            collector.add(out, {"task": b, **task})
            if written is not None:
                os.remove(written.path)
            if stop is not None and pending and stop():
                break
    finally:
        if pending:
            client.cancel([f for _, f in pending.values()])
        if scattered:
            client.cancel([shared])
    extra = {**info.as_dict(), "scatter_seconds": round(scatter_seconds, 4) if scattered else 0.0,
             "blocks": len(blocks), "data_bytes": data_nbytes(data) if scattered else data.nbytes,
             "data_from": "driver" if scattered else "workers"}
    return collector.result(extra)
