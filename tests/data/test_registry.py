"""The bundled data and the name-or-path resolution used by the API and the CLI."""
from pathlib import Path

import numpy as np
import pytest

from xcviz.data import DatasetFormatError, bundled, load, load_files, resolve

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def test_bundled_sets_match_their_provenance(bibtex):
    assert bundled() == ["bibtex", "delicious"]
    train, test = bibtex
    assert (train.n, train.n_features, train.n_labels) == (4880, 1836, 159)
    assert (test.n, test.n_features, test.n_labels) == (2515, 1836, 159)
    assert train.label_stats()["avg_labels"] == pytest.approx(2.3803, abs=1e-4)
    train, test = load("delicious")
    assert (train.n, test.n, train.n_features, train.n_labels) == (12920, 3185, 500, 983)
    assert train.label_stats()["rows_without_labels"] == 10


def test_unknown_name_lists_the_bundled_ones():
    with pytest.raises(KeyError, match="bibtex, delicious"):
        load("eurlex")


def test_resolve_takes_names_and_paths(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("2 4 3\n0,2 0:1 3:0.5\n 1:2\n")
    test_path = tmp_path / "tiny_test.txt"
    test_path.write_text("1 2 2\n1 0:1\n")
    train, test = resolve(str(path), str(test_path))
    assert (train.n, train.n_features, train.n_labels) == (2, 4, 3)
    assert test.X.shape == (1, 4) and test.Y.shape == (1, 3)
    assert resolve("bibtex")[0].n == 4880


def test_test_file_wider_than_training_is_refused(tmp_path):
    (tmp_path / "a.txt").write_text("1 2 2\n0 0:1\n")
    (tmp_path / "b.txt").write_text("1 5 2\n0 4:1\n")
    with pytest.raises(DatasetFormatError, match="feature index 4"):
        load_files(tmp_path / "a.txt", tmp_path / "b.txt")


@pytest.mark.skipif(not SHARED.exists(), reason="shared data folder not present")
def test_libsvm_pair_shares_one_label_map():
    """sector: train on the held-out part, test on the test part, classes 1..105 -> columns 0..104."""
    heldout, test = load_files(SHARED / "sector_pdsparse_partial" / "sector.heldout.gz",
                               SHARED / "sector_pdsparse_partial" / "sector.test.gz", n_features=55197)
    assert heldout.n == 865 and test.n == 961
    assert heldout.n_features == test.n_features == 55197
    assert heldout.n_labels == test.n_labels == 105
    assert heldout.is_multiclass and test.is_multiclass
    np.testing.assert_allclose(np.sqrt(heldout.X.multiply(heldout.X).sum(axis=1)), 1.0, atol=1e-4)


def test_libsvm_test_file_with_unseen_class_and_feature_widens_both(tmp_path):
    (tmp_path / "tr.txt").write_text("3 1:1 2:0.5\n7 2:1\n")
    (tmp_path / "te.txt").write_text("7 1:1\n9 5:2\n")
    train, test = load_files(tmp_path / "tr.txt", tmp_path / "te.txt")
    assert train.n_features == test.n_features == 5
    assert train.n_labels == test.n_labels == 3  # classes 3, 7, 9 -> columns 0, 1, 2
    assert list(test.Y.indices) == [1, 2] and train.Y[:, 2].nnz == 0
