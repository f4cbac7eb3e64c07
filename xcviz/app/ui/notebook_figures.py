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
from bokeh.models import NumeralTickFormatter
import numpy as np
import pandas as pd

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


# a log axis in ms labelled at 1-2-5 steps (Bokeh's own log ticks label only some decades' ends)
MS_TICKS = [m * 10.0 ** e for e in range(-1, 5) for m in (1, 2, 5)]


def scaling_loglog(table: pd.DataFrame, x: str, title: str) -> tuple[dict[str, float], hv.Overlay]:
    """Per-label time against `x` (N or K) on log-log axes, one curve per solver with its least-squares
    slope in log-log in the legend. `table`: columns "solver", `x` and "ms per label", one row per
    solver and value of x. Returns (slope per solver, the plot); notebook 08 and docs/scaling_figure.py
    (the README's figure, from make bench's measurements) draw with it."""
    slope = {s: float(np.polyfit(np.log(g[x]), np.log(g["ms per label"]), 1)[0]) for s, g in table.groupby("solver")}
    plot = hv.Overlay([hv.Curve(g, x, "ms per label", label=f"{s} (slope {slope[s]:.2f})")
                       * hv.Scatter(g, x, "ms per label").opts(size=7) for s, g in table.groupby("solver")])
    return slope, plot.opts(hv.opts.Curve(xformatter=NumeralTickFormatter(format="0,0")),
                            hv.opts.Overlay(logx=True, logy=True, width=520, height=340, legend_position="bottom",
                                            padding=0.1, yticks=MS_TICKS, title=title,
                                            xticks=sorted(float(v) for v in table[x].unique())))  # at the measured values
