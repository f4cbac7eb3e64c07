"""Legends below the figures: as many entries a row as the longest name allows. Three run names of
about 20 characters, in rows of three, were cut at the figure's edge and widened the page beyond
the window (`bibtex-memoir-si`, a page 1494 px wide in a 1440 px window)."""
import pytest

from tests.ui.browser import ARTIFACTS, browser_page
from tests.ui.conftest import server_errors, start_server
from tests.ui.test_first_view import _finished
from xcviz.runs.store import RunStore
from xcviz.app.ui.figures import legend_columns

NAMES = {"zero": "bibtex-memoir-simplelsh", "msi": "bibtex-memoir-random-xy", "bias": "bibtex-memoir-exact-xyz"}
# the legends' entries per row in the page, and the page's width against the window's
LAYOUT_JS = """() => {
  const ncols = [];
  for (const doc of Bokeh.documents) for (const m of doc.all_models)
    if (m.type === 'Legend' && m.items.length) ncols.push(m.ncols);
  return {ncols, page: document.documentElement.scrollWidth, window: window.innerWidth};
}"""


def test_legend_rows_hold_what_fits():
    assert legend_columns(["bibtex-msi", "bibtex-zero"]) == 3
    assert legend_columns(["bibtex-memoir-simplelsh", "x"]) == 2  # 23 characters: two a row
    assert legend_columns(["L-BFGS best (" + "x" * 40 + ")"]) == 1
    assert legend_columns([]) == 3


@pytest.mark.browser
def test_three_long_run_names_keep_the_page_within_the_window(home, tmp_path):
    store = RunStore(home)
    for init, name in NAMES.items():
        _finished(store, name, init, 50)
    proc, url = start_server(home, tmp_path / "server.log")
    try:
        with browser_page(1440, 900) as (page, errors):
            page.goto(url)
            page.get_by_text("runs shown: 3, ticked when the page opened").wait_for(timeout=60000)
            for _ in range(120):
                layout = page.evaluate(LAYOUT_JS)
                if layout["ncols"] and set(layout["ncols"]) == {2}:
                    break
                page.wait_for_timeout(250)
            assert layout["ncols"] and set(layout["ncols"]) == {2}, layout
            assert layout["page"] <= layout["window"], layout  # no sideways scrolling
            page.screenshot(path=str(ARTIFACTS / "dashboard-long-run-names.png"))
        assert errors == []
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert server_errors(tmp_path / "server.log") == []


def test_the_per_label_figures_legends_fit_long_names_too():
    """The positives scatter names the runs in its legends like the live plots do."""
    import pandas as pd

    from xcviz.app.ui.label_views import PositivesView
    from xcviz.app.ui.records import PlotRun, RunRecords

    runs = {}
    for i, name in enumerate(NAMES.values()):
        records = RunRecords()
        records.add_labels(pd.DataFrame({"label": [0, 1], "n_pos": [3, 9], "iterations": [5, 4],
                                         "seconds": [0.1, 0.2]}))
        runs[f"r{i}"] = PlotRun(name, "#000", records, 2)
    view = PositivesView()
    view.show(runs)
    assert [legend.ncols for fig in (view.iterations, view.seconds) for legend in fig.legend] == [2, 2]
    view.show({"r0": PlotRun("bibtex-msi", "#000", runs["r0"].records, 2)})
    assert [legend.ncols for fig in (view.iterations, view.seconds) for legend in fig.legend] == [3, 3]
