"""The docs site builds without a warning, its record schema page holds every field the code
declares, and the Python examples of its pages run."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if not {"_build", "_generated"} & set(p.relative_to(DOCS).parts))
PYTHON_ALIASES = {"py", "python3", "pycon", "ipython", "ipython3", "{code-cell}"}


def fences(path: Path) -> list[tuple[str, str]]:
    """(info string, body) of every fenced block of a markdown file."""
    return re.findall(r"^```([^\n]*)\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def python_blocks(path: Path) -> list[str]:
    return [body for info, body in fences(path) if info.strip() == "python"]


def test_python_is_fenced_as_python():
    """Python that a test would not run cannot hide under another fence name; what is deliberately
    not runnable is fenced as text, bash or console."""
    hidden = [(str(p.relative_to(ROOT)), info) for p in [ROOT / "README.md", *PAGES]
              for info, _ in fences(p) if info.strip().split(" ")[0] in PYTHON_ALIASES]
    assert not hidden


PAGES_WITH_CODE = [p for p in PAGES if python_blocks(p)]


def test_the_examples_are_found():
    assert {"quickstart.md", "ldgs.md"} <= {p.name for p in PAGES_WITH_CODE}


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(DOCS)))
def test_page_python_examples_run(page):
    namespace: dict = {}  # one namespace per page, its blocks in order
    for block in python_blocks(page):
        exec(compile(block, str(page), "exec"), namespace)


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XCVIZ_DOCS_EXECUTE"}  # notebooks rendered, not run
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
                            "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
                           capture_output=True, text=True, env=env, timeout=900)
    assert build.returncode == 0, build.stderr[-5000:]
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from record_schema import family_fields
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    from xcviz.app.ui.fields import FIELDS
    records = (tmp_path / "html" / "records.html").read_text()
    declared = {f for *_, fields in family_fields() for f in fields} | set(FIELDS)
    assert declared and not {f for f in declared if f"<span class=\"pre\">{f}</span>" not in records}
    for page in ("quickstart", "families/ldgs", "notebooks/01-quickstart", "benchmarks"):
        assert (tmp_path / "html" / f"{page}.html").is_file()
