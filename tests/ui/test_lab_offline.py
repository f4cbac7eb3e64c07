"""A RunView in JupyterLab with no internet: the page may reach only localhost, and the live plot
still draws and grows while a run trains (issue #40: Panel and Bokeh loaded their JavaScript from a
CDN, so the quickstart's view stayed blank offline; `notebook_extension()` inlines them). It grows
because `RunView.follow` pushes each tick's changes to the notebook (`pn.io.push_notebook`): a
notebook, unlike a served page, sends changes to Bokeh models only when asked."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

from xcviz.runs.store import RunStore

from .browser import ARTIFACTS, browser_page
from .conftest import free_port

CELLS = [
    "from pathlib import Path\n"
    "from xcviz.runs.launcher import launch\nfrom xcviz.runs.spec import RunSpec\n"
    "from xcviz.runs.store import RunStore\nfrom xcviz.app.ui.run_view import RunView, notebook_extension\n"
    "notebook_extension()",
    "store = RunStore(Path({home!r}))\n"
    # logistic at eps 1e-4: about 15 s on one thread, so that the view draws before the run ends (at the
    # defaults, 6 s, a CI run finished before the per-label scatter first drew and never grew)
    "run = launch(RunSpec(dataset='delicious', params={{'init': 'zero', 'loss': 'logistic', 'eps': 1e-4}}, "
    "threads=1, name='offline'), store)",
    "view = RunView(store)\nview.follow([run])\nview.panel()",
]
# rows of the page's sources that hold a column: 'n_pos', the per-label scatter (a point per label
# done, growing block by block); 'xv', the band figures' hover points
ROWS = """(column) => { let n = 0;
  for (const doc of (window.Bokeh?.documents ?? []))
    for (const m of doc.all_models)
      if (m.type === 'ColumnDataSource' && m.columns().includes(column)) n += m.get_length() ?? 0;
  return n; }"""


def _lab(folder: Path, runtime: str, log):
    """JupyterLab on a free loopback port over `folder`, no token, its state inside `folder` but its
    kernels' sockets in `runtime` (a Unix socket's path may not exceed 107 characters)."""
    port = free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": runtime, "JUPYTER_CONFIG_DIR": str(folder / ".config"),
           "JUPYTERLAB_WORKSPACES_DIR": str(folder / ".workspaces")}
    proc = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                             "--IdentityProvider.token=", "--ServerApp.password=", "--KernelManager.transport=ipc",
                             "--LabApp.news_url=", "--allow-root", f"--ServerApp.root_dir={folder}"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


@pytest.mark.browser
@pytest.mark.slow
def test_run_view_draws_and_grows_in_jupyterlab_offline(tmp_path):
    home = tmp_path / "home"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c.format(home=str(home))) for c in CELLS],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nbformat.write(nb, tmp_path / "offline.ipynb")
    with (tmp_path / "lab.log").open("ab") as log:
        runtime = tempfile.mkdtemp(prefix="xl")
        proc, url = _lab(tmp_path, runtime, log)
    blocked: list[str] = []

    def local_only(route):
        if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost"):
            return route.continue_()
        blocked.append(route.request.url)
        return route.abort("internetdisconnected")

    try:
        with browser_page(1280, 900) as (page, _errors):
            page.context.route("**/*", local_only)
            deadline = time.monotonic() + 60
            while True:  # until the server answers
                try:
                    page.goto(f"{url}/lab/tree/offline.ipynb", timeout=5000)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            select = page.get_by_role("button", name="Select", exact=True)  # JupyterLab asks even when the
            try:                                                             # notebook names its kernel
                select.click(timeout=10_000)
            except Exception:
                pass
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            try:
                page.wait_for_selector(".jp-OutputArea-output canvas", state="attached", timeout=60_000)
            finally:
                page.screenshot(path=str(ARTIFACTS / "lab-offline.png"))
            page.wait_for_function(ROWS, arg="n_pos", timeout=60_000)  # the per-label scatter drew
            counts = [page.evaluate(ROWS, "n_pos")]
            deadline = time.monotonic() + 45
            while time.monotonic() < deadline and len(set(counts)) < 2:
                page.wait_for_timeout(1000)
                counts.append(page.evaluate(ROWS, "n_pos"))
            page.screenshot(path=str(ARTIFACTS / "lab-offline.png"), full_page=True)
            console = [e for e in _errors if "ERR_NAME_NOT_RESOLVED" not in e and "INTERNET_DISCONNECTED" not in e]
        # every script inline (Panel's component stylesheets still name cdn.holoviz.org: unstyled, not blank)
        assert not [u for u in blocked if urlparse(u).path.endswith(".js")], blocked[:5]
        assert len(set(counts)) >= 2, f"the view did not grow: {counts[-1]} labels drawn throughout"
        assert not console, console[:3]
    finally:
        store = RunStore(home, create=False) if (home / "runs.sqlite").exists() else None
        if store is not None:
            for row in store.list():
                store.request_cancel(row["id"])
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(runtime, ignore_errors=True)
