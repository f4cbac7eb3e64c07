"""The cost model against hand-computed schedules, the Workers view's per-lane sums, and both
one-vs-all solvers on an in-process LocalCluster against their threads runs."""
import numpy as np
import pandas as pd
import pytest

from xcviz.compute.cluster import connect, parse_cluster
from xcviz.runs.costmodel import list_schedule, predict_makespan
from xcviz.records.sinks import MemorySink
from xcviz.solvers.dismec import DismecParams, fit_dismec
from xcviz.compute.cluster import worker_addresses
from xcviz.solvers.ppdsparse import PPDSparseParams, fit_ppdsparse
from xcviz.app.ui.colors import preferred_color as run_color
from xcviz.app.ui.workers_view import WorkersView, lane_summary


def test_list_schedule_by_hand():
    # two workers: 3 | 3, then 2 -> 5 | 3, 2 -> 5 | 5, 2 -> 7 | 5
    assert list_schedule(np.array([3.0, 3.0, 2.0, 2.0, 2.0]), 2) == 7.0
    assert list_schedule(np.array([4.0, 1.0]), 8) == 4.0
    assert list_schedule(np.array([1.0, 2.0, 3.0]), 1) == 6.0


def test_makespan_by_hand():
    # 32 labels of 1 s with equal positives, guided blocks of at least 8 labels: one worker takes
    # half of what is left, 16 then 8 then 8 (3 blocks, +1 ms each); two or more take a quarter or
    # less of it, so 4 blocks of 8 s
    pred = predict_makespan(np.ones(32), np.ones(32, int), data_bytes=2e9, workers=(1, 2, 4, 8),
                            task_overhead=1e-3, bandwidth=1e9)
    np.testing.assert_array_equal(pred.blocks, [3, 4, 4, 4])
    np.testing.assert_allclose(pred.broadcast, [2.0, 4.0, 8.0, 16.0])
    np.testing.assert_allclose(pred.compute, [32.003, 16.002, 8.001, 8.001])
    np.testing.assert_allclose(pred.seconds, pred.broadcast + pred.compute)


def test_lane_summary_and_escaped_names(tmp_path):
    tasks = pd.DataFrame({"task": [0, 1, 2], "worker": ["tcp://a:1", "tcp://b:2", "tcp://a:1"],
                          "start": [100.0, 100.0, 103.0], "end": [102.0, 104.0, 104.0],
                          "labels": [8, 9, 7], "seconds": [2.0, 4.0, 1.0], "bytes": [10, 20, 30]})
    summary = lane_summary(tasks).set_index("worker")
    assert summary.loc["tcp://a:1", "blocks"] == 2 and summary.loc["tcp://a:1", "labels"] == 15
    assert summary.loc["tcp://a:1", "busy_s"] == 3.0 and summary.loc["tcp://a:1", "idle_s"] == 1.0  # span 4 s
    assert summary.loc["tcp://b:2", "busy_pct"] == 100.0

    class Store:  # what the view reads: task records after a batch number
        def records(self, run, kind, after=0):
            return (tasks, 1) if after == 0 else (pd.DataFrame(), after)

    view = WorkersView(Store())
    view.update({"r": {"name": "<script>x</script>", "status": "done"}}, ["r"])
    assert "<script>" not in view.table.object and "&lt;script&gt;" in view.table.object
    assert list(view.timeline.y_range.factors) == ["tcp://a:1", "tcp://b:2"]
    np.testing.assert_allclose(view.source.data["left"], [0.0, 0.0, 3.0])
    first_colour = view.source.data["color"][0]
    # a run's bars in its own colour, the one it has in every other figure, wherever it is listed
    rows = {"r": {"name": "first", "status": "done", "number": 3}, "s": {"name": "second", "status": "done", "number": 4}}
    view.update(rows, ["s", "r"])
    colours = dict(zip(view.source.data["run"], view.source.data["color"]))
    assert colours["second"] == run_color(rows["s"]) and len(set(colours.values())) == 2
    assert colours["first"] == first_colour  # a run keeps the colour it was first drawn in


@pytest.fixture(scope="module")
def cluster():
    client, info = connect(parse_cluster("local:2x1"))
    yield client, info
    client.close()


def _worker_state(dask_worker):
    import os
    import sys

    import dask

    return {"profiler": dask.config.get("distributed.worker.profile.enabled"),
            "malloc_trim": os.environ.get("MALLOC_TRIM_THRESHOLD_"), "omp": os.environ.get("OMP_NUM_THREADS"),
            "tick": dask.config.get("distributed.admin.tick.interval"),
            "plugin": "xcviz-import-solvers" in dask_worker.plugins,
            "solvers": all(m in sys.modules for m in ("xcviz.solvers.dismec", "xcviz.solvers.ppdsparse"))}


@pytest.mark.cluster
def test_a_local_cluster_runs_quiet_with_the_solvers_imported(cluster):
    """xcviz's local clusters: no Dask profiler sampling the workers, glibc's adaptive malloc (no
    MALLOC_TRIM_THRESHOLD_), numpy's libraries still on one thread, a 1 s event-loop tick; and the
    solvers imported on every worker by the plugin registered when the cluster started (so a run's
    first tasks do not import them inside train_seconds). First to use the cluster: no task has run on it."""
    client, _ = cluster
    states = client.run(_worker_state)
    assert len(states) == 2
    for state in states.values():
        assert state == {"profiler": False, "malloc_trim": None, "omp": "1", "tick": "1s", "plugin": True,
                         "solvers": True}


@pytest.mark.cluster
def test_workers_that_cannot_import_the_solvers_fail_the_connection(monkeypatch):
    """A scheduler whose workers lack what xcviz's tasks import: connect fails at once with a
    ClusterError naming the address and the missing module (workers in this process, so the
    plugin's module list can be replaced)."""
    from distributed import LocalCluster

    from xcviz.compute import worker_setup
    from xcviz.compute.cluster import ClusterError

    monkeypatch.setattr(worker_setup, "WORKER_IMPORTS", ("xcviz.solvers.no_such_solver",))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as local:
        with pytest.raises(ClusterError, match="cannot import xcviz's solvers .*no_such_solver") as err:
            connect(parse_cluster(local.scheduler_address))
        assert local.scheduler_address in str(err.value)


@pytest.mark.parametrize("fit, params", [(fit_ppdsparse, PPDSparseParams()), (fit_dismec, DismecParams(init="ovap"))],
                         ids=["ppdsparse", "dismec-ovap"])
@pytest.mark.cluster
def test_solvers_on_a_local_cluster_match_threads(bibtex, cluster, fit, params):
    train, _ = bibtex
    Y = train.Y.tocsc()[:, :60].tocsr()  # 60 labels keep it quick
    threads_sink, dask_sink = MemorySink(), MemorySink()
    a = fit(train.X, Y, params, threads=1, recorder=threads_sink)
    b = fit(train.X, Y, params, threads=1, recorder=dask_sink, cluster=cluster)
    assert (a.weights != b.weights).nnz == 0 and a.weights.nnz > 0
    np.testing.assert_array_equal(a.bias_weights, b.bias_weights)
    assert b.info["workers"] == 2 and b.info["cluster"] == "local:2x1" and b.info["blocks"] == 6  # 15 12 9 8 8 8
    for kind in ("iteration", "label"):
        x, y = threads_sink.frame(kind), dask_sink.frame(kind)
        drop = [c for c in x if c in ("wall", "seconds") or c.endswith("_seconds")]
        keys = ["label", "iteration"] if kind == "iteration" else ["label"]
        pd.testing.assert_frame_equal(x.drop(columns=drop).sort_values(keys).reset_index(drop=True),
                                      y.drop(columns=drop).sort_values(keys).reset_index(drop=True))
    tasks = dask_sink.frame("task")
    assert tasks["labels"].sum() == 60 and set(tasks["worker"]) == set(worker_addresses(cluster[0]))


STRANGER = """
import sys
from distributed import Client
try:
    with Client(sys.argv[1], timeout="5s") as c:
        print("ran", c.submit(sum, [1, 2]).result())
except Exception as exc:
    print("refused", type(exc).__name__)
"""


@pytest.mark.cluster
def test_a_local_cluster_refuses_a_client_without_its_certificate(cluster):
    """Another process on the machine (another user, say) that finds the scheduler's loopback port
    can neither speak plain TCP to it nor complete TLS without the run's in-memory certificate, so
    it cannot run code as the run's owner; the run's own client can."""
    import subprocess
    import sys

    client, _ = cluster
    address = client.scheduler.address
    assert address.startswith("tls://127.0.0.1:")
    assert client.submit(sum, [1, 2]).result() == 3
    for attempt in (address, address.replace("tls://", "tcp://")):
        out = subprocess.run([sys.executable, "-c", STRANGER, attempt], capture_output=True, text=True, timeout=120)
        assert out.stdout.startswith("refused"), (attempt, out.stdout, out.stderr[-2000:])


@pytest.mark.cluster
def test_a_tls_scheduler_is_reached_with_the_certificates_of_dask_configuration(tmp_path):
    """The recipe of docs/dask.md for a scheduler elsewhere with TLS: the certificate files named in Dask's
    configuration are what xcviz's `connect` uses for a tls:// address; without them it cannot
    connect and the error says what to configure."""
    import dask
    from distributed import LocalCluster, Security

    from xcviz.compute.cluster import ClusterError

    security = Security.temporary()
    files = {}
    for name, pem in (("ca", security.tls_ca_file), ("cert", security.tls_client_cert),
                      ("key", security.tls_client_key)):
        files[name] = tmp_path / f"{name}.pem"
        files[name].write_text(pem)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                      security=security, dashboard_address="127.0.0.1:0") as scheduler:
        address = scheduler.scheduler_address
        assert address.startswith("tls://")
        with pytest.raises(ClusterError, match="distributed.comm.tls.ca-file"):
            connect(parse_cluster(address), connect_timeout=3)
        with dask.config.set({"distributed.comm.tls.ca-file": str(files["ca"]),
                              "distributed.comm.tls.client.cert": str(files["cert"]),
                              "distributed.comm.tls.client.key": str(files["key"])}):
            client, info = connect(parse_cluster(address))
            try:
                assert info.workers == 1 and client.submit(sum, [1, 2]).result() == 3
            finally:
                client.close()
