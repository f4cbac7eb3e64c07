"""User-given text passed through xcviz.ui.text renders, by Panel's own Markdown parser, as exactly
its characters: no tag but the paragraph, no entity left undone."""
from html.parser import HTMLParser

import panel as pn
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz.ui.text import html_text, markdown_text

# Markdown and HTML syntax, entities, control characters and a few letters that spell no link
ALPHABET = list("<>&\"'`*_{}[]()#+-.!|~$:;\\/=^%@ \n\t\r\x00\x1b0123456789qQ") + ["amp", "lt", "script", "img"]


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.add(tag)

    def handle_data(self, data) -> None:
        self.text.append(data)


def _rendered(markdown: str) -> _Text:
    parsed = _Text()
    parsed.feed(pn.pane.Markdown._get_parser("markdown-it", ()).render(markdown))
    return parsed


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join))
def test_markdown_text_renders_as_the_characters_it_is_made_of(value):
    parsed = _rendered(markdown_text(value))
    expected = " ".join(value.replace("\x00", " ").replace("\x1b", " ").split())
    assert parsed.tags <= {"p"}, parsed.tags
    assert " ".join("".join(parsed.text).split()) == expected


def test_hostile_names():
    for name in ("<img src=x onerror='window.__xss=1'>", "<script>alert(1)</script>", "[a](javascript:alert(1))",
                 "![x](x)", "**bold** _em_ `code`", "- item", "1. item", "# title", "a | b", "&lt;b&gt;"):
        parsed = _rendered(markdown_text(name))
        assert parsed.tags <= {"p"} and "".join(parsed.text).strip() == name, (name, parsed.tags, parsed.text)
    assert html_text("<a href=\"x\">'&") == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;"
