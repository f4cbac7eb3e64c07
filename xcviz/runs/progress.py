"""What a run has done, in what its solver counts, for the runs table and `xcviz runs` alike."""
from __future__ import annotations

import json

from ..solvers import SOLVERS


def run_spec(row: dict) -> dict:
    """The spec a store row holds, or {} when it cannot be read."""
    try:
        return json.loads(row["spec"])
    except (TypeError, ValueError):
        return {}


COMPILING_TEXT = "compiling kernels"


def progress_text(row: dict, spec: dict | None = None) -> str:
    """Labels done (one-vs-all) or epochs done (multiclass) of a store row, e.g. "128/159 labels"
    ("128/200 sampled" for a run of a label sample: its estimate and report say of how many);
    COMPILING_TEXT while a running run warms its kernels up (solvers.warmup: the phase its worker
    writes into the summary), which is not training time."""
    spec = run_spec(row) if spec is None else spec
    summary = row.get("summary")
    if row.get("status") == "running" and isinstance(summary, dict) and summary.get("phase") == "compiling":
        return COMPILING_TEXT
    solver = SOLVERS.get(spec.get("solver", ""))
    done, total = int(row["done"]), int(row["total"])
    if solver is not None and solver.multiclass:
        epochs = spec.get("params", {}).get("epochs") or solver.params().param["epochs"].default
        return f"{epochs * done / total if total else 0:.1f}/{epochs} epochs"
    if spec.get("params", {}).get("label_sample"):  # short enough for the runs table's column
        return f"{done}/{total} sampled"
    return f"{done}/{total} labels"


def restart_note(row: dict) -> str:
    """What a resume of this store row's run should tell the user: that it starts again from its
    first epoch when its solver trains all classes at once (MEMOIR, DS-MLR, LDGS keep no
    checkpoint), else ""."""
    solver = run_spec(row).get("solver", "")
    if solver in SOLVERS and SOLVERS[solver].multiclass:
        return (f"{row['name'] or row['id']} starts again from its first epoch ({solver} keeps no checkpoint to "
                "continue from)")
    return ""
