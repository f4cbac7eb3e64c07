"""Serving the dashboard: the one checked entry point behind `xcviz serve`, `make dashboard` and
`python apps/dashboard.py`.

What it adds to Panel's server:
- Host checking against DNS rebinding: a page of another site that makes its own name resolve to
  127.0.0.1 reaches the server with its own name in the Host header. Only the names the server was
  started for (loopback names, the bound address, `--allow-host` names) are served; any other Host
  gets 403 on every route, the /ws websocket included, and the websocket Origin allow-list holds the
  same names.
- Login secrets that never appear in process arguments (other local users can read those): the
  password comes from XCVIZ_PASSWORD or a file readable only by its owner, the cookie secret from
  XCVIZ_COOKIE_SECRET, such a file, or is drawn at random for each server (cookies of an older
  server, or forged with a guessed secret, are refused). Both are removed from the environment once
  read, so the background runs the page starts never inherit them.
- Panel's `/components/` route, which imports whatever module its URL names (`this` printed the Zen of
  Python into the log, `venv.__main__` ran a program that exited the server) and asked for no
  login, serves only components of panel and bokeh modules already imported, to logged-in users.
- Login attempts limited per client: after `MAX_FAILURES` wrong passwords within `LOCKOUT` seconds,
  that client's logins are refused with 429 until `LOCKOUT` seconds after the last failure.
- No credential in the page: the session token Bokeh writes into it, which page scripts can read,
  copies no cookie and only harmless headers (TOKEN_HEADERS); and a session id per login, which
  logout ends.
- An access log without query strings: Tornado logged a refused request's whole URL, so a password
  or token put in a link's query (`/login?password=...`) was written into the server's log.
The login itself is Panel's basic-auth provider (its signed `user` cookie), with xcviz's pages.
"""
from __future__ import annotations

import errno
import hmac
import html
import json
import os
import secrets
import stat
import sys
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Callable

from tornado.httputil import HTTPServerRequest
from tornado.routing import Matcher, Rule
from tornado.web import Application, HTTPError, RequestHandler

from .login_pages import LOGIN_TEMPLATE, LOGOUT_TEMPLATE

LOOPBACK = ("localhost", "127.0.0.1")
SECRET_VARIABLES = ("XCVIZ_PASSWORD", "XCVIZ_COOKIE_SECRET", "PANEL_COOKIE_SECRET", "BOKEH_COOKIE_SECRET")
MIN_SECRET = 16  # characters of a given cookie secret: shorter ones can be guessed
MAX_FAILURES = 5
LOCKOUT = 60.0  # seconds
COMPONENT_MODULES = ("panel.", "bokeh.")  # the packages whose components the page may load
SESSION_COOKIE = "xcviz_session"  # the signed id of one login
# what the page's session token may copy from the request: page scripts can read the token, so no
# cookie (the HttpOnly login cookie, and any other site's on this host: cookies ignore ports) and no
# header but these (a proxy's forwarded credentials would be readable too); xcviz reads none of them
TOKEN_HEADERS = ["Host", "User-Agent", "Accept-Language"]


class ServeError(ValueError):
    """A server setting that cannot be used, naming it and what is wrong."""


def host_name(host: str) -> str:
    """The name part of a Host header or an address, lower case: 'EX.org:80' -> 'ex.org',
    '[::1]:5006' -> '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") > 1:  # a bare IPv6 address
        return host
    return host.partition(":")[0].rstrip(".")


def allowed_names(address: str, extra: list[str] = ()) -> list[str]:
    """The Host names a server bound to `address` answers: loopback names, the address itself
    (unless it is a wildcard) and the extra names given."""
    names = list(LOOPBACK)
    for name in [address, *extra]:
        name = host_name(name)
        if name and name not in ("0.0.0.0", "::") and name not in names:
            names.append(name)
    return names


def origins(names: list[str], port: int) -> list[str]:
    """The websocket Origin allow-list (host:port) for these names (IPv4 addresses and names: see
    `refuse_ipv6`)."""
    return [f"{n}:{port}" for n in names]


def refuse_ipv6(address: str, allow_hosts: list[str]) -> None:
    """The page cannot be served under an IPv6 address: Panel reads a Host such as [::1]:5006 as
    name:port and fails every page with a 500, and Bokeh's Origin allow-list cannot hold one, so the
    websocket would be refused anyway. `::` (every address, IPv4 ones included) may still be bound."""
    for option, value in [("--address", address)] + [("--allow-host", h) for h in allow_hosts]:
        name = host_name(value)
        if ":" in name and not (option == "--address" and name == "::"):
            raise ServeError(f"{option} {value}: the dashboard cannot be served under an IPv6 address (its pages "
                             "read the Host as name:port); use 127.0.0.1, a host name, or --address :: to listen "
                             "on every address")


class _ForeignHost(Matcher):
    """Matches every request whose Host header names none of the allowed names."""

    def __init__(self, names: list[str]) -> None:
        self.names = frozenset(names)

    def match(self, request: HTTPServerRequest) -> dict | None:
        return None if host_name(request.headers.get("Host", "")) in self.names else {}


class _Refused(RequestHandler):
    """403 for any method, before any other handler (or the websocket upgrade) runs."""

    def prepare(self) -> None:
        self.set_status(403)
        self.finish("403: this server does not answer to that Host name (see xcviz serve --allow-host)\n")


def guard_hosts(app: Application, names: list[str]) -> None:
    """Route every request of `app` whose Host is not one of `names` to a 403, ahead of its routes."""
    app.default_router.rules.insert(0, Rule(_ForeignHost(names), _Refused))


def guard_components(app: Application) -> None:
    """Serve Panel's `/components/MODULE/CLASS/ATTRIBUTE/PATH` resources only for a MODULE of panel
    or bokeh that is imported already (Panel's handler imports any module the URL names, so that
    one GET, from any page a local browser opens, ran a module's code in the server), and only to
    a logged-in user when the server has a login (Panel's handler asked for none)."""
    from panel.io.server import AuthenticatedStaticFileHandler, ComponentResourceHandler

    class ComponentResources(AuthenticatedStaticFileHandler, ComponentResourceHandler):
        def parse_url_path(self, path: str) -> str:
            module = path.partition("/")[0]
            if not module.startswith(COMPONENT_MODULES) or module not in sys.modules:
                raise HTTPError(404)
            return super().parse_url_path(path)

    rules = [r for r in app.wildcard_router.rules if r.target is ComponentResourceHandler]
    if not rules:
        raise ServeError("this Panel serves its components elsewhere: xcviz cannot guard them")
    for rule in rules:
        rule.target = ComponentResources


def log_without_queries(app: Application) -> None:
    """Log `app`'s requests as Tornado does (status, method, URL, client, time; warnings for 4xx,
    errors for 5xx) with each URL's query string withheld: a link's query may hold a secret."""
    from tornado.log import access_log

    def log(handler: RequestHandler) -> None:
        status, request = handler.get_status(), handler.request
        method = access_log.info if status < 400 else access_log.warning if status < 500 else access_log.error
        query = "?(query withheld)" if request.query else ""
        method("%d %s %s%s (%s) %.2fms", status, request.method, request.path, query, request.remote_ip,
               1000.0 * request.request_time())

    app.settings["log_function"] = log


def _private_file(path: str | Path, what: str) -> str:
    """The text of a secret file, refused unless it is a regular file of this user that no one
    else may read (its contents are never quoted in an error)."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise ServeError(f"{what} {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ServeError(f"{what} {path}: not a regular file")
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ServeError(f"{what} {path}: readable by other users (mode {stat.filemode(info.st_mode)}); "
                         f"make it yours alone: chmod 600 {path}")
    return path.read_text(encoding="utf-8-sig").strip()


def password_from(environ: dict[str, str], path: str | None) -> str | dict[str, str] | None:
    """The login: XCVIZ_PASSWORD, else the file at `path` (a password on its first line, or a JSON
    object of user: password), else None (no login)."""
    if environ.get("XCVIZ_PASSWORD"):
        return environ["XCVIZ_PASSWORD"]
    if path is None:
        return None
    if not Path(path).exists():  # most likely a password typed in its place: do not repeat it
        raise ServeError("--basic-auth takes a file holding the password (or set XCVIZ_PASSWORD), never the "
                         "password itself; no such file")
    text = _private_file(path, "--basic-auth")
    if text.startswith("{"):
        try:
            users = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ServeError(f"--basic-auth {path}: not a valid JSON object (line {exc.lineno})") from None
        if not users or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in users.items()):
            raise ServeError(f"--basic-auth {path}: the JSON object must map user names to non-empty passwords")
        return users
    password = text.splitlines()[0] if text else ""
    if not password:
        raise ServeError(f"--basic-auth {path}: the file is empty")
    return password


def cookie_secret_from(environ: dict[str, str], path: str | None) -> str:
    """XCVIZ_COOKIE_SECRET (or Panel's and Bokeh's variables), else the file at `path`, else a new
    random secret: cookies signed by another server are then refused."""
    given = next((environ[v] for v in SECRET_VARIABLES[1:] if environ.get(v)), None)
    if given is None and path is not None:
        given = _private_file(path, "--cookie-secret-file")
    if given is None:
        return secrets.token_urlsafe(32)
    if len(given) < MIN_SECRET:
        raise ServeError(f"the cookie secret has {len(given)} characters; use at least {MIN_SECRET} random ones")
    return given


class LoginLimiter:
    """Failed logins per client: a client with `max_failures` failures within `lockout` seconds is
    refused until `lockout` seconds after its last failure; a successful login clears its count."""

    def __init__(self, max_failures: int = MAX_FAILURES, lockout: float = LOCKOUT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_failures, self.lockout, self.clock = max_failures, lockout, clock
        self.failures: dict[str, deque] = defaultdict(lambda: deque(maxlen=max_failures))

    def wait(self, client: str) -> float:
        """Seconds until this client may try again (0: now)."""
        times = self.failures.get(client)
        if not times or len(times) < self.max_failures or times[-1] - times[0] > self.lockout:
            return 0.0
        return max(0.0, times[-1] + self.lockout - self.clock())

    def record(self, client: str, success: bool) -> None:
        if success:
            self.failures.pop(client, None)
        else:
            self.failures[client].append(self.clock())


def _auth_provider(credentials: str | dict[str, str], limiter: LoginLimiter):
    """Panel's basic-auth provider, with a login handler that compares in constant time and
    refuses a client over the limit of failed logins, a session id of its own for every login, which
    logout ends (Panel's logout only asked the browser to forget its cookie: a copy kept opened the
    dashboard for the cookie's lifetime, a day), and xcviz's own login and logout pages
    (xcviz.app.login_pages)."""
    from panel.auth import BasicAuthProvider, BasicLoginHandler, LogoutHandler
    from panel.config import config

    ended: dict[str, float] = {}  # the session ids logged out of -> when; forgotten once their cookies expire

    def matches(user: str, password: str) -> bool:
        expected = credentials.get(user) if isinstance(credentials, dict) else credentials
        return expected is not None and hmac.compare_digest(expected.encode(), password.encode())

    def session(handler) -> str | None:
        """The login session id a request's cookie names, signed by this server's secret and not
        logged out of (a restart with the same secret keeps the logins, and forgets the logouts)."""
        sid = handler.get_secure_cookie(SESSION_COOKIE, max_age_days=config.oauth_expiry)
        sid = sid.decode() if sid else None
        return None if sid is None or sid in ended else sid

    class LimitedLogin(BasicLoginHandler):
        def set_current_user(self, user: str) -> None:
            """Panel's `user` cookie, and a session id of this login alone (the `user` cookie of two
            logins within one second is the same text: revoking it would end both)."""
            super().set_current_user(user)
            if user:
                self.set_secure_cookie(SESSION_COOKIE, secrets.token_urlsafe(24), expires_days=config.oauth_expiry,
                                       httponly=True, path=config.cookie_path)

        def post(self) -> None:
            wait = limiter.wait(self.request.remote_ip)
            if wait > 0:
                self.set_status(429)
                self.set_header("Retry-After", str(int(wait) + 1))
                self.finish(f"429: too many failed logins from this address; try again in {int(wait) + 1} s\n")
                return
            super().post()

        def _validate(self, username: str, password: str) -> bool:
            ok = matches(username, password)
            limiter.record(self.request.remote_ip, ok)
            return ok

    class RevokingLogout(LogoutHandler):
        def get(self) -> None:
            sid, now = session(self), time.time()
            if sid is not None:  # only an id this server signed (a login's): nothing else is kept
                for old in [k for k, t in ended.items() if now - t > config.oauth_expiry * 86400]:
                    del ended[old]
                ended[sid] = now
            self.clear_cookie(SESSION_COOKIE, path=config.cookie_path)
            super().get()

    class Provider(BasicAuthProvider):
        @property
        def login_handler(self):
            LimitedLogin._login_endpoint, LimitedLogin._login_template = self._login_endpoint, self._login_template
            return LimitedLogin

        @property
        def logout_handler(self):
            RevokingLogout._login_endpoint = self._login_endpoint
            RevokingLogout._logout_template = self._logout_template
            return RevokingLogout

        @property
        def get_user(self):
            signed_in = super().get_user
            return lambda handler: signed_in(handler) if session(handler) else None

    provider = Provider()
    provider._login_template, provider._logout_template = LOGIN_TEMPLATE, LOGOUT_TEMPLATE  # no CDN, no ?error= text
    return provider


def dashboard_page(home: str | None, data_dirs: list[str], schedulers: list[str] = ()):
    """The function that builds each page opened: a new dashboard over the run store (home: None
    for $XCVIZ_HOME or ./xcviz-runs), offering the data in `data_dirs` and the Dask `schedulers`.
    `xcviz serve` and apps/dashboard.py both build pages with it."""
    def page():
        import panel as pn

        from ..runs.store import RunStore, StoreError
        from .dashboard import Dashboard

        pn.extension("tabulator", "filedropper")  # the upload box's JavaScript, also under `panel serve`
        try:
            return Dashboard(RunStore(home), data_dirs=data_dirs, schedulers=schedulers).view()
        except StoreError as exc:  # an unusable store: an alert, not a blank page
            return pn.pane.Alert(html.escape(f"The run store cannot be opened: {exc}"), alert_type="danger")
    return page


def serve(*, address: str = "127.0.0.1", port: int = 5006, home: str | None = None,
          data_dirs: list[str] = (), allow_hosts: list[str] = (), schedulers: list[str] = (),
          basic_auth: str | None = None, cookie_secret_file: str | None = None) -> None:
    """Serve the dashboard at http://ADDRESS:PORT/dashboard until stopped (Ctrl-C, SIGTERM); its
    runs read files inside `data_dirs` only and use the Dask `schedulers` only. Secrets are read
    from the environment (and files) and removed from the environment."""
    from panel.io.server import get_server

    from ..engine.loading import enable_shortcuts
    from ..runs.store import RunStore

    enable_shortcuts()

    refuse_ipv6(address, list(allow_hosts))
    RunStore(home)  # a store that cannot be used (another user's, say) is refused now, not in each page
    credentials = password_from(os.environ, basic_auth)
    secret = cookie_secret_from(os.environ, cookie_secret_file)
    for name in SECRET_VARIABLES:  # background runs started by the page inherit the environment
        os.environ.pop(name, None)
    names = allowed_names(address, list(allow_hosts))
    options = {}
    if credentials is not None:
        options["auth_provider"] = _auth_provider(credentials, LoginLimiter())
    try:
        page = dashboard_page(home, [str(Path(d).resolve()) for d in data_dirs], list(schedulers))
        server = get_server({"dashboard": page},
                            port=port, address=address, websocket_origin=origins(names, port), cookie_secret=secret,
                            include_cookies=[], include_headers=TOKEN_HEADERS,
                            show=False, start=False, title="xcviz", **options)
    except OSError as exc:  # the bind: "[Errno 98] Address already in use" named neither port nor remedy
        if exc.errno == errno.EADDRINUSE:
            raise OSError(f"port {port} on {address} is in use (another `xcviz serve`?); "
                          f"choose another with --port") from None
        raise OSError(f"cannot listen on {address} port {port}: {exc.strerror or exc}") from None
    guard_hosts(server._tornado, names)
    guard_components(server._tornado)
    log_without_queries(server._tornado)
    shown = f"[{address}]" if ":" in address else address
    print(f"xcviz: serving http://{shown}:{server.port}/dashboard (Host names accepted: {', '.join(names)}"
          f"{'; login required' if credentials is not None else ''})", flush=True)
    server.start()
    server.io_loop.start()


def session_host_allowed(environ: dict[str, str] | None = None) -> bool:
    """For an app served by a bare `panel serve` (which checks no Host): whether the request that
    opened this page named a loopback host or one of XCVIZ_ALLOW_HOSTS (comma-separated). True
    outside a served page (a notebook)."""
    import panel as pn

    environ = os.environ if environ is None else environ
    request = getattr(getattr(pn.state.curdoc, "session_context", None), "request", None)
    if request is None:
        return True
    extra = [h for h in environ.get("XCVIZ_ALLOW_HOSTS", "").split(",") if h.strip()]
    return host_name(request.headers.get("Host", "")) in allowed_names("localhost", extra)
