"""DS-MLR's L-BFGS optimum drawn as a reference line without the user giving it: the objective
figure holds one dashed line per problem (data, lambda, normalisation, bias) with an L-BFGS run
among the shown runs, at that run's lowest objective; none without one. The figure's data, then
the served page in a real browser (legend, range, screenshot)."""
import numpy as np
import pytest
from bokeh.models import HSpan

from tests.ui.browser import ARTIFACTS, browser_page
from tests.ui.conftest import start_server
from tests.ui.test_page import _open, _pan_until, _tick, _until
from xcviz.data.synthetic import generate
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore, SqliteSink
from xcviz.solvers.dsmlr.solver import DsmlrParams, fit_dsmlr
from xcviz.app.ui.run_view import RunView

# for the objective figure's reference lines: whether each spans the figure's x range as shown now
# (a glyph with x coordinates spans those; a horizontal span crosses any x range)
COVERED_JS = """() => {
  const out = [];
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    if (!(m.x_range && m.renderers && m.title && m.title.text.startsWith('objective'))) continue;
    for (const r of m.renderers) {
      const d = r.data_source && r.data_source.data;
      if (!d || !d.label || !d.label.length) continue;  // only the reference lines' source has labels
      if (!r.glyph.xs) { out.push(r.glyph.type === 'HSpan'); continue; }
      const xs = Array.from(d[r.glyph.xs.field]).flatMap((a) => Array.from(a));
      out.push(Math.min(...xs) <= m.x_range.start && Math.max(...xs) >= m.x_range.end);
    }
  }
  return out;
}"""
RUNS = {"sync-1e-3": ("sync", 1e-3), "lbfgs-1e-3": ("lbfgs", 1e-3), "lbfgs-1e-2": ("lbfgs", 1e-2),
        "lc-1e-3": ("lc", 1e-3)}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Four finished DS-MLR runs on one small problem: sync, L-BFGS (to convergence) and LC at lambda
    1e-3, L-BFGS at 1e-2 (another problem: another optimum). Returns the store and run id -> (name, final objective)."""
    ds = generate(300, 40, 8, avg_labels=1.3, avg_nnz=6, seed=5)
    store = RunStore(tmp_path_factory.mktemp("ref") / "home")
    runs = {}
    for name, (mode, lam) in RUNS.items():
        params = {"mode": mode, "lam": lam, "epochs": 300 if mode == "lbfgs" else 15, "grid": 4, "alpha": 100.0}
        spec = RunSpec(dataset="bibtex", solver="dsmlr", params=params, name=name).validate()
        run = store.create(spec.to_json(), name)
        model = fit_dsmlr(ds.X, ds.Y, DsmlrParams(**params), threads=1, recorder=SqliteSink(store, run), run=run)
        store.update(run, status="done", summary={"objective": model.info["objective"]})
        runs[run] = (name, model.info["objective"])
    return store, runs


def _references(view: RunView, store: RunStore, shown: list[str]) -> dict:
    rows = {r["id"]: r for r in store.list()}
    view.update(rows, shown)
    return dict(view.plots._sources["objective"][4].data)


@pytest.mark.slow
def test_the_objective_figure_draws_each_problems_lbfgs_optimum(store):
    store, runs = store
    ids = {name: run for run, (name, _) in runs.items()}
    final = {name: value for name, value in runs.values()}
    view = RunView(store)
    lines = _references(view, store, list(runs))
    assert sorted(lines["label"]) == ["L-BFGS best (lbfgs-1e-2)", "L-BFGS best (lbfgs-1e-3)"]
    for label, value, y in zip(lines["label"], lines["value"], lines["y"]):
        name = label[len("L-BFGS best ("):-1]
        # the lowest objective L-BFGS recorded is its final one, the optimum the others approach
        assert value == pytest.approx(final[name], rel=1e-9)
        assert y == pytest.approx(np.log10(value))  # the objective figure's y axis is logarithmic
    fig = view.plots._figures["objective"].object
    assert fig.y_range.start <= np.log10(min(lines["value"])) <= fig.y_range.end
    # the lines cross the whole plot (spans, not segments over some x range); sync and LC end above
    # their problem's L-BFGS optimum
    (spans,) = [r for r in fig.renderers if r.data_source is view.plots._sources["objective"][4]]
    assert isinstance(spans.glyph, HSpan)
    for name in ("sync-1e-3", "lc-1e-3"):
        assert final["lbfgs-1e-3"] <= final[name] + 1e-9
    # only the runs shown count: sync alone has no reference; with L-BFGS 1e-3 it has one
    assert _references(RunView(store), store, [ids["sync-1e-3"]])["label"] == []
    one = _references(RunView(store), store, [ids["sync-1e-3"], ids["lbfgs-1e-3"]])
    assert one["label"] == ["L-BFGS best (lbfgs-1e-3)"]


@pytest.mark.browser
def test_the_served_page_shows_the_reference_line(store, tmp_path):
    store, runs = store
    proc, url = start_server(store.home, tmp_path / "server.log")
    try:
        with browser_page(1440, 900) as (page, errors):
            _open(page, url)
            for name in ("sync-1e-3", "lbfgs-1e-3", "lc-1e-3"):
                _tick(page, name)

            def objective(figs):
                return [f for f in figs if f["title"].startswith("objective")]

            figs = objective(_until(page, lambda figs: any("L-BFGS best (lbfgs-1e-3)" in f["labels"]
                                                           for f in objective(figs))))
            assert page.evaluate(COVERED_JS) == [True]  # the line crosses the plot
            # the objective figure, the first: a view that moved
            _pan_until(page, "([x]) => Bokeh.documents.some(d => Array.from(d.all_models).some(m => m.x_range "
                       "&& m.title && m.title.text.startsWith('objective') && m.x_range.start < x))",
                       [figs[0]["x"][0] - 1e-9])
            page.wait_for_timeout(1500)  # a refresh came
            assert page.evaluate(COVERED_JS) == [True]  # still crosses it, no refit needed
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "dsmlr-lbfgs-reference.png"))
        assert errors == []
        assert len(figs) == 1 and set(figs[0]["labels"]) == {"sync-1e-3", "lbfgs-1e-3", "lc-1e-3",
                                                             "L-BFGS best (lbfgs-1e-3)"}, figs
        optimum = np.log10(next(v for n, v in runs.values() if n == "lbfgs-1e-3"))
        assert figs[0]["y"][0] <= optimum <= figs[0]["y"][1]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_dsmlr_runs_bands_are_over_its_workers(tmp_path):
    """DS-MLR records one row per worker (its `label` is the worker): its figures' titles said
    "band over labels"."""
    ds = generate(300, 40, 8, avg_labels=1.3, avg_nnz=6, seed=5)
    store = RunStore(tmp_path / "home")
    params = {"mode": "sync", "lam": 1e-3, "epochs": 3, "grid": 4, "alpha": 100.0}
    run = store.create(RunSpec(dataset="bibtex", solver="dsmlr", params=params, name="two").validate().to_json(), "two")
    fit_dsmlr(ds.X, ds.Y, DsmlrParams(**params), threads=2, recorder=SqliteSink(store, run), run=run)
    store.update(run, status="done")
    view = RunView(store)
    view.update({r["id"]: r for r in store.list()}, [run])
    titles = {field: view.plots._whats[field].text for field in view.plots._figures if view.plots.shown(field)}
    assert titles["compute_seconds"] == "median, 5-95% band over workers"
    assert not any("over labels" in title for title in titles.values()), titles
