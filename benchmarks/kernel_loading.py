"""What a fresh `xcviz train` process pays for loading compiled kernels: `python benchmarks/kernel_loading.py [NAME]`.

Two kinds of child process, alternating, medians. The first runs the command's own code
(`xcviz.cli.main`) twice on the same data: the first call is what a user of `xcviz train` meets,
the second finds every kernel loaded, and the first call's seconds (`compile_seconds`, the kernels'
warm-up before the clock, plus `train_seconds`) less the second's is the kernel loading the
training call pays (issue 16's target: at most 0.1 s). The second kind
(`CHILD`, which tests/engine/test_loading.py runs too) calls `fit_dismec` twice and measures the
difference on process CPU time as well as wall time (on a loaded machine wall time is mostly
waiting for a core), the loading of each cached kernel apart, the refreshes of numba's CPU target,
whether numba's runtime module was compiled or read from its cache, and which of numba's modules
the first call imported (xcviz.engine.loading says what each of these costs and avoids).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.1  # seconds, issue 16

_COMMAND = """
import contextlib, io, json, sys, time
from xcviz.cli import main
calls = []
for _ in range(2):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(sys.argv[1:])
    summary = json.loads(buf.getvalue().splitlines()[-1])
    calls.append(summary["compile_seconds"] + summary["train_seconds"])
print(json.dumps({"first": calls[0], "second": calls[1]}))
"""

# argv: dataset name, or X.npz Y.npz; then threads; then optionally W.npy to save the weights in
CHILD = """
import json, sys, time
import numba, numpy as np, scipy.sparse as sp
import numba.core.base as base
from numba.core.runtime import nrtdynmod
refreshes, nrt_compiled, loads = [], [], {}
refresh = base.BaseContext.refresh
def counted(self):
    refreshes.append(1)
    return refresh(self)
base.BaseContext.refresh = counted
create = nrtdynmod.create_nrt_module
def created(ctx):
    nrt_compiled.append(1)
    return create(ctx)
nrtdynmod.create_nrt_module = created
compile_ = numba.core.dispatcher.Dispatcher.compile
def timed(self, sig):
    t = time.process_time()
    try:
        return compile_(self, sig)
    finally:
        loads[self.py_func.__name__] = loads.get(self.py_func.__name__, 0.0) + time.process_time() - t
numba.core.dispatcher.Dispatcher.compile = timed
from xcviz.engine.loading import enable_shortcuts
from xcviz.solvers.dismec import DismecParams, fit_dismec
enable_shortcuts()  # as xcviz train does (through xcviz.train)
args = sys.argv[1:]
if args[0].endswith(".npz"):
    X, Y = sp.load_npz(args[0]), sp.load_npz(args[1])
    args = args[2:]
else:
    from xcviz.data.registry import resolve
    train, _ = resolve(args[0])
    X, Y = train.X, train.Y
    args = args[1:]
before = set(sys.modules)
calls = []
for _ in range(2):
    c, w = time.process_time(), time.perf_counter()
    model = fit_dismec(X, Y, DismecParams(), threads=int(args[0]))
    calls.append((time.process_time() - c, time.perf_counter() - w))
    if len(calls) == 1:
        imported = sorted(m for m in set(sys.modules) - before if m.startswith("numba"))
if len(args) > 1:
    np.save(args[1], model.weights.toarray())
print(json.dumps({"cpu": calls[0][0] - calls[1][0], "wall": calls[0][1] - calls[1][1], "refreshes": len(refreshes),
                  "nrt_compiled": len(nrt_compiled), "imported": imported, "loads": loads}))
"""


def run_child(code: str, *argv: str, timeout: float | None = None) -> dict:
    """Run `code` in a fresh interpreter on this checkout; its last line of output, as JSON."""
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)  # `-c` puts the cwd first
    if out.returncode != 0:
        raise RuntimeError(f"child process failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(name: str = "bibtex", repeats: int = 5, threads: int = 2) -> dict:
    """Medians over `repeats` child processes of each kind, alternating."""
    commands, splits = [], []
    for _ in range(repeats):
        commands.append(run_child(_COMMAND, "train", name, "--threads", str(threads), "--json"))
        splits.append(run_child(CHILD, name, str(threads)))
    kernels = sorted({k for s in splits for k in s["loads"]})
    return {"loading": statistics.median(c["first"] - c["second"] for c in commands),
            "first": statistics.median(c["first"] for c in commands),
            "second": statistics.median(c["second"] for c in commands),
            "cpu": statistics.median(s["cpu"] for s in splits),
            "wall": statistics.median(s["wall"] for s in splits),
            "refreshes": max(s["refreshes"] for s in splits),
            "nrt_compiled": max(s["nrt_compiled"] for s in splits),
            "imported": sorted({m for s in splits for m in s["imported"]}),
            "kernels": {k: statistics.median(s["loads"].get(k, 0.0) for s in splits) for k in kernels}}


def render(name: str, r: dict, repeats: int, load: str) -> list[str]:
    met = "met" if r["loading"] <= TARGET else "**missed**"
    met_cpu = "met" if r["cpu"] <= TARGET else "**missed**"
    kernels = ", ".join(f"{k} {v:.3f} s" for k, v in r["kernels"].items())
    imported = ", ".join(f"`{m}`" for m in r["imported"]) or "none"
    return [
        "## Kernel loading of a fresh `xcviz train` process", "",
        f"`benchmarks/kernel_loading.py {name}`, {repeats} child processes of each kind, alternating, medians; "
        f"2 threads, MSI. Machine load (1/5/15 min) at the end: {load}.", "",
        "| measured | seconds |", "|---|---|",
        f"| first call's `compile_seconds` + `train_seconds` (a user's `xcviz train`) | {r['first']:.3f} |",
        f"| second call's, same process (every kernel loaded) | {r['second']:.3f} |",
        f"| **kernel loading paid by the training call** (first - second, wall) | **{r['loading']:.3f}** |",
        f"| the same on process CPU time (`fit_dismec` twice; wall time in that process: {r['wall']:.3f}) "
        f"| **{r['cpu']:.3f}** |",
        f"| of which loading each cached kernel (CPU) | {kernels} |",
        f"| numba's CPU target refreshed during training (skipped by xcviz.engine.loading) | {r['refreshes']} times |",
        f"| numba's runtime (NRT) module compiled (xcviz.engine.loading reads it from the cache) | "
        f"{r['nrt_compiled']} times |",
        f"| numba modules the first call imported | {imported} |", "",
        f"Target (issue 16): at most {TARGET} s: {r['loading']:.3f} s wall, {met}; {r['cpu']:.3f} s CPU, {met_cpu}.",
        ""]


if __name__ == "__main__":
    from shared import load_average  # beside this script; the tests import this module as benchmarks.kernel_loading

    name = sys.argv[1] if len(sys.argv) > 1 else "bibtex"
    result = measure(name)
    print("\n".join(render(name, result, 5, load_average())))
