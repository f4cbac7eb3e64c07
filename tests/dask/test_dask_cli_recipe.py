"""docs/dask.md's "Three terminals" recipe run literally: a `dask scheduler` process and two `dask
worker` processes (Dask's own commands, not xcviz's LocalCluster), then `xcviz spec --scheduler`
and `xcviz launch` in fresh processes. The run's workers read the training file themselves and
write the blocks' weights to the run's folder; the model is a threads run's, bit for bit. The
scheduler's port is 0 (any free one, read from its --scheduler-file) so that tests can run side
by side; the processes the test starts are stopped by their ids."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import xcviz
from tests.dask.test_cluster_runs import _assert_same_model, _model
from xcviz.data.registry import resolve
from xcviz.runs.launcher import wait
from xcviz.runs.store import RunStore
from xcviz.solvers.dismec import fit_dismec

pytestmark = pytest.mark.cluster

DASK = str(Path(sys.executable).with_name("dask"))


def _stop(processes: list[subprocess.Popen]) -> None:
    for proc in processes:
        proc.terminate()
    for proc in processes:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_three_terminals_recipe_with_real_dask_processes(tmp_path, small_xc, xcviz_cli):
    # the workers import this checkout's xcviz, as the recipe's "same environment as xcviz" asks
    root = str(Path(xcviz.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    started = []
    try:
        scheduler_file = tmp_path / "scheduler.json"
        started.append(subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                         "--scheduler-file", str(scheduler_file)], env=env, cwd=tmp_path,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for k in range(2):
            started.append(subprocess.Popen([DASK, "worker", address, "--nthreads", "1", "--nworkers", "1",
                                             "--no-dashboard", "--local-directory", str(tmp_path / f"worker{k}")],
                                            env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        train_path = str(small_xc[0])
        spec = xcviz_cli("spec", train_path, "--scheduler", address, "--threads", "1", "--name", "recipe", env=env)
        assert spec.returncode == 0, spec.stderr
        (tmp_path / "spec.json").write_text(spec.stdout)
        home = tmp_path / "home"
        launched = xcviz_cli("launch", tmp_path / "spec.json", "--home", home, env=env)
        assert launched.returncode == 0, launched.stderr
        run = launched.stdout.strip().splitlines()[-1]
        store = RunStore(home)
        row = wait(store, run, timeout=300)
        assert row["status"] == "done", row["error"]
        assert row["summary"]["cluster"] == address and row["summary"]["workers"] == 2
        tasks, _ = store.records(run, "task")
        assert tasks["worker"].nunique() == 2 and tasks["labels"].sum() == 300
        read, _ = resolve(train_path)
        _assert_same_model(_model(home, run), fit_dismec(read.X, read.Y, threads=1))
        assert list((store.run_dir(run) / "blocks").iterdir()) == []
    finally:
        _stop(started)
