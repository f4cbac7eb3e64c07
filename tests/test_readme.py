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
