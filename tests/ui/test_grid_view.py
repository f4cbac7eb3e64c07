"""Ten runs at a glance (issue 40, item 3), without a browser: one x range for the whole grid,
"medians only", smoothing in the log axis's space, gaps floored below every solver's tolerance,
and titles that keep the smoothing on a line of their own."""
import numpy as np
from bokeh.document import Document
from panel.io.state import set_curdoc

from xcviz.app.ui.fields import GAP_FLOOR
from xcviz.app.ui.live_plots import UNSMOOTHED
from xcviz.app.ui.run_view import RunView
from xcviz.runs.aggregate import smooth
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.solvers import SOLVERS


def _run(store: RunStore, name: str, solver: str, records: dict) -> str:
    """A finished run of `solver` on Bibtex with these iteration records."""
    spec = RunSpec(dataset="bibtex", solver=solver, threads=1)
    run = store.create(spec.validate().to_json(), name)
    store.append_batch(run, "iteration", records)
    store.update(run, status="done", summary={})
    return run


def _trajectory(n: int, **fields) -> dict:
    """One trajectory of n records (a multiclass run's: label 0, one epoch each)."""
    return {"label": np.zeros(n, np.int64), "iteration": np.arange(n), "epoch": np.arange(n, dtype=float),
            **{k: np.asarray(v, np.float64) for k, v in fields.items()}}


def _view(tmp_path):
    store = RunStore(tmp_path / "home")
    short = _run(store, "short", "ldgs", _trajectory(5, objective=[5, 4, 3, 2.5, 2.4]))
    # DS-MLR's variational gap falls to rounding (1e-29): drawn at the floor, not 17 decades lower
    gap = [1e-1, 1e-3, 1e-6, 1e-12, 1e-20, 1e-29, 1e-29, 1e-29, 1e-29, 1e-29]
    long = _run(store, "long", "dsmlr", _trajectory(10, objective=np.linspace(6, 2, 10), variational_gap=gap))
    # a one-vs-all run: four labels, their model sizes spread around a median, their objectives
    # drawn as gaps to each label's final value (fields.REPLACED_BY), one label finishing a second
    labels = np.repeat(np.arange(4), 6)
    spread = np.tile(np.arange(6, dtype=float), 4)
    wide = _run(store, "wide", "dismec", {"label": labels, "iteration": np.tile(np.arange(6), 4),
                                          "nnz": (10.0 + spread) * (1 + labels) ** 2, "objective": 10.0 - spread,
                                          "wall": labels + spread / 5})
    view = RunView(store)
    view.update({r["id"]: r for r in store.list()}, [short, long, wide])
    return view, short, long, wide


def test_every_figure_shares_one_x_range_fitted_to_all_of_them(tmp_path):
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    plots.x_axis.value = "epoch"  # the objective (5 and 10 epochs) and the variational gap (10)
    shown = [f for f in plots._figures if plots.shown(f)]
    assert {"objective", "variational_gap"} <= set(shown)
    assert all(plots._figures[f].object.x_range is plots.x_range for f in shown)
    assert plots.x_range.start < 0 and plots.x_range.end > 9  # 0 to 9 epochs, with a margin
    plots.x_range.update(start=1.0, end=3.0)  # the user zooms one figure: every figure shows 1 to 3
    plots.redraw()  # new records of the same view keep the zoom, and its ticks follow it
    assert (plots.x_range.start, plots.x_range.end) == (1.0, 3.0)
    ticks = plots._figures["variational_gap"].object.xaxis[0].ticker.ticks
    assert min(ticks) >= 1.0 and max(ticks) <= 3.0


def test_runs_of_different_families_share_the_figures_they_share(tmp_path):
    """The one-vs-all run's objective is drawn as its gap, the multiclass runs' as their
    objective: its gap no longer hides theirs."""
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    assert plots.shown("objective") and plots.shown("objective_gap")
    assert set(plots._sources["objective"][1].data["run"]) == {"short", "long"}
    assert set(plots._sources["objective_gap"][1].data["run"]) == {"wide"}


def test_the_wall_axis_draws_a_one_vs_all_runs_labels_done(tmp_path):
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    plots.x_axis.value = "wall"
    np.testing.assert_allclose(plots.curve("labels_done", wide)["x"], [1, 2, 3, 4])  # each label's last record
    np.testing.assert_allclose(plots.curve("labels_done", wide)["median"], [1, 2, 3, 4])
    assert plots._figures["labels_done"].object.title.text == "labels done"
    assert plots._whats["labels_done"].text == "one count per one-vs-all run"
    assert not plots.shown("nnz")  # its per-label fields in time bins: not drawn
    plots.x_axis.value = "iteration"
    assert not plots.shown("labels_done") and plots.shown("nnz")


def test_medians_only_hides_the_bands_and_fits_y_to_the_medians(tmp_path):
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    fig = plots._figures["nnz"].object
    with_bands = (fig.y_range.start, fig.y_range.end)
    assert plots._bands["nnz"].visible
    plots.medians_only.value = True
    assert not plots._bands["nnz"].visible
    medians = plots.curve("nnz", wide)["median"]
    upper = np.nanmax(plots.curve("nnz", wide)["upper"])
    assert fig.y_range.end < with_bands[1] and upper > fig.y_range.end >= medians.max()
    assert "medians only" in plots.rules.object


def test_smoothing_on_a_log_axis_is_in_log_space_and_said_under_the_title(tmp_path):
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    plots.smoothing.value, plots.window.value = "ema", 4
    drawn = plots.curve("objective", long)["median"]  # log10 values on the objective's log axis
    expected = np.log10(smooth(np.linspace(6, 2, 10), "ema", 4, log=True))
    np.testing.assert_allclose(drawn, expected)
    assert not np.allclose(drawn, np.log10(smooth(np.linspace(6, 2, 10), "ema", 4)))
    title, sub = plots._figures["objective"].object.title.text, plots._subtitles["objective"].text
    assert "EMA" not in title and sub == "smoothed: EMA span 4 of log10 values"
    plots.y_scale.value = "linear"
    assert plots._subtitles["objective"].text == "smoothed: EMA span 4"
    plots.smoothing.value = "raw"  # a blank line: the figure keeps its height (BokehJS lays the page out at a change)
    assert plots._subtitles["objective"].text == UNSMOOTHED and not UNSMOOTHED.strip()


def test_a_gap_below_every_solvers_tolerance_is_drawn_at_the_floor(tmp_path):
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    drawn = plots.curve("variational_gap", long)["median"]
    np.testing.assert_allclose(drawn, [-1, -3, -6, -12, -12, -12, -12, -12, -12, -12])
    fig = plots._figures["variational_gap"].object
    assert -13 < fig.y_range.start < -12  # 11 decades and a margin, not 28
    tolerances = [p.bounds[0] for s in SOLVERS.values() for n, p in s.params().param.objects().items()
                  if n in ("eps", "lc_tol", "tol") and getattr(p, "bounds", None)]
    assert tolerances and GAP_FLOOR <= min(tolerances)  # the floor lies below every solver's tolerance


def test_one_legend_names_the_grid_and_the_figures_keep_theirs_for_a_report(tmp_path):
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    html = plots.legend.object
    assert [html.count(name) for name in ("short", "long", "wide")] == [1, 1, 1]
    assert all(plots.runs[r].color in html for r in (short, long, wide))
    assert not any(legend.visible for pane in plots._figures.values() for legend in pane.object.legend)
    from xcviz.app.report import _figures

    store = RunStore(tmp_path / "home")
    shown, _ = _figures(store, [store.get(r) for r in (short, long, wide)])
    assert shown and all(legend.visible for fig in shown for legend in fig.legend)  # a report's, one a figure


def test_the_grid_legend_escapes_a_run_name(tmp_path):
    store = RunStore(tmp_path / "home")
    run = _run(store, "<img src=x onerror=alert(1)>", "ldgs", _trajectory(3, objective=[3, 2, 1]))
    view = RunView(store)
    view.update({r["id"]: r for r in store.list()}, [run])
    assert "<img" not in view.plots.legend.object and "&lt;img" in view.plots.legend.object


def _spied(plots, change) -> tuple[list, list]:
    """The document events of `change()` on the grid served in a document: (all, those outside a hold)."""
    doc = Document()
    events, unheld = [], []
    with set_curdoc(doc):
        doc.add_root(plots.grid.get_root(doc))
        seen: set[int] = set()
        trigger = doc.callbacks.trigger_on_change

        def spy(event) -> None:
            if id(event) not in seen:  # a held event is triggered again when the hold ends
                seen.add(id(event))
                events.append(event)
                if doc.callbacks.hold_value is None:
                    unheld.append(event)
            trigger(event)

        doc.callbacks.trigger_on_change = spy
        change()
    return events, unheld


def _touching(events: list, models: set[str]) -> list:
    return [e for e in events if getattr(e, "model", None) is not None and e.model.id in models]


def test_every_change_a_redraw_makes_to_a_figure_leaves_in_a_panel_hold(tmp_path):
    """A figure whose lines shrink (here the objective's, when one of its two runs is unticked) is
    sent apart, one source at a time, yet inside Panel's hold like the rest: Panel queues a held
    message while the websocket is busy, and a change made outside a hold took Bokeh's own path
    and overtook it, so a queued smoothing change reached the page after the next x-axis switch
    and drew the old runs in the shrunk figure for good (a CI run of the browser test, twice)."""
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    lines_before = len(plots._sources["objective"][1].data["xs"])
    rows = {r["id"]: r for r in RunStore(tmp_path / "home").list()}
    _, unheld = _spied(plots, lambda: view.update(rows, [short, wide]))
    assert lines_before == 2 and len(plots._sources["objective"][1].data["xs"]) == 1  # it shrank: sent apart
    figure_models = {m.id for pane in plots._figures.values() for m in pane.object.references()}
    changed = _touching(unheld, figure_models)
    assert changed == [], [(type(e.model).__name__, getattr(e, "attr", None)) for e in changed]


def test_a_figure_with_nothing_to_draw_is_hidden_without_sending_it_anything(tmp_path):
    """The wall axis leaves the one-vs-all run's nnz out: its figure is hidden by its style, never
    its `visible` (each change of which BokehJS answers with a layout of the whole page, and so
    does each repaint of a figure so hidden), its data stays, and it keeps the shared x range
    (BokehJS left a plot whose range was swapped and swapped back with ticks of the other range).
    Back on the iteration axis it shows what it held, and nothing of its data is sent again."""
    view, short, long, wide = _view(tmp_path)
    plots = view.plots
    pane = plots._figures["nnz"]
    held = {name: list(v) for name, v in plots._sources["nnz"][1].data.items()}
    models = {m.id for m in pane.object.references()} - {plots.x_range.id}
    events, _ = _spied(plots, lambda: setattr(plots.x_axis, "value", "wall"))
    assert not plots.shown("nnz") and pane.object.styles == {"display": "none"} and pane.object.visible
    assert pane.object.x_range is plots.x_range and pane.object not in plots.figures()
    assert {name: list(v) for name, v in plots._sources["nnz"][1].data.items()} == held
    assert {(type(e.model).__name__, getattr(e, "attr", None)) for e in _touching(events, models)} == {
        ("figure", "styles")}
    events, _ = _spied(plots, lambda: setattr(plots.x_axis, "value", "iteration"))
    assert plots.shown("nnz") and pane.object.x_range is plots.x_range and pane.object in plots.figures()
    assert {name: list(v) for name, v in plots._sources["nnz"][1].data.items()} == held
    assert not [e for e in _touching(events, models) if type(e).__name__ == "ColumnDataChangedEvent"]
