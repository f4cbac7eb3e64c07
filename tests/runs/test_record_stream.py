"""The CSV and JSON export streams a run's records from the store in chunks of a fixed number of
rows: its files are byte for byte what the export wrote before (one DataFrame of every record,
`store.records`, then `to_csv(index=False)` / `to_json(orient="records")`), also for a run whose
batches differ in columns and dtypes; and it never holds more than a chunk and one stored batch."""
import io
import zipfile

import numpy as np
import pytest

from xcviz.app.report import records_archive, write_records
from xcviz.runs import record_stream
from xcviz.runs.record_stream import chunks, write_csv, write_json
from xcviz.runs.store import RunStore

BATCH = 7  # records per stored batch


def _iterations(k: int, with_cg: bool = True, wide: bool = True) -> dict:
    rng = np.random.default_rng(k)
    label = np.repeat(np.arange(k, k + 1), BATCH)
    columns = {"label": label, "iteration": np.arange(BATCH),
               "objective": rng.normal(size=BATCH) * 10.0 ** rng.integers(-9, 9, BATCH),
               "seconds": (rng.random(BATCH) if wide else rng.random(BATCH).astype(np.float32))}
    if with_cg:
        columns["cg_steps"] = rng.integers(0, 5, BATCH)
    return columns


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path)


def _run(store: RunStore, name: str, batches: list[dict], labels: dict | None = None) -> str:
    run = store.create("{}", name)
    for columns in batches:
        store.append_batch(run, "iteration", columns)
    if labels is not None:
        store.append_batch(run, "label", labels)
    return run


def _streamed(store: RunStore, run: str, kind: str, rows: int) -> tuple[bytes, bytes]:
    csv, json = io.BytesIO(), io.BytesIO()
    write_csv(chunks(store, run, kind, rows), csv)
    write_json(chunks(store, run, kind, rows), json)
    return csv.getvalue(), json.getvalue()


def _old(store: RunStore, run: str, kind: str) -> tuple[bytes, bytes]:
    frame, _ = store.records(run, kind)
    return frame.to_csv(index=False).encode(), frame.to_json(orient="records").encode()


@pytest.mark.parametrize("rows", [1, 3, BATCH, 10, 1000])
def test_the_streamed_files_are_byte_identical_to_the_old_export(store, rows):
    same = _run(store, "same", [_iterations(k) for k in range(5)],
                labels={"label": np.arange(5), "n_pos": np.arange(5) + 1, "seconds": np.linspace(0, 1, 5)})
    # a run resumed by another version: a batch without cg_steps (ints become floats with NaN),
    # one with float32 seconds (float64 once concatenated)
    mixed = _run(store, "mixed", [_iterations(0), _iterations(1, with_cg=False), _iterations(2, wide=False),
                                  _iterations(3)])
    for run, kind in ((same, "iteration"), (same, "label"), (mixed, "iteration")):
        assert _streamed(store, run, kind, rows) == _old(store, run, kind), (run, kind)
    csv = _streamed(store, mixed, "iteration", rows)[0].decode().splitlines()
    assert csv[0] == "label,iteration,objective,seconds,cg_steps" and len(csv) == 1 + 4 * BATCH
    assert csv[1].endswith((",0.0", ",1.0", ",2.0", ",3.0", ",4.0")) and csv[BATCH + 1].endswith(",")
    assert _streamed(store, same, "nothing", rows) == (b"\n", b"[]") == _old(store, same, "nothing")


def test_written_and_zipped_files_are_the_old_ones(store, tmp_path):
    run = _run(store, "r", [_iterations(k) for k in range(3)], labels={"label": np.arange(3), "n_pos": np.ones(3)})
    paths = write_records(store, [run], tmp_path / "x")
    assert len(paths) == 4
    archive = zipfile.ZipFile(io.BytesIO(records_archive(store, [run])))
    for kind in ("iteration", "label"):
        csv, json = _old(store, run, kind)
        (csv_path,) = [p for p in paths if p.name.endswith(f"{kind}s.csv")]
        (json_path,) = [p for p in paths if p.name.endswith(f"{kind}s.json")]
        assert csv_path.read_bytes() == csv and json_path.read_bytes() == json
        assert archive.read(f"xcviz-r-{run}-{kind}s.csv") == csv and archive.read(f"xcviz-r-{run}-{kind}s.json") == json


def test_the_export_holds_one_chunk_and_one_stored_batch_at_most(store, tmp_path, monkeypatch):
    """A counting wrapper around the store's batch reader and the file the CSV goes to: every
    chunk has at most `rows` rows, and whenever the file is written, the rows read from the store
    and not yet written are fewer than a chunk plus a batch (the export writes as it reads)."""
    n_batches, rows = 40, 10
    run = _run(store, "big", [_iterations(k) for k in range(n_batches)])
    monkeypatch.setattr(RunStore, "records", lambda *a, **k: pytest.fail("the export read the whole run"))
    read, sizes, pending = [0], [], []
    reader = RunStore.stored_batches

    def counting_batches(self, run, kind):
        for batch in reader(self, run, kind):
            read[0] += len(batch)
            yield batch

    def counting_chunks(*args, **kwargs):
        for frame in chunks(*args, **kwargs):
            sizes.append(len(frame))
            yield frame

    class Out(io.BytesIO):
        def write(self, data):
            pending.append(read[0] - sum(sizes[:-1]))  # read minus written before this chunk
            return super().write(data)

    monkeypatch.setattr(RunStore, "stored_batches", counting_batches)
    out = Out()
    write_csv(counting_chunks(store, run, "iteration", rows), out)
    assert sum(sizes) == read[0] == n_batches * BATCH == 280
    assert sizes == [rows] * 28 and max(pending) < rows + BATCH
    assert out.getvalue().count(b"\n") == 281
    monkeypatch.setattr(record_stream, "CHUNK_ROWS", rows)  # the files of `xcviz report` use the same chunks
    sizes.clear()
    monkeypatch.setattr("xcviz.app.report.chunks", counting_chunks)
    write_records(store, [run], tmp_path / "x")
    assert sizes == [rows] * 28 * 2  # CSV and JSON


def test_chunks_of_no_rows_are_refused(store):
    run = _run(store, "r", [_iterations(0)])
    with pytest.raises(ValueError):
        next(chunks(store, run, "iteration", 0))
