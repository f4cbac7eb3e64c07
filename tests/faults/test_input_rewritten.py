"""A data file rewritten while a background run reads it: the run fails and says why, never ends
`done` on the new file or on a mixture of both under the old fingerprint. An XC file's header row
count often betrayed the rewrite; a LIBSVM file has no header, and its runs ended `done` in 4 trials of 8."""
import pytest

from xcviz.data.synthetic import generate
from xcviz.data.textio import write_libsvm, write_xc
from xcviz.runs import worker
from xcviz.runs.inputs import record
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore


@pytest.mark.parametrize("fmt", ["libsvm", "xc"])
def test_a_file_rewritten_while_the_run_reads_it_fails_the_run(tmp_path, monkeypatch, fmt):
    write = write_libsvm if fmt == "libsvm" else write_xc
    data = tmp_path / f"train.{fmt}"
    write(data, generate(300, 50, 20, avg_labels=2, avg_nnz=8, seed=1))
    spec = RunSpec(dataset=str(data), solver="dismec", threads=1).validate()
    store = RunStore(tmp_path / "home")
    run = store.create(spec.to_json(), "rewritten", inputs=record(spec, None))
    real = worker.resolve

    def read_then_rewrite(*args):  # the file is replaced (another writer) once the run has read it
        read = real(*args)
        write(data, generate(300, 50, 20, avg_labels=2, avg_nnz=8, seed=2))
        return read

    monkeypatch.setattr(worker, "resolve", read_then_rewrite)
    assert worker.execute(store, run) == "failed"
    row = store.get(run)
    assert row["status"] == "failed" and "changed while the run read it" in row["error"], row["error"]
    assert str(data) in row["error"] and "\n" not in row["error"]
