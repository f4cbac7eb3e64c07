"""Compare with...: the ticked runs trained again by another solver or variant, on the same data.

A comparison is a set of runs, not one solver's variants: from a ticked run (a DiSMEC Newton run,
say), pick another solver and variant (PPDSparse with the squared hinge) and launch it on the run's
training and test files, with its threads and, where the other solver distributes too, its
cluster. The parameters both solvers have *with the same default* (C, bias, normalize, ...) keep
the run's values; a parameter whose default differs between the two (eps, max_iter,
prune_threshold: a Newton tolerance is not a coordinate-descent one) means something else in each
and takes the other solver's default. The page then ticks the run and its counterpart together.
"""
from __future__ import annotations

import json
from typing import Callable

import panel as pn

from ...runs.progress import run_spec
from ...runs.spec import RunSpec
from ...solvers import SOLVERS
from .launch import run_name, variant_objects
from .runs_table import below
from ..._util.text import markdown_text


def targets() -> dict[str, tuple[str, object]]:
    """The choices of "compare with": label -> (solver, value of its compared parameter), every
    variant of every registered solver."""
    out = {}
    for name, solver in SOLVERS.items():
        for variant in variant_objects(solver.params(), solver.compare):
            out[f"{name} · {solver.compare}={variant}"] = (name, variant)
    return out


def shared_params(source: str, values: dict, target: str) -> dict:
    """The values of `values` (parameters of solver `source`) that solver `target` takes as they
    are: those of the parameters both have with the same default, but the target's compared one."""
    mine, theirs = SOLVERS[source].params.param, SOLVERS[target].params.param
    return {k: v for k, v in values.items()
            if k in theirs and k in mine and k not in ("name", SOLVERS[target].compare)
            and mine[k].default == theirs[k].default}


def counterpart(spec: dict, solver: str, variant) -> RunSpec:
    """The validated spec of a run's counterpart: `solver` at `variant` on the run's data (`spec`,
    the run's as stored), with the parameters the two solvers share (`shared_params`), its threads,
    and its cluster where `solver` distributes. ValueError says why it cannot run."""
    target = SOLVERS.get(solver)
    if target is None or spec.get("solver") not in SOLVERS:
        raise ValueError(f"no solver {spec.get('solver') if target else solver!r} to compare with")
    params = {**shared_params(spec["solver"], spec.get("params") or {}, solver), target.compare: variant}
    cluster = spec.get("cluster") if target.distributes else None
    return RunSpec(dataset=spec["dataset"], test=spec.get("test"), solver=solver, params=params,
                   threads=spec.get("threads"), cluster=cluster,
                   name=run_name(spec["dataset"], solver, variant)).validate()


class CompareWith:
    """The runs table's "compare with..." action: a choice of solver and variant and a button that
    launches, for each ticked run, its counterpart (`counterpart`; one launch for identical ones)
    through `launch(specs, sources)`, which returns the new runs' ids or raises ValueError."""

    def __init__(self, rows: Callable[[list[str]], list[dict]], ticked: Callable[[], list[str]],
                 launch: Callable[[list[RunSpec], list[str]], list[str]]) -> None:
        self.rows, self.ticked, self.launch = rows, ticked, launch
        options = targets()
        self.target = pn.widgets.Select(label="", options=options, value=options["ppdsparse · loss=squared_hinge"],
                                        width=230, margin=(5, 5))
        self.button = pn.widgets.Button(label="Compare with", color="primary", margin=(5, 5), description=below(
            "Launch the solver and variant chosen beside this button on the data of each ticked run, with the "
            "parameters both solvers share (same name and default); the ticked runs and the new ones are shown "
            "together"))
        self.message = pn.pane.Alert("", alert_type="warning", visible=False, sizing_mode="stretch_width")

    def say(self, text: str, kind: str = "warning") -> None:
        """Show (or with "" hide) what the last click did or why it did nothing."""
        self.message.alert_type, self.message.object = kind, markdown_text(text)
        self.message.visible = bool(text)

    def click(self, _event=None) -> list[str]:
        """Launch the counterparts of the ticked runs; returns the new runs' ids."""
        sources = self.ticked()
        if not sources:
            self.say("Tick a run to compare with first.")
            return []
        solver, variant = self.target.value
        specs: dict[str, RunSpec] = {}
        try:
            for row in self.rows(sources):
                spec = counterpart(run_spec(row), solver, variant)
                specs.setdefault(json.dumps({**json.loads(spec.to_json()), "name": ""}, sort_keys=True), spec)
            new = self.launch(list(specs.values()), sources)
        except ValueError as exc:
            self.say(f"Cannot compare with {solver} ({variant}): {exc}", "danger")
            return []
        self.say("")
        return new

    def panel(self) -> pn.Row:
        return pn.Row(self.target, self.button, margin=0)
