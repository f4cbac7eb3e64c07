"""The run store is its user's alone: made 0700 (folder) and 0600 (runs.sqlite, a run's log.txt),
and a store another user owns, or that group or others may write, is refused by every way in.
A store planted in a shared folder (/tmp) with a trigger had sent the victim's run to the
planter's Dask scheduler, which runs code as the victim; and a store readable by all gave
every local user the runs' specs and stored weights."""
import json
import os
import sqlite3
import stat
import subprocess
import sys

import pytest

from xcviz.cli import main
from xcviz.runs.launcher import launch, wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import CLAIM_VARIABLE, RunStore, StoreError

OTHER = 12345  # another local user, as the auditor simulated one
SECRET = "SECRET-spec-7f3a"  # in a run's name: a refusal must not show what the store holds

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _store_with_a_run(home) -> tuple[RunStore, str]:
    store = RunStore(home)
    run = store.create(json.dumps({"dataset": "bibtex"}), SECRET)
    store.update(run, status="done")
    return store, run


def _refused(home, *phrases) -> str:
    """Opening the store at `home` is refused, by a command and by RunStore alike (the dashboard's
    and the worker's way in); returns the message."""
    for create in (True, False):
        with pytest.raises(StoreError) as caught:
            RunStore(home, create=create)
        message = str(caught.value)
        for phrase in phrases:
            assert phrase in message, message
        assert SECRET not in message
    return message


def _cli_refuses(capsys, home, run, *phrases) -> None:
    """Every command, the read-only ones included, refuses the store in one line (exit 2); `serve`
    before it listens, not in each page it serves."""
    for command in (["runs"], ["wait", run, "--timeout", "1"], ["cancel", run], ["resume", run], ["delete", run],
                    ["report", run, "-o", str(home.parent / "r.html")],
                    ["serve", "--address", "192.0.2.1", "--port", "9"]):  # a refusal, not "cannot listen"
        code = main([*command, "--home", str(home)])
        out, err = capsys.readouterr()
        assert code == 2 and SECRET not in out + err, (command, out, err)
        (line,) = err.strip().splitlines()
        for phrase in phrases:
            assert phrase in line, (command, line)
    assert not (home.parent / "r.html").exists()


def test_a_new_store_is_private_and_so_is_a_runs_log(tmp_path, monkeypatch):
    """Made 0700 / 0600 whatever the umask (it was 0755 / 0644: every local user read the specs
    and the weights); SQLite gives the -wal and -shm files the database's mode."""
    old = os.umask(0o002)
    try:
        store = RunStore(tmp_path / "made" / "home")
        keeper = store.hold()  # keeps the -wal and -shm files
        store.create(json.dumps({"dataset": "bibtex"}), "r")
        assert _mode(store.home) == 0o700 and _mode(store.path) == 0o600
        for suffix in ("-wal", "-shm"):
            assert _mode(f"{store.path}{suffix}") == 0o600
        keeper.close()
        monkeypatch.setenv("XCVIZ_NICE", "low")  # the worker fails at once: a launch without training
        spec = RunSpec(dataset="delicious", params={"init": "zero"}, threads=1, name="logged").validate()
        run = launch(spec, store)
        assert wait(store, run, timeout=60)["status"] == "failed"
        log = store.home / "runs" / run / "log.txt"
        assert log.exists() and _mode(log) == 0o600
        assert _mode(log.parent) == 0o700 and _mode(log.parent.parent) == 0o700
    finally:
        os.umask(old)


@as_root
@pytest.mark.parametrize("part", ["folder", "database"])
def test_a_store_owned_by_another_user_is_refused_by_every_command(tmp_path, capsys, part):
    home = tmp_path / "home"
    store, run = _store_with_a_run(home)
    os.chown(home if part == "folder" else store.path, OTHER, OTHER)
    where = str(home if part == "folder" else store.path)
    _refused(home, where, "belongs to another user", f"uid {OTHER}", "XCVIZ_HOME")
    _cli_refuses(capsys, home, run, where, "belongs to another user")
    os.chown(home, 0, 0)
    os.chown(store.path, 0, 0)
    assert RunStore(home).get(run)["name"] == SECRET  # the refusal left it as it was


@pytest.mark.parametrize("part, mode", [("folder", 0o777), ("folder", 0o775), ("folder", 0o757),
                                        ("database", 0o666), ("database", 0o664), ("database", 0o646)])
def test_a_store_others_may_write_is_refused(tmp_path, capsys, part, mode):
    home = tmp_path / "home"
    store, run = _store_with_a_run(home)
    target = home if part == "folder" else store.path
    os.chmod(target, mode)
    message = _refused(home, str(target), f"mode {mode:04o}", f"chmod go-w {target}")
    assert "written by its group or others" in message
    _cli_refuses(capsys, home, run, str(target), "group or others")
    assert _mode(target) == mode  # refused, not quietly changed: someone else may have written it
    os.chmod(target, mode & ~0o022)
    assert RunStore(home).get(run)["name"] == SECRET


@as_root
def test_a_link_to_another_users_store_or_made_by_another_user_is_refused(tmp_path, capsys):
    theirs = tmp_path / "theirs"
    _, run = _store_with_a_run(theirs)
    for path in (theirs, theirs / "runs.sqlite"):
        os.chown(path, OTHER, OTHER)
    link = tmp_path / "xcviz-runs"
    link.symlink_to(theirs)  # a link of this user's to a store of another's
    _refused(link, str(link), "belongs to another user")
    _cli_refuses(capsys, link, run, str(link), "belongs to another user")
    assert str(theirs) not in _refused(link)  # named as given, not where the link leads
    # a link another user made (in a shared folder they can point it anywhere, at any time), even
    # to a store of this user's
    mine = tmp_path / "mine"
    _store_with_a_run(mine)
    planted = tmp_path / "planted"
    planted.symlink_to(mine)
    os.lchown(planted, OTHER, OTHER)
    _refused(planted, str(planted), "a link made by another user")
    # a link this user made to a store of this user's is theirs to make
    own = tmp_path / "own"
    own.symlink_to(mine)
    assert RunStore(own, create=False).list()[0]["name"] == SECRET


def test_an_older_store_others_may_read_is_tightened_and_opens(tmp_path, capsys):
    """A store made by an older xcviz (0755 / 0644 under the usual umask) is this user's and
    nobody else could write it: it keeps working, and others lose the right to read it."""
    home = tmp_path / "home"
    store, run = _store_with_a_run(home)
    keeper = store.hold()
    store.update(run, error="x")  # a write while held: the -wal and -shm files stay
    os.chmod(home, 0o755)
    for path in (store.path, f"{store.path}-wal", f"{store.path}-shm"):
        os.chmod(path, 0o644)
    assert main(["runs", "--home", str(home)]) == 0
    assert SECRET in capsys.readouterr().out
    assert _mode(home) == 0o700
    for path in (store.path, f"{store.path}-wal", f"{store.path}-shm"):
        assert _mode(path) == 0o600, path
    keeper.close()
    os.chmod(home, 0o750)
    os.chmod(store.path, 0o640)
    assert RunStore(home, create=False).get(run)["name"] == SECRET
    assert (_mode(home), _mode(store.path)) == (0o700, 0o600)


@pytest.mark.slow
@as_root
def test_a_planted_store_with_a_trigger_never_gets_a_run(tmp_path, monkeypatch, capsys):
    """The auditor's attack: in a folder everyone may write (sticky, like /tmp) another user makes
    xcviz-runs (0777) and runs.sqlite (0666) with a trigger that points every new run at their Dask
    scheduler. `xcviz launch` there, and the worker of a run already in it, refuse the store before
    anything is written: the trigger never fires."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    home = shared / "xcviz-runs"
    store, _ = _store_with_a_run(home)
    # a run queued for a worker (whose spec already names a scheduler: the worker must refuse the store before it)
    planted_run = store.create(json.dumps({"dataset": "bibtex", "cluster": "tcp://127.0.0.1:9"}), "queued")
    token = store.token(planted_run)
    with sqlite3.connect(store.path) as db:
        db.executescript("""
            CREATE TABLE fired (at REAL);
            CREATE TRIGGER redirect AFTER INSERT ON runs BEGIN
                UPDATE runs SET spec = json_set(NEW.spec, '$.cluster', 'tcp://127.0.0.1:9') WHERE id = NEW.id;
                INSERT INTO fired VALUES (julianday('now'));
            END;
            CREATE TRIGGER redirect_update AFTER UPDATE ON runs BEGIN
                INSERT INTO fired VALUES (julianday('now'));
            END;""")
    for path in (home, store.path):
        os.chown(path, OTHER, OTHER)
    os.chmod(home, 0o777)
    os.chmod(store.path, 0o666)
    (shared / "v.json").write_text(RunSpec(dataset="delicious", params={"init": "zero"}, threads=1,
                                           name="victim").validate().to_json())
    monkeypatch.chdir(shared)
    monkeypatch.delenv("XCVIZ_HOME", raising=False)
    assert main(["launch", "v.json"]) == 2  # the default store: ./xcviz-runs
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "xcviz-runs" in line and "belongs to another user" in line and "Dask scheduler" in line
    worker = subprocess.run([sys.executable, "-m", "xcviz.runs.worker", str(home), planted_run],
                            env={**os.environ, CLAIM_VARIABLE: token}, capture_output=True, text=True, timeout=120)
    assert worker.returncode == 1 and "belongs to another user" in worker.stderr, worker.stderr
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM fired").fetchone()[0] == 0  # no INSERT, no UPDATE
        assert sorted(r[0] for r in db.execute("SELECT name FROM runs")) == sorted([SECRET, "queued"])
        assert db.execute("SELECT status, claim FROM runs WHERE id = ?", (planted_run,)).fetchone() == ("queued", token)
    assert not (home / "runs").exists()  # no run folder, no log, no worker


def test_a_folder_named_as_the_store_keeps_its_mode_unless_it_is_a_store(tmp_path):
    """`--home ~` or `--home ~/project` had made that folder 0700: only a store's own folder is
    tightened (one xcviz made, or one holding runs.sqlite); its database and run folders are private
    either way."""
    project = tmp_path / "project"
    project.mkdir()
    project.chmod(0o755)
    (project / "notes.txt").write_text("mine")
    store, run = _store_with_a_run(project)
    assert _mode(project) == 0o755 and _mode(store.path) == 0o600 and _mode(store.run_dir(run)) == 0o700


def test_a_store_in_a_folder_anyone_may_write_is_refused_and_a_swapped_store_too(tmp_path):
    """A store's folder checked alone could be renamed away by whoever may write the folder above it
    and replaced by theirs; an open store (a page, a worker, for hours) re-checks that its folder and
    database are still the ones it checked."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit: anyone may rename what is in it
    with pytest.raises(StoreError, match="anyone may write"):
        RunStore(shared / "xcviz-runs")
    assert not (shared / "xcviz-runs").exists()  # nothing made there
    shared.chmod(0o1777)  # sticky, as /tmp: only an entry's owner may rename it
    store, run = _store_with_a_run(shared / "xcviz-runs")
    os.rename(shared / "xcviz-runs", shared / "moved")
    _store_with_a_run(shared / "xcviz-runs")  # someone's store in its place (ours here: root cannot be denied)
    with pytest.raises(StoreError, match="replaced since it was opened"):
        store.list()
    assert RunStore(shared / "moved").get(run)["name"] == SECRET
