"""Sweeps: one run spec trained at several values of one parameter, and the table of their final
metrics against it. `xcviz sweep` launches them as background runs; the report (and the page)
draw the table as figures, log-scaled where the parameter's values span a decade or more."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd

from .._util.jsontext import TooDeep, loads_bounded
from .spec import RunSpec

MAX_RUNS = 64  # values in one sweep: a typo such as 1:100:1000 is refused, not launched
METRICS = ("p@1", "p@3", "p@5", "train_seconds", "model_nnz")


def parse_values(text: str) -> list:
    """The values of `--set KEY=VALUES`: a comma list (`0.1,1,10`, JSON values or names),
    `lin:A:B:N` (N values evenly from A to B) or `log:A:B:N` (N values evenly in log space, A and B
    positive). ValueError says what is wrong."""
    kind, _, rest = text.partition(":")
    if kind in ("lin", "log") and rest:
        parts = rest.split(":")
        if len(parts) != 3:
            raise ValueError(f"a range is {kind}:START:STOP:COUNT, got {text!r}")
        try:
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise ValueError(f"a range is {kind}:START:STOP:COUNT of numbers, got {text!r}") from None
        if not (math.isfinite(start) and math.isfinite(stop)) or not 2 <= count <= MAX_RUNS:
            raise ValueError(f"a range needs finite ends and from 2 to {MAX_RUNS} values, got {text!r}")
        if kind == "log" and not (start > 0 and stop > 0):
            raise ValueError(f"a log range needs positive ends, got {text!r}")
        grid = np.geomspace(start, stop, count) if kind == "log" else np.linspace(start, stop, count)
        return [float(f"{v:.6g}") for v in grid]
    values = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise ValueError(f"an empty value in {text!r}")
        try:
            values.append(loads_bounded(item))
        except TooDeep:
            raise
        except ValueError:  # not JSON: a name, such as a choice's
            values.append(item)
    if len(values) > MAX_RUNS:
        raise ValueError(f"at most {MAX_RUNS} values in a sweep, got {len(values)}")
    return values


def sweep_specs(base: RunSpec, key: str, values: list) -> list[RunSpec]:
    """One validated spec per value (integers for a whole-number parameter; repeats dropped),
    named `BASE KEY=VALUE`. Every spec is checked before any is returned, so a bad value launches
    nothing."""
    base = dataclasses.replace(base, params=dict(base.params)).validate()
    if key not in base.params:
        known = ", ".join(sorted(base.params))
        raise ValueError(f"{base.solver} has no parameter {key!r} to sweep; known: {known}")
    whole = isinstance(base.params[key], int) and not isinstance(base.params[key], bool)
    stem = base.name or f"{base.dataset.rsplit('/', 1)[-1]}-{base.solver}"
    specs, seen = [], set()
    for value in values:
        if whole and isinstance(value, float) and value.is_integer():
            value = int(value)
        text = json.dumps(value)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        same = json.dumps(float(value)) if number else text  # 1 and 1.0 are one value
        if same in seen:
            continue
        seen.add(same)
        shown = value if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else text
        spec = dataclasses.replace(base, params={**base.params, key: value}, name=f"{stem} {key}={shown}")
        specs.append(spec.validate())
    if len(specs) < 2:
        raise ValueError(f"a sweep needs at least two different values of {key}, got {values!r}")
    return specs


def swept_parameter(rows: list[dict]) -> str | None:
    """The one solver parameter whose value differs among runs that are otherwise the same spec
    (dataset, test, solver, threads, cluster and every other parameter); None if they are not a sweep."""
    specs = [json.loads(r["spec"]) for r in rows]
    if len(specs) < 2:
        return None
    context = {json.dumps({k: v for k, v in s.items() if k not in ("name", "params")}, sort_keys=True) for s in specs}
    keys = set().union(*(s.get("params", {}) for s in specs))
    differ = [k for k in sorted(keys) if len({json.dumps(s.get("params", {}).get(k)) for s in specs}) > 1]
    return differ[0] if len(context) == 1 and len(differ) == 1 else None


def sweep_table(rows: list[dict], key: str) -> pd.DataFrame:
    """Runs by the value of `key` (ascending when numeric): run, status and the final METRICS each has."""
    table = pd.DataFrame([{key: json.loads(r["spec"])["params"].get(key), "run": r["name"], "status": r["status"],
                           **{m: r["summary"].get(m) for m in METRICS}} for r in rows])
    if pd.api.types.is_numeric_dtype(table[key]):
        table = table.sort_values(key, kind="stable")
    return table.reset_index(drop=True)


def log_scaled(values) -> bool:
    """Whether a parameter's values are drawn on a log axis: all positive numbers spanning at least 10x."""
    numbers = pd.to_numeric(pd.Series(list(values)), errors="coerce")
    return bool(numbers.notna().all() and (numbers > 0).all() and numbers.max() >= 10 * numbers.min())
