"""Kernels compiled (or loaded from numba's cache) before a training clock starts.

The first call of a numba kernel in a process compiles it on a fresh checkout (seconds, up to a
minute for a solver's whole set) or loads it from numba's on-disk cache (a fraction of a second
each). Counted as training, that time made the first batches of a run look slow, a Compare at
equal wall time unfair (the run with more kernels paid more) and a fresh install's first
`train_seconds` 10-50x a rerun's (issue 40). So every family trains a tiny problem of the same
kind first, once per process and kind of run, starts its clock after, and reports the warm-up's
seconds apart as `compile_seconds` (0 when this process had already warmed that kind of run).
"""
from __future__ import annotations

import time
from typing import Callable, Hashable

import param

from ..data.synthetic import generate

_WARMED: set[Hashable] = set()  # the kinds of run this process has warmed up
COMPILING, TRAINING = "compiling", "training"  # what a fit's `phase` callback is told


def warm_once(key: Hashable, tiny_fit: Callable[[], object],
              phase: Callable[[str], None] | None = None) -> float:
    """Call `tiny_fit` (a fit of the same settings on a tiny problem) unless this process already
    did for `key`; returns the seconds it took (0.0 when warm). `phase` hears COMPILING before and
    TRAINING after, so that a progress bar can say why nothing moves yet. A tiny problem that a
    setting makes diverge (ValueError) has run its kernels all the same; anything else is a real
    error and propagates."""
    if key in _WARMED:
        return 0.0
    _WARMED.add(key)
    if phase is not None:
        phase(COMPILING)
    t0 = time.monotonic()
    try:
        tiny_fit()
    except ValueError:
        pass
    seconds = time.monotonic() - t0
    if phase is not None:
        phase(TRAINING)
    return seconds


def code_paths(p: param.Parameterized) -> tuple:
    """The settings that choose which kernels a run calls (its selectors and switches), as a key:
    the numeric parameters change the numbers, not the code."""
    return tuple((name, getattr(p, name)) for name, obj in p.param.objects("existing").items()
                 if isinstance(obj, (param.Selector, param.Boolean)))


def tiny_problem(multilabel: bool = True):
    """The tiny generated data set every warm-up trains on (60 rows, 40 features, 12 labels):
    the dtypes of a real data set, so the kernels it compiles are those a real run calls."""
    return generate(60, 40, 12, multiclass=not multilabel, avg_labels=2, avg_nnz=6, seed=0)
