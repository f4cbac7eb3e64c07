"""The mini-batch schedule the SGD solvers share (MEMOIR, LDGS): the rows shuffled anew every epoch
and cut into batches, and a diagnostic record after batches floor(k P / R) of an epoch (P batches
an epoch, R records asked, k = 1..R), so an epoch has exactly min(R, P) evenly spaced records and
ends on one. The driver skeleton (solvers._driver) asks stop, reports progress and records."""
from __future__ import annotations

from typing import Iterator

import numpy as np


class BatchSchedule:
    """Iterating gives each batch's rows; `step` counts the batches handed out before the current
    one (it moves on when the next is asked for). `due(step)` says whether batch `step` (counted
    from 1 over the whole run) ends on a record, `ends_epoch(step)` whether it ends an epoch."""

    def __init__(self, n: int, batch: int, epochs: int, records_per_epoch: int, rng: np.random.Generator) -> None:
        self.n, self.batch, self.epochs = n, min(n, batch), epochs
        self.per_epoch = -(-n // self.batch)
        self.total = self.per_epoch * epochs
        positions = (k * self.per_epoch // records_per_epoch for k in range(1, records_per_epoch + 1))
        self.recorded = frozenset(positions) - {0}  # an epoch's batches (counted from 1) that end on a record
        self.step = 0
        self._rng = rng

    def __iter__(self) -> Iterator[np.ndarray]:
        for _epoch in range(self.epochs):
            order = self._rng.permutation(self.n)
            for start in range(0, self.n, self.batch):
                yield order[start:start + self.batch]
                self.step += 1

    def due(self, step: int) -> bool:
        return (step - 1) % self.per_epoch + 1 in self.recorded

    def ends_epoch(self, step: int) -> bool:
        return step % self.per_epoch == 0
