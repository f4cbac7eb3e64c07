"""`make bench`: time xcviz against the reference in the same run and write BENCHMARKS.md.

For Bibtex and Delicious: the liblinear-official `-s 2` per-label loop (1 thread) and the Newton
solver with each initialiser (2 threads), medians of several runs, ratios against LIBLINEAR and
against zero initialisation, P@k beside; the cost of recording; peak memory of a training process
against data + model; the synthetic generator at Amazon-670K shape / 10. Machines here are noisy:
read the ratios, not the seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

from dsmlr_bench import bench_dsmlr
from dsmlr_bench import render as render_dsmlr
from ldgs_bench import MARGIN_CHECK, MARGIN_HEADING, bench_ldgs, bench_many_rows, render_many_rows
from ldgs_bench import bench_margin, render_margin
from ldgs_bench import render as render_ldgs
from memoir import MARGIN_CONTENDERS, bench_memoir, bench_parts, render_parts
from memoir import render as render_memoir
from margin_data import bench as bench_margin_data
from margin_data import render as render_margin_data
from memoir_predict import bench_predict
from memoir_predict import render as render_predict
from memoir_predict import SIZES
from memoir_predict import section as predict_section
from peers import bench_peers
from peers import render as render_peers
from ppdsparse_bench import section as ppdsparse_section
from ppdsparse_scaling import LABELS as SCALING_LABELS
from ppdsparse_scaling import SIZES as SCALING_SIZES
from ppdsparse_scaling import save as save_scaling
from ppdsparse_scaling import section as scaling_section
from shared import load_average
from targets import target_rows
from xcviz import metrics
from xcviz.data import load
from xcviz.data.synthetic import generate
from xcviz.data.transforms import l2_normalize
from xcviz.testing.reference import liblinear_ova
from xcviz.records.sinks import MemorySink, NullSink
from xcviz.runs.store import RunStore, SqliteSink
from xcviz.solvers.dismec import INITS, DismecParams, fit_dismec
from xcviz.solvers.ppdsparse import PPDSparseParams, fit_ppdsparse

THREADS = 2
PPDSPARSE_RUNS = {"ppdsparse": PPDSparseParams(), "ppdsparse, lam 1": PPDSparseParams(lam=1.0)}
# the authors' C++ PPDSparse (MPI, 2 threads, lam 0.1) on this kind of machine, from GUIDE.md: not rerun here
PPDSPARSE_CPP_SECONDS = {"bibtex": 5.9, "delicious": 43.1}


def _median_time(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def _pk(Y, topk) -> list[float]:
    return [100 * metrics.precision_at_k(Y, topk, k) for k in (1, 3, 5)]


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(),
            **{pkg: version(pkg) for pkg in ("numpy", "scipy", "numba", "liblinear-official")}}


def bench_dataset(name: str, repeats: int) -> dict:
    train, test = load(name)
    Xn = l2_normalize(train.X)
    t_ll, (W, b) = _median_time(lambda: liblinear_ova(Xn, train.Y), repeats)
    scores = np.asarray(l2_normalize(test.X) @ W.T) + b[None, :]
    ll_topk = np.argsort(-scores, axis=1, kind="stable")[:, :5]
    rows = {"liblinear": {"seconds": t_ll, "p@k": _pk(test.Y, ll_topk), "nnz": int(np.count_nonzero(W))}}
    for init in INITS:
        params = DismecParams(init=init)
        fit_dismec(train.X, train.Y, params, threads=THREADS)  # warm-up: JIT cache load
        t, model = _median_time(lambda p=params: fit_dismec(train.X, train.Y, p, threads=THREADS), repeats)
        topk, _ = model.predict_topk(test.X, k=5)
        rows[init] = {"seconds": t, "p@k": _pk(test.Y, topk), "nnz": model.nnz,
                      "iterations": model.info["newton_iterations"]}
    rows["msi"]["unpruned_nnz"] = fit_dismec(train.X, train.Y, DismecParams(prune_threshold=0.0), threads=THREADS).nnz
    for key, params in PPDSPARSE_RUNS.items():
        fit_ppdsparse(train.X, train.Y, params, threads=THREADS)
        t, model = _median_time(lambda p=params: fit_ppdsparse(train.X, train.Y, p, threads=THREADS), repeats)
        topk, _ = model.predict_topk(test.X, k=5)
        rows[key] = {"seconds": t, "p@k": _pk(test.Y, topk), "nnz": model.nnz,
                     "iterations": model.info["outer_iterations"]}
    return rows


def bench_recording(name: str, repeats: int) -> dict:
    """MSI with recording off, with the null sink, the memory sink and the SQLite run store (a
    background run's sink, writing each block's records as one batch), interleaved."""
    train, _ = load(name)
    params = DismecParams(init="msi")
    with tempfile.TemporaryDirectory() as home:
        store = RunStore(home)
        sinks = {"off": lambda: None, "null sink": NullSink, "memory sink": MemorySink,
                 "SQLite run store": lambda: SqliteSink(store, store.create("{}", "bench"))}
        times = {key: [] for key in sinks}
        for _ in range(repeats):
            for key, make in sinks.items():
                recorder = make()
                t = time.perf_counter()
                fit_dismec(train.X, train.Y, params, threads=THREADS, recorder=recorder)
                times[key].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


_MEMORY_PROBE = """
import json, os, sys, threading, time
from xcviz.data import load
from xcviz.solvers.dismec import DismecParams, fit_dismec
PAGE = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE
train, _ = load(sys.argv[1])
fit_dismec(train.X[:50], train.Y[:50], DismecParams(), threads=2)
peak, done = [rss()], threading.Event()
def poll():
    while not done.is_set():
        peak.append(rss())
        time.sleep(0.0005)
base = rss()
poller = threading.Thread(target=poll)
poller.start()
model = fit_dismec(train.X, train.Y, DismecParams(), threads=2)
done.set()
poller.join()
data = sum(a.nbytes for m in (train.X, train.Y) for a in (m.data, m.indices, m.indptr))
w = model.weights
print(json.dumps({"peak_extra_mb": (max(peak) - base) / 2**20, "data_mb": data / 2**20,
                  "model_mb": (w.data.nbytes + w.indices.nbytes + w.indptr.nbytes + model.bias_weights.nbytes) / 2**20}))
"""


def bench_memory(name: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, name], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_generator(repeats: int) -> float:
    t, _ = _median_time(lambda: generate(49_000, 13_600, 67_000, avg_labels=5.45, avg_nnz=75.7, seed=0), repeats)
    return t


def targets(results: dict, recording: dict, memory: dict) -> list[str]:
    """The foundation issue's targets, met or not, from the numbers of this run."""
    bib, deli = results["bibtex"], results["delicious"]

    def ratio(rows, a, b):
        return rows[a]["seconds"] / rows[b]["seconds"]

    def pk_gap(rows):
        return max(abs(x - y) for x, y in zip(rows["msi"]["p@k"], rows["liblinear"]["p@k"]))

    checks = [
        ("Bibtex: MSI (2 threads) vs LIBLINEAR loop", ratio(bib, "liblinear", "msi"), 4.5, "x",
         "7x is the moonshot; DiSMEC++ built here: its own section"),
        ("Delicious: MSI (2 threads) vs LIBLINEAR loop", ratio(deli, "liblinear", "msi"), 4.0, "x",
         "DiSMEC++ built here: its own section"),
        ("Delicious: MSI vs zero initialisation", ratio(deli, "zero", "msi"), 1.6, "x", ""),
        ("Bibtex: largest P@1/3/5 gap, MSI vs LIBLINEAR (points)", pk_gap(bib), 0.5, " max", ""),
        ("Delicious: largest P@1/3/5 gap, MSI vs LIBLINEAR (points)", pk_gap(deli), 0.5, " max", ""),
        ("Null sink vs recording off (%)", 100 * (recording["null sink"] / recording["off"] - 1), 5.0, " max", ""),
        ("SQLite run store vs recording off (%)", 100 * (recording["SQLite run store"] / recording["off"] - 1), 5.0,
         " max", "the sink of every background run"),
    ]
    for name, rows in results.items():
        cpp = PPDSPARSE_CPP_SECONDS[name]
        for key in PPDSPARSE_RUNS:
            r = rows[key]
            shortfall = max(y - x for x, y in zip(r["p@k"], rows["msi"]["p@k"]))
            gap = max(abs(x - y) for x, y in zip(r["p@k"], rows["msi"]["p@k"]))
            checks += [
                (f"{name}: {key} vs the authors' C++ ({cpp} s, GUIDE.md)", cpp / r["seconds"], 5.0, "x",
                 "the C++ time is the GUIDE's measurement, not rerun"),
                (f"{name}: {key}, largest P@1/3/5 shortfall against Newton MSI (points)", shortfall, 0.5, " max",
                 f"largest difference either way: {gap:.2f}"),
                (f"{name}: {key}, Newton's unpruned nnz / model nnz", rows["msi"]["unpruned_nnz"] / r["nnz"], 3.0,
                 "x", ""),
            ]
    checks += [(f"{name}: extra peak memory / (data + model)", r["peak_extra_mb"] / (r["data_mb"] + r["model_mb"]),
                2.0, " max", "") for name, r in memory.items()]
    return target_rows(checks)


def dataset_table(name: str, rows: dict, note: str = "") -> list[str]:
    """The `## name` section: LIBLINEAR, every initialiser and PPDSparse, ratios from this run."""
    ll = rows["liblinear"]["seconds"]
    zero = rows["zero"]["seconds"]
    lines = [f"## {name}", "", *([note, ""] if note else []),
             "| solver | train s (median) | speed-up vs LIBLINEAR | speed-up vs zero init | iterations (Newton / PPDSparse outer) | P@1 | P@3 | P@5 | model nnz |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key, r in rows.items():
        label = ("LIBLINEAR -s 2 loop (1 thread)" if key == "liblinear" else
                 f"xcviz {key}" if key.startswith("ppdsparse") else f"xcviz dismec, {key} init")
        vs_zero = "" if key == "liblinear" or key.startswith("ppdsparse") else f"{zero / r['seconds']:.2f}x"
        p = " | ".join(f"{v:.2f}" for v in r["p@k"])
        lines.append(f"| {label} | {r['seconds']:.3f} | {ll / r['seconds']:.2f}x | {vs_zero} | "
                     f"{r.get('iterations', '')} | {p} | {r['nnz']} |")
    return lines + [""]


def render(m: dict, results: dict, recording: dict, memory: dict, gen_seconds: float, repeats: int,
           full_run: str | None = None) -> str:
    """The file's first sections; full_run: the date of the full `make bench` the later sections come
    from, when these alone are rerun (`--only core`)."""
    now = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    written = (f"Written by `make bench` (`benchmarks/run.py`) on {now}. " if full_run is None else
               f"Written by `benchmarks/run.py --only core` on {now}; the sections from \"Side by side with "
               f"DiSMEC++\" on are from the full `make bench` of {full_run}. ")
    lines = ["# Benchmarks", "",
             written + f"Medians of {repeats} runs; every ratio compares runs made in this same process, one after "
             "the other. Machines here are noisy: read the ratios, not the seconds.", "",
             "## Machine", ""]
    lines += [f"- {k}: {v}" for k, v in m.items()]
    lines += ["", "Setting: Mulan splits, squared hinge, C = 1, eps = 0.01, bias 1 unregularised, rows L2-normalised, "
              f"weights below 0.01 pruned (xcviz). LIBLINEAR: liblinear-official `-s 2 -c 1 -e 0.01 -B 1 -R`, one "
              f"binary problem per label, 1 thread, problem built once. xcviz: {THREADS} threads.", ""]
    for name, rows in results.items():
        lines += dataset_table(name, rows)
    lines += targets(results, recording, memory)
    off = recording["off"]
    lines += ["## Cost of recording (Delicious, MSI)", "",
              "| recorder | train s (median) | vs recording off |", "|---|---|---|"]
    lines += [f"| {k} | {v:.3f} | {100 * (v / off - 1):+.1f}% |" for k, v in recording.items()]
    lines += ["", "## Peak memory of training (MSI, 2 threads)", "",
              "Peak resident memory during a training call (sampled every 0.5 ms) minus the resident memory just "
              "before it (data loaded, JIT warm), against the size of the data (CSR X and Y) plus the model.", "",
              "| data set | extra peak MB | data MB | model MB | extra / (data + model) |", "|---|---|---|---|---|"]
    for name, r in memory.items():
        lines.append(f"| {name} | {r['peak_extra_mb']:.1f} | {r['data_mb']:.1f} | {r['model_mb']:.1f} | "
                     f"{r['peak_extra_mb'] / (r['data_mb'] + r['model_mb']):.2f} |")
    lines += ["", "## Synthetic generator", "",
              f"Amazon-670K shape / 10 (n 49,000, d 13,600, 67,000 labels, 5.45 labels and 75.7 non-zeros per row): "
              f"{gen_seconds:.2f} s (median).", ""]
    return "\n".join(lines)


def bench_core(repeats: int, full_run: str | None = None) -> str:
    """The sections `render` writes: Newton and PPDSparse against LIBLINEAR, recording, memory, generator."""
    results = {}
    for name in ("bibtex", "delicious"):
        print(f"benchmarking {name} ...", file=sys.stderr)
        results[name] = bench_dataset(name, repeats)
    print("benchmarking recording, memory, generator ...", file=sys.stderr)
    recording = bench_recording("delicious", repeats)
    memory = {name: bench_memory(name) for name in ("bibtex", "delicious")}
    return render(machine(), results, recording, memory, bench_generator(3), repeats, full_run) + "\n"


# Sections other scripts measure (benchmarks/profile_newton.py, kernel_loading.py, thread_scaling.py)
# and the notes that read them: a run of this file keeps them, after DiSMEC++ side by side.
KEPT = ("### Issue 16's targets", "## Where the time goes", "## Kernel loading of", "## Thread scaling")
# a generated section's hand-written subsection (a profile made once, by hand): kept after the section
DASK_NOTES = "### Where a Dask run's time went"


def _kept(old: str, headings: tuple[str, ...] = KEPT) -> str:
    """The sections `headings` of an earlier BENCHMARKS.md, each up to the next heading of its level or above."""
    out = []
    for heading in headings:
        start = old.find(f"\n{heading}")
        if start < 0:
            continue
        level = heading.split(" ", 1)[0]
        stops = [old.find(f"\n{h} ", start + 1) for h in ("#", "##", "###")[:len(level)]]
        end = min([x for x in stops if x >= 0], default=len(old))
        out.append(old[start + 1:end + 1])
    return "".join(out)


def _scaling(values: tuple[int, ...], axis: str) -> list[str]:
    """PPDSparse's scaling section in N or K; its measurements saved for docs/scaling_figure.py."""
    lines, results = scaling_section(values, axis)
    save_scaling(results, axis)
    return lines


def _margin_parts() -> list[str]:
    """MEMOIR's epoch split on lshtc1-margin at C = 20,000, where the class of the margin matters."""
    before = load_average()
    results = bench_parts("lshtc1-margin C=20k", MARGIN_CONTENDERS)
    return render_parts(results, "lshtc1-margin C=20k", f"{before} before, {load_average()} after")


def _memoir_subsection(old: str, lines: list[str]) -> str:
    """The text `old` with a subsection of MEMOIR's section (`lines`, its heading first) in place, or
    before the section's Targets when it is new."""
    if lines[0] in old:  # up to the next heading, of a subsection or of the next section
        start = old.index(lines[0])
        end = min(i for i in (old.find("\n### ", start + 1), old.find("\n## ", start + 1), len(old) - 1) if i >= 0) + 1
    else:
        start = end = old.index("### Targets", old.index("## MEMOIR"))
    return old[:start] + "\n".join(lines) + "\n" + old[end:]


def _ldgs_subsection(old: str, lines: list[str], heading: str, checks: list[str], check_start: str) -> str:
    """The text `old` with a subsection of LDGS's section (`lines`; its heading starts with `heading`) in
    place, up to the next heading, or just before the section's Targets when it is new; and with its
    target lines `checks` first in that Targets list, in place of the list's lines that start with
    `check_start`."""
    ldgs = old.index("## LDGS: gradient estimators")
    targets = old.index("### Targets", ldgs)
    start = old.find(f"\n{heading}", ldgs, targets) + 1
    end = targets if start == 0 else min(old.index("\n### ", start), targets - 1) + 1
    start = start or targets
    stop = min(i for i in (old.find("\n### ", targets + 1), old.find("\n## ", targets + 1), len(old)) if i >= 0)
    kept = [line for line in old[targets:stop].split("\n") if not line.startswith(check_start)]
    listed = "\n".join(kept).replace("### Targets\n\n", "### Targets\n\n" + "".join(c + "\n" for c in checks), 1)
    return old[:start] + "\n".join(lines) + "\n" + old[end:targets] + listed + old[stop:]


def _replace_section(out: Path, name: str, repeats: int = 5) -> None:
    """Rerun one section (the bibtex and delicious tables, DiSMEC++ side by side, LDGS, MEMOIR, DS-MLR,
    Dask, or the dashboard's, which ends the file) and put it in place."""
    old = out.read_text()
    if name == "core":  # from the top to DiSMEC++ side by side
        full_run = re.search(r"(?:full `make bench` of|\(`benchmarks/run.py`\) on) (\d{4}-\d\d-\d\d \d\d:\d\d UTC)", old)
        text = bench_core(repeats, full_run.group(1) if full_run else "an earlier date")
        out.write_text(text + old[old.index("## Side by side with DiSMEC++"):])
        return
    if name == "dismec":  # the ## bibtex and ## delicious tables, each in place (the Targets table stays)
        for dataset in ("bibtex", "delicious"):
            load_before = load_average()
            rows = bench_dataset(dataset, repeats)
            lines = dataset_table(dataset, rows, f"Rerun alone (`--only dismec`) on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                                  f"medians of {repeats}, load average (1 / 5 / 15 min) {load_before} before and "
                                  f"{load_average()} after (above about 2, other jobs shared the machine): compare rows of this table only; the Targets "
                                  "table below is from the last full `make bench`.")
            old = out.read_text()
            start = old.index(f"\n## {dataset}\n") + 1
            end = old.index("\n## ", start + 1) + 1
            out.write_text(old[:start] + "\n".join(lines) + "\n" + old[end:])
        return
    if name == "dismecpp":  # its own subsections (the kept "### Issue 16's targets" stays after them)
        lines = render_peers(bench_peers(repeats), repeats, load_average())
        start = old.find(lines[0])
        if start >= 0:
            kept = old.find(f"\n{KEPT[0]}", start)
            end = (kept if 0 <= kept < old.index("\n## ", start + 1) else old.index("\n## ", start + 1)) + 1
        else:
            start = end = old.index("## LDGS")
        out.write_text(old[:start] + "\n".join(lines) + "\n" + old[end:])
        return
    if name in ("ppdsparse", "ppdsparse-scaling", "ppdsparse-scaling-k"):  # benchmarks/ppdsparse_*.py, before LDGS's
        lines = (ppdsparse_section("bench", min(repeats, 3)) if name == "ppdsparse" else
                 _scaling(SCALING_SIZES, "n") if name == "ppdsparse-scaling" else _scaling(SCALING_LABELS, "K"))
        start = old.find(lines[0])
        end = old.index("\n## ", start + 1) + 1 if start >= 0 else old.index("## LDGS")
        start = end if start < 0 else start
        out.write_text(old[:start] + "\n".join(lines) + "\n" + old[end:])
        return
    if name == "ldgs":  # placed before MEMOIR's section; the header's date of the LDGS rerun follows
        lines = render_ldgs(bench_ldgs())
        marker = lines[0] if lines[0] in old else "## MEMOIR: margin oracles"
        start, end = old.index(marker), old.index("## MEMOIR: margin oracles")
        head = re.sub(r"(LDGS \(`--only ldgs`\) on )\d{4}-\d\d-\d\d \d\d:\d\d UTC",
                      lambda m: m.group(1) + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), old[:start], count=1)
        out.write_text(head + "\n".join(lines) + "\n" + old[end:])
        return
    if name == "ldgs-rows":  # LDGS's many-rows subsection and its target line, in place (else before its Targets)
        lines, check = render_many_rows(bench_many_rows())
        out.write_text(_ldgs_subsection(out.read_text(), lines, "### Many rows", [check], "- many rows ("))
        return
    if name == "ldgs-margin":  # LDGS on lshtc1-margin at C = 20,000 and its target lines, the same way
        lines, checks = render_margin(bench_margin())
        out.write_text(_ldgs_subsection(out.read_text(), lines, MARGIN_HEADING, checks, MARGIN_CHECK))
        return
    if name == "memoir-predict":  # benchmarks/memoir_predict.py, one subsection per size
        for classes in SIZES:
            out.write_text(_memoir_subsection(out.read_text(), render_predict(bench_predict(classes))))
        return
    if name == "memoir-parts":
        before = load_average()
        out.write_text(_memoir_subsection(old, render_parts(bench_parts(), "synthetic C=100k",
                                                            f"{before} before, {load_average()} after")))
        return
    if name == "memoir-margin":
        out.write_text(_memoir_subsection(old, _margin_parts()))
        return
    if name == "margin-data":  # benchmarks/margin_data.py
        out.write_text(_memoir_subsection(old, render_margin_data(bench_margin_data())))
        return
    if name == "memoir":
        lines = render_memoir(bench_memoir()) + render_parts(bench_parts(), "synthetic C=100k", load_average())
        lines += _margin_parts() + render_margin_data(bench_margin_data()) + predict_section()
        start = old.index(lines[0])
        end = next(old.index(h) for h in ("## DS-MLR: time", "## Dask\n", "## Dashboard responsiveness") if h in old)
    elif name == "dsmlr":  # its own section, after MEMOIR's
        lines = render_dsmlr(bench_dsmlr())
        end = next(old.index(h) for h in ("## Dask\n", "## Dashboard responsiveness") if h in old)
        start = old.index(lines[0]) if lines[0] in old else end
    elif name == "presets":  # benchmarks/presets_bench.py, beside this file; just before the estimates
        lines = __import__("presets_bench").section()
        end = old.index("## Estimates before a run")
        start = old.index(lines[0]) if lines[0] in old else end
    elif name == "estimate":  # benchmarks/estimate_bench.py, beside this file; before the records' and the dashboard's
        lines = __import__("estimate_bench").run()
        end = next(old.index(h) for h in ("## Records at scale", "## Dashboard responsiveness") if h in old)
        start = old.index(lines[0]) if lines[0] in old else end
    elif name == "records":  # benchmarks/records_scale.py, beside this file; just before the dashboard's
        lines = __import__("records_scale").section()
        end = old.index("## Dashboard responsiveness")
        start = old.index(lines[0]) if lines[0] in old else end
    elif name == "dask":  # benchmarks/dask_bench.py, beside this file; its section precedes the dashboard's
        lines = __import__("dask_bench").section(repeats)
        end = old.index("## Dashboard responsiveness")
        start = old.index(lines[0]) if lines[0] in old else end
        notes = old.find(f"\n{DASK_NOTES}", start)
        end = notes + 1 if 0 <= notes < end else end
    else:
        lines = __import__("dashboard").section()  # benchmarks/dashboard.py, beside this file
        start, end = old.index(lines[0]), len(old)
    out.write_text(old[:start] + "\n".join(lines) + ("\n\n" if name in ("memoir", "dsmlr", "dask", "presets", "estimate",
                                                                        "records") else "\n")
                   + old[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=["core", "ldgs", "ldgs-rows", "ldgs-margin", "memoir", "memoir-predict", "memoir-margin", "margin-data", "dsmlr", "dashboard", "dask", "estimate", "records",
                                           "presets", "dismecpp", "dismec",
                                           "memoir-parts", "ppdsparse", "ppdsparse-scaling", "ppdsparse-scaling-k"],
                        help="rerun only this section and replace it in the existing --out file")
    args = parser.parse_args()
    if args.only:
        _replace_section(Path(args.out), args.only, args.repeats)
        return
    print("benchmarking MEMOIR oracles ...", file=sys.stderr)
    memoir_lines = render_memoir(bench_memoir()) + render_parts(bench_parts(), "synthetic C=100k", load_average())
    memoir_lines += _margin_parts() + render_margin_data(bench_margin_data()) + predict_section()
    print("benchmarking DS-MLR modes ...", file=sys.stderr)
    memoir_lines += render_dsmlr(bench_dsmlr())
    print("benchmarking LDGS gradient estimators ...", file=sys.stderr)
    ldgs_lines = render_ldgs(bench_ldgs())
    core = bench_core(args.repeats)
    print("benchmarking DiSMEC++, napkinXC and omikuji side by side ...", file=sys.stderr)
    peer_lines = render_peers(bench_peers(args.repeats), args.repeats, load_average())
    print("benchmarking PPDSparse's settings ...", file=sys.stderr)
    ppdsparse_lines = (ppdsparse_section("bench", min(args.repeats, 3)) + _scaling(SCALING_SIZES, "n")
                       + _scaling(SCALING_LABELS, "K"))
    old = Path(args.out).read_text() if Path(args.out).exists() else ""
    text = core + "\n".join(peer_lines) + "\n" + _kept(old) + "\n".join(ppdsparse_lines) + "\n"
    text += "\n".join(ldgs_lines) + "\n" + "\n".join(memoir_lines) + "\n"
    text += "\n" + "\n".join(__import__("dask_bench").section(args.repeats)) + "\n"  # benchmarks/dask_bench.py
    text += _kept(old, (DASK_NOTES,))
    text += "\n" + "\n".join(__import__("presets_bench").section()) + "\n"  # benchmarks/presets_bench.py
    text += "\n" + "\n".join(__import__("estimate_bench").run()) + "\n"  # benchmarks/estimate_bench.py
    text += "\n" + "\n".join(__import__("records_scale").section()) + "\n"  # benchmarks/records_scale.py
    text += "\n" + "\n".join(__import__("dashboard").section())  # benchmarks/dashboard.py, beside this file
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
