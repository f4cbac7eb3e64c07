"""The dashboard's components without a browser: launch panel per solver, data set confinement,
the runs table, a failed run's error, and responsiveness with 20 runs of 10^5 records."""
import json
import time

import param
import pytest
from bokeh.document import Document

from benchmarks.dashboard import fill_store, measure
from xcviz import solvers
from xcviz.runs.launcher import wait
from xcviz.runs.store import RunStore
from xcviz._util.text import markdown_text
from xcviz.app.dashboard import Dashboard
from xcviz.app.ui.datasets import DatasetRefused, checked_dataset, dataset_choices
from xcviz.app.ui.launch import LaunchPanel
from xcviz.app.ui.runs_table import PARAMETERS, hidden, parameter_texts, runs_frame


class OracleParams(param.Parameterized):
    oracle = param.Selector(default="exact", objects=["exact", "hnsw", "lsh"], doc="Margin oracle.")
    rank = param.Integer(default=8, bounds=(1, 64), doc="Rank of the sketch.")
    average = param.Boolean(default=False, doc="Average the iterates.")


def test_launch_panel_follows_the_solver_registry(monkeypatch):
    memoir = solvers.Solver("memoir", OracleParams, None, compare="oracle", iter_fields=())
    monkeypatch.setitem(solvers.SOLVERS, "memoir", memoir)
    panel = LaunchPanel({"bibtex": "bibtex"})
    assert panel.solver.options == list(solvers.SOLVERS)
    assert panel.variants.options == ["zero", "bias", "ovap", "msi"] and panel.variants.value == ["zero", "msi"]
    panel.solver.value = "memoir"
    assert panel.variants.label == "Variants to compare (oracle)" and panel.variants.options == ["exact", "hnsw", "lsh"]
    rank = panel.inputs["rank"].widget  # labelled as the parameter is spelled, its doc and bounds as tooltip
    assert rank.label == "rank" and rank.description == "Rank of the sketch. Bounds: 1 to 64."
    average = panel.inputs["average"].widget  # an on/off choice keeps its doc as tooltip
    assert (average.description, average.value) == ("Average the iterates.", False)
    average.value = True
    assert panel.specs("bibtex", None)[0].params["average"] is True
    panel.solver.value = "ppdsparse"
    panel.variants.value = ["squared_hinge", "hinge"]
    specs = panel.specs("bibtex", None)
    assert [(s.solver, s.params["loss"], s.name) for s in specs] == [
        ("ppdsparse", "squared_hinge", "bibtex-ppdsparse-squared_hinge"), ("ppdsparse", "hinge", "bibtex-ppdsparse-hinge")]
    panel.solver.value = "dismec"  # a solver shown before comes back as it was left
    panel.inputs["C"].widget.value = "100"
    panel.inputs["loss"].widget.value = "logistic"
    panel.variants.value = ["bias"]
    panel.solver.value = "ppdsparse"
    assert panel.variants.value == ["squared_hinge", "hinge"]
    panel.solver.value = "dismec"
    assert (panel.inputs["C"].widget.value, panel.inputs["loss"].widget.value) == ("100.0", "logistic")
    assert [(s.params["C"], s.params["loss"], s.params["init"]) for s in panel.specs("bibtex", None)] == [
        (100.0, "logistic", "bias")]
    assert [s.name for s in panel.specs("bibtex", None)] == ["bibtex-bias"]  # the default solver's names stay short
    names = []
    for solver in ("memoir", "ldgs"):  # both compare an `exact` variant: their names tell them apart
        panel.solver.value = solver
        panel.variants.value = ["exact"]
        names += [s.name for s in panel.specs("bibtex", None)]
    assert names == ["bibtex-memoir-exact", "bibtex-ldgs-exact"]


def test_refused_values_are_shown_and_block_compare_and_groups_follow_the_variants():
    panel = LaunchPanel({"bibtex": "bibtex"})
    c = panel.inputs["C"]
    for typed, says in (("-5", "C must be at least 1e-06, not -5.0"), ("0", "C must be at least 1e-06, not 0.0"),
                        ("abc", "C must be a number, not 'abc'")):
        c.widget.value = typed
        assert c.error.startswith(says) and c.message.visible and panel.compare_button.disabled
        assert c.widget.value == typed and panel.blocked.visible
        with pytest.raises(ValueError, match="C"):
            panel.specs("bibtex", None)
    c.widget.value = "2.5"
    assert not c.message.visible and not panel.compare_button.disabled
    assert {s.params["C"] for s in panel.specs("bibtex", None)} == {2.5}
    assert panel.inputs["msi_t"].widget.label == "msi_t" and panel.inputs["cg_eps"].widget.label == "cg_eps"
    msi, ovap = panel.groups["msi"], panel.groups["ovap"]  # an initialiser's own parameters, in its group
    assert msi.visible and not ovap.visible and msi.collapsed
    panel.variants.value = ["ovap"]
    assert ovap.visible and not msi.visible
    panel.solver.value = "memoir"  # MEMOIR's default (unset: 1e-4 for l2) learns; the tooltip says why
    assert panel.params.lam is None and "1.4% accuracy" in panel.inputs["lam"].widget.description
    assert set(panel.groups) >= {"hnsw", "simplelsh", "spherical"}
    panel.variants.value = ["exact", "hnsw"]
    assert panel.groups["hnsw"].visible and not panel.groups["spherical"].visible
    assert "hnsw_M" not in [getattr(o, "objects", [None])[0] for o in panel.params_box.objects]
    assert {s.params["lam"] for s in panel.specs("bibtex", None)} == {None}


def test_datasets_are_confined_to_the_data_folders(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    data.mkdir()
    outside.mkdir()
    (data / "small_train.txt").write_text("1 2 2\n0 0:1.0\n")
    (data / "small_test.txt").write_text("1 2 2\n1 1:1.0\n")
    (outside / "secret_train.txt").write_text("1 2 2\n0 0:1.0\n")
    (data / "escape_train.txt").symlink_to(outside / "secret_train.txt")
    choices = dataset_choices([data])
    assert "small_train.txt" in choices and "escape_train.txt" not in choices and "bibtex" in choices
    assert checked_dataset(str(data / "small_train.txt"), [data]) == (str(data / "small_train.txt"),
                                                                      str(data / "small_test.txt"))
    for refused in (str(data / ".." / "outside" / "secret_train.txt"), str(data / "escape_train.txt"), "/etc/passwd"):
        with pytest.raises(DatasetRefused, match="outside the data folders"):
            checked_dataset(refused, [data])


@pytest.mark.slow
def test_an_unreadable_dataset_fails_its_run_and_the_page_says_why(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "broken_train.txt").write_text("2 3 2\n0 0:1.0\n1 1:x\n")
    dashboard = Dashboard(RunStore(tmp_path / "home"), data_dirs=[data])
    dashboard.view().get_root(Document())
    dashboard.launcher.dataset.value = str(data / "broken_train.txt")
    dashboard.launcher.variants.value = ["msi"]
    dashboard._launch()
    (run,) = dashboard.watched
    assert wait(dashboard.store, run, timeout=120)["status"] == "failed"
    dashboard.refresh()
    row = dashboard.runs.table.value.iloc[0]
    assert row["status"] == "failed" and "broken_train.txt:3" in row["error"]
    dashboard.runs.table.selection = [0]
    assert dashboard.runs.failures.visible and "broken-msi failed" in dashboard.runs.failures.object
    (data / "broken_train.txt").unlink()  # a choice that went away is refused, the page keeps working
    dashboard._launch()
    assert dashboard.launch_message.visible and "no such file" in dashboard.launch_message.object


def test_a_restarted_run_is_read_again_without_its_dropped_records(tmp_path):
    """A multiclass run that is resumed starts again and its old records are dropped from the store:
    the page must read it again (it had stopped asking once the run ended) and draw only the new
    records, batch numbers having moved on."""
    import numpy as np

    from xcviz.runs.spec import RunSpec
    from xcviz.app.ui.run_view import RunView

    store = RunStore(tmp_path / "home")
    run = store.create(RunSpec(dataset="bibtex", solver="memoir", params={}).validate().to_json(), "mc")

    def window(iterations, objective):
        store.append_batch(run, "iteration", {"label": np.zeros(len(iterations), np.int64),
                                              "iteration": np.asarray(iterations), "epoch": np.asarray(iterations) / 10,
                                              "objective": np.full(len(iterations), objective)})

    view = RunView(store)
    window([0, 1, 2], 5.0)
    store.update(run, status="cancelled")
    view.update({r["id"]: r for r in store.list()}, [run])
    assert len(view.cache.runs[run].iterations) == 3
    store.update(run, status="running")  # resumed: the worker drops the records and starts over
    store.clear_records(run)
    window([0], 7.0)
    runs = view.update({r["id"]: r for r in store.list()}, [run])
    assert len(runs[run].records.iterations) == 1
    assert list(view.plots.curve("objective", run)["m"]) == [7.0]  # the curve holds the new start only
    window([1, 2], 6.0)
    store.update(run, status="done")
    view.update({r["id"]: r for r in store.list()}, [run])
    assert list(view.plots.curve("objective", run)["m"]) == [7.0, 6.0, 6.0]
    lines = view.plots._sources["objective"][1].data  # what the figure's median glyph is sent
    assert lines["run"] == ["mc"] and list(lines["ys"][0]) == list(np.log10([7.0, 6.0, 6.0]))


def test_runs_table_filters_and_deletes_after_confirmation(tmp_path):
    store = RunStore(tmp_path)
    runs = fill_store(store, runs=3, records=500)
    store.update(runs[2], spec=store.get(runs[2])["spec"].replace('"dismec"', '"ppdsparse"'))
    dashboard = Dashboard(store)
    dashboard.view().get_root(Document())
    table = dashboard.runs
    assert table.ticked() == [runs[2]]  # the page opened on the newest run (another solver: a comparison alone)
    table.table.selection = []
    table.resume_button.clicks += 1  # nothing ticked: the page says what to do
    assert table.message.visible and markdown_text("Tick the runs to resume first.") in table.message.object
    # rows in the order the runs were made (a new run never moves a row), shown newest first
    assert list(table.table.value["solver"]) == ["dismec", "dismec", "ppdsparse"]
    assert list(table.table.value.index) == [r["number"] for r in store.list()]
    assert table.table.sorters == [{"field": "number", "dir": "desc"}] and "number" in table.table.hidden_columns
    assert {"p@1", "ndcg@3", "psp@5", "variant", "progress"} <= set(table.table.value.columns)
    table.filters["solver"].value = ["ppdsparse"]
    assert list(table.table.value["id"]) == [runs[2]]
    table.table.selection = [0]
    table.filters["solver"].value = []
    assert table.table.selection == [2] and table.ticked() == [runs[2]]  # the tick followed its run
    table.cancel_button.clicks += 1  # a finished run: the click says why it does nothing
    assert table.message.visible and table.message.alert_type == "danger"
    assert "has already ended as done, nothing to cancel" in table.message.object
    assert store.get(runs[2])["status"] == "done"
    table.delete_button.clicks += 1
    assert table.confirm.visible and "Delete 1 run?** This removes its records and model." in table.confirm_text.object
    table.keep_button.clicks += 1
    assert not table.confirm.visible and len(store.list()) == 3
    table.delete_button.clicks += 1
    table.confirm_button.clicks += 1
    assert [r["id"] for r in store.list()] == runs[:2] and list(table.table.value["id"]) == runs[:2]
    assert runs[2] not in dashboard.cache.runs


def test_the_parameters_column_names_what_differs_among_a_solvers_runs():
    """One column says which parameters set a run apart from the other runs of its solver: C differs
    between the two DiSMEC runs, eps does not, their variant (init) has its own column; MEMOIR's lone
    run differs from nothing; a parameter only one run of a solver holds differs."""
    specs = [{"solver": "dismec", "params": {"init": "msi", "C": 1.0, "eps": 0.1}},
             {"solver": "dismec", "params": {"init": "zero", "C": 2.0, "eps": 0.1}},
             {"solver": "memoir", "params": {"C": 4.0}}, {}]
    assert parameter_texts(specs) == ["C=1.0", "C=2.0", "", ""]
    assert parameter_texts([{"solver": "ppdsparse", "params": {"C": 1.0}},
                            {"solver": "ppdsparse", "params": {"C": 1.0, "cg_eps": 0.25, "eps": 0.01}}]) == \
        ["", "cg_eps=0.25, eps=0.01"]
    frame = runs_frame([])
    columns = list(frame.columns)
    assert PARAMETERS in hidden(frame) and columns.index(PARAMETERS) == columns.index("variant") + 1


def test_a_parameter_that_comes_to_differ_shows_its_column_with_the_row(tmp_path):
    """The parameters column is hidden while no run's parameters differ from its solver's other
    runs; the refresh that brings a run that differs shows it, with the run's parameter in its
    row, and changes neither the table's columns nor its configuration (Tabulator would rebuild)."""
    store = RunStore(tmp_path)
    fill_store(store, runs=2, records=10)
    dashboard = Dashboard(store)
    doc = Document()
    doc.add_root(dashboard.view().get_root(doc))
    table = dashboard.runs.table
    assert PARAMETERS in table.hidden_columns
    spec = json.loads(store.list()[0]["spec"])
    spec["params"]["cg_eps"] = 0.25
    store.create(json.dumps(spec), "differs")
    events = []
    doc.on_change(events.append)
    dashboard.refresh()
    assert PARAMETERS not in table.hidden_columns
    assert table.value[PARAMETERS].iloc[-1] == "cg_eps=0.25"
    changed = [getattr(e, "attr", "") for e in events if getattr(e, "model", None) is not None]
    assert "hidden_columns" in changed and "configuration" not in changed and "columns" not in changed


def test_runs_table_column_types_do_not_depend_on_the_rows(tmp_path):
    """Panel's Tabulator names a number sorter for numeric columns in its configuration and
    rebuilds itself, dropping the page's ticks, when that changes: the ETA column was numbers while
    a run trained and None, an object column, once none did."""
    store = RunStore(tmp_path)
    runs = fill_store(store, runs=2, records=10)
    store.update(runs[1], status="running", started=time.time() - 10, done=3, total=10)
    frames = [runs_frame(store.list())]
    store.update(runs[1], status="done", done=10, summary={"accuracy": 50.0})
    frames += [runs_frame(store.list()), runs_frame([])]
    assert frames[0]["ETA s"].notna().any() and frames[1]["ETA s"].isna().all()
    for frame in frames[1:]:
        assert frame.dtypes.to_dict() == frames[0].dtypes.to_dict()
    assert frames[0]["ETA s"].dtype.kind == "f" and frames[0]["accuracy"].dtype.kind == "f"


@pytest.mark.slow
def test_every_interaction_answers_with_20_runs_of_100k_records(tmp_path):
    """Every timed interaction of benchmarks/dashboard.py runs through on 2M records; its speed (the
    200 ms target) is measured there, in `make bench`, not bounded here, where a loaded machine
    made a wall-clock bound fail."""
    fill_store(RunStore(tmp_path), runs=20, records=100_000)
    result = measure(tmp_path, repeats=2)
    assert result["runs"] == 20 and result["records"] >= 20 * 100_000
    assert result["times"] and all(len(samples) == 2 for samples in result["times"].values()), result["times"]


def test_a_new_figure_reaches_the_page_whole_in_one_message(tmp_path):
    """When a shown run brings a new field, its figure must join the page already drawn: no change
    to a model inside it may be sent before (or apart from) the layout change that adds it. Served,
    Panel can hold that layout message back while Bokeh sends other changes at once, and the page
    then refused them ("reference pNNNN isn't known", seen in CI) and drew the figure empty."""
    import numpy as np
    from bokeh.document import Document
    from bokeh.document.events import ModelChangedEvent

    from xcviz.runs.spec import RunSpec
    from xcviz.app.ui.run_view import RunView

    store = RunStore(tmp_path / "home")
    spec = RunSpec(dataset="bibtex", solver="memoir", params={}).validate().to_json()
    runs = {}
    for name, fields in (("first", {"objective": [5.0, 4.0]}), ("second", {"objective": [3.0, 2.0],
                                                                            "accuracy": [0.2, 0.3],
                                                                            "p_at_1": [0.5, 0.625],
                                                                            "macro_f1": [0.1, 0.25]})):
        runs[name] = store.create(spec, name)
        store.append_batch(runs[name], "iteration", {"label": np.zeros(2, np.int64), "iteration": np.arange(2),
                                                     "epoch": np.arange(2) / 10,
                                                     **{k: np.array(v) for k, v in fields.items()}})
    view = RunView(store)
    doc = Document()
    doc.add_root(view.plots.panel().get_root(doc))
    rows = {r["id"]: r for r in store.list()}
    view.update(rows, [runs["first"]])
    events = []
    doc.on_change(events.append)
    view.update(rows, [runs["first"], runs["second"]])  # the second run records accuracy: a new figure
    added = view.plots._figures["accuracy"].object
    inside = {m.id for m in added.references()}
    grid = [e for e in events if isinstance(e, ModelChangedEvent) and e.attr == "children"]
    assert grid and added in grid[-1].model.children["flex-item"], "the new figure joined the grid"  # FlexBox's slot
    early = [e for e in events if getattr(e, "model", None) is not None and e.model.id in inside]
    assert early == [], [(type(e).__name__, type(e.model).__name__) for e in early]
    drawn = view.plots._sources["accuracy"][1].data  # and it arrived with its data
    assert drawn["run"] == ["second"] and list(drawn["ys"][0]) == [20.0, 30.0]
    precision = view.plots._sources["p_at_1"][1].data  # LDGS's P@1 in percent too, as the runs table prints it
    assert list(precision["ys"][0]) == [50.0, 62.5] and "%" in view.plots._figures["p_at_1"].object.yaxis[0].axis_label
    f1 = view.plots._sources["macro_f1"][1].data  # macro-F1 too (it was drawn from 0 to 1 beside accuracy in %)
    assert list(f1["ys"][0]) == [10.0, 25.0] and "%" in view.plots._figures["macro_f1"].object.yaxis[0].axis_label


@pytest.mark.slow
def test_an_opened_tab_reaches_the_page_drawn_in_one_message(tmp_path):
    """Opening a tab puts its figures on the page: they must arrive up to date, with no change to a
    model inside them sent apart from the layout change that adds them (as above: Panel can hold that
    message back while Bokeh sends the others at once). With Panel's dynamic tabs, a tab arrived as
    it was last drawn and its figures were updated a tick later, after the labels that came meanwhile."""
    import os
    import socket

    import numpy as np
    from bokeh.document import Document

    store = RunStore(tmp_path / "home")
    (run,) = fill_store(store, runs=1, records=600)
    store.update(run, status="running", pid=os.getpid(), host=socket.gethostname())  # it trains on
    dashboard = Dashboard(store)
    doc = Document()
    doc.add_root(dashboard.view().get_root(doc))
    dashboard.runs.table.selection = [0]
    label = int(store.get(run)["done"])
    assert "inspector" not in vars(dashboard) and "workers" not in vars(dashboard)  # made when their tab opens
    figures = {0: dashboard.plots.figures, 1: dashboard.positives.figures, 2: lambda: dashboard.inspector._figures,
               3: lambda: dashboard.workers.figures()}
    events = []
    doc.on_change(events.append)
    for tab in (1, 2, 0, 3, 2, 1):  # each tab, then the per-label ones again
        labels = np.arange(label, label + 3)  # labels trained since the last refresh
        store.append_batch(run, "iteration", {"label": labels, "iteration": np.zeros(3, np.int64),
                                              "objective": np.full(3, 5.0), "nnz": np.full(3, 7)})
        store.append_batch(run, "label", {"label": labels, "iterations": np.ones(3, np.int64),
                                          "n_pos": labels % 5 + 1, "seconds": np.full(3, 0.01)})
        label += 3
        events.clear()
        dashboard.tabs.active = tab
        added = figures[tab]()
        assert added and all(fig.document is doc for fig in added), tab  # on the page
        inside = {m.id for fig in added for m in fig.references()}
        apart = [e for e in events if getattr(e, "model", None) is not None and e.model.id in inside]
        assert apart == [], (tab, [(type(e).__name__, type(e.model).__name__, getattr(e, "attr", "")) for e in apart])
    # and the per-label figures, drawn when their tab opens (not while it is closed), arrived holding
    # every label trained so far
    assert sorted(dashboard.positives.source.data["label"]) == list(range(label))


def test_the_per_label_views_say_a_run_has_not_recorded_before_calling_it_multiclass():
    """A dismec run just launched was called "a multiclass solver" until its first records came."""
    import pandas as pd

    from xcviz.app.ui.label_views import _no_labels
    from xcviz.app.ui.records import PlotRun, RunRecords

    fresh = PlotRun("delicious-msi", "#000", RunRecords(), 983)
    assert _no_labels({"r": fresh}) == "The shown runs have not recorded yet."
    multiclass = RunRecords()
    multiclass.iterations.add(pd.DataFrame({"label": [0, 0], "iteration": [0, 1], "objective": [2.0, 1.0]}))
    said = _no_labels({"r": PlotRun("bibtex-memoir", "#000", multiclass, 159)})
    assert said.startswith("The shown runs record no per-label results (bibtex-memoir: a multiclass solver")
