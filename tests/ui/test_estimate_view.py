"""The launch panel's Estimate (issue 39, item 2): each selected variant estimated in a child process
(one-vs-all from a sample of labels, multiclass from a slice of steps), shown as a table; a child's
failure said, escaped; a stop kills the
child. In chromium: a click on the served page shows the estimates."""
import re
import time

import numpy as np
import pytest

from tests.ui.browser import ARTIFACTS, browser_page, page_text
from tests.ui.conftest import server_errors, start_server
from xcviz.app.ui.estimate_view import WORKERS, EstimatePanel, estimate_rows
from xcviz.data.registry import resolve
from xcviz.runs.spec import RunSpec
from xcviz.solvers import get_solver, make_params

SECRET = "TOKEN-5f1c9a"


def _wait(panel: EstimatePanel, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while panel._child is not None and time.monotonic() < deadline:
        time.sleep(0.2)
        panel.poll()
    assert panel._child is None, "the estimate did not end"


@pytest.mark.slow
def test_the_estimates_of_every_label_match_the_trained_model(tmp_path):
    """Bibtex has 159 labels, fewer than the 200 an estimate samples: every label is trained, and
    the predicted model nnz is the model's own (dismec MSI, one thread)."""
    panel = EstimatePanel(260)
    spec = RunSpec(dataset="bibtex", solver="dismec", params={"init": "msi"}, threads=1, name="bibtex-msi").validate()
    panel.start([spec])
    assert "Estimating bibtex-msi" in panel.result.object
    _wait(panel)
    table = panel.result.object
    train, _ = resolve("bibtex", None)
    model = get_solver("dismec").fit(train.X, train.Y, make_params("dismec", init="msi"), threads=1)
    cells = re.findall(r"<td>([^<]*)</td>", table)
    assert cells[0] == "bibtex-msi" and cells[4] == f"{model.nnz:,}", table
    assert f"{WORKERS} workers" in table and cells[2]  # the Dask prediction is there
    panel.close()


@pytest.mark.slow
def test_a_multiclass_variant_is_estimated_from_a_slice_of_its_steps():
    """MEMOIR on Bibtex, 2 epochs of 10 batches: the slice trains 3, and the table shows the run's
    records (one a batch and the first, 21) and no Dask column's value (threads only)."""
    panel = EstimatePanel(260)
    panel.start([RunSpec(dataset="bibtex", solver="memoir", params={"epochs": 2}, threads=1,
                         name="bibtex-memoir").validate()])
    assert "training a slice of its steps" in panel.result.object
    _wait(panel)
    cells = re.findall(r"<td>([^<]*)</td>", panel.result.object)
    assert cells[0] == "bibtex-memoir" and cells[2] == "" and cells[5] == "21", panel.result.object
    assert "first 5% of its steps" in panel.result.object
    panel.close()


def test_names_are_escaped_and_seconds_read_as_people_read_them():
    result = {"train_seconds": 216_000.0, "peak_rss_mb": 4915.2, "model_nnz": 1234567, "record_count": 89,
              "workers_seconds": {str(WORKERS): 13_680.0}}
    table = estimate_rows([("<img src=x onerror=alert(1)>", result)], threads=2)
    assert "<img" not in table and "&lt;img" in table
    assert re.findall(r"<td>([^<]*)</td>", table)[1:] == ["60 h", "3.8 h", "4,915", "1,234,567", "89"]


def test_a_failed_estimate_says_the_clis_line_without_the_files_content(tmp_path):
    bad = tmp_path / "mine_train.txt"
    bad.write_text(f"1 1:0.5\n2 3:x{SECRET}\n")
    panel = EstimatePanel(260)
    panel.start([RunSpec(dataset=str(bad), solver="dismec", threads=1, name="mine").validate()])
    _wait(panel, 120)
    text = panel.result.object
    assert "mine: the estimate failed" in text and "mine_train.txt:2: non-numeric" in text and SECRET not in text, text
    panel.close()


def test_a_stop_kills_the_child_and_a_new_click_starts_again(tmp_path):
    panel = EstimatePanel(260)
    spec = RunSpec(dataset="delicious", solver="dismec", threads=1, name="d").validate()
    panel.start([spec, spec])
    child = panel._child[1]
    panel.stop()
    assert child.poll() is not None and panel._child is None and panel._queue == []
    panel.close()
    assert panel._folder is None


@pytest.mark.browser
def test_estimate_first_on_the_page(tmp_path):
    proc, url = start_server(tmp_path / "home", tmp_path / "server.log")
    try:
        with browser_page(1440, 900) as (page, errors):
            page.goto(url)
            page.wait_for_selector("text=Compare", timeout=60000)
            page.locator("select").first.select_option("bibtex")
            field = page.get_by_label("threads", exact=True)
            field.fill("1")
            field.press("Enter")
            page.get_by_role("button", name="Estimate first").click()
            page.get_by_text("Estimating bibtex-zero").wait_for(timeout=30000)
            page.locator("table.xcviz-estimate td", has_text="bibtex-msi").wait_for(timeout=600000)
            page.screenshot(path=str(ARTIFACTS / "dashboard-estimate.png"))
            text = page_text(page)
        assert errors == []
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert "bibtex-zero" in text and "model nnz" in text and f"{WORKERS} workers" in text
    assert np.isfinite(float(re.search(r"bibtex-msi\s+([\d.]+) (s|min|h)", text).group(1)))
    assert server_errors(tmp_path / "server.log") == []
