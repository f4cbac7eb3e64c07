"""The login of `xcviz serve`, against a real server process: secrets never in process arguments (of
the server or of the runs it starts) nor in the runs' environment, wrong passwords and forged cookies
refused, failed logins limited, the right password lets a browser in."""
import http.client
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

from tornado.web import create_signed_value

from tests.security.conftest import open_websocket, serve, server_errors, session_token
from tests.ui.browser import ARTIFACTS, browser_page
from xcviz.runs.store import RunStore
from xcviz.app.server import MAX_FAILURES


def _request(port: int, method: str, path: str, cookie: str = "", form: dict | None = None,
             headers: dict | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {**(headers or {}), **({"Cookie": cookie} if cookie else {})}
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    response.read_body = response.read().decode(errors="replace")
    return response


def _login(port: int, password: str, user: str = "someone"):
    """POST the login form; returns (status, redirect location, the login's cookies (the signed user
    and session id) or '')."""
    response = _request(port, "POST", "/login", form={"username": user, "password": password})
    cookies = [c.split(";")[0] for c in response.headers.get_all("Set-Cookie") or []
               if c.startswith(("user=", "xcviz_session="))]
    return response.status, response.headers.get("Location", ""), "; ".join(cookies)


def _opens_dashboard(port: int, cookie: str) -> bool:
    response = _request(port, "GET", "/dashboard", cookie=cookie)
    assert response.status in (200, 302), response.status
    return response.status == 200


def _descendants(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = [int(c) for c in children.read_text().split()] if children.exists() else []
    return found + [d for c in found for d in _descendants(c)]


def _proc_text(pid: int, what: str) -> str:
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # ended meanwhile
        return ""


def _private(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.mark.slow
def test_password_from_the_environment_and_a_random_cookie_secret(tmp_path):
    password = "pw-" + secrets.token_hex(8)
    old_secret = "an-older-servers-secret-" + secrets.token_hex(8)
    log = tmp_path / "server.log"
    with serve(["--home", str(tmp_path / "home")], log, env={"XCVIZ_PASSWORD": password}) as (proc, port):
        assert password not in _proc_text(proc.pid, "cmdline")
        assert not _opens_dashboard(port, "")  # no cookie: sent to the login page
        status, location, _ = _login(port, password + "x")
        assert status == 302 and "error=" in location
        # xcviz's login page: the failed login's message, no text a link brings, nothing from a CDN
        page = _request(port, "GET", location.split("127.0.0.1:%d" % port)[-1]).read_body
        assert "Invalid username or password!" in page and "xcviz" in page
        spoofed = _request(port, "GET", "/login?error=" + urllib.parse.quote("Session expired: call 555")).read_body
        assert "555" not in spoofed and "Invalid" not in spoofed
        assert "http://" not in spoofed and "https://" not in spoofed and "cdn" not in spoofed
        logout = _request(port, "GET", "/logout").read_body
        assert "Logged out" in logout and "https://" not in logout
        status, location, cookie = _login(port, password)
        assert status == 302 and "error" not in location and cookie
        assert _opens_dashboard(port, cookie)
        token = session_token(_request(port, "GET", "/dashboard", cookie=cookie).read_body)
        origin = {"Origin": f"http://127.0.0.1:{port}"}
        assert open_websocket(port, token, {**origin, "Cookie": cookie}) == "ACK"
        assert open_websocket(port, token, origin).startswith("refused")  # the websocket needs the login too
        for secret in (old_secret, "", "secret", password):  # cookies signed with guessable or old secrets
            forged = (f"user={create_signed_value(secret, 'user', 'someone').decode()}; "
                      f"xcviz_session={create_signed_value(secret, 'xcviz_session', 'any-id').decode()}")
            assert not _opens_dashboard(port, forged), secret
        # failed logins: after MAX_FAILURES, even the right password is refused for a while
        for _ in range(MAX_FAILURES):
            assert _login(port, "wrong")[0] == 302
        response = _request(port, "POST", "/login", form={"username": "someone", "password": password})
        assert response.status == 429 and int(response.headers["Retry-After"]) > 0
        assert _opens_dashboard(port, cookie)  # a session already logged in is not affected
        # a secret in a link's query stays out of the log (Tornado logged a 4xx request's whole URL)
        for path in (f"/login?username=someone&password={password}", f"/nothing?token={password}"):
            _request(port, "GET", path)
        logged = "404 GET /nothing?(query withheld) (127.0.0.1)"
        deadline = time.monotonic() + 20  # the server logs a request once its answer is sent
        while logged not in log.read_text(errors="replace") and time.monotonic() < deadline:
            time.sleep(0.1)
    text = log.read_text(errors="replace")
    assert logged in text
    assert password not in text
    assert server_errors(log) == []


@pytest.mark.browser
def test_password_and_secret_files_a_browser_logs_in_and_its_runs_get_no_secret(tmp_path):
    password, secret = "pw-" + secrets.token_hex(8), "cookie-" + secrets.token_hex(16)
    password_file = _private(tmp_path / "password", password + "\n")
    secret_file = _private(tmp_path / "secret", secret)
    log = tmp_path / "server.log"
    args = ["--home", str(tmp_path / "home"), "--basic-auth", str(password_file),
            "--cookie-secret-file", str(secret_file)]
    with serve(args, log) as (proc, port), browser_page(1300, 900) as (page, errors):
        signed = (f"user={create_signed_value(secret, 'user', 'someone').decode()}; "
                  f"xcviz_session={create_signed_value(secret, 'xcviz_session', 'any-id').decode()}")
        assert _opens_dashboard(port, signed)  # the given secret signs the cookies (a restart keeps logins)
        page.goto(f"http://127.0.0.1:{port}/dashboard")
        page.locator("input[name=username]").fill("someone")
        page.locator("input[name=password]").fill(password)
        page.locator("button[type=submit], input[type=submit]").first.click()
        page.wait_for_selector("text=Compare", timeout=60000)
        page.locator("select").first.select_option("bibtex")
        page.get_by_role("button", name="Compare", exact=True).click()
        # the arguments and environment of the server's processes, as read on every look, until both
        # runs' workers are among them (once a worker runs, its arguments and environment stay as read)
        seen, deadline = {}, time.monotonic() + 60
        workers = lambda: sum(any("xcviz.runs.worker" in c for c, _ in looks) for looks in seen.values())  # noqa: E731
        while time.monotonic() < deadline and workers() < 2:
            for pid in [proc.pid, *_descendants(proc.pid)]:
                seen.setdefault(pid, set()).add((_proc_text(pid, "cmdline"), _proc_text(pid, "environ")))
            time.sleep(0.1)
        page.locator(".tabulator-row", has_text="bibtex-msi").wait_for(timeout=30000)  # listed, for the screenshot
        page.screenshot(path=str(ARTIFACTS / "auth-logged-in.png"))
        store = RunStore(tmp_path / "home")
        for run in store.list():  # not trained to the end beside the tests that follow
            store.request_cancel(run["id"])
        assert workers() == 2, seen  # both runs were started
        claims = [store.token(run["id"]) for run in store.list()]  # a worker's token was its last argument
        assert len(claims) == 2 and all(claims)
        for pid, looks in seen.items():
            for cmdline, environ in looks:
                assert password not in cmdline and secret not in cmdline, pid
                assert not any(claim in cmdline for claim in claims), (pid, cmdline)
                assert password not in environ and secret not in environ, pid
        assert errors == []
    assert server_errors(log) == []


@pytest.mark.slow
def test_the_page_holds_no_credential_and_a_logout_ends_its_own_login_only(tmp_path):
    """The page's session token (readable by the page's scripts) copied the HttpOnly login cookie
    in, and any other cookie or header (another local app's login cookie: cookies ignore ports; a
    proxy's forwarded token). After a logout the same cookie, kept by anyone who had it, still
    opened the dashboard; and two logins within one second get the same `user` cookie, so a logout
    must end its own login, not the text of its cookie."""
    from bokeh.util.token import get_token_payload

    password = "pw-" + secrets.token_hex(8)
    with serve(["--home", str(tmp_path / "home")], tmp_path / "server.log",
               env={"XCVIZ_PASSWORD": password}) as (_proc, port):
        first, second = _login(port, password)[2], _login(port, password)[2]  # most often within one second
        jupyter = "username-127-0-0-1-8888=jupyter-secret"
        page = _request(port, "GET", "/dashboard", cookie=f"{first}; {jupyter}",
                        headers={"Authorization": "Basic c2VjcmV0", "X-Forwarded-Access-Token": "proxy-secret"})
        assert page.status == 200
        payload = json.dumps(get_token_payload(session_token(page.read_body)))
        for secret in ("jupyter-secret", "proxy-secret", "c2VjcmV0", "user", "xcviz_session", "2|1:0|"):
            assert secret not in payload, (secret, payload)
        assert _request(port, "GET", "/logout", cookie=first).status == 200
        assert not _opens_dashboard(port, first)  # the logged-out login is refused ...
        token = session_token(_request(port, "GET", "/dashboard", cookie=second).read_body)
        assert open_websocket(port, token, {"Origin": f"http://127.0.0.1:{port}", "Cookie": first}).startswith(
            "refused")  # ... on the websocket too
        assert _opens_dashboard(port, second)  # the other login stays, even with the same `user` cookie
        assert _opens_dashboard(port, _login(port, password)[2])  # and logging in again works at once
        junk = "user=x; xcviz_session=" + "y" * 4000  # a logout with cookies of no login changes nothing
        assert _request(port, "GET", "/logout", cookie=junk).status == 200
        assert _opens_dashboard(port, second)


def _serve_refused(*args: str, env: dict | None = None) -> str:
    out = subprocess.run([sys.executable, "-m", "xcviz.cli", "serve", "--port", "1", *args], capture_output=True,
                         text=True, timeout=60, env={**os.environ, **(env or {})})
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    return out.stderr


@pytest.mark.slow
def test_secret_files_others_can_read_and_passwords_as_arguments_are_refused(tmp_path):
    shared = tmp_path / "password"
    shared.write_text("a-password-others-can-read")
    shared.chmod(0o644)
    message = _serve_refused("--basic-auth", str(shared))
    assert "chmod 600" in message and "a-password-others-can-read" not in message
    message = _serve_refused("--basic-auth", "my-password")  # a password typed where the file goes
    assert "never the password itself" in message and "my-password" not in message
    assert "at least" in _serve_refused(env={"XCVIZ_COOKIE_SECRET": "short"})
    assert "--cookie-secret" not in subprocess.run([sys.executable, "-m", "xcviz.cli", "serve", "--help"],
                                                   capture_output=True, text=True).stdout.replace(
        "--cookie-secret-file", "")


def test_login_limiter_locks_a_client_out_for_a_while():
    from xcviz.app.server import LoginLimiter

    now = [0.0]
    limiter = LoginLimiter(max_failures=3, lockout=60, clock=lambda: now[0])
    for t in (0, 10, 20):
        now[0] = t
        assert limiter.wait("a") == 0
        limiter.record("a", False)
    assert limiter.wait("a") == 60 and limiter.wait("b") == 0  # 60 s after the last failure; others unaffected
    now[0] = 79
    assert limiter.wait("a") == 1
    now[0] = 80
    assert limiter.wait("a") == 0
    limiter.record("a", False)  # failures 10, 20, 80 span more than the lockout: no lock
    assert limiter.wait("a") == 0
    limiter.record("a", False)
    limiter.record("a", True)  # a success clears the count
    limiter.record("a", False)
    assert limiter.wait("a") == 0
