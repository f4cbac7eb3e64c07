"""Bokeh figures that the live views update in place.

Live plots are built once and then only fed new data: re-creating a figure with a few dozen
glyphs costs about 0.1 s on the server, twenty runs times eight fields would take seconds. Bokeh
cannot switch an axis between linear and log after the figure exists, so a log axis here is a
linear axis over log10 of the values, with tick labels printed as the values themselves.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np
import panel as pn
from bokeh.models import BasicTickFormatter, CustomJSTickFormatter, DataRange1d
from bokeh.plotting import figure

from .text import html_text

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
# tick labels of a log10 axis: the value 10**tick, short
_LOG_TICKS = """
const v = Math.pow(10, tick);
if (Math.abs(tick) >= 4) return v.toExponential(0);
const s = v.toPrecision(2);
return s.includes('.') && !s.includes('e') ? s.replace(/0+$/, '').replace(/\\.$/, '') : s;
"""


def locked(fn: Callable) -> Callable:
    """`fn` as a widget callback that may change Bokeh models: in a served page it runs on the next
    tick, under the document lock (Panel delivers button and table events without it); elsewhere
    (notebooks, tests) at once."""
    return lambda *args: pn.state.execute(partial(fn, *args), schedule=True)


def new_figure(title: str, x_label: str, y_label: str, *, width: int = 440, height: int = 260):
    """An empty figure whose ranges follow only the visible glyphs."""
    fig = figure(title=title, width=width, height=height, tools="pan,wheel_zoom,box_zoom,reset,save",
                 toolbar_location="right", x_range=DataRange1d(only_visible=True),
                 y_range=DataRange1d(only_visible=True))
    fig.xaxis.axis_label, fig.yaxis.axis_label = x_label, y_label
    fig.title.text_font_size = "11px"
    return fig


def log_formatter() -> CustomJSTickFormatter:
    return CustomJSTickFormatter(code=_LOG_TICKS)


def set_log(axis, log: bool, label: str) -> None:
    """Make `axis` read as a log axis (its data must then be log10 values) or a linear one."""
    wanted = CustomJSTickFormatter if log else BasicTickFormatter
    if not isinstance(axis.formatter, wanted):
        axis.formatter = log_formatter() if log else BasicTickFormatter()
    text = f"{label} (log scale)" if log else label
    if axis.axis_label != text:
        axis.axis_label = text


def scaled(values: np.ndarray, log: bool) -> np.ndarray:
    """Values as drawn: log10 of the positive ones (others are left out as NaN) on a log axis."""
    values = np.asarray(values, np.float64)
    if not log:
        return values
    out = np.full(values.shape, np.nan)
    positive = values > 0
    out[positive] = np.log10(values[positive])
    return out


def swatches(runs: dict[str, tuple[str, str]]) -> str:
    """HTML key of run colours: run id -> (name, colour); names escaped."""
    items = "".join(f'<span style="margin-right:14px;white-space:nowrap"><span style="display:inline-block;'
                    f'width:12px;height:12px;background:{color};margin-right:4px;vertical-align:middle"></span>'
                    f"{html_text(name)}</span>" for name, color in runs.values())
    return f'<div style="font-size:13px">{items}</div>'
