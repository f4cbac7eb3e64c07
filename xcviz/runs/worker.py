"""The process that trains one run of the store: `python -m xcviz.runs.worker HOME RUN`.

It runs at a lower CPU priority than interactive work (`lower_priority`), reads the spec, skips
the labels whose weights the store already holds (a resumed run), streams records and each
finished block's weights into the store, stops between blocks when a cancel is requested, and
writes the model (partial if cancelled) into the run's folder.
"""
from __future__ import annotations

import os
import platform
import socket
import sys
import time
import traceback

import numpy as np

from .. import __version__
from ..api import evaluate
from ..data.registry import resolve
from ..models import SparseModel
from ..solvers import get_solver, make_params
from ..solvers.blocks import assemble_rows
from .spec import RunSpec
from .store import RunStore, SqliteSink


def _versions() -> dict:
    import numba
    import scipy

    return {"xcviz": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "numba": numba.__version__, "cores": os.cpu_count()}


def stored_model(store: RunStore, run: str, n_labels: int, n_features: int, template: SparseModel) -> tuple[SparseModel, int]:
    """The model assembled from the run's stored blocks, and how many labels it covers."""
    pieces = store.pieces(run)
    labels = [p[0] for p in pieces]
    weights = assemble_rows(labels, [p[1] for p in pieces], n_labels, n_features)
    bias_weights = np.zeros(n_labels)
    for lab, _, bias in pieces:
        bias_weights[lab] = bias
    model = SparseModel(weights=weights, bias_weights=bias_weights, bias=template.bias, normalize=template.normalize,
                        solver=template.solver, params=template.params, info=dict(template.info))
    return model, int(sum(len(x) for x in labels))


def execute(store: RunStore, run: str) -> str:
    """Train `run` to its end (or to a requested cancel); returns the final status."""
    row = store.get(run)
    store.update(run, status="running", pid=os.getpid(), host=socket.gethostname(), started=time.time(),
                 ended=None, error=None, cancel=0, versions=_versions())
    try:
        spec = RunSpec.from_json(row["spec"], source=f"run {run}")
        train, test = resolve(spec.dataset, spec.test)
        solver = get_solver(spec.solver)
        if solver.multiclass:
            return _execute_multiclass(store, run, spec, train, test)
        skip = [p[0] for p in store.pieces(run)]
        template = solver.fit(
            train.X, train.Y, make_params(spec.solver, **spec.params), threads=spec.threads,
            recorder=SqliteSink(store, run), run=run,
            progress=lambda done, total: store.update(run, done=done, total=total),
            skip=np.concatenate(skip) if skip else None, stop=lambda: store.cancel_requested(run),
            on_block=lambda labels, weights, bias: store.add_piece(run, labels, weights, bias))
        model, done = stored_model(store, run, train.n_labels, train.n_features, template)
        model.save(store.run_dir(run) / "model")
        status = "done" if done == train.n_labels else "cancelled"
        summary = {"labels_done": done, "model_nnz": model.nnz, "train_seconds": template.info["train_seconds"]}
        if status == "done" and test is not None:
            summary.update(evaluate(model, test, train, threads=spec.threads))
        store.update(run, status=status, ended=time.time(), done=done, summary=summary)
        return status
    except Exception as exc:  # the run fails, the store says why; the process exits non-zero
        store.update(run, status="failed", ended=time.time(), error=f"{type(exc).__name__}: {exc}")
        traceback.print_exc()
        return "failed"


def _execute_multiclass(store: RunStore, run: str, spec: RunSpec, train, test) -> str:
    """A multiclass run trains all classes at once: a resumed run starts again from scratch (its
    earlier records are dropped), a cancelled one keeps the model of its last finished batch."""
    store.clear_records(run)
    model = get_solver(spec.solver).fit(
        train.X, train.Y, make_params(spec.solver, **spec.params), threads=spec.threads,
        recorder=SqliteSink(store, run), run=run, progress=lambda done, total: store.update(run, done=done, total=total),
        stop=lambda: store.cancel_requested(run), validation=None if test is None else (test.X, test.Y))
    model.save(store.run_dir(run) / "model")
    status = "cancelled" if model.info["cancelled"] else "done"
    summary = {k: model.info[k] for k in ("train_seconds", "epoch_seconds", "oracle_recall", "margin_error",
                                          "objective", "search_recall", "gradient_cosine") if k in model.info}
    summary["model_nnz"] = model.nnz
    if status == "done" and test is not None:
        summary.update(evaluate(model, test, train, threads=spec.threads))
    store.update(run, status=status, ended=time.time(), summary=summary)
    return status


def lower_priority() -> int:
    """Give up CPU to interactive work: a background run asks for every core, and at equal
    priority the dashboard's server and the browser drawing it would wait behind the solver's
    threads. The niceness (default 10, `XCVIZ_NICE` to change, 0 to keep) costs nothing on an
    otherwise idle machine; threads started later inherit it. Returns the niceness now in force."""
    value = os.environ.get("XCVIZ_NICE", "10")
    try:
        increment = int(value)
    except ValueError:
        raise ValueError(f"XCVIZ_NICE must be an integer niceness, got {value!r}") from None
    return os.nice(max(0, increment))


def main(argv: list[str] | None = None) -> int:
    home, run = (argv or sys.argv[1:])[:2]
    store = RunStore(home)
    try:
        lower_priority()
    except ValueError as exc:
        store.update(run, status="failed", ended=time.time(), error=str(exc))
        return 1
    return 0 if execute(store, run) in ("done", "cancelled") else 1


if __name__ == "__main__":
    sys.exit(main())
