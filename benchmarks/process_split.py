"""Two processes of one thread against one process of two threads, without Dask (issue 39 item 4).

A Dask `local:2x1` cluster trains a one-vs-all run in two worker processes, each with its own copy
of the training data; the threads path trains in one process whose two threads share one copy.
This separates what the process split costs from what Dask costs: each problem of
`benchmarks/dask_bench.py` is trained by one process of 2 threads (every label) and by two
processes of 1 thread at once (the even and the odd labels), the processes started and warmed
before a common start; the time of two processes is the slower one's. Medians of alternated repeats.
Run alone: `python benchmarks/process_split.py` (about 2 minutes).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = "amazon670k-10-every-67th-label.txt"  # dask_bench.problems writes it


def _child(where: str, part: str, threads: int) -> None:
    """Train the labels `part` ("all", "0": even, "1": odd) of `where` on `threads` threads, once to
    warm up, then again when told to on stdin; print the seconds of the second."""
    from xcviz.data.registry import resolve
    from xcviz.solvers.dismec import fit_dismec

    train, _ = resolve(where)
    Y = train.Y.tocsc()
    Y = (Y if part == "all" else Y[:, int(part)::2]).tocsr()
    fit_dismec(train.X, Y, threads=threads)
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    fit_dismec(train.X, Y, threads=threads)
    print(time.perf_counter() - start, flush=True)


def _timed(where: str, shape: list[tuple[str, int]]) -> float:
    """Seconds until the slowest of these processes (labels, threads) has trained, from a common start."""
    procs = [subprocess.Popen([sys.executable, __file__, where, part, str(threads)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for part, threads in shape]
    for proc in procs:
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("a training process failed before it was ready")
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    seconds = max(float(proc.stdout.readline()) for proc in procs)
    for proc in procs:
        proc.wait()
    return seconds


def measure(repeats: int = 4) -> dict:
    """{problem: {"one": [s], "two": [s]}} and the load average before and after."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dask_bench import problems

    load = [os.getloadavg()]
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in problems(folder):
            where = "delicious" if name == "delicious" else os.path.join(folder, SAMPLE)
            times = {"one": [], "two": []}
            for _ in range(repeats):
                times["one"].append(_timed(where, [("all", 2)]))
                times["two"].append(_timed(where, [("0", 1), ("1", 1)]))
            out[name] = times
    load.append(os.getloadavg())
    return {"problems": out, "load": load}


def lines(result: dict) -> list[str]:
    """A markdown table of the medians and their ratio."""
    rows = ["| problem | one process x 2 threads s | two processes x 1 thread s | ratio |", "|---|---|---|---|"]
    for name, t in result["problems"].items():
        one, two = statistics.median(t["one"]), statistics.median(t["two"])
        rows.append(f"| {name} | {one:.2f} | {two:.2f} | {two / one:.3f} |")
    load = " and ".join(" / ".join(f"{x:.1f}" for x in avg) for avg in result["load"])
    return rows + ["", f"Load average (1 / 5 / 15 min) {load} before and after, on {os.cpu_count()} cores."]


if __name__ == "__main__":
    if len(sys.argv) == 4:
        _child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        print("\n".join(lines(measure())))
