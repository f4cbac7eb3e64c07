"""Render the README's PPDSparse scaling figure from make bench's measurements, as docs/ppdsparse-scaling-bench.png.

`benchmarks/run.py` (make bench, or `--only ppdsparse-scaling` / `--only ppdsparse-scaling-k`) saves
each scaling experiment's measurements to benchmarks/results/ppdsparse-scaling-{n,K}.json; this script
draws per-label training time of Newton MSI and PPDSparse against N and against K, log-log, each
curve with its fitted slope (`xcviz.app.ui.notebook_figures.scaling_loglog`, as notebook 08 draws
them), and photographs the page with headless Chromium (docs/paper_figures.py's `photograph`). So the
figure shows the numbers BENCHMARKS.md prints, never numbers typed by hand.
Run: .venv/bin/python docs/scaling_figure.py (needs Debian's chromium at /usr/bin/chromium).
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import holoviews as hv
import pandas as pd

from paper_figures import photograph

from xcviz.app.ui.notebook_figures import scaling_loglog

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
NAME = "ppdsparse-scaling-bench"
SOLVERS = ("Newton, msi", "PPDSparse")


def table(results: list[dict], axis: str) -> pd.DataFrame:
    """One row per solver and measured value of `axis` ("n" or "K"): columns solver, N or K, ms per label."""
    column = "N" if axis == "n" else "K"
    return pd.DataFrame([{"solver": s, column: r[axis], "ms per label": 1000 * r[s]["seconds_per_label"]}
                         for r in results for s in SOLVERS])


def layout(in_n: list[dict], in_k: list[dict]) -> hv.Layout:
    """The two log-log panels: per-label time against N (the sample of labels fixed) and against K (N fixed)."""
    n_labels, k_rows = in_n[0]["labels"], in_k[0]["n"]
    _, by_n = scaling_loglog(table(in_n, "n"), "N", f"per-label time against N ({n_labels} labels, one run)")
    _, by_k = scaling_loglog(table(in_k, "K"), "K", f"per-label time against K (N = {k_rows:,}, medians)")
    return (by_n + by_k).cols(2).opts(shared_axes=False, toolbar=None)  # two y ranges: N's reaches 10x K's


def main() -> None:
    in_n, in_k = (json.loads((RESULTS / f"ppdsparse-scaling-{axis}.json").read_text()) for axis in ("n", "K"))
    hv.extension("bokeh")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / f"{NAME}.html"
        hv.save(layout(in_n, in_k), page, backend="bokeh", resources="inline")
        photograph([page])


if __name__ == "__main__":
    main()
