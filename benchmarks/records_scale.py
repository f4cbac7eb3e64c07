"""Records at scale (issue 39, item 3): a finished one-vs-all run of at least 10M iteration records
plus a live one that appends while the page is open, served and driven in headless chromium.

Measured: the first drawing of both runs; the median time of x-axis, smoothing, log-scale and
selection changes in the browser; the store's size on disk; the cost of recording into the store
(a small training with and without its sink); and how long a page takes to open over a store of
200 runs. The records are synthesised through the real sink (`SqliteSink.write`, which writes each
batch and its per-iteration summary), not trained, so building the store takes a minute, not days.
A browser interaction is timed from the widget change to what it changes on the page (the rules
under the plots, the y axes' labels, the plots' legend) plus two animation frames (painted).
Run alone: `python benchmarks/records_scale.py`.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RECORDS = 10_000_000
BLOCK = 4096  # labels per batch
LIVE_PERIOD = 2.0  # seconds between the live run's batches
REPEATS = 5
TARGETS = {"first": 2000.0, "change": 200.0, "store_gb": 1.5, "overhead": 5.0, "open_200": 2000.0}
PAINT = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def _block(rng: np.random.Generator, label0: int, labels: int, wall: float) -> tuple[dict, dict, float]:
    """A batch of whole labels' iteration records (2 to 38 iterations each) and their label records."""
    lengths = rng.integers(2, 39, labels)
    label = np.repeat(np.arange(label0, label0 + labels), lengths)
    iteration = np.concatenate([np.arange(k) for k in lengths])
    n = len(label)
    seconds = rng.gamma(2.0, 2e-4, n)
    iterations = {"label": label, "iteration": iteration, "wall": wall + np.cumsum(seconds) / 2, "seconds": seconds,
                  "objective": 100.0 / (1 + iteration) + rng.random(n),
                  "grad_norm": 10.0 ** -iteration * rng.random(n), "active_set": rng.integers(10, 5000, n),
                  "cg_steps": rng.integers(1, 12, n), "step_size": rng.choice([1.0, 0.5, 0.25], n)}
    label_records = {"label": np.arange(label0, label0 + labels), "iterations": lengths - 1,
                     "n_pos": rng.zipf(1.8, labels), "seconds": rng.gamma(2.0, 1e-3, labels)}
    return iterations, label_records, wall + seconds.sum() / 2


def fill_big(store, records: int = RECORDS, seed: int = 0) -> tuple[str, int, float]:
    """A finished run of at least `records` iteration records written batch by batch through the
    store's sink; returns its id, its record count and the seconds the writing took."""
    from xcviz.runs.store import SqliteSink

    rng = np.random.default_rng(seed)
    run = store.create("{}", "finished-10M")
    sink = SqliteSink(store, run)
    sink.begin({"n": 100_000, "n_features": 50_000, "n_labels": 0, "threads": 2})
    written, label0, wall = 0, 0, 0.0
    start = time.perf_counter()
    while written < records:
        iterations, labels, wall = _block(rng, label0, BLOCK, wall)
        sink.write("iteration", iterations)
        sink.write("label", labels)
        written += len(iterations["label"])
        label0 += BLOCK
    sink.end({})
    took = time.perf_counter() - start
    store.update(run, status="done", done=label0, total=label0, started=time.time() - wall, ended=time.time())
    return run, written, took


class LiveRun:
    """A run owned by this process that appends a batch every `period` seconds until stopped."""

    def __init__(self, store, period: float = LIVE_PERIOD) -> None:
        from xcviz.runs.store import SqliteSink

        self.store, self.period = store, period
        self.run = store.create("{}", "live")
        store.update(self.run, status="running", pid=os.getpid(), total=10**6, started=time.time())
        self.sink = SqliteSink(store, self.run)
        self.sink.begin({"n": 100_000, "n_features": 50_000, "n_labels": 10**6, "threads": 2})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._append, daemon=True)

    def _append(self) -> None:
        rng, label0, wall = np.random.default_rng(1), 0, 0.0
        while not self._stop.wait(self.period):
            iterations, labels, wall = _block(rng, label0, 256, wall)
            self.sink.write("iteration", iterations)
            self.sink.write("label", labels)
            label0 += 256
            self.store.update(self.run, done=label0)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sink.end({})
        self.store.update(self.run, status="cancelled", ended=time.time())


def fill_many(store, runs: int = 200, seed: int = 2) -> None:
    """`runs` finished runs of about 2,000 iteration records each."""
    from xcviz.runs.store import SqliteSink

    rng = np.random.default_rng(seed)
    for r in range(runs):
        run = store.create("{}", f"small-{r:03d}")
        sink = SqliteSink(store, run)
        sink.begin({"n": 5_000, "n_labels": 100})
        iterations, labels, wall = _block(rng, 0, 100, 0.0)
        sink.write("iteration", iterations)
        sink.write("label", labels)
        sink.end({})
        store.update(run, status="done", done=100, total=100, started=time.time() - wall, ended=time.time())


def store_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in home.glob("runs.sqlite*"))


def timed(page, act, done) -> float:
    """Milliseconds from `act` (a change made in the browser) to `done` (a wait for what the change
    shows on the page) plus two animation frames (painted)."""
    start = time.perf_counter()
    act()
    done()
    page.evaluate(PAINT)
    return 1000 * (time.perf_counter() - start)


LOG_AXES = """() => {
    let on = 0;
    for (const doc of (window.Bokeh && Bokeh.documents) || [])
        for (const m of doc.all_models)
            if (typeof m.axis_label === "string" && m.axis_label.endsWith("(log)")) on += 1;
    return on;
}"""


def _sample(page, act, done) -> float:
    """`timed`, or NaN if what the change shows never came (a lost click): counted as missing."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        return timed(page, act, done)
    except PlaywrightTimeout:
        return float("nan")


def _flips(page, actions: list, repeats: int) -> list[float]:
    """`repeats` samples of each of `actions` in turn (a change and its way back), NaN for a lost
    one. After a lost change the page may not be where the next change starts (an unticking the
    server undid leaves the box ticked, so the next ticking would do nothing and time nothing):
    the rest of that round counts as lost and the last change, untimed, brings the page back."""
    out: list[float] = []
    for _ in range(repeats):
        for i, (act, done) in enumerate(actions):
            out.append(_sample(page, act, done))
            if not np.isfinite(out[-1]):
                out += [float("nan")] * (len(actions) - 1 - i)
                _sample(page, *actions[-1])
                break
    return out


def _log_change(page, y_scale, label: str):
    """A change of the y scale to `label` and a wait for it: more axes read "(log)" after a change to
    log, fewer after one back (a figure hidden on this x-axis keeps its axis as it was)."""
    before: list[int] = []

    def act() -> None:
        before[:] = [page.evaluate(LOG_AXES)]
        y_scale.select_option(label=label)

    def done() -> None:
        compare = ">" if label == "log" else "<"
        page.wait_for_function(f"() => ({LOG_AXES})() {compare} {before[0]}", polling=20, timeout=120_000)

    return act, done


def browser_times(home: Path, repeats: int = REPEATS) -> dict:
    """The served page over `home` (the finished and the live run): first drawing of both, then
    each change `repeats` times each way (after a first visit of each view). Each change waits for
    what it shows: the x-axis and smoothing rules in the note under the plots, the y axes' "(log)",
    the finished run's entry in the plots' legend (no run ticked: the page shows the live one)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.ui.browser import browser_page
    from tests.ui.conftest import start_server

    proc, url = start_server(home, home / "server.log")
    try:
        with browser_page(1400, 1100) as (page, errors):
            page.goto(url)
            page.locator(".tabulator-row").first.wait_for(timeout=30_000)
            legend = page.locator(".xcviz-legend")

            def both() -> None:
                legend.filter(has_text="finished-10M").filter(has_text="live").first.wait_for(timeout=30_000)

            header = page.locator(".tabulator-header input[type=checkbox]").first
            lost = 0  # first ticks the page never showed (the box checked, the runs not drawn in 30 s)
            while True:
                first = _sample(page, header.check, both)
                if np.isfinite(first) or lost == 2:
                    break
                lost += 1
                header.uncheck()
            boxes = page.get_by_role("combobox")
            x_axis = boxes.filter(has_text="wall time")
            smoothing = boxes.filter(has_text="rolling median")
            y_scale = boxes.filter(has_text="field default")
            # the header's box: a row's box is redrawn each second with the live run's progress, and a
            # click on it while it is redrawn was lost
            every = page.locator(".tabulator-header input[type=checkbox]").first
            text = page.get_by_text

            def gone() -> None:
                legend.filter(has_text="finished-10M").first.wait_for(state="detached", timeout=30_000)

            flips = {"x-axis iteration/wall time": [
                         (lambda: x_axis.select_option(label="wall time (s)"),
                          lambda: text("x: wall time").first.wait_for(timeout=30_000)),
                         (lambda: x_axis.select_option(label="iteration"),
                          lambda: text("x: iteration").first.wait_for(timeout=30_000))],
                     "smoothing raw/EMA": [
                         (lambda: smoothing.select_option(label="EMA"),
                          lambda: text("Smoothing: EMA").first.wait_for(timeout=30_000)),
                         (lambda: smoothing.select_option(label="raw"),
                          lambda: text("Smoothing: raw").first.wait_for(timeout=30_000))],
                     "log y on/off": [_log_change(page, y_scale, "log"), _log_change(page, y_scale, "field default")],
                     "selection 1/2 runs": [(lambda: every.uncheck(), gone), (lambda: every.check(), both)]}
            for actions in flips.values():  # the first visit of each view aggregates it on the server
                _flips(page, actions, 1)
            times = {name: _flips(page, actions, repeats) for name, actions in flips.items()}
            if errors:
                raise RuntimeError(f"the page logged errors: {errors[:3]}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"first_draw_ms": first, "first_lost": lost, "times": times}


def open_time(home: Path, repeats: int = 3) -> list[float]:
    """Milliseconds from opening the page to its runs table's rows and its first view's curves
    (the newest comparison, ticked) shown and painted, over the store in `home`, `repeats` fresh pages."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.ui.browser import browser_page
    from tests.ui.conftest import start_server

    proc, url = start_server(home, home / "server.log")
    out = []
    try:
        for k in range(repeats + 1):  # the first page also warms the server's imports: not counted
            with browser_page(1400, 1100) as (page, _):
                start = time.perf_counter()
                page.goto(url)
                page.locator(".tabulator-row").first.wait_for(timeout=120_000)
                page.locator(".xcviz-legend").first.wait_for(timeout=120_000)
                page.evaluate(PAINT)
                if k:
                    out.append(1000 * (time.perf_counter() - start))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def recording_overhead(repeats: int = 5) -> dict[str, float]:
    """Median seconds of a small MSI training (bibtex) without a recorder and with the store's
    sink, interleaved."""
    from xcviz.data import load
    from xcviz.records.sinks import NullSink
    from xcviz.runs.store import RunStore, SqliteSink
    from xcviz.solvers.dismec import DismecParams, fit_dismec

    train, _ = load("bibtex")
    params = DismecParams(init="msi")
    with tempfile.TemporaryDirectory() as home:
        store = RunStore(home)
        makers = {"off": lambda: None, "store": lambda: SqliteSink(store, store.create("{}", "bench"))}
        # compiled before timing, with and without a recorder: a recorded run warms kernels of its own once per
        # process (solvers.warmup), which landed in the first recorded training
        fit_dismec(train.X, train.Y, params, threads=2)
        fit_dismec(train.X, train.Y, params, threads=2, recorder=NullSink())
        times: dict[str, list[float]] = {k: [] for k in makers}
        for _ in range(repeats):
            for key, make in makers.items():
                recorder = make()
                t = time.perf_counter()
                fit_dismec(train.X, train.Y, params, threads=2, recorder=recorder)
                times[key].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def measure() -> dict:
    from xcviz.runs.store import RunStore

    out: dict = {"load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(dir=os.environ.get("XCVIZ_BENCH_TMP")) as tmp:
        home = Path(tmp) / "big"
        store = RunStore(home)
        _, out["records"], out["write_s"] = fill_big(store)
        out["store_bytes"] = store_bytes(home)
        live = LiveRun(store)
        live.start()
        try:
            out["browser"] = browser_times(home)
        finally:
            live.stop()
        many = Path(tmp) / "many"
        fill_many(RunStore(many))
        out["open_200_ms"] = open_time(many)
    out["recording"] = recording_overhead()
    out["load_after"] = os.getloadavg()
    return out


def section(result: dict | None = None) -> list[str]:
    """The BENCHMARKS.md section "Records at scale", with its targets table."""
    from targets import target_rows

    r = result or measure()
    browser = r["browser"]
    medians = {name: float(np.nanmedian(s)) if np.isfinite(s).any() else None for name, s in browser["times"].items()}
    overhead = 100 * (r["recording"]["store"] / r["recording"]["off"] - 1)
    gb = r["store_bytes"] / 1e9
    opened = statistics.median(r["open_200_ms"])
    lines = ["## Records at scale", "",
             (f"A finished one-vs-all run of {r['records']:,} iteration records (batches of {BLOCK} whole labels, "
             f"2 to 38 iterations each, written through `SqliteSink` with their per-iteration summaries in "
             f"{r['write_s']:.0f} s) and a live run appending a batch every {LIVE_PERIOD:g} s, served and driven in "
             f"headless chromium (`benchmarks/records_scale.py`). A change is timed from the widget in the browser "
             f"to what it changes on the page (rules under the plots, y axes' labels, the legend) plus two "
             f"animation frames; "
             f"{REPEATS} repeats each way after a first visit. The finished run is read from its summary "
             f"(`runs/sketch.py`), never record by record. Load average before and after: "
             f"{' / '.join(f'{x:.1f}' for x in r['load_before'])} and "
             f"{' / '.join(f'{x:.1f}' for x in r['load_after'])} (2 cores, shared)."), "",
             "| interaction in the browser | median ms | max ms | samples lost (change never shown in 30 s, with the rest of its round) |",
             "|---|---|---|---|"]
    for name, samples in browser["times"].items():
        kept = [x for x in samples if np.isfinite(x)]
        lines.append(f"| {name} | {statistics.median(kept):.0f} | {max(kept):.0f} | {len(samples) - len(kept)} |"
                     if kept else f"| {name} | - | - | {len(samples)} |")
    lines += ["", (f"Recording overhead: MSI on bibtex, 2 threads, median of 5 interleaved: "
                   f"{r['recording']['off']:.2f} s without a recorder, {r['recording']['store']:.2f} s into the store. "
                   f"Page open over 200 finished runs: {', '.join(f'{x:.0f}' for x in r['open_200_ms'])} ms. "
                   f"First ticks lost before the first drawing (the box checked, both runs not drawn within 30 s, "
                   f"unticked and ticked again): {browser.get('first_lost', 0)}."), ""]
    checks = [("first drawing, finished 10M + live run (ms)", browser["first_draw_ms"], TARGETS["first"], " max", ""),
              *[(f"{name}, median in the browser (ms)", median, TARGETS["change"], " max",
                "" if median is not None else "every sample lost")
                for name, median in medians.items()],
              ("store on disk with the 10M-record run (GB)", gb, TARGETS["store_gb"], " max", ""),
              ("recording overhead, store sink vs none (%)", overhead, TARGETS["overhead"], " max", "bibtex, MSI"),
              ("page open with 200 runs in the store (ms)", opened, TARGETS["open_200"], " max", "median of 3")]
    return lines + target_rows(checks, "### Targets")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    print("\n".join(section()))
