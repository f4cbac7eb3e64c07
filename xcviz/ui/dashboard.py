"""The xcviz dashboard: launch runs, watch them train live from the run store, compare them.

The page never touches a running solver: it launches background runs through the run spec and
reads what they record, once a second, incrementally (only the record batches it has not seen).
"""
from __future__ import annotations

from pathlib import Path

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn

from ..data.registry import bundled, resolve
from ..engine.threads import max_threads
from ..runs.aggregate import relative_to_final
from ..runs.launcher import launch, resume
from ..runs.spec import RunSpec
from ..runs.store import RunStore
from ..solvers import SOLVERS
from .bands import band_plot, run_colors, scatter_by_run

PLOTS = (("objective_gap", "(f - f_final) / f_final", True), ("active_fraction", "active set / n", False),
         ("step_size", "line-search multiplier", False), ("seconds", "seconds per iteration", True))
# iteration 0 is the starting point: it has no step, and its seconds are set-up time
FROM_FIRST_STEP = ("step_size", "seconds")


class RecordCache:
    """Each run's records read so far; `refresh` appends only the batches written since."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.frames: dict[str, dict[str, pd.DataFrame]] = {}
        self.seen: dict[tuple[str, str], int] = {}

    def refresh(self, run: str) -> dict[str, pd.DataFrame]:
        frames = self.frames.setdefault(run, {"iteration": pd.DataFrame(), "label": pd.DataFrame()})
        for kind in frames:
            new, last = self.store.records(run, kind, after=self.seen.get((run, kind), 0))
            if len(new):
                frames[kind] = pd.concat([frames[kind], new], ignore_index=True)
                self.seen[(run, kind)] = last
        return frames


class Dashboard:
    """The page: a launch panel, the runs table, live plots of the selected runs."""

    def __init__(self, store: RunStore | None = None, data_dirs: list[Path] | None = None) -> None:
        self.store = store or RunStore()
        self.cache = RecordCache(self.store)
        self.datasets = bundled() + [str(p) for d in data_dirs or [] for p in sorted(Path(d).glob("*_train.txt*"))]
        self.dataset = pn.widgets.Select(name="Data set", options=self.datasets, value=self.datasets[0])
        # the launch panel's widgets are the Newton solver's; other solvers run from specs until the
        # panel rebuilds its widgets per solver
        self.solver = pn.widgets.Select(name="Solver", options=["dismec"], value="dismec")
        self.inits = pn.widgets.MultiChoice(name="Initializers to compare", options=["zero", "bias", "ovap", "msi"],
                                            value=["zero", "msi"])
        self.threads = pn.widgets.IntSlider(name="Threads", start=1, end=max_threads(), value=1)
        self.params = SOLVERS["dismec"].params()
        self.param_pane = pn.Param(self.params, parameters=["loss", "C", "eps", "max_iter"], show_name=False,
                                   widgets={"C": pn.widgets.FloatInput, "eps": pn.widgets.FloatInput,
                                            "max_iter": pn.widgets.IntInput})
        self.launch_button = pn.widgets.Button(name="Compare", button_type="primary")
        self.launch_button.on_click(self._launch)
        self.message = pn.pane.Alert("", alert_type="danger", visible=False)
        self.table = pn.widgets.Tabulator(self._runs_frame(), selectable="checkbox", height=220, disabled=True,
                                          show_index=False, name="runs", sizing_mode="stretch_width",
                                          formatters={k: {"type": "money", "precision": 2} for k in ("p@1", "p@5", "psp@5")})
        self.progress = pn.Column()
        self.plots = pn.pane.HoloViews(hv.Div("<p>Launch or select runs to see them train.</p>"), sizing_mode="stretch_width")
        self.status = pn.pane.Markdown("", name="status")
        self.cancel_button = pn.widgets.Button(name="Cancel ticked runs", button_type="warning")
        self.resume_button = pn.widgets.Button(name="Resume ticked runs", button_type="success")
        self.cancel_button.on_click(lambda _e: self._on_ticked(self.store.request_cancel))
        self.resume_button.on_click(lambda _e: self._on_ticked(lambda run: resume(self.store, run)))
        self.watched: list[str] = []  # the runs launched from this page, plotted until others are ticked
        self._sizes: dict[str, int] = {}

    def _runs_frame(self, rows: list[dict] | None = None) -> pd.DataFrame:
        rows = self.store.list() if rows is None else rows
        return pd.DataFrame([{"id": r["id"], "name": r["name"], "status": r["status"],
                              "done": f"{r['done']}/{r['total']}",
                              "p@1": r["summary"].get("p@1", np.nan), "p@5": r["summary"].get("p@5", np.nan),
                              "psp@5": r["summary"].get("psp@5", np.nan)} for r in rows],
                            columns=["id", "name", "status", "done", "p@1", "p@5", "psp@5"])

    def _launch(self, _event=None) -> None:
        try:
            values = {k: v for k, v in self.params.param.values().items() if k in ("C", "eps", "loss", "max_iter")}
            runs = []
            for init in self.inits.value or ["msi"]:
                spec = RunSpec(dataset=self.dataset.value, solver=self.solver.value, params={**values, "init": init},
                               threads=self.threads.value, name=f"{Path(self.dataset.value).name}-{init}")
                runs.append(launch(spec, self.store))
            self.message.visible = False
            self.watched = runs
            self.refresh()
        except ValueError as exc:
            self.message.object = str(exc)
            self.message.visible = True

    def _ticked(self) -> list[str]:
        frame = self.table.value
        return [frame.iloc[i]["id"] for i in self.table.selection if i < len(frame)]

    def _on_ticked(self, action) -> None:
        """Apply a run action (cancel, resume) to the ticked runs; errors show on the page."""
        try:
            for run in self._ticked():
                action(run)
            self.message.visible = False
        except ValueError as exc:
            self.message.object = str(exc)
            self.message.visible = True
        self.refresh()

    def _rows_of(self, row: dict) -> int:
        """Training rows of a run's data set (for the active set as a fraction)."""
        spec = RunSpec.from_json(row["spec"])
        key = f"{spec.dataset}|{spec.test}"
        if key not in self._sizes:
            self._sizes[key] = resolve(spec.dataset, spec.test)[0].n
        return self._sizes[key]

    def refresh(self) -> None:
        """Re-read the store: the runs table, progress bars and plots of the watched runs."""
        listed = self.store.list()
        self.table.value = self._runs_frame(listed)
        selected = self._ticked() or self.watched
        if not selected:
            return
        iterations, labels, bars = {}, {}, []
        rows = {r["id"]: r for r in listed}
        for run in selected:
            frames = self.cache.refresh(run)
            row = rows.get(run)
            if row is None:
                continue
            name = row["name"]
            it = frames["iteration"]
            if len(it):
                it = it.assign(objective_gap=relative_to_final(it))
                iterations[name] = it.assign(active_fraction=it["active_set"] / self._rows_of(row))
            labels[name] = frames["label"]
            bars.append(pn.Row(pn.pane.Markdown(f"**{name}** {row['status']} {row['done']}/{row['total']} labels"),
                               pn.indicators.Progress(value=int(row["done"]), max=max(1, int(row["total"])),
                                                      width=200)))
        self.progress.objects = bars
        colors = run_colors(list(iterations))
        panels = []
        for field, label, logy in PLOTS:
            runs = {}
            for name, v in iterations.items():
                if field not in v:
                    continue
                keep = np.ones(len(v), bool)
                if field in FROM_FIRST_STEP:
                    keep &= v["iteration"].to_numpy() > 0
                if logy:
                    keep &= v[field].to_numpy() > 0
                if keep.any():
                    runs[name] = v[keep]
            if runs:
                panels.append(band_plot(runs, field, label=label, logy=logy, colors=colors))
        done_labels = {k: v for k, v in labels.items() if len(v)}
        if done_labels:
            panels.append(scatter_by_run(done_labels, "n_pos", "iterations", logx=True, colors=colors))
        if panels:
            self.plots.object = hv.Layout(panels).cols(2)
        total_records = sum(len(v) for v in iterations.values())
        self.status.object = f"records shown: {total_records}"

    def view(self) -> pn.Row:
        sidebar = [pn.pane.Markdown("### Launch"), self.dataset, self.solver, self.inits, self.threads,
                   self.param_pane, self.launch_button, self.message]
        main = [pn.Column(pn.pane.Markdown("## Runs"), self.table, pn.Row(self.cancel_button, self.resume_button),
                          self.progress, self.status,
                          pn.pane.Markdown("## Live"), self.plots, sizing_mode="stretch_width")]
        pn.state.add_periodic_callback(self.refresh, period=1000)
        return pn.Row(pn.Column(pn.pane.Markdown("# xcviz"), *sidebar, width=300), *main)
