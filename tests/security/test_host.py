"""DNS rebinding: a real `xcviz serve` answers only the Host names it was started for, on the page
and on the /ws websocket; the websocket's Origin must be one of them too."""
import http.client
import os
import subprocess
import sys
from contextlib import contextmanager

import pytest
from playwright.sync_api import sync_playwright

from tests.security.conftest import free_port, open_websocket, serve, server_errors, session_token, wait_for_port
from tests.ui.browser import ARGS, ARTIFACTS, CHROMIUM, page_text
from tests.ui.conftest import APP

# a rebinding page's own name, look-alikes, no Host, and IPv6 loopback (which Panel cannot serve: a
# 403 that says why, not the 500 it used to get)
FOREIGN = ("attacker.example", "127.0.0.1.attacker.example", "localhost.attacker.example", "", "[::1]")


def _get(port: int, host: str, path: str = "/dashboard") -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path, headers={"Host": host})
    response = connection.getresponse()
    return response.status, response.read().decode(errors="replace")


@pytest.mark.slow
def test_only_the_server_own_host_names_are_served(tmp_path):
    log = tmp_path / "server.log"
    with serve(["--home", str(tmp_path / "home"), "--allow-host", "xcviz.example"], log) as (_proc, port):
        tokens = {}
        for name in ("localhost", "127.0.0.1", "xcviz.example", "LOCALHOST"):
            status, page = _get(port, f"{name}:{port}")
            assert status == 200, (name, status)
            tokens[name] = session_token(page)
            headers = {"Host": f"{name}:{port}", "Origin": f"http://{name}:{port}"}
            assert open_websocket(port, tokens[name], headers) == "ACK", name
        for name in FOREIGN:
            host = f"{name}:{port}" if name else ""
            status, body = _get(port, host)
            assert status == 403 and "Host" in body, (host, status)
            assert _get(port, host, "/")[0] == 403 and _get(port, host, "/static/js/bokeh.min.js")[0] == 403
            # even with a session token obtained elsewhere, the websocket is refused
            headers = {"Host": host, "Origin": f"http://{host}"}
            assert open_websocket(port, tokens["localhost"], headers) == "refused 403", host
        # an allowed Host but a page of another origin: Bokeh's Origin allow-list holds the same names
        headers = {"Host": f"localhost:{port}", "Origin": "http://attacker.example"}
        assert open_websocket(port, tokens["localhost"], headers).startswith("refused")
    assert server_errors(log) == []


@pytest.mark.slow
def test_a_configured_address_is_accepted_and_nothing_else(tmp_path):
    with serve(["--home", str(tmp_path / "home")], tmp_path / "log", address="127.0.0.2") as (_proc, port):
        connection = http.client.HTTPConnection("127.0.0.2", port, timeout=30)
        connection.request("GET", "/dashboard", headers={"Host": f"127.0.0.2:{port}"})
        assert connection.getresponse().status == 200
        connection = http.client.HTTPConnection("127.0.0.2", port, timeout=30)
        connection.request("GET", "/dashboard", headers={"Host": f"attacker.example:{port}"})
        assert connection.getresponse().status == 403


@contextmanager
def _rebinding_browser():
    """Chromium whose DNS resolves attacker.example to 127.0.0.1, as a rebinding name would."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=[*ARGS, "--host-resolver-rules=MAP attacker.example 127.0.0.1"])
        try:
            yield browser.new_page(viewport={"width": 1100, "height": 700})
        finally:
            browser.close()


def _shows_dashboard(page, url: str) -> bool:
    """Whether the page at `url` shows the dashboard (else it must show a 403 refusal)."""
    page.goto(url)
    page.locator("text=Compare").or_(page.locator("text=/403/")).first.wait_for(timeout=60000)
    return "Compare" in page_text(page)


@pytest.mark.browser
def test_a_page_reached_through_a_rebinding_name_gets_nothing(tmp_path):
    with serve(["--home", str(tmp_path / "home")], tmp_path / "log") as (_proc, port), \
            _rebinding_browser() as page:
        assert _shows_dashboard(page, f"http://localhost:{port}/dashboard")
        assert not _shows_dashboard(page, f"http://attacker.example:{port}/dashboard")
        assert "403" in page_text(page)
        page.screenshot(path=str(ARTIFACTS / "host-rebinding-refused.png"))


@pytest.mark.browser
def test_bare_panel_serve_of_the_app_refuses_foreign_hosts(tmp_path):
    """`panel serve apps/dashboard.py` checks no Host itself: the app refuses to build the page."""
    port = free_port()
    with (tmp_path / "log").open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "panel", "serve", str(APP), "--port", str(port),
                                 "--address", "127.0.0.1", "--allow-websocket-origin", f"attacker.example:{port}",
                                 "--allow-websocket-origin", f"localhost:{port}"],
                                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "XCVIZ_HOME": str(tmp_path)})
    try:
        wait_for_port(proc, "127.0.0.1", port)
        with _rebinding_browser() as page:
            assert _shows_dashboard(page, f"http://localhost:{port}/dashboard")
            assert not _shows_dashboard(page, f"http://attacker.example:{port}/dashboard")
            assert "403" in page_text(page)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize("header, name", [("EX.org:80", "ex.org"), ("[::1]:5006", "::1"), ("::1", "::1"),
                                          ("localhost.", "localhost"), ("", "")])
def test_host_name(header, name):
    from xcviz.app.server import host_name

    assert host_name(header) == name


@pytest.mark.parametrize("args", [["--address", "::1"], ["--address", "[::1]"], ["--allow-host", "[fe80::1]"]])
def test_an_ipv6_address_is_refused_before_serving(args, capsys):
    """Panel reads a Host [::1]:PORT as name:port and failed every page with a 500: `xcviz serve`
    says so and stops instead (`--address ::`, every address, still binds)."""
    from xcviz.cli import main
    from xcviz.app.server import refuse_ipv6

    assert main(["serve", "--port", str(free_port()), *args]) == 2
    assert "IPv6" in capsys.readouterr().err
    refuse_ipv6("::", ["xcviz.example", "10.0.0.2"])  # no refusal
