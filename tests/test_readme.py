"""The README's Python examples run as written (in order, in one namespace)."""
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert "P@1" in out and "PSP@5" in out
    clf = namespace["clf"]  # the estimator example scores the model its new parameters trained
    assert clf.model_.params["init"] == "bias" and clf.model_.params["bias_weight"] == -2.0


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation other than - and _ dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_contents_link_every_section():
    """The contents line names every ## section, and each of the README's #links reaches a heading
    (a renamed section breaks its link here, not silently on GitHub)."""
    text = README.read_text()
    outside_code = re.sub(r"```.*?```", "", text, flags=re.S)
    anchors = {_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", outside_code, flags=re.M)}
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links and set(links) <= anchors, sorted(set(links) - anchors)
    contents = next(line for line in text.splitlines() if line.startswith("**Contents:**"))
    sections = {_anchor(h) for h in re.findall(r"^## (.+)$", outside_code, flags=re.M)}
    assert set(re.findall(r"\]\(#([^)]+)\)", contents)) == sections
