"""Background runs on a Dask LocalCluster (2 workers x 1 thread) against threads runs on Bibtex:
the same model bit for bit, the same records; a worker SIGKILLed after its first task; the driver
SIGKILLed, then resumed; an unreachable scheduler."""
import os
import signal
import socket
import time

import numpy as np
import pandas as pd
import psutil
import pytest

from xcviz.models.sparse import SparseModel
from xcviz.app.report import build_report
from xcviz.runs.launcher import launch, resume, wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.solvers.dismec import DismecParams, fit_dismec

pytestmark = pytest.mark.cluster

PARAMS = {"init": "zero", "eps": 0.001}  # a tighter tolerance: a few seconds of training, time to kill things
TIMING = {"wall", "seconds"}


@pytest.fixture(scope="module")
def reference(bibtex):
    train, _ = bibtex
    return fit_dismec(train.X, train.Y, DismecParams(**PARAMS), threads=1)


def _model(home, run) -> SparseModel:
    return SparseModel.load(home / "runs" / run / "model")


def _assert_same_model(model: SparseModel, reference: SparseModel) -> None:
    assert model.weights.shape == reference.weights.shape
    assert (model.weights != reference.weights).nnz == 0
    np.testing.assert_array_equal(model.bias_weights, reference.bias_weights)


def _content(store: RunStore, run: str, kind: str) -> pd.DataFrame:
    """The run's records of one kind without timing columns, in a canonical order."""
    frame, _ = store.records(run, kind)
    frame = frame.drop(columns=[c for c in frame if c in TIMING or c.endswith("_seconds")])
    keys = ["label", "iteration"] if "iteration" in frame else ["label"]
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


def _dask_processes(driver_pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(driver_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _wait_for(predicate, timeout=120.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _first_task_workers(store: RunStore, run: str, timeout: float = 120.0, what: str = "the first task"
                        ) -> list[psutil.Process]:
    """The run's Dask processes listening on the address of the worker that ran its first task, once
    that task is recorded (one process, unless the run's process tree changed meanwhile)."""
    _wait_for(lambda: len(store.records(run, "task")[0]) >= 1 or store.get(run)["status"] not in ("queued", "running"),
              timeout=timeout, what=what)
    first = store.records(run, "task")[0]["worker"].iloc[0]
    port = int(first.rsplit(":", 1)[1])
    return [p for p in _dask_processes(store.get(run)["pid"])
            if any(c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in p.net_connections())]


def _kill_all(processes) -> None:
    for proc in processes:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


def test_local_cluster_run_matches_a_threads_run(tmp_path, reference):
    store = RunStore(tmp_path)
    threads = launch(RunSpec(dataset="bibtex", params=PARAMS, threads=1, name="threads"), store)
    assert wait(store, threads, timeout=300)["status"] == "done"
    dask = launch(RunSpec(dataset="bibtex", params=PARAMS, cluster="local:2x1", name="dask"), store)
    row = wait(store, dask, timeout=300)
    assert row["status"] == "done", row["error"]
    _assert_same_model(_model(tmp_path, threads), reference)
    _assert_same_model(_model(tmp_path, dask), reference)
    for kind in ("iteration", "label"):
        a, b = _content(store, threads, kind), _content(store, dask, kind)
        assert len(a) == len(b) > 0
        pd.testing.assert_frame_equal(a, b)
    summary = row["summary"]
    assert summary["cluster"] == "local:2x1" and summary["workers"] == 2
    assert summary["cluster_start_seconds"] > 0 and summary["scatter_seconds"] >= 0
    tasks, _ = store.records(dask, "task")
    assert tasks["labels"].sum() == 159 and tasks["worker"].nunique() == 2
    assert tasks["worker"].str.startswith("tls://127.0.0.1:").all()
    assert (tasks["end"] >= tasks["start"]).all() and (tasks["bytes"] > 0).all()
    assert tasks["task"].nunique() == len(tasks) == 9  # guided: 40 30 23 17 13 9 8 8, the last 3 join the 8: 11
    assert sorted(tasks["labels"], reverse=True) == [40, 30, 23, 17, 13, 11, 9, 8, 8]
    threads_tasks, _ = store.records(threads, "task")
    assert set(threads_tasks["worker"]) == {"threads:1"} and threads_tasks["labels"].sum() == 159
    page = build_report(store, [threads, dask])  # the report has the Workers timeline and the cost model
    assert "blocks of labels per worker" in page and "Scale-out" in page and "predicted from threads" in page
    assert all(w in page for w in tasks["worker"].unique())


def test_a_worker_killed_after_its_first_task_is_replaced(tmp_path, reference):
    store = RunStore(tmp_path)
    run = launch(RunSpec(dataset="bibtex", params=PARAMS, cluster="local:2x1", name="worker-killed"), store)
    victims = _first_task_workers(store, run)
    assert len(victims) == 1, "the worker process that ran the first task"
    assert store.get(run)["done"] < 159, "the run must still have blocks left when the worker dies"
    os.kill(victims[0].pid, signal.SIGKILL)
    row = wait(store, run, timeout=300)
    assert row["status"] == "done", row["error"]
    _assert_same_model(_model(tmp_path, run), reference)
    labels, _ = store.records(run, "label")
    assert sorted(labels["label"]) == list(range(159))  # each label recorded once
    tasks, _ = store.records(run, "task")
    assert tasks["worker"].nunique() >= 2 and tasks["labels"].sum() == 159


def test_the_driver_killed_then_resumed_gives_the_same_model(tmp_path, reference):
    store = RunStore(tmp_path)
    run = launch(RunSpec(dataset="bibtex", params=PARAMS, cluster="local:2x1", name="driver-killed"), store)
    _wait_for(lambda: len(store.pieces(run)) >= 2 or store.get(run)["status"] not in ("queued", "running"),
              what="two stored blocks")
    driver = store.get(run)["pid"]
    cluster = _dask_processes(driver)
    os.kill(driver, signal.SIGKILL)
    try:
        _wait_for(lambda: store.get(run)["status"] == "interrupted", timeout=30, what="the run interrupted")
        done_before = sum(len(p[0]) for p in store.pieces(run))
        assert 0 < done_before < 159
        # the workers lose their scheduler with the driver and exit on their own
        _wait_for(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in cluster),
                  timeout=60, what="the orphaned workers to exit")
    finally:
        _kill_all(cluster)
    resume(store, run)
    row = wait(store, run, timeout=300)
    assert row["status"] == "done", row["error"]
    _assert_same_model(_model(tmp_path, run), reference)
    labels, _ = store.records(run, "label")
    assert sorted(labels["label"]) == list(range(159))


def test_an_unreachable_scheduler_fails_the_run_with_a_clear_error(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = RunStore(tmp_path)
    address = f"tcp://127.0.0.1:{port}"
    run = launch(RunSpec(dataset="bibtex", params=PARAMS, cluster=address, name="no-scheduler"), store)
    row = wait(store, run, timeout=120)
    assert row["status"] == "failed"
    assert row["error"].startswith(f"ClusterError: cannot reach the Dask scheduler at {address}")
    assert store.pieces(run) == [] and store.records(run, "label")[0].empty
    assert RunSpec.from_json(row["spec"]).cluster == address  # the spec is kept: resume once it is up
