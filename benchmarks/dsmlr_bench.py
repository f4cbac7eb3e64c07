"""DS-MLR benchmarks (`python benchmarks/run.py --only dsmlr`): time to 1% above L-BFGS's optimum.

Every mode (sync, async, lc, and L-BFGS itself) trains in its own process on the same problem, in
the same run, with 2 threads; the parent reads each run's (wall, objective) records and reports
when the objective first fell within 1% of the L-BFGS optimum. Problems: Bibtex-multiclass (every
row once per label) and the synthetic multiclass generator with K = 5,000 classes. A mode that does
not get there within its time budget is stopped and reported as such. The sync process also gives
the peak memory of training against data + 2 x W.

Sharded data on Dask (`SHARDED`): the same sync run on a LocalCluster of 2 workers, once with the
driver reading the data and scattering its row blocks, once from a sharded folder the workers read
themselves; the driver's peak memory (after the cluster and the JIT are warm) against the data's
size. The driver of the sharded run should hold only W, b and per-row label counts. Then both
again in one driver whose data segment is capped (RLIMIT_DATA, after its warm-up) below the
data's size (LIMIT_FRACTION): the sharded one must train to the same objective, the loaded one must fail reading.
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time

MODES = ("lbfgs", "sync", "async", "lc")
THREADS = 2
# name -> (generator arguments or a bundled name, lambda, alpha, outer iterations, budget seconds)
PROBLEMS = {
    "bibtex-multiclass": ("bibtex", 1e-3, 1500.0, 60, 150.0),
    # lambda 1e-4, the solver's default: at 1e-3 its optimum lay 1.56% under the start W = 0 (log K)
    # and every mode was within 1% after one outer iteration, on a problem with nothing to learn
    "synthetic K=5000": ({"n": 10_000, "d": 2_000, "labels": 5_000}, 1e-4, 1500.0, 40, 300.0),
    # issue 41: the barrier-free async against LC with K >= 10,000 (`crossover`: each mode stops at 1%)
    "synthetic K=10000": ({"n": 6_250, "d": 1_000, "labels": 10_000}, 1e-4, 1500.0, 40, 100.0),
}
CROSSOVER = "synthetic K=10000"  # run by bench_crossover only, each mode stopped once it reaches TARGET
TARGET = 0.01
# the sharded-data comparison: generator arguments, parts, sync parameters
SHARDED = ({"n": 200_000, "d": 1_000, "labels": 20}, 4, {"epochs": 2, "grid": 8, "lam": 1e-3, "alpha": 1500.0})
# the limited drivers may add this fraction of the training data's CSR size (the sharded driver
# holds b, the rows' label counts and the records' per-row statistics: O(rows), not O(non-zeros))
LIMIT_FRACTION = 0.5


def _problem(name: str):
    from xcviz.data import load
    from xcviz.data.synthetic import generate, split

    source = PROBLEMS[name][0]
    if isinstance(source, str):
        return load(source)
    ds = generate(**source, multiclass=True, zipf=0.0, avg_nnz=10, seed=0)
    return split(ds, 0.2, seed=0)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _reset_peak() -> None:
    """Start the peak-RSS count afresh (Linux: writing 5 to clear_refs resets VmHWM), so that the
    warm-up's and the data loading's peaks are not counted as training's."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def run_one(problem: str, mode: str, stop_at: float | None = None) -> dict:
    """Train one mode (in this process) with its time budget, or until its objective is at most
    `stop_at` (when given); returns its (wall, objective) curve."""
    import numpy as np

    from xcviz.api import evaluate
    from xcviz.records.sinks import MemorySink
    from xcviz.solvers.dsmlr.solver import DsmlrParams, fit_dsmlr

    train, test = _problem(problem)
    _, lam, alpha, epochs, budget = PROBLEMS[problem]
    params = dict(mode=mode, lam=lam, alpha=alpha, epochs=epochs if mode != "lbfgs" else 10 * epochs)
    fit_dsmlr(train.X[:300], train.Y[:300], DsmlrParams(**{**params, "epochs": 1, "alpha": 0.0}),  # JIT cache load,
              threads=THREADS)  # with the step the default gives 300 rows (the run's would diverge on them)
    sink = MemorySink()
    _reset_peak()
    before = _rss_mb()
    t0 = time.monotonic()
    model = fit_dsmlr(train.X, train.Y, DsmlrParams(**params), threads=THREADS, recorder=sink,
                      stop=lambda: time.monotonic() - t0 > budget or _reached(sink, stop_at))
    peak = _peak_mb()
    it = sink.frame("iteration").groupby("iteration").first()
    X = train.X
    data_mb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    return {"wall": it["wall"].tolist(), "objective": it["objective"].tolist(),
            "accuracy": evaluate(model, test, threads=THREADS)["accuracy"], "epochs": model.info["epochs_done"],
            "cancelled": model.info["cancelled"], "peak_extra_mb": peak - before, "data_mb": data_mb,
            "w_mb": model.info["w_memory_mb"], "budget": budget, "epoch_seconds": model.info["epoch_seconds"],
            "final": float(np.asarray(it["objective"])[-1])}


def _vm_data_mb() -> float:
    """The data segment (VmData: private writable mappings, the heap and numpy's arrays, what
    RLIMIT_DATA counts), in MB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmData")) / 1024


def limit_data(budget_mb: float) -> float:
    """Cap this process's data segment (RLIMIT_DATA, soft limit; the hard one is left alone) at its
    current size plus `budget_mb`; returns that current size, the baseline. Called once the driver
    is warm, so that Python, numpy/scipy, numba's LLVM and the loaded kernels, the Dask client's
    threads (each thread's stack counts) are the baseline and the budget is what training may add.
    Processes started before (the LocalCluster's workers) keep their own, unlimited segment."""
    import resource

    gc.collect()
    baseline = _vm_data_mb()
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (int((baseline + budget_mb) * 2**20), hard))
    return baseline


def run_driver(kinds: list[str], folder: str, limit_mb: float | None = None, sync: dict | None = None,
               address: str | None = None) -> dict:
    """DS-MLR sync on a LocalCluster(2) with this process as the driver, once per kind in order:
    `loaded` reads the sharded folder here and scatters it, `sharded` lets the workers read their
    row blocks. Peak RSS of the driver while training, counted after the cluster started and the
    kernels compiled. With `limit_mb`, the driver's data segment is then capped at its baseline
    plus `limit_mb` (`limit_data`): a kind that runs out of memory is reported with its error.
    sync: the sync parameters (SHARDED's by default). address: a running cluster's scheduler to
    connect to, instead of a LocalCluster of this process's own (whose scheduler would live here)."""
    from contextlib import ExitStack

    from distributed import Client, LocalCluster

    from xcviz.data.shards import open_shards
    from xcviz.solvers.dsmlr.solver import DsmlrParams, fit_dsmlr
    from xcviz.solvers.params import param_dict

    params = DsmlrParams(mode="sync", **(SHARDED[2] if sync is None else sync))
    out: dict = {}
    with ExitStack() as stack:
        if address is None:
            address = stack.enter_context(LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                       dashboard_address="127.0.0.1:0"))
        client = stack.enter_context(Client(address))
        warm = open_shards(folder).part(0)
        # the same run on 300 rows: what a driver costs without data (the grid's tasks, the kernels),
        # with the step the default gives 300 rows (the run's would diverge on them and fail)
        fit_dsmlr(warm.X[:300], warm.Y[:300], DsmlrParams(**{**param_dict(params), "alpha": 0.0}), threads=1,
                  cluster=client)
        del warm
        if limit_mb is not None:
            import resource

            out.update(limit_mb=limit_mb, baseline_data_mb=limit_data(limit_mb), baseline_rss_mb=_rss_mb(),
                       rlimit_data_mb=resource.getrlimit(resource.RLIMIT_DATA)[0] / 2**20)
        for kind in kinds:
            _reset_peak()
            before = _rss_mb()
            t0 = time.monotonic()
            try:
                if kind == "sharded":
                    model = fit_dsmlr(open_shards(folder), None, params, threads=1, cluster=client)
                else:
                    ds = open_shards(folder).dataset()
                    model = fit_dsmlr(ds.X, ds.Y, params, threads=1, cluster=client)
                    del ds
            except MemoryError as exc:
                out[kind] = {"error": f"MemoryError: {exc}", "data_mb_at_error": _vm_data_mb()}
                continue
            seconds = time.monotonic() - t0
            out[kind] = {"peak_extra_mb": _peak_mb() - before, "w_mb": model.info["w_memory_mb"],
                         "seconds": seconds, "objective": model.info["objective"], "n_rows": model.info["n_rows"],
                         "data_segment_mb": _vm_data_mb()}
            del model
    return out


def driver_process(kinds: list[str], folder: str, limit_mb: float | None = None, sync: dict | None = None) -> dict:
    """`run_driver` in a process of its own (a fresh peak count, and a limit that ends with it). A
    limited driver connects to a LocalCluster(2) started here: a LocalCluster's scheduler runs in
    the process that starts it, and under the driver's limit it would drop workers, not the driver
    run out of memory."""
    from contextlib import ExitStack

    from distributed import LocalCluster

    cmd = [sys.executable, __file__, "--driver", ",".join(kinds), folder, json.dumps(limit_mb), json.dumps(sync)]
    with ExitStack() as stack:
        if limit_mb is not None:
            cluster = stack.enter_context(LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                       dashboard_address="127.0.0.1:0"))
            cmd.append(json.dumps(cluster.scheduler_address))
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:  # the whole log (the cluster's warnings say why a worker left)
        print(run.stderr, file=sys.stderr)
        return {kind: {"error": (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[-1]} for kind in kinds}
    return json.loads(run.stdout.strip().splitlines()[-1])


def bench_sharded() -> dict:
    import tempfile

    from xcviz.data.shards import write_shards
    from xcviz.data.synthetic import generate

    ds = generate(**SHARDED[0], multiclass=True, zipf=0.0, avg_nnz=30, seed=0)
    data_mb = (ds.X.data.nbytes + ds.X.indices.nbytes + ds.X.indptr.nbytes) / 2**20
    with tempfile.TemporaryDirectory() as tmp:
        write_shards(ds, f"{tmp}/shards", SHARDED[1])
        del ds
        out = {"data_mb": data_mb}
        for kind in ("loaded", "sharded"):
            print(f"  dsmlr sharded data: driver {kind} ...", file=sys.stderr, flush=True)
            out[kind] = driver_process([kind], f"{tmp}/shards")[kind]
        limit = round(LIMIT_FRACTION * data_mb, 1)
        print(f"  dsmlr sharded data: drivers limited to {limit} MB ...", file=sys.stderr, flush=True)
        out["limited"] = driver_process(["sharded", "loaded"], f"{tmp}/shards", limit)
    return out


def _driver_rows(rows: list[tuple[str, dict]], data_mb: float) -> list[str]:
    out = []
    for name, x in rows:
        if "error" in x or not x:
            out.append(f"| {name} | failed: {x.get('error', 'not run')} | {data_mb:.1f} | | | |")
            continue
        out.append(f"| {name} | {x['peak_extra_mb']:.1f} | {data_mb:.1f} | {x['w_mb']:.2f} | "
                   f"{x['seconds']:.1f} | {x['objective']:.6f} |")
    return out


def limited_rows(limited: dict, data_mb: float) -> list[str]:
    """The table rows of the limited drivers (none when they were not run)."""
    if "limit_mb" not in limited:
        return []
    return _driver_rows([(f"{kind}, driver limited to {limited['limit_mb']:g} MB", limited.get(kind, {}))
                         for kind in ("sharded", "loaded")], data_mb)


def limited_text(limited: dict, data_mb: float, unlimited_objective: float | None) -> list[str]:
    """What the limited drivers show, with the limit's method."""
    if "limit_mb" not in limited:
        return []
    fit, load = limited.get("sharded", {}), limited.get("loaded", {})
    shown = [f"{x:.6f}" if x is not None else "" for x in (fit.get("objective"), unlimited_objective)]
    same = ("the objective of the unlimited sharded run (as shown; the test checks it to the bit)"
            if shown[0] == shown[1] else "NOT the objective of the unlimited run")
    return ["", f"Limited drivers (one process, sharded first, connected to a LocalCluster(2) of another process: "
            "a LocalCluster's scheduler lives in the process that starts it and would share the limit): after a "
            "warm-up fit of the "
            f"same run on 300 rows, the driver's data segment (VmData: heap, numpy arrays, thread stacks; what "
            f"RLIMIT_DATA counts) was {limited['baseline_data_mb']:.0f} MB (RSS {limited['baseline_rss_mb']:.0f} MB: "
            "Python, numpy/scipy, numba's LLVM and kernels, the Dask client); `setrlimit(RLIMIT_DATA)` then "
            f"capped it at that plus {limited['limit_mb']:g} MB, {limited['limit_mb'] / data_mb:.2f} x "
            "the training data. "
            + (f"The sharded driver trained within it ({fit['data_segment_mb'] - limited['baseline_data_mb']:.1f}"
               f" MB of the {limited['limit_mb']:g} in use at the end) to {same}; "
               if "objective" in fit else f"The sharded driver FAILED ({fit.get('error')}); ")
            + ("the loaded driver failed reading the data: " + load["error"] if "error" in load else
               "the loaded driver did NOT fail") + "."]


def render_sharded(r: dict) -> list[str]:
    gen, parts, params = SHARDED
    lines = ["### Sharded data on Dask: the driver's memory", "",
             f"`generate(n={gen['n']}, d={gen['d']}, labels={gen['labels']}, multiclass=True, avg_nnz=30)` "
             f"written by `xcviz shard` as {parts} parts; sync on a LocalCluster of 2 workers x 1 thread, "
             f"{params['epochs']} outer iterations, G = {params['grid']}. Driver peak RSS while training, counted "
             "after the cluster started and the kernels compiled. `loaded`: the driver reads the parts and "
             "scatters the row blocks; `sharded`: each worker reads its own.", "",
             "| driver | peak extra RSS MB | data MB (CSR) | W MB | train s | objective |", "|---|---|---|---|---|---|"]
    limited = r.get("limited", {})
    lines += _driver_rows([("loaded", r.get("loaded", {})), ("sharded", r.get("sharded", {}))], r["data_mb"])
    lines += limited_rows(limited, r["data_mb"])
    sharded, loaded = r.get("sharded", {}), r.get("loaded", {})
    if "peak_extra_mb" in sharded and "peak_extra_mb" in loaded:
        same = "the same" if sharded["objective"] == loaded["objective"] else "NOT the same"
        lines += ["", f"The sharded driver's peak is {sharded['peak_extra_mb']:.1f} MB against {r['data_mb']:.1f} MB "
                  f"of data ({sharded['peak_extra_mb'] / r['data_mb']:.2f} x; the loaded driver "
                  f"{loaded['peak_extra_mb'] / r['data_mb']:.2f} x); {same} objective."]
    lines += limited_text(limited, r["data_mb"], sharded.get("objective"))
    return lines + [""]


def _reached(sink, level: float | None) -> bool:
    """Whether the last record's objective is at most `level` (never, without one)."""
    if level is None:
        return False
    frame = sink.frame("iteration")
    return bool(len(frame)) and float(frame["objective"].iloc[-1]) <= level


def _child(problem: str, mode: str, stop_at: float | None = None) -> dict:
    out = subprocess.run([sys.executable, __file__, problem, mode, json.dumps(stop_at)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_to(r: dict, level: float) -> float | None:
    """The first recorded wall time with objective <= level, or None."""
    for wall, objective in zip(r["wall"], r["objective"]):
        if objective <= level:
            return wall
    return None


def bench_dsmlr() -> dict:
    results = {}
    for problem in (name for name in PROBLEMS if name != CROSSOVER):
        results[problem] = {}
        for mode in MODES:  # L-BFGS first: its optimum is every mode's target
            print(f"  dsmlr {problem} {mode} ...", file=sys.stderr, flush=True)
            results[problem][mode] = _child(problem, mode)
    results["sharded"] = bench_sharded()
    results["crossover"] = bench_crossover()
    return results


def bench_crossover() -> dict:
    """Issue 41: on CROSSOVER (K = 10,000), L-BFGS's optimum first, then async, sync and LC, each
    stopped as soon as a record is within TARGET of it (or at its budget); with the load average."""
    rows = {"lbfgs": _child(CROSSOVER, "lbfgs")}
    level = rows["lbfgs"]["final"] * (1 + TARGET) if "final" in rows["lbfgs"] else None
    for mode in ("async", "sync", "lc"):
        print(f"  dsmlr {CROSSOVER} {mode} ...", file=sys.stderr, flush=True)
        rows[mode] = _child(CROSSOVER, mode, level)
    return {"rows": rows, "level": level, "load": os.getloadavg()}


def render_crossover(r: dict) -> list[str]:
    """The K = 10,000 table: seconds to 1% above L-BFGS's optimum and seconds per outer iteration,
    which the cost model of docs/families/dsmlr.md turns into a crossover."""
    gen, lam, alpha, _, budget = PROBLEMS[CROSSOVER]
    rows, level = r["rows"], r["level"]
    lines = [f"### {CROSSOVER}: async without a barrier against LC (issue 41)", "",
             f"`generate(n={gen['n']}, d={gen['d']}, labels={gen['labels']}, multiclass=True, zipf=0, avg_nnz=10)`, "
             f"80/20 split, lambda {lam:g}, alpha {alpha:g}, G = 16, {THREADS} threads; each mode in its own process, "
             f"stopped at its first record within 1% of the L-BFGS optimum or after {budget:.0f} s. Load average "
             f"{r['load'][0]:.1f} / {r['load'][1]:.1f} (1 / 5 min) on 2 cores when it ended.", "",
             "| mode | seconds to 1% | outer iterations run | s / iteration | last objective |", "|---|---|---|---|---|"]
    for mode, x in rows.items():
        if "error" in x:
            lines.append(f"| {mode} | failed: {x['error']} | | | |")
            continue
        reach = time_to(x, level) if level is not None else None
        lines.append(f"| {mode} | {_fmt(reach, x)} | {x['epochs']} | {x['epoch_seconds']:.2f} | {x['final']:.6f} |")
    return lines + [""]


def _fmt(seconds: float | None, r: dict) -> str:
    return f"{seconds:.1f}" if seconds is not None else f"not within {r['budget']:.0f} s"


def render(results: dict) -> list[str]:
    lines = ["## DS-MLR: time to 1% above the L-BFGS optimum", "",
             f"Every mode in its own process, {THREADS} threads, the same run; lambda and alpha per problem below, "
             "G = 16, time budget per mode (a mode stopped by it is marked). Bibtex-multiclass: every row once per "
             "label (11,616 training copies, K = 159); synthetic: `generate(n=10000, d=2000, labels=5000, "
             "multiclass=True, zipf=0, avg_nnz=10)`, 80/20 split. One run each; the load average when the section "
             f"ended: {os.getloadavg()[0]:.1f} on 2 cores (the bench itself takes about 2): above that, other "
             "jobs shared the machine and only the same-run ratios mean much.", ""]
    checks = []
    sharded = results.pop("sharded", None)
    crossover = results.pop("crossover", None)
    for problem, rows in results.items():
        _, lam, alpha, _, _ = PROBLEMS[problem]
        best = rows.get("lbfgs", {}).get("final")
        lines += [f"### {problem} (lambda {lam:g}, alpha {alpha:g})", "",
                  f"L-BFGS optimum: {best:.6f}" if best is not None else "L-BFGS failed", "",
                  "| mode | seconds to 1% | outer iterations run | s / iteration | final objective | rel. to optimum "
                  "| test accuracy % | peak extra RSS MB |", "|---|---|---|---|---|---|---|---|"]
        reach = {}
        for mode, r in rows.items():
            if "error" in r:
                lines.append(f"| {mode} | failed: {r['error']} | | | | | | |")
                continue
            reach[mode] = time_to(r, best * (1 + TARGET)) if best is not None else None
            rel = (r["final"] - best) / abs(best) if best is not None else float("nan")
            lines.append(f"| {mode} | {_fmt(reach[mode], r)} | {r['epochs']} | {r['epoch_seconds']:.2f} | "
                         f"{r['final']:.6f} | {rel:.2e} | {r['accuracy']:.2f} | {r['peak_extra_mb']:.0f} |")
        lines.append("")
        lc = reach.get("lc")
        lc_text = "LC did not get there within its budget" if lc is None else f"LC {lc:.1f} s"
        for mode in ("sync", "async"):
            t = reach.get(mode)
            if t is None:
                checks.append(f"- {problem}: {mode} did not reach 1% within its budget (target faster than LC: NOT met)")
                continue
            met = lc is None or t < lc
            ratio = "" if lc is None else f", {lc / t:.1f}x"
            checks.append(f"- {problem}: {mode} {t:.1f} s vs {lc_text}{ratio} (target faster than LC, paper 17-27x: "
                          f"{'met' if met else 'NOT met'})")
        if reach.get("sync") is not None and reach.get("async") is not None:
            s, a = reach["sync"], reach["async"]
            checks.append(f"- {problem}: async {a:.1f} s vs sync {s:.1f} s on {THREADS} threads (target async not "
                          f"slower: {'met' if a <= s else 'NOT met'})")
        sync = rows.get("sync", {})
        if "peak_extra_mb" in sync:
            bound = sync["data_mb"] + 2 * sync["w_mb"]
            checks.append(f"- {problem}: peak extra memory of sync {sync['peak_extra_mb']:.1f} MB vs data "
                          f"{sync['data_mb']:.1f} MB + 2 x W {2 * sync['w_mb']:.1f} MB = {bound:.1f} MB (target at most: "
                          f"{'met' if sync['peak_extra_mb'] <= bound else 'NOT met'})")
    if crossover is not None:
        lines += render_crossover(crossover)
    if sharded is not None:
        lines += render_sharded(sharded)
    lines += ["### Targets", ""] + checks + [""]
    return lines


def rerun_limited(out: str) -> None:
    """Run only the limited drivers and add their rows and text to the sharded part of `out`,
    keeping its other rows (from a quieter run than this may be)."""
    import re
    import tempfile
    from pathlib import Path

    from xcviz.data.shards import write_shards
    from xcviz.data.synthetic import generate

    ds = generate(**SHARDED[0], multiclass=True, zipf=0.0, avg_nnz=30, seed=0)
    data_mb = (ds.X.data.nbytes + ds.X.indices.nbytes + ds.X.indptr.nbytes) / 2**20
    with tempfile.TemporaryDirectory() as tmp:
        write_shards(ds, f"{tmp}/shards", SHARDED[1])
        del ds
        limited = driver_process(["sharded", "loaded"], f"{tmp}/shards", round(LIMIT_FRACTION * data_mb, 1))
    text = Path(out).read_text()
    start = text.index("### Sharded data on Dask")
    end = text.index("### Targets", start)
    part = text[start:end].splitlines()
    part = [line for line in part if "driver limited to" not in line and not line.startswith(("Limited drivers",
                                                                                                "(The limited"))]
    row = next(i for i, line in enumerate(part) if line.startswith("| sharded |"))
    objective = float(part[row].rstrip(" |").rsplit("|", 1)[1])
    part[row + 1:row + 1] = limited_rows(limited, data_mb)
    while part and not part[-1].strip():
        part.pop()
    part += limited_text(limited, data_mb, objective) + [
        "", f"(The limited drivers rerun alone on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
        f"{os.getloadavg()[0]:.1f} on 2 cores: their train seconds are not comparable with the rows above.)", ""]
    Path(out).write_text(text[:start] + re.sub(r"\n{3,}", "\n\n", "\n".join(part) + "\n") + text[end:])


if __name__ == "__main__":
    if sys.argv[1] == "--limited-into":  # python benchmarks/dsmlr_bench.py --limited-into BENCHMARKS.md
        rerun_limited(sys.argv[2])
    elif sys.argv[1] == "--crossover":  # python benchmarks/dsmlr_bench.py --crossover: the K = 10,000 table only
        print("\n".join(render_crossover(bench_crossover())))
    elif sys.argv[1] == "--driver":
        print(json.dumps(run_driver(sys.argv[2].split(","), sys.argv[3], *map(json.loads, sys.argv[4:7]))))
    else:
        print(json.dumps(run_one(*sys.argv[1:3], *map(json.loads, sys.argv[3:4]))))
