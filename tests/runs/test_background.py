"""Run specs, the SQLite store and background runs: launch, records, cancel, kill -9 and resume."""
import json
import multiprocessing
import os
import re
import signal
import sqlite3
import time

import numpy as np
import pytest

from xcviz.cli import main
from xcviz.data import load
from xcviz.models.sparse import SparseModel
from xcviz.runs.launcher import launch, resume, wait
from xcviz.runs.progress import progress_text
from xcviz.runs.spec import RunSpec, SpecError
from xcviz.runs.store import SCHEMA_VERSION, RunStore, StoreError
from xcviz.solvers.dismec import DismecParams, fit_dismec


def test_spec_round_trip_and_errors():
    spec = RunSpec(dataset="bibtex", params={"init": "zero"}, threads=1, name="z").validate()
    back = RunSpec.from_json(spec.to_json())
    assert back == spec and back.params["init"] == "zero" and back.params["C"] == 1.0
    for text, phrase in (('{"dataset": "bibtex", "color": 1}', "unknown field(s) color"),
                         ('{"dataset": "bibtex", "params": {"C": -1}}', "'params'"),
                         ('{"dataset": "bibtex", "threads": 99}', "'threads'"),
                         ('{"dataset": "bibtex"', "not valid JSON"),
                         ('{"solver": "dismec"}', "dataset")):
        with pytest.raises(SpecError, match=re.escape(phrase)):
            RunSpec.from_json(text, source="s.json")


def test_a_spec_names_files_absolutely_whatever_folder_it_was_written_in(tmp_path, monkeypatch):
    """A relative path is the working folder's: the run's resume (or the dashboard) starts from
    another, and said "the input of this run is gone" of a file still there."""
    (tmp_path / "d_train.txt").write_text("1 1 1\n0 0:1\n")
    (tmp_path / "d_test.txt").write_text("1 1 1\n0 0:1\n")
    monkeypatch.chdir(tmp_path)
    spec = RunSpec(dataset="d_train.txt", test="d_test.txt").validate()
    assert (spec.dataset, spec.test) == (str(tmp_path / "d_train.txt"), str(tmp_path / "d_test.txt"))
    monkeypatch.chdir("/")
    assert RunSpec.from_json(spec.to_json()).dataset == str(tmp_path / "d_train.txt")
    assert RunSpec(dataset="bibtex").validate().dataset == "bibtex"  # a bundled name stays a name


def test_run_names_are_one_line_and_never_another_runs_id(tmp_path):
    for name in ("two\nlines", "tab\there", "\u202eevil.exe", "zero\u200bwidth", "line\u2028separator"):
        with pytest.raises(SpecError, match="no control or invisible characters"):
            RunSpec(dataset="bibtex", name=name).validate()
    assert RunSpec(dataset="bibtex", name="שלום run").validate().name == "שלום run"  # right-to-left letters are text
    assert RunSpec(dataset="bibtex", name="   ").validate().name == ""  # blank: the run goes by its id
    store = RunStore(tmp_path)
    spec = RunSpec(dataset="bibtex").validate().to_json()
    first = store.create(spec)
    second = store.create(spec, first)  # named like the first run's id: it could never be found by name
    assert store.get(first)["name"] == first and store.get(second)["name"] == f"{first}-2"
    assert store.find(f"{first}-2") == second


def test_store_refuses_a_newer_schema(tmp_path):
    RunStore(tmp_path)
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match="newer"):
        RunStore(tmp_path)


def _writer(home, run, batches):
    store = RunStore(home)
    for b in range(batches):
        store.append_batch(run, "iteration", {"label": np.full(50, b), "objective": np.arange(50.0)})


@pytest.mark.slow
def test_concurrent_writers_and_readers(tmp_path):
    store = RunStore(tmp_path)
    runs = [store.create("{}") for _ in range(3)]
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(str(tmp_path), r, 40)) for r in runs]
    for p in procs:
        p.start()
    seen = 0
    while any(p.is_alive() for p in procs):
        seen = max(seen, len(store.records(runs[0], "iteration")[0]))
    for p in procs:
        p.join()
        assert p.exitcode == 0
    for r in runs:
        frame, last = store.records(r, "iteration")
        assert len(frame) == 40 * 50 and last == 40
        assert list(frame.groupby("label").size()) == [50] * 40
    assert store.records(runs[0], "iteration", after=39)[0]["label"].unique().tolist() == [39]


@pytest.fixture(scope="module")
def delicious():
    return load("delicious")


def _pid_gone(pid, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[-1][0] == "Z":
            return
        time.sleep(0.05)


@pytest.mark.slow
def test_kill_9_then_resume_gives_the_uninterrupted_model(tmp_path, delicious):
    store = RunStore(tmp_path)
    spec = RunSpec(dataset="delicious", params={"init": "zero"}, threads=1, name="killed")
    run = launch(spec, store)
    while len(store.pieces(run)) < 2:  # let it finish two blocks of labels, then kill it mid-block
        assert store.get(run)["status"] in ("queued", "running"), store.get(run)["error"]
        time.sleep(0.05)
    pid = store.get(run)["pid"]
    os.kill(pid, signal.SIGKILL)
    _pid_gone(pid)
    row = store.get(run)
    assert row["status"] == "interrupted"
    done_before = sum(len(p[0]) for p in store.pieces(run))
    assert 0 < done_before < 983
    resume(store, run)
    row = wait(store, run, timeout=300)
    assert row["status"] == "done", row["error"]
    labels, _ = store.records(run, "label")
    assert sorted(labels["label"]) == list(range(983))  # every label trained exactly once
    model = SparseModel.load(tmp_path / "runs" / run / "model")
    train, _ = delicious
    reference = fit_dismec(train.X, train.Y, DismecParams(init="zero"), threads=1)
    assert (model.weights != reference.weights).nnz == 0
    np.testing.assert_array_equal(model.bias_weights, reference.bias_weights)
    assert row["summary"]["p@1"] > 60


@pytest.mark.slow
def test_cancel_keeps_a_partial_model_and_cli_lists_it(tmp_path, capsys):
    store = RunStore(tmp_path)
    spec_file = tmp_path / "spec.json"
    assert main(["spec", "delicious", "--init", "zero", "--threads", "1", "--name", "to-cancel"]) == 0
    spec_file.write_text(capsys.readouterr().out)
    assert main(["launch", str(spec_file), "--home", str(tmp_path)]) == 0
    run = capsys.readouterr().out.strip()
    while not store.pieces(run):
        time.sleep(0.05)
    assert main(["cancel", run, "--home", str(tmp_path)]) == 0
    assert main(["wait", run, "--json", "--home", str(tmp_path), "--timeout", "120"]) == 0
    final = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert final["status"] == "cancelled" and 0 < final["labels_done"] < 983
    model = SparseModel.load(tmp_path / "runs" / run / "model")
    trained = np.unique(np.concatenate([p[0] for p in store.pieces(run)]))
    assert model.weights[trained].nnz > 0 and len(trained) == final["labels_done"]
    assert main(["runs", "--home", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["status"] == "cancelled" and listed[0]["name"] == "to-cancel"
    assert listed[0]["progress"] == f"{final['labels_done']}/983 labels" == f"{listed[0]['done']}/983 labels"
    assert main(["resume", run, "--home", str(tmp_path)]) == 0
    capsys.readouterr()
    assert wait(store, run, timeout=300)["status"] == "done"


@pytest.mark.slow
def test_a_multiclass_run_streams_diagnostics_cancels_and_restarts(tmp_path):
    store = RunStore(tmp_path)
    spec = RunSpec(dataset="bibtex", solver="memoir", params={"oracle": "random", "epochs": 200, "lam": 1e-4},
                   threads=1, name="memoir-random").validate()
    run = launch(spec, store)
    deadline = time.time() + 120
    while len(store.records(run, "iteration")[0]) < 3 and time.time() < deadline:
        time.sleep(0.1)
    records, _ = store.records(run, "iteration")
    assert len(records) >= 3 and {"oracle_recall", "margin_error", "violators", "accuracy"} <= set(records)
    store.request_cancel(run)
    final = wait(store, run, timeout=120)
    assert final["status"] == "cancelled" and 0 < final["done"] < final["total"]
    assert progress_text(store.get(run)) == f"{200 * final['done'] / final['total']:.1f}/200 epochs"
    partial = SparseModel.load(tmp_path / "runs" / run / "model")
    assert partial.solver == "memoir" and partial.weights.nnz > 0
    before = len(store.records(run, "iteration")[0])
    resume(store, run)  # a multiclass run starts again: its earlier records are dropped
    deadline = time.time() + 120
    while store.get(run)["status"] != "running" and time.time() < deadline:
        time.sleep(0.05)
    records, _ = store.records(run, "iteration")
    while len(records) < 1 and time.time() < deadline:
        time.sleep(0.05)
        records, _ = store.records(run, "iteration")
    # the earlier attempt's records are gone: each window appears once, from 0
    assert before >= 3 and records["iteration"].iloc[0] == 0 and records["iteration"].is_unique
    store.request_cancel(run)
    assert wait(store, run, timeout=120)["status"] == "cancelled"


def test_a_multiclass_run_asks_the_store_at_most_five_times_a_second(tmp_path):
    """A multiclass solver reports progress and asks whether to stop after every batch (LDGS's
    batch of 10 trains in under a millisecond; a store transaction takes 0.4 to 1.6 ms): for half a
    second of batches the store is written and asked every 0.2 s only; the last batch's progress is
    written at once, a cancel is seen within 0.2 s and then without asking again."""
    from xcviz.runs.worker import StoreCallbacks

    store = RunStore(tmp_path)
    run = store.create("{}")
    calls = {"update": 0, "cancel_requested": 0}
    for name in calls:
        method = getattr(store, name)

        def counted(*args, _method=method, _name=name, **kw):
            calls[_name] += 1
            return _method(*args, **kw)

        setattr(store, name, counted)
    callbacks = StoreCallbacks(store, run, interval=0.2)
    start, batches = time.monotonic(), 0
    while time.monotonic() - start < 0.5:
        batches += 1
        callbacks.progress(batches, 10**9)
        assert not callbacks.stop()
    assert batches > 100 and 2 <= calls["update"] <= 4 and 2 <= calls["cancel_requested"] <= 4, (batches, calls)
    assert 0 < store.get(run)["done"] <= batches and callbacks.latest == {"done": batches, "total": 10**9}
    callbacks.progress(10**9, 10**9)  # the last batch: written whatever the time
    assert store.get(run)["done"] == 10**9
    store.request_cancel(run)
    asked = time.monotonic()
    while not callbacks.stop():
        assert time.monotonic() - asked < 1.0
    assert time.monotonic() - asked <= 0.5
    before = calls["cancel_requested"]
    assert callbacks.stop() and callbacks.stop() and calls["cancel_requested"] == before


@pytest.mark.slow
def test_background_runs_yield_the_cpu_and_a_bad_niceness_fails_the_run(tmp_path, monkeypatch):
    """A worker lowers its priority below the launching process (the dashboard), by 10 unless
    XCVIZ_NICE says otherwise; a value that is not a number fails the run with a message."""
    store = RunStore(tmp_path)
    spec = RunSpec(dataset="delicious", params={"init": "zero"}, threads=1, name="nice").validate()
    run = launch(spec, store)
    pid = store.get(run)["pid"]
    deadline = time.time() + 60
    while store.get(run)["status"] == "queued" and time.time() < deadline:
        time.sleep(0.05)
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)
    store.request_cancel(run)
    wait(store, run, timeout=120)
    monkeypatch.setenv("XCVIZ_NICE", "low")
    failed = wait(store, launch(spec, store), timeout=60)
    assert failed["status"] == "failed" and "XCVIZ_NICE must be an integer niceness, got 'low'" in failed["error"]


def test_a_resume_says_when_a_multiclass_run_starts_again(tmp_path):
    from xcviz.runs.progress import restart_note

    store = RunStore(tmp_path)
    ldgs = store.create(RunSpec(dataset="bibtex", solver="ldgs").validate().to_json(), "bibtex-decomp")
    dismec = store.create(RunSpec(dataset="bibtex").validate().to_json(), "bibtex-zero")
    assert restart_note(store.get(ldgs)) == "bibtex-decomp starts again from its first epoch (ldgs keeps no checkpoint " \
                                        "to continue from)"
    assert restart_note(store.get(dismec)) == ""  # a one-vs-all run trains only the labels it lacks


@pytest.mark.slow
def test_a_bundled_training_set_with_your_own_test_file_runs_in_the_background(tmp_path):
    """`train bibtex --test FILE` worked, but its background run was refused as "bibtex: no such
    file" (the bundled name was taken for a path once a test file was given). The test file is
    fingerprinted and, from the page, confined like any other file of yours."""
    from xcviz.data.dataset import Dataset
    from xcviz.data.registry import bundled_files
    from xcviz.data.textio import write_xc
    from xcviz.runs.inputs import InputError, record

    _, bundled_test = load("bibtex")
    mine = tmp_path / "data" / "mine_test.txt"
    mine.parent.mkdir()
    write_xc(mine, Dataset(X=bundled_test.X[:100], Y=bundled_test.Y[:100]))
    spec = RunSpec(dataset="bibtex", test=str(mine), params={"init": "zero"}, threads=1,
                   name="own test")
    store = RunStore(tmp_path / "home")
    row = wait(store, launch(spec, store), timeout=240)
    assert row["status"] == "done", row["error"]
    assert row["summary"]["n_test"] == 100 and 0 < row["summary"]["p@1"] <= 100
    recorded = record(spec, [tmp_path / "data"])["files"]
    assert set(recorded) == {str(f) for f in bundled_files("bibtex")} | {str(mine)}
    with pytest.raises(InputError, match="outside the data folders"):
        record(spec, [tmp_path / "elsewhere"])
