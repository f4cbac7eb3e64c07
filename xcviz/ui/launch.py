"""The launch panel: data set, solver, its parameters and the variants to compare.

Everything solver-specific comes from `xcviz.solvers.SOLVERS`: picking a solver rebuilds the
parameter widgets from its `param.Parameterized` class (numeric inputs bounded by the parameter's
bounds, its doc as the tooltip), and the variants offered are the objects of the solver's
`compare` parameter. A solver added to the registry appears here without a change.
"""
from __future__ import annotations

from pathlib import Path

import panel as pn
import param

from ..engine.threads import max_threads
from ..runs.cluster import MAX_LOCAL_WORKERS
from ..runs.spec import RunSpec
from ..solvers import SOLVERS

WIDTH = 260  # the sidebar's widgets


def _bounded_widgets(params: param.Parameterized, names: list[str]) -> dict:
    """Widgets that fit the sidebar; number inputs bounded by each numeric parameter's bounds
    (sliders would hide exact values); on/off choices as a yes/no select, because a checkbox has
    no tooltip to carry the parameter's doc."""
    widgets = {}
    for name in names:
        p = params.param[name]
        widgets[name] = {"width": WIDTH - 20}
        if isinstance(p, param.Number):
            lo, hi = p.bounds or (None, None)
            kind = pn.widgets.IntInput if isinstance(p, param.Integer) else pn.widgets.FloatInput
            widgets[name].update(type=kind, start=lo, end=hi)
        elif isinstance(p, param.Boolean):
            widgets[name].update(type=pn.widgets.Select, options={"yes": True, "no": False})
    return widgets


def variant_objects(params: param.Parameterized, name: str) -> list:
    """The values Compare can run side by side: the objects of the compare parameter."""
    p = params.param[name]
    if isinstance(p, param.Boolean):
        return [False, True]
    return list(getattr(p, "objects", None) or [p.default])


class BackendChoice:
    """Where the runs train: numba threads in the run's process, a local Dask cluster of N worker
    processes (each with the panel's Threads), or an existing scheduler's address."""

    def __init__(self) -> None:
        self.kind = pn.widgets.RadioButtonGroup(options=["threads", "local cluster", "scheduler"], value="threads",
                                                width=WIDTH, name="Run on")
        self.workers = pn.widgets.IntInput(name="Workers (processes)", start=1, end=MAX_LOCAL_WORKERS, value=2,
                                           width=WIDTH, visible=False)
        self.address = pn.widgets.TextInput(name="Scheduler address", placeholder="tcp://HOST:8786", width=WIDTH,
                                            visible=False)
        self.kind.param.watch(self._show, "value")

    def _show(self, _event=None) -> None:
        self.workers.visible = self.kind.value == "local cluster"
        self.address.visible = self.kind.value == "scheduler"

    def cluster(self, threads: int) -> str | None:
        """The spec's `cluster` value (the spec checks it)."""
        if self.kind.value == "local cluster":
            return f"local:{self.workers.value}x{threads}"
        if self.kind.value == "scheduler":
            return self.address.value.strip()
        return None

    def panel(self) -> pn.Column:
        return pn.Column(pn.pane.Markdown("Run on", margin=(0, 10)), self.kind, self.workers, self.address)


class LaunchPanel:
    """Widgets for one comparison; `specs()` gives one run spec per selected variant."""

    def __init__(self, datasets: dict[str, str]) -> None:
        self.dataset = pn.widgets.Select(label="Data set", options=datasets, value=next(iter(datasets.values())),
                                         width=WIDTH)
        self.solver = pn.widgets.Select(label="Solver", options=list(SOLVERS), value=next(iter(SOLVERS)), width=WIDTH)
        self.variants = pn.widgets.MultiChoice(label="Variants to compare", width=WIDTH)
        self.threads = pn.widgets.IntInput(label="Threads", start=1, end=max_threads(), value=1, width=WIDTH)
        self.backend = BackendChoice()
        self.params_box = pn.Column()
        self.compare_button = pn.widgets.Button(label="Compare", color="primary")
        self.solver.param.watch(lambda _e: self._build(), "value")
        self._build()

    def _build(self) -> None:
        """Widgets for the selected solver's parameters (all but the compared one)."""
        solver = SOLVERS[self.solver.value]
        self.params = solver.params()
        names = [n for n in self.params.param if n not in ("name", solver.compare)]
        objects = variant_objects(self.params, solver.compare)
        default = self.params.param[solver.compare].default
        self.variants.name = f"Variants to compare ({solver.compare})"
        self.variants.options = objects
        self.variants.value = list(dict.fromkeys([objects[0], default]))
        pane = pn.Param(self.params, parameters=names, show_name=False, widgets=_bounded_widgets(self.params, names),
                        width=WIDTH - 20)
        self.params_box.objects = [pn.pane.Markdown(f"**{solver.name} parameters** (hover a name for its meaning)"),
                                   pane]

    def specs(self, dataset: str, test: str | None) -> list[RunSpec]:
        """One validated run spec per selected variant, named data set - variant."""
        solver = SOLVERS[self.solver.value]
        values = {k: v for k, v in self.params.param.values().items() if k not in ("name", solver.compare)}
        stem = Path(dataset).name.partition("_train.txt")[0]
        return [RunSpec(dataset=dataset, test=test, solver=solver.name, params={**values, solver.compare: variant},
                        threads=self.threads.value, name=f"{stem}-{variant}",
                        cluster=self.backend.cluster(self.threads.value)).validate()
                for variant in self.variants.value or [self.params.param[solver.compare].default]]

    def panel(self) -> pn.Column:
        return pn.Column(pn.pane.Markdown("### Launch"), self.dataset, self.solver, self.variants, self.threads,
                         self.backend.panel(), self.compare_button, self.params_box)
