"""Prediction with a margin oracle (issue 41, item 2: MEMOIR's inexact margins at prediction):
the oracle's top class against the exact one, bias weights included, and its timings."""
import json

import numpy as np
import pytest
import scipy.sparse as sp

import xcviz
from xcviz.cli import main
from xcviz.data.dataset import Dataset
from xcviz.data.presets import like
from xcviz.inexact import evaluate_with_oracle, predict_with_oracle
from xcviz.models.sparse import SparseModel


@pytest.fixture(scope="module")
def margin():
    """MEMOIR on lshtc1-margin at 300 classes (888 rows): a model and its test split."""
    train, test = like("lshtc1-margin", 0.01, labels=300)
    model = xcviz.train(train, solver="memoir", lam=1e-4, epochs=2, threads=2)
    return model, test


def test_the_exact_oracle_predicts_the_models_top_class(margin):
    model, test = margin
    found, seconds = predict_with_oracle(model, test.X, "exact")
    np.testing.assert_array_equal(found, model.predict_topk(test.X, k=1)[0][:, 0])
    assert seconds["query_seconds"] > 0 and seconds["build_seconds"] >= 0


def test_the_bias_weights_count_as_the_models_scores_do():
    """A hand-made model whose bias weights decide most rows: the search's classes carry them."""
    rng = np.random.default_rng(0)
    W = sp.random(40, 30, density=0.3, random_state=1, format="csr")
    model = SparseModel(weights=W, bias_weights=rng.normal(0, 2.0, 40), bias=1.5, normalize=True, solver="memoir")
    X = sp.random(200, 30, density=0.2, random_state=2, format="csr")
    classes, queries = model.as_inner_products(X)
    np.testing.assert_allclose((queries @ classes.T).toarray(), model.decision_function(X), atol=1e-12)
    found, _ = predict_with_oracle(model, X, "exact")
    np.testing.assert_array_equal(found, model.decision_function(X).argmax(axis=1))
    assert (found != (X @ W.T).toarray().argmax(axis=1)).mean() > 0.5  # the bias moved most answers


def test_a_graph_searched_wide_agrees_with_exact_and_says_its_times(margin):
    model, test = margin
    result = evaluate_with_oracle(model, test, "hnsw", hnsw_ef=300, hnsw_candidates=300)
    assert result["accuracy_exact"] == pytest.approx(xcviz.evaluate(model, test)["accuracy"])
    assert result["agreement"] >= 0.95, result  # a search as wide as the 300 classes misses almost nothing
    assert abs(result["accuracy"] - result["accuracy_exact"]) <= 100 * (1 - result["agreement"]) + 1e-9
    assert result["us_per_row"] > 0 and result["us_per_row_exact"] > 0 and result["index_seconds"] > 0


def test_the_random_oracle_is_no_predictor(margin):
    model, test = margin
    result = evaluate_with_oracle(model, test, "random")
    assert result["accuracy"] < result["accuracy_exact"] - 20, result


def test_an_unknown_oracle_or_parameter_is_refused_with_the_known_ones(margin):
    model, test = margin
    with pytest.raises(ValueError, match="known: exact, random"):
        predict_with_oracle(model, test.X, "annoy")
    with pytest.raises(ValueError, match="no parameter hnsw_eff; its parameters: .*hnsw_ef"):
        predict_with_oracle(model, test.X, "hnsw", hnsw_eff=10)
    with pytest.raises(ValueError, match="multi-class"):
        evaluate_with_oracle(model, Dataset(test.X, sp.csr_matrix(test.Y.shape)), "exact")  # rows without a class


def test_the_cli_evaluates_a_saved_model_with_an_oracle_beside_exact(tmp_path, capsys):
    prefix = str(tmp_path / "m")
    assert main(["generate", prefix, "--like", "lshtc1-margin", "--scale", "0.01", "--labels", "300"]) == 0
    assert main(["train", f"{prefix}_train.txt", "--test", f"{prefix}_test.txt", "--solver", "memoir",
                 "--threads", "2", "--out", str(tmp_path / "model"), "--json"]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "model"), f"{prefix}_test.txt", "--oracle", "exact", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["oracle_accuracy"] == out["oracle_accuracy_exact"] == out["accuracy"] and out["oracle_agreement"] == 1
    assert out["oracle_us_per_row"] > 0
    assert main(["evaluate", str(tmp_path / "model"), f"{prefix}_test.txt", "--oracle", "annoy"]) == 2
    assert "unknown oracle 'annoy'" in capsys.readouterr().err


def test_an_embedding_model_is_refused_in_a_sentence():
    train, test = like("lshtc1-margin", 0.01, labels=300)
    model = xcviz.train(train, solver="ldgs", epochs=1, dim=8, threads=2)
    with pytest.raises(ValueError, match="scores through its embedding"):
        predict_with_oracle(model, test.X, "exact")
