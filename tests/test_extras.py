"""xcviz with none of its extras installed: the core trains, and each command that needs an extra
stops with one line naming it. One fresh process runs the commands with the extras' packages made
unimportable (a meta-path finder that refuses them, as a missing package is refused)."""
import json
import subprocess
import sys

import pytest

from xcviz.data.synthetic import generate
from xcviz.data.textio import write_xc

EXTRAS = ("panel", "holoviews", "bokeh", "dask", "distributed", "cryptography", "hnswlib", "jupyterlab", "ipywidgets")
WITHOUT_EXTRAS = """
import contextlib, io, json, sys

class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Missing())
from xcviz.cli import main

results = []
for argv in COMMANDS:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    results.append([code, err.getvalue()])
print(json.dumps([results, sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)]))
"""


@pytest.fixture(scope="module")
def without_extras(tmp_path_factory):
    """(exit code, stderr) of each command keyed by its name, and the blocked modules that got imported."""
    folder = tmp_path_factory.mktemp("extras")
    write_xc(folder / "multilabel.txt", generate(300, 60, 40, avg_labels=2, avg_nnz=8, seed=0))
    write_xc(folder / "multiclass.txt", generate(300, 60, 40, multiclass=True, avg_nnz=8, seed=0))
    commands = {
        "train": ["train", str(folder / "multilabel.txt"), "--threads", "1", "--out", str(folder / "model")],
        "evaluate": ["evaluate", str(folder / "model"), str(folder / "multilabel.txt")],
        "serve": ["serve", "--port", "0"],
        "report": ["report", "some-run", "--home", str(folder / "home")],
        "cluster": ["train", str(folder / "multilabel.txt"), "--threads", "1", "--cluster", "local:1x1"],
        "hnsw": ["train", str(folder / "multiclass.txt"), "--solver", "memoir", "--oracle", "hnsw", "--epochs", "1",
                 "--threads", "1"],
    }
    script = f"BLOCKED = {set(EXTRAS)!r}\nCOMMANDS = {list(commands.values())!r}\n{WITHOUT_EXTRAS}"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results, imported = json.loads(proc.stdout.splitlines()[-1])
    return dict(zip(commands, results)), imported


def test_the_core_trains_and_evaluates_without_any_extra(without_extras):
    results, imported = without_extras
    assert results["train"] == [0, ""]
    assert results["evaluate"][0] == 0 and "error" not in results["evaluate"][1]  # a note on psp@k only
    assert imported == []


UI = ("xcviz: error: xcviz.app (the dashboard, xcviz serve and xcviz report) needs the 'ui' extra: "
      "pip install 'xcviz[ui]' (no module named 'panel')\n")


@pytest.mark.parametrize("command, message", [
    ("serve", UI),
    ("report", UI),
    ("cluster", "xcviz: error: cluster 'local:1x1' needs the 'dask' extra: pip install 'xcviz[dask]' "
                "(no module named 'distributed')\n"),
    ("hnsw", "xcviz: error: the HNSW oracle needs the 'hnsw' extra: pip install 'xcviz[hnsw]' "
             "(no module named 'hnswlib')\n"),
])
def test_a_command_that_needs_a_missing_extra_says_which_in_one_line(without_extras, command, message):
    results, _ = without_extras
    assert results[command] == [2, message]
