"""Presets shaped like the XC repository's sets: published shapes, calibrated statistics, difficulty, CLI."""
import numpy as np
import pytest

import xcviz
from xcviz.cli import main
from xcviz.data import presets
from xcviz.data.presets import PRESETS, like, like_with_labels, scaled
from xcviz.data.stats import describe, power_law_exponent

# (preset, scale) small enough to generate in about a second each
SMALL = [("eurlex-4k", 0.1), ("amazon-670k", 0.01), ("wikilshtc-325k", 0.002)]
# statistic: (target, tolerance); targets are the medians of Bibtex, Delicious and debian-tags
TOLERANCES = {
    "label_exponent": (presets.LABEL_EXPONENT, 0.3),
    "labels_dispersion": (presets.LABELS_DISPERSION, 0.25),
    "feature_df_exponent": (presets.DF_EXPONENT, 0.3),
    "nnz_cv": (presets.NNZ_CV, 0.1),
    "pair_pmi": (presets.PAIR_PMI, 0.7),
}

# N train, N test, D, L, labels / row, points / label: the XC repository's table
PUBLISHED = {
    "eurlex-4k": (15539, 3809, 5000, 3993, 5.31, 25.73),
    "wiki10-31k": (14146, 6616, 101938, 30938, 18.64, 8.52),
    "amazoncat-13k": (1186239, 306782, 203882, 13330, 5.04, 448.57),
    "amazon-670k": (490449, 153025, 135909, 670091, 5.45, 3.99),
    "wikilshtc-325k": (1778351, 587084, 1617899, 325056, 3.19, 17.46),
    "lshtc1": (88806, 5000, 347255, 12294, 1.0, 7.22),
}


def test_the_presets_hold_the_published_shapes_and_their_points_per_label_agree():
    """Points per label are N train * labels per row / L, except EURLex-4K's, counted over train and test."""
    assert set(PRESETS) == set(PUBLISHED)
    for name, (n_train, n_test, d, labels, avg_labels, avg_points) in PUBLISHED.items():
        shape = PRESETS[name]
        assert (shape.n_train, shape.n_test, shape.d, shape.labels, shape.avg_labels, shape.avg_points) == (
            n_train, n_test, d, labels, avg_labels, avg_points)
        rows = n_train + n_test if name == "eurlex-4k" else n_train
        assert rows * avg_labels / labels == pytest.approx(avg_points, rel=0.03)


@pytest.mark.parametrize("name, scale", SMALL)
def test_a_generated_preset_has_its_shape_and_the_calibrated_statistics(name, scale):
    train, test = like(name, scale)
    shape = scaled(name, scale)
    assert (train.n, test.n, train.n_features, train.n_labels) == (shape.n_train, shape.n_test, shape.d, shape.labels)
    stats = describe(train.X, train.Y).as_dict()
    assert stats["labels_per_row"] == pytest.approx(shape.avg_labels, rel=0.05)
    assert stats["nnz_per_row"] == pytest.approx(shape.avg_nnz, rel=0.05)
    points = np.asarray(train.Y.sum(axis=0)).ravel().mean()
    assert points == pytest.approx(shape.n_train * shape.avg_labels / shape.labels, rel=0.05)
    for key, (target, tolerance) in TOLERANCES.items():
        assert abs(stats[key] - target) <= tolerance, (key, stats[key], target)


def test_a_multiclass_preset_has_one_label_a_row():
    train, _ = like("lshtc1", 0.02)
    assert (np.diff(train.Y.indptr) == 1).all()


def test_the_same_seed_gives_the_same_problem_and_another_seed_another():
    a, _ = like("eurlex-4k", 0.02, seed=3)
    b, _ = like("eurlex-4k", 0.02, seed=3)
    c, _ = like("eurlex-4k", 0.02, seed=4)
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0
    assert (a.Y != c.Y).nnz > 0


def test_like_with_labels_keeps_the_rows_and_a_seeded_sample_of_labels_that_occur():
    """Amazon-670K's shape at 6,000 rows (8,198 labels): 50 of the labels with a training positive, the
    same for the same seed; the training rows and X are like()'s; the test rows are those with a sampled label."""
    train, test = like_with_labels("amazon-670k", 6000, 50, seed=3)
    full_train, full_test = like("amazon-670k", 6000 / PRESETS["amazon-670k"].n_train, seed=3)
    assert train.X.shape == (6000, 135909) and (train.X != full_train.X).nnz == 0
    assert train.Y.shape[1] == 50 and np.all(np.diff(train.Y.tocsc().indptr) > 0)
    assert test.n < full_test.n and np.all(np.diff(test.Y.indptr) > 0)
    same, _ = like_with_labels("amazon-670k", 6000, 50, seed=3)
    assert (same.Y != train.Y).nnz == 0
    # every sampled column is one of the full label set's, in order: its positives match one column exactly
    cols = [tuple(train.Y.tocsc()[:, j].indices) for j in range(50)]
    full = {tuple(full_train.Y.tocsc()[:, j].indices) for j in range(full_train.Y.shape[1])}
    assert all(c in full for c in cols)
    assert like_with_labels("amazon-670k", 6000, 10**6, seed=3)[0].Y.shape[1] == np.count_nonzero(full_train.Y.sum(axis=0))


def test_power_law_exponent_recovers_a_known_pareto_tail():
    rng = np.random.default_rng(0)
    counts = np.floor(5.0 * rng.random(200_000) ** (-1.0 / 1.2)).astype(np.int64)  # P(x) ~ x^-2.2 above 5
    assert power_law_exponent(counts, xmin=5.0) == pytest.approx(2.2, abs=0.1)  # continuity correction: ~0.07 low


def test_bad_presets_and_scales_are_refused():
    with pytest.raises(ValueError, match="unknown preset"):
        scaled("rcv1-2k")
    with pytest.raises(ValueError, match="scale"):
        scaled("eurlex-4k", 0.0)


def test_cli_generate_like_writes_the_scaled_preset(capsys, tmp_path):
    assert main(["generate", str(tmp_path / "e"), "--like", "eurlex-4k", "--scale", "0.02"]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "311 rows, 5000 features, 80 labels" in out
    assert (tmp_path / "e_test.txt").read_text().startswith("76 5000 80\n")


@pytest.mark.slow
def test_newton_on_eurlex_at_a_tenth_is_within_ten_points_of_published_dismec():
    """Difficulty: DiSMEC's published P@1 on EURLex-4K is 82.40; measured 80.9 at full shape."""
    train, test = like("eurlex-4k", 0.1)
    model = xcviz.train(train, solver="dismec", init="msi", threads=2)
    assert abs(xcviz.evaluate(model, test, train)["p@1"] - PRESETS["eurlex-4k"].published_p1) <= 10.0


def test_a_preset_generated_with_k_labels_keeps_its_rows_and_labels_per_row():
    """Amazon-670K's shape at 20,000 rows with K = 2,700 labels instead of its 27,326: 10x the
    positives a label (20,000 * 5.45 / 2,700 = 40.4), the same labels and non-zeros a row."""
    train, _ = like("amazon-670k", 20_000 / PRESETS["amazon-670k"].n_train, labels=2_700)
    assert train.Y.shape == (20_000, 2_700) and train.name == "amazon-670kx0.040779-K2700-train"
    assert train.Y.nnz / 2_700 == pytest.approx(40.4, rel=0.05)
    assert train.Y.nnz / train.n == pytest.approx(5.45, rel=0.05)
    assert train.X.nnz / train.n == pytest.approx(75.7, rel=0.05)
    sampled, _ = like_with_labels("amazon-670k", 20_000, 300, labels=2_700)
    assert sampled.Y.shape == (20_000, 300) and sampled.name == "amazon-670k@20000/300-K2700-train"
    with pytest.raises(ValueError, match="labels"):
        scaled("amazon-670k", 0.1, labels=0)
