"""benchmarks/presets_bench.py: the difficulty targets' verdicts, and its section placed before the estimates
by `--only presets` (issue #39 item 1)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
run = pytest.importorskip("run")
presets_bench = pytest.importorskip("presets_bench")

OLD = """# Benchmarks

## Dask

dask

## Estimates before a run (`xcviz estimate`)

estimates

## Dashboard responsiveness

dashboard
"""


def _row(p1: float, published: float = 82.40) -> dict:
    return {"name": "eurlex-4k", "scale": 1.0, "n": 15_539, "labels": 3_993, "seconds": 161.0, "p1": p1,
            "published": published}


@pytest.mark.parametrize("p1, verdict, gap", [(80.91, "met", "-1.49"), (72.40, "met", "-10.00"),
                                              (72.39, "missed", "-10.01"), (92.41, "missed", "+10.01")])
def test_a_preset_meets_its_target_within_ten_points_either_way(p1, verdict, gap):
    line = presets_bench.check(_row(p1))
    assert f"**{verdict}**" in line and f"({gap};" in line and "eurlex-4k x1" in line


def test_every_published_preset_is_measured_at_a_scale_at_most_whole():
    from xcviz.data.presets import PRESETS
    assert set(presets_bench.SCALES) == set(PRESETS)
    assert all(0.0 < s <= 1.0 for s in presets_bench.SCALES.values())


def test_rerunning_presets_puts_its_section_before_the_estimates_then_replaces_it(tmp_path, monkeypatch):
    table = ["## Generated presets against published difficulty (issue #39 item 1)", "", "first table"]
    monkeypatch.setattr(presets_bench, "section", lambda: table)
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(OLD)
    run._replace_section(out, "presets")
    table[2] = "second table"
    run._replace_section(out, "presets")
    text = out.read_text()
    assert "first table" not in text and text.count("## Generated presets") == 1
    assert text.index("## Dask") < text.index("second table") < text.index("## Estimates before") < text.index("estimates")
