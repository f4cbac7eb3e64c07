"""The dashboard in a real browser: launch a two-initializer comparison, watch it train, see metrics;
the runs outlive the browser and the server; cancel from the page; `xcviz serve` with a password."""
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.ui.browser import ARTIFACTS, browser_page, cut_cells, page_text as _text
from tests.ui.conftest import free_port, server_errors, start_server
from xcviz.runs.store import RunStore


def _records_shown(body: str) -> int:
    match = re.search(r"records shown: (\d+)", body)
    return int(match.group(1)) if match else 0


@pytest.mark.browser
def test_compare_two_initializers_live_and_the_runs_outlive_browser_and_server(tmp_path, home):
    """Bibtex, zero against MSI, launched from the page (the logistic loss with C = 10,000 and eps =
    1e-6 on one thread, set on the page, keeps the zero run training for about 20 s alone: with C = 100
    and 1e-5 it trained in 8 s, and a fresh clone's second page, loading under load, saw it done). Once they train, close the
    browser and kill the server (kill -9): the runs train on; a new server's page shows them
    without a tick, their records arriving block by block, then their final metrics."""
    (ARTIFACTS / "dashboard-mid-run.png").unlink(missing_ok=True)  # this run's screenshot, not an earlier one's
    first, url = start_server(home, tmp_path / "first.log")
    second = None
    try:
        # the second server is up (its app's modules imported) before the runs start, and its page's
        # browser stays open meanwhile: between the first server's death and the new page there is
        # only a page load, so the page sees the runs part-way however fast this machine trains them
        second, second_url = start_server(home, tmp_path / "second.log")
        urllib.request.urlopen(second_url, timeout=60).read()
        with browser_page(1440, 900) as (later, later_errors):
            with browser_page(1440, 900) as (page, errors):
                page.goto(url)
                page.wait_for_selector("text=Compare", timeout=60000)
                page.locator("select").first.select_option("bibtex")
                page.locator("select").filter(has_text="logistic").select_option("logistic")
                # one thread a run (the box starts at every core): the runs train long enough to watch grow
                for name, value in (("threads", "1"), ("C", "10000"), ("eps", "0.000001")):
                    field = page.get_by_label(name, exact=True)
                    field.fill(value)
                    field.press("Enter")
                page.get_by_role("button", name="Compare", exact=True).click()
                page.locator(".tabulator-cell", has_text="running").first.wait_for(timeout=30000)
                # past the kernels' compile (an empty numba cache under load takes minutes; the
                # training after it seconds): the kill comes once both runs count labels
                page.locator(".tabulator-cell[tabulator-field=done]", has_text="/159 labels").nth(1).wait_for(
                    timeout=600000)
            assert errors == []
            first.kill()  # SIGKILL: the server dies without a word to its runs
            first.wait(timeout=20)
            rows = RunStore(home).list()
            assert sorted(r["name"] for r in rows) == ["bibtex-msi", "bibtex-zero"]
            later.goto(second_url)
            counts, progress, cut = [], [], []
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                later.wait_for_timeout(500)
                body = _text(later)
                counts.append(_records_shown(body))
                progress += [int(k) for k in re.findall(r"running\s+(?:\d+\s+)?(\d+)/159 labels", body)]
                cut += cut_cells(later)
                if counts[-1] > 0 and any(0 < k < 120 for k in progress) and "running" in body and \
                        not (ARTIFACTS / "dashboard-mid-run.png").exists():
                    later.screenshot(path=str(ARTIFACTS / "dashboard-mid-run.png"))
                if len(re.findall(r"done\s+(?:100\s+)?159/159 labels", body)) == 2:  # both runs, in the table
                    break
            later.wait_for_timeout(1500)  # the last records drawn
            body = _text(later)
            later.screenshot(path=str(ARTIFACTS / "dashboard-done.png"), full_page=True)
        assert later_errors == []
    finally:
        if first.poll() is None:  # the test failed before the kill
            first.kill()
            first.wait(timeout=20)
        if second is not None:
            second.terminate()
            second.wait(timeout=20)
    assert len(re.findall(r"done\s+(?:100\s+)?159/159 labels", body)) == 2, body[-500:]
    growth = [b for a, b in zip(counts, counts[1:]) if b > a]
    assert len(growth) >= 2, counts  # the plotted records grew while the runs trained
    assert any(0 < k < 159 for k in progress), progress  # and the page saw them part-way
    assert cut == [], cut  # the table's cells fit their text as it grows ("done" was cut off)
    for row in rows:
        final = RunStore(home).get(row["id"])
        assert final["status"] == "done" and final["pid"] == row["pid"]  # the same process trained it to the end
        assert f"{final['summary']['p@1']:.2f}" in body, (row["name"], final["summary"])
    assert _records_shown(body) > 159  # the records of the runs that were training, plotted without a tick
    assert server_errors(tmp_path / "second.log") == []


@pytest.mark.browser
def test_cancel_a_ticked_run_from_the_page(server, home):
    with browser_page(1300, 1000) as (page, errors):
        page.goto(server)
        page.wait_for_selector("text=Compare", timeout=60000)
        page.locator("select").first.select_option("delicious")
        field = page.get_by_label("eps", exact=True)  # a tight tolerance: the run outlasts the clicks below
        field.fill("0.00001")
        field.press("Enter")
        page.get_by_role("button", name="Compare", exact=True).click()
        page.locator(".tabulator-cell", has_text="running").first.wait_for(timeout=30000)
        row = page.locator(".tabulator-row", has=page.locator(".tabulator-cell[tabulator-field=name]",
                                                              has_text=re.compile("^delicious-zero$")))
        row.locator("input[type=checkbox]").check()  # zero initialisation
        page.get_by_text("runs shown: 1, ticked").wait_for(timeout=30000)  # the server has the tick
        page.get_by_role("button", name="Cancel", exact=True).click()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "cancelled" not in _text(page):
            page.wait_for_timeout(500)
        assert re.search(r"delicious-zero\s+cancelled", _text(page))
    assert errors == []
    store = RunStore(home)
    for run in store.list():  # the untouched MSI run: stop it rather than leave it training beside later tests
        store.request_cancel(run["id"])


@pytest.mark.slow
def test_serve_command_binds_and_passes_basic_auth(tmp_path):
    import os
    import urllib.error
    import urllib.request

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "xcviz.cli", "serve", "--port", str(port), "--home",
                             str(tmp_path / "home")], env={**os.environ, "XCVIZ_PASSWORD": "s3cret-pass"},
                            stdout=(tmp_path / "log").open("wb"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/dashboard", timeout=5) as response:
                    body = response.read().decode()
                    url = response.geturl()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.3)
        assert "/login" in url and "password" in body.lower()  # basic auth: the login page, not the app
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    with socket.socket() as s:  # stopping `xcviz serve` stopped the server, not just a wrapper
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_serve_refuses_a_missing_data_dir(capsys):
    from xcviz.cli import main

    assert main(["serve", "--data-dir", "/no/such/folder"]) == 2
    assert "no such folder" in capsys.readouterr().err
