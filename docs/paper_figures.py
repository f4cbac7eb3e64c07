"""Render the paper-reproduction notebooks' figures into docs/ as PNGs.

Runs notebooks/07-msi-paper-figures, 08-ppdsparse-paper and 09-memoir-paper top to bottom with
$XCVIZ_FIGURES pointing at a temporary folder (each notebook's `figure(plot, name)`, from
xcviz.app.ui.notebook_figures, saves its plots there as standalone Bokeh pages), then photographs
every page with headless Chromium as docs/NAME.png. Full sizes unless CI is set.
Run: .venv/bin/python docs/paper_figures.py [07 08 09] (default: all three).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from playwright.sync_api import sync_playwright

from make_figures import CHROMIUM_ARGS

from xcviz.app.ui.notebook_figures import FIGURES_ENV

DOCS = Path(__file__).resolve().parent
NOTEBOOKS = {"07": "07-msi-paper-figures.ipynb", "08": "08-ppdsparse-paper.ipynb", "09": "09-memoir-paper.ipynb"}


def run_notebook(name: str, folder: Path) -> None:
    """Execute one notebook in a fresh kernel that saves its figures as HTML into `folder`."""
    path = DOCS.parent / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    os.environ[FIGURES_ENV] = str(folder)  # the kernel inherits this process's environment
    NotebookClient(nb, timeout=3600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()


def photograph(pages: list[Path]) -> None:
    """One PNG in docs/ per saved page, named after it."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1000, "height": 400})
        for page in pages:
            tab.goto(page.as_uri())
            tab.wait_for_selector("canvas")
            tab.wait_for_timeout(1000)
            out = DOCS / f"{page.stem}.png"
            tab.screenshot(path=str(out), full_page=True)
            print(f"wrote {out}")
        browser.close()


def main() -> None:
    wanted = sys.argv[1:] or list(NOTEBOOKS)
    with tempfile.TemporaryDirectory() as tmp:
        for key in wanted:
            run_notebook(NOTEBOOKS[key], Path(tmp))
        photograph(sorted(Path(tmp).glob("*.html")))


if __name__ == "__main__":
    main()
