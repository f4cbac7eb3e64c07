"""Prediction with a margin oracle (MEMOIR's second claim: inexact margins at prediction too).

A linear model's top class is a maximum-inner-product search over its class vectors, so every
margin oracle, built once over the trained weights (`StaticVectors`), predicts with it; this
module times that search per test row and holds its answers against the exact top class.
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from . import metrics
from .data.dataset import Dataset
from .models.sparse import SparseModel
from .oracles.registry import ORACLES, make_oracle
from .oracles.static import StaticVectors


def predict_with_oracle(model: SparseModel, X, oracle: str = "hnsw", threads: int | None = None,
                        seed: int = 0, **oracle_params) -> tuple[np.ndarray, dict[str, float]]:
    """Each row's top class as `oracle` finds it over the model's class vectors (int64 per row),
    and the seconds of building its index and of the queries. `oracle_params`: that oracle's
    parameters (`hnsw_ef=64` say); a name it does not have is refused, listing those it has."""
    if not isinstance(model, SparseModel):  # a user's saved model: the CLI says ValueErrors in a line
        raise ValueError(  # noqa: TRY004
            f"a margin oracle searches a linear model's class vectors; this is a {model.solver} "
            f"{type(model).__name__}, which scores through its embedding")
    if oracle not in ORACLES:
        raise ValueError(f"unknown oracle {oracle!r}; known: {', '.join(ORACLES)}")
    own = ORACLES[oracle][0]()
    unknown = sorted(set(oracle_params) - set(own.param) - {"name"})
    if unknown:
        known = ", ".join(sorted(k for k in own.param if k != "name")) or "none"
        raise ValueError(f"oracle {oracle!r} has no parameter {', '.join(unknown)}; its parameters: {known}")
    classes, queries = model.as_inner_products(X)
    start = time.perf_counter()
    search = make_oracle(oracle, SimpleNamespace(**oracle_params), seed=seed, threads=threads)
    search.build(StaticVectors(classes))
    built = time.perf_counter()
    top = search.query(queries)
    return top, {"build_seconds": built - start, "query_seconds": time.perf_counter() - built}


def evaluate_with_oracle(model: SparseModel, test: Dataset, oracle: str = "hnsw", threads: int | None = None,
                         seed: int = 0, **oracle_params) -> dict[str, float]:
    """A multi-class test split predicted by `oracle` beside the exact top class: accuracy of
    each (percent), the share of rows where they agree, microseconds per test row of each
    (the oracle's queries alone, its index build reported apart, paid once per model; the exact
    kernel's call whole, its transposition of W included, which favours the oracle)."""
    truth = test.Y.indices
    if not np.all(np.diff(test.Y.indptr) == 1):
        raise ValueError("evaluate_with_oracle needs a multi-class test split (one class per row)")
    start = time.perf_counter()
    exact = model.predict_topk(test.X, k=1, threads=threads)[0][:, 0]
    exact_seconds = time.perf_counter() - start
    found, seconds = predict_with_oracle(model, test.X, oracle, threads=threads, seed=seed, **oracle_params)
    n = max(test.n, 1)
    return {"accuracy": 100.0 * metrics.accuracy(truth, found),
            "accuracy_exact": 100.0 * metrics.accuracy(truth, exact),
            "agreement": float(np.mean(found == exact)),
            "us_per_row": 1e6 * seconds["query_seconds"] / n,
            "us_per_row_exact": 1e6 * exact_seconds / n,
            "index_seconds": seconds["build_seconds"]}
