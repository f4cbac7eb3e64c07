"""Honest numbers on screen without a browser (issue 40, item 4): the runs table's train and
compile seconds and the objective-climb flag, the objective figure's climb mark, and the
"compiling kernels" progress of a run warming its kernels up; and, in chromium, all of it on the
served page."""
import os

import numpy as np
import pytest

from xcviz.app.ui.live_plots import CLIMB_LABEL
from xcviz.app.ui.run_view import RunView
from xcviz.app.ui.runs_table import hidden, runs_frame
from xcviz.records.climbs import climbs
from xcviz.runs.progress import COMPILING_TEXT, progress_text
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from tests.ui.browser import ARTIFACTS, browser_page, page_text

CLIMBING = [0.88, 0.83, 0.82, 0.84, 0.86, 0.9, 0.95, 1.03, 0.99]  # rises from record 2 to record 7
FALLING = [0.88, 0.83, 0.82, 0.81, 0.8, 0.79]


def _multiclass_run(store: RunStore, name: str, objective: list[float], gradient: str = "decomp") -> str:
    """A finished LDGS run on Bibtex with these objectives, one record each, and a summary of 1.25 s
    of training after 31.5 s of compiling (a fresh checkout's)."""
    spec = RunSpec(dataset="bibtex", solver="ldgs", params={"gradient": gradient}, threads=1)
    run = store.create(spec.validate().to_json(), name)
    n = len(objective)
    store.append_batch(run, "iteration", {"label": np.zeros(n, np.int64), "iteration": np.arange(n),
                                          "epoch": np.arange(n) / 10, "objective": np.asarray(objective)})
    summary = {"train_seconds": 1.25, "compile_seconds": 31.5,
               "objective_climbs": [list(c) for c in climbs(objective)]}
    store.update(run, status="done", summary=summary)
    return run


def test_the_runs_table_shows_train_and_compile_seconds_and_flags_a_climb(tmp_path):
    store = RunStore(tmp_path / "home")
    climbing, falling = _multiclass_run(store, "up", CLIMBING), _multiclass_run(store, "down", FALLING)
    frame = runs_frame(store.list()).set_index("id")
    assert frame.loc[climbing, "climbs"] == "climbs 0.82→1.03" and frame.loc[falling, "climbs"] == ""
    assert frame.loc[climbing, "train s"] == 1.25 and frame.loc[climbing, "compile s"] == 31.5
    assert "climbs" not in hidden(runs_frame(store.list())) and "train s" not in hidden(runs_frame(store.list()))
    store.delete(climbing)
    assert "climbs" in hidden(runs_frame(store.list()))  # no run climbs: the column is hidden


def test_the_objective_figure_marks_a_climb_and_only_there(tmp_path):
    store = RunStore(tmp_path / "home")
    climbing, falling = _multiclass_run(store, "up", CLIMBING), _multiclass_run(store, "down", FALLING, "exact")
    view = RunView(store)
    view.update({r["id"]: r for r in store.list()}, [climbing, falling])
    marked = view.plots._sources["objective"][3].data
    assert marked["climb"] == [CLIMB_LABEL]  # one stretch, of the climbing run
    assert np.allclose(marked["ys"][0], np.log10(CLIMBING[2:8]))  # records 2 to 7, on the log axis drawn
    assert view.plots.curve("objective", falling)["climb"].sum() == 0
    legend = [item.label["field"] for item in view.plots._figures["objective"].object.legend[0].items]
    assert "climb" in legend  # the legend names the mark by its source's column: "objective climbs"


def test_a_run_compiling_its_kernels_says_so_in_its_progress(tmp_path):
    store = RunStore(tmp_path / "home")
    run = store.create(RunSpec(dataset="bibtex").validate().to_json(), "fresh")
    store.update(run, status="running", total=159, summary={"phase": "compiling"})
    assert progress_text(store.get(run)) == COMPILING_TEXT == "compiling kernels"
    store.update(run, summary={"phase": "training"}, done=10)
    assert progress_text(store.get(run)) == "10/159 labels"


# the objective figure's climb marks as the page holds them: one list of y values per marked stretch
CLIMBS_JS = """() => {
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    if (!(m.title && m.renderers && m.title.text.startsWith('objective') && m.visible && Bokeh.index.find_one(m)?.el.getClientRects().length)) continue;
    for (const r of m.renderers) {
      const d = r.data_source && r.data_source.data;
      if (d && d.climb && d.ys) return Array.from(d.ys, (y) => Array.from(y));
    }
  }
  return null;
}"""


def _shown_text(page, wanted: str, seconds: float = 30) -> str:
    """The page's shown text once it holds `wanted` (the page refreshes once a second)."""
    for _ in range(int(seconds * 4)):
        text = page_text(page, shown=True)
        if wanted in text:
            return text
        page.wait_for_timeout(250)
    return text


@pytest.mark.browser
def test_the_page_shows_compile_seconds_the_climb_flag_and_mark_and_a_compiling_run(home, server):
    """Served and in chromium: a comparison of a climbing LDGS decomp run and a falling exact one
    opens ticked; the runs table shows both runs' train and compile seconds apart and flags the
    climbing run only; the objective figure marks its climb (records 2 to 7, on the log axis);
    a run then found compiling its kernels says so in its row."""
    store = RunStore(home)
    _multiclass_run(store, "ldgs-exact", FALLING, "exact")
    _multiclass_run(store, "ldgs-decomp", CLIMBING)
    with browser_page(1440, 900) as (page, errors):
        page.goto(server)
        page.wait_for_selector("text=Compare", timeout=60000)
        page.get_by_text("runs shown: 2, ticked when the page opened").wait_for(timeout=30000)
        text = _shown_text(page, "climbs 0.82→1.03")
        assert text.count("climbs 0.82→1.03") == 1 and "⚠ objective" in text, text[:2000]
        assert "compile s" in text and "train s" in text and text.count("31.50") == 2 and text.count("1.25") >= 2
        marks = None
        for _ in range(120):
            marks = page.evaluate(CLIMBS_JS)
            if marks:
                break
            page.wait_for_timeout(250)
        assert marks is not None and len(marks) == 1 and np.allclose(marks[0], np.log10(CLIMBING[2:8])), marks
        page.screenshot(path=str(ARTIFACTS / "dashboard-climb-and-compile-seconds.png"))
        compiling = store.create(RunSpec(dataset="bibtex").validate().to_json(), "fresh-checkout")
        store.update(compiling, status="running", pid=os.getpid(), total=159, summary={"phase": "compiling"})
        assert "compiling kernels" in _shown_text(page, "compiling kernels")
        page.screenshot(path=str(ARTIFACTS / "dashboard-compiling-kernels.png"))
    assert errors == []
