"""Exports never lose a file: every run's records reach `xcviz report`'s folder and the page's zip under
its own name, whatever the run's name holds (a '.' made `Path.with_suffix` cut the names, and two runs
wrote 2 record files of 8)."""
import io
import zipfile

import pandas as pd
import pytest

from xcviz.app.report import records_archive
from xcviz.runs.store import RunStore, SqliteSink

NAMES = ["bibtex C=0.5", "bibtex C=0.25", "v1.2.3", "a.b", "..", "x.csv"]


@pytest.fixture
def dotted_runs(tmp_path):
    """Runs whose names hold dots, each with iteration and label records: (store, run ids)."""
    store = RunStore(tmp_path / "home")
    runs = []
    for k, name in enumerate(NAMES):
        run = store.create('{"dataset": "bibtex"}', name)
        sink = SqliteSink(store, run)
        sink.write("iteration", {"label": [0, 0], "iteration": [0, 1], "elapsed": [0.0, 0.1],
                                 "objective": [10.0 + k, 0.5]})
        sink.write("label", {"label": [0], "iterations": [2], "elapsed": [0.1]})
        store.update(run, status="done")
        runs.append(run)
    return store, runs


def _expected(runs: list[str]) -> int:
    return 4 * len(runs)  # iterations and labels, CSV and JSON


def test_report_writes_every_runs_records_when_names_hold_dots(dotted_runs, tmp_path, xcviz_cli):
    store, runs = dotted_runs
    out = tmp_path / "out" / "report v2.1.html"
    result = xcviz_cli("report", *runs, "-o", out, "--home", store.home, timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    written = sorted(p.name for p in out.parent.iterdir() if p != out)
    assert len(written) == len(set(written)) == _expected(runs), written
    assert all(name.startswith("report v2.1-") for name in written)
    for k, run in enumerate(runs):  # each run's own rows, in its own files
        (csv,) = [p for p in out.parent.glob(f"*-{run}-iterations.csv")]
        assert pd.read_csv(csv)["objective"].iloc[0] == 10.0 + k


def test_the_records_zip_holds_every_runs_files_when_names_hold_dots(dotted_runs):
    store, runs = dotted_runs
    names = zipfile.ZipFile(io.BytesIO(records_archive(store, runs))).namelist()
    assert len(names) == len(set(names)) == _expected(runs), names
    assert all(name.startswith("xcviz-") and "/" not in name and not name.startswith(".") for name in names)
