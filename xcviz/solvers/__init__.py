"""Solver drivers, one per family, registered by name with their declared capabilities."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import param

from ..engine import newton, ppdsparse as ppdsparse_kernel
from . import dismec, memoir, ppdsparse
from .dismec import DismecParams, fit_dismec
from .dsmlr import solver as dsmlr_solver  # not `dsmlr`: the package's attribute stays the subpackage
from .dsmlr.solver import DsmlrParams, fit_dsmlr
from .ldgs import solver as ldgs_solver
from .ldgs.solver import LdgsParams, fit_ldgs
from .memoir import MemoirParams, fit_memoir
from .params import param_dict, plain_refusal, refused_value
from .ppdsparse import PPDSparseParams, fit_ppdsparse


@dataclass(frozen=True)
class Solver:
    """A solver family: its parameter class, its fit function (X, Y, params, **FitOptions), and
    `compare`, the parameter whose values the dashboard's Compare runs side by side (one run per
    selected value); then what it declares.

    multiclass: trains all classes at once (no per-label blocks to resume from); multilabel: a
    multiclass one that trains multi-label rows as they are (positive sets) and is evaluated on
    them unreplicated; distributes: trains on a Dask cluster (fit takes `cluster`); shards: fit
    takes a data.shards.Shards as X (Y None) and reads its parts where it trains; deterministic:
    the same weights whatever the thread count, except at the parameter values of `varies_with`
    (DS-MLR's async mode); cluster_refusal: why parameters cannot train on a cluster (None: they can).
    iter_fields / label_fields: the fields its iteration and per-label
    records carry; unplotted: those the dashboard's field table draws no plot of."""

    name: str
    params: type[param.Parameterized]
    fit: Callable
    compare: str
    iter_fields: tuple[str, ...]
    label_fields: tuple[str, ...] = ()
    unplotted: tuple[str, ...] = ()
    multiclass: bool = False
    multilabel: bool = False
    distributes: bool = False
    shards: bool = False
    deterministic: bool = True
    varies_with: tuple[tuple[str, object], ...] = ()
    cluster_refusal: Callable[[param.Parameterized], str | None] | None = None

    def check_cluster(self, params: param.Parameterized) -> None:
        """Refuse, before any cluster starts, a family or parameters that do not train on one."""
        if not self.distributes:
            raise ValueError(f"solver {self.name!r} trains all classes at once: it has no label blocks to distribute")
        refusal = self.cluster_refusal(params) if self.cluster_refusal else None
        if refusal:
            raise ValueError(refusal)

    def deterministic_at(self, params: param.Parameterized) -> bool:
        """Whether `params` train the same weights on any number of threads."""
        return self.deterministic and not any(getattr(params, k) == v for k, v in self.varies_with)


__all__ = ["SOLVERS", "Solver", "get_solver", "make_params", "param_dict"]

SOLVERS: dict[str, Solver] = {s.name: s for s in (
    Solver("dismec", DismecParams, fit_dismec, compare="init", iter_fields=newton.ITER_FIELDS,
           label_fields=newton.LABEL_FIELDS, unplotted=dismec.UNPLOTTED, distributes=True),
    Solver("ppdsparse", PPDSparseParams, fit_ppdsparse, compare="loss", iter_fields=ppdsparse_kernel.ITER_FIELDS,
           label_fields=ppdsparse_kernel.LABEL_FIELDS + ppdsparse.BOUND_FIELDS, unplotted=ppdsparse.UNPLOTTED,
           distributes=True),
    Solver("memoir", MemoirParams, fit_memoir, compare="oracle", iter_fields=memoir.ITER_FIELDS,
           unplotted=memoir.UNPLOTTED, multiclass=True),
    Solver("dsmlr", DsmlrParams, fit_dsmlr, compare="mode", iter_fields=dsmlr_solver.ITER_FIELDS,
           unplotted=dsmlr_solver.UNPLOTTED, multiclass=True, distributes=True, shards=True,
           varies_with=(("mode", "async"),), cluster_refusal=dsmlr_solver.cluster_refusal),
    Solver("ldgs", LdgsParams, fit_ldgs, compare="gradient", iter_fields=ldgs_solver.ITER_FIELDS,
           unplotted=ldgs_solver.UNPLOTTED, multiclass=True, multilabel=True),
)}


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
