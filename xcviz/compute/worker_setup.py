"""What xcviz sets up on every Dask worker as it joins (imported only when a cluster is used).

A threads run's process has imported the block solvers (and with them numba, scipy and the kernels'
modules) before its clock starts; a fresh Dask worker would import them in its first task, inside
train_seconds. ImportSolvers imports them on every worker, present and future (one that replaces a
lost worker too), while the cluster starts. Loading the compiled kernels stays in the timed window
in both kinds of run: numba loads them at their first call.
"""
from __future__ import annotations

import importlib

from distributed.diagnostics.plugin import WorkerPlugin

WORKER_IMPORTS = ("xcviz.solvers._onevsall.dask_backend", "xcviz.solvers.dismec", "xcviz.solvers.ppdsparse")


class ImportSolvers(WorkerPlugin):
    """Imports WORKER_IMPORTS on each worker it is registered with."""

    name = "xcviz-import-solvers"
    idempotent = True

    def setup(self, worker) -> None:
        importlib.import_module("xcviz.engine.loading").enable_shortcuts()
        for module in WORKER_IMPORTS:
            importlib.import_module(module)
