"""Seed grouping for the live plots: with the switch on, the shown runs that differ only by seed
(`runs.seed_groups`) are drawn as one curve per group, its median and 5-95% band across seeds,
named in the legend by the group and its seed count ("bibtex-ppdsparse-squared_hinge (3 seeds)").

A group is handed to the live plots as one more run: its records are a `SeedGroupAggregate`,
which answers the questions the plots ask of a run's `RunAggregate` (fields, axes, bands, a
version that changes when any member's records do) from its members', so the plots need no
change. The per-label views keep showing each run on its own."""
from __future__ import annotations

from itertools import count

import pandas as pd
import panel as pn

from ...runs.aggregate import RunAggregate
from ...runs.seed_groups import across_seeds, group_name, seed_groups
from .records import PlotRun, RunRecords


class SeedGroupAggregate:
    """The band across seeds of some runs' aggregates, computed from theirs when asked."""

    def __init__(self, members: list[RunAggregate]) -> None:
        self.members = members
        self._bands: dict[tuple[str, str], tuple[tuple, pd.DataFrame]] = {}

    @property
    def version(self) -> tuple[int, ...]:
        return tuple(m.version for m in self.members)

    def __len__(self) -> int:
        return sum(len(m) for m in self.members)

    def fields(self) -> list[str]:
        return list(dict.fromkeys(f for m in self.members for f in m.fields()))

    def axes(self) -> list[str]:
        return list(dict.fromkeys(a for m in self.members for a in m.axes()))

    def per_label(self) -> bool:
        """A group's band is always over several curves (its seeds)."""
        return True

    def bands(self, field: str, axis: str = "iteration") -> pd.DataFrame:
        """Columns "x", "median", "lower", "upper", "count": the band across seeds of the members'
        medians of `field` against `axis` (runs.seed_groups.across_seeds)."""
        cached = self._bands.get((field, axis))
        if cached is not None and cached[0] == self.version:
            return cached[1]
        out = across_seeds([m.bands(field, axis) for m in self.members])
        self._bands[(field, axis)] = (self.version, out)
        return out


class SeedGroupRecords:
    """A seed group as the live plots see a run's records."""

    _serials = count(start=10**9)  # apart from RunRecords' serials: a group never passes for a run

    def __init__(self, members: list[RunRecords]) -> None:
        self.serial = next(self._serials)
        self.members = members
        self.iterations = SeedGroupAggregate([m.iterations for m in members])
        self.labels = pd.DataFrame()

    def band_members(self) -> str:
        """What the band spans: seeds (of each run's curve, for a one-vs-all run its median over
        labels; their objective is drawn as the objective gap, so no climb is marked on them)."""
        return "seeds"


class SeedGrouping:
    """The "group seeds" switch and the grouping of the shown runs it turns on."""

    def __init__(self) -> None:
        self.switch = pn.widgets.Checkbox(label="group seeds", value=False, width=95, margin=(8, 0, 8, 10))
        self.tip = pn.widgets.TooltipIcon(value=(
            "Draw the shown runs that differ only by seed as one curve: the median across seeds and a 5-95% band "
            "across them, named with the seed count"), margin=(5, 0))
        self._groups: dict[tuple, SeedGroupRecords] = {}  # members' records -> their group (a stable serial)

    def apply(self, runs: dict[str, PlotRun], specs: dict[str, dict]) -> dict[str, PlotRun]:
        """The runs to plot: `runs` (id -> PlotRun, with `specs` their run specs) with every group
        of two or more seeds replaced by one entry, at its first run's place and colour; `runs`
        itself while the switch is off."""
        if not self.switch.value:
            return runs
        out: dict[str, PlotRun] = {}
        kept: dict[tuple, SeedGroupRecords] = {}
        for group in seed_groups({run: specs.get(run, {}) for run in runs}):
            first = runs[group[0]]
            if len(group) == 1:
                out[group[0]] = first
                continue
            members = [runs[r].records for r in group]
            key = tuple(id(m) for m in members)
            records = self._groups.get(key)
            if records is None or records.members != members:
                records = SeedGroupRecords(members)
            kept[key] = records
            out["seeds:" + ",".join(group)] = PlotRun(group_name([runs[r].name for r in group]), first.color,
                                                       records, first.total)
        self._groups = kept
        return out

    def panel(self) -> pn.Row:
        return pn.Row(self.switch, self.tip, margin=0)
