"""The cost model against hand-computed schedules, the Workers view's per-lane sums, and both
one-vs-all solvers on an in-process LocalCluster against their threads runs."""
import numpy as np
import pandas as pd
import pytest

from xcviz.runs.cluster import connect, parse_cluster
from xcviz.runs.costmodel import list_schedule, predict_makespan
from xcviz.runs.sinks import MemorySink
from xcviz.solvers.dismec import DismecParams, fit_dismec
from xcviz.solvers.ppdsparse import PPDSparseParams, fit_ppdsparse
from xcviz.ui.figures import run_color
from xcviz.ui.workers_view import WorkersView, lane_summary


def test_list_schedule_by_hand():
    # two workers: 3 | 3, then 2 -> 5 | 3, 2 -> 5 | 5, 2 -> 7 | 5
    assert list_schedule(np.array([3.0, 3.0, 2.0, 2.0, 2.0]), 2) == 7.0
    assert list_schedule(np.array([4.0, 1.0]), 8) == 4.0
    assert list_schedule(np.array([1.0, 2.0, 3.0]), 1) == 6.0


def test_makespan_by_hand():
    # 32 labels of 1 s with equal positives: blocks of at least 8 labels, so 4 blocks of 8 s (+1 ms)
    pred = predict_makespan(np.ones(32), np.ones(32, int), data_bytes=2e9, workers=(1, 2, 4, 8),
                            task_overhead=1e-3, bandwidth=1e9)
    np.testing.assert_array_equal(pred.blocks, [4, 4, 4, 4])
    np.testing.assert_allclose(pred.broadcast, [2.0, 4.0, 8.0, 16.0])
    np.testing.assert_allclose(pred.compute, [32.004, 16.002, 8.001, 8.001])
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
    # a run's bars in its own colour, the one it has in every other figure, wherever it is listed
    rows = {"r": {"name": "first", "status": "done", "number": 3}, "s": {"name": "second", "status": "done", "number": 4}}
    view.update(rows, ["s", "r"])
    colours = dict(zip(view.source.data["run"], view.source.data["color"]))
    assert colours == {"first": run_color(rows["r"]), "second": run_color(rows["s"])} and len(set(colours.values())) == 2


@pytest.fixture(scope="module")
def cluster():
    client, info = connect(parse_cluster("local:2x1"))
    yield client, info
    client.close()


@pytest.mark.parametrize("fit, params", [(fit_ppdsparse, PPDSparseParams()), (fit_dismec, DismecParams(init="ovap"))],
                         ids=["ppdsparse", "dismec-ovap"])
def test_solvers_on_a_local_cluster_match_threads(bibtex, cluster, fit, params):
    train, _ = bibtex
    Y = train.Y.tocsc()[:, :60].tocsr()  # 60 labels keep it quick
    threads_sink, dask_sink = MemorySink(), MemorySink()
    a = fit(train.X, Y, params, threads=1, recorder=threads_sink)
    b = fit(train.X, Y, params, threads=1, recorder=dask_sink, cluster=cluster)
    assert (a.weights != b.weights).nnz == 0 and a.weights.nnz > 0
    np.testing.assert_array_equal(a.bias_weights, b.bias_weights)
    assert b.info["workers"] == 2 and b.info["cluster"] == "local:2x1" and b.info["blocks"] == 8
    for kind in ("iteration", "label"):
        x, y = threads_sink.frame(kind), dask_sink.frame(kind)
        drop = [c for c in x if c in ("wall", "seconds") or c.endswith("_seconds")]
        keys = ["label", "iteration"] if kind == "iteration" else ["label"]
        pd.testing.assert_frame_equal(x.drop(columns=drop).sort_values(keys).reset_index(drop=True),
                                      y.drop(columns=drop).sort_values(keys).reset_index(drop=True))
    tasks = dask_sink.frame("task")
    assert tasks["labels"].sum() == 60 and set(tasks["worker"]) == set(cluster[0].scheduler_info()["workers"])
