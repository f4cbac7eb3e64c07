"""The embedding model LDGS trains: scores z = W phi(x), phi(x) = V^T x' (tanh applied optionally).

x' is x L2-normalised when `normalize` is set, exactly as at training time. V is the fixed SVD basis
(embedding "svd") or the learned first layer (embedding "learned"). A model is a folder like a
`SparseModel`'s: `model.json` (kind "embedding", solver, parameters, training summary) and the
arrays file it names, `embedding-<save id>.npz` (V, W), written as `models.save_folder` writes;
`load_model` reads either kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..engine.ldgs import forward
from ..engine.sparse import prepare_rows
from ..engine.threads import using_threads
from .sparse import FORMAT_VERSION, ModelFormatError, SparseModel, read_folder, save_folder

SCORE_CHUNK = 256


@dataclass
class EmbeddingModel:
    """K class vectors over an h-dimensional embedding of D features."""

    V: np.ndarray
    W: np.ndarray
    tanh: bool = False
    normalize: bool = True
    solver: str = "ldgs"
    params: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    @property
    def n_labels(self) -> int:
        return self.W.shape[0]

    @property
    def n_features(self) -> int:
        return self.V.shape[0]

    @property
    def nnz(self) -> int:
        """Stored non-zero weights of V and W."""
        return int(np.count_nonzero(self.V) + np.count_nonzero(self.W))

    def embed(self, X: sp.spmatrix, threads: int | None = None) -> np.ndarray:
        """phi(x) of every row of X (n x h), preprocessed as at training time."""
        X = sp.csr_matrix(X, dtype=np.float64)
        if X.shape[1] > self.n_features:
            cols = X.indices[X.indices >= self.n_features]
            if cols.size:
                raise ValueError(f"input has feature index {int(cols.max())} but the model has "
                                 f"{self.n_features} features")
        X.sort_indices()
        indptr, indices, data, _ = prepare_rows(X.indptr, X.indices, X.data, self.n_features, self.normalize, 0.0)
        with using_threads(threads):
            return forward(indptr.astype(np.int64), indices.astype(np.int64), data, self.V, self.tanh)

    def decision_function(self, X: sp.spmatrix) -> np.ndarray:
        """Dense n x K scores (small problems, tests and teaching only)."""
        return self.embed(X) @ self.W.T

    def predict_topk(self, X: sp.spmatrix, k: int = 5, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The k best labels of each row and their scores (n x k each, best first; ties go to the
        smaller label), scoring SCORE_CHUNK rows at a time."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        phi = self.embed(X, threads)
        k = min(k, self.n_labels)
        labels = np.empty((phi.shape[0], k), np.int64)
        scores = np.empty((phi.shape[0], k))
        for start in range(0, phi.shape[0], SCORE_CHUNK):
            s = phi[start:start + SCORE_CHUNK] @ self.W.T
            if k < s.shape[1]:
                top = np.argpartition(-s, k - 1, axis=1)[:, :k]
            else:
                top = np.tile(np.arange(k), (s.shape[0], 1))
            top_s = np.take_along_axis(s, top, axis=1)
            order = np.lexsort((top, -top_s), axis=1)
            labels[start:start + s.shape[0]] = np.take_along_axis(top, order, axis=1)
            scores[start:start + s.shape[0]] = np.take_along_axis(top_s, order, axis=1)
        return labels, scores

    def save(self, folder: str | Path) -> Path:
        """Write the model folder (created if needed) and return its path: the previous model or
        this one, whole, after a crash or a full disk at any moment (see models.save_folder)."""
        meta = {"format_version": FORMAT_VERSION, "kind": "embedding", "solver": self.solver, "tanh": self.tanh,
                "normalize": self.normalize, "n_labels": self.n_labels, "n_features": self.n_features,
                "nnz": self.nnz, "params": self.params, "info": self.info}
        return save_folder(folder, "embedding", lambda f: np.savez_compressed(f, V=self.V, W=self.W), meta)

    @classmethod
    def load(cls, folder: str | Path) -> "EmbeddingModel":
        """Read a folder written by `save`; raises ModelFormatError naming what is wrong."""
        return cls.from_read(*read_folder(folder, "embedding"))

    @classmethod
    def from_read(cls, meta: dict, arrays: Path, z: dict) -> "EmbeddingModel":
        """The model of what `read_folder` read; ModelFormatError naming what is wrong."""
        try:
            V, W = z["V"], z["W"]
        except KeyError as exc:
            raise ModelFormatError(f"{arrays}: not the arrays of an embedding model (no {exc})") from None
        if V.ndim != 2 or W.ndim != 2 or V.shape[1] != W.shape[1]:
            raise ModelFormatError(f"{arrays}: V {V.shape} and W {W.shape} do not share an embedding dimension")
        return cls(V=V, W=W, tanh=bool(meta.get("tanh")), normalize=bool(meta.get("normalize", True)),
                   solver=meta.get("solver", "ldgs"), params=meta.get("params", {}), info=meta.get("info", {}))


def load_model(folder: str | Path) -> SparseModel | EmbeddingModel:
    """A saved model of either kind (sparse one-vs-all or embedding), its description read once:
    a save replacing the folder's model in between cannot pair one kind's reader with the other's
    files."""
    meta, arrays, z = read_folder(folder)
    return (EmbeddingModel if meta.get("kind") == "embedding" else SparseModel).from_read(meta, arrays, z)
