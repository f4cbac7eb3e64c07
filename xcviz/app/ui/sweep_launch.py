"""Sweep from the launch panel: one numeric parameter of the chosen solver over a list of values
or a lin/log range, each value a background run, as `xcviz sweep` does (`runs.sweep`: the same
value syntax, the same limit of `MAX_RUNS`, the same names, every spec checked before any run
starts).

The run swept is the one the panel's Compare would launch first (its data set, threads, backend,
parameters and first selected variant). The values start as the decade around the parameter's
value (0.1,1,10 for C = 1), so that "sweep C" is a choice and a click."""
from __future__ import annotations

import html

import panel as pn
import param

from ...runs.spec import RunSpec
from ...runs.sweep import MAX_RUNS, parse_values, sweep_specs
from ...solvers import SOLVERS
from .launch import WIDTH, LaunchPanel


def numeric_params(params: param.Parameterized, compare: str) -> list[str]:
    """The parameters a sweep can vary: numbers and whole numbers, not switches nor the compared one."""
    return [n for n, p in params.param.objects("existing").items()
            if isinstance(p, param.Number) and not isinstance(p, param.Boolean) and n != compare]


def default_values(params: param.Parameterized, name: str) -> str:
    """Values to start a sweep of `name` from, around its value now: the decade around a positive
    number (v/10, v, 10v), v, 2v, 4v for a positive count, 0,1,2 from zero (a seed), a unit step
    otherwise (each value still checked against the parameter's bounds at launch)."""
    value = getattr(params, name)
    if isinstance(params.param[name], param.Integer):
        value = int(value or 0)
        return f"{value},{2 * value},{4 * value}" if value > 0 else f"{value},{value + 1},{value + 2}"
    if value is None:
        return ""
    if value > 0:
        return f"{value / 10:g},{value:g},{value * 10:g}"
    return f"lin:{value:g}:{value + 1:g}:3"


class SweepLaunch:
    """The sweep's widgets under the launch panel: the parameter, its values, and Sweep."""

    def __init__(self, launcher: LaunchPanel) -> None:
        self.launcher = launcher
        self.parameter = pn.widgets.Select(label="Sweep a parameter", options=[], width=WIDTH)
        self.values = pn.widgets.TextInput(
            label="values", width=WIDTH, placeholder="0.1,1,10 or log:0.01:100:5",
            description=f"A comma list (0.1,1,10), lin:START:STOP:COUNT or log:START:STOP:COUNT; from 2 to "
                        f"{MAX_RUNS} values, each one background run")
        self.button = pn.widgets.Button(label="Sweep", color="primary", width=WIDTH, description=(
            "One background run per value, otherwise the run Compare launches first (its first selected variant); "
            "the runs are ticked and their final P@k, seconds and model size drawn against the parameter"))
        self.message = pn.pane.HTML("", visible=False, width=WIDTH, margin=(0, 10),
                                    styles={"color": "#b00020", "font-size": "12px"})
        launcher.solver.param.watch(lambda _e: self._offer(), "value")  # after the panel rebuilt its parameters
        self.parameter.param.watch(lambda _e: self._start_values(), "value")
        self._offer()

    def _offer(self) -> None:
        """The chosen solver's numeric parameters; the values start around the first one's."""
        names = numeric_params(self.launcher.params, SOLVERS[self.launcher.solver.value].compare)
        keep = self.parameter.value if self.parameter.value in names else (names[0] if names else None)
        self.parameter.options = names
        self.parameter.value = keep
        self._start_values()

    def _start_values(self) -> None:
        if self.parameter.value:
            self.values.value = default_values(self.launcher.params, self.parameter.value)

    def say(self, text: str) -> None:
        """Show (or with "" hide) why the last Sweep launched nothing."""
        self.message.object, self.message.visible = html.escape(text), bool(text)

    def specs(self, dataset: str, test: str | None) -> list[RunSpec]:
        """One validated spec per value (runs.sweep.sweep_specs); ValueError says what is wrong."""
        if not self.parameter.value:
            raise ValueError("this solver has no numeric parameter to sweep")
        base = self.launcher.specs(dataset, test)[0]
        return sweep_specs(base, self.parameter.value, parse_values(self.values.value.strip()))

    def panel(self) -> pn.Column:
        return pn.Column(pn.pane.Markdown("**Sweep** (one run per value)", margin=(10, 10, 0, 10)), self.parameter,
                         self.values, self.button, self.message, margin=0)
