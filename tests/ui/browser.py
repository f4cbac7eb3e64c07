"""Headless Debian chromium through Playwright, as the project's browser tests use it.

One chromium serves the whole test session (starting it costs seconds on a loaded machine);
each `browser_page` gets a fresh context of its own (no cookies, storage or cache shared between
tests), closed when the test is done with it."""
import atexit
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
_session: dict = {}


def _browser():
    """The session's chromium, started on first use (again if it has gone) and closed at exit."""
    browser = _session.get("browser")
    if browser is None or not browser.is_connected():
        if "playwright" not in _session:
            _session["playwright"] = sync_playwright().start()
            atexit.register(_close)
        browser = _session["browser"] = _session["playwright"].chromium.launch(executable_path=CHROMIUM, args=ARGS)
    return browser


def _close() -> None:
    try:
        if _session.get("browser") is not None:
            _session["browser"].close()
        _session.pop("playwright").stop()
    except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone already
        pass


@contextmanager
def browser_page(width: int = 1100, height: int = 900):
    """A fresh page; yields (page, console_errors) where console_errors collects error messages."""
    ARTIFACTS.mkdir(exist_ok=True)
    context = _browser().new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page, errors
    finally:
        context.close()


def page_text(page) -> str:
    """All text of the page, shadow DOM included (Panel renders its components in shadow roots)."""
    return page.evaluate("""() => {
        const out = [];
        const walk = (node) => {
            if (node.nodeType === Node.TEXT_NODE) out.push(node.textContent);
            if (node.shadowRoot) walk(node.shadowRoot);
            node.childNodes.forEach(walk);
        };
        walk(document.body);
        return out.join(" ");
    }""")


def cut_cells(page) -> list[str]:
    """The cells of the page's tables whose text does not fit (field: text)."""
    return page.evaluate("""() => { const out = [];
      const walk = (root) => { root.querySelectorAll('*').forEach((el) => {
        if (el.shadowRoot) walk(el.shadowRoot);
        if (el.classList.contains('tabulator-cell') && el.getAttribute('tabulator-field') && el.offsetParent !== null
            && el.scrollWidth > el.clientWidth + 1)
          out.push(el.getAttribute('tabulator-field') + ': ' + el.textContent); }); };
      walk(document); return out; }""")
