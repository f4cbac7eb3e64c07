"""Per-label views: iterations and training time against a label's number of positives (the MSI
paper's Figure 7), and the label inspector, one label's trajectory through its iterations.

Both keep their figures and feed them new rows: a refresh streams only the label records that
arrived since the last one. As in the live plots, new records of the same runs (or the same label)
keep a view the user zoomed or panned, its Reset moving with the data (`figures.fit`, follow=False);
showing other runs, or another label, fits the ranges to the data.
"""
from __future__ import annotations

import math

import numpy as np
import panel as pn
import pandas as pd
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models.widgets.tables import NumberFormatter

from ...engine.newton import STATUS_NAMES
from ...runs.aggregate import slowest_labels
from .fields import TRAJECTORY, field_label
from .figures import fit, fit_legend, locked, new_figure, retick, scaled, set_log, style_legend, zoomed
from .records import PlotRun
from .tick_table import TickTable
from ..._util.text import markdown_text

LABEL_COLUMNS = ("label", "n_pos", "iterations", "seconds", "status")
SLOWEST = 10
LOG_TRAJECTORY = ("objective", "grad_norm", "duality_gap")  # the inspector's fields on a log axis
NO_LABELS = ("The shown runs record no per-label results ({names}: a multiclass solver trains all classes "
             "at once). Tick a one-vs-all run (dismec, ppdsparse) to see its labels here.")


def _status(code) -> str:
    """A label's stopping status in words (the Newton codes; PPDSparse's 0 and 1 mean the same)."""
    if pd.isna(code):  # a record without one (fill_store's, say)
        return ""
    code = int(code)
    return STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else str(code)


def _cell(column: str, value) -> str:
    """A label record's value as the slowest-labels table shows it."""
    return _status(value) if column == "status" else f"{value:.4f}" if column == "seconds" else f"{value:.4g}"


def _no_labels(runs: dict[str, PlotRun]) -> str:
    """What the per-label views say when none of the shown runs has label records ("" otherwise)."""
    if not runs:
        return "No run shown yet: launch one, or tick runs in the table."
    if any(len(r.records.labels) for r in runs.values()):
        return ""
    if any(r.records.iterations.per_label() for r in runs.values()):
        return "The shown runs have not finished a label yet."
    if not any(len(r.records.iterations) for r in runs.values()):  # a run just launched, of either kind
        return "The shown runs have not recorded yet."
    return NO_LABELS.format(names=", ".join(markdown_text(r.name) for r in runs.values()))


def _label_points(labels: pd.DataFrame) -> dict[str, np.ndarray]:
    """The columns of the positives scatter: labels with at least one positive (log x-axis)."""
    if not {"n_pos", "iterations", "seconds"} <= set(labels):
        return {"lx": np.array([]), "ly": np.array([]), "n_pos": np.array([]), "iterations": np.array([]),
                "seconds": np.array([]), "label": np.array([])}
    rows = labels[labels["n_pos"].to_numpy() > 0]
    return {"lx": scaled(rows["n_pos"], True), "ly": scaled(rows["seconds"], True),
            "n_pos": rows["n_pos"].to_numpy(), "iterations": rows["iterations"].to_numpy(),
            "seconds": rows["seconds"].to_numpy(), "label": rows["label"].to_numpy()}


class PositivesView:
    """Iterations to convergence and seconds against positives, one point per label, per run.

    Like the live plots, each figure has one glyph fed by one source that holds every shown run
    (a colour and a run column): a change of the shown runs sends new data, never new models, which
    a page would not know while this tab is not drawn. The legend is drawn from a source of its own,
    one undrawn point per run, that changes only with the runs shown: grouped over the growing points,
    BokehJS in JupyterLab read a colour past the end of its array while the points were replaced
    ("Offset is outside the bounds of the DataView")."""

    def __init__(self, width: int = 440, height: int = 300) -> None:
        self.iterations = new_figure("iterations to convergence against positives (labels with none left out)",
                                     "positives", "iterations", width=width, height=height)
        self.seconds = new_figure("training seconds against positives (labels with none left out)",
                                  "positives", "seconds", width=width, height=height)
        self.source = ColumnDataSource(self._columns({}))
        self.legend = ColumnDataSource(self._legend([]))
        for fig, y in ((self.iterations, "iterations"), (self.seconds, "ly")):
            set_log(fig.xaxis[0], True, "positives")
            fig.scatter(x="lx", y=y, source=self.source, color="color", alpha=0.6, size=5)
            fig.scatter(x="x", y="y", source=self.legend, color="color", alpha=0.6, size=5, legend_field="run")
            fig.add_tools(HoverTool(tooltips=[("run", "@run"), ("label", "@label"), ("positives", "@n_pos"),
                                              ("iterations", "@iterations"), ("seconds", "@seconds")]))
            style_legend(fig)
        set_log(self.seconds.yaxis[0], True, "seconds")
        self.note = pn.pane.Markdown("", visible=False, sizing_mode="stretch_width")
        self._points: dict[str, tuple[int, dict]] = {}  # run -> (labels read, its columns)
        self._sent: list | None = None
        self._view: list | None = None  # the runs the ranges were fitted for
        self._legend_view: list = []  # the runs the legend names

    def _columns(self, runs: dict[str, PlotRun]) -> dict[str, np.ndarray]:
        """The source's columns: every shown run's labels with positives, tagged with its name and colour."""
        parts = []
        for run, plot_run in runs.items():
            labels = plot_run.records.labels
            cached = self._points.get(run)
            if cached is None or cached[0] != len(labels):
                cached = (len(labels), _label_points(labels))
                self._points[run] = cached
            points = cached[1]
            n = len(points["lx"])
            parts.append({**points, "run": np.full(n, plot_run.name, dtype=object),
                          "color": np.full(n, plot_run.color, dtype=object)})
        keys = ("lx", "ly", "n_pos", "iterations", "seconds", "label", "run", "color")
        return {k: np.concatenate([p[k] for p in parts]) if parts else np.array([], dtype=object if k in ("run", "color")
                                                                                else np.float64) for k in keys}

    @staticmethod
    def _legend(view: list[tuple[str, str, str]]) -> dict[str, list]:
        """The legend's source: a point at NaN (never drawn) per (run, name, colour) shown."""
        return {"x": [math.nan] * len(view), "y": [math.nan] * len(view),
                "run": [name for _, name, _ in view], "color": [color for _, _, color in view]}

    def show(self, runs: dict[str, PlotRun]) -> None:
        """Draw these runs' labels; say above the figures when they have none."""
        sent = [(run, len(r.records.labels), r.name, r.color) for run, r in runs.items()]
        if sent != self._sent:
            data = self._columns(runs)
            self.source.data = data
            self._sent = sent
            view = [(run, name, color) for run, _, name, color in sent]
            follow, self._view = view != self._view, view
            if view != self._legend_view:  # only with the runs shown (class docstring)
                self.legend.data, self._legend_view = self._legend(view), view
            fit(self.iterations, [data["lx"]], [data["iterations"]], True, False, follow=follow)
            fit(self.seconds, [data["lx"]], [data["ly"]], True, True, follow=follow)
            for fig in (self.iterations, self.seconds):  # their legends name the runs, as the live plots' do
                fit_legend(fig, [name for _, name, _ in view])
        else:
            for fig, log_y in ((self.iterations, False), (self.seconds, True)):
                if zoomed(fig.x_range) or zoomed(fig.y_range):
                    retick(fig, True, log_y)  # the user zoomed: ticks for what is shown
        note = _no_labels(runs)
        if note != self.note.object:
            self.note.object, self.note.visible = note, bool(note)

    def forget(self, run: str) -> None:
        self._points.pop(run, None)
        self._sent = self._view = None  # its records start again: ranges follow them

    def figures(self) -> list:
        return [self.iterations, self.seconds]

    def panel(self) -> pn.Column:
        return pn.Column(self.note, pn.Row(pn.pane.Bokeh(self.iterations), pn.pane.Bokeh(self.seconds)),
                         sizing_mode="stretch_width")


class LabelInspector:
    """One label of one run: its objective, gradient norm, active set and step size per iteration.

    Pick the run, then the label by number (bounded by the run's label count) or by clicking a row
    of the table of its slowest labels."""

    def __init__(self, width: int = 330, height: int = 220) -> None:
        self.run = pn.widgets.Select(label="Run", options={}, width=240)
        self.label = pn.widgets.IntInput(label="Label", start=0, end=0, value=0, width=120)
        # refreshed while its run trains: a row picked in the page survives the refresh (tick_table)
        self.slowest = TickTable(pd.DataFrame(columns=list(LABEL_COLUMNS)), selectable=1, disabled=True,
                                 show_index=False, height=280, width=460,
                                 formatters={"seconds": NumberFormatter(format="0.0000")})
        self.info = pn.pane.Markdown("Pick a run to inspect one of its labels.")
        self._sources = [ColumnDataSource({"x": [], "y": [], "v": []}) for _ in range(4)]
        self._figures = [new_figure("", "iteration", "", width=width, height=height) for _ in range(4)]
        for fig, source in zip(self._figures, self._sources):
            fig.line(x="x", y="y", source=source, line_width=2, color="#444444")
            fig.scatter(x="x", y="y", source=source, size=5, color="#444444")
            fig.add_tools(HoverTool(tooltips=[("iteration", "@x"), ("value", "@v")]))
        self.runs: dict[str, PlotRun] = {}
        self._shown: tuple | None = None
        self._drawn: list[tuple | None] = [None] * 4  # per figure: the run, label and field it draws
        self.run.param.watch(locked(lambda _e: self._pick_run()), "value")
        self.label.param.watch(locked(lambda _e: self.redraw()), "value")
        self.slowest.param.watch(self._pick_row, "selection")

    def show(self, runs: dict[str, PlotRun]) -> None:
        """Offer the shown runs that train label by label; redraw if the inspected label's records
        changed. Says so when none of them has labels."""
        self.runs = {run: r for run, r in runs.items() if r.records.iterations.per_label() or len(r.records.labels)}
        options = {r.name: run for run, r in self.runs.items()}
        if options != self.run.options:
            self.run.options = options
        if self.run.value not in self.runs:
            self.run.value = next(iter(self.runs), None)
        if not self.runs:
            self.info.object = _no_labels(runs)
            for fig in self._figures:
                fig.visible = False
            self._shown, self._drawn = None, [None] * 4
            return
        self._update_table()
        self.redraw()

    def _pick_run(self) -> None:
        plot_run = self.runs.get(self.run.value)
        if plot_run is not None:
            self.label.end = max(0, plot_run.total - 1)
            self.label.value = min(self.label.value, self.label.end)
        self._update_table()
        self.redraw()

    def _update_table(self) -> None:
        plot_run = self.runs.get(self.run.value)
        labels = plot_run.records.labels if plot_run else pd.DataFrame()
        frame = slowest_labels(labels, SLOWEST)[[c for c in LABEL_COLUMNS if c in labels]].reset_index(drop=True)
        if "status" in frame:
            frame["status"] = [_status(s) for s in frame["status"]]
        if not frame.equals(self.slowest.value):
            self.slowest.value = frame

    def _pick_row(self, event) -> None:
        if event.new and event.new[0] < len(self.slowest.value):
            self.label.value = int(self.slowest.value.iloc[event.new[0]]["label"])

    def redraw(self) -> None:
        """Draw the picked label's trajectory if its run's records changed (a zoom kept while the
        label stays the same), or retick a zoomed figure."""
        plot_run = self.runs.get(self.run.value)
        if plot_run is None:
            return
        state = (self.run.value, self.label.value, plot_run.records.version)
        if state == self._shown:
            for fig, drawn in zip(self._figures, self._drawn):
                if drawn is not None and (zoomed(fig.x_range) or zoomed(fig.y_range)):
                    retick(fig, False, drawn[-1] in LOG_TRAJECTORY)
            return
        self._shown = state
        steps = plot_run.records.iterations.trajectory(self.label.value)
        fields = [f for f in TRAJECTORY if f in steps][:4]
        for i, (fig, source, field) in enumerate(zip(self._figures, self._sources, fields + [None] * 4)):
            fig.visible = field is not None
            drawn, self._drawn[i] = self._drawn[i], None if field is None else state[:2] + (field,)
            if field is None:
                continue
            log = field in LOG_TRAJECTORY
            values = steps[field].to_numpy(np.float64)
            source.data = {"x": steps["iteration"].to_numpy(), "y": scaled(values, log), "v": values}
            set_log(fig.yaxis[0], log, field_label(field))
            fit(fig, [source.data["x"]], [source.data["y"]], False, log, follow=drawn != self._drawn[i])
            fig.title.text = f"label {self.label.value}: {field_label(field)}"
        labels = plot_run.records.labels
        row = labels[labels["label"].to_numpy() == self.label.value] if "label" in labels else labels.iloc[:0]
        if not len(steps):
            self.info.object = f"Label {self.label.value} of {markdown_text(plot_run.name)} has not been trained yet."
        else:
            summary = ", ".join(f"{c} {_cell(c, row.iloc[0][c])}" for c in LABEL_COLUMNS[1:] if c in row) if len(row) else ""
            self.info.object = (f"**{markdown_text(plot_run.name)}**, label {self.label.value}: {len(steps)} iterations recorded. "
                                f"{summary}")

    def panel(self) -> pn.Column:
        return pn.Column(pn.Row(self.run, self.label), self.info,
                         pn.Row(self.slowest, pn.GridBox(*[pn.pane.Bokeh(f) for f in self._figures], ncols=2)),
                         sizing_mode="stretch_width")
