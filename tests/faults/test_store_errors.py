"""A missing, damaged, vanished or read-only run store: one clear line from the CLI (exit 2), an
alert in the page, never a traceback, never a new empty store made under a running run, and a
read-only store still listed."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from bokeh.document import Document

from xcviz.cli import main
from xcviz.runs.launcher import launch
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.app.dashboard import Dashboard
from xcviz._util.text import markdown_text


def _one_line(result, *phrases):
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("xcviz: error: ")
    for phrase in phrases:
        assert phrase in line, line


def _in_process(capsys, *args):
    """`xcviz ARGS` in this process (the same code path, without a process start per command)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_store_gives_one_line(tmp_path, xcviz_cli, capsys, damage):
    home = tmp_path / "home"
    store = RunStore(home)
    run = store.create(json.dumps({"dataset": "bibtex"}), "r")
    store.update(run, status="done")
    data = store.path.read_bytes()
    store.path.write_bytes(b"this is not a database" * 100 if damage == "garbage" else data[:1000])
    _one_line(xcviz_cli("runs", "--home", home), str(store.path))
    for command in (["wait", run], ["resume", run], ["cancel", run], ["report", run, "-o", tmp_path / "r.html"]):
        _one_line(_in_process(capsys, *command, "--home", home), str(store.path))


def test_a_missing_store_is_reported_not_created(tmp_path, capsys):
    home = tmp_path / "nowhere"
    for command in (["runs"], ["wait", "r1"], ["resume", "r1"], ["cancel", "r1"]):
        _one_line(_in_process(capsys, *command, "--home", home), "no run store")
    assert not home.exists()


@pytest.mark.slow
def test_a_store_deleted_under_a_running_run_is_not_recreated(tmp_path):
    home = tmp_path / "home"
    store = RunStore(home)
    run = launch(RunSpec(dataset="delicious", params={"init": "zero"}, threads=1, name="orphaned"), store)
    while not store.pieces(run):
        assert store.get(run)["status"] in ("queued", "running")
        time.sleep(0.05)
    pid = store.get(run)["pid"]
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
    deadline = time.monotonic() + 120
    while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split(") ")[-1][0] != "Z":
        assert time.monotonic() < deadline, "the worker did not stop without its store"
        time.sleep(0.1)
    assert not store.path.exists()  # no empty store silently made where the run was
    assert "run store" in (home / "runs" / run / "log.txt").read_text()


def _without_root_powers(*args):
    """`xcviz ARGS` in a process that permission bits bind: as root, without the capabilities that
    override them (root writes through any mode bits otherwise)."""
    command = [sys.executable, "-m", "xcviz.cli", *map(str, args)]
    if os.geteuid() == 0:
        command = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--",
                   *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_a_read_only_store_can_be_listed(tmp_path):
    home = tmp_path / "home"
    store = RunStore(home)
    run = store.create(json.dumps({"dataset": "bibtex"}), "listed")
    store.update(run, status="done", summary={"p@1": 63.5})
    queued = store.create(json.dumps({"dataset": "bibtex"}), "queued")  # a cancel of it must write
    os.chmod(home, 0o555)
    os.chmod(store.path, 0o444)
    try:
        result = _without_root_powers("runs", "--home", home, "--json")
        assert result.returncode == 0, result.stderr[-2000:]
        rows = {r["name"]: r for r in json.loads(result.stdout)}
        assert rows["listed"]["status"] == "done" and rows["listed"]["p@1"] == 63.5
        ended = _without_root_powers("cancel", run, "--home", home)  # nothing to write: read, and said
        assert ended.returncode == 0 and ended.stdout.strip() == f"{run} is already done", ended.stderr
        _one_line(_without_root_powers("cancel", queued, "--home", home), "read-only")
    finally:
        os.chmod(home, 0o755)


@pytest.mark.slow
def test_the_page_shows_an_alert_when_the_store_breaks(tmp_path):
    store = RunStore(tmp_path / "home")
    store.create(json.dumps({"dataset": "bibtex"}), "shown")
    dashboard = Dashboard(store)
    dashboard.view().get_root(Document())
    assert not dashboard.store_alert.visible
    store.path.write_bytes(b"not a database" * 100)
    dashboard.refresh()  # the periodic refresh: no exception, an alert
    assert dashboard.store_alert.visible and markdown_text(store.path) in dashboard.store_alert.object


@pytest.mark.parametrize("damage", ["empty", "cut", "cut-on-a-page"])
def test_an_empty_or_cut_short_store_is_refused_alike_by_every_command(tmp_path, xcviz_cli, capsys, damage):
    """A 0-byte store read as an empty one without a word, and one cut to half its size mid-run
    listed its run while `wait` and `resume` said "no run": every command now refuses both in the
    same line, naming the store; a cut on a page boundary is found when the run goes missing."""
    import numpy as np

    from xcviz.runs.store import SqliteSink

    home = tmp_path / "home"
    store = RunStore(home)
    held = store.hold()  # a running run's connection: its writes go to the write-ahead log
    run = store.create(json.dumps({"dataset": "bibtex"}), "r")
    for _ in range(5):
        SqliteSink(store, run).write("iteration", {"label": np.arange(2000), "iteration": np.zeros(2000, int),
                                                   "elapsed": np.zeros(2000), "objective": np.ones(2000)})
    store.update(run, status="running")
    held.close()  # the last connection: the log goes into the file, so that the cut loses what it cuts
    data = store.path.read_bytes()
    keep = {"empty": 0, "cut": len(data) // 2 + 100, "cut-on-a-page": len(data) // 8192 * 4096}[damage]
    store.path.write_bytes(data[:keep])
    for log in ("-wal", "-shm"):
        Path(f"{store.path}{log}").unlink(missing_ok=True)
    os.utime(store.path, (1, 1))
    phrase = {"empty": "empty file (0 bytes)", "cut": "truncated", "cut-on-a-page": "damaged or truncated"}[damage]
    if damage != "cut-on-a-page":  # its pages are whole: what is left lists, and the missing run is the sign
        _one_line(xcviz_cli("runs", "--home", home), str(store.path), phrase)
    for command in (["wait", run, "--timeout", "30"], ["resume", run], ["cancel", run]):
        _one_line(_in_process(capsys, *command, "--home", home), str(store.path), phrase)
