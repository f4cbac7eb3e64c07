"""The runs table: every run of the store with its data set, solver, variant, status, progress and
final metrics side by side; filters by data set, solver and status; cancel, resume and delete (with
a confirmation in the page) the ticked runs; the error of a failed run in its row and above the
table when it is ticked.

The table's columns never change, nor their types: the parameters that differ among a solver's runs
share one column, hidden while none differ, and accuracy and macro-F1 have theirs, hidden until a
run has them. A column shows or hides (`hidden_columns`); Panel's Tabulator would rebuild itself after a
change of its columns (or of a column's type, which sets its sorter) and drop the rows that reach
it while it rebuilds, and the ticks it puts back. Ticked runs are remembered by id, so a
refresh or a filter keeps them ticked; the table is only sent to the browser again when one of its
cells changed, with the columns shown and the ticks in the same message. The browser reports
ticks as row numbers of the data it holds, which may be a refresh behind the server's: so a
refresh never moves a row.
The rows are kept in the order the store made the runs (a new run is added after the others, its
row number one past the last) and the browser sorts them newest first; only a run leaving the
list (a deletion, a filter) moves the rows after it, and the ticks are then put back by id.
"""
from __future__ import annotations

import json
import time
from typing import Callable

import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import Tooltip
from bokeh.models.widgets.tables import NumberFormatter

from ...records.climbs import CLIMB_RISES, CLIMB_RTOL, climb_text
from ...runs.aggregate import eta_seconds
from ...runs.launcher import resume
from ...runs.progress import progress_text, restart_note, run_spec
from ...runs.store import RunStore
from ...solvers import SOLVERS
from .figures import locked
from .tick_table import TickTable
from ..._util.text import html_text, markdown_text, printable

METRICS = ("p@1", "p@3", "p@5", "ndcg@1", "ndcg@3", "ndcg@5", "psp@1", "psp@3", "psp@5", "accuracy", "macro_f1")
ALWAYS = METRICS[:9]  # accuracy and macro-F1 only when some run has them (multi-class test data)
FILTERED = ("dataset", "solver", "status")


HEADER_TIPS = {
    "climbs": f"The objective rose in {CLIMB_RISES} or more records in a row, each by more than {CLIMB_RTOL:g} of "
              "the value before (xcviz.records.climbs; runs that record one trajectory: MEMOIR, DS-MLR, LDGS)",
    "parameters": "The run's parameters whose values differ among the runs of its solver in the store (the one "
                  "its Compare varies is the variant column)",
    "train s": "train_seconds: training alone, without the kernels' compile",
    "compile s": "compile_seconds: compiling, or loading from numba's cache, the solver's kernels before "
                 "training (0 when the run's process had them already)"}


def run_row(row: dict, now: float | None = None) -> dict:
    """One line of the table from a store row."""
    spec = run_spec(row)
    solver = spec.get("solver", "")
    compare = SOLVERS[solver].compare if solver in SOLVERS else None
    done, total = int(row["done"]), int(row["total"])
    eta = eta_seconds((now or time.time()) - row["started"], done, total) if row["started"] else None
    return {"name": printable(row["name"]), "status": row["status"],
            "error": printable(row["error"] or "", keep="\n\t"),
            "progress": round(100 * done / total) if total else 0, "done": progress_text(row, spec),
            "ETA s": float(round(eta)) if row["status"] == "running" and eta is not None else np.nan,
            "climbs": climb_text(row["summary"].get("objective_climbs", [])),
            "train s": row["summary"].get("train_seconds", np.nan),
            "compile s": row["summary"].get("compile_seconds", np.nan),
            "dataset": printable(str(spec.get("dataset", "")).rsplit("/", 1)[-1]), "solver": solver,
            "variant": str(spec.get("params", {}).get(compare, "")) if compare else "",
            **{m: row["summary"].get(m, np.nan) for m in METRICS}, "id": row["id"],
            "number": int(row.get("number") or 0)}


BASE = tuple(run_row({"name": "", "status": "", "done": 0, "total": 0, "started": None, "spec": "{}", "summary": {},
                      "error": None, "id": ""}))
# each column's type, whatever the rows: Panel's Tabulator gives numeric columns a number sorter in
# its configuration, and rebuilds itself (dropping the page's ticks) when that changes
SECONDS = ("ETA s", "train s", "compile s")
BASE_TYPES = {c: np.float64 if c in SECONDS or c in METRICS else np.int64 if c in ("progress", "number") else object
              for c in BASE}
PARAMETERS = "parameters"  # the column of each run's parameters that differ (`parameter_texts`)


def parameter_texts(specs: list[dict]) -> list[str]:
    """For each run spec, the parameters whose value differs among the runs of its solver (held by
    some and not others counts), as "name=value" in name order; its compared parameter is left out:
    that is the variant column. One column: a column per parameter of every solver (70-odd, nearly
    all hidden) took a third of the page's models and half the table's build in the browser."""
    held = []
    for spec in specs:
        spec = spec if isinstance(spec, dict) else {}
        solver = str(spec.get("solver", ""))
        compare = SOLVERS[solver].compare if solver in SOLVERS else None
        params = spec.get("params") if isinstance(spec.get("params"), dict) else {}
        held.append((solver, {k: str(v) for k, v in params.items() if k != compare and v is not None}))
    values: dict[tuple, set[str | None]] = {}
    for solver, params in held:
        for name, value in params.items():
            values.setdefault((solver, name), set()).add(value)
    for (solver, name), seen in values.items():
        if any(name not in params for s, params in held if s == solver):
            seen.add(None)
    return [", ".join(f"{name}={params[name]}" for name in sorted(params) if len(values[solver, name]) > 1)
            for solver, params in held]


def runs_frame(rows: list[dict]) -> pd.DataFrame:
    """The table of these store rows in the order they were made, indexed by their number in the
    store (shown newest first by the page); the parameters that differ after the variant, all
    metrics after them (`hidden` says which the page shows)."""
    rows = sorted(rows, key=lambda r: r.get("created") or 0)
    frame = pd.DataFrame([run_row(r) for r in rows], columns=list(BASE)).astype(BASE_TYPES)
    frame.index = pd.Index(frame["number"].to_numpy(np.int64))
    frame.insert(frame.columns.get_loc("variant") + 1, PARAMETERS,
                 pd.Series(parameter_texts([run_spec(r) for r in rows]), index=frame.index, dtype=object))
    return frame


def _comparison(row: dict) -> tuple[str | None, str]:
    """What a run shares with the other runs of its Compare, as text (its spec but for its name and
    the value of its solver's compared parameter; None for a spec without a known solver), and that
    value, its variant."""
    spec = run_spec(row)
    solver = SOLVERS.get(str(spec.get("solver"))) if isinstance(spec, dict) else None
    if solver is None or not isinstance(spec.get("params"), dict):
        return None, ""
    params = dict(spec["params"])
    variant = json.dumps(params.pop(solver.compare, None))
    shared = {**{k: v for k, v in spec.items() if k != "name"}, "params": params}
    return json.dumps(shared, sort_keys=True, default=str), variant


def newest_comparison(rows: list[dict]) -> list[str]:
    """Ids of the newest run and of the runs made just before it that differ from it only in their
    name and variant, each variant once: the runs of the last Compare (or the newest run alone),
    newest first. A page opened over a store where nothing trains ticks them, so that it opens
    showing curves rather than empty plots."""
    group, variants, shared = [], set(), None
    for row in sorted(rows, key=lambda r: r.get("created") or 0, reverse=True):
        key, variant = _comparison(row)
        if group and (key is None or key != shared or variant in variants):
            break
        group.append(row["id"])
        shared = key
        variants.add(variant)
    return group


def below(text: str) -> Tooltip:
    """A button's tooltip, shown under it."""
    return Tooltip(content=text, position="bottom")


def hidden(frame: pd.DataFrame) -> list[str]:
    """The columns the page hides: the ids, the parameters while no run's differ, accuracy and
    macro-F1 while no run has them, and the objective's climbs while no run climbs
    (records.climbs)."""
    climbing, differing = frame["climbs"].astype(bool).any(), frame[PARAMETERS].astype(bool).any()
    return ["id", "number", *([] if climbing else ["climbs"]), *([] if differing else [PARAMETERS]),
            *(m for m in METRICS if m not in ALWAYS and not frame[m].notna().any())]


class RunsTable:
    """The table, its filters and the actions on ticked runs. `on_change` is called after an action
    changed the store; `on_delete(run)` after a run was deleted."""

    def __init__(self, store: RunStore, on_change: Callable[[], None], on_delete: Callable[[str], None],
                 schedulers: list[str] = ()) -> None:
        self.store, self.on_change, self.on_delete = store, on_change, on_delete
        self.schedulers = list(schedulers)  # the Dask schedulers a resumed run may still use
        self.filters = {c: pn.widgets.MultiChoice(label=c, options=[], width=150, placeholder=f"all {c}s"
                                                  if c != "status" else "any status", margin=(0, 5))
                        for c in FILTERED}
        self._full = runs_frame([])
        self.table = TickTable(  # a tick the page sent survives a refresh (tick_table)
            self._full, selectable="checkbox", disabled=True, show_index=False, pagination="local", page_size=5,
            sizing_mode="stretch_width", layout="fit_data_table", frozen_columns=["name"],
            hidden_columns=hidden(self._full), sorters=[{"field": "number", "dir": "desc"}],  # newest first
            configuration={"columnDefaults": {"tooltip": True, "maxWidth": 260}},
            # the table fits its columns to the first rows it shows: "0/0 labels" then cut "128/159 labels"
            widths={"done": 160},  # "12345/20000 sampled" (a label-sample run) whole
            formatters={"progress": {"type": "progress", "max": 100, "legend": False},
                        "ETA s": NumberFormatter(format="0", nan_format=""),
                        **{c: NumberFormatter(format="0.00", nan_format="") for c in (*SECONDS[1:], *METRICS)}},
            titles={"climbs": "⚠ objective"}, header_tooltips=HEADER_TIPS)
        self.message = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self.failures = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        # tooltips below the buttons: beside them, they covered the next button
        self.cancel_button = pn.widgets.Button(label="Cancel", color="warning",
                                               description=below("Cancel the ticked runs"))
        self.resume_button = pn.widgets.Button(label="Resume", color="success", description=below(
            "Resume the ticked runs: a one-vs-all run (dismec, ppdsparse) trains only the labels it lacks; a "
            "multiclass run (memoir, dsmlr, ldgs) keeps no checkpoint and starts again from its first epoch"))
        self.delete_button = pn.widgets.Button(label="Delete", color="danger",
                                               description=below("Delete the ticked runs"))
        self.confirm_text = pn.pane.Markdown("")
        self.confirm_button = pn.widgets.Button(label="Confirm delete", color="danger")
        self.keep_button = pn.widgets.Button(label="Keep them", color="default")
        self.confirm = pn.Row(self.confirm_text, self.confirm_button, self.keep_button, visible=False,
                              styles={"background": "#fdecea", "border-radius": "4px", "padding": "4px"})
        # these change the store, after which the page's figures change: under the document lock
        self.cancel_button.on_click(locked(lambda _e: self._act(self._cancel, "cancel")))
        self.resume_button.on_click(locked(lambda _e: self._act(self._resume, "resume")))
        self.delete_button.on_click(lambda _e: self._ask_delete())
        self.confirm_button.on_click(locked(lambda _e: self._delete()))
        self.keep_button.on_click(lambda _e: setattr(self.confirm, "visible", False))
        self.ticked_ids: list[str] = []
        self.table.param.watch(self._on_select, "selection")
        for widget in self.filters.values():
            widget.param.watch(lambda _e: self._show(), "value")

    def update(self, rows: list[dict]) -> None:
        """New store rows (a refresh): update filter choices and the table if anything changed."""
        self._full = runs_frame(rows)
        for column, widget in self.filters.items():
            # label -> value: the browser's choice list renders labels as HTML (Choices.js)
            options = {html_text(v): v for v in sorted(set(self._full[column]) - {""})}
            if options != widget.options:
                widget.options = options
        self._show()

    def _show(self) -> None:
        frame = self._full
        for column, widget in self.filters.items():
            if widget.value:
                frame = frame[frame[column].isin(widget.value)]
        shown = hidden(self._full)
        if frame.equals(self.table.value) and shown == self.table.hidden_columns:
            return self._show_errors()
        before = list(self.table.value["id"])
        moved = list(frame["id"].iloc[:len(before)]) != before  # a run left the list: the rows after it move
        with pn.io.hold():  # one message: a row and the column that shows its value arrive together
            self.table.value = frame
            self.table.hidden_columns = shown
            # ticks follow their runs when rows move (a filter, a deletion); otherwise the table keeps
            # them, and setting them here could undo a tick the browser has sent but we have not seen
            if moved:
                self.table.selection = [i for i, run in enumerate(frame["id"]) if run in self.ticked_ids]
        self._show_errors()

    def _on_select(self, event) -> None:
        frame = self.table.value
        shown = set(frame["id"])
        # runs ticked but filtered out stay ticked; ticks on the shown rows are what the table says
        self.ticked_ids = [r for r in self.ticked_ids if r not in shown] + \
                          [frame.iloc[i]["id"] for i in event.new if i < len(frame)]
        self._show_errors()

    def tick(self, runs: list[str]) -> None:
        """Tick these runs and untick the others, from the server (the page's first view, and a
        launch that replaces it); the table sends the ticks to the page with the rows."""
        self.ticked_ids = list(runs)
        self.table.selection = [i for i, run in enumerate(self.table.value["id"]) if run in self.ticked_ids]
        self._show_errors()

    def ticked(self) -> list[str]:
        """Ids of the ticked runs that still exist."""
        present = set(self._full["id"])
        return [r for r in self.ticked_ids if r in present]

    def _show_errors(self) -> None:
        """The errors of the ticked runs that failed, above the table."""
        # two columns, not the hundred: itertuples over every column cost 30 ms a refresh
        failed = self._full.loc[self._full["id"].isin(self.ticked()) & (self._full["status"] == "failed"),
                                ["name", "error"]]
        text = "\n\n".join(f"**{markdown_text(r.name)} failed**: {markdown_text(r.error)}" for r in failed.itertuples())
        if text != self.failures.object:
            self.failures.object = text
            self.failures.visible = bool(text)

    def say(self, text: str, kind: str = "danger") -> None:
        """Show (or with "" hide) a message above the table (plain text: it may quote run names)."""
        self.message.alert_type = kind
        self.message.object = markdown_text(text)
        self.message.visible = bool(text)

    def _cancel(self, run: str) -> None:
        """Ask a run to stop; one that has ended already says so (a click that did nothing, silently,
        left a user wondering)."""
        status = self.store.get(run)["status"]
        if status in ("done", "failed", "cancelled"):
            raise ValueError(f"{self._name(run)} has already ended as {status}, nothing to cancel")
        self.store.request_cancel(run)

    def _name(self, run: str) -> str:
        name = self._full.loc[self._full["id"] == run, "name"]
        return name.iloc[0] if len(name) and name.iloc[0] else run

    def _resume(self, run: str) -> str:
        """Resume a run; says so when it starts again from scratch (a multiclass solver keeps no
        checkpoint: a resumed LDGS run cancelled at epoch 12 of 30 trains its 30 epochs anew, and
        its records start over)."""
        resume(self.store, run, self.schedulers)
        return restart_note(self.store.get(run))

    def _ticked_or_ask(self, verb: str) -> list[str]:
        """The ticked runs; with none, the page asks for a tick before it can `verb`."""
        runs = self.ticked()
        if not runs:
            self.say(f"Tick the runs to {verb} first.", "warning")
        return runs

    def _act(self, action: Callable[[str], None], verb: str) -> None:
        """Apply a run action (cancel, resume) to the ticked runs; errors show on the page."""
        runs = self._ticked_or_ask(verb)
        if not runs:
            return
        errors, notes = [], []
        for run in runs:
            try:
                notes.append(action(run) or "")
            except ValueError as exc:
                errors.append(str(exc))
        self.say("; ".join(errors) if errors else "; ".join(filter(None, notes)), "danger" if errors else "info")
        self.on_change()

    def _training(self, runs: list[str]) -> list[str]:
        """Those of `runs` still training (a store refuses to delete them)."""
        return [r for r in runs if self.store.get(r)["status"] in ("running", "queued")]

    def _ask_delete(self) -> None:
        """Ask before deleting the ticked runs, saying by name which of them are still training and
        will be kept (the store refuses to delete them: confirming, then being told no by run id,
        wasted the user's click); with nothing else ticked, just say so."""
        runs = self._ticked_or_ask("delete")
        if not runs:
            return
        training = self._training(runs)
        names = ", ".join(self._name(r) for r in training)
        still = f"{names} {'is' if len(training) == 1 else 'are'} still training"
        n = len(runs) - len(training)
        if not n:
            self.say(f"{still}: cancel, then delete")
            return
        self.confirm_text.object = (f"**Delete {n} runs?** This removes their records and models." if n > 1
                                    else "**Delete 1 run?** This removes its records and model.")
        if training:
            self.confirm_text.object += f" {markdown_text(still)}: kept (cancel, then delete)."
        self.confirm.visible = True

    def _delete(self) -> None:
        self.confirm.visible = False
        deleted, errors = [], []
        runs = self.ticked()
        training = set(self._training(runs))  # kept, as the question said
        for run in runs:
            if run in training:
                continue
            try:
                self.store.delete(run)
            except ValueError as exc:
                errors.append(str(exc))
                continue
            deleted.append(run)
            self.on_delete(run)
        self.ticked_ids = [r for r in self.ticked_ids if r not in deleted]
        self.say("; ".join(errors))
        self.on_change()

    def actions(self) -> pn.Row:
        """The filters and the buttons acting on ticked runs, in one row."""
        return pn.Row(*self.filters.values(), self.cancel_button, self.resume_button, self.delete_button,
                      margin=0)

    def panel(self) -> pn.Column:
        return pn.Column(self.table, self.confirm, self.message, self.failures, sizing_mode="stretch_width", margin=0)
