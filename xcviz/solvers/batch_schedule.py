"""The mini-batch schedule the SGD solvers share (MEMOIR, LDGS): the rows shuffled anew every epoch
and cut into batches, a stop asked before every batch, progress reported after it, and a
diagnostic record after batches floor(k P / R) of an epoch (P batches an epoch, R records asked,
k = 1..R), so an epoch has exactly min(R, P) evenly spaced records and ends on one."""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np


class BatchSchedule:
    """Iterating gives each batch's rows. After a batch (once the loop's body has trained it):
    `step` counts it, then come progress(step, total), record(step) when a record is due and,
    after an epoch's last batch, end_epoch(epoch). A stop() that answers true ends the iteration
    before the next batch, with `cancelled` set."""

    def __init__(self, n: int, batch: int, epochs: int, records_per_epoch: int, rng: np.random.Generator, *,
                 stop: Callable[[], bool] | None = None, progress: Callable[[int, int], None] | None = None,
                 record: Callable[[int], None] | None = None,
                 end_epoch: Callable[[int], None] | None = None) -> None:
        self.n, self.batch, self.epochs = n, min(n, batch), epochs
        self.per_epoch = -(-n // self.batch)
        self.total = self.per_epoch * epochs
        positions = (k * self.per_epoch // records_per_epoch for k in range(1, records_per_epoch + 1))
        self.recorded = frozenset(positions) - {0}  # an epoch's batches (counted from 1) that end on a record
        self.step, self.cancelled = 0, False
        self._rng, self._stop, self._progress, self._record, self._end_epoch = rng, stop, progress, record, end_epoch

    def __iter__(self) -> Iterator[np.ndarray]:
        for epoch in range(1, self.epochs + 1):
            order = self._rng.permutation(self.n)
            for position, start in enumerate(range(0, self.n, self.batch), 1):
                if self._stop is not None and self._stop():
                    self.cancelled = True
                    return
                yield order[start:start + self.batch]
                self.step += 1
                if self._progress is not None:
                    self._progress(self.step, self.total)
                if self._record is not None and position in self.recorded:
                    self._record(self.step)
            if self._end_epoch is not None:
                self._end_epoch(epoch)
