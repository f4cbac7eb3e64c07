"""Confinement: a run launched from the page reads only files inside the server's data folders
(training and test file alike, links followed), checked at launch and again at resume; and no
error, in the page or the CLI, shows what a file holds."""
import json

import pytest
from bokeh.document import Document

from xcviz.runs.launcher import wait
from xcviz.runs.store import RunStore
from xcviz.app.dashboard import Dashboard
from xcviz._util.text import markdown_text

SECRET = "root:x:0:0:SECRET-7f3a:/root:/bin/bash"


def _secret_file(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "passwd"
    secret.write_text(f"{SECRET}\ndaemon:x:1:1:SECRET-daemon:/usr/sbin:/usr/sbin/nologin\n")
    return secret


def _page(tmp_path, data):
    dashboard = Dashboard(RunStore(tmp_path / "home"), data_dirs=[data])
    dashboard.view().get_root(Document())
    return dashboard


def _launch(dashboard, train):
    dashboard.launcher.dataset.value = str(train)
    dashboard.launcher.variants.value = ["zero"]
    dashboard._launch()


def test_a_test_file_linked_outside_the_data_folders_is_refused(tmp_path, small_xc):
    train, test = small_xc
    test.unlink()
    test.symlink_to(_secret_file(tmp_path))  # data/small_test.txt -> outside/passwd
    dashboard = _page(tmp_path, train.parent)
    _launch(dashboard, train)
    assert dashboard.launch_message.visible
    message = dashboard.launch_message.object
    assert markdown_text("small_test.txt") in message and "outside the data folders" in message
    assert "SECRET" not in message and "passwd" not in message  # neither contents nor the link's target
    assert dashboard.store.list() == []  # nothing launched, nothing read


@pytest.mark.slow
def test_resume_checks_the_folders_again(tmp_path, small_xc, xcviz_cli):
    """A run launched inside the folders whose file is later replaced by a link leading out (same
    bytes, so only confinement can tell) is not resumed."""
    train, test = small_xc
    dashboard = _page(tmp_path, train.parent)
    _launch(dashboard, train)
    assert not dashboard.launch_message.visible, dashboard.launch_message.object
    (run,) = dashboard.watched
    assert wait(dashboard.store, run, timeout=240)["status"] == "done"
    dashboard.store.update(run, status="cancelled")
    copy = tmp_path / "elsewhere_test.txt"
    copy.write_bytes(test.read_bytes())
    test.unlink()
    test.symlink_to(copy)
    result = xcviz_cli("resume", run, "--home", tmp_path / "home")
    assert result.returncode == 2 and "small_test.txt: outside the data folders" in result.stderr, result.stderr
    assert dashboard.store.get(run)["status"] == "cancelled"


@pytest.mark.slow
def test_no_error_shows_file_contents(tmp_path, xcviz_cli):
    """The CLI may launch any file of the local user's, but what it reports never echoes the file:
    not a header, not a token of a data line."""
    secret = _secret_file(tmp_path)
    body = tmp_path / "leaky_train.txt"
    body.write_text("2 5 4\n0 1:1\n1 2:SECRET-value\n")
    spec = tmp_path / "spec.json"
    home = tmp_path / "home"
    for path in (secret, body):
        spec.write_text(json.dumps({"dataset": str(path), "threads": 1}))
        launched = xcviz_cli("launch", spec, "--home", home)
        assert launched.returncode == 0, launched.stderr
        row = wait(RunStore(home), launched.stdout.strip(), timeout=240)
        assert row["status"] == "failed" and str(path) in row["error"] and "SECRET" not in row["error"]
        trained = xcviz_cli("train", path)
        assert trained.returncode == 2 and str(path) in trained.stderr and "SECRET" not in trained.stderr
    listed = xcviz_cli("runs", "--home", home, "--json")
    assert "SECRET" not in listed.stdout and len(json.loads(listed.stdout)) == 2
