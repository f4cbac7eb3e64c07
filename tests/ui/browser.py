"""Headless Debian chromium through Playwright, as the project's browser tests use it."""
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@contextmanager
def browser_page(width: int = 1100, height: int = 900):
    """A fresh page; yields (page, console_errors) where console_errors collects error messages."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            yield page, errors
        finally:
            browser.close()


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
