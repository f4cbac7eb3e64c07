"""User-given text passed through xcviz._util.text renders, by Panel's own Markdown parser, as exactly
its characters: no tag but the paragraph, no entity left undone."""
import re
from html.parser import HTMLParser

import panel as pn
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz._util.text import html_text, markdown_text, printable

# Markdown and HTML syntax, entities, control characters, invisible ones (a right-to-left override,
# a zero-width space, a line separator), right-to-left letters and a few letters that spell no link
ALPHABET = list("<>&\"'`*_{}[]()#+-.!|~$:;\\/=^%@ \n\t\r\x00\x1b0123456789qQ\u202e\u200b\u2028\u05e9") + [
    "amp", "lt", "script", "img"]


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
    expected = " ".join(printable(re.sub(r"[\x00-\x1f\x7f]", " ", value)).split())
    assert parsed.tags <= {"p"}, parsed.tags
    assert " ".join("".join(parsed.text).split()) == expected


def test_hostile_names():
    for name in ("<img src=x onerror='window.__xss=1'>", "<script>alert(1)</script>", "[a](javascript:alert(1))",
                 "![x](x)", "**bold** _em_ `code`", "- item", "1. item", "# title", "a | b", "&lt;b&gt;"):
        parsed = _rendered(markdown_text(name))
        assert parsed.tags <= {"p"} and "".join(parsed.text).strip() == name, (name, parsed.tags, parsed.text)
    assert html_text("<a href=\"x\">'&") == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;"
    # an invisible character shows as its escape: "x\u202etxt.exe" must not read as "xexe.txt"
    assert "".join(_rendered(markdown_text("x\u202etxt.exe")).text).strip() == "x\\u202etxt.exe"
    assert html_text("a\u200bb\nc") == "a\\u200bb\nc" and printable("\u05e9\u202e\t") == "\u05e9\\u202e\\t"


def test_runs_without_label_records_are_named_as_text_in_the_per_label_tabs(tmp_path):
    """The Per label and Label inspector tabs name the shown runs when none has per-label records
    (LDGS, MEMOIR, DS-MLR): a hostile name must show as its characters there too (it once went
    into that note as raw Markdown and HTML, and ran a script)."""
    import numpy as np

    from xcviz.runs.spec import RunSpec
    from xcviz.runs.store import RunStore
    from xcviz.app.ui.label_views import LabelInspector
    from xcviz.app.ui.run_view import RunView

    store = RunStore(tmp_path / "home")
    spec = RunSpec(dataset="bibtex", solver="ldgs", params={}).validate().to_json()
    names = ['<img src=x onerror="alert(1)"> **bold**', "x\u202etxt.exe"]
    for name in names:
        run = store.create(spec, name)
        store.append_batch(run, "iteration", {"label": np.zeros(2, np.int64), "iteration": np.arange(2),
                                              "epoch": np.arange(2) / 2, "objective": np.array([2.0, 1.0])})
    rows = {r["id"]: r for r in store.list()}
    view = RunView(store)
    runs = view.update(rows, list(rows))
    inspector = LabelInspector()
    inspector.show(runs)
    for note in (view.positives.note.object, inspector.info.object):
        parsed = _rendered(note)
        assert parsed.tags <= {"p"}, (note, parsed.tags)
        text = "".join(parsed.text)
        assert names[0] in text and "x\\u202etxt.exe" in text and "\u202e" not in text, text


def test_a_run_named_after_a_file_with_invisible_characters_gets_their_escapes(tmp_path):
    """The page names a run after its data file; a run name may hold no invisible character, so a
    file "x<RLO>txt.exe_train.txt" gives the run "x\\u202etxt.exe-..." (it launches, and reads as it is)."""
    from xcviz.app.ui.launch import LaunchPanel

    specs = LaunchPanel({"bibtex": "bibtex"}).specs(str(tmp_path / "x\u202etxt.exe_train.txt"), None)
    assert specs and all(s.name.startswith("x\\u202etxt.exe-") and s.name.isprintable() for s in specs)


def test_a_long_run_name_is_shortened_in_the_plots_keeping_its_start_and_end(tmp_path):
    """Names may have 200 characters: whole in every legend, they ran across the figures beside
    theirs and made the page 3,500 px wide. The plots show 60, the start and the end (where the
    variant and the -2 that tell runs apart are)."""
    import numpy as np

    from xcviz.runs.spec import RunSpec
    from xcviz.runs.store import RunStore
    from xcviz.app.ui.run_view import RunView
    from xcviz._util.text import short_name

    store = RunStore(tmp_path / "home")
    spec = RunSpec(dataset="bibtex", solver="ldgs", params={}).validate().to_json()
    names = ["x" * 180 + "-decomp", "x" * 180 + "-decomp-2"]
    for name in names:
        run = store.create(spec, name)
        store.append_batch(run, "iteration", {"label": np.zeros(2, np.int64), "iteration": np.arange(2),
                                              "epoch": np.arange(2) / 2, "objective": np.array([2.0, 1.0])})
    rows = {r["id"]: r for r in store.list()}
    runs = RunView(store).update(rows, list(rows))
    shown = [r.name for r in runs.values()]
    assert sorted(shown) == sorted(short_name(n) for n in names) and all(len(s) == 60 for s in shown)
    assert {s[-9:] for s in shown} == {"xx-decomp", "-decomp-2"} and "\u2026" in shown[0]
    assert short_name("bibtex-decomp") == "bibtex-decomp"


def test_a_name_that_reads_as_a_domain_or_a_url_is_no_link():
    """Panel's parser links bare domains and schemes; hypothesis found "ש.lt" rendered as one."""
    for value in ("ש.lt", "evil.com", "www.x.lt", "http://localhost", "a@b.co", "mailto:a@b", "run.v1: C=0.5"):
        parsed = _rendered(markdown_text(value))
        assert parsed.tags <= {"p"} and "".join(parsed.text).strip() == value, (value, parsed.tags)
