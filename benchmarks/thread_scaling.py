"""1 -> 2 threads of the one-vs-all Newton engine: `python benchmarks/thread_scaling.py [NAME] [ROUNDS]`.

Trains with MSI on 1 and 2 threads, alternating, in one process with the kernels loaded (so the
ratio is the engine's, not the loading's), medians of `ROUNDS`. Beside the wall times it reports
the process's CPU seconds per wall second in each run: on a machine shared with other jobs a
2-thread run that gets less than two cores' worth cannot show 2x, and this says how much it got.
The CPU seconds of the two runs say how much work the second thread adds (waiting, contention).
The models of the two thread counts are compared entry by entry (they must be identical).
"""
from __future__ import annotations

import os
import statistics
import sys
import time

TARGET = 1.9  # issue 16


def measure(name: str = "delicious", rounds: int = 5) -> dict:
    from xcviz.data import load
    from xcviz.solvers.dismec import fit_dismec

    train, _ = load(name)
    models = {t: fit_dismec(train.X, train.Y, threads=t) for t in (1, 2)}  # loads the kernels
    same = (models[1].weights != models[2].weights).nnz == 0 and (models[1].bias_weights == models[2].bias_weights).all()
    runs = {1: [], 2: []}
    for _ in range(rounds):
        for t in (1, 2):
            wall, cpu = time.perf_counter(), time.process_time()
            fit_dismec(train.X, train.Y, threads=t)
            runs[t].append((time.perf_counter() - wall, time.process_time() - cpu))
    out = {t: {"seconds": statistics.median(w for w, _ in r), "cores": statistics.median(c / w for w, c in r),
               "cpu": statistics.median(c for _, c in r), "all": [w for w, _ in r]} for t, r in runs.items()}
    out["speedup"] = out[1]["seconds"] / out[2]["seconds"]
    out["identical"] = bool(same)
    return out


def render(name: str, r: dict, rounds: int, load: str) -> list[str]:
    met = "met" if r["speedup"] >= TARGET else "**missed**"
    return ["## Thread scaling (Newton engine, MSI)", "",
            f"`benchmarks/thread_scaling.py {name} {rounds}`: `fit_dismec` on {name} with 1 and 2 threads, "
            f"alternating, kernels loaded, medians of {rounds}; cores used = the process's CPU seconds per wall "
            f"second. Machine load (1/5/15 min) at the end: {load}.", "",
            "| threads | train s (median) | runs | cores used | CPU s (median) |", "|---|---|---|---|---|",
            *(f"| {t} | {r[t]['seconds']:.3f} | {' '.join(f'{s:.2f}' for s in r[t]['all'])} | {r[t]['cores']:.2f} | "
              f"{r[t]['cpu']:.2f} |" for t in (1, 2)), "",
            f"1 -> 2 threads: **{r['speedup']:.2f}x** (target {TARGET}x: {met}); the two models are "
            f"{'identical' if r['identical'] else 'NOT identical'} entry by entry.", ""]


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "delicious"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    result = measure(name, rounds)
    print("\n".join(render(name, result, rounds, " / ".join(f"{v:.1f}" for v in os.getloadavg()))))
