"""`xcviz estimate` against the runs it predicts (issue #39 item 2): on shapes small enough to train
whole, the estimate from a 200-label sample (`xcviz.runs.estimate`) beside the whole run's measured
train_seconds, model non-zeros and record count, both in one process after a warm-up, 2 threads.
The target: predicted seconds within 25% of the measured. Shapes: Bibtex and Delicious (bundled),
debian-tags (real, from `../shared/data/debian-tags` when it is there) and two generated presets,
EURLex-4K at half its rows and labels and Amazon-670K at 2%; DiSMEC with MSI on each, PPDSparse on
the three real sets; MEMOIR, LDGS and DS-MLR on Bibtex and MEMOIR and LDGS on the lshtc1-margin preset
at 5% (multiclass: the estimate from a slice of the steps, `xcviz.runs.estimate_slice`). Then the estimate alone for the Amazon-670K shape at full size (490,449 rows,
670,091 labels) on 2 threads and on 32 Dask workers, which no machine here trains whole.

`python benchmarks/estimate_bench.py` prints the section; `benchmarks/run.py --only estimate` puts
it into BENCHMARKS.md."""
from __future__ import annotations

import time

import xcviz
from xcviz.data import load
from xcviz.data.presets import like
from xcviz.records.sinks import MemorySink
from xcviz.runs.estimate import estimate
from xcviz.runs.estimate_slice import estimate_slice
from xcviz.solvers import get_solver

from shared import load_average, load_debian

THREADS = 2
SAMPLE = 200
TARGET = 0.25  # the largest relative error of the predicted seconds
CASES = (("bibtex", "dismec", {"init": "msi"}), ("bibtex", "ppdsparse", {}),
         ("delicious", "dismec", {"init": "msi"}), ("delicious", "ppdsparse", {}),
         ("debian-tags", "dismec", {"init": "msi"}), ("debian-tags", "ppdsparse", {}),
         ("eurlex-4k x0.5", "dismec", {"init": "msi"}), ("amazon-670k x0.02", "dismec", {"init": "msi"}),
         # multiclass families: a slice of the steps (runs.estimate_slice), at their defaults
         ("bibtex", "memoir", {}), ("bibtex", "ldgs", {}), ("bibtex", "dsmlr", {}),
         ("lshtc1-margin x0.05", "memoir", {}), ("lshtc1-margin x0.05", "ldgs", {}))


def _train_split(name: str):
    """The training split of a case's data set (None when debian-tags is not on this machine)."""
    if name == "debian-tags":
        pair = load_debian()
        return None if pair is None else pair[0]
    if " x" in name:
        preset, scale = name.split(" x")
        return like(preset, float(scale))[0]
    return load(name)[0]


def measure(name: str, solver: str, params: dict) -> dict | None:
    """The estimate and the whole run of one case, the run after the estimate (kernels warm for both)."""
    train = _train_split(name)
    if train is None:
        return None
    multiclass = get_solver(solver).multiclass
    predicted = (estimate_slice(train, solver, params, THREADS) if multiclass else
                 estimate(train, solver, params, THREADS, sample=SAMPLE))
    sink = MemorySink()
    model = xcviz.train(train, solver=solver, threads=THREADS, recorder=sink, **params)
    return {"case": f"{name}, {solver}", "labels": train.n_labels, "predicted": predicted,
            "seconds": model.info["train_seconds"], "nnz": model.nnz, "records": len(sink.iterations) + (0 if multiclass else len(sink.labels))}


def full_amazon() -> dict:
    """The estimate for the full Amazon-670K shape, with the seconds it took to generate and to estimate."""
    start = time.perf_counter()
    train = like("amazon-670k")[0]
    made = time.perf_counter() - start
    predicted = estimate(train, "dismec", {"init": "msi"}, THREADS, sample=SAMPLE, workers=(32,))
    return {"generate_seconds": made, "rows": train.n, "labels": train.n_labels, **predicted}


def _error(predicted: float, measured: float) -> float:
    return predicted / measured - 1.0 if measured else float("nan")


def section(rows: list[dict], amazon: dict | None) -> list[str]:
    """BENCHMARKS.md's section: a row per case, its errors, whether the 25% target is met."""
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = ["## Estimates before a run (`xcviz estimate`)", "",
             f"`benchmarks/estimate_bench.py` (`--only estimate`) on {now}, load {load_average()}, {THREADS} threads: the "
             f"estimate from {SAMPLE} labels sampled alike from ten groups by positives (a multiclass family: "
             "from the first 5% of its steps, at least 3), then the whole run, in one "
             f"process. Target: predicted seconds within {TARGET:.0%} of the measured.", "",
             "| case | labels | predicted s | measured s | error | model nnz predicted / measured | records "
             "predicted / measured | sample s | target |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r["predicted"]
        err = _error(p["train_seconds"], r["seconds"])
        lines.append(f"| {r['case']} | {r['labels']:,} | {p['train_seconds']:.2f} | {r['seconds']:.2f} | {err:+.0%} | "
                     f"{p['model_nnz']:,} / {r['nnz']:,} ({_error(p['model_nnz'], r['nnz']):+.1%}) | "
                     f"{p['record_count']:,} / {r['records']:,} ({_error(p['record_count'], r['records']):+.1%}) | "
                     f"{p.get('sample_seconds', p.get('slice_seconds')):.2f} | {'met' if abs(err) <= TARGET else 'missed'} |")
    met = sum(abs(_error(r["predicted"]["train_seconds"], r["seconds"])) <= TARGET for r in rows)
    lines += ["", f"Seconds within {TARGET:.0%}: **{met} of {len(rows)}** cases."]
    if amazon is not None:
        lines += ["", f"The full Amazon-670K shape ({amazon['rows']:,} rows, {amazon['labels']:,} labels; generated "
                  f"in {amazon['generate_seconds']:.0f} s), DiSMEC MSI: **{amazon['train_seconds'] / 3600:.1f} h on "
                  f"{THREADS} threads**, {amazon['workers_seconds'][32] / 60:.0f} min on 32 Dask workers, peak "
                  f"{amazon['peak_rss_mb'] / 1024:.1f} GB, {amazon['model_nnz']:,} weights, "
                  f"{amazon['record_count']:,} records, from {amazon['sampled_labels']} labels trained in "
                  f"{amazon['sample_seconds']:.0f} s."]
    return lines


def run(full: bool = True) -> list[str]:
    """Every case, then (with `full`) the full Amazon-670K estimate; the section's lines."""
    rows = [r for r in (measure(*case) for case in CASES) if r is not None]
    return section(rows, full_amazon() if full else None)


if __name__ == "__main__":
    print("\n".join(run()))
