"""The label inspector of a finished run opened from its summary (more than WHOLE_UP_TO records):
the label table is the run's label records, and one label's trajectory is read from the store
through the `batch_labels` index (never a scan of the run), equal to the records written and to
what a run read whole shows; a run recorded without the index is found by a scan, the same."""
import sqlite3

import numpy as np
import pandas as pd
import pytest

from xcviz.app.ui import records as records_module
from xcviz.app.ui.label_views import LabelInspector
from xcviz.app.ui.records import PlotRun, RecordCache
from xcviz.runs.aggregate import RunAggregate
from xcviz.runs.sketch import SummaryAggregate
from xcviz.runs.store import RunStore

N_ROWS = 500
BLOCK = 7
LABELS = 5 * BLOCK


def _block(first: int) -> tuple[dict, dict]:
    """A block of BLOCK labels: label l trains l % 4 + 2 iterations, objective 100 - 10 * iteration + l,
    active set 400 - 50 * iteration; its label record (n_pos l + 1, seconds l / 100, status l % 2)."""
    labels = np.arange(first, first + BLOCK)
    lengths = labels % 4 + 2
    label = np.repeat(labels, lengths)
    iteration = np.concatenate([np.arange(k) for k in lengths])
    iterations = {"label": label, "iteration": iteration, "wall": label + iteration / 10.0,
                  "seconds": np.full(label.size, 0.01), "objective": 100.0 - 10.0 * iteration + label,
                  "active_set": 400 - 50 * iteration}
    per_label = {"label": labels, "n_pos": labels + 1, "iterations": lengths, "seconds": labels / 100.0,
                 "status": labels % 2}
    return iterations, per_label


@pytest.fixture
def big_run(tmp_path, monkeypatch):
    """A finished one-vs-all run of 5 blocks (more records than WHOLE_UP_TO, lowered to 10)."""
    monkeypatch.setattr(records_module, "WHOLE_UP_TO", 10)
    store = RunStore(tmp_path)
    run = store.create("{}", "big")
    store.append_batch(run, "begin", {"n": np.array([N_ROWS])})
    for first in range(0, LABELS, BLOCK):
        iterations, per_label = _block(first)
        store.append_batch(run, "iteration", iterations)
        store.append_batch(run, "label", per_label)
    store.update(run, status="done")
    return store, run


def _inspect(store: RunStore, run: str, label: int) -> tuple[LabelInspector, RecordCache]:
    cache = RecordCache(store)
    inspector = LabelInspector()
    inspector.show({run: PlotRun("big", "#000", cache.refresh(run, finished=True), LABELS)})
    inspector.label.value = label
    return inspector, cache


def test_the_inspector_shows_the_label_table_and_one_labels_trajectory_from_the_index(big_run, monkeypatch):
    store, run = big_run
    monkeypatch.setattr(RunStore, "stored_batches", lambda *a: pytest.fail("the run was scanned"))
    inspector, cache = _inspect(store, run, 13)
    assert isinstance(cache.runs[run].iterations, SummaryAggregate)
    table = inspector.slowest.value  # the 10 slowest of 35 labels: seconds l / 100, so labels 34..25
    assert table["label"].tolist() == list(range(34, 24, -1))
    assert table["n_pos"].tolist() == list(range(35, 25, -1)) and np.allclose(table["seconds"], np.arange(34, 24, -1) / 100)
    assert table["status"].tolist() == ["converged", "max_iter"] * 5  # status l % 2, Newton's codes
    # label 13: 13 % 4 + 2 = 3 iterations, objective 113, 103, 93; active set 400, 350, 300 of 500 rows
    sources = {fig.title.text.split(": ")[1]: src.data for fig, src in zip(inspector._figures, inspector._sources)
               if fig.visible}
    objective = next(v for k, v in sources.items() if k.startswith("objective"))
    assert objective["x"].tolist() == [0, 1, 2] and objective["v"].tolist() == [113.0, 103.0, 93.0]
    steps = cache.runs[run].iterations.trajectory(13)
    assert steps["active_fraction"].tolist() == [0.8, 0.7, 0.6]
    assert steps["objective_gap"].iloc[:2].tolist() == pytest.approx([20 / 93, 10 / 93])
    assert "13: 3 iterations recorded" in inspector.info.object.replace("label ", "")
    assert "n_pos 14" in inspector.info.object


def test_the_trajectory_equals_a_whole_read_and_a_scan_without_the_index(big_run):
    store, run = big_run
    whole = RunAggregate(N_ROWS)
    for b in store.stored_batches(run, "iteration"):
        whole.add(b)
    expected = {label: whole.trajectory(label).reset_index(drop=True) for label in (0, 6, 7, 34)}
    assert [len(e) for e in expected.values()] == [2, 4, 5, 4]  # label % 4 + 2 iterations
    indexed = RecordCache(store).refresh(run, finished=True).iterations
    for label, steps in expected.items():
        pd.testing.assert_frame_equal(indexed.trajectory(label).reset_index(drop=True), steps)
    with sqlite3.connect(store.path) as db:  # as a writer from before the index left the first block
        db.execute("DELETE FROM batch_labels WHERE run = ? AND seq = 2", (run,))
    scanned = RecordCache(store).refresh(run, finished=True).iterations
    for label, steps in expected.items():
        pd.testing.assert_frame_equal(scanned.trajectory(label).reset_index(drop=True), steps)
    assert indexed._trajectories.indexed and not scanned._trajectories.indexed
    assert indexed.trajectory(LABELS).empty  # not a label of the run


def test_a_small_finished_run_is_still_read_whole(big_run, monkeypatch):
    store, run = big_run
    monkeypatch.setattr(records_module, "WHOLE_UP_TO", 10**6)
    inspector, cache = _inspect(store, run, 13)
    aggregate = cache.runs[run].iterations
    assert not isinstance(aggregate, SummaryAggregate) and len(aggregate.records()) == sum(
        np.arange(LABELS) % 4 + 2)
    assert aggregate.trajectory(13)["objective"].tolist() == [113.0, 103.0, 93.0]
    assert len(inspector.slowest.value) == 10
