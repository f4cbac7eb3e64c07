"""A background DiSMEC run on 4 Dask worker processes (local:4x1) over an Amazon-670K-shape label
sample (4,900 rows, 135,909 features, 300 labels), its data read by the workers from the run's
file and its weights written by them to the run's folder: one worker process SIGKILLed after its
first block. Its nanny starts a replacement, which reads the data again; Dask reruns the lost
blocks; the run completes with the model of an uninterrupted threads run, bit for bit."""
import os
import signal

import pytest

from tests.dask.test_cluster_runs import _assert_same_model, _first_task_workers, _model
from xcviz.data.presets import like_with_labels
from xcviz.data.registry import resolve
from xcviz.data.textio import write_xc
from xcviz.runs.launcher import launch, wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.solvers.dismec import DismecParams, fit_dismec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PARAMS = {"init": "zero", "eps": 0.001}  # about 30 s of training on one thread: time to kill a worker


def test_a_worker_killed_on_an_amazon_shape_sample_leaves_the_model_unchanged(tmp_path):
    train, _ = like_with_labels("amazon-670k", 4900, 300, seed=0)
    path = tmp_path / "data" / "amazon_sample_train.txt"
    path.parent.mkdir()
    write_xc(path, train)
    read, _ = resolve(str(path))
    reference = fit_dismec(read.X, read.Y, DismecParams(**PARAMS), threads=1)

    store = RunStore(tmp_path / "home")
    run = launch(RunSpec(dataset=str(path), params=PARAMS, threads=1, cluster="local:4x1", name="amazon-killed"),
                 store)
    victims = _first_task_workers(store, run, timeout=300, what="the first block")
    assert len(victims) == 1, "the worker process that trained the first block"
    assert store.get(run)["done"] < 300, "the run must still have blocks left when the worker dies"
    os.kill(victims[0].pid, signal.SIGKILL)

    row = wait(store, run, timeout=600)
    assert row["status"] == "done", row["error"]
    assert row["summary"]["workers"] == 4
    _assert_same_model(_model(tmp_path / "home", run), reference)
    labels, _ = store.records(run, "label")
    assert sorted(labels["label"]) == list(range(300))  # each label recorded once
    tasks, _ = store.records(run, "task")
    assert tasks["labels"].sum() == 300 and tasks["worker"].nunique() >= 4
    assert list((store.run_dir(run) / "blocks").iterdir()) == []  # every block file read back and removed
