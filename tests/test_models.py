"""SparseModel: top-k prediction against a dense brute force, save/load, bad folders."""
import json
import stat

import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.models import ModelFormatError, SparseModel


def _random_model(rng, L=30, D=50, normalize=True):
    W = sp.random(L, D, density=0.2, random_state=rng, format="csr")
    W.data = np.round(W.data * 4 - 2, 1)  # coarse values: many exact ties
    return SparseModel(weights=W, bias_weights=np.round(rng.normal(size=L), 1), bias=1.0, normalize=normalize)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_predict_topk_equals_brute_force(k, threads):
    rng = np.random.default_rng(0)
    model = _random_model(rng)
    X = sp.random(200, 50, density=0.1, random_state=rng, format="csr")
    scores = model.decision_function(X)
    # reference ranking: descending score, ties to the smaller label
    order = np.lexsort((np.tile(np.arange(30), (200, 1)), -scores), axis=1)[:, :k]
    labels, top = model.predict_topk(X, k=k, threads=threads)
    kk = min(k, 30)
    np.testing.assert_array_equal(labels[:, :kk], order[:, :kk])
    np.testing.assert_allclose(top[:, :kk], np.take_along_axis(scores, order[:, :kk], axis=1))
    assert np.all(labels[:, kk:] == -1)


def test_predict_pads_and_refuses_inputs_of_the_wrong_width():
    rng = np.random.default_rng(1)
    model = _random_model(rng)
    narrow = sp.random(5, 40, density=0.3, random_state=rng, format="csr")
    wide = sp.csr_matrix(([1.0], ([0], [60])), shape=(5, 61))
    assert model.predict_topk(narrow, k=3)[0].shape == (5, 3)
    with pytest.raises(ValueError, match="feature index 60"):
        model.predict_topk(wide, k=3)
    with pytest.raises(ValueError, match="k must be"):
        model.predict_topk(narrow, k=0)


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    model = _random_model(rng, normalize=False)
    model.params = {"C": 1.0, "init": "msi"}
    model.save(tmp_path / "m")
    back = SparseModel.load(tmp_path / "m")
    assert (back.weights != model.weights).nnz == 0
    np.testing.assert_array_equal(back.bias_weights, model.bias_weights)
    assert back.normalize is False and back.params == model.params
    X = sp.random(10, 50, density=0.2, random_state=rng, format="csr")
    np.testing.assert_array_equal(back.predict_topk(X, 3)[0], model.predict_topk(X, 3)[0])


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_save_that_fails_keeps_the_previous_model_private_and_no_temporary(tmp_path, monkeypatch, error):
    rng = np.random.default_rng(3)
    old = _random_model(rng)
    folder = old.save(tmp_path / "m")
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {0o600}  # as mkstemp made them

    def fail_midway(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise error

    monkeypatch.setattr(np, "savez_compressed", fail_midway)
    with pytest.raises(type(error)):
        _random_model(rng).save(folder)
    kept = SparseModel.load(folder)
    assert (kept.weights != old.weights).nnz == 0
    assert sorted(p.name for p in folder.iterdir()) == ["model.json", "weights.npz"]


def test_load_names_what_is_wrong(tmp_path):
    with pytest.raises(ModelFormatError, match="no such file"):
        SparseModel.load(tmp_path / "missing")
    rng = np.random.default_rng(3)
    folder = _random_model(rng).save(tmp_path / "m")
    meta = json.loads((folder / "model.json").read_text())
    meta["format_version"] = 99
    (folder / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="format_version 99"):
        SparseModel.load(folder)
    (folder / "weights.npz").write_bytes(b"not a zip")
    with pytest.raises(ModelFormatError, match="unreadable"):
        SparseModel.load(folder)
