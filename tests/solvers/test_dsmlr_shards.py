"""Sharded data for DS-MLR on Dask: the folder format (round trip, the test split in parts, an older
single test file, hostile manifests, parts changed after sharding), the same model and the same
test accuracy records as the unsharded Dask and threads runs with the driver unable to read a
single part (the workers evaluate the test parts), a sharded test split evaluated part by part to
the whole split's numbers, the CLI `shard` + `train` path, and a dashboard launch confined to its data
folders (a part linked from outside is refused, a changed part refuses the resume)."""
import json
import os
import stat

import numpy as np
import pytest

import xcviz.data.shards as shards_module
import xcviz.data.textio as textio
from xcviz.api import evaluate, train
from xcviz.cli import main
from xcviz.data.dataset import Dataset
from xcviz.data.errors import DatasetFormatError
from xcviz.data.shards import MANIFEST, Shards, open_shards, write_shards
from xcviz.data.synthetic import generate, split
from xcviz.runs.inputs import InputError, check, record
from xcviz.records.sinks import MemorySink
from xcviz.runs.spec import RunSpec
from xcviz.solvers.dsmlr.solver import DsmlrParams, fit_dsmlr
from tests.solvers.test_dsmlr import client  # noqa: F401  (the LocalCluster(2) fixture)
from xcviz.app.ui.datasets import DatasetRefused, checked_dataset, dataset_choices

PARAMS = dict(mode="sync", epochs=3, grid=4, alpha=200.0, lam=1e-3)


@pytest.fixture(scope="module")
def data():
    """Multi-label rows (replicated by DS-MLR), some without any label (dropped by it): the row
    numbering the workers place their rows by skips them. On these rows numpy's log and numba's
    differed in b (the Dask model was not the threads model until phase B used numba's)."""
    ds = generate(600, 60, 12, avg_labels=1.5, avg_nnz=8, seed=4)
    Y = ds.Y.tolil()
    for i in (0, 7, 150, 599):
        Y.rows[i], Y.data[i] = [], []
    return Dataset(X=ds.X, Y=Y.tocsr(), name="small")


def test_a_sharded_folder_reads_back_the_rows_in_order(data, tmp_path):
    sh = write_shards(data, tmp_path / "s", 3)
    again = open_shards(tmp_path / "s")
    assert [p["rows"] for p in again.parts] == [200, 200, 200] and again.n_rows == 600
    assert sum(p["labelled"] for p in again.parts) == 596
    assert (again.X != data.X).nnz == 0 and (again.Y != data.Y).nnz == 0
    assert again.test is None and again.test_parts == [] and again.test_split() is None
    assert sh.files()[0].name == MANIFEST and len(sh.files()) == 4
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == sorted(f.name for f in sh.files())  # no temporary
    assert stat.S_IMODE((tmp_path / "s" / MANIFEST).stat().st_mode) == 0o644  # readable as its parts
    with pytest.raises(ValueError, match="not an empty folder"):
        write_shards(data, tmp_path / "s", 2)


@pytest.mark.parametrize("change, phrase", [
    (lambda m: m["parts"][0].update(file="../outside.txt"), "plain file name"),
    (lambda m: m["parts"][0].update(file="/etc/passwd"), "plain file name"),
    (lambda m: m.update(n_rows=401), "do not add up"),
    (lambda m: m["parts"][1].update(rows=-1), "integer from 0"),
    (lambda m: m.update(format="other"), "not a shard manifest"),
])
def test_a_hostile_manifest_is_refused_naming_it(data, tmp_path, change, phrase):
    write_shards(data, tmp_path / "s", 3)
    path = tmp_path / "s" / MANIFEST
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))
    with pytest.raises(DatasetFormatError, match=phrase) as err:
        open_shards(tmp_path / "s")
    assert str(path) in str(err.value) and "root:" not in str(err.value)


def test_the_test_split_is_sharded_too_and_an_older_single_test_file_still_reads(data, tmp_path):
    test = Dataset(X=data.X[:5], Y=data.Y[:5], name="t")
    sh = write_shards(data, tmp_path / "s", 3, test)
    assert [p["file"] for p in sh.test_parts] == [f"test-0000{k}.txt" for k in range(3)]
    assert [p["rows"] for p in sh.test_parts] == [1, 2, 2] and sh.test_parts[0]["labelled"] == 0  # row 0: no label
    split = open_shards(tmp_path / "s").test_split()
    assert isinstance(split, Shards) and split.n == 5 and (split.X != test.X).nnz == 0 and (split.Y != test.Y).nnz == 0
    assert len(sh.files()) == 1 + 3 + 3
    assert len(write_shards(data, tmp_path / "few", 3, Dataset(X=data.X[:2], Y=data.Y[:2])).test_parts) == 2
    # a folder of before: one test file named by "test"
    meta = json.loads((tmp_path / "s" / MANIFEST).read_text())
    old = Dataset(X=sh.test_split().X, Y=sh.test_split().Y)
    textio.write_xc(tmp_path / "s" / "test.txt", old)
    meta.pop("test_parts")
    meta["test"] = "test.txt"
    (tmp_path / "s" / MANIFEST).write_text(json.dumps(meta))
    legacy = open_shards(tmp_path / "s")
    assert legacy.files()[-1].name == "test.txt" and (legacy.test_split().X != test.X).nnz == 0
    meta["test_parts"] = [{"file": "test-00000.txt", "rows": 1, "labelled": 0}]
    (tmp_path / "s" / MANIFEST).write_text(json.dumps(meta))
    with pytest.raises(DatasetFormatError, match="both a test file and test_parts"):
        open_shards(tmp_path / "s")


def test_a_part_changed_after_sharding_is_refused_naming_it(data, tmp_path):
    sh = write_shards(data, tmp_path / "s", 2)
    first = sh.part_paths()[0]
    lines = first.read_text().splitlines(keepends=True)
    n, d, l = lines[0].split()
    first.write_text(f"{int(n) - 1} {d} {l}\n" + "".join(lines[1:-1]))
    with pytest.raises(DatasetFormatError, match="changed after sharding") as err:
        open_shards(tmp_path / "s").part(0)
    assert str(first) in str(err.value)


@pytest.mark.cluster
def test_sharded_dask_sync_is_the_unsharded_model_without_the_driver_reading_a_part(data, client, tmp_path,
                                                                                    monkeypatch):
    """The workers (processes of their own) read the parts and evaluate the test parts; in the
    driver every reader raises."""
    held_out = (data.X[:100], data.Y[:100])  # two rows without a label, multi-label rows (replicated)
    write_shards(data, tmp_path / "s", 3, Dataset(X=held_out[0], Y=held_out[1]))
    unsharded_sink = MemorySink()
    unsharded = fit_dsmlr(data.X, data.Y, DsmlrParams(**PARAMS), threads=1, cluster=client, recorder=unsharded_sink,
                          validation=held_out)
    threads = fit_dsmlr(data.X, data.Y, DsmlrParams(**PARAMS), threads=2)

    def refuse(*args, **kw):
        raise AssertionError("the driver read a data file")

    for module, name in ((textio, "read_xc"), (textio, "read_dataset"), (shards_module, "read_xc"),
                         (shards_module, "read_part")):
        monkeypatch.setattr(module, name, refuse)
    monkeypatch.setattr(Shards, "dataset", refuse)
    sink = MemorySink()
    folder = open_shards(tmp_path / "s")
    sharded = fit_dsmlr(folder, None, DsmlrParams(**PARAMS), threads=1, cluster=client, recorder=sink,
                        validation=folder.test_split())
    for other in (unsharded, threads):
        assert (sharded.weights != other.weights).nnz == 0
        assert np.array_equal(sharded.bias_weights, other.bias_weights)
    assert sharded.info["objective"] == unsharded.info["objective"] < np.log(12)
    assert sharded.info["n_rows"] == 596 and sharded.info["n_train"] == int(data.Y.nnz)
    it = sink.frame("iteration")
    after = it[it.iteration > 0].groupby("iteration").first()
    assert (after["variational_gap"] >= 0).all() and np.isfinite(after["objective"]).all()
    # the exact objective (phase B on the workers) and the test accuracy and macro-F1 (the workers'
    # counts against the driver's Evaluator on the whole split), record for record
    same = unsharded_sink.frame("iteration").groupby("iteration").first()
    for field in ("objective", "surrogate", "variational_gap", "b_p50", "accuracy", "macro_f1"):
        assert np.array_equal(it.groupby("iteration").first()[field].to_numpy(), same[field].to_numpy(),
                              equal_nan=True), field
    assert 0 < after["accuracy"].iloc[-1] <= 1 and after["accuracy"].nunique() > 1 and after["macro_f1"].nunique() > 1


def test_a_sharded_test_split_is_evaluated_part_by_part_to_the_numbers_of_the_whole(data, tmp_path):
    test = Dataset(X=data.X[:150], Y=data.Y[:150])
    split = write_shards(data, tmp_path / "s", 2, test).test_split()
    for solver, params in (("dsmlr", PARAMS), ("dismec", {})):  # multiclass (test rows replicated), one-vs-all
        model = train((data.X, data.Y), solver=solver, threads=1, **params)
        whole, parts = evaluate(model, test, threads=1), evaluate(model, split, threads=1)
        assert whole == parts and 0 < parts["p@1"] < 100
        assert ("accuracy" in parts) == (solver == "dsmlr")  # the replicated test split is multiclass


@pytest.mark.cluster
def test_cli_shards_then_trains_on_a_cluster(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XCVIZ_CACHE", str(tmp_path / "cache"))
    train, test = split(generate(300, 30, 8, multiclass=True, avg_nnz=6, seed=3), 0.3, seed=1)
    textio.write_xc(tmp_path / "c_train.txt", train)
    textio.write_xc(tmp_path / "c_test.txt", test)
    assert main(["shard", str(tmp_path / "c_train.txt"), str(tmp_path / "sh"), "--parts", "2"]) == 0
    assert "test split in 2 parts" in capsys.readouterr().out and (tmp_path / "sh" / "test-00001.txt").is_file()
    assert main(["train", str(tmp_path / "sh"), "--solver", "dsmlr", "--cluster", "local:2x1", "--threads", "1",
                 "--epochs", "2", "--set", "grid=4", "--lam", "1e-3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    local = fit_dsmlr(train.X, train.Y, DsmlrParams(mode="sync", epochs=2, grid=4, lam=1e-3), threads=1)
    assert out["workers"] == 2 and out["n_test"] == test.n and "accuracy" in out
    assert out["objective"] == round(local.info["objective"], 6)  # the summary rounds to 6 decimals
    assert out["accuracy"] == pytest.approx(round(100 * (local.predict_topk(test.X, 1)[0][:, 0] == test.Y.indices).mean(), 4))
    assert main(["shard", str(tmp_path / "sh"), str(tmp_path / "again"), "--parts", "2"]) == 2


def test_a_dashboard_launch_is_confined_part_by_part(data, tmp_path):
    allowed = tmp_path / "data"
    write_shards(data, allowed / "s", 2)
    assert dataset_choices([allowed])["s/ (sharded)"] == str(allowed / "s")  # the page offers it
    assert checked_dataset(str(allowed / "s"), [allowed]) == (str(allowed / "s"), None)
    with pytest.raises(DatasetRefused, match="outside the data folders"):
        checked_dataset(str(allowed / "s"), [tmp_path / "other"])
    spec = RunSpec(dataset=str(allowed / "s"), solver="dsmlr", params=PARAMS).validate()
    recorded = record(spec, [allowed])
    assert len(recorded["files"]) == 3
    assert check(spec, recorded) == (str((allowed / "s").resolve()), None)
    part = allowed / "s" / "part-00001.txt"
    outside = tmp_path / "elsewhere.txt"
    os.replace(part, outside)
    part.symlink_to(outside)
    with pytest.raises(InputError, match="outside the data folders"):
        record(spec, [allowed])
    with pytest.raises(InputError, match="outside the data folders"):
        check(spec, recorded)
    part.unlink()
    os.replace(outside, part)
    with part.open("a") as f:
        f.write("")
    os.utime(part)
    check(spec, recorded)  # same content: still the run's input
    with part.open("a") as f:
        f.write("3 1:1\n")
    with pytest.raises(InputError, match="changed since the run was launched"):
        check(spec, recorded)
