"""The summary of a trained model, as `xcviz train --json` prints it and a background run stores it
(so `xcviz wait --json` prints the same keys): threads, sizes, time (training, and apart the
kernels' compile or load before it), nnz, the main parameters,
iteration counts, the Dask cluster's keys and, for multiclass solvers, the epoch time, the
oracle's quality and the objective."""
from __future__ import annotations

import resource

from ..compute.cluster import CLUSTER_KEYS

MAIN_PARAMS = ("init", "loss", "variant", "oracle", "epochs", "mode", "gradient", "embedding")
MULTICLASS_INFO = ("epoch_seconds", "oracle_recall", "oracle_recall_at_1", "oracle_recall_at_10", "margin_error",
                   "objective", "search_recall", "gradient_cosine")


def model_summary(model, n_train: int, n_test: int | None = None) -> dict:
    """What a trained `SparseModel` reports about its training (test metrics are added by callers)."""
    summary = {"threads": model.info.get("threads"), "n_train": model.info.get("n_train", n_train),
               "train_seconds": round(model.info["train_seconds"], 4),
               "compile_seconds": round(model.info.get("compile_seconds", 0.0), 4), "model_nnz": model.nnz}
    summary.update({k: model.params[k] for k in MAIN_PARAMS if k in model.params})
    summary.update({k: v for k, v in model.info.items() if k.endswith("_iterations")})
    summary.update({k: round(model.info[k], 6) for k in MULTICLASS_INFO if k in model.info})
    summary.update({k: model.info[k] for k in CLUSTER_KEYS if k in model.info})
    if "objective_climbs" in model.info:  # records.climbs: the runs table flags them
        summary["objective_climbs"] = model.info["objective_climbs"]
    if "label_sample" in model.info:  # a sample of N of K labels: the page and the report say so
        sample = model.info["label_sample"]
        summary["label_sample"] = {"labels": len(sample["labels"]), "of": sample["of"]}
    if n_test is not None:
        summary["n_test"] = n_test
    return summary


def metric_summary(metrics: dict[str, float]) -> dict[str, float]:
    """Test metrics as every summary holds them (`train --json`, `evaluate --json`, a background
    run's and so `wait --json`): percent, to 4 decimals."""
    return {k: round(v, 4) for k, v in metrics.items()}


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
