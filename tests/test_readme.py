"""The README's Python examples run as written (in order, in one namespace), and its links reach
the files and headings they name."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _outside_code(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def test_readme_python_examples_run(capsys):
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    out = capsys.readouterr().out
    scores = dict(re.findall(r"(P@1|P@5|PSP@5) (\d+\.\d\d)", out))
    assert set(scores) == {"P@1", "P@5", "PSP@5"}
    assert 55 < float(scores["P@1"]) < 70 and 0 < float(scores["PSP@5"]) < float(scores["P@1"])
    clf = namespace["clf"]  # the estimator example scores the model its new parameters trained
    assert clf.model_.params["init"] == "bias" and clf.model_.params["bias_weight"] == -2.0


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a markdown file's headings: lower case, punctuation other than - and _
    dropped, spaces as - (the docs site's heading anchors follow the same rule)."""
    headings = re.findall(r"^#{1,6} (.+)$", _outside_code(path.read_text()), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_readme_links_resolve():
    """Every relative link of the README names a file of the repository and, after a #, one of
    that file's headings (a renamed section or a moved page breaks its link here, not silently)."""
    links = re.findall(r"\]\(([^)\s]+)\)", _outside_code(README.read_text()))
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert any(link.startswith("docs/") for link in local) and any(link.startswith("#") for link in local)
    broken = []
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        if not target.is_file() or (anchor and anchor not in anchors(target)):
            broken.append(link)
    assert not broken


def test_readme_contents_link_every_section():
    text = README.read_text()
    contents = next(line for line in text.splitlines() if line.startswith("**Contents:**"))
    sections = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                for h in re.findall(r"^## (.+)$", _outside_code(text), flags=re.M)}
    assert set(re.findall(r"\]\(#([^)]+)\)", contents)) == sections
