"""Run reports anyone can open offline: one standalone HTML file, plus CSV and JSON of the records.

The HTML holds a metrics table of all runs side by side (runs by name, one precision per metric),
the settings the runs share and, as a table, those in which they differ, the environment (versions,
cores), and the same plots as the dashboard (`xcviz.app.ui.live_plots` and `xcviz.app.ui.label_views`, each
with its legend, in the dashboard's run colours) in two columns of 660 px, with Bokeh's JavaScript
inlined: no network needed.
"""
from __future__ import annotations

import html
import io
import json
import re
import time
import zipfile
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import BinaryIO

import pandas as pd
from bokeh.embed import file_html
from bokeh.layouts import column, gridplot
from bokeh.models import Div
from bokeh.resources import Resources

from .._util.atomic_write import Content, write_all_atomic
from ..engine.threads import max_threads
from ..runs.record_stream import chunks, write_csv, write_json
from ..runs.store import RunStore
from ..runs.sweep import sweep_table, swept_parameter
from .ui.figures import show_legends
from .ui.run_view import RunView
from .ui.sweep_view import sweep_figures
from .ui.workers_view import COST_ASSUMPTIONS, WorkersView, scaling_figure

# resources Panel registers with Bokeh (its ES-module shim; in the server, where Tabulator is loaded,
# Tabulator's script and stylesheet): links to files or a CDN that plain Bokeh plots do not need
_PANEL_RESOURCES = re.compile(r'<script src="[^"]*"></script>\s*|<link rel="stylesheet" href="[^"]*"[^>]*>\s*')
METRICS = ("p@1", "p@3", "p@5", "ndcg@1", "ndcg@3", "ndcg@5", "psp@1", "psp@3", "psp@5", "accuracy", "macro_f1",
           "model_nnz", "train_seconds", "compile_seconds")
KINDS = ("iteration", "label")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
SHARED = 0o644  # a report is for others to open (write_atomic's default is owner-only)


# the format of each metric in the tables: one precision per metric, whatever its values
FORMATS = {**dict.fromkeys(METRICS[:11], "{:.2f}"), "model_nnz": "{:,.0f}", "train_seconds": "{:.1f}",
           "compile_seconds": "{:.1f}"}


def _table(frame: pd.DataFrame) -> str:
    shown = frame.copy()
    for column, form in FORMATS.items():
        if column in shown:
            shown[column] = [form.format(v) if isinstance(v, (int, float)) and v == v else "" for v in shown[column]]
    return shown.to_html(border=0, classes="xc", na_rep="", index=False)


def _figures(store: RunStore, rows: list[dict]) -> tuple[list, str]:
    """The dashboard's figures for these runs that draw something (each run in its colour, named in
    every legend; a figure that draws nothing would leave a hole in the report's grid), and their rules."""
    view = RunView(store)
    view.update({r["id"]: r for r in rows}, [r["id"] for r in rows])
    labels = len(view.positives.source.data["label"]) > 0
    live = view.plots.figures()
    for fig in live:
        show_legends(fig)
    return live + (view.positives.figures() if labels else []), view.plots.rules.object


def _scale_out(store: RunStore, rows: list[dict]) -> list:
    """The Workers timeline of the runs and, for the first finished run with label records, the
    cost model's predicted time for 1 to 1024 workers beside the report's runs of the same spec
    (as points: their workers, or threads, and their train_seconds)."""
    workers = WorkersView(store)
    workers.update({r["id"]: r for r in rows}, [r["id"] for r in rows])
    if workers.source.data["lane"] == []:
        return []
    parts = [Div(text="<h2>Workers</h2>", width=960), workers.timeline,
             Div(text=workers.table.object, width=960, disable_math=True)]
    for row in rows:
        labels, _ = store.records(row["id"], "label")
        if row["status"] != "done" or labels.empty or "data_bytes" not in row["summary"]:
            continue
        spec = json.loads(row["spec"])
        same = [r for r in rows if r["status"] == "done" and "train_seconds" in r["summary"]
                and {k: v for k, v in json.loads(r["spec"]).items() if k not in ("name", "threads", "cluster")}
                == {k: v for k, v in spec.items() if k not in ("name", "threads", "cluster")}]
        measured = [(int(r["summary"].get("workers") or json.loads(r["spec"]).get("threads") or max_threads()),
                     float(r["summary"]["train_seconds"]), r["name"]) for r in same]
        labels = labels.sort_values("label")
        fig = scaling_figure(labels["seconds"].to_numpy(), labels["n_pos"].to_numpy(), row["summary"]["data_bytes"],
                             measured, title=f"predicted from {row['name']}")
        parts += [Div(text="<h2>Scale-out</h2><p>" + html.escape(COST_ASSUMPTIONS) + "</p>", width=960), fig]
        break
    return parts
def _sweep(rows: list[dict]) -> list:
    """When the runs are one spec at several values of one parameter: their final metrics against it."""
    key = swept_parameter(rows)
    if key is None:
        return []
    table = sweep_table(rows, key)
    figures = sweep_figures(table, key)
    text = (f"<h2>Sweep over {html.escape(key)}</h2><p>The runs differ only in {html.escape(key)}: their "
            f"final metrics against it.</p>" + _table(table))
    return [Div(text=text, width=960, disable_math=True)] + (
        [gridplot(figures, ncols=3, toolbar_location="right")] if figures else [])


def _sample_note(row: dict) -> str:
    """What a run of a label sample trained and what its metrics are on, said plainly."""
    sample, rows = row["summary"]["label_sample"], row["summary"].get("rows_scored")
    scored = f", on the {int(rows):,} test rows that have one of them" if rows is not None else ""
    return (f"<p><b>{html.escape(row['name'] or row['id'])}</b> trained a sample of {int(sample['labels']):,} of "
            f"{int(sample['of']):,} labels, drawn stratified by positives: its model holds those labels alone and "
            f"its metrics are computed on them alone{scored}.</p>")


def _settings(rows: list[dict]) -> str:
    """The runs' specs: the settings all runs share, once; a table of those whose values differ
    among the runs that have them, run by run; each solver's other settings, once per solver."""
    specs = []
    for row in rows:
        try:
            specs.append(json.loads(row["spec"]))
        except (TypeError, ValueError):
            specs.append({})
    flat = [{"dataset": str(s.get("dataset", "")).rsplit("/", 1)[-1], "solver": s.get("solver", ""),
             "threads": s.get("threads"), **s.get("params", {})} for s in specs]
    keys = list(dict.fromkeys(k for f in flat for k in f))
    values = {k: [json.dumps(f[k]) for f in flat if k in f] for k in keys}
    shared = [k for k in keys if len(values[k]) == len(flat) and len(set(values[k])) == 1]
    differ = [k for k in keys if len(set(values[k])) > 1]
    table = pd.DataFrame([{"run": r["name"], **{k: "" if f.get(k) is None else str(f[k]) for k in differ}}
                          for r, f in zip(rows, flat)])
    text = ", ".join(f"{k} = {flat[0][k]}" for k in shared)
    out = f"<p><b>Shared by all runs</b>: {html.escape(text or 'nothing')}.</p>"
    for solver in dict.fromkeys(f["solver"] for f in flat):
        own = [k for k in keys if k not in shared and k not in differ and any(f["solver"] == solver and k in f
                                                                                for f in flat)]
        if own:
            first = next(f for f in flat if f["solver"] == solver)
            out += (f"<p><b>Every {html.escape(solver)} run</b>: "
                    f"{html.escape(', '.join(f'{k} = {first[k]}' for k in own))}.</p>")
    if differ:
        out += "<p><b>Where the runs differ</b>:</p>" + table.to_html(border=0, classes="xc", index=False)
    return out


def build_report(store: RunStore, runs: list[str], title: str = "xcviz run report") -> str:
    """The standalone HTML of a report on `runs` (ids of the store)."""
    rows = [store.get(run) for run in runs]
    figures, rules = _figures(store, rows)
    metrics = pd.DataFrame([{"run": r["name"], "status": r["status"],
                             **{k: r["summary"].get(k) for k in METRICS if k in r["summary"]}} for r in rows])
    env = pd.DataFrame([{"run": r["name"], **r["versions"]} for r in rows])
    errors = "".join(f"<p><b>{html.escape(r['name'])} failed</b>: {html.escape(r['error'])}</p>"
                     for r in rows if r["error"])
    errors += "".join(_sample_note(r) for r in rows if r["summary"].get("label_sample"))
    header = Div(text=(
        f"<h1>{html.escape(title)}</h1><p>Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by xcviz. "
        f"Plots: a one-vs-all run's median over the labels still training and 5-95% band; one trajectory "
        f"for the other runs. {html.escape(rules)}</p>"
        "<h2>Metrics</h2><p>Precision and nDCG in percent.</p>" + _table(metrics) + errors
        + "<h2>Settings</h2>" + _settings(rows)
        + "<style>table.xc{border-collapse:collapse}table.xc td,table.xc th{padding:2px 8px;"
        "border-bottom:1px solid #ddd;text-align:right;max-width:30em;overflow-wrap:anywhere}</style>"),
        sizing_mode="stretch_width", disable_math=True)
    # two columns filling a 1400 px page, each figure at a fixed size: the dashboard's figures
    # stretch to its width (sizing_mode "stretch_width"), and in the grid a stretching figure takes
    # its column's width, which only a fixed figure gives. Without the per-label figures (MEMOIR,
    # DS-MLR, LDGS) every column shrank to its axes, about 70 px, and the width set here was ignored.
    for fig in figures:
        fig.update(sizing_mode="fixed", width=660, height=320)
    parts = [header] + ([gridplot(figures, ncols=2, toolbar_location="right")] if figures else [])
    parts += _sweep(rows)
    parts += _scale_out(store, rows)
    ids = ", ".join(f"{r['name']} = {r['id']}" for r in rows)
    parts.append(Div(text=f"<h2>Environment</h2>{_table(env)}<p>Run ids: {html.escape(ids)}</p>",
                     sizing_mode="stretch_width", disable_math=True))
    page = file_html(column(*parts, sizing_mode="stretch_width"), Resources(mode="inline"), title)
    # Bokeh's own code is inlined (Resources mode "inline"); every remaining external reference is
    # one of Panel's, a failed request offline. Drop them.
    return _PANEL_RESOURCES.sub("", page)


def name_part(name: str) -> str:
    """A run's name as part of a file name: runs of anything but letters, digits, '.', '_' and '-'
    become one '-', at most 60 characters, no leading or trailing '-' or '.' ("" if nothing is
    left). A name is the user's text: it must not reach a file name as typed (a '/', a '..')."""
    return _UNSAFE.sub("-", name).strip("-.")[:60].rstrip("-.")


def run_label(name: str, run: str) -> str:
    """A run's part of its record files' names: the name's `name_part`, then the id (two names may
    reduce to the same text; the id keeps their files apart); the id alone for an unnamed run."""
    part = name_part(name)
    return run if part in ("", run) else f"{part}-{run}"


def download_name(kind: str, names: list[str], suffix: str) -> str:
    """A download's file name: `xcviz-KIND-NAME.SUFFIX` for one run, `xcviz-KIND-N-runs.SUFFIX` for several."""
    one = name_part(names[0]) if len(names) == 1 else ""
    return f"xcviz-{kind}-{one or f'{len(names)}-runs'}.{suffix}"


def _record_files(store: RunStore, runs: list[str], stem: Path) -> dict[Path, Content]:
    """Each run's iteration and label records as CSV and JSON: {`STEM-LABEL-KINDs.csv`/`.json`: a
    writer that streams them from the store (runs.record_stream: one chunk of rows in memory at a
    time)}, LABEL the run's `run_label`. Label records only when the run has some (MEMOIR, DS-MLR
    and LDGS record none: an empty file would only suggest something went missing)."""
    files: dict[Path, Content] = {}
    for run in runs:
        label = run_label(store.get(run)["name"], run)
        for kind in KINDS:
            if kind == "label" and not store.has_records(run, kind):
                continue
            base = f"{stem.name}-{label}-{kind}s"  # a name may hold a '.': never `with_suffix` (it cut there)
            for suffix, write in ((".csv", write_csv), (".json", write_json)):
                files[stem.with_name(base + suffix)] = partial(_stream, write, store, run, kind)
    return files


def _stream(write: Callable[[Iterable[pd.DataFrame], BinaryIO], None], store: RunStore, run: str, kind: str,
            out: BinaryIO) -> None:
    write(chunks(store, run, kind), out)


def write_records(store: RunStore, runs: list[str], stem: str | Path) -> list[Path]:
    """Each run's iteration and label records as `STEM-LABEL-iterations.csv` / `.json` (and labels),
    LABEL the run's name made safe for a file name, then its id (`run_label`)."""
    files = _record_files(store, runs, Path(stem))
    write_all_atomic(files, mode=SHARED)
    return list(files)


def write_report(store: RunStore, runs: list[str], out: str | Path) -> list[Path]:
    """Write the HTML report and, beside it, each run's iteration and label records as CSV and JSON
    (streamed from the store). Every file is written to a temporary name before the first one
    replaces its target (`write_all_atomic`): a report rewritten over an earlier one never leaves
    a torn file, nor a mix when the build fails."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.with_name(out.name.removesuffix(".html"))  # "bibtex C=0.5" stays whole, not "bibtex C=0"
    files = {out: build_report(store, runs).encode("utf-8")} | _record_files(store, runs, stem)
    write_all_atomic(files, mode=SHARED)
    return list(files)


def records_archive(store: RunStore, runs: list[str]) -> bytes:
    """A zip of the runs' records as CSV and JSON (what `write_records` writes), for a download:
    each file streamed into its compressed member, so only the zip is held whole."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, write in _record_files(store, runs, Path("xcviz")).items():
            with archive.open(path.name, "w", force_zip64=True) as member:
                write(member)
    return buffer.getvalue()
