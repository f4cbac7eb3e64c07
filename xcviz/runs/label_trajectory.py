"""One label's iteration records read from the store on demand, for a run opened from its summary
(`sketch.SummaryAggregate`), whose records the page never reads whole.

The store's `batch_labels` index names the batches that hold a label, so a label is one indexed
lookup and the decoding of its block's batch (or batches, after a resume). A run recorded before
the index existed (or partly by a writer that does not keep it) is found by a scan instead, one
stored batch in memory at a time: slower, never wrong. Which of the two is decided once per run,
at the first label asked for.
"""
from __future__ import annotations

import pandas as pd

from .aggregate import with_derived
from .store import RunStore, label_rows


class StoredTrajectories:
    """`trajectories(label)`: the label's iteration records by iteration, derived fields included,
    as `RunAggregate.trajectory` gives them for a run read whole. `labels` is the run summary's
    count of (label, batch) pairs, which a complete index holds exactly."""

    def __init__(self, store: RunStore, run: str, labels: int, n_rows: int | None = None) -> None:
        self.store, self.run, self.labels, self.n_rows = store, run, labels, n_rows
        self.indexed: bool | None = None  # known at the first label asked for

    def __call__(self, label: int) -> pd.DataFrame:
        if self.indexed is None:
            self.indexed = self.store.labels_indexed(self.run) == self.labels
        records = (self.store.label_records(self.run, label) if self.indexed
                   else label_rows(self.store.stored_batches(self.run, "iteration"), label))
        if not len(records):
            return records
        return with_derived(records, self.n_rows).sort_values("iteration")
