"""Estimates before a long multiclass run (MEMOIR, LDGS, DS-MLR): train a slice of its steps on the
whole data and predict the whole run's time, peak memory, model size and record volume.

A multiclass family trains every class at once, so labels cannot be sampled as for one-vs-all; but
its steps (MEMOIR's and LDGS's batches, DS-MLR's outer iterations) each cost about the same, so the
run's time is its set-up plus the steps' mean time times their number. The slice is the first
`share` of the steps (at least MIN_STEPS), ended through the fit's own stop() callback: the set-up
(index builds, data preparation) is measured once, and a step's mean is taken after the first step
(which pays one-off costs: caches, the first index), from the records' training clock, which leaves
out what the records measure (LDGS's diagnostics can cost as much as its training). Records are
written at a fixed cadence, so they are priced per step the same way. Memory is the resident size
once the data is read plus what the slice added at its peak (the families allocate their weights up
front); the model's non-zeros are the slice's, which a family whose weights fill in as it trains
(MEMOIR's sparse W) exceeds by the end. DS-MLR's steps are its epochs (outer iterations); a mode that
ends at its own tolerance sooner (L-BFGS, LC) takes less, so for it the estimate is an upper bound."""
from __future__ import annotations

import math

from ..data.dataset import Dataset
from ..records.sinks import MemorySink
from ..solvers import get_solver, make_params
from .memory import memory_kb, reset_peak

SHARE = 0.05  # the share of the steps a slice trains
MIN_STEPS = 3  # and at least this many (the first pays one-off costs)


def slice_steps(total: int, share: float = SHARE) -> int:
    """The steps a slice of a `total`-step run trains: `share` of them rounded up, at least MIN_STEPS,
    at most all of them."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"the slice's share must be in (0, 1], not {share}")
    return min(total, max(MIN_STEPS, math.ceil(share * total)))


def per_step(points: list[tuple[int, float]], fallback: float) -> float:
    """How much a value recorded at some steps (`points`: steps done, value) grows a step, between the
    first and last points after step 0 (step 0 and the first step pay one-off costs); with fewer than
    two such points, `fallback`."""
    points = [(s, v) for s, v in points if s > 0]
    if len(points) >= 2 and points[-1][0] > points[0][0]:
        return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])
    return fallback


def extrapolate_seconds(marks: list[tuple[int, float]], slice_seconds: float, done: int, total: int) -> float:
    """The whole run's training seconds: the slice's (`done` steps in `slice_seconds`) plus each step it
    did not train at the training time a step took between its records (`marks`: steps done and the
    fit's training clock at each, the records' `wall`, which leaves out the records' own measurements);
    with fewer than two records after step 0, at the slice's mean."""
    if total <= done:
        return slice_seconds
    return slice_seconds + per_step(marks, slice_seconds / max(1, done)) * (total - done)


def records_per_step(marked: list[int], written_at: list[int], done: int, written: int) -> float:
    """Records a step writes, at their cadence between the steps that ended on records (`marked`, with
    the records written by each, `written_at`); with fewer than two after step 0, the slice's mean
    (`written` records in `done` steps)."""
    return per_step(list(zip(marked, written_at)), written / max(1, done))


def estimate_slice(train: Dataset, solver: str, params: dict, threads: int, *, share: float = SHARE) -> dict:
    """The predicted `train_seconds`, `peak_rss_mb`, `model_nnz` and `record_count` of training the
    multiclass `solver` with `params` on `train`, from a slice of its steps, with `slice_steps`,
    `total_steps` and `slice_seconds`."""
    family = get_solver(solver)
    if not family.multiclass:
        raise ValueError(f"{solver} trains its labels one by one: its estimate samples labels (runs.estimate)")
    steps: list[tuple[int, int]] = []  # (steps done, records written) at each step's end
    marks: list[tuple[int, float]] = []  # (steps done, training seconds) at each step that ended on a record
    written_at: list[int] = []  # the records written by each of those steps
    run = {"total": 0, "wanted": 0, "before": 0}  # before: the records of step 0, as the first stop() sees them
    sink = MemorySink()

    def progress(done: int, total: int) -> None:
        run["total"], run["wanted"] = total, run["wanted"] or slice_steps(total, share)
        written = sink.count("iteration")
        if written > (steps[-1][1] if steps else run["before"]):
            marks.append((done, float(sink.last("iteration", "wall"))))
            written_at.append(written)
        steps.append((done, written))

    def stop() -> bool:
        if not steps:  # asked once before the first step, after step 0's records
            run["before"] = sink.count("iteration")
        return bool(steps) and steps[-1][0] >= run["wanted"]

    resident = memory_kb("VmRSS")
    reset_peak()
    model = family.fit(train.X, train.Y, make_params(solver, **params), threads=threads, recorder=sink,
                       progress=progress, stop=stop)
    added = max(0, memory_kb("VmHWM") - resident)
    if not steps:
        raise ValueError(f"{solver} trained no step on this data: nothing to extrapolate from")
    done, written = steps[-1]
    total = run["total"]
    slice_seconds = float(model.info["train_seconds"])
    per_step = records_per_step([m[0] for m in marks], written_at, done, written)
    return {"train_seconds": round(extrapolate_seconds(marks, slice_seconds, done, total), 3),
            "peak_rss_mb": round((resident + added) / 1024, 1),
            "model_nnz": int(model.nnz),
            "record_count": round(written + per_step * (total - done)),
            "slice_steps": int(done), "total_steps": int(total), "slice_seconds": round(slice_seconds, 3)}
