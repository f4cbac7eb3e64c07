"""The served page's work on the server, in CPU seconds of the thread that does it: a refresh (each
second while a run trains) and each control the records bench times in the browser (x-axis,
smoothing, log scale, selection). A dashboard is built in this process over a store holding a
finished run of `--records` records and a live one that appends a batch every half second, as
`records_scale.py` builds them. CPU time of one thread hardly moves with the machine's load, so
this splits a browser timing (records_scale.py) into the server's share and the rest even on a
busy machine.
Run alone: `python benchmarks/page_server_cpu.py [--records N] [--home FOLDER]` (a FOLDER that
holds a store is reused as it is).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import panel as pn  # noqa: E402
from bokeh.document import Document  # noqa: E402

import records_scale  # noqa: E402
from xcviz.app.dashboard import Dashboard  # noqa: E402
from xcviz.runs.store import RunStore  # noqa: E402

REPEATS = 5


def cpu_ms(act) -> float:
    start = time.thread_time()
    act()
    return 1000 * (time.thread_time() - start)


def measure(store: RunStore, refreshes: int = 20, repeats: int = REPEATS) -> dict[str, float]:
    """Median CPU milliseconds of `refreshes` refreshes and of each control change (`repeats` times
    each way), with every run ticked and a live run appending."""
    live = records_scale.LiveRun(store, period=0.5)
    live.start()
    try:
        page = Dashboard(store)
        doc = Document()
        doc.add_root(page.view().get_root(doc))
        runs = [r["id"] for r in store.list()]
        page.runs.tick(runs)
        page.refresh()
        plots = page.live.plots
        out = {}
        refreshed = []
        for _ in range(refreshes):
            time.sleep(0.25)
            refreshed.append(cpu_ms(page.refresh))
        out["refresh"] = statistics.median(refreshed)
        changes = {"x-axis": (lambda: setattr(plots.x_axis, "value", "wall"),
                              lambda: setattr(plots.x_axis, "value", "iteration")),
                   "smoothing": (lambda: setattr(plots.smoothing, "value", "ema"),
                                 lambda: setattr(plots.smoothing, "value", "raw")),
                   "log": (lambda: setattr(plots.y_scale, "value", "log"),
                           lambda: setattr(plots.y_scale, "value", "field default")),
                   "selection": (lambda: page.runs.tick(runs[:1]), lambda: page.runs.tick(runs))}
        for name, (there, back) in changes.items():
            there(), back()  # the first visit of a view aggregates it: not counted
            out[name] = statistics.median(cpu_ms(act) for _ in range(repeats) for act in (there, back))
        return out
    finally:
        live.stop()
        store.delete(live.run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=records_scale.RECORDS)
    parser.add_argument("--home", type=Path, help="a store folder to reuse (or fill, if empty)")
    args = parser.parse_args()
    pn.extension("tabulator", "filedropper")
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home or Path(tmp)
        store = RunStore(home)
        if not store.list():
            records_scale.fill_big(store, args.records)
        result = measure(store)
    print(f"server CPU ms (median), {args.records:,} records + a live run:")
    for name, ms in result.items():
        print(f"  {name:10s} {ms:7.1f}")


if __name__ == "__main__":
    main()
