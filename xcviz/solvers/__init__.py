"""Solver drivers, one per family, registered by name."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

import param

from .dismec import DismecParams, fit_dismec
from .dsmlr.solver import DsmlrParams, fit_dsmlr
from .ldgs.solver import LdgsParams, fit_ldgs
from .memoir import MemoirParams, fit_memoir
from .params import param_dict, plain_refusal, refused_value
from .ppdsparse import PPDSparseParams, fit_ppdsparse


@dataclass(frozen=True)
class Solver:
    """A solver family: its parameter class, its fit function, and `compare`, the parameter whose
    values the dashboard's Compare runs side by side (one run per selected value). A multiclass
    solver trains all classes at once (no per-label blocks to resume from); a multilabel one among
    them trains multi-label rows as they are (positive sets) and is evaluated on them unreplicated."""

    name: str
    params: type[param.Parameterized]
    fit: Callable
    compare: str
    multiclass: bool = False
    multilabel: bool = False
    shards: bool = False  # fit takes a data.shards.Shards as X (Y None) and reads its parts where it trains

    @property
    def distributes(self) -> bool:
        """Whether the family runs on a Dask cluster: a one-vs-all one by label blocks, a
        multiclass one when its fit takes a `cluster` (DS-MLR's sync mode)."""
        return not self.multiclass or "cluster" in inspect.signature(self.fit).parameters


__all__ = ["SOLVERS", "Solver", "get_solver", "make_params", "param_dict"]

SOLVERS: dict[str, Solver] = {"dismec": Solver("dismec", DismecParams, fit_dismec, compare="init"),
                               "ppdsparse": Solver("ppdsparse", PPDSparseParams, fit_ppdsparse, compare="loss"),
                               "memoir": Solver("memoir", MemoirParams, fit_memoir, compare="oracle", multiclass=True),
                               "dsmlr": Solver("dsmlr", DsmlrParams, fit_dsmlr, compare="mode", multiclass=True,
                                               shards=True),
                               "ldgs": Solver("ldgs", LdgsParams, fit_ldgs, compare="gradient", multiclass=True,
                                              multilabel=True)}


def get_solver(name: str) -> Solver:
    """The solver called `name`, or a ValueError listing the known ones."""
    try:
        return SOLVERS[name]
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; known: {', '.join(SOLVERS)}") from None


def make_params(solver: str, /, **values) -> param.Parameterized:
    """The solver's parameter object; unknown names and out-of-bounds values raise ValueError."""
    cls = get_solver(solver).params
    unknown = sorted(set(values) - set(cls.param) - {"name"})
    if unknown:
        raise ValueError(f"unknown parameter(s) for {solver}: {', '.join(unknown)}; "
                         f"known: {', '.join(k for k in cls.param if k != 'name')}")
    try:
        return cls(**values)
    except ValueError as exc:
        raise ValueError(f"{solver}'s {(refused_value(cls, values) or plain_refusal(exc)).rstrip('.')}") from None
