"""Liveness of runs: a dead worker whose pid was reused is not "running", a launch that failed or
was killed after recording its run leaves no run queued for ever, `wait` can time out, and cancel
ends a run that never started."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from xcviz.runs.launcher import launch, wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore


def _reap(proc):
    proc.kill()
    proc.wait()


@pytest.mark.slow
def test_a_reused_pid_does_not_keep_a_dead_run_running(tmp_path):
    store = RunStore(tmp_path / "home")
    run = launch(RunSpec(dataset="delicious", params={"init": "zero"}, threads=1, name="reused"), store)
    while store.get(run)["status"] != "running":
        time.sleep(0.05)
    worker = store.get(run)["pid"]
    os.kill(worker, signal.SIGKILL)
    while store.get(run)["status"] != "interrupted":
        time.sleep(0.05)
    # the system hands the dead worker's pid to a new process: here, another process takes its
    # place in the run's row (a pid cannot be chosen), exactly what a reused pid looks like
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE runs SET pid = ? WHERE id = ?", (stranger.pid, run))
        assert store.get(run)["status"] == "interrupted"
        assert wait(store, run, timeout=5)["status"] == "interrupted"
    finally:
        _reap(stranger)


# launches a run with a worker that cannot start (its interpreter is gone)
_LAUNCH_WITHOUT_INTERPRETER = """
import sys
from xcviz.runs.launcher import launch
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
sys.executable = "/nonexistent/python"
try:
    launch(RunSpec(dataset="bibtex", threads=1, name="no-start"), RunStore(sys.argv[1]))
except Exception as exc:
    print("launch failed:", exc)
"""

# records a run the way launch does, then dies by SIGKILL before starting its worker
_KILLED_AFTER_INSERT = """
import json, os, signal, sys
from xcviz.runs.store import RunStore
store = RunStore(sys.argv[1])
print(store.create(json.dumps({"dataset": "bibtex", "threads": 1}), "orphan"), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_a_launch_whose_worker_cannot_start_leaves_a_failed_run(tmp_path, xcviz_cli):
    home = tmp_path / "home"
    result = subprocess.run([sys.executable, "-c", _LAUNCH_WITHOUT_INTERPRETER, str(home)], capture_output=True,
                            text=True, timeout=120)
    assert "launch failed" in result.stdout, result.stderr[-2000:]
    (row,) = RunStore(home).list()
    assert row["status"] == "failed" and "could not start" in row["error"]
    waited = xcviz_cli("wait", row["id"], "--json", "--home", home, "--timeout", "20")
    assert json.loads(waited.stdout)["status"] == "failed" and waited.returncode == 1


@pytest.mark.slow
def test_a_launcher_killed_after_recording_its_run_leaves_no_queued_run(tmp_path, xcviz_cli):
    home = tmp_path / "home"
    result = subprocess.run([sys.executable, "-c", _KILLED_AFTER_INSERT, str(home)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == -signal.SIGKILL
    run = result.stdout.strip()
    assert RunStore(home).get(run)["status"] == "interrupted"
    cancelled = xcviz_cli("cancel", run, "--home", home)
    assert cancelled.returncode == 0 and "had no process training it" in cancelled.stdout, cancelled.stderr
    row = RunStore(home).get(run)
    assert row["status"] == "cancelled" and row["ended"] is not None
    again = xcviz_cli("cancel", run, "--home", home)  # says it had ended, not that it was cancelled now
    assert again.returncode == 0 and again.stdout.strip() == f"{run} is already cancelled", again.stdout
    waited = xcviz_cli("wait", run, "--json", "--home", home, "--timeout", "20")
    assert json.loads(waited.stdout)["status"] == "cancelled"


@pytest.mark.slow
def test_wait_times_out_on_a_run_still_training(tmp_path, xcviz_cli):
    home = tmp_path / "home"
    store = RunStore(home)
    run = launch(RunSpec(dataset="delicious", params={"init": "zero"}, threads=1, name="slow"), store)
    try:
        result = xcviz_cli("wait", run, "--home", home, "--timeout", "0.5")
        assert result.returncode == 2 and "after 0.5 s" in result.stderr, result.stderr
    finally:
        store.request_cancel(run)
        wait(store, run, timeout=240)


def test_cancel_ends_a_run_queued_for_a_worker_that_never_starts(tmp_path):
    """A run whose owner lives but never starts a worker (the launcher is stopped, SIGSTOP) is
    cancelled once the owner is gone."""
    home = tmp_path / "home"
    owner = subprocess.Popen([sys.executable, "-c", _KILLED_AFTER_INSERT.replace(
        "os.kill(os.getpid(), signal.SIGKILL)", "os.kill(os.getpid(), signal.SIGSTOP)"), str(home)],
        stdout=subprocess.PIPE, text=True)
    run = owner.stdout.readline().strip()
    store = RunStore(home)
    try:
        assert store.get(run)["status"] == "queued"
        assert store.request_cancel(run) == "queued"  # asked: its owner still lives
    finally:
        _reap(owner)
    assert store.get(run)["status"] == "interrupted"
    assert store.request_cancel(run) == "cancelled"
    assert store.get(run)["status"] == "cancelled"


@pytest.mark.slow
def test_a_worker_whose_store_cannot_be_written_leaves_the_reason(tmp_path, xcviz_cli):
    """A disk that fills under a background run (here its file-size limit, set on the real worker
    process: every write past 4 KiB fails) ended the run `interrupted` with no reason: the store
    could not take the failure. The worker's note, reserved when it started, now says why."""
    import resource

    store = RunStore(tmp_path / "home")
    run = launch(RunSpec(dataset="delicious", params={"init": "zero"}, threads=1, name="full disk"), store)
    while store.get(run)["status"] != "running" or not store.records(run, "iteration")[1]:
        time.sleep(0.05)
    resource.prlimit(store.get(run)["pid"], resource.RLIMIT_FSIZE, (4096, 4096))
    waited = xcviz_cli("wait", run, "--json", "--home", store.home, "--timeout", "300")
    row = json.loads(waited.stdout)
    assert row["status"] == "failed" and waited.returncode == 1, (row, waited.stderr[-2000:])
    assert "the run store could not record it" in row["error"] and "disk I/O error" in row["error"], row["error"]


@pytest.mark.slow
def test_a_worker_whose_store_turns_read_only_leaves_the_reason(tmp_path, xcviz_cli):
    """The store made read-only under a running worker (here a read-only bind mount of the store's
    folder over itself: every file opened after it is read-only, as after `chmod a-w` for a user
    who is not root): the run ended `interrupted` with no reason. The note opened at the start
    still takes the reason."""
    store = RunStore(tmp_path / "home")
    run = launch(RunSpec(dataset="delicious", params={"init": "zero"}, threads=1, name="read-only"), store)
    while store.get(run)["status"] != "running" or not store.records(run, "iteration")[1]:
        time.sleep(0.05)
    home = str(store.home)
    if subprocess.run(["mount", "--bind", home, home], capture_output=True).returncode:
        store.request_cancel(run)
        wait(store, run, timeout=240)
        pytest.skip("this machine does not let the test mount a folder read-only")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", home], check=True, capture_output=True)
        waited = xcviz_cli("wait", run, "--json", "--home", home, "--timeout", "300")
    finally:
        subprocess.run(["umount", home], check=True, capture_output=True)
    row = json.loads(waited.stdout)
    assert row["status"] == "failed" and waited.returncode == 1, (row, waited.stderr[-2000:])
    assert "the run store could not record it" in row["error"] and "readonly" in row["error"], row["error"]
    assert RunStore(home).get(run)["status"] == "failed"  # and so it stays once the store is writable again
