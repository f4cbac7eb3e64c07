"""The launch panel's Estimate: before a long run, what `xcviz estimate` predicts for
each selected variant (seconds on the page's threads and on Dask workers, peak memory, model
non-zeros, records), issue 39.

Each estimate trains a stratified sample of the labels (`runs.estimate`; a multiclass run: a slice of its
steps, `runs.estimate_slice`), which takes seconds to a
minute, so it runs in a child process of its own (`python -m xcviz.cli estimate SPEC --json`), one
variant after the other, and the page polls it with its refresh: the server stays responsive and a
new click or a page closed stops what is left. The spec goes to the child in a private file; the
child's error, if any, is the CLI's one line (which never echoes a data file's content), escaped."""
from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import panel as pn

from ...runs.spec import RunSpec
from ...solvers import SOLVERS

WORKERS = 32  # a cluster size the prediction is also given for (the README's Amazon-670K estimate)
SAMPLE = 200  # labels each estimate trains (`xcviz estimate`'s default)
ERROR_CHARS = 300  # at most this much of a child's error line is shown


def _seconds(value: float) -> str:
    """Seconds as a person reads them: 42 s, 12.5 min, 3.8 h."""
    if value < 120:
        return f"{value:.3g} s"
    if value < 7200:
        return f"{value / 60:.3g} min"
    return f"{value / 3600:.3g} h"


def estimate_rows(results: list[tuple[str, dict]], threads: int) -> str:
    """An HTML table of the estimates (run name, the prediction of `xcviz estimate --json`), every
    name escaped; a run of a label sample is said to be one below it."""
    head = (f"<tr><th>run</th><th>time, {threads} thread{'s' * (threads > 1)}</th><th>{WORKERS} workers</th>"
            "<th>peak MB</th><th>model nnz</th><th>records</th></tr>")
    body = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{_seconds(r['train_seconds'])}</td>"
        f"<td>{_seconds(r['workers_seconds'][str(WORKERS)]) if str(WORKERS) in r.get('workers_seconds', {}) else ''}</td>"
        f"<td>{r['peak_rss_mb']:,.0f}</td><td>{r['model_nnz']:,}</td><td>{r['record_count']:,}</td></tr>"
        for name, r in results)
    samples = "".join(f"<p style='font-size:11px'>{html.escape(name)}: a sample of {r['label_sample']['labels']:,} "
                      f"of {r['label_sample']['of']:,} labels (label_sample)</p>"
                      for name, r in results if "label_sample" in r)
    return f'<table class="xcviz-estimate" style="font-size:11px">{head}{body}</table>{samples}'


class EstimatePanel:
    """An Estimate button and what it predicted, below Compare."""

    def __init__(self, width: int) -> None:
        self.button = pn.widgets.Button(label="Estimate first", width=width, description=(
            f"Train {SAMPLE} labels of each selected variant (one-vs-all solvers; a slice of the steps of a "
            f"multiclass one) and predict the whole run's time on these threads and on {WORKERS} Dask workers "
            "(one-vs-all), its peak memory, model size and records."))
        self.result = pn.pane.HTML("", width=width, visible=False, styles={"font-size": "12px"})
        self._queue: list[RunSpec] = []
        self._done: list[tuple[str, dict]] = []
        self._child: tuple[RunSpec, subprocess.Popen, Path] | None = None
        self._threads = 1
        self._folder: Path | None = None  # made at the first estimate, 0700: the specs are private

    def start(self, specs: list[RunSpec]) -> None:
        """Estimate these runs, one after the other (what a last click left running is stopped)."""
        self.stop()
        self._queue, self._done, self._threads = list(specs), [], specs[0].threads or 1
        self._next()

    def poll(self) -> None:
        """Take the running child's result if it ended, and start the next (the page's refresh)."""
        if self._child is None:
            return
        spec, proc, out = self._child
        if proc.poll() is None:
            return
        self._child = None
        text = out.read_text(errors="replace") if out.exists() else ""
        stderr = out.with_suffix(".err").read_text(errors="replace") if out.with_suffix(".err").exists() else ""
        try:
            self._done.append((spec.name or spec.solver, json.loads(text.strip().splitlines()[-1])))
        except (IndexError, ValueError, KeyError):
            last = (stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:ERROR_CHARS]
            self._queue = []
            self.say(f"{spec.name}: the estimate failed: {last}")
            return
        self._next()

    def stop(self) -> None:
        """Stop the running estimate and forget the queued ones."""
        self._queue = []
        if self._child is not None:
            self._child[1].kill()
            self._child[1].wait()
            self._child = None

    def close(self) -> None:
        """Stop, and remove the estimates' files (the page closed)."""
        self.stop()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def _next(self) -> None:
        table = estimate_rows(self._done, self._threads) if self._done else ""
        if not self._queue:
            self.say("", table + f"<div>One-vs-all: from {SAMPLE} labels each, drawn alike from ten groups by "
                     "positives; multiclass: from the first 5% of its steps, an upper bound where a run stops at its "
                     "tolerance sooner (<code>xcviz estimate</code>).</div>")
            return
        spec = self._queue.pop(0)
        self._folder = self._folder or Path(tempfile.mkdtemp(prefix="xcviz-estimate-"))
        path = self._folder / f"{len(self._done)}.json"
        path.write_text(spec.to_json())
        out = path.with_suffix(".out")
        with open(out, "wb") as stdout, open(path.with_suffix(".err"), "wb") as stderr:
            workers = [] if SOLVERS[spec.solver].multiclass else ["--workers", str(WORKERS)]
            proc = subprocess.Popen([sys.executable, "-m", "xcviz.cli", "estimate", str(path), "--json",
                                     "--sample", str(SAMPLE), *workers],
                                    stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, close_fds=True)
        self._child = (spec, proc, out)
        what = "a slice of its steps" if SOLVERS[spec.solver].multiclass else f"{SAMPLE} of its labels"
        self.say("", table + f"<div>Estimating {html.escape(spec.name or spec.solver)}: training {what}...</div>")

    def say(self, error: str, html_text: str = "") -> None:
        """Show an error (escaped, in red), or else this HTML (built from escaped parts); with
        neither, the pane hides."""
        text = f'<div style="color:#b00020">{html.escape(error)}</div>' if error else html_text
        self.result.object, self.result.visible = text, bool(text)
