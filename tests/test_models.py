"""SparseModel: top-k prediction against a dense brute force, save/load, bad folders."""
import json
import stat

import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.models.sparse import ModelFormatError, SparseModel


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
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.json", _arrays_name(folder)])


def _arrays_name(folder):
    return json.loads((folder / "model.json").read_text())["arrays"]


# saves a second model over the first and is SIGKILLed once its arrays are written, before model.json
_KILLED_BETWEEN_THE_TWO_FILES = """
import os, signal, sys
import numpy as np, scipy.sparse as sp
import xcviz.models.sparse as models
write = models.write_atomic
def write_then_die(path, content, **kw):
    if str(path).endswith("model.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    write(path, content, **kw)
models.write_atomic = write_then_die
new = models.SparseModel(weights=sp.random(30, 50, density=0.5, format="csr", random_state=9),
                         bias_weights=np.ones(30), bias=0.0, normalize=False)
new.save(sys.argv[1])
"""


def test_a_save_killed_between_its_two_files_leaves_the_previous_model_whole(tmp_path):
    """The arrays file is this save's own; model.json, written last, names it: killed in between,
    the folder still holds the previous model.json and the arrays it names (before, the new weights
    replaced weights.npz first and loaded under the old settings, as neither model)."""
    import os
    import subprocess
    import sys
    import time

    old = _random_model(np.random.default_rng(4))
    folder = old.save(tmp_path / "m")
    before = (folder / "model.json").read_bytes()
    result = subprocess.run([sys.executable, "-c", _KILLED_BETWEEN_THE_TWO_FILES, str(folder)], timeout=120)
    assert result.returncode == -9
    assert (folder / "model.json").read_bytes() == before
    kept = SparseModel.load(folder)
    assert (kept.weights != old.weights).nnz == 0 and kept.normalize is True and kept.bias == 1.0
    (orphan,) = [p for p in folder.glob("weights-*.npz") if p.name != _arrays_name(folder)]  # the killed save's
    _random_model(np.random.default_rng(5)).save(folder)  # replaces the old model's arrays; a fresh orphan
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.json", _arrays_name(folder), orphan.name])
    os.utime(orphan, (time.time() - 7200,) * 2)  # could be a save still running beside: removed once stale
    torn = folder / ".weights-0123456789abcdef.npz.x1y2z3.tmp"  # what write_atomic leaves when killed midway
    torn.write_bytes(b"PK half")
    os.utime(torn, (time.time() - 7200,) * 2)
    _random_model(np.random.default_rng(6)).save(folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.json", _arrays_name(folder)])


def test_a_folder_saved_before_the_save_ids_loads_and_is_replaced_whole(tmp_path):
    rng = np.random.default_rng(6)
    model = _random_model(rng)
    folder = model.save(tmp_path / "m")
    (folder / _arrays_name(folder)).rename(folder / "weights.npz")  # the layout before 27 Nov 2026
    meta = json.loads((folder / "model.json").read_text())
    del meta["arrays"]
    (folder / "model.json").write_text(json.dumps(meta))
    assert (SparseModel.load(folder).weights != model.weights).nnz == 0
    _random_model(rng).save(folder)
    assert not (folder / "weights.npz").exists()


@pytest.mark.parametrize("name", ["../outside.npz", "/etc/passwd", "weights-1.npz", 7])
def test_model_json_naming_another_file_is_refused(tmp_path, name):
    folder = _random_model(np.random.default_rng(7)).save(tmp_path / "m")
    meta = json.loads((folder / "model.json").read_text())
    meta["arrays"] = name
    (folder / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="not one xcviz writes"):
        SparseModel.load(folder)


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
    meta["format_version"] = 1
    (folder / "model.json").write_text(json.dumps(meta))
    del meta["bias"]  # was an uncaught KeyError
    (folder / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="not the description of a sparse model"):
        SparseModel.load(folder)
    (folder / _arrays_name(folder)).write_bytes(b"not a zip")
    with pytest.raises(ModelFormatError, match="unreadable"):
        SparseModel.load(folder)


def test_a_load_that_meets_a_save_between_its_two_reads_reads_model_json_again(tmp_path, monkeypatch):
    """A save replaces model.json and then removes the old arrays: a load that read the old
    model.json just before finds its arrays gone, and reads model.json once more (it had reported a
    torn file)."""
    import xcviz.models.sparse as models

    rng = np.random.default_rng(8)
    folder = _random_model(rng).save(tmp_path / "m")
    before = (folder / "model.json").read_text()
    new = _random_model(rng)
    new.save(folder)
    reads, read = [], models.read_regular_text

    def stale_first(path):
        reads.append(path)
        return before if len(reads) == 1 else read(path)

    monkeypatch.setattr(models, "read_regular_text", stale_first)
    assert (SparseModel.load(folder).weights != new.weights).nnz == 0 and len(reads) == 2


def test_a_save_over_a_folder_named_model_json_is_refused_before_writing_anything(tmp_path):
    (tmp_path / "m" / "model.json").mkdir(parents=True)
    with pytest.raises(IsADirectoryError, match="model.json"):
        _random_model(np.random.default_rng(9)).save(tmp_path / "m")
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["model.json"]
