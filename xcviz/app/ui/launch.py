"""The launch panel: data set, solver, its parameters and the variants to compare.

Everything solver-specific comes from `xcviz.solvers.SOLVERS`: picking a solver rebuilds the
parameter widgets from its `param.Parameterized` class (labels spelled as the parameters are, the
parameter's doc as the tooltip), and the variants offered are the objects of the solver's
`compare` parameter. Parameters that belong to one variant (an oracle's, an initialiser's) sit in
a collapsible group shown only while that variant is selected. A value the parameter refuses
(out of bounds, not a number) is never replaced: its message shows beside the widget and Compare
stays disabled until it is fixed. The same holds for threads (1 to the cores numba may use, as the
CLI checks) and for a data set listed as refused (the reason shows beside the select). What a
Compare could not launch is said right below the button. A solver added to the registry appears
here without a change. Every default (the parameters' and threads') is the run spec's, the CLI's
and the API's: the page keeps none of its own (issue 40).
"""
from __future__ import annotations

import html
from pathlib import Path

import panel as pn
import param

from ...engine.threads import max_threads, thread_count
from ...compute.cluster import MAX_LOCAL_WORKERS
from ...oracles.registry import ORACLES
from ...runs.spec import DEFAULT_THREADS, RunSpec
from ...solvers import SOLVERS
from ...solvers.params import plain_refusal
from ..._util.text import printable

WIDTH = 260  # the sidebar's widgets


def variant_objects(params: param.Parameterized, name: str) -> list:
    """The values Compare can run side by side: the objects of the compare parameter."""
    p = params.param[name]
    if isinstance(p, param.Boolean):
        return [False, True]
    return list(getattr(p, "objects", None) or [p.default])


class Workers(param.Parameterized):
    """The worker processes of a local Dask cluster, bounded as run specs bound them."""

    workers = param.Integer(2, bounds=(1, MAX_LOCAL_WORKERS), doc="Dask worker processes the local cluster starts.")


class BackendChoice:
    """Where the runs train: numba threads in the run's process, a local Dask cluster of N worker
    processes (each with the panel's Threads), or one of the Dask schedulers the server was started
    with (`schedulers`; none: no such choice). A page's user never types an address: a scheduler
    sends its workers' results back to the run's process, which unpickles them, so a hostile one
    runs code there as the server's owner."""

    def __init__(self, schedulers: list[str] = ()) -> None:
        kinds = ["threads", "local cluster"] + (["scheduler"] if schedulers else [])
        self.kind = pn.widgets.RadioButtonGroup(options=kinds, value="threads", width=WIDTH, label="Run on")
        self.workers = ParamInput(Workers(), "workers", refusal=f"workers must be a whole number between 1 and "
                                                                f"{MAX_LOCAL_WORKERS}")
        self._workers = self.workers.panel()
        self._workers.visible = False
        self.address = pn.widgets.Select(label="Scheduler", options=list(schedulers), width=WIDTH, visible=False)
        self.kind.param.watch(self._show, "value")

    def _show(self, _event=None) -> None:
        self._workers.visible = self.kind.value == "local cluster"
        self.address.visible = self.kind.value == "scheduler"

    def check(self) -> str:
        """The workers field's refusal while a local cluster is chosen (typed values are kept, as
        every parameter's are), else ""."""
        return self.workers.check() if self.kind.value == "local cluster" else ""

    def cluster(self, threads: int) -> str | None:
        """The spec's `cluster` value (the spec checks it): a local cluster's workers share the run's
        `threads` (at least one each), so a box set to every core does not oversubscribe the machine."""
        if self.kind.value == "local cluster":
            workers = self.workers.params.workers
            return f"local:{workers}x{max(1, threads // workers)}"
        if self.kind.value == "scheduler":
            return self.address.value
        return None

    def panel(self) -> pn.Column:
        hint = ("threads: in each run's own process; local cluster: Dask worker processes on this machine"
                + ("; scheduler: one of those this server was started with" if self.address.options else
                   "; a Dask scheduler: start the server with `xcviz serve --allow-scheduler tcp://HOST:PORT` (a "
                   "scheduler can run code in the runs' processes, so the page's users cannot type one)"))
        title = pn.Row(pn.pane.Markdown("Run on", margin=(0, 0, 0, 10)), pn.widgets.TooltipIcon(value=hint), margin=0)
        return pn.Column(title, self.kind, self._workers, self.address)


def variant_groups(solver: str, params: param.Parameterized) -> dict[str, list[str]]:
    """The parameters that only one variant of the compared parameter uses: variant -> names. An
    oracle's are its parameter class's; otherwise those named after the variant (`msi_t` of msi)."""
    compare = SOLVERS[solver].compare
    names = [n for n in params.param if n not in ("name", compare)]
    groups = {}
    for variant in variant_objects(params, compare):
        if compare == "oracle" and variant in ORACLES:
            own = [n for n in ORACLES[variant][0].param if n in names]
        else:
            own = [n for n in names if n.startswith(f"{variant}_")]
        if own:
            groups[str(variant)] = own
    return groups


def _as_text(value) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def run_name(dataset: str, solver: str, variant) -> str:
    """A launched run's name: data set - variant, or data set - solver - variant for every solver
    but dismec, the default (MEMOIR's and LDGS's `exact` would otherwise both be "bibtex-exact")."""
    stem = printable(Path(dataset).name.partition("_train.txt")[0])  # a name shows no invisible character
    return f"{stem}-{variant}" if solver == "dismec" else f"{stem}-{solver}-{variant}"


class Threads(param.Parameterized):
    """The threads each run trains on, bounded as the CLI and run specs bound them (`max_threads`),
    starting where they start (a run spec's default, all cores)."""

    threads = param.Integer(thread_count(DEFAULT_THREADS), bounds=(1, max_threads()),
                            doc="Numba threads each run trains on (default: all cores, as `xcviz train`).")


class ParamInput:
    """One parameter's widget and the message that says why a typed value is refused."""

    def __init__(self, params: param.Parameterized, name: str, tip: str = "", refusal: str = "") -> None:
        """`tip`: added to the tooltip; `refusal`: the message for any refused value, in place of
        param's (which names only the bound crossed)."""
        self.params, self.name, self.refusal = params, name, refusal
        p = params.param[name]
        doc = " ".join(filter(None, [p.doc, f"Bounds: {p.bounds[0]} to {p.bounds[1]}." if getattr(p, "bounds", None)
                                     else "", tip]))
        value = getattr(params, name)
        if isinstance(p, param.Boolean):
            self.widget = pn.widgets.Select(label=name, options={"yes": True, "no": False}, value=value,
                                            description=doc, width=WIDTH - 20)
        elif isinstance(p, param.Selector):
            self.widget = pn.widgets.Select(label=name, options=list(p.objects), value=value, description=doc,
                                            width=WIDTH - 20)
        else:  # numbers as text: a refused entry ("abc", -5) stays on screen with its message
            self.widget = pn.widgets.TextInput(label=name, value=_as_text(value), description=doc, width=WIDTH - 20,
                                               placeholder="unset" if p.allow_None else "")
        self.message = pn.pane.HTML("", visible=False, width=WIDTH - 20, margin=(0, 10),
                                    styles={"color": "#b00020", "font-size": "12px"})
        self.error = ""

    def check(self) -> str:
        """Set the parameter from the widget; "" if accepted, else the parameter's message (shown)."""
        p = self.params.param[self.name]
        raw = self.widget.value
        error = ""
        try:
            if isinstance(self.widget, pn.widgets.TextInput):
                text = raw.strip()
                if not text and p.allow_None:
                    value = None
                elif isinstance(p, param.Integer):
                    value = int(text)
                else:
                    value = float(text)
                    if value != value or abs(value) == float("inf"):  # nan passes no bound check, says nothing
                        raise ValueError(f"{self.name} must be a finite number, not {text!r}")
            else:
                value = raw
            setattr(self.params, self.name, value)
        except ValueError as exc:
            kind = "a whole number" if isinstance(p, param.Integer) else "a number"
            error = str(exc) if "must be" in str(exc) or "not in" in str(exc) else f"{self.name} must be {kind}, not {raw!r}"
            error = self.refusal or plain_refusal(error)  # "C must be at least ..."
        if error != self.error:
            self.error = error
            self.message.object = html.escape(error)
            self.message.visible = bool(error)
        return error

    def panel(self) -> pn.Column:
        return pn.Column(self.widget, self.message, margin=0)


class LaunchPanel:
    """Widgets for one comparison; `specs()` gives one run spec per selected variant."""

    def __init__(self, datasets: dict[str, str], refused: dict[str, str] | None = None,
                 schedulers: list[str] = ()) -> None:
        """`datasets`: label -> value of the data sets offered; `refused`: file -> why it is not;
        `schedulers`: the Dask schedulers runs may be sent to (see BackendChoice). A
        refused file is listed, with its reason, as an option that blocks Compare rather than a
        disabled one: a browser can still send a disabled option, which Panel then refuses with an
        exception, after setting it and before telling anyone else."""
        self._refused = {f"refused:{name}": f"{name} cannot be used: {why}." for name, why in (refused or {}).items()}
        shown = {f"{name} (refused: {why})": f"refused:{name}" for name, why in (refused or {}).items()}
        self.dataset = pn.widgets.Select(label="Data set", options={**datasets, **shown},
                                         value=next(iter(datasets.values())), width=WIDTH)
        self.dataset_message = pn.pane.HTML("", visible=False, width=WIDTH, margin=(0, 10),
                                            styles={"color": "#b00020", "font-size": "12px"})
        self.solver = pn.widgets.Select(label="Solver", options=list(SOLVERS), value=next(iter(SOLVERS)), width=WIDTH)
        self.variants = pn.widgets.MultiChoice(label="Variants to compare", width=WIDTH)
        self.threads = ParamInput(Threads(), "threads", refusal=f"threads must be a whole number between 1 and "
                                                                f"{max_threads()} (the cores of this server)")
        self.backend = BackendChoice(schedulers)
        self.params_box = pn.Column(margin=0)
        self.compare_button = pn.widgets.Button(label="Compare", color="primary", width=WIDTH)
        self.blocked = pn.pane.HTML("", visible=False, width=WIDTH, styles={"color": "#b00020", "font-size": "12px"})
        self.launch_message = pn.pane.Alert("", alert_type="danger", visible=False, width=WIDTH)
        self.inputs: dict[str, ParamInput] = {}
        self.groups: dict[str, pn.Card] = {}
        self._kept: dict[str, tuple[param.Parameterized, list]] = {}  # solver -> its parameters and variants
        self._built: str | None = None
        self.solver.param.watch(lambda _e: self._build(), "value")
        self.variants.param.watch(lambda _e: self._show_groups(), "value")
        for widget in (self.dataset, self.threads.widget, self.backend.kind, self.backend.workers.widget):
            widget.param.watch(lambda _e: self.check(), "value")
        self._build()

    def _build(self) -> None:
        """Widgets for the selected solver's parameters (all but the compared one): its main ones,
        then one collapsed group per variant that has parameters of its own. A solver shown before
        comes back with the values and variants it had (switching solvers loses no setting)."""
        if self._built is not None:
            self._kept[self._built] = (self.params, list(self.variants.value))
        solver = SOLVERS[self.solver.value]
        self._built = solver.name
        if solver.name in self._kept:
            self.params, chosen = self._kept[solver.name]
        else:  # the solver's own defaults, those of `xcviz train` and `xcviz.train` (one source)
            self.params, chosen = solver.params(), None
        names = [n for n in self.params.param if n not in ("name", solver.compare)]
        objects = variant_objects(self.params, solver.compare)
        default = self.params.param[solver.compare].default
        self.variants.label = f"Variants to compare ({solver.compare})"
        self.variants.options = objects
        self.variants.value = chosen if chosen is not None else list(dict.fromkeys([objects[0], default]))
        self.inputs = {n: ParamInput(self.params, n) for n in names}
        for item in self.inputs.values():
            item.widget.param.watch(lambda _e: self.check(), "value")
        grouped = variant_groups(solver.name, self.params)
        in_group = {n for names_ in grouped.values() for n in names_}
        self.groups = {variant: pn.Card(*[self.inputs[n].panel() for n in own if n in self.inputs],
                                        title=f"{variant} parameters", collapsed=True, width=WIDTH, margin=(5, 0))
                       for variant, own in grouped.items()}
        self.params_box.objects = [pn.pane.Markdown(f"**{solver.name} parameters** (hover ? for meaning)", margin=(5, 0)),
                                   *[self.inputs[n].panel() for n in names if n not in in_group],
                                   *self.groups.values()]
        self._show_groups()
        self.check()

    def _show_groups(self) -> None:
        chosen = {str(v) for v in self.variants.value}
        for variant, card in self.groups.items():
            if card.visible != (variant in chosen):
                card.visible = variant in chosen

    def check(self) -> list[str]:
        """Validate the data set, threads and every parameter; Compare is disabled while any is
        refused. Returns the messages."""
        refused = self._refused.get(self.dataset.value, "")
        if html.escape(refused) != self.dataset_message.object:
            self.dataset_message.object, self.dataset_message.visible = html.escape(refused), bool(refused)
        errors = [e for e in [refused, self.backend.check(), *(item.check() for item in [self.threads,
                                                                                     *self.inputs.values()])] if e]
        self.compare_button.disabled = bool(errors)
        fields = "the field" if len(errors) == 1 else f"the {len(errors)} fields"
        text = f"Fix {fields} marked in red before Compare." if errors else ""
        if text != self.blocked.object:
            self.blocked.object, self.blocked.visible = text, bool(text)
        return errors

    def specs(self, dataset: str, test: str | None) -> list[RunSpec]:
        """One validated run spec per selected variant, named data set - variant, or data set - solver
        - variant for every solver but dismec, the default: MEMOIR's and LDGS's `exact` would
        otherwise both be "bibtex-exact", told apart in a legend only by a "-2"."""
        errors = self.check()
        if errors:
            raise ValueError("; ".join(errors))
        solver = SOLVERS[self.solver.value]
        values = {k: v for k, v in self.params.param.values().items() if k not in ("name", solver.compare)}
        return [RunSpec(dataset=dataset, test=test, solver=solver.name, params={**values, solver.compare: variant},
                        threads=self.threads.params.threads, name=run_name(dataset, solver.name, variant),
                        cluster=self.backend.cluster(self.threads.params.threads)).validate()
                for variant in self.variants.value or [self.params.param[solver.compare].default]]

    def panel(self, *below_compare) -> pn.Column:
        """The panel; `below_compare`: components shown right under Compare and its messages."""
        return pn.Column(self.dataset, self.dataset_message, self.solver, self.variants, self.threads.panel(),
                         self.backend.panel(), self.compare_button, self.blocked, self.launch_message, *below_compare,
                         self.params_box, margin=0)
