"""What the dashboard shows as it opens: over finished runs, the newest comparison ticked and drawn
(plots carrying that comparison's numbers, the table ticking its rows), which a Compare pressed
before any other tick replaces by the runs it launched; over training runs, those, unticked, as
before; over an empty store, the welcome."""
import numpy as np
import pytest
from bokeh.document import Document

import xcviz.app.dashboard as dashboard_module
from tests.ui.browser import ARTIFACTS, browser_page, page_text
from tests.ui.conftest import server_errors, start_server
from xcviz.cli import main as xcviz
from xcviz.runs.launcher import wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.app.dashboard import Dashboard
from xcviz.app.ui.runs_table import newest_comparison

ITERATIONS, LABELS = 6, 3
# a run name is data: one of the comparison's runs is named like an HTML element that runs a script
HOSTILE = 'cmp-<img src=x onerror="window.pwned=1">-msi'


def _finished(store: RunStore, name: str, init: str, nnz: int, C: float = 1.0, p1: float = 50.0) -> str:
    """A finished dismec run on Bibtex whose label l records nnz(w) = nnz * (iteration + 1) + l at
    each of its iterations: the median over its labels is nnz * (iteration + 1) + 1. Its objective
    falls faster the smaller `nnz` (two runs' gaps drawn apart)."""
    spec = RunSpec(dataset="bibtex", params={"init": init, "C": C}, threads=1).validate()
    run = store.create(spec.to_json(), name)
    labels = np.repeat(np.arange(LABELS), ITERATIONS)
    iteration = np.tile(np.arange(ITERATIONS), LABELS)
    store.append_batch(run, "iteration", {"label": labels, "iteration": iteration,
                                          "objective": 10.0 / (1.0 + iteration) ** (1 + 10 / nnz) + labels,
                                          "nnz": nnz * (iteration + 1) + labels})
    store.update(run, status="done", done=LABELS, total=LABELS, summary={"p@1": p1})
    return run


def _medians(nnz: int) -> list[float]:
    return [float(nnz * (i + 1) + 1) for i in range(ITERATIONS)]


@pytest.fixture
def finished(home):
    """An older run (C = 2), then a comparison of zero and MSI initialisation (C = 1), all done."""
    store = RunStore(home)
    older = _finished(store, "older-zero", "zero", 5000, C=2.0, p1=11.25)
    zero = _finished(store, "cmp-zero", "zero", 100, p1=61.25)
    msi = _finished(store, HOSTILE, "msi", 7, p1=47.5)
    return store, {"older": older, "zero": zero, "msi": msi}


def _spec(init: str, **params) -> str:
    return RunSpec(dataset="bibtex", params={"init": init, **params}).validate().to_json()


def test_the_newest_comparison_is_the_newest_run_with_the_variants_made_just_before_it(tmp_path):
    store = RunStore(tmp_path / "home")
    store.create(_spec("zero", C=2.0), "older")
    compare = [store.create(_spec(init), init) for init in ("zero", "msi", "bias")]
    rows = store.list()
    assert newest_comparison(rows) == compare[::-1]  # the three variants; the run with another C is not one
    again = store.create(_spec("msi"), "msi-again")
    assert newest_comparison(store.list()) == [again, compare[2]]  # each variant once: the newest of each
    other = store.create(RunSpec(dataset="bibtex", solver="memoir", params={}).validate().to_json(), "memoir")
    assert newest_comparison(store.list()) == [other]  # another solver: a comparison of its own
    broken = store.create("not json", "broken")
    assert newest_comparison(store.list()) == [broken]  # an unreadable spec: the newest run alone
    assert newest_comparison([]) == []


def _page(store: RunStore) -> Dashboard:
    dashboard = Dashboard(store)
    dashboard.view().get_root(Document())
    return dashboard


def _launched_without_training(monkeypatch) -> list[str]:
    """Compare records its runs in the store without starting their workers; returns their ids."""
    made = []

    def launch(spec, store, *_args):
        made.append(store.create(spec.to_json(), spec.name))
        return made[-1]

    monkeypatch.setattr(dashboard_module, "launch", launch)
    return made


@pytest.mark.slow
def test_a_page_opened_over_finished_runs_ticks_and_draws_the_newest_comparison(finished, monkeypatch):
    store, ids = finished
    dashboard = _page(store)
    table = dashboard.runs
    assert set(table.ticked()) == {ids["zero"], ids["msi"]} and set(dashboard.shown()) == set(table.ticked())
    assert sorted(table.table.value["id"].iloc[i] for i in table.table.selection) == sorted(table.ticked())
    assert dashboard.plots.curve("nnz", ids["zero"])["m"].tolist() == _medians(100)
    assert dashboard.plots.curve("nnz", ids["msi"])["m"].tolist() == _medians(7)
    assert dashboard.plots.curve("nnz", ids["older"]) is None
    assert dashboard.status.object == ("records shown: 36 (runs shown: 2, ticked when the page opened: the newest "
                                       "comparison; tick runs to choose)")
    assert not dashboard.welcome.visible and not dashboard.export.report.disabled  # the ticked runs export
    made = _launched_without_training(monkeypatch)
    dashboard._launch()  # Compare before any other tick: the launched runs show instead, nothing ticked
    assert len(made) == 2 and table.ticked() == [] and table.table.selection == []
    assert dashboard.shown() == made and "launched from this page" in dashboard.status.object


def test_ticks_the_user_changed_stay_through_a_launch(finished, monkeypatch):
    store, ids = finished
    dashboard = _page(store)
    table = dashboard.runs
    older = int(np.flatnonzero(table.table.value["id"] == ids["older"])[0])
    table.table.selection = [*table.table.selection, older]  # the user ticks the older run as well
    assert set(dashboard.shown()) == set(ids.values()) and "ticked)" in dashboard.status.object
    _launched_without_training(monkeypatch)
    dashboard._launch()
    assert set(table.ticked()) == set(ids.values()) and set(dashboard.shown()) == set(ids.values())


@pytest.mark.slow
def test_a_page_opened_while_a_run_trains_shows_it_unticked_and_an_empty_store_the_welcome(finished, tmp_path):
    store, ids = finished
    queued = store.create(_spec("bias"), "queued")  # owned by this process, alive: it counts as training
    dashboard = _page(store)
    assert dashboard.runs.ticked() == [] and dashboard.shown() == [queued]
    assert "training when it opened" in dashboard.status.object
    empty = _page(RunStore(tmp_path / "empty"))
    assert empty.runs.ticked() == [] and empty.shown() == [] and empty.welcome.visible
    assert "tick runs in the table to plot them" in empty.status.object


# the median lines of the figure whose title starts with the argument: run names and y values
LINES_JS = """(title) => {
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    if (!(m.title && m.renderers && m.title.text.startsWith(title) && m.visible && Bokeh.index.find_one(m)?.el.getClientRects().length)) continue;
    for (const r of m.renderers) {
      const d = r.data_source && r.data_source.data;
      if (d && d.run && d.xs) return {run: Array.from(d.run), ys: Array.from(d.ys, (y) => Array.from(y))};
    }
  }
  return null;
}"""
# elements whose tag or attributes came from a run name (nothing user-named may become markup)
INJECTED_JS = """() => { const out = [];
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.shadowRoot) walk(el.shadowRoot);
    if (el.tagName === 'IMG' && el.getAttribute('src') === 'x' || el.hasAttribute('onerror')) out.push(el.outerHTML);
  });
  walk(document); return {elements: out, pwned: window.pwned === 1}; }"""


def _ticked_names(page) -> list[str]:
    rows = page.locator(".tabulator-row", has=page.locator("input[type=checkbox]:checked"))
    return sorted(rows.locator(".tabulator-cell[tabulator-field=name]").all_inner_texts())


def _lines(page, title: str, names: set[str], seconds: float = 30) -> dict | None:
    """The figure's median lines by run name, once they are those of exactly these runs."""
    for _ in range(int(seconds * 4)):
        lines = page.evaluate(LINES_JS, title)
        if lines and set(lines["run"]) == names:
            return dict(zip(lines["run"], lines["ys"]))
        page.wait_for_timeout(250)
    return lines


@pytest.mark.browser
def test_the_served_page_opens_on_the_newest_comparison_then_shows_what_compare_launches(finished, home, tmp_path):
    """Served and in chromium: the page opens with the comparison's two rows ticked, the others not,
    and the nnz(w) figure drawing each run's medians (numbers a wrong run, or none, would not give);
    the hostile name shows as text. Compare then shows the runs it launched, unticked, as on a page
    where nothing was ticked."""
    store, ids = finished
    data = tmp_path / "data"
    data.mkdir()
    assert xcviz(["generate", str(data / "tiny"), "--n", "300", "--d", "30", "--labels", "6", "--avg-nnz", "8",
                  "--seed", "3"]) == 0
    proc, url = start_server(home, tmp_path / "server.log", [data])
    try:
        with browser_page(1440, 900) as (page, errors):
            page.goto(url)
            page.wait_for_selector("text=Compare", timeout=60000)
            page.get_by_text("runs shown: 2, ticked when the page opened").wait_for(timeout=30000)
            lines = _lines(page, "nnz(w)", {"cmp-zero", HOSTILE})
            assert lines == {"cmp-zero": _medians(100), HOSTILE: _medians(7)}, lines
            assert _ticked_names(page) == sorted(["cmp-zero", HOSTILE])
            older = page.locator(".tabulator-row", has_text="older-zero").locator("input[type=checkbox]")
            assert older.count() == 1 and not older.is_checked()  # listed, not ticked, not drawn
            assert "records shown: 36 (" in page_text(page, shown=True)  # 2 runs of 18 records, not 3
            assert page.evaluate(INJECTED_JS) == {"elements": [], "pwned": False}
            page.screenshot(path=str(ARTIFACTS / "dashboard-opened-over-finished-runs.png"))
            page.locator("select").first.select_option(label="tiny_train.txt")
            page.get_by_role("button", name="Compare", exact=True).click()
            page.get_by_text("runs shown: 2, launched from this page").wait_for(timeout=30000)
            assert _ticked_names(page) == []
            lines = _lines(page, "nnz(w)", {"tiny-zero", "tiny-msi"}, 120)  # numba may compile first
            assert set(lines) == {"tiny-zero", "tiny-msi"}, lines
            page.screenshot(path=str(ARTIFACTS / "dashboard-after-compare-over-opening-ticks.png"))
        assert errors == []
    finally:
        for row in store.list():
            if row["name"].startswith("tiny-"):
                wait(store, row["id"], timeout=300)
        proc.terminate()
        proc.wait(timeout=20)
    assert server_errors(tmp_path / "server.log") == []
