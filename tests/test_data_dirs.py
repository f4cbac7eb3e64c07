"""XCVIZ_DATA_DIRS means the same for every entry point (issue #40: only a bare `panel serve
apps/dashboard.py` read it; `xcviz serve` and `make dashboard` ignored it)."""
from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path

import xcviz.app.server as server
from xcviz.cli import main
from xcviz.data.folders import data_dirs, find_training_file

ROOT = Path(__file__).resolve().parents[1]


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "mine_train.txt").write_text("2 3 2\n0 0:1 1:0.5\n1 2:1\n")
    return folder


def test_folders_from_arguments_then_the_variable(tmp_path):
    env = {"XCVIZ_DATA_DIRS": os.pathsep.join(["/a", "", "/b", "/a"])}
    assert data_dirs(["/c", "/a"], env) == ["/c", "/a", "/b"]
    assert data_dirs((), {}) == []
    folder = _folder(tmp_path, "data")
    assert find_training_file("mine", [str(folder)]) == str(folder / "mine_train.txt")
    assert find_training_file("../data/mine_train.txt", [str(folder)]) is None  # never leaves the folders
    assert find_training_file("nothing", [str(folder)]) is None


def test_xcviz_serve_and_apps_dashboard_offer_the_variables_folders(tmp_path, monkeypatch):
    given, env = _folder(tmp_path, "given"), _folder(tmp_path, "env")
    monkeypatch.setenv("XCVIZ_DATA_DIRS", str(env))
    served = []
    monkeypatch.setattr(server, "serve", lambda **kw: served.append(kw["data_dirs"]))
    assert main(["serve", "--data-dir", str(given)]) == 0  # make dashboard runs this command
    assert served == [[str(given), str(env)]]
    monkeypatch.setattr(sys, "argv", ["apps/dashboard.py", "--port", "0"])
    try:
        runpy.run_path(str(ROOT / "apps" / "dashboard.py"), run_name="__main__")
    except SystemExit as stop:
        assert stop.code == 0
    assert served[-1] == [str(env)]
    monkeypatch.setenv("XCVIZ_DATA_DIRS", str(tmp_path / "missing"))
    assert main(["serve"]) == 2  # a folder that is not there is said, as for --data-dir


def test_cli_finds_a_name_in_the_data_folders(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XCVIZ_DATA_DIRS", str(_folder(tmp_path, "data")))
    assert main(["spec", "mine"]) == 0
    assert json.loads(capsys.readouterr().out)["dataset"] == str(tmp_path / "data" / "mine_train.txt")
