"""Estimates before a long one-vs-all run: train a stratified sample of the labels and predict the
whole run's time, peak memory, model size and record volume, on threads here and on Dask workers.

One-vs-all labels train independently, and a label's cost follows its positives (the search, the
active set and the model's non-zeros grow with them). So the labels are cut by their positives into
STRATA groups of equal size, SAMPLE of them are trained (the same share of each group, at least one),
and each group's total is its sampled labels' mean times its size. The time on T threads is the
list schedule of the predicted per-label seconds over T threads plus the sample run's own setup
(what its wall time had beyond its labels' schedule); on P workers, the cost model of
`runs.costmodel` (its assumptions apply). Memory: the process's resident size once the data is
read, plus what the sample's training added at its peak, plus the predicted model's bytes."""
from __future__ import annotations

import time

import numpy as np

from ..data.dataset import Dataset
from ..data.label_sample import draw_labels, stratified_sample
from ..records.sinks import MemorySink
from ..solvers import get_solver, make_params
from .costmodel import list_schedule, predict_makespan
from .memory import memory_kb, reset_peak

SAMPLE = 200   # labels trained for an estimate
MODEL_ENTRY_BYTES = 12  # a stored weight: an 8-byte value and a 4-byte feature index


def extrapolate(groups: list, labels: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each label's predicted value of each field: the mean over its group's sampled labels.
    `labels` holds the sample's label records by label index."""
    n = sum(g.size for g, _ in groups)
    out = {field: np.zeros(n) for field in labels if field != "label"}
    position = {int(label): i for i, label in enumerate(labels["label"])}
    for group, drawn in groups:
        rows = [position[int(label)] for label in drawn]
        for field in out:
            out[field][group] = float(np.mean(labels[field][rows]))
    return out


def estimate(train: Dataset, solver: str, params: dict, threads: int, *, sample: int = SAMPLE,
             workers: tuple[int, ...] = (), seed: int = 0) -> dict:
    """The predicted `train_seconds`, `peak_rss_mb`, `model_nnz` and `record_count` of training
    `solver` with `params` on `train` (one-vs-all; on the labels its `label_sample` draws, if it
    asks for part of them, said by `label_sample`: {"labels", "of"}), with `sampled_labels` and
    `sample_seconds`;
    `workers` adds the predicted seconds on each Dask worker count (`workers_seconds`)."""
    family = get_solver(solver)
    if family.multiclass:
        raise ValueError(f"{solver} trains all classes at once: an estimate samples labels of a one-vs-all "
                         "solver (dismec, ppdsparse)")
    Y = train.Y
    n_pos = np.diff(Y.tocsc().indptr)
    run_labels = draw_labels(n_pos, params.get("label_sample") or 0)
    of = {}
    if run_labels is not None:  # a run of a label sample: the estimate is of that sample's run
        of = {"label_sample": {"labels": int(run_labels.size), "of": int(n_pos.size)}}
        Y, n_pos, params = Y[:, run_labels].tocsr(), n_pos[run_labels], {**params, "label_sample": 0}
    groups = stratified_sample(n_pos, sample, seed=seed)
    drawn = np.sort(np.concatenate([d for _, d in groups]))
    resident = memory_kb("VmRSS")
    reset_peak()  # the peak of the sample's training alone
    sink = MemorySink()
    start = time.perf_counter()
    model = family.fit(train.X, Y[:, drawn].tocsr(), make_params(solver, **params), threads=threads,
                       recorder=sink)
    wall = time.perf_counter() - start - model.info.get("compile_seconds", 0.0)  # kernels load once a process
    added = max(0, memory_kb("VmHWM") - resident)
    records = sink.labels.sort_values("label")
    sampled = records["label"].to_numpy()
    stored = np.diff(model.weights.indptr)[sampled] + (model.bias_weights[sampled] != 0)  # as model.nnz counts
    per_label = np.bincount(sink.iterations["label"].to_numpy(), minlength=drawn.size)[sampled]
    measured = {"label": drawn[sampled], "seconds": records["seconds"].to_numpy(),
                "nnz": stored.astype(float), "records": per_label + 1.0}  # its iteration records and its label record
    predicted = extrapolate(groups, measured)
    setup = max(0.0, wall - list_schedule(measured["seconds"], threads))
    nnz = float(predicted["nnz"].sum())
    out = {"train_seconds": round(setup + list_schedule(predicted["seconds"], threads), 3),
           "peak_rss_mb": round((resident + added) / 1024 + nnz * MODEL_ENTRY_BYTES / 2**20, 1),
           "model_nnz": int(round(nnz)),
           "record_count": int(round(predicted["records"].sum())),
           "sampled_labels": int(drawn.size), "sample_seconds": round(wall, 3), **of}
    if workers:
        prediction = predict_makespan(predicted["seconds"], n_pos, model.info.get("data_bytes", 0), workers=workers)
        out["workers_seconds"] = {int(p): round(float(s), 3) for p, s in zip(prediction.workers, prediction.seconds)}
    return out
