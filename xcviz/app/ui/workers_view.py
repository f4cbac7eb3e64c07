"""The Workers view: which worker trained which block of labels, and when.

Every one-vs-all run stores one `task` record per block (worker, start, end, labels, seconds,
bytes returned): a Dask run one lane per worker process (a worker that died and was replaced
gets a new lane), a threads run one lane for its numba threads. The timeline draws each block as
a bar on its worker's lane, from the run's first block start, so idle gaps (a worker waiting for
the last blocks, a worker restarting, a run resumed later) show as empty stretches; the table
under it sums them per lane. Beside it, the cost model (runs.costmodel): the makespan predicted
for 1 to 1024 workers from a finished run's per-label seconds, with the measured runs as points.
"""
from __future__ import annotations

import html

import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import ColumnDataSource, FactorRange, HoverTool
from bokeh.plotting import figure

from ...runs.costmodel import BANDWIDTH, TASK_OVERHEAD, WORKERS, predict_makespan
from ...runs.launcher import FINAL
from ...runs.store import RunStore
from .colors import RunColors, preferred_color
from .figures import style_legend

_EMPTY = {k: [] for k in ("lane", "left", "right", "run", "worker", "task", "labels", "seconds", "bytes", "color")}


def lane_name(run_name: str, worker: str, several: bool) -> str:
    """The lane of a worker: the worker's address (or threads:N), prefixed by the run's name when
    several runs are shown."""
    return f"{run_name} | {worker}" if several else worker


def lane_summary(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per lane of one run's task records: blocks, labels, busy seconds and idle seconds within the
    run's span (first block start to last block end), and the busy share in percent."""
    if tasks.empty:
        return pd.DataFrame(columns=["worker", "blocks", "labels", "busy_s", "idle_s", "busy_pct"])
    span = float(tasks["end"].max() - tasks["start"].min())
    out = tasks.groupby("worker", sort=True).agg(blocks=("task", "size"), labels=("labels", "sum"),
                                                 busy_s=("seconds", "sum")).reset_index()
    out["idle_s"] = np.maximum(span - out["busy_s"], 0.0)
    out["busy_pct"] = 100.0 * out["busy_s"] / span if span > 0 else 100.0
    return out


class WorkersView:
    """`update(rows, shown)` reads the shown runs' new task records and redraws the timeline and
    the per-lane table; `figures()` gives the timeline for the report."""

    def __init__(self, store: RunStore, width: int = 900) -> None:
        self.store = store
        self.tasks: dict[str, pd.DataFrame] = {}
        self._seen: dict[str, int] = {}
        self._complete: set[str] = set()
        self.colors = RunColors()  # when not given the page's: a run keeps its colour, runs shown together differ
        self.source = ColumnDataSource(dict(_EMPTY))
        self.timeline = figure(title="blocks of labels per worker (a bar per block; gaps are idle time)",
                               y_range=FactorRange(factors=[]), width=width, height=220,
                               tools="xpan,xwheel_zoom,box_zoom,reset,save", toolbar_location="right")
        self.timeline.hbar(y="lane", left="left", right="right", height=0.7, color="color", line_color="white",
                           source=self.source)
        self.timeline.add_tools(HoverTool(tooltips=[("run", "@run"), ("worker", "@worker"), ("block", "@task"),
                                                    ("labels", "@labels"), ("seconds", "@seconds{0.000}"),
                                                    ("bytes returned", "@bytes{0,0}")]))
        self.timeline.xaxis.axis_label = "seconds since the run's first block started"
        self.timeline.title.text_font_size = "11px"
        self.table = pn.pane.HTML("", sizing_mode="stretch_width")
        self._drawn: tuple | None = None  # what the timeline shows: (run, name, colour, blocks) per shown run

    def _read(self, run: str, row: dict) -> pd.DataFrame:
        if run not in self._complete or row["status"] not in FINAL:
            new, last = self.store.records(run, "task", after=self._seen.get(run, 0))
            if not new.empty:
                self.tasks[run] = pd.concat([self.tasks.get(run, pd.DataFrame()), new], ignore_index=True)
            self._seen[run] = last
            if row["status"] in FINAL:
                self._complete.add(run)
        return self.tasks.get(run, pd.DataFrame())

    def update(self, rows: dict[str, dict], shown: list[str], colors: dict[str, str] | None = None) -> None:
        """Show the task timelines of these runs (ids, with their store rows), each in the colour
        `colors` gives it (the page's live view's), else in one this view gives (`colors.RunColors`,
        the same as a view given the same runs). Nothing is sent to the page when no shown run has
        new blocks and the runs, names and colours are those drawn (the dashboard calls this on every
        tick while the tab is open)."""
        colors = colors or self.colors.assign({run: preferred_color(rows[run]) for run in shown})
        several = len(shown) > 1
        read = {run: self._read(run, rows[run]) for run in shown}
        drawn = tuple((run, rows[run]["name"], colors[run], len(read[run])) for run in shown)
        if drawn == self._drawn:
            return
        self._drawn = drawn
        parts, lanes, tables = [], [], []
        for run in shown:
            tasks = read[run]
            if tasks.empty:
                continue
            name = rows[run]["name"]
            t0 = float(tasks["start"].min())
            lane = [lane_name(name, w, several) for w in tasks["worker"]]
            lanes += [x for x in dict.fromkeys(sorted(lane)) if x not in lanes]
            parts.append(pd.DataFrame({"lane": lane, "left": tasks["start"] - t0, "right": tasks["end"] - t0,
                                       "run": name, "worker": tasks["worker"], "task": tasks["task"],
                                       "labels": tasks["labels"], "seconds": tasks["seconds"], "bytes": tasks["bytes"],
                                       "color": colors[run]}))  # the run's colour everywhere
            summary = lane_summary(tasks)
            tables.append(f"<b>{html.escape(name)}</b>" + summary.to_html(
                index=False, border=0, classes="xc", float_format=lambda v: f"{v:.3g}", escape=True))
        data = pd.concat(parts, ignore_index=True).to_dict("list") if parts else dict(_EMPTY)
        if list(self.timeline.y_range.factors) != lanes:
            self.timeline.y_range.factors = lanes
            self.timeline.height = 80 + 28 * max(1, len(lanes))
        self.source.data = data
        text = "".join(tables) or ("<i>No blocks recorded yet for the shown runs: one-vs-all runs (dismec, ppdsparse) "
                                   "record each block of labels they train; MEMOIR, DS-MLR and LDGS train all classes "
                                   "at once and record none.</i>")
        if self.table.object != text:
            self.table.object = text

    def forget(self, run: str) -> None:
        for store in (self.tasks, self._seen):
            store.pop(run, None)
        self._complete.discard(run)
        self._drawn = None

    def figures(self) -> list:
        return [self.timeline]

    def panel(self) -> pn.Column:
        return pn.Column(pn.pane.Bokeh(self.timeline), self.table, sizing_mode="stretch_width")


def scaling_figure(label_seconds: np.ndarray, n_pos: np.ndarray, data_bytes: float,
                   measured: list[tuple[int, float, str]], *, title: str = "", width: int = 560):
    """The cost model's predicted makespan for 1 to 1024 workers (a line, the broadcast part
    dashed) beside the measured runs (points: workers, seconds, name); the assumptions in the title."""
    pred = predict_makespan(label_seconds, n_pos, data_bytes)
    fig = figure(title=title or "predicted training time against workers (cost model)", width=width, height=320,
                 x_axis_type="log", y_axis_type="log", tools="pan,wheel_zoom,box_zoom,reset,save,hover",
                 tooltips=[("workers", "@workers"), ("seconds", "@seconds{0.000}"), ("", "@what")])
    line = ColumnDataSource({"workers": pred.workers, "seconds": pred.seconds,
                             "what": [f"predicted ({b} blocks)" for b in pred.blocks]})
    fig.line("workers", "seconds", source=line, legend_label="predicted", line_width=2)
    fig.scatter("workers", "seconds", source=line, size=4)
    positive = pred.broadcast > 0
    if positive.any():
        fig.line(pred.workers[positive], pred.broadcast[positive], line_dash="dashed", color="gray",
                 legend_label="of which data broadcast")
    if measured:
        points = ColumnDataSource({"workers": [m[0] for m in measured], "seconds": [m[1] for m in measured],
                                   "what": [m[2] for m in measured]})
        fig.scatter("workers", "seconds", source=points, size=10, color="#d62728", marker="diamond",
                    legend_label="measured")
    fig.xaxis.axis_label, fig.yaxis.axis_label = "workers (one thread each)", "seconds"
    style_legend(fig)
    fig.title.text_font_size = "11px"
    return fig


COST_ASSUMPTIONS = (f"Cost model: each label takes the seconds it took in the measured run, on one thread; blocks "
                    f"cut as a Dask run cuts them, handed to the first free worker, {TASK_OVERHEAD * 1e3:g} ms "
                    f"overhead per block; the data sent to each worker in turn at {BANDWIDTH / 1e9:g} GB/s. "
                    f"Workers 1 to {WORKERS[-1]}.")
