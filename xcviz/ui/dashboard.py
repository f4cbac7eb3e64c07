"""The xcviz dashboard: launch runs, watch them train live from the run store, compare them.

The page never touches a running solver: it launches background runs through the run spec and
reads what they record, once a second, incrementally (only the record batches it has not seen,
and only for runs that can still have new ones). It composes the components of `xcviz.ui`: the
launch panel, the runs table with its exports, the live band plots and the per-label views.
"""
from __future__ import annotations

import time
from pathlib import Path

import panel as pn

from ..runs.aggregate import eta_seconds
from ..runs.launcher import launch
from ..runs.store import RunStore
from .datasets import checked_dataset, dataset_choices
from .export import ExportButtons
from .figures import locked
from .label_views import LabelInspector
from .launch import LaunchPanel
from .records import PlotRun
from .run_view import RunView
from .runs_table import RunsTable
from .workers_view import WorkersView


def _progress_text(name: str, row: dict) -> str:
    text = f"**{name}** {row['status']} {row['done']}/{row['total']} labels"
    eta = eta_seconds(time.time() - row["started"], row["done"], row["total"]) if row["started"] else None
    return text + (f", ETA {eta:.0f} s" if row["status"] == "running" and eta is not None else "")


class Dashboard:
    """The page: a launch panel, the runs table, live plots and per-label views of the shown runs
    (the ticked runs; while none is ticked, those launched from this page or, until then, those
    that were training when the page opened)."""

    def __init__(self, store: RunStore | None = None, data_dirs: list[str | Path] | None = None) -> None:
        self.store = store or RunStore()
        self.data_dirs = list(data_dirs or [])
        self.live = RunView(self.store)
        self.cache, self.plots, self.positives = self.live.cache, self.live.plots, self.live.positives
        self.launcher = LaunchPanel(dataset_choices(self.data_dirs))
        self.launcher.compare_button.on_click(locked(self._launch))
        self.launch_message = pn.pane.Alert("", alert_type="danger", visible=False)
        self.runs = RunsTable(self.store, on_change=self.refresh, on_delete=self._forget)
        self.export = ExportButtons(self.store, self.runs.ticked)
        self.inspector = LabelInspector()
        self.workers = WorkersView(self.store)
        self.progress = pn.Column()
        self.status = pn.pane.Markdown("", styles={"font-size": "12px"})
        # the runs launched from this page, or those training when it opened; shown while none is ticked
        self.watched: list[str] = []
        self._opened = False
        self._bars: dict[str, tuple[pn.pane.Markdown, pn.indicators.Progress, pn.Row]] = {}
        self._rows: dict[str, dict] = {}
        self.runs.table.param.watch(locked(lambda _e: self.show()), "selection")

    def _launch(self, _event=None) -> None:
        """Compare: one background run per selected variant; errors show in the page."""
        try:
            dataset, test = checked_dataset(self.launcher.dataset.value, self.data_dirs)
            self.watched = [launch(spec, self.store) for spec in self.launcher.specs(dataset, test)]
            self.launch_message.visible = False
        except ValueError as exc:
            self.launch_message.object = str(exc)
            self.launch_message.visible = True
        self.refresh()

    def _forget(self, run: str) -> None:
        """A deleted run leaves the caches and the plots."""
        self.live.forget(run)
        self.workers.forget(run)
        self.watched = [r for r in self.watched if r != run]
        if run in self._bars:
            self.progress.remove(self._bars.pop(run)[2])

    def shown(self) -> list[str]:
        return [r for r in (self.runs.ticked() or self.watched) if r in self._rows]

    def refresh(self) -> None:
        """Re-read the store (the run list, new records of the shown runs) and update the page."""
        listed = self.store.list()
        self._rows = {r["id"]: r for r in listed}
        if not self._opened:  # a page opened while runs train (a reconnect, a restarted server) shows them
            self._opened = True
            self.watched = self.watched or [r["id"] for r in listed if r["status"] in ("queued", "running")]
        self.runs.update(listed)
        self.show()

    def show(self) -> None:
        """Update the views for the shown runs; reads only records not read yet."""
        self.export.enable(bool(self.runs.ticked()))
        runs = self.live.update(self._rows, self.shown())
        self._update_progress(runs)
        self.inspector.show(runs)
        self.workers.update(self._rows, list(runs))
        total = sum(len(r.records.iterations) for r in runs.values())
        self.status.object = f"records shown: {total} (runs shown: {len(runs)})"

    def _update_progress(self, runs: dict[str, PlotRun]) -> None:
        for run, plot_run in runs.items():
            row = self._rows[run]
            if run not in self._bars:
                text, bar = pn.pane.Markdown(margin=(0, 10)), pn.indicators.Progress(width=200, max=1)
                self._bars[run] = (text, bar, pn.Row(bar, text))
            text, bar, _ = self._bars[run]
            words = _progress_text(plot_run.name, row)
            if text.object != words:
                text.object = words
            if (bar.value, bar.max) != (int(row["done"]), max(1, int(row["total"]))):
                bar.max, bar.value = max(1, int(row["total"])), int(row["done"])
        # a run's row is made once and hidden while the run is not shown, so a change of the ticked
        # runs sends visibility flags, not new models
        new = [row for run, (_, _, row) in self._bars.items() if row not in self.progress.objects]
        if new:
            self.progress.extend(new)
        for run, (_, _, row) in self._bars.items():
            if row.visible != (run in runs):
                row.visible = run in runs

    def view(self) -> pn.Row:
        """The page; refreshes itself once a second while it is open."""
        sidebar = pn.Column(pn.pane.Markdown("# xcviz"), self.launcher.panel(), self.launch_message, width=300)
        tabs = pn.Tabs(("Live plots", self.plots.panel()), ("Per label", self.positives.panel()),
                       ("Label inspector", self.inspector.panel()), ("Workers", self.workers.panel()),
                       sizing_mode="stretch_width", dynamic=True)
        main = pn.Column(pn.pane.Markdown("## Runs"), self.runs.panel(), self.export.panel(), self.progress,
                         self.status, tabs, sizing_mode="stretch_width")
        pn.state.add_periodic_callback(self.refresh, period=1000)
        self.refresh()
        return pn.Row(sidebar, main, sizing_mode="stretch_width")
