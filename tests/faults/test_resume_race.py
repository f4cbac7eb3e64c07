"""Several `xcviz resume` of one run at the same moment: exactly one worker trains, and the model
is the one an uninterrupted run gives (no label trained twice, no weights summed)."""
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from xcviz.data.registry import load_files
from xcviz.models.sparse import SparseModel
from xcviz.runs.launcher import wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore, StoreError
from xcviz.runs.worker import stored_model
from xcviz.solvers.dismec import DismecParams, fit_dismec

# each process opens the store, says it is ready, waits for "go" and resumes (what `xcviz resume`
# does once the store is open): the check-then-start of the resumes races for real
_RESUME_ON_GO = """
import sys
from xcviz.runs.launcher import resume
from xcviz.runs.store import RunStore, StoreError
store = RunStore(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
try:
    resume(store, sys.argv[2])
except StoreError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
"""


def _resumes_at_once(home, run, count):
    """`count` resumes at one instant, while another writer (as a second run's worker writing a
    block would) holds the store's write lock for a moment: every resume reads the run's status
    before any of them can write, so a check and a start that are not one transaction all pass."""
    procs = [subprocess.Popen([sys.executable, "-c", _RESUME_ON_GO, str(home), run], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(count)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    writer = sqlite3.connect(home / "runs.sqlite", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    time.sleep(2.0)
    writer.execute("COMMIT")
    writer.close()
    return [(p.wait(timeout=120), *p.communicate()) for p in procs]


@pytest.mark.slow
def test_concurrent_resumes_start_one_worker_and_give_the_uninterrupted_model(tmp_path, small_xc):
    train_path, test_path = small_xc
    store = RunStore(tmp_path / "home")
    spec = RunSpec(dataset=str(train_path), test=str(test_path), params={"init": "zero"}, threads=1, name="race")
    run = store.create(spec.validate().to_json(), spec.name)
    gone = subprocess.Popen(["true"])  # the run's earlier worker: exited, as after a cancel
    gone.wait()
    store.update(run, status="cancelled", pid=gone.pid, host=socket.gethostname())
    results = _resumes_at_once(tmp_path / "home", run, 6)
    started = [r for r in results if r[0] == 0]
    assert len(started) == 1, results
    for code, _, err in results:
        if code != 0:
            assert code == 2 and "can be resumed" in err and "Traceback" not in err, err
    row = wait(store, run, timeout=240)
    assert row["status"] == "done", row["error"]
    labels = store.records(run, "label")[0]["label"]
    assert sorted(labels) == list(range(300))  # every label recorded exactly once
    stored = np.concatenate([p[0] for p in store.pieces(run)])
    assert sorted(stored) == list(range(300))
    train, _ = load_files(train_path)
    reference = fit_dismec(train.X, train.Y, DismecParams(init="zero"), threads=1)
    model = SparseModel.load(tmp_path / "home" / "runs" / run / "model")
    assert (model.weights != reference.weights).nnz == 0
    np.testing.assert_array_equal(model.bias_weights, reference.bias_weights)


@pytest.mark.slow
def test_a_resume_while_the_worker_runs_is_refused(tmp_path, xcviz_cli):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"dataset": "delicious", "params": {"init": "zero"}, "threads": 1}))
    home = tmp_path / "home"
    run = xcviz_cli("launch", spec, "--home", home).stdout.strip()
    result = xcviz_cli("resume", run, "--home", home)
    assert result.returncode == 2 and f"run {run} is " in result.stderr, result.stderr
    store = RunStore(home)
    store.request_cancel(run)
    assert wait(store, run, timeout=240)["status"] in ("cancelled", "done")


def test_assembling_a_model_refuses_a_label_stored_twice(tmp_path, small_xc):
    """The last guard: should two blocks of one label ever reach the store, the model is refused,
    not built with summed weights."""
    train_path, _ = small_xc
    store = RunStore(tmp_path / "home")
    run = store.create(RunSpec(dataset=str(train_path)).validate().to_json())
    train, _ = load_files(train_path)
    model = fit_dismec(train.X, train.Y, DismecParams(init="zero"), threads=1)
    block = np.arange(10)
    for _ in range(2):
        store.add_piece(run, block, model.weights[block], model.bias_weights[block])
    with pytest.raises(StoreError, match="stored more than once"):
        stored_model(store, run, train.n_labels, train.n_features, model)
    assert os.path.exists(store.path)
