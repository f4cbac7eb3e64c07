"""lshtc1-margin (issue #41): a multi-class preset on which the class of the margin matters, so that an
oracle's quality shows in MEMOIR's accuracy, and a text-like bag of words."""
import numpy as np
import pytest

import xcviz
from xcviz.cli import main
from xcviz.data.presets import PRESETS, VARIANTS, like, preset, scaled
from xcviz.solvers.memoir import MemoirParams, fit_memoir

SCALE, CLASSES = 0.1, 2_000


@pytest.fixture(scope="module")
def margin_data():
    return like("lshtc1-margin", SCALE, labels=CLASSES)


def test_the_variant_is_lshtc1s_shape_with_its_own_difficulty():
    margin, lshtc1 = preset("lshtc1-margin"), PRESETS["lshtc1"]
    assert (margin.n_train, margin.d, margin.labels, margin.avg_nnz) == (
        lshtc1.n_train, lshtc1.d, lshtc1.labels, lshtc1.avg_nnz)
    assert margin.multiclass and (margin.signal, margin.confusion) != (lshtc1.signal, lshtc1.confusion)
    assert "lshtc1-margin" not in PRESETS  # the published shapes stay the published ones
    assert scaled("lshtc1-margin", SCALE, CLASSES).labels == CLASSES
    with pytest.raises(ValueError, match="lshtc1-margin"):  # the error lists ours with the published ones
        preset("no-such-set")


def test_one_class_a_row_and_a_sparse_text_like_bag_of_words(margin_data):
    train, test = margin_data
    assert np.all(np.diff(train.Y.indptr) == 1) and np.all(np.diff(test.Y.indptr) == 1)
    per_row = np.diff(train.X.indptr)
    assert abs(per_row.mean() - VARIANTS["lshtc1-margin"].avg_nnz) < 0.1 * VARIANTS["lshtc1-margin"].avg_nnz
    assert train.X.nnz / np.prod(train.X.shape) < 1e-3  # LSHTC1's own density is 0.049%
    np.testing.assert_allclose(np.sqrt(train.X.multiply(train.X).sum(axis=1)).A1, 1.0, rtol=1e-6)  # tf-idf, L2 rows


@pytest.mark.slow
def test_memoirs_exact_margin_beats_a_random_one_by_three_points(margin_data):
    """The issue's calibration at 2,000 classes: the exact margin oracle at least 3 accuracy points above
    the random one (500 classes sampled a row, the exact best among them) after the same 5 epochs.
    Measured: 71.8% against 66.6%."""
    train, test = margin_data
    accuracy = {}
    for oracle in ("exact", "random"):
        params = MemoirParams(oracle=oracle, epochs=5, lam=1e-4, sample_size=500, reindex_every=8)
        model = fit_memoir(train.X, train.Y, params, threads=2)
        accuracy[oracle] = xcviz.evaluate(model, test, threads=2)["accuracy"]
    assert accuracy["exact"] >= accuracy["random"] + 3.0, accuracy
    assert accuracy["random"] > 100.0 / CLASSES * 10  # and random learns: the gap is not a broken baseline


def test_the_cli_writes_the_variant_with_k_classes(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "m"), "--like", "lshtc1-margin", "--scale", "0.01",
                 "--labels", "300"]) == 0
    out = capsys.readouterr().out
    assert "m_train.txt: 888 rows, 347255 features, 300 labels" in out, out
