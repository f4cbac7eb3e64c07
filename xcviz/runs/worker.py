"""The process that trains one run of the store: `python -m xcviz.runs.worker HOME RUN`.

It takes the run only with the token of the claim that started it, read from `XCVIZ_CLAIM` (not
from its arguments, which every local user can read; of two resumes at once, one worker trains),
runs at a lower CPU priority than interactive work (`lower_priority`), checks that its input files
are still inside the run's data folders and unchanged since launch, skips the labels whose weights
the store already holds (a resumed run), writes each finished block's records and weights in one
transaction (while it still owns the run), stops between blocks when a cancel is requested (a
multiclass run between batches, asking the store at most 5 times a second), and writes the model
(partial if cancelled) into the run's folder.
"""
from __future__ import annotations

import math
import os
import platform
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

import numpy as np

from .. import __version__
from ..api import evaluate, fit_inputs, fit_validation, keep_labels
from ..data.errors import DatasetFormatError
from ..data.registry import resolve
from ..data.source import DataSource
from ..engine.loading import enable_shortcuts
from ..models.sparse import SparseModel
from ..solvers import get_solver, make_params
from ..solvers._onevsall.blocks import assemble_rows
from ..compute.cluster import cluster_client
from .failure_note import FailureNote
from .inputs import check, unchanged
from .spec import RunSpec
from .store import CLAIM_VARIABLE, RESUMABLE, RunStore, SqliteSink, StoreError
from .summary import metric_summary, model_summary, peak_rss_mb

STORE_INTERVAL = 0.2  # seconds between a multiclass run's progress writes, and between its cancel checks


def _versions() -> dict:
    import numba
    import scipy

    return {"xcviz": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "numba": numba.__version__, "cores": os.cpu_count()}


def stored_model(store: RunStore, run: str, n_labels: int, n_features: int, template: SparseModel) -> tuple[SparseModel, int]:
    """The model assembled from the run's stored blocks, and how many labels it covers; a label
    stored twice (two workers on one run) or out of range is refused, never summed."""
    pieces = store.pieces(run)
    labels = [p[0] for p in pieces]
    every = np.concatenate(labels) if labels else np.zeros(0, dtype=np.int64)
    if every.size and (every.min() < 0 or every.max() >= n_labels):
        raise StoreError(f"run {run}: a stored block holds label {int(every.max())}, beyond the {n_labels} labels")
    if np.unique(every).size != every.size:
        twice = np.flatnonzero(np.bincount(every, minlength=n_labels) > 1)
        raise StoreError(f"run {run}: {twice.size} labels are stored more than once (first: {int(twice[0])}); "
                         f"the run's stored weights are inconsistent, launch it again")
    weights = assemble_rows(labels, [p[1] for p in pieces], n_labels, n_features)
    bias_weights = np.zeros(n_labels)
    for lab, _, bias in pieces:
        bias_weights[lab] = bias
    model = SparseModel(weights=weights, bias_weights=bias_weights, bias=template.bias, normalize=template.normalize,
                        solver=template.solver, params=template.params, info=dict(template.info))
    return model, int(sum(len(x) for x in labels))


def execute(store: RunStore, run: str, token: str | None = None) -> str:
    """Train `run` to its end (or to a requested cancel); returns the final status, or "taken"
    when another process owns the run (its claim is not `token`). Without a token the run is
    claimed here (a queued or resumable run)."""
    if token is None:
        token = store.claim(run, allowed=("queued",) + RESUMABLE)
    if not store.take(run, token, started=time.time(), ended=None, error=None, versions=_versions()):
        print(f"run {run} is owned by another process: nothing to do", file=sys.stderr)
        return "taken"
    row = store.get(run)
    note = None
    try:
        note = FailureNote(store.run_dir(run))
        status = _train(store, run, token, row)
        note.discard()
        return status
    except Exception as exc:  # the run fails, the store says why (or the note, when the store cannot)
        reason = f"{type(exc).__name__}: {exc}"
        try:
            traceback.print_exc()
            if store.token(run) == token:  # a run resumed elsewhere is the new owner's to end
                store.update(run, status="failed", ended=time.time(), error=reason)
            if note is not None:
                note.discard()
        except (StoreError, OSError) as unrecorded:
            if note is None:
                raise
            note.write(f"{reason} (the run store could not record it: {unrecorded})")
            note.close()
        return "failed"


def _train(store: RunStore, run: str, token: str, row: dict) -> str:
    """Train the run `execute` took and record its end; returns its final status."""
    spec = RunSpec.from_json(row["spec"], source=f"run {run}")
    try:
        train, test = resolve(*check(spec, row["inputs"]))
    except DatasetFormatError:  # a file rewritten mid-read breaks a line: say that, not the broken line
        unchanged(row["inputs"], after_reading=True)
        raise
    unchanged(row["inputs"], after_reading=True)  # the files read are still those fingerprinted at launch
    solver = get_solver(spec.solver)
    if solver.multiclass:
        return _execute_multiclass(store, run, spec, train, test)
    skip = [p[0] for p in store.pieces(run)]
    sink = SqliteSink(store, run, token)
    with cluster_client(spec.cluster, spec.threads, store.run_dir(run)) as cluster:
        # a cluster's workers read the data from where the spec names it, not from this process
        # and write each block's weights to the run's folder, checksummed, for this process to read back
        on_cluster = {"cluster": cluster, "source": DataSource.of(spec.dataset, spec.test),
                      "blocks_dir": str(blocks_folder(store, run))} if cluster else {}
        template = solver.fit(
            train.X, train.Y, make_params(spec.solver, **spec.params), threads=spec.threads,
            recorder=sink, run=run, progress=lambda done, total: store.update(run, done=done, total=total),
            skip=np.concatenate(skip) if skip else None, stop=lambda: store.cancel_requested(run),
            on_block=sink.block, phase=phase_writer(store, run), **on_cluster)
    sample = template.info.get("label_sample")  # a run of a label sample trains and stores those labels alone
    n_labels = train.n_labels if sample is None else len(sample["labels"])
    model, done = stored_model(store, run, n_labels, train.n_features, template)
    model.info.update({k: v for k, v in template.info.items() if k not in model.info})
    keep_labels(model, train)
    model.save(store.run_dir(run) / "model")
    status = "done" if done == n_labels else "cancelled"
    summary = {"labels_done": done, **model_summary(model, train.n, None if test is None else test.n)}
    if status == "done" and test is not None:
        summary.update(metric_summary(evaluate(model, test, train, threads=spec.threads)))
    summary["peak_rss_mb"] = peak_rss_mb()
    store.update(run, status=status, ended=time.time(), done=done, summary=summary)
    return status


def blocks_folder(store: RunStore, run: str) -> Path:
    """The owner-only folder in the run's folder where its Dask workers write blocks' weights,
    emptied of the files an earlier session left (killed before reading them back: those blocks are
    not in the store, so this session trains them again)."""
    folder = store.run_dir(run) / "blocks"
    folder.mkdir(mode=0o700, exist_ok=True)
    for left in folder.glob("xcviz-*.npz"):
        left.unlink()
    return folder


def phase_writer(store: RunStore, run: str) -> Callable[[str], None]:
    """The fit's phase callback of a background run: the phase goes into the run's summary while it
    trains (`{"phase": "compiling"}`, read by runs.progress.progress_text, so the runs table and
    `xcviz runs` say the kernels are compiling); the summary it ends with replaces it."""
    return lambda name: store.update(run, summary={"phase": name})


class StoreCallbacks:
    """The progress and stop callbacks of a multiclass run (MEMOIR and LDGS call them after every
    batch): the progress is written and a cancel looked up at most once per `interval` seconds (the
    last batch's progress always; `latest` holds the last reported, for the run's final update).
    Each is a store transaction of 0.4 to 1.6 ms; LDGS's batches of 10 train in 0.7 ms on Bibtex, so
    asking the store after every batch took most of a background run's time."""

    def __init__(self, store: RunStore, run: str, interval: float = STORE_INTERVAL) -> None:
        self.store, self.run, self.interval = store, run, interval
        self.latest: dict = {}
        self._written = self._asked = -math.inf
        self._cancel = False

    def progress(self, done: int, total: int) -> None:
        self.latest = {"done": done, "total": total}
        now = time.monotonic()
        if done >= total or now - self._written >= self.interval:
            self._written = now
            self.store.update(self.run, **self.latest)

    def stop(self) -> bool:
        now = time.monotonic()
        if not self._cancel and now - self._asked >= self.interval:
            self._asked = now
            self._cancel = self.store.cancel_requested(self.run)
        return self._cancel


def _execute_multiclass(store: RunStore, run: str, spec: RunSpec, train, test) -> str:
    """A multiclass run trains all classes at once: a resumed run starts again from scratch (its
    earlier records are dropped), a cancelled one keeps the model of its last finished batch."""
    store.clear_records(run)
    callbacks = StoreCallbacks(store, run)
    with cluster_client(spec.cluster, spec.threads, store.run_dir(run)) as cluster:
        model = get_solver(spec.solver).fit(
            *fit_inputs(train, spec.solver), make_params(spec.solver, **spec.params), threads=spec.threads,
            recorder=SqliteSink(store, run), run=run, progress=callbacks.progress, stop=callbacks.stop,
            validation=None if test is None else fit_validation(test, spec.solver), phase=phase_writer(store, run),
            **({"cluster": cluster} if cluster else {}))
    keep_labels(model, train)
    model.save(store.run_dir(run) / "model")
    status = "cancelled" if model.info["cancelled"] else "done"
    summary = model_summary(model, train.n, None if test is None else test.n)
    if status == "done" and test is not None:
        summary.update(metric_summary(evaluate(model, test, train, threads=spec.threads)))
    summary["peak_rss_mb"] = peak_rss_mb()
    store.update(run, status=status, ended=time.time(), summary=summary, **callbacks.latest)
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
    enable_shortcuts()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file-size limit is a write error to record, not a death
    token = os.environ.pop(CLAIM_VARIABLE, None)  # what the worker starts (a local Dask cluster) does not need it
    try:
        store = RunStore(home, create=False)  # a store gone under a run is an error, not a new store
    except StoreError as exc:
        print(f"xcviz worker: {exc}", file=sys.stderr)
        return 1
    try:
        lower_priority()
    except ValueError as exc:
        store.update(run, status="failed", ended=time.time(), error=str(exc))
        return 1
    try:
        return 0 if execute(store, run, token) in ("done", "cancelled", "taken") else 1
    except StoreError as exc:
        print(f"xcviz worker: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
