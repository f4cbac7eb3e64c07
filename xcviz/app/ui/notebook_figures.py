"""Show a notebook's figure and, on request, keep it for the docs.

The paper-reproduction notebooks (07-09) end every figure with `figure(plot, name)`: in a notebook
it simply shows the plot; when the environment variable named by FIGURES_ENV points at a folder
(docs/paper_figures.py sets it for the kernels it runs), the plot is also saved there as a
standalone Bokeh page NAME.html, which that script photographs into docs/NAME.png. One helper for
every notebook, so the name rule and the page format are the same everywhere.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import holoviews as hv

FIGURES_ENV = "XCVIZ_FIGURES"
# a file name without a folder: letters, digits, '-', '_' and '.', never starting with '.'
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def figure(plot: hv.core.Dimensioned, name: str) -> hv.core.Dimensioned:
    """Return `plot` (so a notebook cell shows it); when $XCVIZ_FIGURES names a folder, also save
    it there as NAME.html (Bokeh, resources inline)."""
    if not _NAME.fullmatch(name):
        raise ValueError("a figure name is 1-100 letters, digits, '-', '_' or '.', not starting with '.'")
    folder = os.environ.get(FIGURES_ENV)
    if folder:
        hv.save(plot, Path(folder) / f"{name}.html", backend="bokeh", resources="inline")
    return plot
