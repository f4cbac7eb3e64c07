"""Every family's golden case (tests/golden/make_golden.py) trains to the stored weights bit for
bit and to the stored scores: a refactor that changes a number fails here. Rewrite the files on
purpose with `python tests/golden/make_golden.py FAMILY` when a change is meant to move them.
The cases train in a process of their own with OpenBLAS's kernels pinned, as the files were made
(make_golden.BLAS_ENV): this process's numpy has already picked this CPU's."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.golden.make_golden import CASES, pinned_env

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("golden")
    done = subprocess.run([sys.executable, str(GOLDEN / "make_golden.py"), "--out", str(out)], env=pinned_env(),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.parametrize("family", list(CASES))
def test_family_matches_its_golden_weights_and_scores(family, trained):
    stored, got = np.load(GOLDEN / f"{family}.npz"), np.load(trained / f"{family}.npz")
    assert sorted(got.files) == sorted(stored.files)
    for key in stored.files:
        assert got[key].dtype == stored[key].dtype and got[key].shape == stored[key].shape, key
        assert np.array_equal(got[key], stored[key]), f"{family}: {key} differs from the golden file"
    assert json.loads((trained / f"{family}.json").read_text()) == json.loads((GOLDEN / f"{family}.json").read_text())
