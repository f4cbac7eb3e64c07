"""Objective climbs: stretches of a run's records in which its objective rises record after record.

A solver minimises its objective; a stochastic one measures it on a sample, so it wobbles, but it
should not rise for several records in a row. The rule (issue 40): a **climb** is a stretch of at
least CLIMB_RISES consecutive rises, each record's objective above the one before by more than
CLIMB_RTOL of that value's magnitude; a NaN or infinite value ends a stretch. LDGS decomp on
Delicious at eta0 = 1 climbed from 0.82 to 1.03 over its last records and ended 6.8 points of P@1
behind the exact gradient, with nothing on screen to say so. The rule reads the records only: the
runs table (through the run's summary) and the objective figure both use it, and neither does
any arithmetic of its own.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

CLIMB_RISES = 3    # consecutive rises that make a climb
CLIMB_RTOL = 1e-3  # a rise counts when it exceeds this share of the value before it


class Climb(NamedTuple):
    """One climb: the record it starts from and the record it peaks at (indices into the values
    given), and the objective at both."""

    start: int
    end: int
    first: float
    last: float


def climbs(values: Sequence[float], rises: int = CLIMB_RISES, rtol: float = CLIMB_RTOL) -> list[Climb]:
    """Every climb of `values` (a run's objective, record by record), in order."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < rises + 1:
        return []
    rising = np.isfinite(v[1:]) & np.isfinite(v[:-1]) & (v[1:] - v[:-1] > rtol * np.abs(v[:-1]))
    edges = np.flatnonzero(np.diff(np.concatenate(([0], rising.astype(np.int8), [0]))))
    return [Climb(int(a), int(b), float(v[a]), float(v[b])) for a, b in zip(edges[::2], edges[1::2])
            if b - a >= rises]


def climb_mask(n: int, found: Sequence[Climb]) -> np.ndarray:
    """Which of n records lie on a climb (from its start to its peak), for drawing."""
    mask = np.zeros(n, dtype=bool)
    for c in found:
        mask[c.start:c.end + 1] = True
    return mask


def climb_text(found: Sequence[Sequence[float]]) -> str:
    """The flag a runs table shows: "" for no climb, else the steepest climb (largest relative
    rise) as "climbs 0.82→1.03", with how many more there were. `found` holds Climbs or their
    lists as a run's summary stores them (start, end, first, last)."""
    if not found:
        return ""
    steepest = max(found, key=lambda c: (c[3] - c[2]) / max(abs(c[2]), 1e-300))
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    return f"climbs {steepest[2]:.3g}→{steepest[3]:.3g}{more}"
