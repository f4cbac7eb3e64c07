"""The mini-batch schedule MEMOIR and LDGS share: every row once an epoch, in the generator's
shuffles; min(records_per_epoch, batches) evenly spaced records an epoch, each epoch ending on one; a stop ends the
run before the next batch."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from xcviz.solvers.batch_schedule import BatchSchedule


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 60), batch=st.integers(1, 70), epochs=st.integers(1, 4), per_epoch=st.integers(1, 12))
def test_every_row_once_an_epoch_and_the_records_spaced_within_it(n, batch, epochs, per_epoch):
    events = []
    schedule = BatchSchedule(n, batch, epochs, per_epoch, np.random.default_rng(7),
                             progress=lambda done, total: events.append(("progress", done, total)),
                             record=lambda step: events.append(("record", step)),
                             end_epoch=lambda epoch: events.append(("epoch", epoch)))
    batches = [rows.copy() for rows in schedule]
    size = min(n, batch)
    batches_an_epoch = -(-n // size)
    assert len(batches) == schedule.total == batches_an_epoch * epochs == schedule.step
    assert not schedule.cancelled
    expected = np.random.default_rng(7)
    for e in range(epochs):
        epoch = batches[e * batches_an_epoch:(e + 1) * batches_an_epoch]
        assert np.array_equal(np.concatenate(epoch), expected.permutation(n))  # the caller's stream, in order
        assert all(len(rows) == size for rows in epoch[:-1])
    assert [e for e in events if e[0] == "progress"] == [("progress", k, schedule.total)
                                                          for k in range(1, schedule.total + 1)]
    records = [e[1] for e in events if e[0] == "record"]
    for e in range(epochs):
        inside = [s for s in records if e * batches_an_epoch < s <= (e + 1) * batches_an_epoch]
        assert len(inside) == min(per_epoch, batches_an_epoch) and inside[-1] == (e + 1) * batches_an_epoch
        gaps = np.diff([e * batches_an_epoch] + inside)  # evenly spaced: the gaps differ by one batch at most
        assert gaps.max() - gaps.min() <= 1
    # order after a batch: progress, then its record, then the end of its epoch
    assert [e for e in events if e[0] != "progress"][-2:] == [("record", schedule.total), ("epoch", epochs)]
    assert [e[1] for e in events if e[0] == "epoch"] == list(range(1, epochs + 1))


@pytest.mark.parametrize("stop_after", [0, 1, 5, 6, 7])
def test_a_stop_ends_the_run_before_the_next_batch(stop_after):
    asked = []

    def stop():
        asked.append(len(asked))
        return len(asked) > stop_after

    epochs_ended, trained = [], 0
    schedule = BatchSchedule(30, 10, 3, 1, np.random.default_rng(0), stop=stop, end_epoch=epochs_ended.append)
    for _rows in schedule:
        trained += 1
    assert trained == schedule.step == min(stop_after, 9)
    assert schedule.cancelled == (stop_after < 9)
    assert epochs_ended == list(range(1, min(stop_after, 9) // 3 + 1))  # an epoch the stop cut short has not ended
