"""DS-MLR's problem as its kernels take it: rows and their classes, the objective (2), its
variational gap, the state (W, b) of a run and the evaluation of held-out accuracy."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ...engine import dsmlr as K_
from ...engine.sparse import prepare_rows
from ...metrics import macro_f1


class LabelCounts:
    """N and each row's weight n_i from `lab_ptr`, the running sums of the rows' label counts."""

    lab_ptr: np.ndarray

    @property
    def n_total(self) -> int:
        return int(self.lab_ptr[-1])

    @property
    def weights(self) -> np.ndarray:
        return np.diff(self.lab_ptr).astype(np.float64)


@dataclass
class Problem(LabelCounts):
    """Training rows as the kernels take them: CSR with the bias column, the sorted classes of
    every row (lab_ptr, lab_idx; a row with n_i classes counts n_i times, N = their sum)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    lab_ptr: np.ndarray
    lab_idx: np.ndarray
    n_classes: int
    dim: int

    @property
    def n_rows(self) -> int:
        return self.indptr.shape[0] - 1


def class_sets(Y, n_rows: int) -> tuple[sp.csr_matrix, int]:
    """Y (a 0/1 matrix or a vector of class ids) as a CSR 0/1 matrix with sorted indices."""
    if sp.issparse(Y):
        Y = sp.csr_matrix(Y)
        if Y.shape[0] != n_rows:
            raise ValueError(f"Y has {Y.shape[0]} rows, X has {n_rows}")
        Y = sp.csr_matrix((np.ones(Y.nnz), Y.indices, Y.indptr), shape=Y.shape)
        Y.sum_duplicates()
        Y.sort_indices()
        return Y, Y.shape[1]
    y = np.asarray(Y, np.int64)
    if y.ndim != 1 or y.size != n_rows:
        raise ValueError(f"class ids must be a vector of length {n_rows}, got shape {y.shape}")
    if y.size and y.min() < 0:
        raise ValueError("class ids must be non-negative")
    k = int(y.max()) + 1 if y.size else 0
    return sp.csr_matrix((np.ones(y.size), y, np.arange(y.size + 1)), shape=(y.size, k)), k


def prepare(X: sp.spmatrix, Y, normalize: bool, bias: float, dim: int | None = None,
            n_classes: int | None = None) -> Problem:
    """The Problem of (X, Y); rows without a class are dropped. dim / n_classes: those of the
    training data (for a validation set)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    Ys, k = class_sets(Y, X.shape[0])
    keep = np.flatnonzero(np.diff(Ys.indptr) > 0)
    if keep.size < X.shape[0]:
        X, Ys = X[keep], Ys[keep]
    n_features = X.shape[1] if dim is None else dim - (1 if bias > 0 else 0)
    if X.shape[1] > n_features:
        X = X[:, :n_features]
    X.sort_indices()
    # one preprocessed copy, kept as it comes (uint64 / uint32 indices): 12 bytes per non-zero
    indptr, indices, data, _ = prepare_rows(X.indptr, X.indices, X.data, n_features, normalize, bias)
    return Problem(indptr, indices, data, Ys.indptr.astype(np.int64), Ys.indices.astype(np.int64),
                   k if n_classes is None else n_classes, n_features + (1 if bias > 0 else 0))


def splits(n: int, parts: int) -> np.ndarray:
    """Boundaries of `parts` contiguous, near-equal ranges of range(n)."""
    return (np.arange(parts + 1) * n) // parts


def objective_parts(prob: Problem, V: np.ndarray, scale: np.ndarray, lam: float, b: np.ndarray,
                    true: np.ndarray) -> float:
    """L1(W) from phase B's output: lam/2 ||W||^2 - (1/N) sum w_y.x - (1/N) sum n_i b_i (b exact)."""
    return 0.5 * lam * K_.squared_norm(V, scale) - (true.sum() + prob.weights @ b) / prob.n_total


def variational_gap(prob: Problem, b_old: np.ndarray, b_new: np.ndarray) -> tuple[float, np.ndarray]:
    """(1/N) sum_i n_i (e^d - 1 - d) with d = b_old - b_new (= L2(W, b_old) - L1(W)), and |d|."""
    d = b_old - b_new
    return float(prob.weights @ (np.expm1(d) - d) / prob.n_total), np.abs(d)


class Evaluator:
    """Test accuracy and macro-F1 of a W on a validation Problem (its rows' copies counted as
    a replicated multiclass test set: a copy is right when the top class is its class)."""

    def __init__(self, prob: Problem | None) -> None:
        self.prob = prob
        self.active = prob is not None and prob.n_rows > 0
        if prob is not None:
            self.X = sp.csr_matrix((prob.data, prob.indices, prob.indptr), shape=(prob.n_rows, prob.dim))
            self.truth = prob.lab_idx
            self.copies = np.diff(prob.lab_ptr)

    def __call__(self, W: Callable[[], np.ndarray]) -> dict:
        """The metrics of the W that W() returns (asked for only when there is a test set)."""
        if not self.active:
            return {}
        W = W()
        top = np.empty(self.prob.n_rows, np.int64)
        for lo in range(0, self.prob.n_rows, 2048):
            top[lo:lo + 2048] = np.asarray(self.X[lo:lo + 2048] @ W.T).argmax(axis=1)
        predicted = np.repeat(top, self.copies)
        return {"accuracy": float(np.mean(predicted == self.truth)), "macro_f1": macro_f1(self.truth, predicted)}


@dataclass
class State:
    """The iterate: W = scale[:, None] * V, b, and the workers' counters of the last epoch."""

    V: np.ndarray
    scale: np.ndarray
    b: np.ndarray

    def W(self) -> np.ndarray:
        """A copy of W (V keeps its scales: folding would change the next steps' rounding)."""
        return self.V * self.scale[:, None]

    def folded(self) -> np.ndarray:
        """W without a copy, the scales folded into V: for the end of training."""
        K_.fold_all(self.V, self.scale)
        return self.V
