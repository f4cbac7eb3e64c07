"""Live band plots: per field, the median and 5-95% band over labels of every shown run.

One figure per field the runs record (see `fields.FIELDS`), one colour per run in every figure.
The figures and each run's glyphs are made once; afterwards a refresh or a control (x-axis, log
scales, smoothing) only replaces the data of the curves whose run has new records or whose view
changed, and hides the runs that are not shown. The numbers come from `RunAggregate`; this module
only smooths (before downsampling), downsamples and scales them for drawing.
"""
from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, HoverTool

from ..runs.aggregate import MAX_POINTS, X_AXES, downsample, smooth, smoothing_rule
from .fields import FIELDS, plotted_fields
from .figures import locked, new_figure, scaled, set_log, swatches
from .records import PlotRun

AXIS_NAMES = {"iteration": "iteration", "wall time (s)": "wall", "cumulative work (CPU-s)": "work"}
AXIS_LABELS = {v: k for k, v in AXIS_NAMES.items()}
EMPTY = {"x": [], "lower": [], "upper": [], "median": [], "xv": [], "m": []}


class LivePlots:
    """The band plots of the runs given to `show`, with their controls."""

    def __init__(self, width: int = 440, height: int = 260) -> None:
        self.size = (width, height)
        self.x_axis = pn.widgets.Select(label="x-axis", options=AXIS_NAMES, value="iteration", width=190)
        self.y_scale = pn.widgets.RadioButtonGroup(label="y scale", options=["field default", "linear", "log"],
                                                   value="field default", width=260)
        self.log_x = pn.widgets.Checkbox(label="log x", value=False, width=70)
        self.smoothing = pn.widgets.Select(label="Smoothing", options={"raw": "raw", "EMA": "ema",
                                                                      "rolling median": "median"},
                                           value="raw", width=140)
        self.window = pn.widgets.IntInput(label="window (points)", start=2, end=500, value=10, width=110)
        self.rules = pn.pane.Markdown("", sizing_mode="stretch_width", styles={"font-size": "12px"})
        self.key = pn.pane.HTML("", sizing_mode="stretch_width")
        self.grid = pn.GridBox(ncols=2)
        self.runs: dict[str, PlotRun] = {}
        self._figures: dict = {}
        self._sources: dict[tuple[str, str], ColumnDataSource] = {}
        self._glyphs: dict[tuple[str, str], list] = {}
        self._drawn: dict[tuple[str, str], tuple] = {}
        self._titles: dict[str, str] = {}
        for widget in (self.x_axis, self.y_scale, self.log_x, self.smoothing, self.window):
            widget.param.watch(locked(lambda _event: self.redraw()), "value")

    def show(self, runs: dict[str, PlotRun]) -> None:
        """Plot these runs (run id -> PlotRun), in this order, hiding any others."""
        if list(runs) != list(self.runs):
            self.key.object = swatches({run: (r.name, r.color) for run, r in runs.items()})
        self.runs = runs
        self.redraw()

    def _settings(self) -> tuple:
        return self.x_axis.value, self.y_scale.value, self.log_x.value, self.smoothing.value, self.window.value

    def _log_y(self, field: str) -> bool:
        return self.y_scale.value == "log" or (self.y_scale.value == "field default" and FIELDS[field].log)

    def redraw(self) -> None:
        """Bring every figure up to date; work only where a run's records or the settings changed."""
        axis = self.x_axis.value
        fields = plotted_fields({f for r in self.runs.values() for f in r.records.iterations.fields()})
        new = [self._figure(f) for f in fields if f not in self._figures]
        if new:
            self.grid.extend(new)
        thinned = False
        for (field, run), glyphs in self._glyphs.items():
            visible = run in self.runs and field in fields
            for glyph in glyphs:
                if glyph.visible != visible:
                    glyph.visible = visible
        for field in fields:
            log_y = self._log_y(field)
            fig = self._figures[field].object
            set_log(fig.yaxis[0], log_y, FIELDS[field].label)
            set_log(fig.xaxis[0], self.log_x.value, AXIS_LABELS[axis])
            for run, plot_run in self.runs.items():
                thinned |= self._curve(field, run, plot_run, log_y)
        smoothing = smoothing_rule(self.smoothing.value, self.window.value)
        for field in fields:
            title = f"{FIELDS[field].label}: median, 5-95% band over labels · {smoothing}"
            if self._titles.get(field) != title:
                self._figures[field].object.title.text = self._titles[field] = title
        rules = (f"{X_AXES[axis]}. Smoothing: {smoothing}, applied before downsampling. Downsampling: at most "
                 f"{MAX_POINTS} points per curve, every k-th point plus the last"
                 f"{' (in use now)' if thinned else ' (not needed now)'}. Log axes leave out values <= 0.")
        if rules != self.rules.object:
            self.rules.object = rules

    def _figure(self, field: str) -> pn.pane.Bokeh:
        fig = new_figure(FIELDS[field].label, AXIS_LABELS[self.x_axis.value], FIELDS[field].label,
                         width=self.size[0], height=self.size[1])
        fig.add_tools(HoverTool(tooltips=[("run", "$name"), ("x", "@xv"), ("median", "@m")], mode="mouse"))
        pane = pn.pane.Bokeh(fig)
        self._figures[field] = pane
        return pane

    def _curve(self, field: str, run: str, plot_run: PlotRun, log_y: bool) -> bool:
        """Update one run's curve in one figure if needed; True if it had to be downsampled."""
        key = (field, run)
        aggregate = plot_run.records.iterations
        state = (aggregate.version, self._settings(), log_y)
        if self._drawn.get(key, (None,))[:3] == state:
            return self._drawn[key][3]
        if key not in self._sources:
            fig = self._figures[field].object
            source = ColumnDataSource(dict(EMPTY))
            self._glyphs[key] = [
                fig.varea(x="x", y1="lower", y2="upper", source=source, fill_color=plot_run.color, fill_alpha=0.2),
                fig.line(x="x", y="median", source=source, line_color=plot_run.color, line_width=2, name=plot_run.name)]
            self._sources[key] = source
        bands = aggregate.bands(field, self.x_axis.value)
        rule, window = self.smoothing.value, self.window.value
        smoothed = smooth(bands[["median", "lower", "upper"]].to_numpy(np.float64), rule, window)
        columns = dict(zip(("median", "lower", "upper"), smoothed.T))
        index, k = downsample(len(bands))
        x = bands["x"].to_numpy(np.float64)[index]
        self._sources[key].data = {"x": scaled(x, self.log_x.value), "xv": x, "m": columns["median"][index],
                                   **{c: scaled(v[index], log_y) for c, v in columns.items()}}
        self._drawn[key] = (*state, k > 1)
        return k > 1

    def forget(self, run: str) -> None:
        """Remove a run's glyphs (a deleted run)."""
        for key in [k for k in self._glyphs if k[1] == run]:
            figure = self._figures[key[0]].object
            figure.renderers = [r for r in figure.renderers if r not in self._glyphs[key]]
            for store in (self._glyphs, self._sources, self._drawn):
                store.pop(key, None)

    def figures(self) -> list:
        """The Bokeh figures, one per plotted field (for a standalone report)."""
        return [pane.object for pane in self._figures.values()]

    def controls(self) -> pn.Row:
        return pn.Row(self.x_axis, pn.Column(pn.pane.Markdown("y scale", margin=(0, 5)), self.y_scale),
                      pn.Column(pn.Spacer(height=22), self.log_x), self.smoothing, self.window)

    def panel(self) -> pn.Column:
        return pn.Column(self.controls(), self.rules, self.key, self.grid, sizing_mode="stretch_width")
