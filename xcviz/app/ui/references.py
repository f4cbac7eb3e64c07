"""Reference lines drawn across a figure: DS-MLR's best known objective, taken from the L-BFGS runs
shown (its optimum once L-BFGS has converged; named "L-BFGS best", since an unconverged one lies
above where other modes go), and Newton's share of the rows read in PPDSparse's rows-touched figure.

PPDSparse's search records the rows it touched per outer iteration (`rows_touched`, drawn as
`rows_fraction`, a share of the N training rows); a one-vs-all Newton iteration reads every row (the
margins of all N rows for its gradient), so in that figure a dashed line at 1 names what Newton reads,
and the band shows how much of it PPDSparse's search needed. It is drawn whenever a shown run records
the field, with or without a Newton run beside it: it is a fact of Newton's method, not a measurement.

A DS-MLR run in mode `lbfgs` is the baseline the other modes are measured against (scipy L-BFGS
on the exact objective (2), as in the paper's Figure 3). Its lowest recorded objective is the best
known value of (2) for its problem: its data set (and test file), lambda, row normalisation and
bias, which are what the objective depends on. Among the shown runs, each such problem with an
L-BFGS run gets one dashed line in the objective figure, at the lowest objective of its L-BFGS
runs, in that run's colour and named after it. Nothing is guessed: with no L-BFGS run shown there
is no line (launch one, e.g. Compare over `mode` with lbfgs ticked). A live L-BFGS run's line
follows its best objective so far.
"""
from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np

from .records import PlotRun

PROBLEM_PARAMS = ("lam", "normalize", "bias")


class Reference(NamedTuple):
    """A horizontal line at `value` in a field's figure, its legend `label` and `color`."""

    value: float
    label: str
    color: str


def _problem(row: dict) -> tuple | None:
    """What a DS-MLR run's objective depends on, or None for another solver's run."""
    try:
        spec = json.loads(row["spec"])
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(spec, dict) or spec.get("solver") != "dsmlr" or not isinstance(spec.get("params"), dict):
        return None
    return (spec.get("dataset"), spec.get("test"), *(spec["params"].get(k) for k in PROBLEM_PARAMS))


def lbfgs_references(rows: dict[str, dict], runs: dict[str, PlotRun]) -> dict[str, list[Reference]]:
    """field -> its reference lines: the best L-BFGS objective of each problem among `runs` (run id
    -> PlotRun, with `rows` their store rows)."""
    best: dict[tuple, tuple[float, PlotRun]] = {}
    for run, plot_run in runs.items():
        problem = _problem(rows.get(run, {}))
        if problem is None or json.loads(rows[run]["spec"])["params"].get("mode") != "lbfgs":
            continue
        values = plot_run.records.iterations.bands("objective", "iteration")["median"].to_numpy(np.float64)
        values = values[np.isfinite(values)]
        if values.size and (problem not in best or values.min() < best[problem][0]):
            best[problem] = (float(values.min()), plot_run)
    lines = [Reference(value, f"L-BFGS best ({p.name})", p.color) for value, p in best.values()]
    return {"objective": lines} if lines else {}


NEWTON_ROWS = Reference(1.0, "Newton: all N rows, every iteration", "#555555")


def newton_rows_reference(runs: dict[str, PlotRun]) -> dict[str, list[Reference]]:
    """field -> its reference lines: Newton's share of rows read (1) in the `rows_fraction` figure when a
    shown run records that field."""
    shown = any("rows_fraction" in p.records.iterations.fields() for p in runs.values())
    return {"rows_fraction": [NEWTON_ROWS]} if shown else {}
