"""The run specification: one JSON-serialisable description of a training run, shared by the
CLI, the Python API, background workers and (later) the dashboard."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields

import param

from .._util.jsontext import TooDeep, loads_bounded
from ..engine.threads import max_threads
from ..solvers import SOLVERS, get_solver, make_params, param_dict
from ..compute.cluster import parse_cluster


MAX_DEPTH = 8
DEFAULT_THREADS = None  # all cores: a spec's, `xcviz train`'s and `xcviz.train`'s, and where the page's box starts


class SpecError(ValueError):
    """A run specification that cannot run, naming the field and what is wrong."""


def check_param_types(solver: str, values: dict) -> None:
    """Refuse a JSON true/false for a parameter that is not a switch (Python reads true as 1)."""
    cls = get_solver(solver).params
    for key, value in values.items():
        if isinstance(value, bool) and key in cls.param and not isinstance(cls.param[key], param.Boolean):
            raise SpecError(f"parameter {key!r} of {solver}: expected a number or a name, got {str(value).lower()}")


@dataclass
class RunSpec:
    """dataset: a bundled name or a training-file path (test: its test file); params: the
    solver's parameters (unset ones take the solver's defaults); threads: None = all cores;
    cluster: None = numba threads here, "local:N[xT]" or "tcp://HOST:PORT" = Dask (see compute.cluster)."""

    dataset: str
    solver: str = "dismec"
    params: dict = field(default_factory=dict)
    test: str | None = None
    threads: int | None = DEFAULT_THREADS
    name: str = ""
    cluster: str | None = None

    def validate(self) -> "RunSpec":
        """Check every field; returns self with params completed by the solver's defaults."""
        if not isinstance(self.dataset, str) or not self.dataset:
            raise SpecError("spec field 'dataset': a bundled name or a file path is required")
        for name in ("test", "name", "solver"):
            value = getattr(self, name)
            if not (isinstance(value, str) or (value is None and name == "test")):
                raise SpecError(f"spec field {name!r}: must be a string, got {type(value).__name__}")
        if "\0" in self.dataset or (self.test and "\0" in self.test) or len(self.name) > 200:
            raise SpecError("spec fields 'dataset', 'test' and 'name': no NUL characters, names up to 200 characters")
        if not self.name.isprintable():
            raise SpecError("spec field 'name': no control or invisible characters (a newline, a tab, a right-to-left "
                            "override): a name is one line, read as it is typed")
        self.name = self.name.strip()  # a blank name is no name: the run goes by its id
        # a file or folder named relative to here: made absolute, so that a resume or the dashboard,
        # whose working folders differ, finds it (and the fingerprint of the run's inputs names it)
        for name in ("dataset", "test"):
            value = getattr(self, name)
            if value and not os.path.isabs(value) and os.path.exists(value):
                setattr(self, name, os.path.abspath(value))
        if self.threads is not None and not (isinstance(self.threads, int) and not isinstance(self.threads, bool)
                                             and 1 <= self.threads <= max_threads()):
            raise SpecError(f"spec field 'threads': must be an integer from 1 to {max_threads()}, got {self.threads!r}")
        try:
            cluster = parse_cluster(self.cluster)
        except ValueError as exc:
            raise SpecError(f"spec field 'cluster': {exc}") from None
        if cluster is not None and self.solver in SOLVERS and not SOLVERS[self.solver].distributes:
            raise SpecError(f"spec field 'cluster': solver {self.solver!r} trains all classes at once, "
                            "it has no label blocks to distribute")
        if not isinstance(self.params, dict):
            raise SpecError("spec field 'params': must be an object of solver parameters")
        try:
            check_param_types(self.solver, self.params)
            made = make_params(self.solver, **self.params)
            self.params = param_dict(made)
        except (ValueError, TypeError) as exc:
            raise SpecError(f"spec field 'params': {exc}") from None
        if cluster is not None and self.solver in SOLVERS:
            try:
                SOLVERS[self.solver].check_cluster(made)
            except ValueError as exc:
                raise SpecError(f"spec field 'cluster': {exc}") from None
        return self

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str, source: str = "spec") -> "RunSpec":
        """Parse and validate; errors name the source and the field. A UTF-8 byte order mark is
        skipped; JSON nested deeper than a spec can be is refused before it is parsed."""
        text = text.removeprefix("\ufeff")
        try:
            raw = loads_bounded(text, MAX_DEPTH)
        except TooDeep as exc:
            raise SpecError(f"{source}: {exc} in a run spec") from None
        except json.JSONDecodeError as exc:
            raise SpecError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(raw, dict):
            raise SpecError(f"{source}: a run spec is a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise SpecError(f"{source}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        try:
            return cls(**raw).validate()
        except SpecError as exc:
            raise SpecError(f"{source}: {exc}") from None
        except TypeError as exc:
            raise SpecError(f"{source}: {exc}") from None
