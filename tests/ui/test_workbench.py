"""The researcher's workbench in a real browser (issue 40, item 2): runs of two solvers ticked
together share the figures both record; "Compare with..." launches a ticked run's counterpart under
another solver and ticks both; a sweep of C launched from the launch panel draws its final metrics
against C; runs that differ only by seed drawn as one curve with a band across seeds.

One server over a store of four finished runs on a small synthetic problem: a DiSMEC (Newton)
run and three PPDSparse runs at seeds 0, 1 and 2."""
import json

import numpy as np
import pytest

from tests.ui.browser import ARTIFACTS, browser_page, page_text
from tests.ui.conftest import served
from tests.ui.test_page import _check, _generate, _open, _row, _shows, _tick, _until, _untick_opening
from xcviz.runs.aggregate import RunAggregate
from xcviz.runs.launcher import launch, wait
from xcviz.runs.seed_groups import across_seeds
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore

pytestmark = pytest.mark.browser

NEWTON, SEEDS = "small-msi", [f"small-ppdsparse seed={s}" for s in range(3)]
GAP = "(f - f_final) / |f_final|"  # the objective gap's figure


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("workbench")
    data = root / "data"
    data.mkdir()
    _generate(data / "small", 30, 2)
    store = RunStore(root / "home")
    files = {"dataset": str(data / "small_train.txt"), "test": str(data / "small_test.txt"), "threads": 1}
    specs = [RunSpec(**files, solver="dismec", params={"C": 2.0}, name=NEWTON),
             *(RunSpec(**files, solver="ppdsparse", params={"C": 2.0, "seed": s}, name=SEEDS[s]) for s in range(3))]
    ids = [launch(spec.validate(), store) for spec in specs]
    for run in ids:
        row = wait(store, run, timeout=600)
        assert row["status"] == "done", (row["name"], row["error"])
    return root, data, store


@pytest.fixture(scope="module")
def page_server(runs, tmp_path_factory):
    root, data, _ = runs
    with served(root / "home", tmp_path_factory.mktemp("log") / "server.log", [data]) as url:
        yield url


@pytest.fixture
def page(page_server):
    with browser_page(1440, 900) as (page, errors):
        _open(page, page_server)
        _untick_opening(page)
        yield page
        assert errors == []


def _by_title(figs: list[dict]) -> dict[str, dict]:
    return {f["title"].split(":")[0]: f for f in figs}


def test_ticked_runs_of_two_solvers_share_the_figures_both_record(page):
    """A Newton run and a PPDSparse run ticked: the figures of the fields both record (objective
    gap, seconds per iteration, nnz(w)...) draw both, in two colours; each other figure draws the one
    run that records its field; the runs table lists both runs' P@k side by side."""
    _tick(page, NEWTON)
    _tick(page, SEEDS[0])
    figs = _by_title(_shows(page, {NEWTON, SEEDS[0]}))
    both = {title for title, f in figs.items() if set(f["labels"]) == {NEWTON, SEEDS[0]}}
    assert {GAP, "seconds per iteration", "nnz(w)"} <= both, sorted(both)
    assert all(len(figs[t]["colors"]) == 2 for t in both)
    assert {title for title, f in figs.items() if set(f["labels"]) == {NEWTON}}  # Newton's own (CG steps...)
    page.screenshot(path=str(ARTIFACTS / "workbench-two-solvers.png"))


def test_compare_with_launches_the_counterpart_and_shows_both(page, runs):
    """Tick the Newton run, choose PPDSparse with the hinge loss, click Compare with: one run is
    launched on the same files with the shared C (2.0) and PPDSparse's own eps (its default: the
    Newton run's eps means another thing); both runs are ticked and drawn together."""
    _, data, store = runs
    _tick(page, NEWTON)
    page.locator("select").filter(has_text="ppdsparse · loss=hinge").select_option(label="ppdsparse · loss=hinge")
    page.get_by_role("button", name="Compare with", exact=True).click()
    new = "small-ppdsparse-hinge"
    _row(page, new).wait_for(timeout=30000)
    row = next(r for r in store.list() if r["name"] == new)
    spec = json.loads(row["spec"])
    newton = json.loads(next(r for r in store.list() if r["name"] == NEWTON)["spec"])
    assert (spec["solver"], spec["params"]["loss"], spec["params"]["C"]) == ("ppdsparse", "hinge", 2.0)
    assert (spec["dataset"], spec["test"], spec["threads"]) == (newton["dataset"], newton["test"], 1)
    assert newton["params"]["eps"] == 0.01 and spec["params"]["eps"] == 0.1
    for name in (NEWTON, new):
        assert _row(page, name).locator("input[type=checkbox]").is_checked(), name
    assert wait(store, row["id"], timeout=600)["status"] == "done"
    figs = _by_title(_shows(page, {NEWTON, new}, seconds=60))
    assert set(figs[GAP]["labels"]) == {NEWTON, new}
    page.screenshot(path=str(ARTIFACTS / "workbench-compare-with.png"))


def test_sweep_c_from_the_launch_panel(page, runs):
    """Choose C in the sweep box (its values start at the decade around C = 1: 0.1,1,10), click
    Sweep: three runs, ticked; once done, the sweep card draws their P@1/3/5 against C on a log
    x-axis, at the P@k the store recorded, and the seconds and model size figures beside it."""
    _, _, store = runs
    page.get_by_label("Data set", exact=True).select_option(label="small_train.txt")
    page.get_by_label("Sweep a parameter", exact=True).select_option("C")
    values = page.get_by_label("values", exact=True)
    assert values.input_value() == "0.1,1,10"
    page.get_by_role("button", name="Sweep", exact=True).click()
    names = [f"small-zero C={c}" for c in ("0.1", "1", "10")]  # Compare's first variant: zero
    for name in names:
        _row(page, name).wait_for(timeout=30000)
    for row in [r for r in store.list() if r["name"] in names]:
        assert wait(store, row["id"], timeout=600)["status"] == "done", row["name"]
    page.get_by_text("Sweep over C").first.wait_for(timeout=60000)
    page.get_by_text("of the 3 finished of 3").first.wait_for(timeout=60000)
    sweep = _by_title(_until(page, lambda figs: "P@k against C" in _by_title(figs)))
    precision = sweep["P@k against C"]
    assert precision["dx"] == [0.1, 10], precision
    recorded = [next(r for r in store.list() if r["name"] == n)["summary"] for n in names]
    p_at = [s[k] for s in recorded for k in ("p@1", "p@3", "p@5")]
    assert np.allclose(precision["dy"], [min(p_at), max(p_at)])
    assert {"training seconds against C", "model non-zeros against C"} <= set(sweep)
    assert "against it (log x-axis)" in page_text(page)  # C spans two decades
    assert all(_row(page, n).locator("input[type=checkbox]").is_checked() for n in names)
    page.screenshot(path=str(ARTIFACTS / "workbench-sweep-C.png"), full_page=True)


def test_seed_groups_draw_one_curve_with_a_band_across_seeds(page, runs):
    """The three PPDSparse seeds ticked and "group seeds" on: every figure's legend names one
    curve, "small-ppdsparse (3 seeds)", the line under its title says the band is over seeds, and the objective
    gap's figure draws the median and 5-95% band across the three runs' medians (runs.seed_groups) as
    computed here from the store; off again, three curves."""
    _, _, store = runs
    for name in SEEDS:
        _tick(page, name)
    _shows(page, set(SEEDS))
    page.locator(".bk-Checkbox", has_text="group seeds").locator("input").click()
    group = "small-ppdsparse (3 seeds)"
    _shows(page, {group})
    gap = _by_title(_until(page, lambda figs: "over seeds" in _by_title(figs).get(GAP, {}).get("subtitle", "")))[GAP]
    assert gap["subtitle"].strip().startswith("median, 5-95% band over seeds"), gap  # what is drawn: under the title
    curves = []
    for name in SEEDS:
        run = next(r for r in store.list() if r["name"] == name)["id"]
        aggregate = RunAggregate()
        aggregate.add(store.records(run, "iteration")[0])
        curves.append(aggregate.bands("objective_gap", "iteration"))
    band = across_seeds(curves)[["lower", "median", "upper"]].to_numpy()
    assert not np.allclose(band[:, 0], band[:, 2])  # the seeds differ: a band, not a line
    drawn = np.log10(band[band > 0])  # the gap's axis is log-scaled and leaves out zeros
    assert np.allclose(gap["dy"], [drawn.min(), drawn.max()], rtol=1e-6), (gap["dy"], drawn.min(), drawn.max())
    page.screenshot(path=str(ARTIFACTS / "workbench-seed-group.png"))
    page.locator(".bk-Checkbox", has_text="group seeds").locator("input").click()
    _shows(page, set(SEEDS))
