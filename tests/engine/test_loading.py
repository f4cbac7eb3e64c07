"""xcviz's cached kernels load in a fresh process without numba's target refresh, without compiling
numba's runtime module and without importing numba's array library (engine/loading.py, the
kernels' workspace allocated outside them), and what they compute there is what they compute in a
process that took numba's own path."""
import os
import stat

import numpy as np
import scipy.sparse as sp

from benchmarks.kernel_loading import CHILD, run_child
from xcviz.data.synthetic import generate
from xcviz.engine import loading
from xcviz.solvers.dismec import DismecParams, fit_dismec


def test_fresh_process_loads_kernels_lightly_and_trains_the_same_model(tmp_path):
    data = generate(120, 50, 6, avg_labels=2, avg_nnz=8, seed=5)
    here = fit_dismec(data.X, data.Y, DismecParams(), threads=2)  # compiles, or loads, and caches every kernel
    sp.save_npz(tmp_path / "X.npz", sp.csr_matrix(data.X))
    sp.save_npz(tmp_path / "Y.npz", sp.csr_matrix(data.Y))
    out = run_child(CHILD, str(tmp_path / "X.npz"), str(tmp_path / "Y.npz"), "2", str(tmp_path / "W.npy"), timeout=600)
    assert out["refreshes"] == 0
    assert out["nrt_compiled"] == 0
    assert "numba.np.arrayobj" not in out["imported"] and "numba.np.arraymath" not in out["imported"]
    assert {"train_block", "_fill_rows"} <= set(out["loads"])
    np.testing.assert_array_equal(np.load(tmp_path / "W.npy"), here.weights.toarray())


def test_the_runtime_module_cache_is_written_whole_private_or_skipped(tmp_path, monkeypatch):
    """The cached NRT module goes through xcviz._util.atomic_write: a whole, owner-only file; an
    unwritable folder or a failing write is skipped silently (numba compiles it next time), and
    no temporary file is left in the kernels' cache folder."""
    path = tmp_path / "xcviz-nrt-test.nbc"
    loading._write(str(path), b"object code")
    assert path.read_bytes() == b"object code" and stat.S_IMODE(path.stat().st_mode) == 0o600
    loading._write(str(tmp_path / "missing" / "x.nbc"), b"object code")  # no such folder: skipped

    def disk_full(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    loading._write(str(path), b"newer object code")
    assert path.read_bytes() == b"object code"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
