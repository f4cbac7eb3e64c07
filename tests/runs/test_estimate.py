"""Estimates from a stratified sample of labels (issue #39 item 2): the sample, the extrapolation,
and, with every label sampled, the exact model size and record count of the whole run."""
import json

import numpy as np
import pytest

import xcviz
from xcviz.data.label_sample import stratified_sample
from xcviz.data.synthetic import generate
from xcviz.records.sinks import MemorySink
from xcviz.runs.estimate import estimate, extrapolate
from xcviz.runs.spec import RunSpec


def test_the_sample_draws_the_same_share_of_every_group_of_positives():
    n_pos = np.array([5, 1, 9, 3, 7, 2, 8, 4, 6, 10, 11, 12])
    groups = stratified_sample(n_pos, 6, strata=3, seed=1)
    assert sorted(np.concatenate([g for g, _ in groups]).tolist()) == list(range(12))  # a partition
    for group, drawn in groups:
        assert group.size == 4 and drawn.size == 2 and set(drawn) <= set(group)
    assert [sorted(n_pos[g].tolist()) for g, _ in groups] == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    assert all(d.size == 1 for _, d in stratified_sample(n_pos, 1, strata=3))  # at least one a group


def test_each_label_is_predicted_as_its_groups_sampled_mean():
    groups = [(np.array([0, 2, 4]), np.array([0, 4])), (np.array([1, 3]), np.array([3]))]
    labels = {"label": np.array([4, 0, 3]), "seconds": np.array([3.0, 1.0, 10.0]), "nnz": np.array([6.0, 2.0, 7.0])}
    predicted = extrapolate(groups, labels)
    assert predicted["seconds"].tolist() == [2.0, 10.0, 2.0, 10.0, 2.0]
    assert predicted["nnz"].sum() == pytest.approx(3 * 4.0 + 2 * 7.0)


@pytest.mark.parametrize("solver,params", [("dismec", {"init": "msi"}), ("ppdsparse", {})])
def test_with_every_label_sampled_the_model_size_and_records_are_the_runs(solver, params):
    data = generate(500, 80, 30, avg_labels=2, avg_nnz=10, seed=3)
    sink = MemorySink()
    model = xcviz.train(data, solver=solver, threads=1, recorder=sink, **params)
    result = estimate(data, solver, params, 1, sample=30, workers=(1, 8))
    assert result["sampled_labels"] == 30
    assert result["model_nnz"] == model.nnz
    assert result["record_count"] == len(sink.iterations) + len(sink.labels)
    assert result["train_seconds"] > 0 and result["peak_rss_mb"] > 0
    assert set(result["workers_seconds"]) == {1, 8}
    assert result["workers_seconds"][8] < result["workers_seconds"][1]


def test_a_sample_predicts_the_model_size_of_the_whole_run_closely():
    data = generate(2000, 300, 400, avg_labels=3, avg_nnz=20, seed=4)
    model = xcviz.train(data, solver="dismec", init="msi", threads=1)
    result = estimate(data, "dismec", {"init": "msi"}, 1, sample=80)
    assert result["sampled_labels"] == 80
    assert result["model_nnz"] == pytest.approx(model.nnz, rel=0.1)


def test_a_multiclass_family_is_refused():
    with pytest.raises(ValueError, match="trains all classes at once"):
        estimate(generate(100, 20, 5, multiclass=True), "memoir", {}, 1)


@pytest.mark.slow
def test_xcviz_estimate_prints_the_keys_of_train_json(tmp_path, xcviz_cli):
    (tmp_path / "spec.json").write_text(RunSpec(dataset="bibtex", params={"init": "zero"}, threads=1).to_json())
    result = xcviz_cli("estimate", tmp_path / "spec.json", "--sample", "30", "--workers", "4", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    assert {"train_seconds", "peak_rss_mb", "model_nnz", "record_count"} <= set(out) and out["sampled_labels"] == 30
    assert out["workers_seconds"]["4"] > 0
    refused = xcviz_cli("estimate", tmp_path / "spec.json", "--sample", "0")
    assert refused.returncode == 2 and refused.stderr.startswith("xcviz: error: --sample")
