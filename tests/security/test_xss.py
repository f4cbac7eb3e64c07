"""Stored XSS: run names, data file names and error texts that are HTML must show as text in every
pane of the dashboard, in a real browser, and never run a script.

Hostile strings come the two ways a user can bring them: a spec's name (`xcviz launch`), and a data
file so named in a `--data-dir` (runs launched from the page are named after their file). A run
that fails on a hostile file name puts it in its error text, shown in the table and in the alert
above it. A data file removed after the page opened puts its name in the launch panel's alert."""
import io
import json
import re
import time
from contextlib import redirect_stdout

import pytest

from tests.security.conftest import serve, server_errors
from tests.ui.browser import ARTIFACTS, browser_page, page_text
from xcviz.cli import main
from xcviz.app.report import build_report
from xcviz.runs.launcher import wait
from xcviz.runs.store import RunStore

pytestmark = pytest.mark.browser

TRAIN = '<img src=x onerror="window.__xss=1">'  # a data file name prefix: the page names its runs after it
GONE = '<img src=x onerror="window.__xss=2">gone'  # a data file deleted after the page opened
SPEC_NAME = "<script>window.__xss=3</script> \"double' & <b>bold</b>"
FAILED_NAME = "<img src=x onerror='window.__xss=4'>failed [link](javascript:window.__xss=5) *em*"
BAD_FILE = '<svg onload="window.__xss=6">_train.txt'  # outside the data folder: only the CLI may use it


def _xcviz(*args: str) -> str:
    """The `xcviz` command, run in this process (as its console script would); returns what it printed."""
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(list(args)) == 0
    return out.getvalue().strip()


def _prepare(tmp_path):
    data, elsewhere, home = tmp_path / "data", tmp_path / "elsewhere", tmp_path / "home"
    data.mkdir()
    elsewhere.mkdir()
    _xcviz("generate", str(data / TRAIN), "--n", "240", "--d", "30", "--labels", "6")
    _xcviz("generate", str(data / GONE), "--n", "60", "--d", "10", "--labels", "3")
    (elsewhere / BAD_FILE).write_text("this is not a data file\n")
    runs = []
    for name, dataset in ((SPEC_NAME, data / f"{TRAIN}_train.txt"), (FAILED_NAME, elsewhere / BAD_FILE)):
        spec = tmp_path / f"spec{len(runs)}.json"
        spec.write_text(json.dumps({"dataset": str(dataset), "name": name, "threads": 1}))
        runs.append(_xcviz("launch", str(spec), "--home", str(home)))
    for run in runs:
        wait(RunStore(home), run, timeout=120)
    return data, home


def _wait_for(page, predicate, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    body = _flat(page_text(page))
    while time.monotonic() < deadline and not predicate(body):
        page.wait_for_timeout(500)
        body = _flat(page_text(page))
    return body


def _flat(body: str) -> str:
    """Page text with the space that joins text nodes removed before a comma or a colon."""
    return re.sub(r"\s+([,:])", r"\1", body)


def _hostile_nodes(page) -> int:
    """Elements in the page (shadow roots included) that only a hostile string could have made."""
    return page.evaluate("""() => {
        let found = 0;
        const walk = (root) => {
            found += root.querySelectorAll('img[src="x"], svg[onload], b').length;
            root.querySelectorAll('script').forEach((el) => { if (el.textContent.includes('__xss')) found++; });
            root.querySelectorAll('*').forEach((el) => { if (el.shadowRoot) walk(el.shadowRoot); });
        };
        walk(document);
        return found;
    }""")


def test_hostile_names_show_as_text_and_run_no_script(tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    data, home = _prepare(tmp_path)
    assert [r["status"] for r in RunStore(home).list()] == ["done", "failed"]
    log = tmp_path / "server.log"
    problems = []  # (step, what went wrong): every step is checked, so a failure names all the bad panes

    def check(page, step: str, *texts: str) -> str:
        body = _flat(page_text(page))
        page.screenshot(path=str(ARTIFACTS / f"xss-{step}.png"), full_page=True)
        ran = page.evaluate("window.__xss")
        problems.extend([(step, f"a script ran: window.__xss = {ran}")] if ran is not None else [])
        problems.extend((step, f"not shown literally: {text}") for text in texts if text not in body)
        return body

    with serve(["--home", str(home), "--data-dir", str(data)], log) as (_proc, port), \
            browser_page(1300, 1100) as (page, _errors):
        page.on("dialog", lambda dialog: dialog.dismiss())
        page.goto(f"http://127.0.0.1:{port}/dashboard")
        page.wait_for_selector("text=Compare", timeout=60000)
        # launch from the page on the hostile file: runs named "<img ...>-zero" and "<img ...>-msi"
        page.locator("select").first.select_option(label=f"{TRAIN}_train.txt")
        page.get_by_role("button", name="Compare", exact=True).click()
        _wait_for(page, lambda b: f"{TRAIN}-zero done" in b and f"{TRAIN}-msi done" in b)
        check(page, "launched", f"{TRAIN}-zero done", f"{TRAIN}-msi done")  # the progress text
        # tick every run: legend swatches, progress text, the failed run's error above the table
        page.locator(".tabulator input[type=checkbox]").first.check()
        _wait_for(page, lambda b: "failed:" in b and "records shown: 0" not in b, timeout=30)
        check(page, "ticked", f"{SPEC_NAME} done", f"{FAILED_NAME} failed:", BAD_FILE)
        page.get_by_placeholder("all").first.click()  # the data set filter's choices: file names
        page.wait_for_timeout(500)
        check(page, "filter")
        page.keyboard.press("Escape")
        page.get_by_text("Per label", exact=True).click()
        page.wait_for_timeout(1500)
        check(page, "per-label")
        page.get_by_text("Label inspector", exact=True).click()
        body = _wait_for(page, lambda b: "iterations recorded" in b or "not been trained" in b, timeout=30)
        inspected = next((f"{n}, label 0" for n in (SPEC_NAME, f"{TRAIN}-zero", f"{TRAIN}-msi", FAILED_NAME)
                          if f"{n}, label 0" in body), "the inspected run's name")
        check(page, "inspector", inspected)
        # a data file removed after the page opened: the launch panel's alert names it
        for path in data.glob(f"{GONE}_*"):
            path.unlink()
        page.locator("select").first.select_option(label=f"{GONE}_train.txt")
        page.get_by_role("button", name="Compare", exact=True).click()
        _wait_for(page, lambda b: "no such file" in b, timeout=30)
        check(page, "launch-error", f"{GONE}_train.txt")
        problems.extend([("end", "hostile elements in the page")] if _hostile_nodes(page) else [])
    assert problems == [], "\n".join(f"{step}: {what}" for step, what in problems)
    assert server_errors(log) == []
    # the standalone report (the page's Export report) of the same runs escapes them too
    report = build_report(RunStore(home), [run["id"] for run in RunStore(home).list()])
    assert "window.__xss=3" in report  # the run is in it, its name escaped
    for raw in ("<img src=x", "<svg onload", "<script>window", "<b>bold"):
        assert raw not in report, raw
