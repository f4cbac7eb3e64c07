"""DS-MLR sync on Dask, a worker SIGKILLed mid-run through the real launcher: a background run
(`launch`, the process the dashboard starts) on sharded data with `cluster` local:2x1; one Dask
worker process killed while the run records its outer iterations. The run fails cleanly (by
design: the killed worker's row blocks and W blocks are gone and Dask cannot recompute them),
the store keeps whole outer iterations and passes SQLite's integrity check, the cluster's
processes go away with the run, and `xcviz resume` trains the run again from the start to the
model of an uninterrupted run."""
import os
import signal
import sqlite3
import subprocess
import sys

import numpy as np
import psutil
import pytest

from tests.dask.test_cluster_runs import _wait_for
from xcviz.data.shards import write_shards
from xcviz.data.synthetic import generate
from xcviz.models.sparse import SparseModel
from xcviz.runs.launcher import launch, wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.solvers.dsmlr.solver import DsmlrParams, fit_dsmlr

pytestmark = pytest.mark.cluster

PARAMS = {"mode": "sync", "epochs": 40, "grid": 4, "alpha": 200.0, "lam": 1e-3}


def _iterations(store: RunStore, run: str) -> int:
    frame, _ = store.records(run, "iteration")
    return int(frame["iteration"].max()) if len(frame) else -1


def _dask_workers(driver: int) -> list[psutil.Process]:
    """The run's Dask worker processes: its spawned children (a LocalCluster's nannies live in the
    driver), not multiprocessing's resource tracker."""
    out = []
    for proc in psutil.Process(driver).children(recursive=True):
        try:
            if "spawn_main" in " ".join(proc.cmdline()):
                out.append(proc)
        except psutil.NoSuchProcess:
            pass
    return out


def test_a_worker_killed_mid_run_fails_the_run_cleanly_and_resume_finishes_it(tmp_path):
    ds = generate(600, 60, 12, avg_labels=1.5, avg_nnz=8, seed=4)
    write_shards(ds, tmp_path / "data" / "shards", 3)
    store = RunStore(tmp_path / "home")
    spec = RunSpec(dataset=str(tmp_path / "data" / "shards"), solver="dsmlr", params=PARAMS, threads=1,
                   cluster="local:2x1", name="dsmlr-worker-killed").validate()
    run = launch(spec, store, data_dirs=[tmp_path / "data"])
    _wait_for(lambda: _iterations(store, run) >= 2 or store.get(run)["status"] not in ("queued", "running"),
              what="two outer iterations recorded")
    assert store.get(run)["status"] == "running", store.get(run)["error"]
    driver = store.get(run)["pid"]
    workers = _dask_workers(driver)
    assert len(workers) == 2, [p.cmdline() for p in workers]
    os.kill(workers[0].pid, signal.SIGKILL)
    row = wait(store, run, timeout=300)

    # fails cleanly: a one-line error that says what happened and what to do
    assert row["status"] == "failed", row
    assert "worker was probably lost" in row["error"] and "resume the run" in row["error"]
    assert _iterations(store, run) < PARAMS["epochs"]
    # the store is whole: integrity check, whole outer iterations (one row per worker), nothing half written
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    records, _ = store.records(run, "iteration")
    assert records.groupby("iteration").size().eq(2).all() and len(records) >= 6
    assert not (store.run_dir(run) / "model").exists()
    # the driver is gone and the cluster with it
    _wait_for(lambda: not psutil.pid_exists(driver) or psutil.Process(driver).status() == psutil.STATUS_ZOMBIE,
              timeout=60, what="the driver to exit")
    _wait_for(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in workers),
              timeout=60, what="the cluster's workers to exit")

    # `xcviz resume` starts it again, from scratch (a multiclass run has no finished blocks to keep)
    resumed = subprocess.run([sys.executable, "-m", "xcviz.cli", "resume", run, "--home", str(store.home)],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    row = wait(store, run, timeout=600)
    assert row["status"] == "done", row["error"]
    records, _ = store.records(run, "iteration")
    assert sorted(records["iteration"].unique()) == list(range(PARAMS["epochs"] + 1))
    assert records.groupby("iteration").size().eq(2).all()
    stored = SparseModel.load(store.run_dir(run) / "model")
    reference = fit_dsmlr(ds.X, ds.Y, DsmlrParams(**PARAMS), threads=1)
    assert (stored.weights != reference.weights).nnz == 0
    assert np.array_equal(stored.bias_weights, reference.bias_weights)
    assert stored.info["objective"] == reference.info["objective"]
    assert row["summary"]["objective"] == pytest.approx(reference.info["objective"], rel=1e-6)  # rounded
