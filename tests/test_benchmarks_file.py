"""BENCHMARKS.md upkeep (benchmarks/run.py): a rerun section replaces only itself, and the sections and
notes measured by hand or by other scripts survive a rerun."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
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


def _scaling_result(axis: str, x: int, newton: float, ppd: float) -> dict:
    """A measurement of benchmarks/ppdsparse_scaling.py's form at `axis` = x, per-label seconds given."""
    solver = {"setup_seconds": 0.1, "seconds": 1.0, "nnz": 10, "p@k": [70.0, 30.0, 20.0]}
    return {"n": 20_000, "labels": 300, "positives": 5.0, "speed_up": newton / ppd,
            "Newton, msi": {**solver, "seconds_per_label": newton, "per_label_runs": [newton] * 3},
            "PPDSparse": {**solver, "seconds_per_label": ppd, "per_label_runs": [ppd] * 3}, axis: x}


def test_scaling_slopes_recover_the_exponents_of_exact_power_laws():
    """Per-label time c * x^b on three points gives slope b for each solver, in N and in K."""
    scaling = pytest.importorskip("ppdsparse_scaling")
    in_n = [_scaling_result("n", n, 2e-6 * n ** 1.0, 3e-3 * n ** 0.25) for n in (1_000, 10_000, 100_000)]
    assert scaling.slopes(in_n) == pytest.approx({"Newton, msi": 1.0, "PPDSparse": 0.25})
    in_k = [_scaling_result("K", k, 0.04, 0.5 * k ** -0.5) for k in (2_700, 8_500, 27_000)]
    assert scaling.slopes(in_k, "K") == pytest.approx({"Newton, msi": 0.0, "PPDSparse": -0.5}, abs=1e-12)


def test_the_k_section_shows_k_the_median_runs_and_the_slope_in_k():
    scaling = pytest.importorskip("ppdsparse_scaling")
    lines = scaling.render([_scaling_result("K", k, 0.04, 0.5 * k ** -0.5) for k in (2_700, 27_000)], "1.0", "2.0", "K")
    text = "\n".join(lines)
    assert lines[0].startswith("## PPDSparse against Newton as K grows") and "medians of 3 alternated runs" in text
    assert "| 2,700 | 5.00 | 40.0 | 9.6 | 4.16x |" in text  # 0.5 / sqrt(2700) s = 9.6 ms; 40 / 9.62 = 4.16
    assert "against log(K): Newton, msi 0.00, PPDSparse -0.50; so the speed-up grows as K^0.50 " in text


def test_the_k_section_goes_after_the_n_section_and_replaces_itself(tmp_path, monkeypatch):
    n_section = ["## PPDSparse against Newton as N grows (x)", "", "n table", ""]
    old = OLD.replace("## LDGS", "\n".join(n_section) + "\n## LDGS")
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(old)
    tables = iter(["first k table", "second k table"])
    monkeypatch.setattr(run, "scaling_section", lambda values, axis="n": (
        ["## PPDSparse against Newton as K grows (x)", "", next(tables), ""], []))
    saved = []
    monkeypatch.setattr(run, "save_scaling", lambda results, axis: saved.append(axis))
    run._replace_section(out, "ppdsparse-scaling-k")
    run._replace_section(out, "ppdsparse-scaling-k")
    text = out.read_text()
    assert "first k table" not in text and text.count("as K grows") == 1
    assert text.index("n table") < text.index("second k table") < text.index("## LDGS")
    assert saved == ["K", "K"]  # each rerun's measurements saved for docs/scaling_figure.py


def test_the_estimate_section_reads_each_cases_errors_and_the_target():
    estimate_bench = pytest.importorskip("estimate_bench")
    predicted = {"train_seconds": 12.0, "model_nnz": 110, "record_count": 50, "sample_seconds": 1.0}
    rows = [{"case": "a, dismec", "labels": 10, "predicted": predicted, "seconds": 10.0, "nnz": 100, "records": 50},
            {"case": "b, dismec", "labels": 10, "predicted": {**predicted, "train_seconds": 14.0}, "seconds": 10.0,
             "nnz": 110, "records": 40}]
    amazon = {"rows": 490449, "labels": 670091, "generate_seconds": 66.0, "train_seconds": 7200.0,
              "workers_seconds": {32: 600.0}, "peak_rss_mb": 2048.0, "model_nnz": 5, "record_count": 7,
              "sampled_labels": 200, "sample_seconds": 60.0}
    lines = estimate_bench.section(rows, amazon)
    table = [line for line in lines if line.startswith("| a,") or line.startswith("| b,")]
    assert "| +20% |" in table[0] and "(+10.0%)" in table[0] and "(+0.0%)" in table[0] and table[0].endswith("met |")
    assert "| +40% |" in table[1] and "(+25.0%)" in table[1] and table[1].endswith("missed |")
    assert "Seconds within 25%: **1 of 2** cases." in lines
    assert "**2.0 h on 2 threads**, 10 min on 32 Dask workers, peak 2.0 GB" in lines[-1]


def test_the_n_targets_read_the_largest_n_and_the_slopes():
    """Issue #38's targets at the largest N: the speed-up of that size, Newton's slope minus PPDSparse's,
    and P@k's shortfall; met or not against their bounds."""
    scaling = pytest.importorskip("ppdsparse_scaling")
    fast = [_scaling_result("n", n, 2e-6 * n, 3e-3 * n ** 0.25) for n in (50_000, 150_000, 490_000)]
    fast[-1]["PPDSparse"]["p@k"] = [65.0, 29.9, 20.0]  # 5 points behind at P@1
    text = "\n".join(scaling.targets(fast))
    assert f"| N = 490,000: per-label speed-up of PPDSparse over Newton MSI | {fast[-1]['speed_up']:.2f}x | >= 3.0x | yes |" in text
    assert "| Newton MSI's slope in N minus PPDSparse's | 0.75 | >= 0.2 | yes | slopes 1.00 and 0.25 |" in text
    assert "shortfall of PPDSparse against Newton MSI (points) | 5.00 | <= 0.5 | **no** |" in text
    flat = [_scaling_result("n", n, 1e-2, 5e-3) for n in (50_000, 490_000)]  # 2x, slopes equal
    text = "\n".join(scaling.targets(flat))
    assert "| 2.00x | >= 3.0x | **no** |" in text and "| 0.00 | >= 0.2 | **no** |" in text


def test_the_debian_targets_read_the_default_rows_or_say_why_they_are_missing():
    bench = pytest.importorskip("ppdsparse_bench")
    from xcviz.solvers.ppdsparse import PPDSparseParams

    default = PPDSparseParams()
    assert bench.SETTINGS[bench.DEFAULT] == {"loss": default.loss, "lam": default.lam}

    def row(seconds, pk, nnz):
        return {"seconds": seconds, "p@k": pk, "nnz": nnz}

    rows = {"Newton, msi": {**row(10.0, [84.0, 61.0, 46.0], 1_500), "unpruned_nnz": 9_000},
            "Newton, zero": row(30.0, [84.0, 61.0, 46.0], 1_500),
            "PPDSparse, squared hinge, lam 0.1": row(5.0, [84.2, 60.4, 46.1], 600),
            "PPDSparse, hinge, lam 0.1": row(4.0, [85.0, 61.0, 46.0], 500)}
    text = "\n".join(bench.targets(rows))
    assert "| debian-tags: PPDSparse (default) vs Newton from zero, train seconds | 6.00x | >= 4.0x | yes | hinge, lam 0.1: 7.50x |" in text
    assert "| debian-tags: PPDSparse (default) vs Newton MSI, train seconds | 2.00x | >= 1.5x | yes |" in text
    assert "against Newton MSI (points) | 0.60 | <= 0.5 | **no** | P@1/3/5 differences +0.20 / -0.60 / +0.10 |" in text
    assert "model nnz / Newton MSI's | 0.40 | <= 0.67 | yes | 600 against 1,500 (unpruned 9,000) |" in text
    missing = bench.targets(None)
    assert sum("| not measured |" in line and "debian-tags not found" in line for line in missing) == 4


def _records_result(first: float, change: float) -> dict:
    """A measurement of benchmarks/records_scale.py's form."""
    times = {name: [change] * 4 for name in ("x-axis iteration/wall time", "smoothing raw/EMA", "log y on/off",
                                             "selection 1/2 runs")}
    return {"records": 10_000_123, "write_s": 90.0, "store_bytes": 1.2e9, "load_before": (1.0, 1.0, 1.0),
            "load_after": (2.0, 2.0, 2.0), "browser": {"first_draw_ms": first, "times": times},
            "open_200_ms": [900.0, 1100.0, 1000.0], "recording": {"off": 1.0, "store": 1.03}}


def test_the_records_targets_read_each_measurement_against_its_bound():
    records_scale = pytest.importorskip("records_scale")
    text = "\n".join(records_scale.section(_records_result(1500.0, 250.0)))
    assert "| first drawing, finished 10M + live run (ms) | 1500.00 | <= 2000.0 | yes |" in text
    assert "| smoothing raw/EMA, median in the browser (ms) | 250.00 | <= 200.0 | **no** |" in text
    assert "| store on disk with the 10M-record run (GB) | 1.20 | <= 1.5 | yes |" in text
    assert "| recording overhead, store sink vs none (%) | 3.00 | <= 5.0 | yes |" in text
    assert "| page open with 200 runs in the store (ms) | 1000.00 | <= 2000.0 | yes |" in text
    assert "10,000,123 iteration records" in text


def test_a_lost_change_loses_the_rest_of_its_round_and_the_page_is_brought_back(monkeypatch):
    """A change whose effect never shows counts as lost, and so does the rest of its round (the
    page may not stand where the next change starts: an unticking the server undid leaves the box
    ticked, and the ticking after it would time nothing); the round's last change, untimed, brings
    the page back before the next round."""
    records_scale = pytest.importorskip("records_scale")
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    calls = []
    outcomes = iter(["ok", "ok", "lost", "ok"])  # untick, tick | untick lost, the tick that brings it back

    def change(name):
        def done():
            calls.append(name)
            if next(outcomes) == "lost":
                raise PlaywrightTimeout("never shown")
        return (lambda: None), done

    monkeypatch.setattr(records_scale, "PAINT", "() => 0")

    class Page:
        def evaluate(self, _script):
            return 0

    times = records_scale._flips(Page(), [change("untick"), change("tick")], 2)
    assert calls == ["untick", "tick", "untick", "tick"]
    assert np.isfinite(times[:2]).all() and np.isnan(times[2:]).all() and len(times) == 4


def test_rerunning_the_records_section_puts_it_before_the_dashboards(tmp_path, monkeypatch):
    records_scale = pytest.importorskip("records_scale")
    monkeypatch.setattr(records_scale, "measure", lambda: _records_result(1500.0, 150.0))
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(OLD)
    run._replace_section(out, "records")
    run._replace_section(out, "records")
    text = out.read_text()
    assert text.count("## Records at scale") == 1
    assert text.index("## Dask\n") < text.index("## Records at scale") < text.index("## Dashboard responsiveness")



def test_rerunning_the_estimate_section_keeps_the_records_section_after_it(tmp_path, monkeypatch):
    estimate_bench = pytest.importorskip("estimate_bench")
    monkeypatch.setattr(estimate_bench, "run", lambda: ["## Estimates before a run (`xcviz estimate`)", "", "new", ""])
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(OLD.replace("## Dashboard responsiveness", "## Estimates before a run (`xcviz estimate`)\n\nold\n\n"
                               "## Records at scale\n\nrecords\n\n## Dashboard responsiveness"))
    run._replace_section(out, "estimate")
    text = out.read_text()
    assert "new" in text and "\nold\n" not in text and "\nrecords\n" in text
    assert text.index("## Estimates") < text.index("## Records at scale") < text.index("## Dashboard responsiveness")

def _predicted(accuracy: float, us: float, exact_us: float = 200.0) -> dict:
    return {"accuracy": accuracy, "accuracy_exact": 70.0, "agreement": 0.9, "us_per_row": us,
            "us_per_row_exact": exact_us, "index_seconds": 0.3}


def test_the_prediction_section_reads_each_oracle_against_the_exact_kernel():
    memoir_predict = pytest.importorskip("memoir_predict")
    results = {"classes": 2000, "n_train": 8881, "n_test": 500, "train_seconds": 20.0, "load": "1.0 / 1.0 / 1.0 before, 1.0 after",
               "oracles": {"exact": _predicted(70.0, 600.0), "hnsw": _predicted(69.5, 100.0),
                           "simplelsh": _predicted(60.0, 50.0), "spherical": _predicted(70.0, 400.0)}}
    lines = memoir_predict.render(results)
    assert "| hnsw | 69.50 | 70.00 | 0.900 | 100 | 200 | 2.00x | 0.30 |" in lines
    assert lines[-2] == ("A search at least as fast as the exact kernel with accuracy within 1 point: "
                         "hnsw (2.00x, -0.50 points)")  # simplelsh is faster but 10 points off; spherical slower
    results["oracles"]["hnsw"] = _predicted(69.5, 300.0)
    assert memoir_predict.render(results)[-2].endswith("none (not reproduced at this C)")


def test_rerunning_the_prediction_section_puts_it_in_memoirs_before_its_targets(tmp_path, monkeypatch):
    memoir_predict = pytest.importorskip("memoir_predict")
    fake = {"classes": 2000, "n_train": 1, "n_test": 1, "train_seconds": 1.0, "load": "x", "oracles": {"exact": _predicted(70, 1.0)}}
    monkeypatch.setattr(run, "bench_predict", lambda classes: {**fake, "classes": classes})
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(OLD.replace("## Dask\n", "## MEMOIR: margin oracles\n\nm\n\n### Targets\n\nt\n\n## Dask\n"))
    run._replace_section(out, "memoir-predict")
    run._replace_section(out, "memoir-predict")
    text = out.read_text()
    small, large = memoir_predict.heading(2000), memoir_predict.heading(20000)
    assert text.count(small) == 1 and text.count(large) == 1
    assert text.index("## MEMOIR") < text.index(small) < text.index(large) < text.index("### Targets\n\nt")


def test_a_memoir_subsection_last_in_its_section_keeps_the_next_sections_heading():
    old = "## MEMOIR\n\nm\n\n### Targets\n\nt\n\n### parts\n\nold parts\n\n## DS-MLR\n\nd\n\n### bibtex\n\nb\n"
    text = run._memoir_subsection(old, ["### parts", "", "new parts", ""])
    assert text == "## MEMOIR\n\nm\n\n### Targets\n\nt\n\n### parts\n\nnew parts\n\n## DS-MLR\n\nd\n\n### bibtex\n\nb\n"


def _parts(seconds: float, accuracy: float, recall: float) -> dict:
    return {"seconds": seconds, "accuracy": accuracy, "recall_at_10": recall, "step_seconds": 1.0,
            "update_seconds": 0.0, "query_seconds": seconds - 2.0, "oracle_index_seconds": 0.5,
            "oracle_sketch_seconds": 0.2, "oracle_candidates_seconds": 0.3, "oracle_rerank_seconds": 0.2}


def test_the_margin_epoch_split_checks_each_oracle_against_issue_41s_four_targets():
    memoir = pytest.importorskip("memoir")
    results = {"exact": _parts(60.0, 87.0, 1.0), "random": _parts(3.0, 62.5, 0.0),
               "hnsw-light": _parts(11.0, 86.2, 0.54), "hnsw": _parts(20.0, 86.6, 0.58),
               "simplelsh-banded": _parts(6.0, 80.0, 0.1)}
    lines = memoir.render_parts(results, "lshtc1-margin C=20k", "1 / 1 / 1")
    assert lines[0] == "### lshtc1-margin C=20k: where an epoch goes"
    target = lines[-2]
    assert target.startswith("Exact leads random by 24.50 points (target >= 3: met).")
    assert "hnsw-light 5.5x, recall@10 0.54, -0.80 vs exact, +23.70 vs random: all met" in target
    assert "hnsw 3.0x, recall@10 0.58, -0.40 vs exact, +24.10 vs random: missed 5x" in target
    assert "simplelsh-banded 10.0x, recall@10 0.10, -7.00 vs exact, +17.50 vs random: missed recall@10 0.5, " \
           "within 1 of exact" in target


def test_the_margin_data_table_says_where_exact_leads_random():
    margin_data = pytest.importorskip("margin_data")
    shape = {"rows": 1000, "classes": 100, "features": 5000, "nnz_per_row": 70.4}
    run_ = {"accuracy": 50.0, "seconds": 2.0, "recall_at_10": 0.9}
    results = {"load": "x", "bibtex-multiclass": {"shape": shape, "exact": {**run_, "accuracy": 19.1},
                                                   "random": {**run_, "accuracy": 22.0}, "hnsw-light": run_},
               "lshtc1-margin C=2,000": {"shape": shape, "exact": {**run_, "accuracy": 71.8},
                                         "random": {**run_, "accuracy": 66.6}, "hnsw-light": run_}}
    lines = margin_data.render(results)
    assert "| bibtex-multiclass | 1,000 | 100 | 5,000 | 70 | 19.10 | 22.00 | -2.90 | 50.00 | 0.900 | 2.0 | 2.0 |" in lines
    assert lines[-2].startswith("The exact margin leads the random one by 3 points or more on: lshtc1-margin C=2,000;")


LDGS_OLD = OLD.replace("## LDGS: gradient estimators\n\nldgs\n", """## LDGS: gradient estimators

ldgs

### bibtex (n_train 4,880, K 159, 3 epochs)

bibtex table

### Many rows: synthetic K=50k with n_train 50,400 (K 50,000, 1 epoch)

many rows table

### Targets

- many rows (50,400 training rows): many rows target
- synthetic K=50k: synthetic target
- bibtex: bibtex target

## MEMOIR: margin oracles

memoir

### Targets

- lshtc1-margin C=20,000: MEMOIR's own target, not LDGS's
""")


def _margin_result(right: dict[str, list[bool]], epoch_seconds: dict[str, float]) -> dict:
    """A result of ldgs_bench.bench_margin's form: each estimator's test rows right or not."""
    rows = {g: {"epoch_seconds": epoch_seconds[g], "train_seconds": 10.0, "wall": 20.0,
                "accuracy": 100 * float(np.mean(r)), "right": np.array(r)} for g, r in right.items()}
    return {"rows": rows, "n_train": 88_806, "n_test": len(right["exact"]), "K": 20_000, "D": 347_255,
            "epochs": 1, "load": ((1.0, 1.0, 1.0), (2.0, 2.0, 2.0))}


def test_the_ldgs_margin_targets_read_the_paired_differences():
    ldgs_bench = pytest.importorskip("ldgs_bench")
    # 100 rows: exact right on 60, mips on 50 (a subset of exact's), decomp on 55 (a subset of exact's)
    right = {"exact": [True] * 60 + [False] * 40, "mips": [True] * 50 + [False] * 50,
             "decomp": [True] * 55 + [False] * 45}
    lines, checks = ldgs_bench.render_margin(_margin_result(right, {"exact": 30.0, "mips": 1.0, "decomp": 2.0}))
    assert lines[0] == ldgs_bench.MARGIN_HEADING
    d = np.array([1.0] * 5 + [0.0] * 95)
    se2 = 200 * d.std(ddof=1) / 10
    assert f"| decomp - mips | +5.00 | {se2:.2f} | beyond the noise |" in lines
    assert "| decomp - exact | -5.00 |" in "\n".join(lines)
    assert checks[0].startswith(ldgs_bench.MARGIN_CHECK) and checks[1].startswith(ldgs_bench.MARGIN_CHECK)
    assert "mips 10.00 points below exact" in checks[0] and checks[0].endswith("(target >= 2 when mips falls short): met.")
    assert checks[1].endswith("target: at most 1 under): missed; 15.0x faster per epoch (one run each; target >= 10x): met.")
    # mips level with exact: the 2-point target does not apply; decomp 1 point behind exact and 5x faster
    right = {"exact": [True] * 50 + [False] * 50, "mips": [True] * 50 + [False] * 50,
             "decomp": [True] * 49 + [False] * 51}
    _, checks = ldgs_bench.render_margin(_margin_result(right, {"exact": 10.0, "mips": 1.0, "decomp": 2.0}))
    assert "not applicable (mips does not fall short by 1 point)" in checks[0]
    assert checks[1].endswith("at most 1 under): met; 5.0x faster per epoch (one run each; target >= 10x): missed.")


def test_rerunning_ldgs_margin_replaces_its_subsection_and_target_lines_in_place(tmp_path, monkeypatch):
    ldgs_bench = pytest.importorskip("ldgs_bench")
    first = {"exact": [True] * 60 + [False] * 40, "mips": [True] * 50 + [False] * 50,
             "decomp": [True] * 55 + [False] * 45}
    second = {"exact": [True] * 70 + [False] * 30, "mips": [True] * 40 + [False] * 60,
              "decomp": [True] * 65 + [False] * 35}
    speeds = {"exact": 30.0, "mips": 1.0, "decomp": 2.0}
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(LDGS_OLD)
    for right in (first, second):
        monkeypatch.setattr(run, "bench_margin", lambda r=right: _margin_result(r, speeds))
        run._replace_section(out, "ldgs-margin")
    text = out.read_text()
    heading = ldgs_bench.MARGIN_HEADING
    assert text.count(heading) == 1 and text.count(ldgs_bench.MARGIN_CHECK) == 3  # 2 in LDGS's list, MEMOIR's
    assert "| exact | 30.00 | 70.00 |" in text and "| exact | 30.00 | 60.00 |" not in text
    assert "mips 30.00 points below exact" in text and "mips 10.00 points below exact" not in text
    # in place: after the many-rows subsection, before the Targets; its lines first in the list, the others kept
    assert text.index("many rows table") < text.index(heading) < text.index("### Targets")
    listed = text[text.index("### Targets"):text.index("## MEMOIR")]
    assert listed.startswith(f"### Targets\n\n{ldgs_bench.MARGIN_CHECK}")
    for kept in ("- many rows (50,400 training rows): many rows target\n", "- synthetic K=50k: synthetic target\n",
                 "- bibtex: bibtex target\n\n"):
        assert listed.count(kept) == 1
    assert text.startswith(LDGS_OLD[:LDGS_OLD.index("### Targets")])
    assert text.endswith(LDGS_OLD[LDGS_OLD.index("\n## MEMOIR"):])
    assert "\n\n\n" not in text


def test_rerunning_ldgs_rows_keeps_the_margin_subsection_after_it(tmp_path, monkeypatch):
    ldgs_bench = pytest.importorskip("ldgs_bench")
    right = {"exact": [True] * 60 + [False] * 40, "mips": [True] * 50 + [False] * 50,
             "decomp": [True] * 55 + [False] * 45}
    monkeypatch.setattr(run, "bench_margin", lambda: _margin_result(right, {"exact": 30.0, "mips": 1.0, "decomp": 2.0}))
    monkeypatch.setattr(run, "bench_many_rows", lambda: None)
    monkeypatch.setattr(run, "render_many_rows", lambda res: (["### Many rows: new", "", "new many rows table", ""],
                                                              "- many rows (1 training rows): new target"))
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(LDGS_OLD)
    run._replace_section(out, "ldgs-margin")
    run._replace_section(out, "ldgs-rows")
    text = out.read_text()
    assert "many rows table" in text and "\nmany rows table" not in text  # the old table replaced, once
    assert text.index("new many rows table") < text.index(ldgs_bench.MARGIN_HEADING) < text.index("### Targets")
    assert text.count(ldgs_bench.MARGIN_CHECK) == 3 and "many rows target" not in text
    assert text.count("- many rows (1 training rows): new target\n") == 1


def test_the_page_server_bench_measures_a_refresh_and_every_control(tmp_path):
    """benchmarks/page_server_cpu.py over a small store: a positive CPU median for a refresh and for
    each control, and the live run it added is gone from the store after."""
    bench = pytest.importorskip("page_server_cpu")
    from xcviz.runs.store import RunStore

    store = RunStore(tmp_path / "home")
    bench.records_scale.fill_big(store, 20_000)
    result = bench.measure(store, refreshes=2, repeats=1)
    assert set(result) == {"refresh", "x-axis", "smoothing", "log", "selection"}
    assert all(ms > 0 for ms in result.values()), result
    assert [r["name"] for r in store.list()] == ["finished-10M"]
