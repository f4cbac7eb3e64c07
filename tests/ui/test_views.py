"""The new views in a real browser, over a prepared store (no training, so it is quick): solver
switch, filters, a failed run's error, delete with confirmation, export, label inspector, x-axis."""
import re
import socket
import subprocess

import pytest

from benchmarks.dashboard import fill_store
from tests.ui.browser import ARTIFACTS, browser_page, page_text
from xcviz.runs.store import RunStore

pytestmark = pytest.mark.browser


@pytest.fixture
def prepared(home):
    """bibtex-zero and bibtex-msi (dismec, done), bibtex-squared_hinge (ppdsparse, done), broken-msi
    (failed) and busy-msi (running: its process is a `sleep` that lives as long as the test)."""
    store = RunStore(home)
    runs = fill_store(store, runs=5, records=3000)
    names = ["bibtex-zero", "bibtex-msi", "bibtex-squared_hinge", "broken-msi", "busy-msi"]
    for run, name in zip(runs, names):
        store.update(run, name=name)
    spec = store.get(runs[2])["spec"].replace('"solver": "dismec"', '"solver": "ppdsparse"')
    store.update(runs[2], spec=spec)
    store.update(runs[3], status="failed", error="DatasetFormatError: broken_train.txt:3: non-numeric token 'x'")
    busy = subprocess.Popen(["sleep", "600"])
    store.update(runs[4], status="running", pid=busy.pid, host=socket.gethostname())
    yield dict(zip(names, runs))
    busy.kill()
    busy.wait()


def _wait_for(page, text: str, present: bool = True, timeout: float = 15000) -> None:
    waited = 0
    while (text in page_text(page)) != present:
        assert waited < timeout, f"{text!r} {'never appeared' if present else 'never went'}"
        page.wait_for_timeout(250)
        waited += 250


def _tick(page, name: str) -> None:
    page.locator(".tabulator-row", has_text=name).first.locator("input[type=checkbox]").check()


def _open(page, server) -> None:
    page.goto(server)
    page.locator(".tabulator-row", has_text="bibtex-zero").first.wait_for(timeout=60000)


def test_solver_switch_filters_errors_and_delete(prepared, server, home):
    ARTIFACTS.mkdir(exist_ok=True)
    with browser_page(1400, 1100) as (page, errors):
        _open(page, server)
        assert "Variants to compare (init)" in page_text(page) and "msi_t" in page_text(page)
        page.locator("select").nth(1).select_option("ppdsparse")  # the solver
        _wait_for(page, "Variants to compare (loss)")
        _wait_for(page, "kappa")  # the solver's parameters follow its variants, in another update
        text = page_text(page, shown=True)  # the runs table holds every parameter's column, hidden
        assert "lam" in text and "kappa" in text and "msi_t" not in text
        page.get_by_placeholder("all solvers").click()  # the solver filter
        page.keyboard.type("ppdsparse")
        page.keyboard.press("Enter")
        page.locator(".tabulator-row", has_text="bibtex-zero").first.wait_for(state="detached", timeout=15000)
        assert page.locator(".tabulator-row", has_text="bibtex-squared_hinge").count() == 1
        page.screenshot(path=str(ARTIFACTS / "dashboard-filtered.png"))
        chosen = page.locator('.choices__list--multiple .choices__item[data-value="ppdsparse"]')
        chosen.locator(".choices__button").click()  # the filter cleared: every run listed again
        page.locator(".tabulator-row", has_text="bibtex-zero").first.wait_for(timeout=30000)
        _tick(page, "broken-msi")
        _wait_for(page, "broken-msi failed")
        assert "non-numeric token" in page_text(page)
        _tick(page, "bibtex-zero")
        _tick(page, "busy-msi")
        page.get_by_role("button", name="Delete", exact=True).click()
        _wait_for(page, "Delete 2 runs?")  # the question says the running one is kept, by name
        assert "This removes their records and models. busy-msi is still training: kept" in page_text(page)
        page.screenshot(path=str(ARTIFACTS / "dashboard-delete-confirm.png"))
        page.get_by_role("button", name="Confirm delete").click()
        page.locator(".tabulator-row", has_text="bibtex-zero").first.wait_for(state="detached", timeout=15000)
        assert page.locator(".tabulator-row", has_text="busy-msi").count() == 1
    assert errors == []
    assert sorted(r["name"] for r in RunStore(home).list()) == ["bibtex-msi", "bibtex-squared_hinge", "busy-msi"]
    assert not (home / "runs" / prepared["bibtex-zero"]).exists()


def test_export_inspector_and_x_axis(prepared, server, tmp_path):
    with browser_page(1400, 1100) as (page, errors):
        _open(page, server)
        _tick(page, "bibtex-zero")
        _tick(page, "bibtex-squared_hinge")
        _wait_for(page, "runs shown: 2")
        page.get_by_role("combobox").filter(has_text="wall time").select_option(label="wall time (s)")
        _wait_for(page, "x: wall time since the run started")
        page.screenshot(path=str(ARTIFACTS / "dashboard-wall-time.png"))
        with page.expect_download(timeout=60000) as download:
            page.get_by_role("button", name="Report (HTML)").click()
        assert download.value.suggested_filename == "xcviz-report-2-runs.html"  # named after the ticked runs
        report = tmp_path / "report.html"
        download.value.save_as(report)
        page.get_by_text("Label inspector", exact=True).click()
        slowest = page.locator(".tabulator").nth(1)
        slowest.locator(".tabulator-row").first.click()  # the slowest label
        _wait_for(page, "iterations recorded")
        statuses = slowest.locator(".tabulator-cell[tabulator-field=status]").all_inner_texts()
        assert statuses and set(statuses) <= {"converged", "max_iter", "line_search_failed", "no_progress"}, statuses
        seconds = slowest.locator(".tabulator-cell[tabulator-field=seconds]").all_inner_texts()
        assert all(re.fullmatch(r"\d+\.\d{4}", t) for t in seconds), seconds  # one format, four decimals
        assert re.search(r"seconds \d+\.\d{4}, status (converged|max_iter)", page_text(page))
        page.screenshot(path=str(ARTIFACTS / "dashboard-label-inspector.png"))
    assert errors == []
    assert "bibtex-zero" in report.read_text() and "cdn.bokeh.org" not in report.read_text()
    with browser_page() as (page, errors):
        page.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:")
                   else route.continue_())
        page.goto(report.as_uri())
        page.wait_for_selector("canvas", timeout=30000)
        page.wait_for_timeout(1000)
        assert page.locator("canvas").count() >= 4
        page.screenshot(path=str(ARTIFACTS / "exported-report.png"), full_page=True)
    assert errors == []
