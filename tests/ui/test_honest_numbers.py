"""Honest numbers on screen without a browser (issue 40, item 4): the runs table's train and
compile seconds and the objective-climb flag, the objective figure's climb mark, and the
"compiling kernels" progress of a run warming its kernels up."""
import numpy as np

from xcviz.app.ui.live_plots import CLIMB_LABEL
from xcviz.app.ui.run_view import RunView
from xcviz.app.ui.runs_table import hidden, runs_frame
from xcviz.records.climbs import climbs
from xcviz.runs.progress import COMPILING_TEXT, progress_text
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore

CLIMBING = [0.88, 0.83, 0.82, 0.84, 0.86, 0.9, 0.95, 1.03, 0.99]  # rises from record 2 to record 7
FALLING = [0.88, 0.83, 0.82, 0.81, 0.8, 0.79]


def _multiclass_run(store: RunStore, name: str, objective: list[float], solver: str = "ldgs") -> str:
    run = store.create(RunSpec(dataset="bibtex", solver=solver, params={}).validate().to_json(), name)
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
    climbing, falling = _multiclass_run(store, "up", CLIMBING), _multiclass_run(store, "down", FALLING)
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
