"""Kernels compiled (or loaded from numba's cache) before a training clock starts.

The first call of a numba kernel in a process compiles it on a fresh checkout (seconds, up to a
minute for a solver's whole set) or loads it from numba's on-disk cache (a fraction of a second
each). Counted as training, that time made the first batches of a run look slow and a Compare at
equal wall time unfair (the run with more kernels paid more). A solver therefore trains a tiny
problem of the same kind first, once per process and kind of run, and starts its clock after.
"""
from __future__ import annotations

from typing import Callable, Hashable

import param

_WARMED: set[Hashable] = set()  # the kinds of run this process has warmed up


def warm_once(key: Hashable, tiny_fit: Callable[[], object]) -> None:
    """Call `tiny_fit` (a fit of the same settings on a tiny problem) unless this process already
    did for `key`. A tiny problem that a setting makes diverge (ValueError) has run its kernels all
    the same; anything else is a real error and propagates."""
    if key in _WARMED:
        return
    _WARMED.add(key)
    try:
        tiny_fit()
    except ValueError:
        pass


def code_paths(p: param.Parameterized) -> tuple:
    """The settings that choose which kernels a run calls (its selectors and switches), as a key:
    the numeric parameters change the numbers, not the code."""
    return tuple((name, getattr(p, name)) for name, obj in p.param.objects("existing").items()
                 if isinstance(obj, (param.Selector, param.Boolean)))
