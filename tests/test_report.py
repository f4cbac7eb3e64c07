"""The run report: a standalone HTML that renders offline in a real browser, plus CSV/JSON records."""
import io
import json

import numpy as np
import pandas as pd
import pytest

from tests.ui.browser import ARTIFACTS, browser_page
from xcviz.cli import main
from xcviz.data import load
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore, SqliteSink
from xcviz.solvers import get_solver, make_params


@pytest.fixture(scope="module")
def store_with_runs(tmp_path_factory):
    """Two finished runs (MSI and zero init on Bibtex) and a PPDSparse run, recorded into a store."""
    store = RunStore(tmp_path_factory.mktemp("home"))
    train, _ = load("bibtex")
    runs = []
    for solver, params in (("dismec", {"init": "msi"}), ("dismec", {"init": "zero"}), ("ppdsparse", {})):
        spec = RunSpec(dataset="bibtex", solver=solver, params=params, threads=2).validate()
        run = store.create(spec.to_json(), f"{solver}-{params.get('init', '')}")
        model = get_solver(solver).fit(train.X, train.Y, make_params(solver, **spec.params), threads=2,
                                       recorder=SqliteSink(store, run))
        store.update(run, status="done", summary={"model_nnz": model.nnz, "p@1": 64.0}, versions={"xcviz": "test"})
        runs.append(run)
    return store, runs


@pytest.mark.browser
def test_report_opens_offline_and_renders(store_with_runs, tmp_path, capsys):
    store, runs = store_with_runs
    out = tmp_path / "report.html"
    assert main(["report", *runs, "-o", str(out), "--home", str(store.home)]) == 0
    text = out.read_text()
    assert "cdn.bokeh.org" not in text and "<script" in text  # resources inline
    assert all(run in text for run in runs)
    ARTIFACTS.mkdir(exist_ok=True)
    with browser_page() as (page, errors):
        page.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:") else route.continue_())
        page.goto(out.as_uri())
        page.wait_for_selector("canvas", timeout=30000)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        assert page.locator("canvas").count() >= 4
        assert "Metrics" in page.content()
    assert errors == []


def test_report_exports_records(store_with_runs, tmp_path):
    from xcviz.app.report import write_report

    store, runs = store_with_runs
    written = write_report(store, runs[:1], tmp_path / "r.html")
    label = f"{store.get(runs[0])['name']}-{runs[0]}"  # the run's name, then its id
    csv = pd.read_csv(tmp_path / f"r-{label}-iterations.csv")
    records, _ = store.records(runs[0], "iteration")
    assert len(csv) == len(records) and list(csv.columns) == list(records.columns)
    assert len(json.loads((tmp_path / f"r-{label}-labels.json").read_text())) == 159
    assert len(written) == 5
    assert all(path.stat().st_mode & 0o777 == 0o644 for path in written)  # for others to open


def test_a_run_without_label_records_exports_no_label_files(store_with_runs, tmp_path):
    """MEMOIR, DS-MLR and LDGS runs record iterations alone: their export has no empty labels file."""
    from xcviz.app.report import write_report

    store, runs = store_with_runs
    spec = RunSpec(dataset="bibtex", solver="ldgs", params={}, threads=1).validate()
    run = store.create(spec.to_json(), "ldgs-iterations-only")
    sink = SqliteSink(store, run)
    sink.begin({"run": "ldgs-iterations-only", "solver": "ldgs"})
    sink.write("iteration", {"iteration": np.arange(3), "objective": np.array([3.0, 2.0, 1.5])})
    sink.end({})
    written = write_report(store, [runs[0], run], tmp_path / "r.html")
    names = sorted(path.name for path in written)
    label = f"ldgs-iterations-only-{run}"
    assert f"r-{label}-iterations.csv" in names and f"r-{label}-iterations.json" in names
    assert not any(name.startswith(f"r-{label}-label") for name in names)
    assert len(names) == 1 + 4 + 2  # the page, the first run's four files, the LDGS run's two
    assert pd.read_csv(tmp_path / f"r-{label}-iterations.csv")["objective"].tolist() == [3.0, 2.0, 1.5]


def test_a_report_rewrite_that_fails_leaves_the_old_files_whole(store_with_runs, tmp_path, monkeypatch):
    """A rewrite that fails (here: a record export) leaves every earlier file as it was."""
    import xcviz.app.report as report

    store, runs = store_with_runs
    first = report.write_report(store, runs[:1], tmp_path / "r.html")
    before = {path: path.read_bytes() for path in first}

    def broken(frame, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(pd.DataFrame, "to_json", broken)
    with pytest.raises(OSError, match="disk full"):
        report.write_report(store, runs[:1], tmp_path / "r.html")
    assert {path: path.read_bytes() for path in first} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in first)  # no temporary left


def test_the_report_grid_holds_only_figures_that_draw_something(tmp_path):
    """A figure that draws nothing takes a cell of the report's grid all the same (a hole): a MEMOIR
    run has no label records, so no per-label figures, and every figure shown holds its data."""
    import numpy as np

    from xcviz.app.report import _figures

    store = RunStore(tmp_path / "home")
    run = store.create(RunSpec(dataset="bibtex", solver="memoir", params={}).validate().to_json(), "mc")
    store.append_batch(run, "iteration", {"label": np.zeros(3, np.int64), "iteration": np.arange(3),
                                          "epoch": np.arange(3) / 10, "objective": np.array([3.0, 2.0, 1.0])})
    store.update(run, status="done")
    figures, _ = _figures(store, [store.get(run)])
    assert [f.title.text.split(":")[0] for f in figures] == ["objective"]
    assert all(f.visible and f.styles.get("display") != "none" for f in figures)  # none hidden by LivePlots._show


@pytest.mark.parametrize("name,part", [
    ("bibtex-zero", "bibtex-zero"),
    ("../../etc/passwd", "etc-passwd"),
    ("<script>alert(1)</script>", "script-alert-1-script"),
    ("ÿ naïve run  #2", "na-ve-run-2"),
    ("...", ""),
    ("a" * 300, "a" * 60),
])
def test_a_run_name_reaches_file_names_only_as_safe_characters(name, part):
    from xcviz.app.report import download_name, name_part, run_label

    assert name_part(name) == part
    assert run_label(name, "20261125-101010-abcdef") == (f"{part}-20261125-101010-abcdef" if part
                                                        else "20261125-101010-abcdef")
    assert download_name("report", [name], "html") == f"xcviz-report-{part or '1-runs'}.html"
    assert download_name("records", [name, "other"], "zip") == "xcviz-records-2-runs.zip"


def test_the_records_archive_names_each_runs_files_by_name_and_id(store_with_runs, tmp_path):
    """Two runs whose names clean to the same text keep their own files (the id tells them apart)."""
    import zipfile

    from xcviz.app.report import records_archive

    store, runs = store_with_runs
    names = [store.get(run)["name"] for run in runs[:2]]
    try:
        store.update(runs[0], name="msi/zero run")
        store.update(runs[1], name="msi zero run")
        archive = zipfile.ZipFile(io.BytesIO(records_archive(store, runs[:2])))
    finally:
        for run, name in zip(runs, names):
            store.update(run, name=name)
    assert sorted(archive.namelist()) == sorted(f"xcviz-msi-zero-run-{run}-{kind}s.{ext}" for run in runs[:2]
                                                for kind in ("iteration", "label") for ext in ("csv", "json"))


@pytest.fixture(scope="module")
def multiclass_runs(tmp_path_factory):
    """A short MEMOIR, DS-MLR and LDGS run on Bibtex, recorded into a store: {solver: run id}. These
    families record no per-label records, so their report has none of the per-label figures."""
    from xcviz.api import fit_inputs

    store = RunStore(tmp_path_factory.mktemp("home"))
    train, _ = load("bibtex")
    runs = {}
    for solver, params in (("memoir", {"epochs": 1}), ("dsmlr", {"epochs": 2}), ("ldgs", {"epochs": 1})):
        spec = RunSpec(dataset="bibtex", solver=solver, params=params, threads=2).validate()
        run = store.create(spec.to_json(), solver)
        get_solver(solver).fit(*fit_inputs(train, solver), make_params(solver, **spec.params), threads=2,
                               recorder=SqliteSink(store, run), run=run)
        store.update(run, status="done", summary={"p@1": 50.0}, versions={"xcviz": "test"})
        runs[solver] = run
    return store, runs


def _report_layout(store, runs, monkeypatch):
    """The Bokeh layout `build_report` writes into the page of `runs`."""
    import xcviz.app.report as report

    built = []
    write = report.file_html
    monkeypatch.setattr(report, "file_html",
                        lambda model, *args, **kw: built.append(model) or write(model, *args, **kw))
    report.build_report(store, runs)
    return built[0]


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["dismec", "ppdsparse", "memoir", "dsmlr", "ldgs"])
def test_every_solvers_report_draws_its_figures_at_a_fixed_readable_width(solver, store_with_runs, multiclass_runs,
                                                                          monkeypatch):
    """The dashboard's figures stretch to the page's width; in the report's grid a figure that
    stretches takes its column's width, which only a figure of fixed width gives: a MEMOIR, DS-MLR
    or LDGS report (no per-label figures, all of the dashboard's plots) drew every plot about 70 px
    wide, axes on top of each other. Each figure of the report keeps a fixed width of its own."""
    from bokeh.models import GridPlot, Plot

    if solver in ("dismec", "ppdsparse"):
        store, runs = store_with_runs
        run = runs[0] if solver == "dismec" else runs[2]
    else:
        store, runs = multiclass_runs
        run = runs[solver]
    layout = _report_layout(store, [run], monkeypatch)
    [grid] = layout.select({"type": GridPlot})
    grid_figures = [child[0] for child in grid.children]
    assert len(grid_figures) >= 2
    for fig in grid_figures:
        assert fig.sizing_mode in (None, "fixed") and fig.width_policy in ("auto", "fixed"), fig.title.text
        assert fig.width >= 600, fig.title.text
    for fig in layout.select({"type": Plot}):  # the Workers and Scale-out figures too
        assert fig.sizing_mode in (None, "fixed"), fig.title.text


@pytest.mark.browser
def test_a_multiclass_report_renders_its_plots_wide_in_a_browser(multiclass_runs, tmp_path):
    """An LDGS report (no per-label figures) shows each plot at its set width at a 1600 px viewport."""
    from xcviz.app.report import write_report

    store, runs = multiclass_runs
    out = tmp_path / "ldgs.html"
    write_report(store, [runs["ldgs"]], out)
    with browser_page(1600, 1000) as (page, errors):
        page.goto(out.as_uri())
        page.wait_for_selector("canvas", timeout=30000)
        page.wait_for_timeout(500)
        widths = page.evaluate("""() => { const out = [];
          const walk = (root) => root.querySelectorAll('*').forEach((el) => {
            if (el.shadowRoot) walk(el.shadowRoot);
            if (el.classList.contains('bk-Figure')) out.push(el.getBoundingClientRect().width); });
          walk(document); return out; }""")
        page.screenshot(path=str(ARTIFACTS / "report-ldgs.png"), full_page=True)
    assert len(widths) >= 4 and min(widths) >= 600, widths
    assert errors == []
