"""Live band plots: per field, the median and 5-95% band over labels of every shown run (one line
for a run that records a single trajectory, such as MEMOIR's).

One figure per field the runs record (see `fields.FIELDS`), in that table's order, in a grid that
wraps to the page's width; one colour per run in every figure, named by each figure's legend;
ranges and ticks set from the data drawn after every change of the shown runs or the view
(`figures.fit`); new records of the same view keep a zoom the user made, whose ticks follow it.
Every figure shares one x range (pan or zoom one and all follow); "medians only" hides the bands
and fits the y ranges to the medians; smoothing on a log axis works on log10 of the values, and a
gap field draws values below `fields.GAP_FLOOR` at that floor (issue 40).
A figure has three glyphs made with it, whatever the number of runs: the bands (patches), the
medians (multi-line) and invisible points that carry the hover, each fed by one data source that
holds every shown run. Adding a glyph per run instead makes the browser rebuild a figure's views
once per added run: 20 runs took 90 s to appear. A refresh or a control (x-axis, log scales,
smoothing) recomputes only the curves whose run has new records or whose view changed, and sends
a figure new data only when one of its curves changed. The numbers come from `RunAggregate`; this
module only smooths (before downsampling), downsamples and scales them for drawing. A fourth glyph
draws reference lines across a figure (`references.py`: DS-MLR's best L-BFGS objective), dashed, named in
the legend, and counted in the figure's y range: a horizontal span (Bokeh's `hspan`), which crosses
the whole plot whatever the x range, so a pan or zoom never shows it cut. A fifth marks where a
run's objective climbs (`records.climbs`, on the records' medians before any smoothing): a wide,
pale red stroke under the run's line in the objective figure, named "objective climbs" in its
legend, for runs that record one trajectory (a median over labels falls and rises as labels
converge, which is no climb).
"""
from __future__ import annotations

from contextlib import nullcontext
from html import escape
from typing import NamedTuple

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, Title

from ...records.climbs import climb_mask, climbs
from ...runs.aggregate import MAX_POINTS, X_AXES, downsample, smooth, smoothing_rule
from .fields import FIELDS, GAP_FLOOR, plotted_fields
from .figures import (draws_nothing, fit, fit_legend, fit_range, locked, new_figure, new_range, retick, scaled,
                      set_log, style_legend, zoomed)
from .records import PlotRun
from .references import Reference
from ..._util.text import markdown_text

AXIS_NAMES = {"iteration": "iteration", "wall time (s)": "wall", "cumulative work (CPU-s)": "work",
              "epoch (streaming solvers)": "epoch"}
AXIS_LABELS = {v: k for k, v in AXIS_NAMES.items()}
# the plot grid: as many columns of at least 340 px as the width holds (three at 1440 px, two on a
# laptop), filled in order; a hidden figure takes no cell, so the grid has no holes
GRID_CSS = ('[id^="flexbox"] { display: grid !important; width: 100%; gap: 4px; '
            'grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); }')


# a hidden figure's style and a shown one's (`LivePlots._show`): BokehJS sets the styles a
# figure's `styles` holds and removes those held as None (an empty dict left "none" in place)
HIDDEN, SHOWN = {"display": "none"}, {"display": None}


def _segments(finite: np.ndarray) -> list[slice]:
    """The runs of consecutive True values (a band is drawn as one polygon per run of points whose
    edges are both drawable, as an area glyph leaves gaps at NaN)."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], finite.astype(np.int8), [0]))))
    return [slice(a, b) for a, b in zip(edges[::2], edges[1::2])]


CLIMB_LABEL = "objective climbs"
CLIMB_COLOR = "#d62728"
# the smoothing line under a figure's title while nothing is smoothed: blank, yet a line high, so that
# a change of smoothing keeps every figure's height: BokehJS lays the whole page out again whenever
# a title's height changes (30-80 ms over the 10M-record run)
UNSMOOTHED = "\u00a0"


def _columns(curves: list[tuple[str, str, dict]]) -> tuple[dict, dict, dict, dict]:
    """The data of a figure's four curve sources from its curves (run name, colour, arrays): bands,
    lines, hover points and climbs (the stretches of a line its `climb` mask marks). The ragged
    columns (each band's and line's points) are lists: Bokeh sends every numpy array of a column
    as a binary buffer of its own, two websocket frames the server awaits one after the other
    (1,000 frames and about a second for a change of smoothing with 20 runs); lists travel inside
    the message's JSON. The points' flat columns stay arrays, four buffers a figure."""
    bands = {"xs": [], "ys": [], "color": []}
    lines = {"xs": [], "ys": [], "color": [], "run": []}
    points = {"x": [], "y": [], "xv": [], "m": [], "run": [], "color": []}
    climbing = {"xs": [], "ys": [], "climb": []}
    for name, color, c in curves:
        if not np.isfinite(c["median"]).any():  # nothing of this run to draw here: not in the legend either
            continue
        for seg in _segments(c["climb"]):
            climbing["xs"].append(c["x"][seg].tolist())
            climbing["ys"].append(c["median"][seg].tolist())
            climbing["climb"].append(CLIMB_LABEL)
        for seg in _segments(np.isfinite(c["x"]) & np.isfinite(c["lower"]) & np.isfinite(c["upper"])):
            bands["xs"].append(np.concatenate((c["x"][seg], c["x"][seg][::-1])).tolist())
            bands["ys"].append(np.concatenate((c["upper"][seg], c["lower"][seg][::-1])).tolist())
            bands["color"].append(color)
        lines["xs"].append(c["x"].tolist())
        lines["ys"].append(c["median"].tolist())
        lines["color"].append(color)
        lines["run"].append(name)
        n = len(c["x"])
        for key, value in (("x", c["x"]), ("y", c["median"]), ("xv", c["xv"]), ("m", c["m"])):
            points[key].append(value)
        points["run"].append(np.full(n, name, dtype=object))
        points["color"].append(np.full(n, color, dtype=object))
    points = {k: np.concatenate(v) if v else np.array([]) for k, v in points.items()}
    return bands, lines, points, climbing


def _legend_entry(label: str, color: str, dash: str, width: int) -> str:
    """One entry of the grid's legend: a stroke in the line's colour and style, and its name
    (escaped: a run's name is the user's text)."""
    stroke = (f'<span style="display:inline-block;width:22px;margin-right:5px;vertical-align:middle;'
              f'border-top:{width}px {dash} {escape(color)}"></span>')
    return (f'<span style="display:inline-block;margin-right:16px;font-size:12px;white-space:nowrap">'
            f'{stroke}{escape(str(label))}</span>')


def _reference_columns(refs: list[Reference], log_y: bool) -> dict:
    """The reference lines' source: each at its value as drawn (log10 on a log axis)."""
    return {"y": scaled(np.array([r.value for r in refs], np.float64), log_y), "color": [r.color for r in refs],
            "label": [r.label for r in refs], "value": [r.value for r in refs]}


class _Plan(NamedTuple):
    """A figure's next state: its curves (run, state drawn, arrays), y scale and reference lines,
    what its sources will hold, and their new data (None if they hold it already)."""

    curves: list
    log_y: bool
    refs: list
    sent: list
    data: tuple | None


def floored(values: np.ndarray, floor: float) -> np.ndarray:
    """Positive values below `floor` raised to it (fields.Field.floor): a log axis shows them at
    its floor instead of stretching down to them; values <= 0, which it leaves out, stay."""
    return np.where((values > 0) & (values < floor), floor, values)


def floored_band(lower: np.ndarray, median: np.ndarray) -> np.ndarray:
    """A band's lower edge on a log axis (log10 values, NaN where the value was <= 0): where the
    median is drawn but the edge is not (at least 5% of the labels reached 0, an objective gap of
    converged labels say), the edge goes down to the lowest point the curve draws, instead of
    leaving a hole in the band while its median line goes on."""
    drawn = np.concatenate([lower[np.isfinite(lower)], median[np.isfinite(median)]])
    if not drawn.size:
        return lower
    return np.where(np.isfinite(median) & ~np.isfinite(lower), drawn.min(), lower)


class LivePlots:
    """The band plots of the runs given to `show`, with their controls."""

    def __init__(self, width: int = 440, height: int = 260) -> None:
        self.size = (width, height)
        self.x_axis = pn.widgets.Select(label="x-axis", options=AXIS_NAMES, value="iteration", width=190)
        self.y_scale = pn.widgets.Select(label="y scale", options=["field default", "linear", "log"],
                                         value="field default", width=120)
        self.log_x = pn.widgets.Checkbox(label="log x", value=False, width=70, margin=(32, 10, 0, 10))
        self.smoothing = pn.widgets.Select(label="smoothing", options={"raw": "raw", "EMA": "ema",
                                                                      "rolling median": "median"},
                                           value="raw", width=130)
        # the box keeps a typed value within its bounds: the tooltip says them; off while raw (see redraw)
        self.window = pn.widgets.IntInput(label="window (points)", start=2, end=500, value=10, width=110,
                                          disabled=True, description=(
                                              "Points per smoothing window (EMA span or rolling-median width). "
                                              "Bounds: 2 to 500; a value outside is brought to the nearer bound."))
        self.medians_only = pn.widgets.Checkbox(label="medians only", value=False, width=110, margin=(32, 10, 0, 10))
        self.rules = pn.pane.Markdown("", sizing_mode="stretch_width", styles={"font-size": "12px"})
        self.empty = pn.pane.Markdown("", visible=False, sizing_mode="stretch_width")
        # one legend for the whole grid: with seven runs, a legend in every figure repeated four rows
        # of names under each (issue 40); the figures keep theirs, hidden, for a report (`figures`)
        self.legend = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self.grid = pn.FlexBox(sizing_mode="stretch_width", stylesheets=[GRID_CSS])
        self.runs: dict[str, PlotRun] = {}
        self._figures: dict[str, pn.pane.Bokeh] = {}
        self._sources: dict[str, tuple[ColumnDataSource, ...]] = {}
        self._curves: dict[tuple[str, str], tuple[tuple, dict]] = {}  # (field, run) -> (state, arrays)
        self._sent: dict[str, list] = {}  # field -> the (run, state) pairs its sources hold
        self._drawn: dict[str, bool] = {}  # field -> whether its figure draws any finite point
        self._whats: dict[str, Title] = {}  # field -> the line under its title: what is drawn
        self._subtitles: dict[str, Title] = {}  # field -> the line under that: the smoothing
        self._bands: dict[str, object] = {}  # field -> its bands' renderer (hidden with "medians only")
        # every figure's x range: one, so that panning or zooming one figure moves them all (issue 40)
        self.x_range = new_range()
        self._x_view: tuple | None = None  # the runs and settings the shared x range was fitted for
        self.references: dict[str, list[Reference]] = {}
        self._plotted: dict[str, set[str]] = {}  # run id -> the fields it is drawn in (set by redraw)
        # run id -> its status in the store (set by RunView): says why runs without records draw nothing
        self.statuses: dict[str, str] = {}
        self._views: dict[str, tuple] = {}  # field -> the runs and settings its ranges were fitted for
        for widget in (self.x_axis, self.y_scale, self.log_x, self.smoothing, self.window, self.medians_only):
            widget.param.watch(locked(lambda _event: self.redraw()), "value")

    def show(self, runs: dict[str, PlotRun], text: bool = True,
             references: dict[str, list[Reference]] | None = None) -> None:
        """Plot these runs (run id -> PlotRun), in this order, hiding any others; `text`: also
        update the lines beside the figures; `references`: field -> lines drawn across its figure."""
        self.runs = runs
        self.references = references or {}
        self.redraw(text)

    def _settings(self) -> tuple:
        return (self.x_axis.value, self.y_scale.value, self.log_x.value, self.smoothing.value, self.window.value,
                self.medians_only.value)

    def _log_y(self, field: str) -> bool:
        return self.y_scale.value == "log" or (self.y_scale.value == "field default" and FIELDS[field].log)

    def redraw(self, text: bool = True) -> None:
        """Bring every figure (and with `text` the lines beside them) up to date; work only where a
        run's records or the settings changed. The changes reach the page in one message, except
        those of a figure that draws fewer bands or lines than before, which go first, one by one:
        BokehJS painted a patches glyph whose source shrank within one message with the indices
        of before ("Out of bounds" in PatchesView, bokeh#12718 and #10938 are kin). Fewer points
        (another x-axis thins them differently) do not count: that was most figures at every
        switch of the x-axis, and the scatter glyph draws them right in one message.
        Every message, those one by one included, leaves through Panel's hold: Panel queues a held
        message while the websocket is busy, and a change sent outside a hold takes Bokeh's own
        path, which overtook it. A smoothing change's message, queued, then reached the page after
        the next x-axis switch's shrinking figures and drew the old runs in them for good."""
        # each run's own plotted fields: a one-vs-all run's objective gap replaces its objective, not
        # the objective of a multiclass run beside it, which then went undrawn
        self._plotted = {run: set(plotted_fields(set(r.records.iterations.fields()))) for run, r in self.runs.items()}
        fields = [f for f in FIELDS if any(f in mine for mine in self._plotted.values())]
        new = [field for field in fields if field not in self._figures]
        for field in new:
            self._figure(field)
        plans = {field: self._plan(field, field in fields) for field in self._figures}
        thinned = any(c["thinned"] for plan in plans.values() for _, _, c in plan.curves)
        shrinking = [field for field, plan in plans.items() if plan.data is not None and any(
            len(plan.data[i]["xs"]) < len(self._sources[field][i].data["xs"])
            for i in (0, 1, 3))]  # the bands, lines and climbs
        drawn: dict[str, set[str | None]] = {}
        for field in shrinking:
            self._apply(field, plans.pop(field), drawn, alone=True)
        with pn.io.hold():
            self.window.disabled = self.smoothing.value == "raw"  # in the same message as the figures
            for field, plan in plans.items():
                self._apply(field, plan, drawn)
            self._fit_x(drawn)
            self._titles_and_rules(drawn, thinned, text)
            self._grid_legend(drawn)
            if new:  # added once drawn: the page receives each new figure whole, with its data (data sent
                # apart could overtake the figure's own message and be refused by the page); the grid
                # keeps the table's order whatever order the fields first appeared in
                self.grid.objects = [self._figures[f] for f in FIELDS if f in self._figures]

    def _plan(self, field: str, plotted: bool) -> _Plan:
        """What a figure will draw for the shown runs (no curves if they do not plot its field)."""
        log_y = self._log_y(field)
        curves = [(run, *self._curve(field, run, plot_run, log_y)) for run, plot_run in self.runs.items()
                  if field in self._plotted[run]] if plotted else []
        refs = self.references.get(field, []) if curves else []
        sent = [(run, state) for run, state, _ in curves] + [tuple(refs)]
        data = None if self._sent.get(field) == sent else _columns(
            [(self.runs[run].name, self.runs[run].color, c) for run, _, c in curves])
        return _Plan(curves, log_y, refs, sent, data)

    def _apply(self, field: str, plan: _Plan, drawn: dict[str, set[str | None]], alone: bool = False) -> None:
        """Send a figure its planned data, ranges, ticks, axes and visibility; drawn[field] = what
        the band of each run it draws spans ("labels", "workers"; None: one trajectory). `alone`:
        each source's new data in a message of its own, then the rest in one (see `redraw`)."""
        if plan.data is not None and draws_nothing(*self._fitted([c for _, _, c in plan.curves], plan.refs,
                                                                plan.log_y)):
            # nothing to draw: the figure is hidden and its sources, ranges and `_sent` keep what
            # they hold, so a return to that view shows them again without sending them
            with pn.io.hold() if alone else nullcontext():
                self._show(field, False)
            return
        if plan.data is not None:
            for source, columns in zip(self._sources[field], plan.data):
                with pn.io.hold() if alone else nullcontext():
                    source.data = columns
        with pn.io.hold() if alone else nullcontext():
            self._apply_view(field, plan, drawn)

    def _apply_view(self, field: str, plan: _Plan, drawn: dict[str, set[str | None]]) -> None:
        """The rest of `_apply`, once the sources hold the planned data."""
        curves, log_y, refs, sent, data = plan
        fig = self._figures[field].object
        if data is not None:  # new data, or a new view of it: new ranges too
            self._sent[field] = sent
            view = (tuple(run for run, _, _ in curves), self._settings(), log_y, tuple(refs))
            follow, self._views[field] = self._views.get(field) != view, view
            self._drawn[field] = bool(curves) and self._fit(field, fig, [c for _, _, c in curves], log_y,
                                                            refs, follow)
            self._sources[field][4].data = _reference_columns(refs, log_y)
            fit_legend(fig, [*self._sources[field][1].data["run"], *(r.label for r in refs),
                             *set(self._sources[field][3].data["climb"])])
        elif self._drawn[field] and (zoomed(fig.x_range) or zoomed(fig.y_range)):
            retick(fig, self.log_x.value, log_y)  # the user zoomed: ticks for what is shown
        visible = self._drawn[field]
        if visible:
            set_log(fig.yaxis[0], log_y, FIELDS[field].label)
            set_log(fig.xaxis[0], self.log_x.value, AXIS_LABELS[self.x_axis.value])
            drawn[field] = {self.runs[run].records.band_members() for run, _, c in curves
                            if np.isfinite(c["median"]).any()}
        if self._bands[field].visible == self.medians_only.value:
            self._bands[field].visible = not self.medians_only.value
        self._show(field, visible)

    def _show(self, field: str, visible: bool) -> None:
        """Show or hide a field's figure (hidden: none of the shown runs records it on this axis).
        Hidden by its style (`display: none`), not its `visible`: BokehJS lays the whole page out
        at once at each change of a `visible`, and again at each repaint of a figure so hidden (its
        side panels measure their content against a 0 x 0 box): 12 layouts of the page, 0.4-0.6 s,
        at an x-axis switch that hides five figures and shows one. Figures restyled in one message
        are laid out together once, and one hidden by its style keeps its panels' boxes, so its
        repaints cost no layout: it stays on the shared x range (taking it off, and back, left its
        axes drawing the other range's ticks: BokehJS keeps a plot's axis coordinates across a
        range swap; bokeh#11817 is kin)."""
        if self.shown(field) != visible:
            self._figures[field].object.styles = dict(SHOWN if visible else HIDDEN)

    def _fit(self, field: str, fig, curves: list[dict], log_y: bool, refs: list[Reference] = (),
             follow: bool = True) -> bool:
        """The y range from what the figure draws now (the medians alone with "medians only"),
        reference lines included (a zoom kept unless `follow`); False if it draws nothing (no
        finite point). The x range is every figure's and fitted by `_fit_x`."""
        unit = FIELDS[field].unit
        pinned = None if log_y else {"share": (0.0, 1.0), "percent": (0.0, 100.0)}.get(unit)
        xs, ys = self._fitted(curves, refs, log_y)
        return fit(fig, xs, ys, self.log_x.value, log_y, pinned, follow, fit_x=False)

    def _fitted(self, curves: list[dict], refs: list[Reference], log_y: bool) -> tuple[list, list]:
        """The x and y values a figure's ranges are fitted to: its curves' medians (and band edges,
        unless "medians only") and its reference lines, as drawn."""
        edges = ("median",) if self.medians_only.value else ("median", "lower", "upper")
        ys = [c[k] for c in curves for k in edges] + [scaled([r.value for r in refs], log_y)]
        return [c["x"] for c in curves], ys

    def _fit_x(self, drawn: dict[str, set]) -> None:
        """The shared x range over what every drawn figure draws (a zoom kept while the shown
        runs and the settings stay), and each drawn figure's x ticks for it."""
        xs = [c["x"] for field in drawn for run in self.runs
              if (c := self.curve(field, run)) is not None and np.isfinite(c["median"]).any()]
        view = (tuple(self.runs), self._settings())
        follow, self._x_view = self._x_view != view, view
        if fit_range(self.x_range, xs, follow):
            for field in drawn:
                fig = self._figures[field].object
                retick(fig, self.log_x.value, self._log_y(field))

    def _titles_and_rules(self, drawn: dict[str, set[str | None]], thinned: bool, text: bool = True) -> None:
        """Titles that say what is drawn: bands over labels (or DS-MLR's workers) only where the
        figure's runs record many, and the wall-time bins on that axis; the rules of the x-axis,
        smoothing and downsampling. `drawn`: field -> what each run's band in it spans (None: one
        trajectory)."""
        axis = self.x_axis.value
        smoothing = smoothing_rule(self.smoothing.value, self.window.value)
        for field, spans in drawn.items():
            wall = axis == "wall"
            over = " or ".join(sorted(s for s in spans if s is not None)) or "labels"
            if field == "labels_done":
                what = "one count per one-vs-all run"
            elif spans and None not in spans:  # short: a figure is a third of the page wide (the rules say more)
                what = f"median, 5-95% band over {over}" + (" per time bin" if wall else "")
            elif spans == {None}:
                what = "median, 5-95% band per time bin" if wall else "one trajectory per run"
            else:
                what = (f"median, 5-95% band over {over} or per time bin" if wall
                        else f"median, 5-95% band over {over}, or one trajectory")
            # the field as the title, what is drawn and the smoothing each on a line under it: in one
            # title they were cut at the figure's edge ("margin violators (share of rows): median, 5-95% ...")
            if self._whats[field].text != what:
                self._whats[field].text = what
            sub = UNSMOOTHED if self.smoothing.value == "raw" else f"smoothed: {smoothing}" + (
                " of log10 values" if self._log_y(field) else "")
            if self._subtitles[field].text != sub:
                self._subtitles[field].text = sub
        if not text:
            return
        rules = (f"{X_AXES[axis]}; one x range for every figure (pan or zoom one, all follow). Smoothing: "
                 f"{smoothing}, applied before downsampling, to log10 of the values on a log axis (an EMA "
                 f"there is a geometric mean, as the axis reads). Downsampling: at most "
                 f"{MAX_POINTS} points per curve: the first and last point and, in each of equal buckets of "
                 f"points, those of the smallest and largest median and band edge"
                 f"{' (in use now)' if thinned else ' (not needed now)'}. Log axes leave out values <= 0 and "
                 f"draw gaps below {GAP_FLOOR:g} at {GAP_FLOOR:g} (below every solver's tolerance)."
                 f"{' Bands hidden: medians only.' if self.medians_only.value else ''}")
        if rules != self.rules.object:
            self.rules.object = rules
        empty = bool(self.runs) and not drawn
        text = self._nothing_drawn() if empty else ""
        if text != self.empty.object:
            self.empty.object, self.empty.visible = text, empty

    def _grid_legend(self, drawn: dict[str, set]) -> None:
        """The grid's one legend: each run drawn in some figure, in its colour, then what marks a
        figure draws besides (the objective's climbs, reference lines), each once."""
        runs = {}
        marks = {}
        for field in drawn:
            lines, climbing, refs = (self._sources[field][i].data for i in (1, 3, 4))
            runs.update(zip(lines["run"], lines["color"]))
            if len(climbing["climb"]):
                marks[CLIMB_LABEL] = (CLIMB_COLOR, "solid", 8)
            marks.update({label: (color, "dashed", 2) for label, color in zip(refs["label"], refs["color"])})
        entries = [_legend_entry(name, color, "solid", 3) for name, color in runs.items()]
        entries += [_legend_entry(label, *style) for label, style in marks.items()]
        text = f'<div class="xcviz-legend">{"".join(entries)}</div>' if entries else ""
        if self.legend.object != text:
            self.legend.object = text

    def _nothing_drawn(self) -> str:
        """Why no figure draws anything: the shown runs record nothing against this x-axis, or, when
        none has a record yet, that they have not recorded yet (queued, or compiling: a run's first
        records come after numba compiled its kernels), failed or ended without records."""
        if any(len(r.records.iterations) for r in self.runs.values()):
            return f"None of the shown runs records anything against **{AXIS_LABELS[self.x_axis.value]}**: " \
                   "pick another x-axis."
        said: dict[str, list[str]] = {}  # status -> the runs' names
        for run, plot_run in self.runs.items():
            said.setdefault(self.statuses.get(run, "running"), []).append(markdown_text(plot_run.name))
        waiting, failed = said.pop("queued", []) + said.pop("running", []), said.pop("failed", [])
        parts = []
        if waiting:
            parts.append(f"{', '.join(waiting)} {'has' if len(waiting) == 1 else 'have'} not recorded anything yet: "
                         "the first records can take a minute or two on a fresh checkout, while numba compiles the "
                         "solver's kernels.")
        if failed:
            parts.append(f"{', '.join(failed)} failed before recording anything: the error is in the runs table.")
        parts += [f"{', '.join(names)} ended as {status} without recording anything." for status, names in said.items()]
        return " ".join(parts)

    def _figure(self, field: str) -> pn.pane.Bokeh:
        """A field's figure with its three glyphs, each drawing every run from one source, and a
        legend naming each run's line."""
        fig = new_figure(FIELDS[field].label, AXIS_LABELS[self.x_axis.value], FIELDS[field].label,
                         width=self.size[0], height=self.size[1], sizing_mode="stretch_width", x_range=self.x_range)
        self._whats[field] = Title(text="", text_font_size="10px", text_font_style="normal", text_color="#444444")
        self._subtitles[field] = Title(text=UNSMOOTHED, text_font_size="10px", text_font_style="italic", text_color="#555555")
        fig.above = [self._subtitles[field], self._whats[field], *fig.above]  # nearest the plot first: the title on top
        bands, lines, points, climbing = (ColumnDataSource(columns) for columns in _columns([]))
        self._bands[field] = fig.patches(xs="xs", ys="ys", source=bands, fill_color="color", fill_alpha=0.2,
                                         line_alpha=0, visible=not self.medians_only.value)
        fig.multi_line(xs="xs", ys="ys", source=climbing, line_color=CLIMB_COLOR, line_width=9, line_alpha=0.35,
                       legend_field="climb")
        fig.multi_line(xs="xs", ys="ys", source=lines, line_color="color", line_width=2, legend_field="run")
        hover = fig.scatter(x="x", y="y", source=points, size=8, fill_alpha=0, line_alpha=0)
        refs = ColumnDataSource(_reference_columns([], False))
        fig.hspan(y="y", source=refs, line_color="color", line_width=1.5, line_dash="dashed", legend_field="label")
        fig.add_tools(HoverTool(renderers=[hover], tooltips=[("run", "@run"), ("x", "@xv"), ("value", "@m")]))
        style_legend(fig)
        for legend in fig.legend:  # the grid's legend names the runs (`_grid_legend`)
            legend.visible = False
        pane = pn.pane.Bokeh(fig, sizing_mode="stretch_width")
        self._figures[field], self._sources[field] = pane, (bands, lines, points, climbing, refs)
        return pane

    def _curve(self, field: str, run: str, plot_run: PlotRun, log_y: bool) -> tuple[tuple, dict]:
        """One run's curve in one figure, recomputed only when its records or the view changed:
        (the state it was drawn for, its arrays)."""
        aggregate = plot_run.records.iterations
        state = (plot_run.records.serial, aggregate.version, self._settings(), log_y)
        cached = self._curves.get((field, run))
        if cached is not None and cached[0] == state:
            return cached
        bands = aggregate.bands(field, self.x_axis.value)
        smoothed = smooth(bands[["median", "lower", "upper"]].to_numpy(np.float64), self.smoothing.value,
                          self.window.value, log=log_y)
        if log_y and FIELDS[field].floor:
            smoothed = floored(smoothed, FIELDS[field].floor)
        columns = dict(zip(("median", "lower", "upper"), smoothed.T * (100.0 if FIELDS[field].unit == "percent" else 1.0)))
        index, k = downsample(smoothed)  # after smoothing: the extremes kept are those drawn
        x = bands["x"].to_numpy(np.float64)[index]
        curve = {"x": scaled(x, self.log_x.value), "xv": x, "m": columns["median"][index], "thinned": k > 1,
                 "climb": self._climbs(field, plot_run, bands["median"].to_numpy(np.float64))[index],
                 **{c: scaled(v[index], log_y) for c, v in columns.items()}}
        if log_y:
            curve["lower"] = floored_band(curve["lower"], curve["median"])
        self._curves[(field, run)] = (state, curve)
        return state, curve

    @staticmethod
    def _climbs(field: str, plot_run: PlotRun, median: np.ndarray) -> np.ndarray:
        """Which points of a run's curve lie on a climb of its objective (records.climbs); none
        outside the objective figure or for a run whose band is over labels."""
        if field != "objective" or plot_run.records.band_members() == "labels":
            return np.zeros(median.size, dtype=bool)
        return climb_mask(median.size, climbs(median))

    def curve(self, field: str, run: str) -> dict | None:
        """What is drawn of a run in a field's figure: arrays x, median, lower, upper as plotted
        (log10 on a log axis), xv and m (x and the median as recorded); None if nothing yet."""
        cached = self._curves.get((field, run))
        return None if cached is None else cached[1]

    def forget(self, run: str) -> None:
        """Drop what was computed for a run (deleted, or its records reset); the next redraw
        leaves it out of the figures or draws it anew."""
        for key in [k for k in self._curves if k[1] == run]:
            del self._curves[key]
        self._sent.clear()
        self._views.clear()  # its records start again: ranges follow them
        self._x_view = None

    def shown(self, field: str) -> bool:
        """Whether a field's figure is shown (it draws something of the shown runs: `_show`)."""
        return self._figures[field].object.styles.get("display") != HIDDEN["display"]

    def figures(self) -> list:
        """The Bokeh figures that are shown, one per field they plot (for a standalone report, which
        shows each figure's own legend: `figures.show_legends`)."""
        return [pane.object for field, pane in self._figures.items() if self.shown(field)]

    def controls(self) -> pn.Row:
        """The plot settings in one row."""
        return pn.Row(self.x_axis, self.y_scale, self.log_x, self.smoothing, self.window, self.medians_only, margin=0)

    def panel(self) -> pn.Column:
        return pn.Column(self.controls(), self.empty, self.legend, self.grid, self.rules, sizing_mode="stretch_width")
