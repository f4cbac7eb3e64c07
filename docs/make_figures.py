"""Render the figures of the README and the docs with headless Chromium through Playwright.

`initializers-bibtex.png`: the MSI paper's per-iteration plots for the four initializers on Bibtex
(trains each initializer with a memory sink, lays out the shared band plots of xcviz.app.ui.bands and
photographs them as a standalone Bokeh page). `dashboard.png`: the dashboard once the first
visit's example has run (serves it over an empty run store, presses Compare for zero and MSI on
Bibtex and photographs the page 4.5 s later, with records in its plots: both Bibtex runs have
finished by then, as docs/dashboard.md says; tests/ui/test_dashboard.py takes the mid-run screenshot).
Run: .venv/bin/python docs/make_figures.py [initializers] [dashboard] (default: both; needs
Debian's chromium at /usr/bin/chromium).
"""
from __future__ import annotations

import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import holoviews as hv
import pandas as pd
from playwright.sync_api import sync_playwright

import xcviz
from xcviz.data import load
from xcviz.runs.aggregate import relative_to_final
from xcviz.runs.launcher import wait
from xcviz.records.sinks import MemorySink
from xcviz.runs.store import RunStore
from xcviz.app.ui.bands import band_plot, scatter_by_run

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DOCS = Path(__file__).resolve().parent
OUT = DOCS / "initializers-bibtex.png"
APP = DOCS.parent / "apps" / "dashboard.py"
# the page's text, shadow DOM included (Panel renders its components in shadow roots)
PAGE_TEXT = """() => { const out = []; const walk = (n) => { if (n.nodeType === Node.TEXT_NODE) out.push(n.textContent);
    if (n.shadowRoot) walk(n.shadowRoot); n.childNodes.forEach(walk); }; walk(document.body); return out.join(" "); }"""


def _legend_below(plot, element) -> None:
    """Bokeh hook: the legend HoloViews put below the plot, in one unboxed row from the left."""
    for legend in plot.state.legend:
        legend.update(location="top_left", orientation="horizontal", border_line_alpha=0,
                      background_fill_alpha=0, padding=2, margin=8, spacing=12, label_standoff=4)


# each plot's legend below its plot area, outside the data (as on the dashboard); the figure grows
# by the legend's height, so the plot areas keep about the size they had with the legend inside
LEGEND_BELOW = dict(legend_position="bottom", legend_cols=4, height=335, hooks=[_legend_below])


def figure() -> hv.Layout:
    train, _ = load("bibtex")
    iterations, labels = {}, {}
    for init in ("zero", "bias", "ovap", "msi"):
        sink = MemorySink()
        xcviz.train(train, init=init, threads=2, recorder=sink)
        it = sink.iterations
        it["objective_gap"] = relative_to_final(it)
        it["active_fraction"] = it["active_set"] / train.n
        iterations[init], labels[init] = it, sink.labels
    unfinished = {k: v[v.objective_gap > 0] for k, v in iterations.items()}  # the last iteration's gap is 0
    n_pos = pd.concat([df["n_pos"] for df in labels.values()])
    plots = [band_plot(unfinished, "objective_gap", label="(f - f_final) / f_final", logy=True),
             band_plot(iterations, "active_fraction", label="active set / n"),
             band_plot({k: v[v.iteration > 0] for k, v in iterations.items()}, "step_size",
                       label="line-search multiplier"),
             scatter_by_run(labels, "n_pos", "iterations", logx=True).opts(
                 xticks=log_ticks_125(n_pos.min(), n_pos.max()))]
    return hv.Layout([plot.opts(**LEGEND_BELOW) for plot in plots]).cols(2)


def log_ticks_125(lo: float, hi: float) -> list[float]:
    """The 1-2-5 multiples of powers of ten from lo to hi: the ticks of a log axis spanning little
    more than a decade, where Bokeh's own LogTicker labels 400 500 600 700 800 on top of each other."""
    return [m * 10.0 ** d for d in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in (1, 2, 5) if lo <= m * 10.0 ** d <= hi]


def initializers() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "figure.html"
        hv.save(figure(), page, backend="bokeh", resources="inline")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            tab = browser.new_page(viewport={"width": 960, "height": 660})
            tab.goto(page.as_uri())
            tab.wait_for_selector("canvas")
            tab.wait_for_timeout(1500)
            tab.screenshot(path=str(OUT), full_page=True)
            browser.close()
    print(f"wrote {OUT}")


def dashboard(seconds_in: float = 4.5) -> None:
    """The dashboard at 1440 x 900, `seconds_in` seconds after the first visit's example (zero and
    MSI initialisation on Bibtex)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as home:
        server = subprocess.Popen([sys.executable, "-m", "panel", "serve", str(APP), "--port", str(port), "--address",
                                   "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
                                  env={**os.environ, "XCVIZ_HOME": home}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                tab = browser.new_page(viewport={"width": 1440, "height": 900})
                deadline = time.monotonic() + 60
                while True:
                    try:
                        tab.goto(f"http://127.0.0.1:{port}/dashboard")
                        break
                    except Exception:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)
                tab.wait_for_selector("text=Compare", timeout=60000)
                tab.get_by_role("button", name="Compare zero and MSI initialisation on Bibtex").click()
                tab.wait_for_timeout(1000 * seconds_in)
                deadline = time.monotonic() + 60  # a busy machine: wait until the plots have data
                while time.monotonic() < deadline:
                    if re.search(r"records shown: [1-9]\d{2}", tab.evaluate(PAGE_TEXT)):
                        break
                    tab.wait_for_timeout(250)
                tab.screenshot(path=str(DOCS / "dashboard.png"))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
            store = RunStore(home)  # the runs train on in their own processes: stop them before their store goes
            for row in store.list():
                store.request_cancel(row["id"])
                wait(store, row["id"], timeout=120)
    print(f"wrote {DOCS / 'dashboard.png'}")


def main() -> None:
    wanted = sys.argv[1:] or ["initializers", "dashboard"]
    for name in wanted:
        {"initializers": initializers, "dashboard": dashboard}[name]()


if __name__ == "__main__":
    main()
