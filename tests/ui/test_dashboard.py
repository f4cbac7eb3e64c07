"""The dashboard in a real browser: launch a two-initializer comparison, watch it train, see metrics."""
import re
import socket
import subprocess
import sys
import time

from tests.ui.browser import ARTIFACTS, browser_page, page_text as _text
from tests.ui.conftest import free_port, server_errors, start_server
from xcviz.runs.store import RunStore


def _records_shown(body: str) -> int:
    match = re.search(r"records shown: (\d+)", body)
    return int(match.group(1)) if match else 0


def test_compare_two_initializers_live(server, home):
    """Bibtex, zero against MSI: the logistic loss with C = 100 and eps = 1e-5 set on the page keeps
    each run training for several seconds, long enough to watch its records arrive block by block."""
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "dashboard-mid-run.png").unlink(missing_ok=True)
    with browser_page(1440, 900) as (page, errors):
        page.goto(server)
        page.wait_for_selector("text=Compare", timeout=60000)
        page.locator("select").first.select_option("bibtex")
        page.locator("select").filter(has_text="logistic").select_option("logistic")
        for name, value in (("C", "100"), ("eps", "0.00001")):
            field = page.get_by_label(name, exact=True)
            field.fill(value)
            field.press("Enter")
        page.get_by_role("button", name="Compare", exact=True).click()
        counts, progress = [], []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            page.wait_for_timeout(500)
            body = _text(page)
            counts.append(_records_shown(body))
            print(round(time.monotonic(), 1), counts[-1], flush=True)
            progress += [int(k) for k in re.findall(r"running\s+(?:\d+\s+)?(\d+)/159 labels", body)]
            if counts[-1] > 0 and "running" in body and not (ARTIFACTS / "dashboard-mid-run.png").exists():
                page.screenshot(path=str(ARTIFACTS / "dashboard-mid-run.png"))
            if len(re.findall(r"done\s+(?:100\s+)?159/159 labels", body)) == 2:  # both runs, in the table
                break
        page.wait_for_timeout(1500)
        body = _text(page)
        page.screenshot(path=str(ARTIFACTS / "dashboard-done.png"), full_page=True)
        assert len(re.findall(r"done\s+(?:100\s+)?159/159 labels", body)) == 2, body[-500:]
        growth = [b for a, b in zip(counts, counts[1:]) if b > a]
        assert len(growth) >= 2, counts  # the plotted records grew while the runs trained
        assert any(0 < k < 159 for k in progress), progress  # and the page saw them part-way
        assert "bibtex-zero" in body and "bibtex-msi" in body
        for row in RunStore(home).list():  # the final P@1 of both runs, in the table
            assert f"{row['summary']['p@1']:.2f}" in body, (row["name"], row["summary"])
        assert page.locator("canvas").count() >= 4
    assert errors == []


def test_cancel_a_ticked_run_from_the_page(server):
    with browser_page(1300, 1000) as (page, errors):
        page.goto(server)
        page.wait_for_selector("text=Compare", timeout=60000)
        page.locator("select").first.select_option("delicious")
        page.get_by_role("button", name="Compare", exact=True).click()
        page.locator(".tabulator-cell", has_text="running").first.wait_for(timeout=30000)
        row = page.locator(".tabulator-row", has=page.locator(".tabulator-cell[tabulator-field=name]",
                                                              has_text=re.compile("^delicious-zero$")))
        row.locator("input[type=checkbox]").check()  # zero initialisation (the table lists the newest first)
        page.get_by_role("button", name="Cancel", exact=True).click()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "cancelled" not in _text(page):
            page.wait_for_timeout(500)
        assert re.search(r"delicious-zero\s+cancelled", _text(page))
    assert errors == []


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


def test_a_run_outlives_the_browser_and_the_server_and_shows_again(tmp_path, home):
    """Launch from the page, close the browser, kill the server (kill -9): the run trains on to the
    end; a new server's page shows it, with its records and final metrics, without a tick."""
    import os
    import signal

    first, url = start_server(home, tmp_path / "first.log")
    try:
        with browser_page(1300, 1000) as (page, errors):
            page.goto(url)
            page.wait_for_selector("text=Compare", timeout=60000)
            page.locator("select").first.select_option("delicious")
            chosen = page.locator('.choices__list--multiple .choices__item[data-value="msi"]')
            chosen.locator(".choices__button").click()  # zero initialisation only
            page.get_by_role("button", name="Compare", exact=True).click()
            page.locator(".tabulator-cell", has_text="running").first.wait_for(timeout=30000)
        assert errors == []
        deadline = time.monotonic() + 120  # a loaded machine: wait until the run has trained some labels
        while time.monotonic() < deadline and not RunStore(home).list()[0]["done"]:
            time.sleep(0.5)
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=20)
    (row,) = RunStore(home).list()
    # still training, server gone (total is 0 until the worker has read the data)
    assert row["status"] == "running" and (row["total"] == 0 or row["done"] < row["total"])
    second, url = start_server(home, tmp_path / "second.log")
    try:
        with browser_page(1300, 1000) as (page, errors):
            page.goto(url)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not re.search(r"done\s+(?:100\s+)?983/983 labels", _text(page)):
                page.wait_for_timeout(1000)
            body = _text(page)
            page.screenshot(path=str(ARTIFACTS / "dashboard-after-restart.png"))
        assert errors == []
    finally:
        second.terminate()
        second.wait(timeout=20)
    final = RunStore(home).get(row["id"])
    assert final["status"] == "done" and final["pid"] == row["pid"]  # the same process trained it to the end
    assert re.search(r"delicious-zero\s+done\s+(?:100\s+)?983/983 labels", body) and f"{final['summary']['p@1']:.2f}" in body
    assert _records_shown(body) > 983  # its records are plotted without ticking it
    assert server_errors(tmp_path / "second.log") == []
