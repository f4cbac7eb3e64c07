"""Run colours are distinct among the runs shown together, in the page's and notebooks' live view,
the report and the Workers view, and a run keeps its colour while a view lives (issue #40: runs 1
and 11 were both red side by side, the colour being the run's number modulo 10)."""
from __future__ import annotations

import re

from xcviz.app.report import build_report
from xcviz.app.ui.colors import PALETTE, RunColors, preferred_color
from xcviz.app.ui.run_view import RunView
from xcviz.runs.store import RunStore

from benchmarks.dashboard import fill_store


def test_colours_distinct_within_any_selection_and_stable_per_run():
    book = RunColors()
    wanted = {f"r{i}": preferred_color(i) for i in range(1, 31)}  # 1 and 11, 21 ask for the same
    every = book.assign(wanted)
    assert len(set(every.values())) == 30  # more runs than the palette: still distinct
    assert every["r1"] == preferred_color(1) and every["r11"] != every["r1"]
    pair = book.assign({"r11": wanted["r11"], "r21": wanted["r21"]})
    assert pair == {"r11": every["r11"], "r21": every["r21"]}  # each keeps what it was given
    fresh = RunColors().assign({"r11": wanted["r11"], "r1": wanted["r1"]})
    assert fresh["r11"] == PALETTE[1] and fresh["r1"] != fresh["r11"]


def test_run_view_and_report_give_runs_ten_apart_different_colours(tmp_path):
    store = RunStore(tmp_path)
    runs = fill_store(store, runs=11, records=30)
    rows = {r["id"]: r for r in store.list()}
    first, eleventh = runs[0], runs[10]
    assert preferred_color(rows[first]) == preferred_color(rows[eleventh])  # what used to be drawn
    view = RunView(store)
    shown = view.update(rows, [first, eleventh])
    assert shown[first].color != shown[eleventh].color
    assert view.update(rows, [eleventh, first])[eleventh].color == shown[eleventh].color  # stable
    lines = view.plots._sources["objective_gap"][1].data
    assert len(set(lines["color"])) == 2
    page = build_report(store, [first, eleventh])
    colours = set(re.findall(r'"(#[0-9a-f]{6})"', page)) & {shown[first].color, shown[eleventh].color}
    assert len(colours) == 2
