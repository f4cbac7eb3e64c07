"""Workers that read their own data: a one-vs-all fit given the DataSource its rows came from
sends the workers a recipe (where the files are, how to prepare them), never the rows; each worker
reads and prepares them once and the model is the threads model, bit for bit."""
import os
import pathlib
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from distributed.diagnostics.plugin import SchedulerPlugin

from xcviz.compute.cluster import connect, parse_cluster
from xcviz.data.registry import resolve
from xcviz.data.source import DataChanged, DataSource, training_data
from xcviz.records.sinks import MemorySink
from xcviz.solvers._onevsall.block_files import BlockFileError, read_block_file, write_block_file
from xcviz.solvers._onevsall.dask_backend import DataRecipe
from xcviz.solvers.dismec import DismecParams, fit_dismec
from xcviz.solvers.ppdsparse import PPDSparseParams, fit_ppdsparse


class KeysSeen(SchedulerPlugin):
    """Every key the scheduler held, and the bytes of each result it was told of."""

    name = "xcviz-test-keys-seen"

    def __init__(self, scheduler) -> None:
        self.keys: set[str] = set()
        self.nbytes: dict[str, int] = {}
        self.scheduler = scheduler

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        self.keys.add(str(key))
        if finish == "memory":
            self.nbytes[str(key)] = self.scheduler.tasks[key].nbytes


@pytest.fixture(scope="module")
def cluster():
    client, info = connect(parse_cluster("local:2x1"))
    yield client, info
    client.close()


@pytest.mark.parametrize("fit, params", [(fit_ppdsparse, PPDSparseParams()), (fit_dismec, DismecParams(init="ovap")),
                                         (fit_dismec, DismecParams(init="msi"))], ids=["ppdsparse", "dismec-ovap", "dismec-msi"])
@pytest.mark.cluster
def test_workers_read_the_data_and_the_scheduler_never_holds_it(small_xc, tmp_path, cluster, fit, params):
    """...and with blocks_dir the weights go from the workers through files, checked, removed once read."""
    client, _ = cluster
    blocks = tmp_path / "blocks"
    blocks.mkdir()
    path = str(small_xc[0])
    train, _ = resolve(path)
    source = DataSource.of(path)
    seen = KeysSeen(client.cluster.scheduler)
    client.cluster.scheduler.add_plugin(seen)
    try:
        threads_sink, dask_sink = MemorySink(), MemorySink()
        a = fit(train.X, train.Y, params, threads=1, recorder=threads_sink)
        b = fit(train.X, train.Y, params, threads=1, recorder=dask_sink, cluster=cluster, source=source,
                blocks_dir=str(blocks))
    finally:
        client.cluster.scheduler.remove_plugin(name=seen.name)
    assert (a.weights != b.weights).nnz == 0 and a.weights.nnz > 0
    np.testing.assert_array_equal(a.bias_weights, b.bias_weights)
    assert b.info["data_from"] == "workers" and b.info["scatter_seconds"] == 0.0
    assert b.info["data_bytes"] == a.info.get("data_bytes", b.info["data_bytes"]) > 0
    # the scheduler held the block tasks and nothing else: no scattered data, no other key
    assert seen.keys and all(k.startswith("xcviz-") and "-block-" in k for k in seen.keys), seen.keys
    assert len(seen.nbytes) == b.info["blocks"]
    tasks = dask_sink.frame("task")
    assert tasks["labels"].sum() == train.n_labels
    assert list(blocks.iterdir()) == []  # every block file read back and removed
    assert sorted(dask_sink.frame("label")["label"]) == list(range(train.n_labels))


@pytest.mark.parametrize("fit, params", [(fit_dismec, DismecParams(init="msi", label_sample=90)),
                                         (fit_ppdsparse, PPDSparseParams(label_sample=0.25))],
                         ids=["dismec-count", "ppdsparse-share"])
@pytest.mark.cluster
def test_a_label_sample_on_workers_reading_the_data_is_the_threads_sample(small_xc, tmp_path, cluster, fit, params):
    """`label_sample` on Dask (issue #39 item 5's runs at full shape): each worker reads the whole
    file and trains the sampled columns the driver drew, so the model, its sample note and the
    labels recorded are the threads run's."""
    blocks = tmp_path / "blocks"
    blocks.mkdir()
    path = str(small_xc[0])
    train, _ = resolve(path)
    threads_sink, dask_sink = MemorySink(), MemorySink()
    a = fit(train.X, train.Y, params, threads=1, recorder=threads_sink)
    b = fit(train.X, train.Y, params, threads=1, recorder=dask_sink, cluster=cluster, source=DataSource.of(path),
            blocks_dir=str(blocks))
    sample = a.info["label_sample"]
    assert sample["of"] == train.n_labels and len(sample["labels"]) == (90 if isinstance(params, DismecParams) else 75)
    assert b.info["label_sample"] == sample and b.info["data_from"] == "workers"
    assert a.weights.shape[0] == len(sample["labels"]) and (a.weights != b.weights).nnz == 0 and a.weights.nnz > 0
    np.testing.assert_array_equal(a.bias_weights, b.bias_weights)
    assert dask_sink.frame("task")["labels"].sum() == len(sample["labels"])
    assert sorted(dask_sink.frame("label")["label"]) == sorted(threads_sink.frame("label")["label"])

def test_a_recipe_is_small_and_a_changed_file_is_refused(small_xc, tmp_path):
    """The recipe a task carries is a few hundred bytes (the path, stamps and constants), and a
    worker that finds the file changed since the driver stamped it refuses it, naming the file."""
    path = str(small_xc[0])
    train, _ = resolve(path)
    source = DataSource.of(path)
    assert training_data(source).X.shape == train.X.shape
    from functools import partial

    from xcviz.solvers._onevsall.blocks import problem_data
    from xcviz.solvers.dismec import dismec_data

    recipe = DataRecipe.of(source, partial(problem_data, build=dismec_data, args=(0, None, (0, 1.0), False),
                                           normalize=True, bias=1.0, order_rows=True), 1 << 20)
    assert len(pickle.dumps(recipe)) < 2000
    with open(path, "a") as f:
        f.write("\n")
    with pytest.raises(DataChanged, match=f"training file {path} differs"):
        training_data(source)
    os.remove(path)
    with pytest.raises(DataChanged, match=f"training file {path} cannot be read here"):
        source.check()


def test_a_flipped_byte_in_a_block_file_is_detected_naming_the_block(tmp_path):
    labels = np.array([3, 17, 40])
    weights = sp.random(3, 50, density=0.3, random_state=0, format="csr")
    written = write_block_file(tmp_path, "xcviz-run-block-0", labels, weights)
    assert (read_block_file(written, labels) != weights).nnz == 0
    assert oct(os.stat(written.path).st_mode & 0o777) == "0o600"
    file = pathlib.Path(written.path)
    content = bytearray(file.read_bytes())
    content[len(content) // 2] ^= 0x01  # one bit of one byte, in the middle of the arrays
    file.write_bytes(bytes(content))
    with pytest.raises(BlockFileError) as err:
        read_block_file(written, labels)
    message = str(err.value)
    assert "the block of 3 labels from 3 to 40" in message and written.path in message and "SHA-256" in message
    assert not any(f"{v:.4f}" in message for v in weights.data)  # the block named, not its contents
    os.remove(written.path)
    with pytest.raises(BlockFileError, match="cannot be read"):
        read_block_file(written, labels)
