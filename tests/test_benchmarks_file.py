"""BENCHMARKS.md upkeep (benchmarks/run.py): a rerun section replaces only itself, and the sections and
notes measured by hand or by other scripts survive a rerun."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
run = pytest.importorskip("run")

OLD = """# Benchmarks

## Side by side with DiSMEC++ (built from source in this run)

old peers table

### Issue 16's targets (kept)

targets by hand

## Where the time goes (Newton engine, MSI, 1 thread)

profile

## LDGS: gradient estimators

ldgs

## Dask

old dask table

### Where a Dask run's time went (a profile by hand)

the profile's findings

## Dashboard responsiveness

dashboard
"""


def test_kept_takes_each_section_up_to_the_next_heading_of_its_level():
    kept = run._kept(OLD)
    assert kept == ("### Issue 16's targets (kept)\n\ntargets by hand\n\n"
                    "## Where the time goes (Newton engine, MSI, 1 thread)\n\nprofile\n\n")
    assert run._kept(OLD, (run.DASK_NOTES,)) == ("### Where a Dask run's time went (a profile by hand)\n\n"
                                                 "the profile's findings\n\n")
    assert run._kept("# nothing kept here\n") == ""


def test_rerunning_dask_replaces_its_table_and_keeps_the_notes(tmp_path, monkeypatch):
    dask_bench = pytest.importorskip("dask_bench")
    monkeypatch.setattr(dask_bench, "section", lambda repeats: ["## Dask", "", "new dask table", ""])
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(OLD)
    run._replace_section(out, "dask")
    text = out.read_text()
    assert "old dask table" not in text
    assert text.index("new dask table") < text.index("the profile's findings") < text.index("## Dashboard")
    assert text.count("## Dask\n") == 1
    assert text.startswith(OLD[:OLD.index("## Dask")])
