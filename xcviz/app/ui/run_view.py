"""Live views of some runs of a store, for the dashboard and for notebooks: the band plots and the
per-positives scatter, fed incrementally from the store (only record batches not read yet, and
nothing more for a run once its final records have been read)."""
from __future__ import annotations

import panel as pn

from ..._util.text import printable, short_name
from ...runs.launcher import FINAL
from ...runs.progress import run_spec
from ...runs.store import RunStore
from .colors import RunColors, preferred_color
from .label_views import PositivesView
from .live_plots import LivePlots
from .records import PlotRun, RecordCache
from .references import lbfgs_references, newton_rows_reference
from .seed_view import SeedGrouping


def notebook_extension() -> None:
    """Load Panel's and Bokeh's JavaScript (and the runs table's) into the notebook itself, to call
    before showing a `RunView` in Jupyter. Panel's default fetches them from a CDN, so without internet
    the view stayed blank in JupyterLab; inline, the notebook works offline (and is larger by a few MB)."""
    pn.extension("tabulator", inline=True)


class RunView:
    """`update(rows, shown)` reads what is new for the shown runs and redraws; `follow()` does it
    once a second until every followed run has ended (in a notebook or a served page)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.cache = RecordCache(store)
        self.plots = LivePlots()
        self.positives = PositivesView()
        self.seeds = SeedGrouping()  # off: a curve per run; on: a curve per group of seeds
        self.colors = RunColors()  # a run keeps its colour while this view lives; runs shown together differ
        self._complete: set[str] = set()
        self._callback = None
        self._layouts: list[pn.Column] = []  # what panel() returned: pushed to a notebook after each tick

    def update(self, rows: dict[str, dict], shown: list[str], texts: tuple[str, ...] = ("plots", "positives")
               ) -> dict[str, PlotRun]:
        """Show these runs (ids, with their store rows); the views named in `texts` also update the
        text they show beside their figures (a page leaves out those of tabs it does not show), and
        the per-label figures are drawn only when "positives" is named: a finished run of 10M records
        has half a million label points, which a page recomputed at every live batch while its tab
        was closed (`Dashboard._open_tab` draws them before the tab shows them).
        Returns the runs as the views see them."""
        runs = {}
        colors = self.colors.assign({run: preferred_color(rows[run]) for run in shown})
        for run in shown:
            row = rows[run]
            if run not in self._complete or row["status"] not in FINAL:  # a resumed run is read again
                before = self.cache.runs.get(run)
                if self.cache.refresh(run, finished=row["status"] in FINAL) is not before and before is not None:  # its records were reset
                    self.plots.forget(run)
                    self.positives.forget(run)
                if row["status"] in FINAL:  # nothing more will come: read what there is, then stop asking
                    self._complete.add(run)
                else:
                    self._complete.discard(run)
            runs[run] = PlotRun(short_name(printable(row["name"])), colors[run], self.cache.runs[run],
                                int(row["total"]))
        self.plots.statuses = {run: rows[run]["status"] for run in shown}
        plotted = self.seeds.apply(runs, {run: run_spec(rows[run]) for run in shown})
        self.plots.show(plotted, text="plots" in texts, references={**lbfgs_references(rows, runs), **newton_rows_reference(runs)})
        if "positives" in texts:
            self.positives.show(runs)
        return runs

    def forget(self, run: str) -> None:
        """A deleted run leaves the caches and the plots."""
        self.cache.forget(run)
        self.plots.forget(run)
        self.positives.forget(run)
        self._complete.discard(run)

    def follow(self, runs: list[str], period_ms: int = 1000) -> None:
        """Redraw `runs` from the store every period until all of them have ended."""
        def tick() -> None:
            rows = {r["id"]: r for r in self.store.list()}
            self.update(rows, [r for r in runs if r in rows])
            pn.io.push_notebook(*self._layouts)  # a notebook sends changes to Bokeh models only when asked
            if all(rows.get(r, {}).get("status") in FINAL for r in runs) and self._callback is not None:
                self._callback.stop()

        tick()
        self._callback = pn.state.add_periodic_callback(tick, period=period_ms)

    def panel(self) -> pn.Column:
        """The view's figures; in a notebook, each one returned is redrawn as `follow` ticks."""
        layout = pn.Column(self.plots.panel(), pn.pane.Markdown("### Per label"), self.positives.panel(),
                           sizing_mode="stretch_width")
        self._layouts.append(layout)
        return layout
