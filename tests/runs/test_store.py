"""The run store: deleting a run removes everything it holds for it, and new runs get fresh ids."""
import os

import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.runs.store import RunStore, SqliteSink, StoreError


def _run_with_everything(store: RunStore, name: str) -> str:
    run = store.create("{}", name)
    store.append_batch(run, "iteration", {"label": np.arange(3), "iteration": np.zeros(3, np.int64)})
    store.add_piece(run, np.arange(3), sp.csr_matrix(np.eye(3)), np.zeros(3))
    (store.run_dir(run) / "model").mkdir()
    (store.run_dir(run) / "log.txt").write_text("trained\n")
    store.update(run, status="done")
    return run


def test_delete_removes_rows_records_pieces_and_folder(tmp_path):
    store = RunStore(tmp_path)
    gone, kept = _run_with_everything(store, "gone"), _run_with_everything(store, "kept")
    store.delete(gone)
    assert [r["id"] for r in store.list()] == [kept]
    assert store.records(gone, "iteration")[0].empty and store.pieces(gone) == []
    assert not (tmp_path / "runs" / gone).exists()
    assert len(store.records(kept, "iteration")[0]) == 3 and len(store.pieces(kept)) == 1
    assert (tmp_path / "runs" / kept / "log.txt").exists()
    with pytest.raises(StoreError):
        store.delete(gone)


def test_delete_refuses_a_run_that_is_still_training(tmp_path):
    store = RunStore(tmp_path)
    run = _run_with_everything(store, "busy")
    store.update(run, status="running", pid=os.getpid(), host=os.uname().nodename)
    with pytest.raises(StoreError, match="cancel it before deleting"):
        store.delete(run)
    assert store.get(run)["status"] == "running"


def test_a_drawn_id_already_taken_is_drawn_again(tmp_path, monkeypatch):
    """Hundreds of runs created in one second share the time prefix: a repeated random tail must
    give a fresh id, not a failed insert (CI once met one among 1500 runs)."""
    import xcviz.runs.store as store_module
    store = RunStore(tmp_path)
    first = store.create("{}", "a")
    drawn = iter([first, first, "20260101-000000-abcdef"])
    monkeypatch.setattr(store_module, "_new_id", lambda: next(drawn))
    second = store.create("{}", "b")
    assert second == "20260101-000000-abcdef"
    assert {r["id"] for r in store.list()} == {first, second}


def test_a_sink_holds_the_store_open_from_begin_to_end(tmp_path):
    """Between begin and end the write-ahead log outlives each short write (no checkpoint on every
    close: RunStore.hold); after end the last connection folds it into the store."""
    store = RunStore(tmp_path)
    run = store.create("{}", "held")
    wal = store.path.with_name(store.path.name + "-wal")
    sink = SqliteSink(store, run)
    sink.begin({"n_labels": 3, "n": 5})
    sink.write("iteration", {"loss": np.arange(4.0)})
    assert wal.exists()
    sink.end({})
    assert not wal.exists()
    frame, _ = store.records(run, "iteration")
    assert frame["loss"].tolist() == [0.0, 1.0, 2.0, 3.0]
    store.append_batch(run, "iteration", {"loss": np.ones(2)})
    assert not wal.exists()


def test_a_sink_writes_through_the_connection_it_holds(tmp_path, monkeypatch):
    """After `begin`, a run's batches go through the sink's held connection: no connection is
    opened per batch (each cost an open, two pragmas and a close in the training's thread)."""
    store = RunStore(tmp_path)
    run = store.create("{}", "held")
    sink = SqliteSink(store, run)
    sink.begin({"n_labels": 3, "n": 5})
    opened = []
    connect = store._connect
    monkeypatch.setattr(store, "_connect", lambda: opened.append(1) or connect())
    for k in range(3):
        sink.write("iteration", {"label": np.arange(3) + 3 * k, "iteration": np.zeros(3, np.int64)})
    assert opened == []
    sink.end({})
    assert store.summary(run)[0].labels == 9


@pytest.mark.parametrize("change", ["deleted", "replaced"])
def test_a_held_connection_refuses_a_store_deleted_or_replaced_under_it(tmp_path, change):
    """As a new connection would: the held one must not go on writing into a file that is no
    longer the store."""
    store = RunStore(tmp_path / "home")
    run = store.create("{}", "held")
    sink = SqliteSink(store, run)
    sink.begin({"n_labels": 3, "n": 5})
    sink.write("iteration", {"label": np.arange(3), "iteration": np.zeros(3, np.int64)})
    if change == "deleted":
        store.path.unlink()
    else:
        other = RunStore(tmp_path / "other")
        os.replace(other.path, store.path)
    with pytest.raises(StoreError, match="gone" if change == "deleted" else "replaced"):
        sink.write("iteration", {"label": np.arange(3), "iteration": np.zeros(3, np.int64)})
    sink.end({})
