"""The one entry point of one-vs-all training: a driver hands its block kernel and data to
`run_blocks`, which trains on threads or on a Dask cluster with the same records and model."""
from __future__ import annotations

import time
from functools import partial
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ...records.sinks import NullSink
from ..warmup import code_paths, tiny_problem, warm_once
from .blocks import BlockPlan, BlockResult, Problem, data_nbytes
from .dask_backend import DataRecipe, train_on_cluster
from .threads_backend import train_in_blocks


def run_blocks(block_fn: Callable, data, prob: Problem, *, cluster=None, n_threads: int, t0_ns: int,
               iter_fields: tuple[str, ...], label_fields: tuple[str, ...], converged: int, first_iteration: int,
               prune_threshold: float, rec_len: int, recorder=None, label_extras: Callable[[dict], dict] | None = None,
               progress: Callable[[int, int], None] | None = None, skip: np.ndarray | None = None,
               stop: Callable[[], bool] | None = None,
               on_block: Callable[[np.ndarray, sp.csr_matrix, np.ndarray], None] | None = None,
               source=None, prepare: Callable | None = None, blocks_dir: str | None = None) -> BlockResult:
    """Train every label of `prob` with block_fn(data, labels, W, rec, summ, n_threads=, t0_ns=), a
    module-level function reading only `data`: on numba threads here (cluster None, train_in_blocks)
    or as Dask tasks on the (Client, ClusterInfo) pair `cluster` (dask_backend), which records what
    comes back exactly as the threads loop does.

    On a cluster, with `source` (the xcviz.data.source.DataSource the rows were read from) and
    `prepare` (a picklable prepare(X, Y) -> data, blocks.problem_data with the family's builder),
    each worker reads the data and prepares it itself, once per process; without them (arrays
    passed to a fit in a notebook) the driver scatters `data` to every worker. With `blocks_dir`,
    each task writes its block's weights there and returns their checksum (block_files)."""
    if cluster is None:
        result = train_in_blocks(prob.n_labels, prob.n_features, prob.dim, prob.n_pos,
                               solve=partial(block_fn, data, n_threads=n_threads, t0_ns=t0_ns),
                               iter_fields=iter_fields, label_fields=label_fields, converged=converged,
                               first_iteration=first_iteration, bias_index=prob.bias_index,
                               prune_threshold=prune_threshold, n_threads=n_threads, rec_len=rec_len,
                               recorder=recorder, label_extras=label_extras, progress=progress, skip=skip,
                               stop=stop, on_block=on_block)
        return result._replace(info={"data_bytes": data_nbytes(data)})
    plan = BlockPlan(prob.n_features, prob.dim, rec_len, tuple(iter_fields), tuple(label_fields), converged,
                     first_iteration, prob.bias_index, prune_threshold, label_extras)
    epoch = time.time() - (time.monotonic_ns() - t0_ns) / 1e9
    if source is not None and prepare is not None:
        data = DataRecipe.of(source, prepare, data_nbytes(data))
    return train_on_cluster(cluster, block_fn, data, plan, prob.n_labels, prob.n_pos, epoch=epoch,
                            recorder=recorder, progress=progress, skip=skip, stop=stop, on_block=on_block,
                            blocks_dir=blocks_dir)


def warm_up(family: str, fit: Callable, params, *, threads: int | None, record: bool, cluster=None,
            phase: Callable[[str], None] | None = None) -> float:
    """A one-vs-all family's kernels compiled or loaded before its clock starts: `fit` (the family's
    own) trains `params` on a tiny problem once per process and kind of run (solvers.warmup);
    returns the seconds it took, the run's `compile_seconds`. A Dask run's kernels run in its
    workers' processes, so it warms nothing here (0.0)."""
    if cluster is not None:
        return 0.0

    def tiny_fit() -> None:
        tiny = tiny_problem()
        fit(tiny.X, tiny.Y, params, threads=threads, recorder=NullSink() if record else None)

    return warm_once((family, code_paths(params), record), tiny_fit, phase)
