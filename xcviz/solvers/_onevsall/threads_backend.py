"""One-vs-all block training on numba threads in the run's own process."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .blocks import BlockCollector, BlockPlan, BlockResult, block_size, labels_to_train, solve_block


def train_in_blocks(n_labels: int, n_features: int, dim: int, n_pos: np.ndarray, *,
                    solve: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None],
                    iter_fields: tuple[str, ...], label_fields: tuple[str, ...], converged: int,
                    first_iteration: int, bias_index: int, prune_threshold: float, n_threads: int,
                    rec_len: int, recorder=None, label_extras: Callable[[dict], dict] | None = None,
                    progress: Callable[[int, int], None] | None = None, skip: np.ndarray | None = None,
                    stop: Callable[[], bool] | None = None,
                    on_block: Callable[[np.ndarray, sp.csr_matrix, np.ndarray], None] | None = None) -> BlockResult:
    """The block loop every one-vs-all driver runs around its kernel, on numba threads.

    Labels go in blocks of consecutive indices, each ordered heaviest first (so that no worker is
    left with a head label at the end); solve(labels, W, rec, summ) trains one block into
    preallocated arrays (see solve_block). After each block the weights are pruned into CSR pieces,
    the records and the block's telemetry (a `task` record, worker "threads") go to the sink
    (label_extras may add per-label columns) and progress(done, total) is called.

    For background runs: labels in `skip` (already trained) are left out, `stop()` is asked before
    every block (true: return with the labels trained so far), and on_block(labels, weights,
    bias_weights) receives each block's pruned rows, in increasing label order, to persist them."""
    todo = labels_to_train(n_labels, skip)
    block = block_size(n_labels, dim, rec_len, len(iter_fields), n_threads)
    plan = BlockPlan(n_features, dim, rec_len, tuple(iter_fields), tuple(label_fields), converged, first_iteration,
                     bias_index, prune_threshold, label_extras)
    collector = BlockCollector(n_labels, n_features, n_labels - todo.size, recorder=recorder, progress=progress,
                               on_block=on_block)
    for task, start in enumerate(range(0, todo.size, block)):
        if stop is not None and stop():
            break
        labels = todo[start:start + block]
        labels = labels[np.argsort(-n_pos[labels], kind="stable")]
        began = time.time()
        out = solve_block(solve, labels, plan, recorder is not None)
        ended = time.time()
        collector.add(out, {"task": task, "worker": f"threads:{n_threads}", "start": began, "end": ended,
                            "labels": labels.size, "seconds": ended - began, "bytes": out.nbytes})
    return collector.result()
