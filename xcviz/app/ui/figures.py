"""Bokeh figures that the live views update in place, their ranges and ticks (run colours: `colors`).

Live plots are built once and then only fed new data: re-creating a figure with a few dozen
glyphs costs about 0.1 s on the server, twenty runs times eight fields would take seconds. Bokeh
cannot switch an axis between linear and log after the figure exists, so a log axis here is a
linear axis over log10 of the values, with tick labels printed as the values themselves.

Ranges are set here from the data drawn (`fit`), not left to the browser: Bokeh's automatic
ranges go stale (NaN, or the previous runs' extent) when the runs or the x-axis change. New records
of the same view keep a range the user zoomed (`follow=False`); Reset then returns to the data. Ticks are
chosen here too: a log axis ticks at powers of ten (1-2-5 steps within one decade), and every axis
prints its numbers with one formatter, so no two ticks read the same.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Callable

import numpy as np
import panel as pn
from bokeh.models import CustomJS, CustomJSTickFormatter, FixedTicker, Range1d
from bokeh.plotting import figure

# one number format for every axis: up to 4 significant digits, and on an axis with a tick beyond
# 1e5 or below 1e-3, every tick as an exponent (1e-4, 2.5e-4, 1e-3: never "0.001" beside "1e-4")
_NUMBER = """
const values = ticks.map(value);
const exponent = values.some((x) => x !== 0 && (Math.abs(x) >= 1e5 || Math.abs(x) < 1e-3));
const v = value(tick);
if (v === 0) return '0';
if (exponent) return Number(v.toPrecision(3)).toExponential().replace('e+', 'e');
return String(Number(v.toPrecision(4)));
"""
LEGEND_COLUMNS = 3  # legend entries per row below a plot, at most (`legend_columns`: fewer for long names)
LEGEND_WIDTH = 320  # px of legend row under a figure a third of a 1440 px page wide (340 px)
LEGEND_CHAR, LEGEND_ENTRY = 5.5, 30  # px per character of its 10 px labels, and an entry's glyph and spacing
# after a change of a legend's data: if its entries changed, lay its figure out again once drawn; a
# hidden legend (the live grid's: it has one legend for all) takes no room, so nothing to lay out:
# a layout of one figure is a layout of the whole page in BokehJS, 40-60 ms with the dashboard's views
_RELAYOUT = """
if (!legend.visible) return;
const entries = JSON.stringify(legend.items.flatMap((item) => item.get_labels_list_from_label_prop()));
const seen = window.xcvizLegendEntries ??= new WeakMap();
if (seen.get(legend) === entries) return;
seen.set(legend, entries);
requestAnimationFrame(() => requestAnimationFrame(() => {
  for (const view of Bokeh.index.find(plot)) view.request_layout(true);
}));
"""
_LINEAR_TICKS = "const value = (t) => t;" + _NUMBER
_LOG_TICKS = "const value = (t) => Math.pow(10, t);" + _NUMBER


def locked(fn: Callable) -> Callable:
    """`fn` as a widget callback that may change Bokeh models: in a served page it runs on the next
    tick, under the document lock (Panel delivers button and table events without it); elsewhere
    (notebooks, tests) at once."""
    return lambda *args: pn.state.execute(partial(fn, *args), schedule=True)


def new_figure(title: str, x_label: str, y_label: str, *, width: int = 440, height: int = 260,
               x_range: Range1d | None = None, **kwargs):
    """An empty figure with fixed ranges that `fit` sets from the data it draws; `x_range`: one
    shared with other figures (panning or zooming one moves them all), else its own."""
    fig = figure(title=title, width=width, height=height, tools="pan,wheel_zoom,box_zoom,reset,save",
                 toolbar_location="right", x_range=x_range or new_range(),
                 y_range=new_range(), **kwargs)
    fig.xaxis.axis_label, fig.yaxis.axis_label = x_label, y_label
    for axis in (fig.xaxis[0], fig.yaxis[0]):  # updated in place: new models sent to a live page can go astray
        axis.formatter = CustomJSTickFormatter(code=_LINEAR_TICKS)
        axis.ticker = FixedTicker(ticks=[0, 0.5, 1], minor_ticks=[])
    fig.title.text_font_size = "11px"
    fig.toolbar.logo = None
    return fig


def new_range() -> Range1d:
    """A range that `fit` or `fit_range` sets from the data."""
    return Range1d(0, 1, reset_start=0, reset_end=1)


def style_legend(fig) -> None:
    """The figure's legend below its plot area, in rows of up to LEGEND_COLUMNS entries: outside the
    data, so it never hides a curve wherever the curves run or the user pans (W&B and TensorBoard
    keep theirs off the plot too). Call it once the glyphs that make legend entries are added.

    Bokeh sizes a legend outside the plot when it lays the figure out, and does not lay it out
    again when only the entries change (other runs in the data) while the figure keeps its size: a
    legend whose entries changed while its figure was hidden came back cut or with a gap. So the
    page lays the figure out again once the entries its data names have changed."""
    for legend in list(fig.legend):
        if any(item is legend for item in fig.center):
            fig.center = [item for item in fig.center if item is not legend]
            fig.add_layout(legend, "below")
        legend.update(orientation="horizontal", location="top_left", ncols=LEGEND_COLUMNS,
                      label_text_font_size="10px", glyph_height=10, glyph_width=14, spacing=8, padding=2,
                      margin=2, label_standoff=4, border_line_alpha=0, background_fill_alpha=0)
        relayout = CustomJS(args={"legend": legend, "plot": fig}, code=_RELAYOUT)
        sources = {id(r.data_source): r.data_source for item in legend.items for r in item.renderers}
        for source in sources.values():
            source.js_on_change("data", relayout)


def show_legends(fig) -> None:
    """Show a figure's legends (the live grid hides them for its one legend; a report, whose
    figures are read one by one, shows each figure's own)."""
    for legend in fig.legend:
        legend.visible = True


def legend_columns(labels) -> int:
    """Legend entries per row so that a row of the longest label fits LEGEND_WIDTH: three names of
    about 20 characters (`bibtex-memoir-simplelsh`) were cut at the figure's edge and widened the
    page beyond the window."""
    longest = max((len(str(label)) for label in labels), default=0)
    return int(max(1, min(LEGEND_COLUMNS, LEGEND_WIDTH // (LEGEND_CHAR * longest + LEGEND_ENTRY))))


def fit_legend(fig, labels) -> None:
    """Set the figure's legend rows for the entries `labels` it names now (see legend_columns)."""
    columns = legend_columns(labels)
    for legend in fig.legend:
        if legend.ncols != columns:
            legend.ncols = columns


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round linear ticks between lo and hi (steps 1, 2 or 5 times a power of ten): the widest
    step that gives about `count` ticks, and at least two."""
    span = hi - lo
    if not span > 0:
        return [lo]
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    best = [lo]
    for step in (m * power for m in (0.1, 0.2, 0.5, 1, 2, 5, 10)):
        first = math.ceil(lo / step) * step
        ticks = [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]
        if len(ticks) >= 2:
            best = ticks
        if step >= raw and len(best) >= 2:
            break
    return best


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a log axis spanning log10 values lo..hi: powers of ten (every k-th when many), else
    1-2-5 multiples, else round values, all as log10."""
    decades = list(range(math.ceil(lo - 1e-9), math.floor(hi + 1e-9) + 1))
    if len(decades) >= 2:
        step = max(1, math.ceil(len(decades) / 6))
        return [float(d) for d in decades[::step]]
    multiples = [math.log10(m) + d for d in range(math.floor(lo) - 1, math.ceil(hi) + 1) for m in (1, 2, 5)]
    within = [t for t in multiples if lo <= t <= hi]
    if len(within) >= 2:
        return within
    return [math.log10(v) for v in _nice_ticks(10 ** lo, 10 ** hi, 4) if v > 0]


def _extent(values: list[np.ndarray], pinned: tuple[float, float] | None) -> tuple[float, float] | None:
    """The range that shows the finite values (a 5% margin), or `pinned` with a small margin;
    None if no value is finite."""
    finite = np.concatenate([np.asarray(v, np.float64).ravel() for v in values]) if values else np.array([])
    finite = finite[np.isfinite(finite)]
    if not len(finite):
        return None
    lo, hi = (float(finite.min()), float(finite.max())) if pinned is None else pinned
    pad = (hi - lo) * 0.05 or max(abs(lo) * 0.1, 0.5)
    return (lo - pad, hi + pad) if pinned is None else (lo - pad / 4, hi + pad / 4)


def draws_nothing(xs: list[np.ndarray], ys: list[np.ndarray]) -> bool:
    """Whether curves with these x and y values have no point to draw (`fit` would return False)."""
    return _extent(xs, None) is None or _extent(ys, None) is None


def fit_range(rng: Range1d, values: list[np.ndarray], follow: bool = True,
              pinned: tuple[float, float] | None = None) -> bool:
    """Set a range (and its reset) to show the finite values; False (the range untouched) if none
    is finite. With `follow` False, a range the user has zoomed or panned keeps the user's extent
    and only its reset (the Reset tool) moves to the data."""
    extent = _extent(values, pinned)
    if extent is None:
        return False
    lo, hi = extent
    if not follow and zoomed(rng):
        if (rng.reset_start, rng.reset_end) != (lo, hi):
            rng.update(reset_start=lo, reset_end=hi)
    elif (rng.start, rng.end, rng.reset_start, rng.reset_end) != (lo, hi, lo, hi):
        rng.update(start=lo, end=hi, reset_start=lo, reset_end=hi)
    return True


def fit(fig, xs: list[np.ndarray], ys: list[np.ndarray], log_x: bool, log_y: bool,
        y_bounds: tuple[float, float] | None = None, follow: bool = True, fit_x: bool = True) -> bool:
    """Set the figure's ranges (and their reset) to the finite values drawn, with a 5% margin, and
    its ticks; y_bounds pins the y range (shares: 0 to 1). False if nothing finite is drawn.
    `fit_x` False: the x range is shared with other figures and fitted to all of them apart
    (`fit_range`). See `fit_range` for `follow`."""
    if draws_nothing(xs, ys):
        return False
    if fit_x:
        fit_range(fig.x_range, xs, follow)
    fit_range(fig.y_range, ys, follow, y_bounds)
    retick(fig, log_x, log_y)
    return True


def zoomed(rng) -> bool:
    """Whether the user has zoomed or panned this range: `fit` always sets a range and its reset
    together, and the Reset tool brings the range back to its reset."""
    return (rng.start, rng.end) != (rng.reset_start, rng.reset_end)


def retick(fig, log_x: bool, log_y: bool) -> None:
    """Ticks for the ranges as shown now (the data's extent, or the user's zoom)."""
    for axis, rng, log in ((fig.xaxis[0], fig.x_range, log_x), (fig.yaxis[0], fig.y_range, log_y)):
        ticks = log_ticks(rng.start, rng.end) if log else _nice_ticks(rng.start, rng.end)
        if list(axis.ticker.ticks) != ticks:
            axis.ticker.ticks = ticks


def set_log(axis, log: bool, label: str) -> None:
    """Make `axis` read as a log axis (its data must then be log10 values) or a linear one."""
    code = _LOG_TICKS if log else _LINEAR_TICKS
    if axis.formatter.code != code:
        axis.formatter.code = code
    text = f"{label} (log)" if log else label  # short: a long axis title is cut at the figure's height
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
