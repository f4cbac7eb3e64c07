"""PPDSparse against Newton with MSI as N grows, at Amazon-670K's shape (issue #38, item 3).

For each N the generator draws the Amazon-670K preset scaled to N training rows
(`xcviz.data.presets.like_with_labels`: D 135,909, 5.45 labels and 75.7 non-zeros a row, about 4
positives a label at every scale) and both solvers train a fixed-size sample of its labels (seeded,
among the labels with a training positive), one after the other in one process, 2 threads, recording off, after
a warm-up fit on 300 rows. A run's setup (normalising the rows, PPDSparse's sorted copy of X's columns)
grows with N but is paid once for all labels, so it is measured apart, as the time of a fit of the
first sampled label alone, and per-label seconds are (seconds of the sample - setup) / (sample - 1); P@1/3/5
are over the sampled labels, on the test rows that carry one of them. The fitted slope is that of
log(seconds per label) against log(N), by least squares. `make bench` runs the smallest sizes
(`benchmarks/run.py --only ppdsparse-scaling`); `python benchmarks/ppdsparse_scaling.py` runs SIZES
and prints the section, and `--json` writes the measurements for notebook 08.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from xcviz import metrics
from xcviz.data.presets import like_with_labels
from xcviz.solvers.dismec import DismecParams, fit_dismec
from xcviz.solvers.ppdsparse import PPDSparseParams, fit_ppdsparse

THREADS = 2
PRESET = "amazon-670k"
SIZES = (20_000, 50_000, 150_000)  # training rows; make bench runs the first two
SAMPLE = 300  # labels trained at every N
SOLVERS = {
    "Newton, msi": lambda X, Y: fit_dismec(X, Y, DismecParams(init="msi"), threads=THREADS),
    "PPDSparse": lambda X, Y: fit_ppdsparse(X, Y, PPDSparseParams(), threads=THREADS),
}


def bench_size(n_train: int) -> dict:
    """Per-label seconds, P@1/3/5 and model nnz of every solver at one N."""
    train, test = like_with_labels(PRESET, n_train, SAMPLE)
    X, Y = train.X, train.Y
    out = {"n": X.shape[0], "labels": Y.shape[1], "positives": float(Y.nnz / Y.shape[1])}
    for name, fit in SOLVERS.items():
        fit(X[:300], Y[:300])
        t = time.perf_counter()
        fit(X, Y[:, :1])
        setup = time.perf_counter() - t
        t = time.perf_counter()
        model = fit(X, Y)
        seconds = time.perf_counter() - t
        topk, _ = model.predict_topk(test.X, k=5)
        out[name] = {"seconds_per_label": (seconds - setup) / (Y.shape[1] - 1), "setup_seconds": setup,
                     "seconds": seconds, "nnz": model.nnz,
                     "p@k": [100 * metrics.precision_at_k(test.Y, topk, k) for k in (1, 3, 5)]}
    return out


def slopes(results: list[dict]) -> dict:
    """Least-squares slope of log(seconds per label) against log(N), per solver."""
    n = np.log([r["n"] for r in results])
    return {name: float(np.polyfit(n, np.log([r[name]["seconds_per_label"] for r in results]), 1)[0])
            for name in SOLVERS}


def render(results: list[dict], load_before: str, load_after: str) -> list[str]:
    """The `## PPDSparse against Newton as N grows` section."""
    lines = [f"## PPDSparse against Newton as N grows ({PRESET} shape, {SAMPLE} labels)", "",
             f"Written by `benchmarks/ppdsparse_scaling.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"one run per size, {THREADS} threads, recording off, defaults of both solvers; load average "
             f"(1 / 5 / 15 min) {load_before} before and {load_after} after. Per-label ms = (training seconds - "
             "setup) / (labels - 1), setup = a fit of one label; the speed-up is Newton's over PPDSparse's, same run.",
             "",
             "| N | positives / label | Newton MSI ms / label | PPDSparse ms / label | speed-up | setup s (Newton / "
             "PPDSparse) | Newton P@1/3/5 | PPDSparse P@1/3/5 | Newton nnz | PPDSparse nnz |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        newton, ppd = r["Newton, msi"], r["PPDSparse"]
        pk = [" / ".join(f"{v:.1f}" for v in s["p@k"]) for s in (newton, ppd)]
        lines.append(f"| {r['n']:,} | {r['positives']:.2f} | {1000 * newton['seconds_per_label']:.1f} | "
                     f"{1000 * ppd['seconds_per_label']:.1f} | "
                     f"{newton['seconds_per_label'] / ppd['seconds_per_label']:.2f}x | "
                     f"{newton['setup_seconds']:.2f} / {ppd['setup_seconds']:.2f} | {pk[0]} | {pk[1]} | "
                     f"{newton['nnz']:,} | {ppd['nnz']:,} |")
    if len(results) > 1:
        s = slopes(results)
        lines += ["", "Fitted slope of log(seconds per label) against log(N): "
                  + ", ".join(f"{name} {v:.2f}" for name, v in s.items()) + "."]
    return lines + [""]


def section(sizes: tuple[int, ...]) -> tuple[list[str], list[dict]]:
    """Measure every size; the rendered section and the measurements."""
    before = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    results = [bench_size(n) for n in sizes]
    return render(results, before, " / ".join(f"{v:.1f}" for v in os.getloadavg())), results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args()
    lines, results = section(tuple(args.sizes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
