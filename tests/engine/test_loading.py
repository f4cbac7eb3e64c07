"""xcviz's cached kernels load in a fresh process without numba's target refresh (engine/loading.py),
and what they compute there is what they compute in a process that refreshed."""
import json
import subprocess
import sys

import numpy as np
import scipy.sparse as sp

from xcviz.data.synthetic import generate
from xcviz.solvers.dismec import DismecParams, fit_dismec

_CHILD = """
import json, sys
import numpy as np, scipy.sparse as sp
import numba.core.base as base
calls = []
refresh = base.BaseContext.refresh
def counted(self):
    calls.append(1)
    return refresh(self)
base.BaseContext.refresh = counted
from xcviz.solvers.dismec import DismecParams, fit_dismec
model = fit_dismec(sp.load_npz(sys.argv[1]), sp.load_npz(sys.argv[2]), DismecParams(), threads=2)
np.save(sys.argv[3], model.weights.toarray())
print(json.dumps({"refreshes": len(calls)}))
"""


def test_fresh_process_loads_kernels_without_refresh_and_trains_the_same_model(tmp_path):
    data = generate(120, 50, 6, avg_labels=2, avg_nnz=8, seed=5)
    here = fit_dismec(data.X, data.Y, DismecParams(), threads=2)  # compiles, or loads, and caches every kernel
    sp.save_npz(tmp_path / "X.npz", sp.csr_matrix(data.X))
    sp.save_npz(tmp_path / "Y.npz", sp.csr_matrix(data.Y))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "X.npz"), str(tmp_path / "Y.npz"),
                          str(tmp_path / "W.npy")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["refreshes"] == 0
    np.testing.assert_array_equal(np.load(tmp_path / "W.npy"), here.weights.toarray())
