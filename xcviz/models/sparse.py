"""The sparse linear one-vs-all model: weights, the preprocessing it was trained with, save/load.

A model is a folder: `model.json` (solver, parameters, preprocessing, shapes, training summary)
and the arrays file it names, `weights-<save id>.npz` (L x D feature weights, CSR, plus the
per-label bias weights; `weights.npz` in folders saved before 27 Nov 2026). The model owns its
preprocessing, so `predict_topk` takes raw rows exactly as the training data was read.
"""
from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._util.atomic_write import STALE_SECONDS, write_atomic
from ..engine.predict import predict_topk as _predict_topk_kernel
from ..engine.sparse import prepare_rows
from ..engine.threads import using_threads
from .._util.jsontext import loads_bounded
from .._util.regular_file import open_regular, read_regular_text

FORMAT_VERSION = 1


ARRAYS_FILE = re.compile(r"(weights|embedding)(-[0-9a-f]{16})?\.npz")  # the names save_folder writes
ARRAYS_TEMP = re.compile(r"\.(weights|embedding)-[0-9a-f]{16}\.npz\..*\.tmp")  # write_atomic's, of a killed save


class ModelFormatError(ValueError):
    """A model folder that is missing, incomplete or inconsistent."""


def save_folder(folder: str | Path, stem: str, write_arrays, meta: dict) -> Path:
    """Write a model folder so that it holds the previous model or the new one, whole, whatever
    moment a crash comes: the arrays go to a file of this save's own (`STEM-<save id>.npz`), then
    model.json, naming it, replaces the old one (each file through write_atomic); only then are the
    arrays the old model.json named removed, with those a killed save left (an arrays file named by
    no model.json, or the temporary file of one, once it is STALE_SECONDS old: a save running beside
    this one may still be writing). write_atomic removes only its target's own stale temporaries,
    and every save's arrays have a name of their own. Before, `weights.npz` was replaced first: a
    process killed between the two writes left new weights under the old settings, and the folder
    loaded as neither model."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "model.json").is_dir():  # refused before the arrays are written, not after
        raise IsADirectoryError(f"{folder / 'model.json'}: a folder where the model's description goes")
    try:
        previous = loads_bounded(read_regular_text(folder / "model.json")).get("arrays", "")
    except (OSError, ValueError, AttributeError):
        previous = ""
    name = f"{stem}-{uuid.uuid4().hex[:16]}.npz"
    write_atomic(folder / name, write_arrays)
    write_atomic(folder / "model.json", json.dumps({**meta, "arrays": name}, indent=2, default=_json_default).encode())
    now = time.time()
    for old in folder.iterdir():
        arrays, temporary = ARRAYS_FILE.fullmatch(old.name), ARRAYS_TEMP.fullmatch(old.name)
        if old.name == name or not (arrays or temporary):
            continue
        with contextlib.suppress(OSError):
            if (arrays and (old.name == previous or "-" not in old.name)) or now - old.stat().st_mtime > STALE_SECONDS:
                old.unlink()
    return folder


def read_folder(folder: str | Path, stem: str | None = None) -> tuple[dict, Path, dict]:
    """(model.json, the arrays file it names, that file's arrays), or ModelFormatError naming what is
    missing or unreadable; `stem` names an older save's arrays file (None: the one of model.json's
    `kind`). A save that replaces the folder's model between the two reads (and removes the arrays
    the first read named) is met by reading model.json once more."""
    folder = Path(folder)
    meta_path = folder / "model.json"
    for p in (folder, meta_path):
        if not p.exists():
            raise ModelFormatError(f"{p}: no such file or folder (not a saved xcviz model)")
    retried = False
    while True:
        try:
            meta = loads_bounded(read_regular_text(meta_path))
            if not isinstance(meta, dict):
                raise ValueError("model.json is not a JSON object")
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise ModelFormatError(f"{meta_path}: unreadable model description ({type(exc).__name__})") from None
        path = arrays_path(folder, meta, stem or ("embedding" if meta.get("kind") == "embedding" else "weights"))
        try:
            with open_regular(path) as f, np.load(f, allow_pickle=False) as z:
                return meta, path, {key: z[key] for key in z.files}
        except FileNotFoundError:
            if retried:
                raise ModelFormatError(f"{path}: no such file (the arrays of the model that model.json "
                                       f"describes)") from None
            retried = True
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise ModelFormatError(f"{path}: unreadable arrays file, torn or corrupt ({type(exc).__name__}); "
                                   f"train the model again") from None


def arrays_path(folder: Path, meta: dict, stem: str) -> Path:
    """The arrays file model.json names (`STEM.npz` when it names none: an older save). A name
    save_folder does not write (a path, `../x.npz`) is refused."""
    name = meta.get("arrays", f"{stem}.npz")
    if not isinstance(name, str) or not ARRAYS_FILE.fullmatch(name) or not name.startswith(stem):
        raise ModelFormatError(f"{folder / 'model.json'}: names arrays file {str(name)[:80]!r}, not one xcviz writes")
    return folder / name


@dataclass
class SparseModel:
    """L one-vs-all linear scorers: score(x, l) = weights[l] . x' + bias * bias_weights[l].

    x' is x L2-normalised when `normalize` is true (as at training time)."""

    weights: sp.csr_matrix
    bias_weights: np.ndarray
    bias: float = 1.0
    normalize: bool = True
    solver: str = "dismec"
    params: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    @property
    def n_labels(self) -> int:
        return self.weights.shape[0]

    @property
    def n_features(self) -> int:
        return self.weights.shape[1]

    @property
    def nnz(self) -> int:
        """Stored non-zero weights, bias weights included."""
        return int(self.weights.nnz + np.count_nonzero(self.bias_weights))

    def _rows(self, X: sp.spmatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """X as the kernels take it (indptr, unsigned indices, data), preprocessed as at training:
        by the same kernel, so training and prediction normalise rows identically."""
        X = sp.csr_matrix(X, dtype=np.float64)
        if X.shape[1] > self.n_features:
            cols = X.indices[X.indices >= self.n_features]
            if cols.size:
                raise ValueError(
                    f"input has feature index {int(cols.max())} but the model has {self.n_features} features")
        X.sort_indices()
        indptr, indices, data, _ = prepare_rows(X.indptr, X.indices, X.data, self.n_features, self.normalize, 0.0)
        return indptr, indices, data

    def as_inner_products(self, X: sp.spmatrix) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """(class vectors, query rows) whose inner products are this model's scores: the weights
        with the bias weights as one more column, and X preprocessed as at training with `bias`
        in that column; so any maximum-inner-product search over the classes predicts with it."""
        indptr, indices, data = self._rows(X)
        rows = sp.csr_matrix((data, indices.astype(np.int64), indptr.astype(np.int64)),
                             shape=(X.shape[0], self.n_features))
        classes = sp.hstack([self.weights, sp.csr_matrix(self.bias_weights.reshape(-1, 1))], format="csr")
        bias = sp.csr_matrix(np.full((X.shape[0], 1), self.bias))
        return classes, sp.hstack([rows, bias], format="csr")

    def decision_function(self, X: sp.spmatrix) -> np.ndarray:
        """Dense n x L scores (small problems, tests and teaching only)."""
        indptr, indices, data = self._rows(X)
        rows = sp.csr_matrix((data, indices.astype(np.int32), indptr.astype(np.int64)),
                             shape=(X.shape[0], self.n_features))
        return np.asarray((rows @ self.weights.T).todense()) + self.bias * self.bias_weights[None, :]

    def predict_topk(self, X: sp.spmatrix, k: int = 5, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The k best labels of each row and their scores (n x k each, best first).

        Runs a parallel numba kernel; ties go to the smaller label index."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        indptr, indices, data = self._rows(X)
        wt = self.weights.T.tocsr()
        wt.sort_indices()
        with using_threads(threads) as count:
            chunk = max(1, min(256, X.shape[0] // (4 * count)))
            return _predict_topk_kernel(indptr, indices, data, wt.indptr.astype(np.uint64),
                                        wt.indices.astype(np.uint32), wt.data, self.bias * self.bias_weights,
                                        k, chunk)

    def save(self, folder: str | Path) -> Path:
        """Write the model folder (created if needed) and return its path: the previous model or
        this one, whole, after a crash or a full disk at any moment (see save_folder)."""
        w = self.weights.tocsr()
        meta = {"format_version": FORMAT_VERSION, "solver": self.solver, "bias": self.bias,
                "normalize": self.normalize, "n_labels": self.n_labels, "n_features": self.n_features,
                "nnz": self.nnz, "params": self.params, "info": self.info}
        return save_folder(folder, "weights", lambda f: np.savez_compressed(
            f, indptr=w.indptr, indices=w.indices, data=w.data, shape=np.array(w.shape),
            bias_weights=self.bias_weights), meta)

    @classmethod
    def load(cls, folder: str | Path) -> "SparseModel":
        """Read a model folder written by `save`; raises ModelFormatError naming what is wrong."""
        return cls.from_read(*read_folder(folder, "weights"))

    @classmethod
    def from_read(cls, meta: dict, w_path: Path, z: dict) -> "SparseModel":
        """The model of what `read_folder` read; ModelFormatError naming what is wrong."""
        meta_path = w_path.parent / "model.json"
        try:
            weights = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
            bias_weights = z["bias_weights"]
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelFormatError(f"{w_path}: not the weights of a model ({type(exc).__name__}); "
                                   f"train the model again") from None
        if meta.get("format_version") != FORMAT_VERSION:
            raise ModelFormatError(f"{meta_path}: format_version {meta.get('format_version')!r}, "
                                   f"this xcviz reads {FORMAT_VERSION}")
        if bias_weights.shape != (weights.shape[0],):
            raise ModelFormatError(f"{w_path}: bias_weights has shape {bias_weights.shape}, "
                                   f"expected ({weights.shape[0]},)")
        try:
            bias, normalize, solver = float(meta["bias"]), bool(meta["normalize"]), str(meta["solver"])
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelFormatError(f"{meta_path}: not the description of a sparse model "
                                   f"({type(exc).__name__})") from None
        return cls(weights=weights, bias_weights=bias_weights, bias=bias, normalize=normalize, solver=solver,
                   params=meta.get("params", {}), info=meta.get("info", {}))


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
