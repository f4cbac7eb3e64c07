"""A one-vs-all run of a label sample (`label_sample`, issue #39 item 5): the sample is stratified by
positives and reproducible, the model holds only the sampled labels, and the metrics are computed on
them and say so, from the API, the estimate and a background run alike."""
import numpy as np
import pytest
import scipy.sparse as sp

import xcviz
from xcviz import metrics
from xcviz.app import report
from xcviz.app.ui.estimate_view import estimate_rows
from xcviz.data.label_sample import draw_labels, positives_per_label, sample_count
from xcviz.data.synthetic import generate
from xcviz.runs.estimate import estimate
from xcviz.runs.launcher import launch, wait
from xcviz.runs.progress import progress_text
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore


@pytest.fixture(scope="module")
def data():
    return generate(1200, 150, 120, avg_labels=3, avg_nnz=15, seed=5)


def test_a_value_asks_for_every_label_a_share_or_a_count():
    assert [sample_count(v, 200) for v in (0, 0.1, 0.001, 30, 30.4, 500)] == [200, 20, 1, 30, 30, 200]
    with pytest.raises(ValueError, match="label_sample"):
        sample_count(-1, 200)
    assert draw_labels(np.arange(50), 0) is None and draw_labels(np.arange(50), 50) is None  # every label: no sample


def test_the_sample_is_stratified_by_positives_and_the_same_every_time():
    n_pos = np.repeat(np.arange(1, 11), 100)[np.random.default_rng(0).permutation(1000)]  # 100 labels per count
    drawn = draw_labels(n_pos, 0.1)
    assert drawn.size == 100 and np.all(np.diff(drawn) > 0)
    assert np.bincount(n_pos[drawn], minlength=11)[1:].tolist() == [10] * 10  # every tenth by positives alike
    assert np.array_equal(drawn, draw_labels(n_pos, 0.1))
    assert not np.array_equal(drawn, draw_labels(n_pos, 0.1, seed=1))


@pytest.mark.parametrize("solver", ["dismec", "ppdsparse"])
def test_the_model_holds_only_the_sampled_labels_trained_as_they_would_be_alone(data, solver):
    model = xcviz.train(data, solver=solver, threads=1, label_sample=25)
    labels = draw_labels(positives_per_label(data.Y), 25)
    assert model.weights.shape == (25, data.n_features) and model.bias_weights.shape == (25,)
    assert model.info["label_sample"] == {"labels": labels.tolist(), "of": data.n_labels, "seed": 0}
    alone = xcviz.train((data.X, data.Y[:, labels]), solver=solver, threads=1)
    assert (model.weights != alone.weights).nnz == 0
    assert np.array_equal(model.bias_weights, alone.bias_weights)


def test_metrics_are_those_of_the_sampled_labels_on_the_rows_that_have_one(data):
    train, test = generate(1200, 150, 120, avg_labels=3, avg_nnz=15, seed=5), generate(
        600, 150, 120, avg_labels=3, avg_nnz=15, seed=5)  # the same generator: the same labels' words
    model = xcviz.train(train, threads=1, label_sample=0.2)
    labels = model.info["label_sample"]["labels"]
    scores = xcviz.evaluate(model, test, train)
    Y = sp.csr_matrix(test.Y)[:, labels]
    keep = np.diff(Y.indptr) > 0
    assert 0 < keep.sum() < test.n and scores["rows_scored"] == keep.sum()
    top = model.predict_topk(test.X[keep], k=5)[0]
    inv_prop = 1.0 / metrics.propensities(train.Y[:, labels])
    assert scores["p@1"] == pytest.approx(metrics.evaluate(Y[keep], top, inv_prop=inv_prop)["p@1"])
    assert scores["psp@3"] == pytest.approx(metrics.evaluate(Y[keep], top, inv_prop=inv_prop)["psp@3"])


def test_an_estimate_of_a_sample_run_is_of_that_run(data):
    model = xcviz.train(data, threads=1, label_sample=30)
    result = estimate(data, "dismec", {"label_sample": 30}, 1, sample=30)  # every label of the run's sample
    assert result["sampled_labels"] == 30 and result["model_nnz"] == model.nnz
    assert result["label_sample"] == {"labels": 30, "of": data.n_labels}
    table = estimate_rows([("<i>mine</i>", result)], threads=1)
    assert f"&lt;i&gt;mine&lt;/i&gt;: a sample of 30 of {data.n_labels} labels" in table


def test_a_background_run_of_a_sample_says_so_in_its_summary_progress_and_report(tmp_path, monkeypatch):
    store = RunStore(tmp_path)
    spec = RunSpec(dataset="bibtex", params={"init": "zero", "label_sample": 20}, threads=1, name="<b>sample</b>")
    run = launch(spec.validate(), store)
    row = wait(store, run, timeout=240)
    assert row["status"] == "done", row["error"]
    assert row["summary"]["label_sample"] == {"labels": 20, "of": 159} and row["total"] == 20
    assert 0 < row["summary"]["rows_scored"] < 2515 and 0 < row["summary"]["p@1"] <= 100
    assert progress_text(row) == "20/20 sampled"
    built = []
    monkeypatch.setattr(report, "file_html", lambda layout, *args, **kw: built.append(layout) or "")
    report.build_report(store, [run])
    header = built[0].children[0].text  # the report's first part: its title, metrics and notes
    assert "<b>&lt;b&gt;sample&lt;/b&gt;</b> trained a sample of 20 of 159 labels" in header
    assert f"on the {row['summary']['rows_scored']:,} test rows that have one of them" in header
