"""What a crash or a full disk may not do: leave a block's records without its weights (so a
resumed run records labels twice), tear a saved model, or let a resumed run mix two data sets."""
import json
import shutil
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from xcviz.models.sparse import SparseModel
from xcviz.runs.launcher import launch, resume, wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore

# the disk fills up while the run's third block is written: the store refuses that block's weights
_DISK_FULL_AT_THIRD_BLOCK = """
CREATE TRIGGER disk_full BEFORE INSERT ON pieces WHEN (SELECT COUNT(*) FROM pieces) >= 2
BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
"""


@pytest.mark.slow
def test_a_block_whose_weights_cannot_be_written_leaves_no_records(tmp_path, small_xc):
    train, test = small_xc
    store = RunStore(tmp_path / "home")
    with sqlite3.connect(store.path) as db:
        db.executescript(_DISK_FULL_AT_THIRD_BLOCK)
    run = launch(RunSpec(dataset=str(train), params={"init": "zero"}, threads=1, name="full"), store)
    row = wait(store, run, timeout=240)
    assert row["status"] == "failed" and "disk is full" in row["error"]
    labels = store.records(run, "label")[0]["label"]
    stored = np.concatenate([p[0] for p in store.pieces(run)])
    assert sorted(labels) == sorted(stored)  # records exactly for the blocks whose weights are stored
    with sqlite3.connect(store.path) as db:
        db.execute("DROP TRIGGER disk_full")
    resume(store, run)
    assert wait(store, run, timeout=240)["status"] == "done"
    labels = store.records(run, "label")[0]["label"]
    assert sorted(labels) == list(range(300))  # each label recorded once


# saves a model over an existing one, under a file-size limit too small for the new weights
_SAVE_UNDER_LIMIT = """
import resource, signal, sys
import numpy as np, scipy.sparse as sp
from xcviz.models.sparse import SparseModel
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
rng = np.random.default_rng(0)
big = SparseModel(weights=sp.random(400, 5000, density=0.05, format="csr", random_state=1), bias_weights=rng.random(400))
try:
    big.save(sys.argv[1])
except OSError as exc:
    print("save failed:", exc.strerror)
"""


def test_a_save_that_fails_midway_keeps_the_previous_model(tmp_path):
    rng = np.random.default_rng(1)
    import scipy.sparse as sp

    small = SparseModel(weights=sp.random(20, 30, density=0.2, format="csr", random_state=2), bias_weights=rng.random(20))
    folder = small.save(tmp_path / "model")
    result = subprocess.run([sys.executable, "-c", _SAVE_UNDER_LIMIT, str(folder)], capture_output=True, text=True,
                            timeout=120)
    assert "save failed" in result.stdout, result.stderr[-2000:]
    kept = SparseModel.load(folder)  # the old model, whole
    assert (kept.weights != small.weights).nnz == 0
    named = json.loads((folder / "model.json").read_text())["arrays"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.json", named])


@pytest.mark.slow
def test_evaluate_on_a_damaged_model_says_so_in_one_line(tmp_path, small_xc, xcviz_cli):
    train, test = small_xc
    out = tmp_path / "model"
    assert xcviz_cli("train", train, "--threads", "1", "--out", out).returncode == 0
    for damage in ("torn", "missing", "empty_json"):
        model = shutil.copytree(out, tmp_path / damage)
        weights = model / json.loads((model / "model.json").read_text())["arrays"]
        if damage == "torn":
            weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
        elif damage == "missing":
            weights.unlink()
        else:
            (model / "model.json").write_text("")
        result = xcviz_cli("evaluate", model, test)
        assert result.returncode == 2 and "Traceback" not in result.stderr, (damage, result.stderr[-2000:])
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("xcviz: error: ") and str(model) in line


@pytest.mark.slow
def test_resume_refuses_an_input_that_changed(tmp_path, small_xc, xcviz_cli):
    train, test = small_xc
    store = RunStore(tmp_path / "home")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"dataset": str(train), "test": str(test), "threads": 1, "params": {"init": "zero"}}))
    run = xcviz_cli("launch", spec, "--home", tmp_path / "home").stdout.strip()
    assert wait(store, run, timeout=240)["status"] == "done"
    store.update(run, status="cancelled")  # as if it had been stopped before its end
    for change, changed in (("rows_swapped", train), ("row_added", test)):
        original = changed.read_bytes()
        header, *rows = changed.read_text().splitlines(keepends=True)
        if change == "rows_swapped":  # same size, same format: other labels for two rows
            k = next(i for i in range(1, len(rows)) if rows[i] != rows[0])
            rows[0], rows[k] = rows[k], rows[0]
        else:
            n, d, l = header.split()
            header, rows = f"{int(n) + 1} {d} {l}\n", rows + rows[-1:]
        changed.write_text(header + "".join(rows))
        result = xcviz_cli("resume", run, "--home", tmp_path / "home")
        assert result.returncode == 2, (change, result.stdout, result.stderr)
        assert str(changed) in result.stderr and "changed since the run was launched" in result.stderr
        assert store.get(run)["status"] == "cancelled"
        changed.write_bytes(original)
    # the same bytes again (a newer mtime): the inputs are what they were, resume goes on
    assert xcviz_cli("resume", run, "--home", tmp_path / "home").returncode == 0
    assert wait(store, run, timeout=240)["status"] == "done"
