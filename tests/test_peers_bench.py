"""benchmarks/peers.py's targets table and its data sets: a target is met or missed by the measured
numbers (1.5x and 0.2 points are the edges), and debian-tags is skipped, with the path it was looked
for at, where the shared data is absent."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
peers = pytest.importorskip("peers")
shared = pytest.importorskip("shared")


def _rows(xcviz_s: float, dismecpp_s: float, xcviz_pk: list[float], dismecpp_pk: list[float]) -> dict:
    return {"xcviz msi": {"seconds": xcviz_s, "p@k": xcviz_pk}, "dismecpp msi": {"seconds": dismecpp_s, "p@k": dismecpp_pk}}


@pytest.mark.parametrize("dismecpp_s, met, near", [(1.5, True, True), (1.49, False, True), (1.8, True, False),
                                                   (1.2, False, False)])
def test_speed_target_is_met_from_1_5x(dismecpp_s, met, near):
    t = peers.targets(_rows(1.0, dismecpp_s, [60.0, 40.0, 30.0], [60.0, 40.0, 30.0]))
    assert t["speedup"] == pytest.approx(dismecpp_s)
    assert (t["speed_met"], t["speed_near"]) == (met, near)


def test_precision_target_takes_the_largest_gap_of_p_at_1_3_5():
    t = peers.targets(_rows(1.0, 2.0, [84.05, 61.10, 46.36], [84.25, 61.35, 46.30]))
    assert (t["gap"], t["gap_k"], t["pk_met"]) == (pytest.approx(0.25), 3, False)
    assert peers.targets(_rows(1.0, 2.0, [84.05, 61.10, 46.36], [84.25, 61.20, 46.30]))["pk_met"]


def test_targets_table_says_yes_and_no_and_skips_absent_data():
    results = {"bibtex": _rows(0.2, 0.37, [64.02, 38.74, 28.06], [64.06, 38.70, 28.01]),
               "debian-tags": {"skipped": "its data is not at /nowhere/data/debian-tags"}}
    table = "\n".join(peers.render_targets(results))
    assert "| bibtex | **1.85x** (0.200 s against 0.370 s) | yes | 0.05 (P@5 28.06 vs 28.01) | yes |" in table
    assert "| debian-tags | skipped: its data is not at /nowhere/data/debian-tags | | | |" in table


def test_debian_tags_is_absent_where_the_shared_folder_has_no_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("XCVIZ_SHARED", str(tmp_path))
    assert shared.debian_files() is None and shared.load_debian() is None
    assert peers.problem_files("debian-tags", tmp_path) is None
    folder = tmp_path / "data" / "debian-tags"
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        (folder / f"debian-tags_{split}.txt.gz").write_bytes(b"")
    assert shared.debian_files() == (folder / "debian-tags_train.txt.gz", folder / "debian-tags_test.txt.gz")
