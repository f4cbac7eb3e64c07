"""The `xcviz` command: list data, generate synthetic problems, train and evaluate headless.

Every failure a user can cause (a bad path, a malformed file, an out-of-range parameter) ends with
one line `xcviz: error: ...` on stderr and exit status 2; never a traceback.
"""
from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

import param

from . import __version__
from .data.errors import DatasetFormatError
from .models.sparse import ModelFormatError
from ._util.extras import MissingExtra
from ._util.jsontext import TooDeep, loads_bounded
from ._util.text import printable

# `xcviz generate`'s peak memory above the imported process: per stored entry (values, indices, the
# generator's temporaries and the split's copies) and fixed. Measured peak RSS less the bare process's,
# --d 5000 --labels 1000 --avg-nnz 50: n = 50000, 430 MB; n = 200000, 1367 MB (114 bytes an entry
# between them). The estimate was 40 bytes an entry, 3-4x low (issue #42).
GENERATE_BYTES = 120
GENERATE_FIXED_BYTES = 64 * 2**20
ERROR_CHARS = 600  # the longest error line the CLI prints
_USER_ERRORS = (DatasetFormatError, ModelFormatError, MissingExtra, ValueError, KeyError, OSError, TimeoutError,
                sqlite3.Error, MemoryError)  # numpy's says what it could not allocate: a line, not a traceback


STARTING = ("waiting for the first progress report (the first run after installing compiles the numba kernels: "
            "up to a minute, cached for the next runs)")
COMPILING = "compiling the numba kernels (or loading them from numba's cache): not counted in train_seconds"


class ProgressBar:
    """A one-line progress bar with labels done, elapsed time and ETA, on a terminal only, redrawn
    at most 10 times a second (a multiclass solver reports after every batch, LDGS's a millisecond
    apart) and at the end. Until the first report, a line says that the kernels may be compiling
    (STARTING, after `notice` seconds: a fresh install's first run compiles for up to a minute before
    any progress); the ETA is paced from the first report on, not from the start, so that this
    compile does not inflate it (1 batch in 58 s had read as an ETA of 28,000 s). `phase` is the
    fit's phase callback: the kernels' warm-up says COMPILING on a line of its own as it starts and
    how long it took when it ends (the `compile_seconds` of the summary)."""

    def __init__(self, what: str, stream=sys.stderr, notice: float = 1.0) -> None:
        self.what = what
        self.stream = stream
        self.enabled = stream.isatty()
        self.t0 = time.monotonic()
        self.drawn = -math.inf
        self.first: tuple[float, int] | None = None  # (time, done) of the first report
        self.compiling_since: float | None = None
        self._lock = threading.Lock()
        self._notice = threading.Timer(notice, self._starting)
        self._notice.daemon = True
        if self.enabled:
            self._notice.start()

    def _starting(self) -> None:
        with self._lock:
            if self.first is None:  # a line of its own: an error that ends the run starts on the next
                self.stream.write(f"{STARTING}\n")
                self.stream.flush()

    def phase(self, name: str) -> None:
        """"compiling": the kernels' warm-up starts (said at once, the notice is not needed);
        "training": it ended, and took so long."""
        if not self.enabled:
            return
        with self._lock:
            if name == "compiling":
                self._notice.cancel()
                self.compiling_since = time.monotonic()
                self.stream.write(f"{COMPILING}\n")
            elif self.compiling_since is not None:
                self.stream.write(f"kernels ready in {time.monotonic() - self.compiling_since:.1f}s\n")
                self.compiling_since = None
            self.stream.flush()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled:
            return
        with self._lock:
            if self.first is None:
                self._notice.cancel()
                self.first = (now, done)
            if done < total and now - self.drawn < 0.1:
                return
            self._draw(now, done, total)

    def _draw(self, now: float, done: int, total: int) -> None:
        self.drawn = now
        elapsed = now - self.t0
        since, done_then = self.first
        eta = (now - since) / (done - done_then) * (total - done) if done > done_then else None
        eta = 0.0 if done >= total else eta
        width = 30
        fill = int(width * done / max(total, 1))
        shown = "  --  " if eta is None else f"{eta:5.1f}s"  # one step done: no rate yet
        self.stream.write(f"\r\x1b[K[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {self.what}"  # K: clears
                          f"  {elapsed:5.1f}s elapsed  ETA {shown}")  # the rest of a longer line
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def _table(rows: list[tuple[str, str]]) -> str:
    """Two aligned columns; a value's control characters (a file or run name's) show as escapes."""
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k.ljust(width)}  {printable(v)}" for k, v in rows)


def _columns(frame) -> str:
    """A data frame as aligned columns under its headers (missing values blank, escapes as `_table`)."""
    cells = [list(map(str, frame.columns))] + [["" if v is None or v != v else printable(_fmt(v)) for v in row]
                                               for row in frame.itertuples(index=False)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return "\n".join("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells)


def _fmt(value) -> str:
    """Four significant digits, trailing zeros kept so that a column of metrics lines up (34.20 next
    to 54.19, not 34.2)."""
    if isinstance(value, float):
        return f"{value:#.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def cmd_datasets(args: argparse.Namespace) -> int:
    from .data.registry import bundled, load

    out = []
    for name in bundled():
        train, test = load(name)
        out.append({"name": name, "train": train.label_stats(), "test": test.label_stats()})
    if args.json:
        print(json.dumps(out))
        return 0
    head = f"{'name':<10} {'split':<6} {'N':>7} {'D':>6} {'L':>6} {'labels/pt':>9} {'max':>4} {'nnz/pt':>7} {'pts/label':>9}"
    print(head)
    for d in out:
        for split in ("train", "test"):
            s = d[split]
            print(f"{d['name']:<10} {split:<6} {s['n']:>7} {s['d']:>6} {s['l']:>6} {s['avg_labels']:>9.3f} "
                  f"{s['max_labels']:>4} {s['avg_nnz']:>7.2f} {s['avg_points_per_label']:>9.2f}")
    return 0


def generate_bytes(n: int, per_row: float) -> float:
    """The memory `xcviz generate` takes beyond the started process for `n` rows of `per_row`
    stored entries (features and labels), as measured (GENERATE_BYTES)."""
    return GENERATE_FIXED_BYTES + GENERATE_BYTES * n * per_row


def cmd_generate(args: argparse.Namespace) -> int:
    if args.like:
        return cmd_generate_like(args)
    if None in (args.n, args.d, args.labels):
        raise ValueError("generate needs --n, --d and --labels, or --like")
    from .data.synthetic import generate, split
    from .data.textio import write_xc
    from ._util.memory_check import check_fits

    avg_labels = min(5.0, args.labels) if args.avg_labels is None else args.avg_labels
    labels_a_row = 1 if args.multiclass else min(avg_labels, args.labels)  # a row holds a label once
    per_row = min(args.avg_nnz, args.d) + labels_a_row  # and a feature once
    check_fits(f"generating --n {args.n} with --avg-nnz {args.avg_nnz:g}", generate_bytes(args.n, per_row),
               "choose a smaller --n")
    ds = generate(args.n, args.d, args.labels, avg_labels=avg_labels, avg_nnz=args.avg_nnz,
                  zipf=args.zipf, multiclass=args.multiclass, noise=args.noise, seed=args.seed,
                  name=Path(args.prefix).name)
    train, test = split(ds, args.test_fraction, seed=args.seed)
    for part, suffix in ((train, "train"), (test, "test")):
        if part.n == 0 and suffix == "test":  # --test-fraction 0: an empty test file would fail training's end
            continue
        path = f"{args.prefix}_{suffix}.txt"
        write_xc(path, part)
        print(f"wrote {path}: {part.n} rows, {part.n_features} features, {part.n_labels} labels")
    return 0


def cmd_generate_like(args: argparse.Namespace) -> int:
    """`xcviz generate PREFIX --like NAME [--scale S] [--labels K]`: a preset shaped like a published data
    set (or one of ours, presets.VARIANTS)."""
    from .data.presets import like, scaled
    from .data.textio import write_xc
    from ._util.memory_check import check_fits

    shape = scaled(args.like, args.scale, args.labels)
    check_fits(f"generating --like {args.like} --scale {args.scale:g}",
               generate_bytes(shape.n_train + shape.n_test, min(shape.avg_nnz, shape.d) + shape.avg_labels),
               "choose a smaller --scale")
    for part, suffix in zip(like(args.like, args.scale, seed=args.seed, labels=args.labels), ("train", "test")):
        write_xc(f"{args.prefix}_{suffix}.txt", part)
        print(f"wrote {args.prefix}_{suffix}.txt: {part.n} rows, {part.n_features} features, {part.n_labels} labels")
    return 0


def cmd_shard(args: argparse.Namespace) -> int:
    from .data.registry import resolve
    from .data.shards import Shards, write_shards

    train, test = resolve(args.dataset, _paired_test(args.dataset, args.test))
    if isinstance(train, Shards):
        raise ValueError(f"{args.dataset}: already sharded")
    shards = write_shards(train, args.outdir, args.parts, test)
    print(f"wrote {args.outdir}: {shards.n_rows} rows in {len(shards.parts)} parts, {shards.n_features} features, "
          f"{shards.n_labels} labels" + (f", test split in {len(shards.test_parts)} parts" if shards.test_parts else ""))
    return 0


def _parse_sets(pairs: list[str]) -> dict:
    values = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects NAME=VALUE, got {pair!r}")
        try:
            value = loads_bounded(raw)
        except TooDeep as exc:
            raise ValueError(f"--set {key}: {exc}") from None
        except json.JSONDecodeError:
            value = raw
        if key in values and values[key] != value:  # the last had won in silence; --C 2 --set C=3 is refused too
            raise ValueError(f"--set {key}={_fmt_value(values[key])} and --set {key}={_fmt_value(value)} disagree; "
                             f"give {key} once")
        values[key] = value
    return values


def _fmt_value(value) -> str:
    """A parameter's value as the user would type it (2, not 2.0; true, not True)."""
    return f"{value:g}" if isinstance(value, float) else value if isinstance(value, str) else json.dumps(value)


def _solver_params(args: argparse.Namespace) -> dict:
    """The solver parameters given on the command line (the rest keep the solver's defaults),
    checked against the solver's: a name it does not know (`--set threads=4`, which has its own
    option) or a value out of bounds is refused here, in one line, before any data is read."""
    from .runs.spec import check_param_types
    from .solvers import make_params

    params = _parse_sets(args.set)
    check_param_types(args.solver, params)
    chosen = {name: getattr(args, name) for name in _param_options() if getattr(args, name) is not None}
    for key, value in chosen.items():
        if key in params and params[key] != value:
            option = _given_option(key, value)
            raise ValueError(f"{option} and --set {key}={_fmt_value(params[key])} disagree; give {key} once")
    params.update(chosen)
    make_params(args.solver, **params)
    return params


def _cluster(args: argparse.Namespace) -> str | None:
    """The cluster asked for by --cluster or --scheduler (HOST:PORT gets tcp://), checked."""
    from .compute.cluster import parse_cluster

    if args.cluster and args.scheduler:
        raise ValueError("give --cluster or --scheduler, not both")
    text = args.cluster
    if args.scheduler:
        text = args.scheduler if "://" in args.scheduler else f"tcp://{args.scheduler}"
    parse_cluster(text)
    return text


def _paired_test(dataset: str, test: str | None) -> str | None:
    """The test file for `xcviz train PREFIX_train.txt` without --test: PREFIX_test.txt beside it,
    if there (said on stderr). Any other dataset must be bundled or a file: else a suggestion."""
    path = Path(dataset)
    if test is None and path.is_file() and "_train.txt" in path.name:
        paired = path.with_name(path.name.replace("_train.txt", "_test.txt", 1))
        if paired.is_file():
            print(f"xcviz: testing on {paired} (the file beside {path.name}; --test chooses another)", file=sys.stderr)
            return str(paired)
    _known_dataset(dataset)
    return test


def _in_data_dirs(dataset: str) -> str:
    """A dataset argument that is neither bundled nor a path, looked up in the data folders
    ($XCVIZ_DATA_DIRS): `mydata` finds `mydata_train.txt` there, as the page offers it."""
    from .data.folders import data_dirs, find_training_file
    from .data.registry import BUNDLED

    if dataset in BUNDLED or Path(dataset).exists():
        return dataset
    return find_training_file(dataset, data_dirs()) or dataset


def _known_dataset(dataset: str) -> None:
    """Refuse a dataset that is neither bundled nor a path, with the closest bundled name."""
    from .data.registry import BUNDLED

    if dataset not in BUNDLED and not Path(dataset).exists():
        close = difflib.get_close_matches(dataset.lower(), list(BUNDLED), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ValueError(f"{dataset}: no such file, nor a bundled data set; {hint}`xcviz datasets` lists the bundled ones")


def _output_file(option: str, path: str) -> None:
    """Refuse a folder where an option names a file to write, before any work is done."""
    if Path(path).is_dir():
        raise ValueError(f"{option} {path}: a folder; give a file name in it")


def _model_folder(path: str) -> bool:
    """Check `--out` before training: a new or empty folder, or an xcviz model folder (which the
    new model replaces; returns True then). A file, or a folder holding anything else, is refused:
    the model's files would land among the user's."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {path}: a file is there; the model is a folder (choose another name)")
    if not out.is_dir() or not any(out.iterdir()):
        return False
    if not (out / "model.json").is_file():
        raise ValueError(f"--out {path}: a folder holding other files; the model needs a new or empty folder, "
                         "or a saved xcviz model's folder to replace")
    return True


def _note_psp(test, train) -> None:
    """Say on stderr why the metrics leave PSP@k out, when they do."""
    from .api import psp_unavailable

    why = test is not None and psp_unavailable(train)
    if why:
        print(f"xcviz: psp@k and psndcg@k left out: {why}", file=sys.stderr)


def cmd_train(args: argparse.Namespace) -> int:
    from .api import evaluate, train
    from .data.registry import resolve
    from .records.sinks import JsonLinesSink
    from .runs.summary import metric_summary, model_summary, peak_rss_mb
    from .solvers import get_solver

    replacing = bool(args.out) and _model_folder(args.out)
    if args.records:
        _output_file("--records", args.records)
    params = _solver_params(args)  # a refused parameter fails before any data is read
    train_ds, test_ds = resolve(args.dataset, _paired_test(args.dataset, args.test))
    recorder = JsonLinesSink(args.records) if args.records else None
    multiclass = get_solver(args.solver).multiclass
    bar = None if args.json else ProgressBar("batches" if multiclass else "labels")
    model = train(train_ds, solver=args.solver, threads=args.threads, recorder=recorder, progress=bar,
                  phase=None if bar is None else bar.phase, validation=test_ds if multiclass and args.records else None,
                  cluster=_cluster(args), **params)
    summary = {"dataset": args.dataset, "solver": args.solver,
               **model_summary(model, train_ds.n, None if test_ds is None else test_ds.n)}
    if test_ds is not None:
        summary.update(metric_summary(evaluate(model, test_ds, train_ds, threads=args.threads)))
        _note_psp(test_ds, train_ds)
    if args.out:
        model.info["summary"] = summary
        if replacing:
            print(f"xcviz: replacing the model saved in {args.out}", file=sys.stderr)
        model.save(args.out)
        summary["model_dir"] = str(args.out)
    summary["peak_rss_mb"] = peak_rss_mb()
    if args.json:
        print(json.dumps(summary))
    else:
        print(_table([(k, _fmt(v)) for k, v in summary.items()]))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .api import evaluate
    from .data.registry import BUNDLED, load, load_files
    from .models.embedding import load_model
    from .runs.summary import metric_summary

    _known_dataset(args.dataset)
    model = load_model(args.model)
    labels = model.info.get("label_values")  # a LIBSVM training file's labels: read with the same map
    if args.dataset in BUNDLED and not Path(args.dataset).exists():
        train_ds, test_ds = load(args.dataset)
    else:
        test_ds, _ = load_files(args.dataset, for_training=False, labels=labels)
        train_ds = None
    unseen = test_ds.n_labels - model.info.get("label_sample", {}).get("of", model.n_labels)  # a sample's: of all
    if labels is not None and unseen > 0:  # columns after the model's: never predicted, they count as misses
        print(f"xcviz: {unseen} label(s) of {args.dataset} never occurred in the model's training file; "
              "they count as misses", file=sys.stderr)
    elif unseen:
        raise ValueError(f"{args.dataset} has {test_ds.n_labels} labels, the model has {model.n_labels}")
    result = metric_summary(evaluate(model, test_ds, train_ds, threads=args.threads))
    if args.oracle is not None:
        from .inexact import evaluate_with_oracle

        found = evaluate_with_oracle(model, test_ds, args.oracle, threads=args.threads)
        result.update(metric_summary({f"oracle_{k}": v for k, v in found.items()}))
    if train_ds is None:
        print("xcviz: psp@k and psndcg@k left out: their propensities need the training split's label counts, "
              "which a saved model does not keep (a bundled name's test split has them)", file=sys.stderr)
    else:
        _note_psp(test_ds, train_ds)
    if args.json:
        print(json.dumps({"model": str(args.model), "dataset": args.dataset, **result}))
    else:
        print(_table([(k, _fmt(v)) for k, v in result.items()]))
    return 0


def cmd_spec(args: argparse.Namespace) -> int:
    from .runs.spec import RunSpec

    spec = RunSpec(dataset=args.dataset, solver=args.solver, params=_solver_params(args),
                   test=_paired_test(args.dataset, args.test), threads=args.threads, name=args.name or "",
                   cluster=_cluster(args)).validate()
    print(spec.to_json())
    return 0


def _read_spec(name: str):
    """The run spec in the file `name` (RunSpec; ValueError naming the file otherwise)."""
    from ._util.regular_file import read_regular_text
    from .runs.spec import RunSpec

    path = Path(name)
    if not path.is_file():
        raise ValueError(f"{path}: no such spec file")
    try:
        text = read_regular_text(path)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a run spec (not UTF-8 text; `xcviz spec` writes one)") from None
    return RunSpec.from_json(text, source=str(path))


def cmd_launch(args: argparse.Namespace) -> int:
    from .runs.launcher import launch
    from .runs.store import RunStore

    print(launch(_read_spec(args.spec), RunStore(args.home)))
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    from .data.registry import resolve
    from .engine.threads import max_threads
    from .runs.estimate import estimate
    from .runs.estimate_slice import estimate_slice
    from .solvers import get_solver

    spec = _read_spec(args.spec).validate()
    if not 1 <= args.sample <= 100_000:
        raise ValueError(f"--sample must be from 1 to 100000 labels, not {args.sample}")
    if any(not 1 <= p <= 1_000_000 for p in args.workers):
        raise ValueError("--workers must be from 1 to 1000000")
    multiclass = get_solver(spec.solver).multiclass
    if multiclass and args.workers:
        raise ValueError(f"--workers predicts one-vs-all blocks on Dask workers; {spec.solver} trains all classes "
                         "at once, and its estimate is for threads only")
    train, _ = resolve(spec.dataset, spec.test)
    threads = spec.threads or max_threads()
    if multiclass:
        result = estimate_slice(train, spec.solver, spec.params, threads, share=args.slice)
    else:
        result = estimate(train, spec.solver, spec.params, threads, sample=args.sample, workers=tuple(args.workers))
    if args.json:
        print(json.dumps(result))
        return 0
    rows = [("train_seconds", f"{_fmt(result['train_seconds'])} on {threads} thread{'s' * (threads > 1)}"),
            ("peak_rss_mb", _fmt(result["peak_rss_mb"])), ("model_nnz", f"{result['model_nnz']:,}"),
            ("record_count", f"{result['record_count']:,}")]
    rows += [(f"on {p} Dask workers", f"{_fmt(s)} s") for p, s in result.get("workers_seconds", {}).items()]
    rows.append(("from", f"{result['slice_steps']} of {result['total_steps']} steps trained in "
                         f"{_fmt(result['slice_seconds'])} s" if multiclass else
                         f"{result['sampled_labels']} labels trained in {_fmt(result['sample_seconds'])} s"))
    print(_table(rows))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from .runs.launcher import launch, wait
    from .runs.store import RunStore
    from .runs.sweep import MAX_RUNS, METRICS, parse_values, sweep_specs, sweep_table

    if len(args.set) != 1:
        raise ValueError("a sweep varies one parameter: give one --set NAME=VALUES")
    if not 1 <= args.at_once <= MAX_RUNS:
        raise ValueError(f"--at-once must be from 1 to {MAX_RUNS}, not {args.at_once}")
    key, sep, text = args.set[0].partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--set expects NAME=VALUES, got {args.set[0]!r}")
    try:
        specs = sweep_specs(_read_spec(args.spec), key.strip(), parse_values(text))
    except ValueError as exc:
        raise ValueError(f"--set {key.strip()}: {exc}") from None
    store = RunStore(args.home)
    runs, started = [], []
    try:
        for spec in specs:  # at most --at-once training together: each run's seconds are its own
            while len(started) >= args.at_once:
                wait(store, started.pop(0))
            run = launch(spec, store)
            runs.append(run)
            started.append(run)
            print(f"{run}  {printable(spec.name)}", flush=True)
        if args.at_once < len(specs) or args.wait:
            for run in started:
                wait(store, run)
    except KeyboardInterrupt:
        left = [printable(s.name) for s in specs[len(runs):]]
        print("xcviz: interrupted; the runs started go on in the background"
              + (f"; not launched: {', '.join(left)}" if left else ""), file=sys.stderr)
        return 130
    if args.at_once < len(specs) or args.wait:
        table = sweep_table([store.get(r) for r in runs], key.strip())
        print(_columns(table))
        print(f"xcviz report {' '.join(runs)} -o sweep.html  # draws {', '.join(METRICS)} against {key.strip()}",
              file=sys.stderr)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from .runs.progress import progress_text
    from .runs.store import RunStore

    rows = RunStore(args.home, create=False).list()
    shown = [{"id": r["id"], "name": printable(r["name"]), "status": r["status"], "pid": r["pid"],
              "progress": progress_text(r), "done": r["done"], "total": r["total"], "error": r["error"],
              **{k: round(v, 2) for k, v in r["summary"].items() if k in ("p@1", "p@5", "ndcg@5", "psp@5")}}
             for r in rows]
    if args.json:
        print(json.dumps(shown))
        return 0
    print(f"{'id':<24} {'status':<11} {'progress':>16} {'p@1':>6} {'p@5':>6}  name")
    for r in shown:
        print(f"{r['id']:<24} {r['status']:<11} {r['progress']:>16} {r.get('p@1', ''):>6} {r.get('p@5', ''):>6}  {r['name']}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from .runs.store import RunStore

    store = RunStore(args.home, create=False)
    run = store.find(args.run)
    ended = store.get(run)["status"]
    if ended in ("done", "failed", "cancelled"):  # said as such, not as a cancel that just happened
        print(f"{run} is already {ended}")
        return 0
    status = store.request_cancel(run)
    if status == "cancelled":
        print(f"cancelled: {run} had no process training it")
    elif status in ("queued", "running"):
        print(f"cancel requested: {run} stops at its next check (a one-vs-all run after its current block of "
              "labels, a multiclass one between batches or epochs)")
    else:
        print(f"{run} is already {status}")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from .runs.launcher import resume
    from .runs.progress import restart_note
    from .runs.store import RunStore

    store = RunStore(args.home, create=False)
    run = store.find(args.run)
    resume(store, run)
    note = restart_note(store.get(run))
    if note:
        print(f"xcviz: {printable(note)}", file=sys.stderr)
    print(run)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from .runs.store import RunStore

    store = RunStore(args.home, create=False)
    run = store.find(args.run)
    name = store.get(run)["name"]
    store.delete(run)
    print(f"deleted {name} ({run}): its records, weights and folder")
    return 0


def run_summary(row: dict) -> dict:
    """A run of the store as `train --json` summarises a training (same keys), plus its id, name,
    status and error."""
    from .runs.spec import RunSpec
    from .solvers import make_params

    spec = RunSpec.from_json(row["spec"], source=f"run {row['id']}")
    params = make_params(spec.solver, **spec.params).param.values()
    main = {k: params[k] for k in ("init", "loss", "variant", "oracle", "epochs") if k in params}
    return {"id": row["id"], "name": row["name"], "status": row["status"], "error": row["error"],
            "dataset": spec.dataset, "solver": spec.solver, **main, **row["summary"]}


def cmd_wait(args: argparse.Namespace) -> int:
    from .runs.launcher import wait
    from .runs.store import RunStore

    store = RunStore(args.home, create=False)
    summary = run_summary(wait(store, store.find(args.run), timeout=args.timeout))
    if args.json:
        print(json.dumps(summary))
    else:
        print(_table([(k, _fmt(v)) for k, v in summary.items() if v is not None]))
    return 0 if summary["status"] in ("done", "cancelled") else 1


def cmd_report(args: argparse.Namespace) -> int:
    from .app.report import write_report
    from .runs.store import RunStore

    _output_file("-o", args.output)
    store = RunStore(args.home, create=False)
    for path in write_report(store, [store.find(run) for run in args.runs], args.output):
        print(f"wrote {path}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from .app.server import serve

    from .compute.cluster import parse_cluster

    if not 0 <= args.port <= 65535:  # Bokeh's server asserted on it, a traceback
        raise ValueError(f"--port must be from 0 to 65535, not {args.port}")
    from .data.folders import DATA_DIRS_ENV, data_dirs

    folders = data_dirs(args.data_dir)
    for folder in folders:
        if not Path(folder).is_dir():
            given = "--data-dir" if folder in args.data_dir else DATA_DIRS_ENV
            raise ValueError(f"{given} {folder}: no such folder")
    for address in args.allow_scheduler:
        try:
            is_scheduler = parse_cluster(address).kind == "scheduler"
        except ValueError:
            is_scheduler = False
        if not is_scheduler:
            raise ValueError(f"--allow-scheduler {address[:100]!r}: expected a scheduler address, tcp://HOST:PORT "
                             f"or tls://HOST:PORT")
    serve(address=args.address, port=args.port, home=args.home, data_dirs=folders, allow_hosts=args.allow_host,
          schedulers=args.allow_scheduler, basic_auth=args.basic_auth, cookie_secret_file=args.cookie_secret_file)
    return 0


def _add_solver_options(p: argparse.ArgumentParser, generated: bool) -> None:
    p.add_argument("dataset", help="a bundled name (see `xcviz datasets`), a training file (XC text or LIBSVM) "
                                   "or a folder written by `xcviz shard`")
    p.add_argument("--test", help="test file for a training file given by path")
    p.add_argument("--solver", default="dismec", help="dismec (default) | ppdsparse | memoir | ldgs | dsmlr")
    p.add_argument("--threads", type=int, default=None, help="numba threads (default: all cores)")
    p.add_argument("--cluster", help="train label blocks on Dask: local:N (N worker processes) or local:NxT "
                                     "(T numba threads each), or a scheduler address tcp://HOST:PORT or tls://HOST:PORT")
    p.add_argument("--scheduler", help="an existing Dask scheduler, tcp://HOST:PORT or tls://HOST:PORT (same as --cluster ...)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="any solver parameter by its name, e.g. --set msi_t=-3 (repeatable)")
    if generated:
        _add_param_options(p)


def _param_options() -> dict[str, dict[str, param.Parameter]]:
    """Every family's parameters by name: {name: {family: its param.Parameter}} (a name several
    families share, such as C or epochs, is one option)."""
    from .solvers import SOLVERS

    options: dict[str, dict[str, param.Parameter]] = {}
    for family in SOLVERS.values():
        for name, parameter in family.params.param.objects("existing").items():
            if name != "name":
                options.setdefault(name, {})[family.name] = parameter
    return options


def _add_param_options(p: argparse.ArgumentParser) -> None:
    """One option per solver parameter, generated from the parameter classes (as the dashboard's
    launch form is): --NAME (dashes for underscores) typed by the parameter, a switch pair
    --NAME / --no-NAME for a Boolean, the choices of a Selector as its metavar, each family's doc
    as the help. Unset options keep the solver's defaults; the bounds and choices are checked by
    the solver's parameter class (solvers.make_params), which names the nearest choice."""
    shared = p.add_argument_group("parameters of several solvers")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for name, by_family in _param_options().items():
        first = next(iter(by_family.values()))
        if len(by_family) > 1:
            group = shared
        else:
            family = next(iter(by_family))
            group = groups.setdefault(family, p.add_argument_group(f"{family} parameters"))
        text = "; ".join(f"{family}: {_param_help(parameter)}" if len(by_family) > 1 else _param_help(parameter)
                         for family, parameter in by_family.items())
        flag = f"--{name.replace('_', '-')}"
        if isinstance(first, param.Boolean):
            group.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text)
            continue
        kind = int if isinstance(first, param.Integer) else float if isinstance(first, param.Number) else None
        choices = dict.fromkeys(str(o) for parameter in by_family.values() for o in getattr(parameter, "objects", None) or [])
        group.add_argument(flag, dest=name, type=kind, default=None, help=text,
                           metavar="{" + ",".join(choices) + "}" if choices else None)


def _param_help(parameter: param.Parameter) -> str:
    """A parameter's doc and default for --help (argparse's % escaped)."""
    default = "unset" if parameter.default is None else _fmt_value(parameter.default)
    return f"{parameter.doc.rstrip('.')} (default {default})".replace("%", "%%")


def _given_option(name: str, value) -> str:
    """How the command line spelled a parameter's option: --C 2, --no-normalize."""
    flag = name.replace("_", "-")
    if isinstance(value, bool):
        return f"--{flag}" if value else f"--no-{flag}"
    return f"--{flag} {_fmt_value(value)}"


class _Parser(argparse.ArgumentParser):
    """argparse with the command's one-line errors ("xcviz: error: ...", exit 2) instead of the
    usage block, and where to read it (its subcommands' parsers are of this class too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"xcviz: error: {message} (see `{self.prog} --help`)\n")


def build_parser(solver_options: bool = True) -> argparse.ArgumentParser:
    """The command's parser; without `solver_options`, `train` and `spec` lack the options generated
    from the solvers' parameter classes (importing the solvers loads numba: seconds a command that
    trains nothing need not wait)."""
    parser = _Parser(prog="xcviz", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"xcviz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("datasets", help="list the bundled data sets with N, D, L and label statistics")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser("generate", help="write a synthetic XMC problem as PREFIX_train.txt and PREFIX_test.txt")
    p.add_argument("prefix", help="where to write: PREFIX_train.txt and PREFIX_test.txt (XC text)")
    p.add_argument("--like", help="eurlex-4k | wiki10-31k | amazoncat-13k | amazon-670k | wikilshtc-325k | lshtc1: "
                   "that XC repository set's shape and statistics (docs/data.md); lshtc1-margin: LSHTC1's shape with "
                   "classes told from their siblings by their own words (the margin class matters); other options but "
                   "--seed and --labels (K labels instead of the scaled ones) are ignored")
    p.add_argument("--scale", type=float, default=1.0, help="with --like: share of its rows and labels (default 1)")
    p.add_argument("--n", type=int, help="instances (train + test; required without --like)")
    p.add_argument("--d", type=int, help="features (required without --like)")
    p.add_argument("--labels", type=int, help="labels (classes with --multiclass; required without --like)")
    p.add_argument("--multiclass", action="store_true", help="exactly one label per instance")
    p.add_argument("--avg-labels", type=float, help="average labels per instance (default 5, or --labels if fewer)")
    p.add_argument("--avg-nnz", type=float, default=75.0, help="average non-zeros per row (default 75)")
    p.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent of label frequencies (default 1)")
    p.add_argument("--noise", type=float, default=0.0,
                   help="share of signature terms drawn from a confusable neighbour label (default 0: nearly separable)")
    p.add_argument("--test-fraction", type=float, default=0.3, help="share of rows in the test file (default 0.3)")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed writes the same files (default 0)")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("shard", help="split a data set into a folder of XC part files and a manifest, for workers "
                                     "to read their own rows (DS-MLR sync on Dask)")
    p.add_argument("dataset", help="a bundled name or a training file (XC text or LIBSVM)")
    p.add_argument("outdir", help="a new (or empty) folder")
    p.add_argument("--parts", type=int, required=True, help="number of part files (contiguous row ranges)")
    p.add_argument("--test", help="test file to keep beside the parts (default: the bundled or paired test split)")
    p.set_defaults(func=cmd_shard)

    p = sub.add_parser("train", help="train a solver; prints metrics on the test split")
    _add_solver_options(p, solver_options)
    p.add_argument("--out", help="save the model to this folder")
    p.add_argument("--records", help="write every iteration record to this JSON-lines file")
    p.add_argument("--json", action="store_true", help="print one JSON summary line instead of a table")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("spec", help="print a run spec (JSON) to edit and launch")
    _add_solver_options(p, solver_options)
    p.add_argument("--name", help="a name for the run")
    p.set_defaults(func=cmd_spec)

    home = argparse.ArgumentParser(add_help=False)
    home.add_argument("--home", help="the run store folder (default: $XCVIZ_HOME or ./xcviz-runs)")
    p = sub.add_parser("launch", parents=[home], help="start a background run from a spec file; prints its id")
    p.add_argument("spec", help="a run spec file (JSON), as `xcviz spec` prints")
    p.set_defaults(func=cmd_launch)
    p = sub.add_parser("estimate", help="predict a run's seconds, peak memory, model size and records: a "
                       "one-vs-all run's from a stratified sample of its labels, a multiclass run's from a slice of "
                       "its steps")
    p.add_argument("spec", help="a run spec file (JSON), as `xcviz spec` prints")
    p.add_argument("--sample", type=int, default=200, help="labels to train, drawn alike from ten groups by "
                                                          "positives (default 200)")
    p.add_argument("--slice", type=float, default=0.05, metavar="SHARE",
                   help="a multiclass run (memoir, ldgs, dsmlr): the share of its steps to train, at least 3 "
                        "(default 0.05)")
    p.add_argument("--workers", type=int, action="append", default=[], metavar="P",
                   help="also predict the seconds on P Dask workers (repeatable), by the cost model")
    p.add_argument("--json", action="store_true", help="print one JSON line with the keys of `train --json`")
    p.set_defaults(func=cmd_estimate)
    p = sub.add_parser("sweep", parents=[home], help="launch background runs of a spec file at several values "
                       "of one parameter; prints their ids, then their final metrics against it")
    p.add_argument("spec", help="a run spec file (JSON), as `xcviz spec` prints")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUES", required=True,
                   help="the parameter and its values: a list (C=0.1,1,10), lin:START:STOP:COUNT or "
                        "log:START:STOP:COUNT (C=log:0.01:100:5)")
    p.add_argument("--at-once", type=int, default=1, metavar="N",
                   help="runs training together (default 1: one after another, so each run's seconds are its "
                        "own); this command waits while more are left to launch")
    p.add_argument("--wait", action="store_true", help="wait for every run to end (implied unless --at-once covers "
                                                       "every value)")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("runs", parents=[home], help="list the runs of the store")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_runs)
    for name, func, text in (("cancel", cmd_cancel, "stop a run after its current block, keeping a partial model"),
                             ("resume", cmd_resume, "continue an interrupted, cancelled or failed run"),
                             ("wait", cmd_wait, "block until a run ends; prints its summary"),
                             ("delete", cmd_delete, "delete a run that is not running: records, weights, folder")):
        p = sub.add_parser(name, parents=[home], help=text)
        p.add_argument("run", help="the run's id, a unique start of it, or its name")
        if name == "wait":
            p.add_argument("--timeout", type=float, default=None, help="give up after this many seconds")
            p.add_argument("--json", action="store_true", help="one JSON line with the keys of `train --json`")
        p.set_defaults(func=func)

    p = sub.add_parser("report", parents=[home], help="write a standalone HTML report (+ CSV/JSON records) of runs")
    p.add_argument("runs", nargs="+", metavar="RUN", help="ids, unique starts of ids, or names")
    p.add_argument("-o", "--output", default="report.html", help="the HTML file (default report.html)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("serve", parents=[home], help="serve the dashboard at http://ADDRESS:PORT/dashboard")
    p.add_argument("--port", type=int, default=5006, help="port to listen on (default 5006)")
    p.add_argument("--address", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--data-dir", action="append", default=[], metavar="DIR",
                   help="a folder whose *_train.txt* files the dashboard offers (repeatable; the folders of "
                        "$XCVIZ_DATA_DIRS, separated by ':', are added)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="another Host name the page may be reached by, besides loopback names and --address "
                        "(repeatable); requests naming any other host get 403")
    p.add_argument("--allow-scheduler", action="append", default=[], metavar="ADDRESS",
                   help="a Dask scheduler (tcp://HOST:PORT or tls://HOST:PORT) the page may send runs to "
                        "(repeatable; default none). Only schedulers you trust: a scheduler can run code in "
                        "the runs' processes")
    p.add_argument("--basic-auth", metavar="FILE",
                   help="require a login: FILE (yours alone, chmod 600) holds the password, or a JSON object of "
                        "user: password; or set XCVIZ_PASSWORD. Never a password here: arguments are public")
    p.add_argument("--cookie-secret-file", metavar="FILE",
                   help="with a login: FILE (chmod 600) holds the secret that signs login cookies; or set "
                        "XCVIZ_COOKIE_SECRET (default: random for each server, so restarting logs everyone out)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("evaluate", help="evaluate a saved model on a bundled test split or a file")
    p.add_argument("model", help="model folder written by `xcviz train --out`")
    p.add_argument("dataset", help="a bundled name (its test split) or a file")
    p.add_argument("--threads", type=int, default=None, help="numba threads (default: all cores)")
    p.add_argument("--oracle", default=None, help="also predict a multi-class split with this margin oracle's "
                   "search over the model's classes (exact | random | simplelsh | hnsw | spherical, at its defaults): "
                   "its accuracy, agreement with the exact top class and microseconds per row beside exact's")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    p.set_defaults(func=cmd_evaluate)
    return parser


def _bounded(text: str, limit: int = ERROR_CHARS) -> str:
    """An error line of at most about `limit` characters: a value echoed from the command line or a
    file (a 100 kB --set value) keeps its start and end around a count of what was left out."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]} ... [{len(text) - 2 * keep} characters left out] ... {text[-keep:]}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(solver_options=bool({"train", "spec"} & set(words))).parse_args(argv)
    try:
        if isinstance(getattr(args, "dataset", None), str):
            args.dataset = _in_data_dirs(args.dataset)
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`xcviz runs | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0
    except _USER_ERRORS as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"xcviz: error: {_bounded(printable(message))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("xcviz: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
