"""User-given text (run names, file names, spec values, error messages) made safe to put in a page.

Run names come from specs and data file names, errors quote paths: any of them may hold HTML. Panel's
Markdown and Alert panes render raw HTML and Markdown links, and HTML panes insert their text as it
is, so every such string goes through one of these before it reaches a pane: it then shows as the
characters it is made of, and never runs a script. Bokeh widgets (Select options, table cells,
tooltip values) escape their text themselves.
"""
from __future__ import annotations

import html
import re

# ASCII punctuation that Markdown (CommonMark, with Panel's math and table extensions) gives a meaning
# to; a backslash before any of it makes it a literal character. `&`, `<`, `>` and quotes are handled
# by HTML escaping instead: a backslash does not disable an entity or raw HTML in every renderer.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~$:])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def html_text(value: object) -> str:
    """`value` as HTML text: its characters shown as they are, quotes included (safe in attributes)."""
    return html.escape(str(value), quote=True)


def markdown_text(value: object) -> str:
    """`value` as Markdown text: no HTML, no link, no emphasis or heading; control characters
    (newlines included, which could start a Markdown block) become spaces."""
    return html_text(_MARKDOWN.sub(r"\\\1", _CONTROL.sub(" ", str(value))))
