"""What a hostile file or store may not do: freeze the server or a command with a named pipe where a
file should be, reach outside the store through a run id, take over commands with a name shaped like
another run's id, or push enormous or terminal-controlling text into an error line."""
import json
import os
import sqlite3
import threading

import pytest

from xcviz.cli import ERROR_CHARS, main
from xcviz.data.errors import DatasetFormatError
from xcviz.data.shards import MANIFEST, open_shards
from xcviz.data.textio import open_text
from xcviz.models.sparse import ModelFormatError, SparseModel
from xcviz.runs.inputs import InputError, fingerprint
from xcviz.runs.launcher import resume, wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore, StoreError

from tests.security.test_confinement import _launch, _page


def _returns_at_once(fn, fifo, seconds=10.0):
    """fn() run in a thread must end (return or raise) within `seconds`; its exception is returned.
    If it hangs on the pipe, a writer is opened to release it before the test fails."""
    outcome = []

    def call():
        try:
            fn()
            outcome.append(None)
        except Exception as exc:  # noqa: BLE001 - the caller checks which
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the blocked open() returns
        thread.join(seconds)
        pytest.fail(f"{fn} blocked on a named pipe")
    return outcome[0]


def test_a_named_pipe_is_refused_at_once_wherever_a_file_is_read(tmp_path):
    """open() of a FIFO waits for a writer: a data file, model file or shard manifest swapped for
    one froze the command or the server thread that read it."""
    fifo = tmp_path / "pipe_train.txt"
    os.mkfifo(fifo)
    error = _returns_at_once(lambda: open_text(fifo), fifo)
    assert isinstance(error, DatasetFormatError) and "not a regular file" in str(error)
    error = _returns_at_once(lambda: fingerprint(fifo), fifo)
    assert isinstance(error, InputError) and "not a regular file" in str(error)
    model = tmp_path / "model"
    model.mkdir()
    os.mkfifo(model / "model.json")
    error = _returns_at_once(lambda: SparseModel.load(model), model / "model.json")
    assert isinstance(error, ModelFormatError)
    shards = tmp_path / "shards"
    shards.mkdir()
    os.mkfifo(shards / MANIFEST)
    error = _returns_at_once(lambda: open_shards(shards), shards / MANIFEST)
    assert isinstance(error, DatasetFormatError) and "not a regular file" in str(error)


@pytest.mark.slow
def test_resume_from_the_page_of_a_run_whose_data_became_a_pipe_is_refused_at_once(tmp_path, small_xc):
    """The page's Resume checks the inputs on the server's thread: a pipe there froze every page."""
    train, _ = small_xc
    dashboard = _page(tmp_path, train.parent)
    _launch(dashboard, train)
    (run,) = dashboard.watched
    assert wait(dashboard.store, run, timeout=240)["status"] == "done"
    dashboard.store.update(run, status="cancelled")
    train.unlink()
    os.mkfifo(train)
    error = _returns_at_once(lambda: resume(dashboard.store, run), train)
    assert isinstance(error, InputError) and "not a regular file" in str(error)
    assert dashboard.store.get(run)["status"] == "cancelled"


def _tampered_store(tmp_path):
    """A store whose only run's id was edited to lead out of it, and the folder it leads to."""
    store = RunStore(tmp_path / "home")
    run = store.create(RunSpec(dataset="bibtex").to_json(), name="shared-run")
    store.update(run, status="failed")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET id = '../../victim' WHERE id = ?", (run,))
    return store, victim


def test_a_run_id_leading_out_of_the_store_is_refused_before_anything_is_deleted(tmp_path, capsys):
    store, victim = _tampered_store(tmp_path)
    with pytest.raises(StoreError, match="not one xcviz makes"):
        store.delete("../../victim")
    with pytest.raises(StoreError, match="not one xcviz makes"):
        store.run_dir("../../victim")
    assert main(["delete", "shared-run", "--home", str(tmp_path / "home")]) == 2
    assert "not one xcviz makes" in capsys.readouterr().err
    assert (victim / "keep.txt").read_text() == "mine" and store.find("shared-run") == "../../victim"


def test_a_name_shaped_like_another_runs_id_cannot_take_its_commands(tmp_path):
    store = RunStore(tmp_path / "home")
    real = store.create(RunSpec(dataset="bibtex").to_json(), name="real")
    decoy = store.create(RunSpec(dataset="bibtex").to_json(), name=real[:-2])
    with pytest.raises(StoreError, match="give the whole id"):
        store.find(real[:-2])
    assert store.find(real) == real and store.find(decoy) == decoy and store.find("real") == real
    short = [store.create(RunSpec(dataset="bibtex").to_json(), name=name) for name in ("2", "2026", "20261127")]
    assert [store.find(name) for name in ("2", "2026", "20261127")] == short  # not shaped like an id: by name


@pytest.mark.parametrize("digits", [4_000, 5_000])
@pytest.mark.parametrize("where", ["label", "feature", "header"])
def test_an_enormous_number_in_a_data_file_is_refused_by_its_length_in_a_short_line(tmp_path, capsys, digits, where):
    """Its digits were echoed into the error (4,000 of them), and past Python's 4,300-digit limit
    the error named neither file nor line."""
    big = "9" * digits
    lines = {"label": f"3 5 2\n{big} 1:1\n0 2:1\n1 3:1\n", "feature": f"3 5 2\n0 {big}:1\n0 2:1\n1 3:1\n",
             "header": f"3 {big} 2\n0 1:1\n0 2:1\n1 3:1\n"}[where]
    path = tmp_path / "big_train.txt"
    path.write_text(lines)
    assert main(["train", str(path), "--threads", "1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(path) in line and f"{digits} digits" in line and "999999" not in line and len(line) < 300, line


def test_leading_zeros_do_not_make_an_index_too_large(tmp_path, capsys):
    """The fast path reads 00000000000000000001 as 1; the diagnosis of a line bad elsewhere must too."""
    path = tmp_path / "zeros_train.txt"
    path.write_text("3 5 2\n0 00000000000000000001:1 1:nan\n0 2:1\n1 3:1\n")
    assert main(["train", str(path), "--threads", "1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "non-finite value for feature 1" in line and "too large" not in line, line


def test_error_lines_are_bounded_and_wait_escapes_what_a_run_carries(tmp_path, capsys):
    assert main(["train", "bibtex", "--set", "C=" + "x" * 100_000]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert len(line) < ERROR_CHARS + 100 and "characters left out" in line
    store = RunStore(tmp_path / "home")
    run = store.create(RunSpec(dataset="bibtex").to_json(), name="n")
    store.update(run, status="failed", error="boom \x1b[2J\x1b]0;PWNED\x07")
    assert main(["wait", run, "--home", str(tmp_path / "home")]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2J" in out
    assert main(["wait", run, "--home", str(tmp_path / "home"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"].startswith("boom \x1b")  # JSON escapes it itself
