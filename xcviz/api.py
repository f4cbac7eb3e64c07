"""The Python API: `train` a model on a data set, `evaluate` it, and a scikit-learn-style estimator."""
from __future__ import annotations

import os
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from . import metrics
from .data.dataset import Dataset
from .data.registry import resolve
from .data.shards import Shards
from .data.source import DataSource
from .engine.loading import enable_shortcuts
from .models.sparse import SparseModel
from .compute.cluster import cluster_client
from .solvers import get_solver, make_params, param_dict


def _as_dataset(dataset) -> Dataset | Shards:
    if isinstance(dataset, (Dataset, Shards)):
        return dataset
    if isinstance(dataset, str):
        return resolve(dataset)[0]
    if isinstance(dataset, tuple) and len(dataset) == 2:
        return Dataset(X=dataset[0], Y=dataset[1])
    raise TypeError("dataset must be a Dataset, a bundled name or path, or an (X, Y) pair, "
                    f"not {type(dataset).__name__}")


def fit_inputs(ds: Dataset | Shards, solver: str) -> tuple:
    """(X, Y) for the solver's fit: a sharded set as it is for a family that reads its parts where
    it trains (DS-MLR), else its rows, read here."""
    if isinstance(ds, Shards) and get_solver(solver).shards:
        return ds, None
    return ds.X, ds.Y


def fit_validation(test: Dataset | Shards, solver: str):
    """The `validation` argument of the solver's fit: sharded test parts as they are for a family
    that reads its parts where it trains (DS-MLR's workers evaluate them), else (X, Y), read here."""
    if isinstance(test, Shards) and get_solver(solver).shards:
        return test
    return test.X, test.Y


def train(dataset, solver: str = "dismec", init: str | None = None, loss: str | None = None,
          C: float | None = None, threads: int | None = None, recorder=None,
          progress: Callable[[int, int], None] | None = None, validation=None, cluster: str | None = None,
          phase: Callable[[str], None] | None = None, **params) -> SparseModel:
    """Train `solver` on a data set: a Dataset, an (X, Y) pair, a bundled name (its training split)
    or a file path. Unset arguments take the solver's defaults (dismec: init "msi", squared hinge,
    C = 1); other solver parameters go in **params (see the solver's parameter class).
    validation: a data set a multiclass solver measures accuracy on while it trains. cluster:
    "local:N[xT]" or "tcp://HOST:PORT" trains a one-vs-all solver's label blocks on Dask (see
    xcviz.compute.cluster); the model's info then says where, and how long starting and scattering took
    (a dataset named by a name or path is read by the workers themselves, arrays are scattered).
    A sharded folder (`xcviz shard`) trains DS-MLR's sync on a cluster without its rows ever being
    read here (the workers read the parts); any other solver reads every part. phase(name) hears
    "compiling" and then "training" when the solver first warms its kernels up in this process
    (their seconds are the model info's `compile_seconds`, kept out of `train_seconds`)."""
    enable_shortcuts()
    ds = _as_dataset(dataset)
    given = {k: v for k, v in {"init": init, "loss": loss, "C": C}.items() if v is not None}
    p = make_params(solver, **given, **params)
    family = get_solver(solver)
    extra = {}
    if validation is not None and family.multiclass:
        extra["validation"] = fit_validation(_as_dataset(validation), solver)
    if cluster is not None:
        family.check_cluster(p)
    with cluster_client(cluster, threads) as session:
        if session is not None:
            extra["cluster"] = session
            if isinstance(dataset, (str, os.PathLike)) and not family.multiclass:  # the workers read it themselves
                extra["source"] = DataSource.of(os.fspath(dataset))
        model = family.fit(*fit_inputs(ds, solver), p, threads=threads, recorder=recorder, progress=progress,
                           phase=phase, **extra)
    model.info["dataset"] = ds.name
    keep_labels(model, ds)
    return model


def keep_labels(model: SparseModel, ds: Dataset | Shards) -> None:
    """A model trained on a LIBSVM file keeps the file's label of each column (`label_values` in its
    info, saved with it), so that a test file read later on its own maps its labels the same way."""
    values = getattr(ds, "label_values", None)
    if values is not None:
        model.info["label_values"] = values.tolist()  # every label's, as the files number them (also for a sample)


def on_sample(model: SparseModel, Y: sp.spmatrix) -> sp.spmatrix:
    """The columns of label matrix Y that `model` holds: those its `label_sample` drew (info; the
    model's rows are those labels, in order), else Y as it is."""
    sample = model.info.get("label_sample")
    return Y if sample is None else sp.csr_matrix(Y)[:, sample["labels"]].tocsr()


def evaluate(model: SparseModel, test: Dataset | Shards, train: Dataset | None = None, ks: Sequence[int] = (1, 3, 5),
             threads: int | None = None) -> dict[str, float]:
    """P@k, nDCG@k, recall@k, coverage@k (and PSP@k, PSnDCG@k when the training split is given,
    for its propensities), in percent, on the test rows as they are: the top k against each row's
    labels, whatever the model (a multiclass model's P@1 on Delicious is comparable to DiSMEC's).
    Accuracy and macro-F1 come with a multi-class test split, and with a multi-label one for a
    multiclass model, which meets each row once per label (its replicated copies, as it trained:
    a copy is right when the row's top class is its label).
    A model of a label sample (its info's `label_sample`) is scored on its labels alone: the test
    rows' other labels are dropped, as if the data set had only the sampled ones, and the rows left
    with none of them are not scored (`rows_scored` says how many are).
    PSP is left out when `psp_unavailable(train)` says why (no, a sharded or a tiny training split). A sharded
    test split is predicted part by part: one part's features in memory at a time, beside every
    part's labels and top k (the same numbers as the whole split at once)."""
    enable_shortcuts()
    if psp_unavailable(train):
        train = None
    family = get_solver(model.solver)
    replicate = family.multiclass and not family.multilabel
    pieces = ([test.part(k) for k in range(len(test.parts))] if isinstance(test, Shards) else [test])
    predicted = [(on_sample(model, piece.Y), model.predict_topk(piece.X, k=max(ks), threads=threads)[0])
                 for piece in pieces]
    Y = sp.vstack([y for y, _ in predicted], format="csr") if len(predicted) > 1 else predicted[0][0]
    topk = np.concatenate([t for _, t in predicted])
    scored = np.diff(Y.indptr) > 0 if "label_sample" in model.info else None
    if scored is not None:  # a row with no sampled label says nothing about the sample's model
        Y, topk = Y[scored], topk[scored]
    inv_prop = 1.0 / metrics.propensities(on_sample(model, train.Y)) if train is not None else None
    result = metrics.evaluate(Y, topk, ks=ks, inv_prop=inv_prop)
    if scored is not None:
        result["rows_scored"] = int(scored.sum())
    per_row = np.diff(Y.indptr)
    if np.all(per_row == 1) or (replicate and per_row.any()):  # one class per row, or per replicated copy
        truth = Y.indices
        guess = np.repeat(topk[:, 0], per_row)  # a row's top class, once per copy (CSR order)
        result["accuracy"] = 100.0 * metrics.accuracy(truth, guess)
        result["macro_f1"] = 100.0 * metrics.macro_f1(truth, guess)
    return result


def psp_unavailable(train: Dataset | Shards | None) -> str | None:
    """Why `evaluate` leaves PSP@k and PSnDCG@k out for this training split, or None when it scores
    them: their propensities need the training label counts of at least 3 rows."""
    if train is None:
        return "no training split was given for the label propensities"
    if isinstance(train, Shards):
        return "a sharded training split's label counts are not read for the propensities"
    if train.n < 3:
        return f"the propensities need at least 3 training rows, the training split has {train.n}"
    return None


class OneVsAllClassifier:
    """scikit-learn-style estimator around a one-vs-all solver.

    `fit(X, Y)` returns self and sets `model_`; `predict_topk(X, k)` returns (labels, scores).
    Every solver parameter is a constructor keyword, readable and settable by get/set_params."""

    def __init__(self, solver: str = "dismec", threads: int | None = None, **params) -> None:
        self.solver = solver
        self.threads = threads
        self._params = param_dict(make_params(solver, **params))

    def get_params(self, deep: bool = True) -> dict:
        return {"solver": self.solver, "threads": self.threads, **self._params}

    def set_params(self, **params) -> "OneVsAllClassifier":
        self.__init__(**{**self.get_params(), **params})
        return self

    def fit(self, X: sp.spmatrix, Y: sp.spmatrix, recorder=None) -> "OneVsAllClassifier":
        enable_shortcuts()
        p = make_params(self.solver, **self._params)
        self.model_ = get_solver(self.solver).fit(X, Y, p, threads=self.threads, recorder=recorder)
        self.n_features_in_ = X.shape[1]
        self.n_labels_ = Y.shape[1]
        return self

    def _fitted(self) -> SparseModel:
        if not hasattr(self, "model_"):
            raise RuntimeError("this OneVsAllClassifier is not fitted yet: call fit(X, Y) first")
        return self.model_

    def predict_topk(self, X: sp.spmatrix, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        return self._fitted().predict_topk(X, k=k, threads=self.threads)

    def decision_function(self, X: sp.spmatrix) -> np.ndarray:
        return self._fitted().decision_function(X)

    def score(self, X: sp.spmatrix, Y: sp.spmatrix, k: int = 1) -> float:
        """P@k in [0, 1]."""
        topk, _ = self.predict_topk(X, k=k)
        return metrics.precision_at_k(sp.csr_matrix(Y), topk, k)
