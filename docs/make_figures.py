"""Render the README's figure: the MSI paper's per-iteration plots for the four initializers on Bibtex.

Trains each initializer with a memory sink, lays out the shared band plots (xcviz.ui.bands), saves
them as a standalone Bokeh HTML page and photographs it with headless Chromium through Playwright.
Run: .venv/bin/python docs/make_figures.py (needs Debian's chromium at /usr/bin/chromium).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import holoviews as hv
from playwright.sync_api import sync_playwright

import xcviz
from xcviz.data import load
from xcviz.runs.aggregate import relative_to_final
from xcviz.runs.sinks import MemorySink
from xcviz.ui.bands import band_plot, scatter_by_run

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
OUT = Path(__file__).resolve().parent / "initializers-bibtex.png"


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
    return (band_plot(unfinished, "objective_gap", label="(f - f_final) / f_final", logy=True)
            + band_plot(iterations, "active_fraction", label="active set / n")
            + band_plot({k: v[v.iteration > 0] for k, v in iterations.items()}, "step_size",
                        label="line-search multiplier")
            + scatter_by_run(labels, "n_pos", "iterations", logx=True)).cols(2)


def main() -> None:
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


if __name__ == "__main__":
    main()
