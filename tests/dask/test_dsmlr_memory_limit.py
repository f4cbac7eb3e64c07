"""DS-MLR's "data does not fit" regime with a real memory limit: a driver process, connected to
a LocalCluster of 2 worker processes (its scheduler in this process, not under the limit), caps its
data segment with RLIMIT_DATA, once warm, at less than the training data's size (`benchmarks.dsmlr_bench.limit_data`). Over the sharded folder it
trains to the objective of an unlimited run; loading the same data into it fails with a
MemoryError that names the folder."""
import numpy as np
import pytest

from benchmarks.dsmlr_bench import driver_process
from xcviz.data.shards import write_shards
from xcviz.data.synthetic import generate
from xcviz.solvers.dsmlr.solver import DsmlrParams, fit_dsmlr

pytestmark = pytest.mark.cluster

# the bench's step, which its warm-up on 300 rows must not use (it diverges there)
SYNC = {"epochs": 1, "grid": 4, "lam": 1e-3, "alpha": 1500.0}


def test_a_driver_limited_below_the_data_trains_on_shards_and_fails_loading(tmp_path):
    ds = generate(5_000, 1_000, 20, multiclass=True, zipf=0.0, avg_nnz=200, seed=0)
    data_mb = (ds.X.data.nbytes + ds.X.indices.nbytes + ds.X.indptr.nbytes) / 2**20
    assert data_mb > 10  # well above the drivers' noise
    write_shards(ds, tmp_path / "shards", 4)
    limit = data_mb / 2
    out = driver_process(["sharded", "loaded"], str(tmp_path / "shards"), limit, SYNC)

    # the limit was in force: the OS reports it, at the baseline plus less than the data
    assert out["limit_mb"] == limit < data_mb
    assert abs(out["rlimit_data_mb"] - (out["baseline_data_mb"] + limit)) < 0.01
    sharded = out["sharded"]
    assert "error" not in sharded, sharded["error"]
    assert sharded["data_segment_mb"] <= out["baseline_data_mb"] + limit
    # the same model as an unlimited run (sync on threads is Dask's sync bit for bit)
    reference = fit_dsmlr(ds.X, ds.Y, DsmlrParams(mode="sync", **SYNC), threads=1)
    assert sharded["objective"] == reference.info["objective"] < np.log(20)
    assert sharded["n_rows"] == ds.n
    # the driver that reads the data itself cannot, and says which data and why
    loaded = out["loaded"]
    assert loaded["error"].startswith("MemoryError: ") and str(tmp_path / "shards") in loaded["error"]
    assert "not enough memory" in loaded["error"] and "workers" in loaded["error"]
