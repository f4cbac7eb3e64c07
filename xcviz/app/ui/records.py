"""What a page knows of each run's records, read from the store incrementally.

`RecordCache.refresh(run)` asks the store only for the record batches written after the last one
it saw (starting over when the store says the run's records were reset), and feeds them to the
run's `RunRecords`: iteration records to a `RunAggregate` (bands kept up to date batch by batch),
label records appended. The page never reads a whole run twice.
"""
from __future__ import annotations

from itertools import count
from typing import NamedTuple

import pandas as pd

from ...runs.aggregate import RunAggregate
from ...runs.label_trajectory import StoredTrajectories
from ...runs.sketch import SummaryAggregate
from ...runs.store import RunStore

# a finished run with at most this many iteration records is read whole (exact bands, the label
# inspector's trajectories from memory); a larger one from its summary (runs.sketch: bands within
# 0.5%), a trajectory then read from the store per label inspected
WHOLE_UP_TO = 200_000


class RunRecords:
    """One run's records so far: `iterations` (a RunAggregate) and `labels` (label records)."""

    _serials = count()

    def __init__(self) -> None:
        self.serial = next(self._serials)  # tells a run's records read anew (after a reset) from the old ones
        self.n_rows: int | None = None
        self.iterations = RunAggregate()
        self.members = "labels"  # what a record's `label` counts: "workers" for a DS-MLR run
        self._label_batches: list[pd.DataFrame] = []
        self._labels: pd.DataFrame | None = None

    def begin(self, meta: pd.DataFrame) -> None:
        """The run's `begin` record: the number of training rows, for the active set as a fraction,
        and whether its records' `label` is a worker (DS-MLR's, which names its workers)."""
        if self.n_rows is None and "n" in meta and len(meta):
            self.n_rows = int(meta["n"].iloc[-1])
            self.iterations.n_rows = self.n_rows
        if "workers" in meta and len(meta) and pd.notna(meta["workers"].iloc[-1]):
            self.members = "workers"

    def band_members(self) -> str | None:
        """What a band of this run's records spans ("labels", "workers"), None for one trajectory."""
        return self.members if self.iterations.per_label() else None

    def add_labels(self, batch: pd.DataFrame) -> None:
        if len(batch):
            self._label_batches.append(batch)
            self._labels = None

    @property
    def labels(self) -> pd.DataFrame:
        if self._labels is None:
            batches = self._label_batches
            self._labels = pd.concat(batches, ignore_index=True) if batches else pd.DataFrame()
        return self._labels

    @property
    def version(self) -> tuple[int, int, int]:
        """Changes whenever new records arrived, or the run's records were read anew."""
        return self.serial, self.iterations.version, len(self._label_batches)


class PlotRun(NamedTuple):
    """A run as the views show it."""

    name: str
    color: str
    records: RunRecords
    total: int  # labels of the run (bounds the label inspector)


class RecordCache:
    """Each run's records read so far; `refresh` reads only the batches written since."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.runs: dict[str, RunRecords] = {}
        self.seen: dict[tuple[str, str], int] = {}

    def refresh(self, run: str, finished: bool = False) -> RunRecords:
        """The run's records with the batches written since the last call; after the store dropped
        the run's records (a multiclass run started again), a new RunRecords read from scratch.
        A `finished` run first read here with more than WHOLE_UP_TO iteration records is read from
        its stored summary (sketch.SummaryAggregate), never record by record, its label records
        read whole (one per label) and a label's trajectory read alone when inspected
        (label_trajectory.StoredTrajectories); if it has new
        batches later (resumed), it is read anew from its records."""
        if len(self._new(run, "reset")):
            self.forget(run, keep_reset=True)
        fresh = run not in self.runs
        records = self.runs.setdefault(run, RunRecords())
        if records.n_rows is None:
            records.begin(self._new(run, "begin"))
        if fresh and finished:
            summary, last = self.store.summary(run)
            if summary is not None and summary.records > WHOLE_UP_TO:
                records.iterations = SummaryAggregate(
                    summary, records.n_rows, trajectories=StoredTrajectories(self.store, run, summary.labels, records.n_rows))
                self.seen[(run, "iteration")] = last
        new = self._new(run, "iteration")
        if isinstance(records.iterations, SummaryAggregate) and len(new):
            self.forget(run)
            return self.refresh(run)
        records.iterations.add(new)
        records.add_labels(self._new(run, "label"))
        return records

    def _new(self, run: str, kind: str) -> pd.DataFrame:
        new, last = self.store.records(run, kind, after=self.seen.get((run, kind), 0))
        self.seen[(run, kind)] = last
        return new

    def forget(self, run: str, keep_reset: bool = False) -> None:
        """Drop what was read of a run (deleted from the store, or its records reset)."""
        self.runs.pop(run, None)
        for kind in ("begin", "iteration", "label") if keep_reset else ("begin", "iteration", "label", "reset"):
            self.seen.pop((run, kind), None)
