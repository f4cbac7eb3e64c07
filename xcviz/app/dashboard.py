"""The xcviz dashboard: launch runs, watch them train live from the run store, compare them.

The page never touches a running solver: it launches background runs through the run spec and
reads what they record, once a second, incrementally (only the record batches it has not seen,
and only for runs that can still have new ones). It composes the components of `xcviz.app.ui`: the
launch panel, the runs table with its exports, the live band plots and the per-label views.
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path

import panel as pn

from ..data.registry import bundled
from ..runs.launcher import launch
from ..runs.store import RunStore, StoreError
from .ui.datasets import checked_dataset, dataset_choices, refused_datasets
from .export import ExportButtons
from .ui.compare import CompareWith
from .ui.figures import locked
from .ui.estimate_view import EstimatePanel
from .ui.upload import UploadPanel
from .ui.label_views import LabelInspector
from .ui.launch import WIDTH, LaunchPanel
from .ui.run_view import RunView
from .ui.runs_table import RunsTable, newest_comparison
from .ui.sweep_launch import SweepLaunch
from .ui.sweep_panel import SweepPanel
from .._util.text import markdown_text
from .ui.workers_view import WorkersView

WELCOME = ("**No runs yet.** Pick a data set, a solver and the variants to compare on the left, then press "
           "**Compare**: each variant trains in the background and its curves appear here as it records them. "
           "Or start with the MSI paper's first comparison:")
EXAMPLE = {"dataset": "bibtex", "solver": "dismec", "variants": ["zero", "msi"]}
TABS = ("Live plots", "Per label", "Label inspector", "Workers")


class Dashboard:
    """The page: a launch panel, the runs table, live plots and per-label views of the shown runs
    (the ticked runs; while none is ticked, those launched from this page or, until then, those
    that were training when the page opened). A page opened while no run trains ticks the newest
    comparison, so that it opens on curves; a launch replaces those ticks until the user ticks."""

    def __init__(self, store: RunStore | None = None, data_dirs: list[str | Path] | None = None,
                 schedulers: list[str] = ()) -> None:
        self.store = store or RunStore()
        self.data_dirs, self.schedulers = list(data_dirs or []), list(schedulers)
        self.live = RunView(self.store)
        self.cache, self.plots, self.positives = self.live.cache, self.live.plots, self.live.positives
        self.launcher = LaunchPanel(dataset_choices(self.data_dirs), refused_datasets(self.data_dirs), self.schedulers)
        self.launcher.compare_button.on_click(locked(self._launch))
        self.launch_message = self.launcher.launch_message  # below Compare
        self.estimates = EstimatePanel(WIDTH)  # below it: what a run would cost (issue 39)
        self.estimates.button.on_click(locked(self._estimate))
        self.upload = UploadPanel(self.data_dirs, WIDTH, self._uploaded)  # your own file, issue 40
        self.store_alert = pn.pane.Alert("", alert_type="danger", visible=False)
        self.runs = RunsTable(self.store, on_change=self.refresh, on_delete=self._forget, schedulers=self.schedulers)
        self.export = ExportButtons(self.store, self.runs.ticked)
        self.compare = CompareWith(lambda runs: [self._rows[r] for r in runs if r in self._rows], self.runs.ticked,
                                   self._launch_ticked)
        self.compare.button.on_click(locked(self.compare.click))
        self.sweep = SweepLaunch(self.launcher)
        self.sweep.button.on_click(locked(self._sweep))
        self.sweep_view = SweepPanel()
        self.live.seeds.switch.param.watch(locked(lambda _e: self.show()), "value")
        self.status = pn.pane.Markdown("", styles={"font-size": "12px"}, margin=(8, 10))
        self.example_button = pn.widgets.Button(label="Compare zero and MSI initialisation on Bibtex",
                                                color="primary")
        self.example_button.on_click(locked(self._example))
        self.welcome = pn.Column(pn.pane.Markdown(WELCOME), self.example_button, visible=False,
                                 styles={"background": "#eef4fb", "border-radius": "4px"}, sizing_mode="stretch_width")
        # the runs launched from this page, or those training when it opened; shown while none is ticked
        self.watched: list[str] = []
        self.opening: list[str] = []  # the runs the page ticked when it opened (see _first_view)
        self._opened = False
        self._rows: dict[str, dict] = {}
        self.runs.table.param.watch(locked(lambda _e: self.show()), "selection")
        # only the open tab's components are on the page (updating those of a closed tab there sends
        # stylesheets linking Panel's CDN), and only its texts, widgets and per-label figures are
        # kept up to date (the live plots' figures always are). Opening a tab brings its components up to
        # date first, then puts them on the page: they arrive drawn, in the one message that adds
        # them (with Panel's dynamic tabs they arrived as last drawn and were updated a tick later,
        # in messages that could overtake the one adding them: "reference pNNNN isn't known").
        # The label inspector and the workers' timeline are made when their tab first opens: their
        # figures took a fifth of the server's time to open a page
        self._tab_views: dict[int, pn.viewable.Viewable] = {}
        self._tab_slots = [pn.Column(sizing_mode="stretch_width", margin=0) for _ in TABS]
        self.tabs = pn.Tabs(*zip(TABS, self._tab_slots), sizing_mode="stretch_width")
        self.tabs.param.watch(locked(lambda _e: self._open_tab()), "active")
        self._open_tab()

    def _open_tab(self) -> None:
        """Bring the open tab's components up to date while they are off the page, then put them
        in its slot (and take the closed tabs' out of theirs)."""
        self.show()
        for index, slot in enumerate(self._tab_slots):
            objects = [self._tab_view(index)] if index == self.tabs.active else []
            if slot.objects != objects:
                slot.objects = objects

    def _tab_view(self, index: int) -> pn.viewable.Viewable:
        """The components of tab `index`, made the first time it opens."""
        if index not in self._tab_views:
            self._tab_views[index] = (self.plots.panel, self.positives.panel, lambda: self.inspector.panel(),
                                      lambda: self.workers.panel())[index]()
        return self._tab_views[index]

    @cached_property
    def inspector(self) -> LabelInspector:
        """The label inspector's tab, made when it first opens (`_tab_view`)."""
        return LabelInspector()

    @cached_property
    def workers(self) -> WorkersView:
        """The workers' timeline tab, made when it first opens (`_tab_view`)."""
        return WorkersView(self.store)

    def _launch(self, _event=None) -> None:
        """Compare: one background run per selected variant; what could not be launched shows below
        the button. A click clears the messages of the last launch and run action (cancel, delete),
        which would otherwise seem to be about it. With a refused field (Compare disabled, but a
        click may reach the server), nothing is launched: its message is beside it already."""
        self.runs.say("")
        self.launch_message.visible = False
        if self.launcher.check():
            return
        try:
            dataset, test = checked_dataset(self.launcher.dataset.value, self.data_dirs)
            self.watched = [launch(spec, self.store, self.data_dirs, self.schedulers)
                            for spec in self.launcher.specs(dataset, test)]
            self._untick_opening()
        except ValueError as exc:
            self.launch_message.object = markdown_text(exc)
            self.launch_message.visible = True
        self.refresh()

    def _estimate(self, _event=None) -> None:
        """Estimate first: predict each selected variant's run (one-vs-all solvers) in a child
        process; the refresh shows the predictions as they come."""
        if self.launcher.check():
            return
        try:
            dataset, test = checked_dataset(self.launcher.dataset.value, self.data_dirs)
            self.estimates.start(self.launcher.specs(dataset, test))
        except ValueError as exc:
            self.estimates.say(str(exc))

    def _uploaded(self, path: Path) -> None:
        """A file kept from the page: offered in the data-set select and, a training file, selected."""
        refused = {k: v for k, v in self.launcher.dataset.options.items() if str(v).startswith("refused:")}
        self.launcher.dataset.options = {**dataset_choices(self.data_dirs), **refused}
        if "_train.txt" in path.name:
            self.launcher.dataset.value = str(path)

    def _launch_ticked(self, specs: list, keep: list[str]) -> list[str]:
        """Launch these specs as background runs and tick them with the runs `keep` (a Compare
        with... or a sweep: the page then shows them together); returns the new runs' ids."""
        self.runs.say("")
        self.launch_message.visible = False
        launched = [launch(spec, self.store, self.data_dirs, self.schedulers) for spec in specs]
        self.watched = launched
        self.opening = []
        self.refresh()  # the new runs in the table, so that their rows can be ticked
        self.runs.tick([*keep, *launched])
        self.show()
        return launched

    def _sweep(self, _event=None) -> None:
        """Sweep: one background run per value of the chosen parameter, ticked; what could not
        be launched shows below the button."""
        self.sweep.say("")
        try:
            dataset, test = checked_dataset(self.launcher.dataset.value, self.data_dirs)
            self._launch_ticked(self.sweep.specs(dataset, test), [])
        except ValueError as exc:
            self.sweep.say(str(exc))

    def _example(self, _event=None) -> None:
        """The first visit's example: zero against MSI initialisation on Bibtex, default parameters."""
        if "bibtex" in bundled() and "bibtex" in self.launcher.dataset.options.values():
            self.launcher.dataset.value = EXAMPLE["dataset"]
        self.launcher.solver.value = EXAMPLE["solver"]
        self.launcher.variants.value = EXAMPLE["variants"]
        self._launch()

    def _untick_opening(self) -> None:
        """Untick the runs the page ticked when it opened, if the user has not changed those ticks:
        the runs just launched show instead, as they do on a page where nothing is ticked. Ticks the
        user made stay."""
        if self.opening and set(self.runs.ticked()) == set(self.opening):
            self.runs.tick([])
        self.opening = []

    def _first_view(self, listed: list[dict]) -> None:
        """What a newly opened page shows: the runs training (a reconnect, a restarted server),
        unticked, as launched ones are; if none trains, the newest comparison (`newest_comparison`),
        ticked, so that the plots show its curves and the table which runs they are. An empty store
        shows the welcome instead."""
        self.watched = self.watched or [r["id"] for r in listed if r["status"] in ("queued", "running")]
        if not self.watched:
            self.opening = newest_comparison(listed)
            self.runs.tick(self.opening)

    def _forget(self, run: str) -> None:
        """A deleted run leaves the caches and the plots."""
        self.live.forget(run)
        if "workers" in vars(self):  # its tab has opened (`workers`)
            self.workers.forget(run)
        self.watched = [r for r in self.watched if r != run]

    def shown(self) -> list[str]:
        """The runs the views show: the ticked ones or, with none ticked, the watched ones."""
        return [r for r in (self.runs.ticked() or self.watched) if r in self._rows]

    def refresh(self) -> None:
        """Re-read the store (the run list, new records of the shown runs) and update the page."""
        try:
            listed = self.store.list()
        except StoreError as exc:  # a store gone, damaged or locked: say so, keep the page
            self.store_alert.object = markdown_text(f"The run store cannot be read: {exc}")
            self.store_alert.visible = True
            return
        self.store_alert.visible = False
        self._rows = {r["id"]: r for r in listed}
        self.runs.update(listed)
        self.estimates.poll()
        if not self._opened:
            self._opened = True
            self._first_view(listed)
        if self.welcome.visible != (not listed):
            self.welcome.visible = not listed
        self.show()

    def show(self) -> None:
        """Update the views for the shown runs; reads only records not read yet."""
        self.export.enable([self._rows[r]["name"] for r in self.runs.ticked() if r in self._rows])
        self.sweep_view.update([self._rows[r] for r in self.runs.ticked() if r in self._rows])
        tab = self.tabs.active
        runs = self.live.update(self._rows, self.shown(), texts=("plots", "positives", "", "")[tab:tab + 1])
        if tab == 2:
            self.inspector.show(runs)
        elif tab == 3:
            self.workers.update(self._rows, list(runs), {run: r.color for run, r in runs.items()})
        total = sum(len(r.records.iterations) for r in runs.values())
        text = f"records shown: {total} (runs shown: {len(runs)}, {self._how_shown(bool(runs))})"
        if text != self.status.object:
            self.status.object = text

    def _how_shown(self, any_shown: bool) -> str:
        """How the shown runs were chosen, for the line above the plots."""
        ticked = self.runs.ticked()
        if ticked and set(ticked) == set(self.opening):
            return "ticked when the page opened: the newest comparison; tick runs to choose"
        if ticked:
            return "ticked"
        if any_shown:
            return "launched from this page or training when it opened; tick runs to choose"
        return "tick runs in the table to plot them"

    def view(self) -> pn.Row:
        """The page, plots first: the launch panel on the left; on the right the runs table (in a
        collapsible card with the actions and exports in one row), then the plot tabs. Refreshes
        itself once a second while it is open."""
        sidebar = pn.Column(pn.pane.Markdown("## xcviz", margin=(0, 10)),
                            self.launcher.panel(self.estimates.button, self.estimates.result, self.upload.panel()),
                            self.sweep.panel(),
                            width=290, scroll=True, height_policy="max", styles={"border-right": "1px solid #ddd"})
        table = pn.Card(pn.Row(self.runs.actions(), self.export.panel(), margin=0), self.runs.panel(),
                        pn.Row(self.compare.panel(), self.compare.message, margin=0),
                        title="Runs", collapsed=False, sizing_mode="stretch_width", margin=(0, 5),
                        header_background="#f4f4f4")
        main = pn.Column(self.store_alert, self.welcome, table, self.sweep_view.panel(),
                         pn.Row(self.status, self.live.seeds.panel(), margin=0), self.tabs, sizing_mode="stretch_width")
        pn.state.add_periodic_callback(self.refresh, period=1000)
        if pn.state.curdoc is not None:  # served: no estimate outlives its page
            pn.state.curdoc.on_session_destroyed(lambda _context: self.estimates.close())
        self.refresh()
        return pn.Row(sidebar, main, sizing_mode="stretch_both")
