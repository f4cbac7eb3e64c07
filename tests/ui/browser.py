"""Headless Debian chromium through Playwright, as the project's browser tests use it.

A page opened while another is open (a module's shared page, a report opened beside it) shares
its chromium; each `browser_page` gets a fresh context of its own (no cookies, storage or cache
shared between tests). Chromium and Playwright stop when the last open page closes: Playwright's
synchronous API keeps an event loop running, which `asyncio.run` elsewhere in the suite refuses."""
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
_open_pages: list = []  # the chromium of the pages open now, once per open page


@contextmanager
def browser_page(width: int = 1100, height: int = 900):
    """A fresh page; yields (page, console_errors) where console_errors collects error messages."""
    ARTIFACTS.mkdir(exist_ok=True)
    if _open_pages:
        browser, playwright = _open_pages[-1], None
    else:
        playwright = sync_playwright().start()
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    _open_pages.append(browser)
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_navigation_timeout(90_000)  # a page load waits on the server's first build, slow under load
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page, errors
    finally:
        context.close()
        _open_pages.pop()
        if playwright is not None:
            browser.close()
            playwright.stop()


def page_text(page, shown: bool = False) -> str:
    """All text of the page, shadow DOM included (Panel renders its components in shadow roots);
    with `shown`, only the text of elements the page shows (not of hidden table columns)."""
    return page.evaluate("""(shown) => {
        const out = [];
        const walk = (node) => {
            if (node.nodeType === Node.TEXT_NODE && (!shown || node.parentElement?.checkVisibility()))
                out.push(node.textContent);
            if (node.shadowRoot) walk(node.shadowRoot);
            node.childNodes.forEach(walk);
        };
        walk(document.body);
        return out.join(" ");
    }""", shown)


def cut_cells(page) -> list[str]:
    """The cells of the page's tables whose text does not fit (field: text)."""
    return page.evaluate("""() => { const out = [];
      const walk = (root) => { root.querySelectorAll('*').forEach((el) => {
        if (el.shadowRoot) walk(el.shadowRoot);
        if (el.classList.contains('tabulator-cell') && el.getAttribute('tabulator-field') && el.offsetParent !== null
            && el.scrollWidth > el.clientWidth + 1)
          out.push(el.getAttribute('tabulator-field') + ': ' + el.textContent); }); };
      walk(document); return out; }""")
