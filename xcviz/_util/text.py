"""User-given text (run names, file names, spec values, error messages) made safe to put in a page.

Run names come from specs and data file names, errors quote paths: any of them may hold HTML. Panel's
Markdown and Alert panes render raw HTML and Markdown links, and HTML panes insert their text as it
is, so every such string goes through one of these before it reaches a pane: it then shows as the
characters it is made of, and never runs a script. Bokeh widgets (Select options, table cells,
tooltip values) escape their text themselves, but not invisible characters: what a widget shows of
a file name goes through `printable`.

Invisible formatting characters (a right-to-left override, a zero-width space) would make a name
read as another (a file named "x\u202etxt.exe" shows as "xexe.txt"): every function here shows
them as their escape, as `xcviz runs` does in a terminal.
"""
from __future__ import annotations

import html
import re

# Characters that start Markdown inline syntax (emphasis, code, links, images, tables, footnotes,
# task boxes, strikethrough, math) anywhere in a line; a backslash makes each a literal character.
# `&`, `<`, `>` and quotes are HTML-escaped instead (a backslash does not disable raw HTML). Dots
# and colons too: Panel's parser links bare domains and schemes ("evil.com", "http://x"), and an
# escaped one splits the text its linkify step reads (a run named "a.lt" rendered as a link).
_INLINE = re.compile(r"([\\`*_{}\[\]()#+!|~$.:])")
# What starts a block only at the start of a line (a list, a heading underline, a numbered list).
_BLOCK = re.compile(r"^([-=])|^(\d+)([.)])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def printable(value: object, keep: str = "") -> str:
    """`value` with every character that shows nothing or moves other text (control characters,
    invisible formatting such as bidirectional overrides, line separators) as its escape (\\u202e),
    but for those in `keep`."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def short_name(name: str, limit: int = 60) -> str:
    """A run name as the plots show it (legends, notes, the inspector's choices): a name longer than
    `limit` characters keeps its start and its end, where the variant and the -2, -3 that tell runs
    apart are, around an ellipsis. A 200-character name made every legend run across the figures
    beside it and the page 3,500 px wide; the runs table shows names whole."""
    if len(name) <= limit:
        return name
    head = (limit - 1) // 2
    return f"{name[:head]}\u2026{name[head + 1 - limit:]}"


def html_text(value: object) -> str:
    """`value` as HTML text: its characters shown as they are, quotes included (safe in attributes),
    invisible ones as their escapes (line breaks and tabs kept)."""
    return html.escape(printable(value, keep="\n\r\t"), quote=True)


def markdown_text(value: object) -> str:
    """`value` as Markdown text: no HTML, no link, no emphasis, list or heading. Control characters
    (newlines included, which could start a block) become spaces; spaces at either end are dropped
    (four at the start would make a code block)."""
    text = _INLINE.sub(r"\\\1", printable(_CONTROL.sub(" ", str(value))).strip())
    return html_text(_BLOCK.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", text))
