"""The dashboard in a real browser: launch a two-initializer comparison, watch it train, see metrics."""
import re
import socket
import subprocess
import sys
import time

from tests.ui.browser import ARTIFACTS, browser_page, page_text as _text
from tests.ui.conftest import free_port


def _records_shown(page) -> int:
    match = re.search(r"records shown: (\d+)", _text(page))
    return int(match.group(1)) if match else 0


def test_compare_two_initializers_live(server):
    ARTIFACTS.mkdir(exist_ok=True)
    with browser_page(1300, 1000) as (page, errors):
        page.goto(server)
        page.wait_for_selector("text=Compare", timeout=60000)
        page.locator("select").first.select_option("delicious")
        page.get_by_role("button", name="Compare").click()
        counts = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            page.wait_for_timeout(1000)
            counts.append(_records_shown(page))
            if len(counts) == 3:
                page.screenshot(path=str(ARTIFACTS / "dashboard-mid-run.png"))
            if _text(page).count("done 983/983 labels") == 2:  # both progress lines
                break
        page.wait_for_timeout(1500)
        body = _text(page)
        page.screenshot(path=str(ARTIFACTS / "dashboard-done.png"), full_page=True)
        assert body.count("done 983/983 labels") == 2, body[-500:]
        growth = [b for a, b in zip(counts, counts[1:]) if b > a]
        assert len(growth) >= 2, counts  # the plotted records grew while the runs trained
        assert "delicious-zero" in body and "delicious-msi" in body
        assert re.search(r"6\d\.\d\d", body)  # final P@1 of both runs in the table
        assert page.locator("canvas").count() >= 4
    assert errors == []


def test_cancel_a_ticked_run_from_the_page(server):
    with browser_page(1300, 1000) as (page, errors):
        page.goto(server)
        page.wait_for_selector("text=Compare", timeout=60000)
        page.locator("select").first.select_option("delicious")
        page.get_by_role("button", name="Compare").click()
        page.locator(".tabulator-cell", has_text="running").first.wait_for(timeout=30000)
        page.locator(".tabulator input[type=checkbox]").nth(1).check()  # the first run: zero initialisation
        page.get_by_role("button", name="Cancel ticked runs").click()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "cancelled" not in _text(page):
            page.wait_for_timeout(500)
        assert "delicious-zero cancelled" in _text(page)
    assert errors == []


def test_serve_command_binds_and_passes_basic_auth(tmp_path):
    import urllib.error
    import urllib.request

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "xcviz.cli", "serve", "--port", str(port), "--home",
                             str(tmp_path / "home"), "--basic-auth", "s3cret-pass"],
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
