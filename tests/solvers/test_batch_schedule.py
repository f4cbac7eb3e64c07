"""The mini-batch schedule MEMOIR and LDGS share: every row once an epoch, in the generator's
shuffles; min(records_per_epoch, batches) evenly spaced records an epoch, each epoch ending on one."""
import numpy as np
from hypothesis import given, settings, strategies as st

from xcviz.solvers.batch_schedule import BatchSchedule


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 60), batch=st.integers(1, 70), epochs=st.integers(1, 4), per_epoch=st.integers(1, 12))
def test_every_row_once_an_epoch_and_the_records_spaced_within_it(n, batch, epochs, per_epoch):
    schedule = BatchSchedule(n, batch, epochs, per_epoch, np.random.default_rng(7))
    batches = [rows.copy() for rows in schedule]
    size = min(n, batch)
    batches_an_epoch = -(-n // size)
    assert len(batches) == schedule.total == batches_an_epoch * epochs == schedule.step
    expected = np.random.default_rng(7)
    for e in range(epochs):
        epoch = batches[e * batches_an_epoch:(e + 1) * batches_an_epoch]
        assert np.array_equal(np.concatenate(epoch), expected.permutation(n))  # the caller's stream, in order
        assert all(len(rows) == size for rows in epoch[:-1])
    records = [s for s in range(1, schedule.total + 1) if schedule.due(s)]
    for e in range(epochs):
        inside = [s for s in records if e * batches_an_epoch < s <= (e + 1) * batches_an_epoch]
        assert len(inside) == min(per_epoch, batches_an_epoch) and inside[-1] == (e + 1) * batches_an_epoch
        gaps = np.diff([e * batches_an_epoch] + inside)  # evenly spaced: the gaps differ by one batch at most
        assert gaps.max() - gaps.min() <= 1
    assert [s for s in range(1, schedule.total + 1) if schedule.ends_epoch(s)] == \
        [(e + 1) * batches_an_epoch for e in range(epochs)]
