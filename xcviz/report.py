"""Run reports anyone can open offline: one standalone HTML file, plus CSV and JSON of the records.

The HTML holds the specs, the environment (versions, cores), a metrics table of all runs side by
side and the plots of the MSI paper (median and 5-95% band over labels against iteration, and
iterations against the number of positives), with Bokeh's JavaScript inlined: no network needed.
"""
from __future__ import annotations

import html
import re
import time
from pathlib import Path

import holoviews as hv
import pandas as pd
from bokeh.embed import file_html
from bokeh.layouts import column
from bokeh.models import Div
from bokeh.resources import Resources

from .runs.aggregate import relative_to_final
from .runs.store import RunStore
from .ui.bands import band_plot, run_colors, scatter_by_run

# fields plotted against iteration when a run has them, with their axis label and scale
PLOTTED = (("objective_gap", "(f - f_final) / f_final", True), ("active_set", "active set", False),
           ("step_size", "line-search multiplier", False), ("duality_gap", "duality gap", True),
           ("nnz", "nnz(w)", False), ("seconds", "seconds per iteration", True))
_PANEL_SHIM = re.compile(r'<script src="static/extensions/panel/[^"]*es-module-shims[^"]*"></script>\s*')
METRICS = ("p@1", "p@3", "p@5", "ndcg@3", "ndcg@5", "psp@5", "accuracy", "macro_f1", "model_nnz", "train_seconds")


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(border=0, classes="xc", na_rep="", index=False, float_format=lambda v: f"{v:.4g}")


def _plots(iterations: dict[str, pd.DataFrame], labels: dict[str, pd.DataFrame]) -> hv.Layout | None:
    colors = run_colors(iterations)  # one colour per run in every plot, whichever runs a plot shows
    panels = []
    for field, label, logy in PLOTTED:
        runs = {name: df for name, df in iterations.items() if field in df and len(df)}
        if field in ("objective_gap", "duality_gap"):
            runs = {name: df[df[field] > 0] for name, df in runs.items()}
        if runs:
            panels.append(band_plot(runs, field, label=label, logy=logy, colors=colors))
    with_pos = {name: df for name, df in labels.items() if {"n_pos", "iterations"} <= set(df)}
    if with_pos:
        panels.append(scatter_by_run(with_pos, "n_pos", "iterations", logx=True, colors=colors))
    return hv.Layout(panels).cols(2) if panels else None


def build_report(store: RunStore, runs: list[str], title: str = "xcviz run report") -> str:
    """The standalone HTML of a report on `runs` (ids of the store)."""
    rows = [store.get(run) for run in runs]
    iterations, labels = {}, {}
    for row in rows:
        name = f"{row['name']} ({row['id']})" if row["name"] != row["id"] else row["id"]
        it, _ = store.records(row["id"], "iteration")
        if len(it) and "objective" in it:
            it["objective_gap"] = relative_to_final(it)
        iterations[name], labels[name] = it, store.records(row["id"], "label")[0]
    metrics = pd.DataFrame([{"run": r["id"], "name": r["name"], "status": r["status"],
                             **{k: r["summary"].get(k) for k in METRICS if k in r["summary"]}} for r in rows])
    specs = "".join(f"<h3>{html.escape(r['id'])}</h3><pre>{html.escape(r['spec'])}</pre>" for r in rows)
    env = pd.DataFrame([{"run": r["id"], **r["versions"]} for r in rows])
    header = Div(text=(
        f"<h1>{html.escape(title)}</h1><p>Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by xcviz. "
        "Plots: median over the labels still training and 5-95% band, against Newton or outer iteration; "
        "no smoothing, no downsampling.</p><h2>Metrics</h2>" + _table(metrics)
        + "<h2>Environment</h2>" + _table(env)
        + "<style>table.xc{border-collapse:collapse}table.xc td,table.xc th{padding:2px 8px;"
        "border-bottom:1px solid #ddd}</style>"), width=960, disable_math=True)
    layout = _plots(iterations, labels)
    parts = [header] + ([hv.render(layout, backend="bokeh")] if layout is not None else [])
    parts.append(Div(text="<h2>Specs</h2>" + specs, width=960, disable_math=True))
    page = file_html(column(*parts), Resources(mode="inline"), title)
    # Panel, imported by HoloViews, adds a <script src> for its ES-module shim to every Bokeh page;
    # plain Bokeh plots do not need it, and offline it is a failed request. Drop exactly that tag.
    return _PANEL_SHIM.sub("", page)


def write_report(store: RunStore, runs: list[str], out: str | Path) -> list[Path]:
    """Write the HTML report and, beside it, each run's iteration and label records as CSV and JSON."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build_report(store, runs), encoding="utf-8")
    written = [out]
    for run in runs:
        for kind in ("iteration", "label"):
            frame, _ = store.records(run, kind)
            stem = out.with_name(f"{out.stem}-{run}-{kind}s")
            frame.to_csv(stem.with_suffix(".csv"), index=False)
            stem.with_suffix(".json").write_text(frame.to_json(orient="records"))
            written += [stem.with_suffix(".csv"), stem.with_suffix(".json")]
    return written
