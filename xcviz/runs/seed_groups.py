"""Seed groups: runs that differ only by their seed, summarised as one curve with a band across
seeds (what TensorBoard users have asked for since 2017, tensorboard#376).

Two runs are in one group when their specs are the same but for the run's name and the solver's
`seed` parameter. A group's curve, per x value, is the median over its runs of each run's own
curve (for a one-vs-all run, its median over labels), and its band the 5-95% quantiles of those
curves (`aggregate.quantile_bands`, the rule used over labels, here over seeds): with three seeds
the band runs from about the lowest to the highest run. Runs are matched at equal x: the iteration
and epoch axes line up across seeds; wall-time bins line up while the runs chose the same bin width
(runs of similar length do), and a value only one run has shows as a band of one.
"""
from __future__ import annotations

import json
import re

import pandas as pd

from .aggregate import quantile_bands

SEED = "seed"
_SEED_SUFFIX = re.compile(r"[ -]seed[=-]?\d+$")


def seed_key(spec: dict) -> str | None:
    """What a run shares with the other seeds of its group (its spec but for name and seed), as
    text; None for a spec without a seed parameter."""
    params = spec.get("params")
    if not isinstance(params, dict) or SEED not in params:
        return None
    rest = {k: v for k, v in params.items() if k != SEED}
    return json.dumps({**{k: v for k, v in spec.items() if k not in ("name", "params")}, "params": rest},
                      sort_keys=True, default=str)


def seed_groups(specs: dict[str, dict]) -> list[list[str]]:
    """The runs (id -> spec) in groups of runs that differ only by seed, each group in the order
    of `specs`, groups ordered by their first run; a run alone (or without a seed) is a group of one.
    Two runs with the same seed too are both kept: repeats of one seed still show its spread."""
    groups: dict[str, list[str]] = {}
    for run, spec in specs.items():
        key = seed_key(spec)
        groups.setdefault(run if key is None else key, []).append(run)
    return list(groups.values())


def group_name(names: list[str]) -> str:
    """A group's name in a legend: its first run's name without a trailing seed (`... seed=2`, as
    a sweep over the seed names runs), and how many seeds it holds."""
    stem = _SEED_SUFFIX.sub("", names[0]) or names[0]
    return f"{stem} ({len(names)} seeds)"


def across_seeds(curves: list[pd.DataFrame]) -> pd.DataFrame:
    """The band across seeds of the runs' curves (each with columns "x" and "median", as
    `RunAggregate.bands` gives them): columns "x", "median", "lower", "upper", "count" (the runs
    that have a value at that x), by x."""
    parts = [c[["x", "median"]].assign(seed=i) for i, c in enumerate(curves) if len(c)]
    if not parts:
        return pd.DataFrame(columns=["x", "median", "lower", "upper", "count"])
    stacked = pd.concat(parts, ignore_index=True).dropna(subset=["x"])
    return quantile_bands(stacked, "median", by="x").sort_values("x", kind="stable").reset_index(drop=True)
