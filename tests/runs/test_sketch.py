"""The per-iteration summaries the store writes with each batch (runs.sketch): their bands against
pandas' quantile_bands over every record, within the stated bound; the log-structured merge of
many batches; a store of schema 2 migrated; a finished run read from its summary."""
import sqlite3

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz.app.ui import records as records_module
from xcviz.app.ui.records import RecordCache
from xcviz.runs.aggregate import RunAggregate, quantile_bands
from xcviz.runs.sketch import ALPHA, Summary, SummaryAggregate
from xcviz.runs.store import SUMMARY_FANOUT, RunStore


def _batch(rng: np.random.Generator, first_label: int, labels: int) -> pd.DataFrame:
    lengths = rng.integers(1, 9, labels)
    label = np.repeat(np.arange(first_label, first_label + labels), lengths)
    n = len(label)
    scale = 10.0 ** rng.integers(-9, 4, n)
    return pd.DataFrame({"label": label, "iteration": np.concatenate([np.arange(k) for k in lengths]),
                         "wall": first_label + rng.random(n), "seconds": rng.random(n),
                         "objective": rng.normal(size=n) * scale, "cg_steps": rng.integers(0, 5, n)})


def _within_bound(summary: Summary, records: pd.DataFrame, field: str) -> None:
    """Each band edge within ALPHA * max |x_k|, |x_k+1| of pandas', x_k, x_k+1 the order
    statistics it interpolates between; counts exact."""
    b = summary.bands(field)
    rows = records[records["iteration"] > 0] if field in ("seconds", "cg_steps") else records
    exact = quantile_bands(rows, field)
    assert np.array_equal(b["group"], exact["iteration"].to_numpy())
    assert np.array_equal(b["count"], exact["count"].to_numpy())
    for column, q in (("median", 0.5), ("lower", 0.05), ("upper", 0.95)):
        worst = rows.groupby("iteration")[field].agg(lambda v: np.abs(v).max()).to_numpy()  # >= both order stats
        assert np.all(np.abs(b[column] - exact[column].to_numpy()) <= ALPHA * worst + 1e-300), (field, column)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(1, 30), min_size=1, max_size=6))
def test_merged_summaries_give_the_bands_of_every_record_within_the_bound(seed, sizes):
    rng = np.random.default_rng(seed)
    batches, first = [], 0
    for size in sizes:
        batches.append(_batch(rng, first, size))
        first += size
    summary = Summary.merge([Summary.unpack(Summary.of(b).pack()) for b in batches])
    records = pd.concat(batches, ignore_index=True)
    for field in ("objective", "seconds", "cg_steps"):
        _within_bound(summary, records, field)
    assert (summary.records, summary.labels, summary.batches) == (len(records), first, len(sizes))
    work = records.groupby("iteration")["seconds"].sum().to_numpy()
    assert np.allclose(summary.work(), work)


def test_few_distinct_values_are_exact():
    """Values that are bucket-exact (counts, integers 0..4 here are each the only value of their
    bucket, clamped to the group's exact range) give pandas' bands exactly where the order
    statistics are the group's min and max."""
    records = pd.DataFrame({"label": np.arange(6), "iteration": np.zeros(6, np.int64),
                            "objective": [3.0, 3.0, 3.0, 3.0, 3.0, 3.0]})
    b = Summary.of(records).bands("objective")
    assert b["median"][0] == b["lower"][0] == b["upper"][0] == 3.0


def test_store_writes_summaries_with_each_batch_and_merges_levels(tmp_path):
    store = RunStore(tmp_path)
    run = store.create("{}", "big")
    store.append_batch(run, "begin", {"n": np.array([1000])})
    rng = np.random.default_rng(1)
    batches = [_batch(rng, 10 * k, 10) for k in range(SUMMARY_FANOUT ** 2 + 3)]
    for b in batches:
        store.append_batch(run, "iteration", {c: b[c].to_numpy() for c in b})
    summary, last = store.summary(run)
    assert last == len(batches) + 1 and summary.batches == len(batches)
    with sqlite3.connect(store.path) as db:  # 67 batches of fan-out 8: one of level 2, three of level 0
        levels = sorted(r[0] for r in db.execute("SELECT level FROM summaries WHERE run = ?", (run,)))
    assert levels == [0, 0, 0, 2]
    _within_bound(summary, pd.concat(batches, ignore_index=True), "objective")
    store.clear_records(run)
    assert store.summary(run) == (None, 0)


def test_a_store_of_schema_2_is_migrated_and_its_old_runs_are_read_whole(tmp_path):
    store = RunStore(tmp_path)
    run = store.create("{}", "old")
    rng = np.random.default_rng(2)
    b = _batch(rng, 0, 5)
    store.append_batch(run, "iteration", {c: b[c].to_numpy() for c in b})
    with sqlite3.connect(store.path) as db:  # as version 2 left it: no summaries
        db.execute("DROP TABLE summaries")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    store = RunStore(tmp_path)
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "3"
    assert store.summary(run) == (None, 0)  # no summary of the batch before: read whole
    store.append_batch(run, "iteration", {c: b[c].to_numpy() + 0 for c in b})
    assert store.summary(run) == (None, 0)  # one batch of two summarised is not the run


def test_a_finished_run_is_read_from_its_summary_and_anew_when_resumed(tmp_path, monkeypatch):
    monkeypatch.setattr(records_module, "WHOLE_UP_TO", 10)
    store = RunStore(tmp_path)
    run = store.create("{}", "done")
    rng = np.random.default_rng(3)
    batches = [_batch(rng, 20 * k, 20) for k in range(4)]
    for b in batches:
        store.append_batch(run, "iteration", {c: b[c].to_numpy() for c in b})
    cache = RecordCache(store)
    aggregate = cache.refresh(run, finished=True).iterations
    assert isinstance(aggregate, SummaryAggregate)
    whole = RunAggregate()
    for b in batches:
        whole.add(b)
    assert len(aggregate) == len(whole) and aggregate.per_label()
    assert set(aggregate.fields()) == set(whole.fields()) and aggregate.axes() == whole.axes()
    for axis, field in (("iteration", "objective"), ("work", "seconds"), ("wall", "labels_done")):
        mine, exact = aggregate.bands(field, axis), whole.bands(field, axis)
        assert np.allclose(mine["x"], exact["x"]) and np.array_equal(mine["count"], exact["count"])
        assert np.allclose(mine["median"], exact["median"], rtol=2 * ALPHA, atol=1e-12)
    b = _batch(rng, 100, 3)
    store.append_batch(run, "iteration", {c: b[c].to_numpy() for c in b})
    again = cache.refresh(run, finished=False).iterations
    assert not isinstance(again, SummaryAggregate) and len(again) == len(whole) + len(b)
    with pytest.raises(ValueError):
        aggregate.add(b)
