"""A data file rewritten while a background run reads it: the run fails and says why, never ends
`done` on the new file or on a mixture of both under the old fingerprint. An XC file's header row
count often betrayed the rewrite; a LIBSVM file has no header, and its runs ended `done` in 4 trials of 8."""
import json
import os
import time

import pytest

from xcviz.data.synthetic import generate
from xcviz.data.textio import write_libsvm, write_xc
from xcviz.runs import worker
from xcviz.runs.inputs import record
from xcviz.runs.launcher import launch
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


HELD = 0.3  # seconds the worker holds the file open before it is rewritten


def _open_in(pid: int, path: str) -> bool:
    """Whether process `pid` holds `path` open (its /proc fd links; False once it has exited)."""
    fds = f"/proc/{pid}/fd"
    try:
        links = [os.readlink(os.path.join(fds, fd)) for fd in os.listdir(fds)]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return path in links


@pytest.mark.slow
def test_a_libsvm_file_rewritten_while_a_real_worker_reads_it_fails_the_run(tmp_path, xcviz_cli):
    """The probe's case, in real processes: a background worker is reading a LIBSVM file (2-3 s)
    when another writer rewrites it in place. The worker's descriptors are watched in /proc: the
    file held open for HELD seconds is the read, not the launch check's fingerprint (26 ms), so the
    rewrite lands mid-read in every trial. Before, such runs ended `done` on a mixture."""
    data = tmp_path / "train.libsvm"
    write_libsvm(data, generate(60000, 400, 40, avg_labels=2, avg_nnz=20, seed=1))
    rows = data.read_bytes().splitlines(keepends=True)
    store = RunStore(tmp_path / "home")
    run = launch(RunSpec(dataset=str(data), solver="dismec", threads=1, name="rewritten"), store)
    deadline, opened = time.monotonic() + 120, None
    while opened is None or time.monotonic() - opened < HELD:
        assert time.monotonic() < deadline and store.get(run)["status"] in ("queued", "running"), store.get(run)
        held = _open_in(store.get(run)["pid"] or -1, str(data))
        opened = (opened or time.monotonic()) if held else None
        time.sleep(0.002)
    with open(data, "r+b") as f:  # in place, as `cp` over it does: the reader's descriptor sees the new bytes
        f.write(b"".join(reversed(rows)))
    waited = xcviz_cli("wait", run, "--json", "--home", store.home, "--timeout", "300")
    row = json.loads(waited.stdout)
    assert row["status"] == "failed" and waited.returncode == 1, (row, waited.stderr[-2000:])
    assert "changed while the run read it" in row["error"] and str(data) in row["error"], row["error"]
