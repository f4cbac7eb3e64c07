"""The dashboard as a researcher uses it, in a real browser, over runs of small synthetic problems:
axes that follow the data, a legend in every figure (page and report), refused parameters that
block Compare, no request outside the server, the first visit, the layout at 1440 x 900."""
import json
import re
import subprocess
import sys

import pytest

from tests.ui.browser import ARTIFACTS, browser_page, page_text
from tests.ui.conftest import server_errors, start_server
from xcviz.runs.launcher import launch, wait
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore

# every figure of the page's Bokeh documents: its title, ranges, whether it is shown, the finite
# extent of the data its visible glyphs draw, and the labels its legends show
FIGURES_JS = """() => {
  const out = [];
  const extent = (values) => {
    let lo = Infinity, hi = -Infinity;
    const walk = (v) => { if (v == null) return;
      if (typeof v === 'number') { if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } return; }
      if (typeof v !== 'string' && v.length !== undefined) for (const x of v) walk(x); };
    walk(values); return [lo, hi];
  };
  const shown = (el) => el == null || el.offsetParent !== null || el.getClientRects().length > 0;
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    if (!(m.x_range && m.y_range && m.renderers && m.title)) continue;
    const xs = [], ys = [];
    for (const r of m.renderers) {
      if (!r.visible || !r.data_source || !r.glyph) continue;
      const d = r.data_source.data, g = r.glyph;
      for (const [kx, ky] of [['xs', 'ys'], ['x', 'y']]) {
        if (g[kx] && g[kx].field && d[g[kx].field]) xs.push(Array.from(d[g[kx].field], a => a.length !== undefined ? Array.from(a) : a));
        if (g[ky] && g[ky].field && d[g[ky].field]) ys.push(Array.from(d[g[ky].field], a => a.length !== undefined ? Array.from(a) : a));
      }
    }
    const labels = [];
    for (const legend of m.center.filter(c => c.items !== undefined)) for (const item of legend.items) {
      if (item.visible === false) continue;
      labels.push(...item.get_labels_list_from_label_prop());
    }
    const ticks = [];
    for (const [axis, range] of [[m.below[0], m.x_range], [m.left[0], m.y_range]]) {
      const shown = Array.from(axis.ticker.ticks || []).filter(t => t >= range.start && t <= range.end);
      ticks.push({log: (axis.axis_label || '').includes('log scale'), at: shown, text: axis.formatter.doFormat(shown, {loc: 0})});
    }
    out.push({title: m.title.text, visible: m.visible, x: [m.x_range.start, m.x_range.end],
              y: [m.y_range.start, m.y_range.end], dx: extent(xs), dy: extent(ys), labels: labels, ticks: ticks});
  }
  return out;
}"""


def figures(page) -> list[dict]:
    """The figures the page shows now (in a visible tab, holding data)."""
    return [f for f in page.evaluate(FIGURES_JS) if f["visible"] and f["dx"][0] <= f["dx"][1]]


def assert_ranges_follow(figs: list[dict], context: str) -> None:
    """Each range holds the data drawn and is not much wider (5% margins; shares pinned to 0-1)."""
    assert figs, context
    for f in figs:
        for axis, (start, end), (lo, hi) in (("x", f["x"], f["dx"]), ("y", f["y"], f["dy"])):
            where = f"{context}: {f['title']} {axis} range {start}..{end} for data {lo}..{hi}"
            assert start is not None and end is not None and start <= lo and end >= hi, where
            pinned = axis == "y" and (start, end) in ((-0.0125, 1.0125), (-1.25, 101.25))
            flat = max(1.01, 0.21 * max(abs(lo), abs(hi)))  # a constant is drawn with +-10% (or +-0.5) around it
            assert pinned or end - start <= 1.2 * (hi - lo) + flat, where


def assert_readable_ticks(figs: list[dict]) -> None:
    """At least two ticks per axis, no two labels alike, one number format per axis, log axes at
    powers of ten when they span two decades or more."""
    for f in figs:
        for axis in f["ticks"]:
            where = f"{f['title']}: ticks {axis['at']} read {axis['text']}"
            assert len(axis["at"]) >= 2 and len(set(axis["text"])) == len(axis["text"]), where
            assert len({"e" in t for t in axis["text"] if t != "0"}) == 1, where  # one number format
            if axis["log"] and axis["at"][-1] - axis["at"][0] >= 2:
                assert all(float(t).is_integer() for t in axis["at"]), where


def _generate(prefix, d: int, seed: int) -> None:
    subprocess.run([sys.executable, "-m", "xcviz.cli", "generate", str(prefix), "--n", "500", "--d", str(d),
                    "--labels", "24", "--avg-nnz", "20", "--seed", str(seed)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A store with four finished runs: dismec on a wide problem (nnz up to hundreds), dismec on a
    narrow one (nnz at most 31) and MEMOIR on the narrow one with the exact and the HNSW oracle (an
    epoch axis, no labels)."""
    root = tmp_path_factory.mktemp("page")
    data = root / "data"
    data.mkdir()
    _generate(data / "wide", 3000, 1)
    _generate(data / "narrow", 30, 2)
    store = RunStore(root / "home")
    specs = [RunSpec(dataset=str(data / "wide_train.txt"), test=str(data / "wide_test.txt"), solver="dismec",
                     params={"init": "zero", "eps": 1e-4, "prune_threshold": 0.0}, name="wide-zero"),
             RunSpec(dataset=str(data / "narrow_train.txt"), test=str(data / "narrow_test.txt"), solver="dismec",
                     params={"init": "msi", "prune_threshold": 0.0}, name="narrow-msi"),
             RunSpec(dataset=str(data / "narrow_train.txt"), test=str(data / "narrow_test.txt"), solver="memoir",
                     params={"lam": 1e-4, "epochs": 2}, name="narrow-memoir"),
             RunSpec(dataset=str(data / "narrow_train.txt"), test=str(data / "narrow_test.txt"), solver="memoir",
                     params={"lam": 1e-4, "epochs": 2, "oracle": "hnsw"}, name="narrow-memoir-hnsw")]
    ids = [launch(spec.validate(), store) for spec in specs]
    for run in ids:
        assert wait(store, run, timeout=300)["status"] == "done"
    return root, data, dict(zip(("wide", "narrow", "memoir", "hnsw"), ids))


@pytest.fixture(scope="module")
def page_server(runs, tmp_path_factory):
    root, data, _ = runs
    log = tmp_path_factory.mktemp("log") / "server.log"
    proc, url = start_server(root / "home", log, [data])
    yield url
    proc.terminate()
    proc.wait(timeout=20)
    assert server_errors(log) == []


def _open(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("text=Compare", timeout=60000)
    page.locator(".tabulator-row").first.wait_for(timeout=30000)


def _tick(page, name: str, on: bool = True) -> None:
    row = page.locator(".tabulator-row", has=page.locator(".tabulator-cell[tabulator-field=name]", has_text=re.compile(f"^{name}$")))
    row.locator("input[type=checkbox]").set_checked(on)


def _settle(page, shown: int) -> None:
    """Wait until the page says it shows `shown` runs and their figures have drawn."""
    for _ in range(60):
        body = page_text(page)
        if f"runs shown: {shown}," in body:
            break
        page.wait_for_timeout(500)
    page.wait_for_timeout(1500)


def _follow(figs: list[dict]) -> bool:
    try:
        assert_ranges_follow(figs, "")
    except AssertionError:
        return False
    return True


def _until(page, condition, seconds: float = 30) -> list[dict]:
    """The page's figures once `condition(figures)` holds (the last ones seen if it never does)."""
    for _ in range(int(seconds * 2)):
        figs = figures(page)
        if condition(figs):
            return figs
        page.wait_for_timeout(500)
    return figs


def test_axes_follow_the_shown_runs(page_server, runs):
    """Tick, untick, switch the x-axis: every range holds what is drawn and no more (Bokeh's own
    ranges kept the previous runs' extent, or NaN once a run had nothing on the new axis)."""
    with browser_page(1440, 900) as (page, errors):
        _open(page, page_server)
        _tick(page, "wide-zero")
        _settle(page, 1)
        wide = {f["title"].split(":")[0]: f for f in figures(page)}
        assert_ranges_follow(list(wide.values()), "wide-zero")
        assert_readable_ticks(list(wide.values()))
        _tick(page, "wide-zero", False)
        _tick(page, "narrow-msi")
        _settle(page, 1)
        narrow = {f["title"].split(":")[0]: f for f in figures(page)}
        assert_ranges_follow(list(narrow.values()), "after switching to narrow-msi")
        assert narrow["nnz(w)"]["y"][1] < wide["nnz(w)"]["y"][1] / 3  # a narrow problem's nnz on its own scale
        _tick(page, "narrow-memoir")
        _settle(page, 2)
        assert_ranges_follow(figures(page), "narrow-msi and MEMOIR")
        assert_readable_ticks(figures(page))
        page.locator("select").filter(has_text="cumulative work").last.select_option(label="epoch (streaming solvers)")
        epoch = _until(page, lambda figs: figs and all(f["x"][1] <= 2.2 for f in figs) and _follow(figs))  # 2 epochs
        assert_ranges_follow(epoch, "epoch axis")
        assert "pick another x-axis" not in page_text(page)
        page.screenshot(path=str(ARTIFACTS / "dashboard-mixed-after-switching.png"))
        page.locator("select").filter(has_text="cumulative work").last.select_option(label="iteration")
        assert_ranges_follow(_until(page, lambda figs: len(figs) > len(epoch) and _follow(figs)), "back to iterations")
    assert errors == []


def test_every_figure_has_a_legend_on_the_page_and_in_the_report(page_server, runs, tmp_path):
    root, _, ids = runs
    with browser_page(1440, 900) as (page, errors):
        _open(page, page_server)
        for name in ("wide-zero", "narrow-msi", "narrow-memoir"):
            _tick(page, name)
        _settle(page, 3)
        shown = figures(page)
        assert len(shown) >= 6
        for f in shown:
            assert f["labels"] and set(f["labels"]) <= {"wide-zero", "narrow-msi", "narrow-memoir"}, f
        page.get_by_text("Per label", exact=True).click()
        page.wait_for_timeout(2000)
        per_label = [f for f in figures(page) if "positives" in f["title"]]
        assert per_label and all(set(f["labels"]) == {"wide-zero", "narrow-msi"} for f in per_label), per_label
        page.get_by_text("Live plots", exact=True).click()
        for name, on in (("wide-zero", False), ("narrow-msi", False), ("narrow-memoir-hnsw", True)):
            _tick(page, name, on)
        both = {"narrow-memoir", "narrow-memoir-hnsw"}  # a MEMOIR oracle comparison: exact against HNSW
        # the live plots (the closed Per label tab's figures are brought up to date when it opens)
        live = lambda figs: [f for f in figs if "positives" not in f["title"]]  # noqa: E731
        memoir = live(_until(page, lambda figs: live(figs) and all(set(f["labels"]) == both for f in live(figs))))
        assert all(set(f["labels"]) == both for f in memoir), [(f["title"], f["labels"]) for f in memoir
                                                               if set(f["labels"]) != both]
        assert all("over labels" not in f["title"] for f in memoir)  # one trajectory per run, and said so
        page.screenshot(path=str(ARTIFACTS / "dashboard-memoir-oracles.png"))
    assert errors == []
    out = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "xcviz.cli", "report", *list(ids.values())[:3], "-o", str(out), "--home",
                           str(root / "home")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with browser_page(1440, 900) as (page, errors):
        page.goto(out.as_uri())
        page.wait_for_timeout(3000)
        figs = figures(page)
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    assert errors == []
    assert len(figs) >= 8
    for f in figs:
        if f["title"].startswith("predicted from"):  # the cost model: its legend names its series
            assert {"predicted", "measured"} <= set(f["labels"]), f
        else:
            assert f["labels"] and set(f["labels"]) <= {"wide-zero", "narrow-msi", "narrow-memoir"}, f


def test_a_refused_parameter_is_shown_and_blocks_compare(page_server, runs):
    root, _, _ = runs
    before = len(RunStore(root / "home").list())
    with browser_page(1440, 900) as (page, errors):
        _open(page, page_server)
        field = page.get_by_label("C", exact=True)
        compare = page.get_by_role("button", name="Compare", exact=True)
        for typed, says in (("-5", "C must be at least 1e-06, not -5.0"), ("0", "C must be at least 1e-06, not 0.0"),
                            ("abc", "C must be a number, not 'abc'")):
            field.fill(typed)
            field.press("Enter")
            page.get_by_text(says).wait_for(timeout=10000)  # the parameter's message, beside it
            assert compare.is_disabled() and field.input_value() == typed  # blocked, and not replaced
            compare.click(force=True)
            page.wait_for_timeout(500)
            assert len(RunStore(root / "home").list()) == before
        field.fill("2")
        field.press("Enter")
        page.get_by_text("C must be a number").wait_for(state="hidden", timeout=10000)
        assert compare.is_enabled()
    assert errors == []


def test_no_request_leaves_the_server_in_a_launch_watch_export_workflow(page_server, runs, tmp_path):
    """Every request the page makes is routed: any outside the server is recorded and refused."""
    root, data, _ = runs
    origin = page_server.rsplit("/", 1)[0]
    outside: list[str] = []

    def route(r):
        if r.request.url.startswith(origin):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    with browser_page(1440, 900) as (page, errors):
        page.route("**/*", route)
        _open(page, page_server)
        page.locator("select").first.select_option(label="narrow_train.txt")
        page.get_by_role("button", name="Compare", exact=True).click()
        page.get_by_text("narrow-zero").first.wait_for(timeout=30000)
        for _ in range(120):
            if len(re.findall(r"narrow-(zero|msi)-?\d*\s+done", page_text(page))) >= 2:
                break
            page.wait_for_timeout(500)
        _tick(page, "narrow-zero")
        page.wait_for_timeout(1500)
        for tab in ("Per label", "Label inspector", "Live plots"):
            page.get_by_text(tab, exact=True).click()
            page.wait_for_timeout(1000)
        _tick(page, "narrow-memoir")  # runs change while the other tabs are closed (this once fetched
        _tick(page, "narrow-zero", False)  # Panel's CSS from its CDN, and sent models the page lacked)
        page.wait_for_timeout(2000)
        _tick(page, "narrow-zero")
        for button in ("Report (HTML)", "Records (CSV, JSON)"):
            with page.expect_download() as download:
                page.get_by_text(button).click()
            download.value.save_as(tmp_path / button[:6])
        page.wait_for_timeout(1000)
    assert outside == []
    assert errors == []
    report = (tmp_path / "Report").read_text()
    assert not re.findall(r'<(?:script|link)[^>]+(?:src|href)="https?:', report)


def test_first_visit_explains_and_offers_the_example(tmp_path):
    home = tmp_path / "home"
    proc, url = start_server(home, tmp_path / "server.log")
    try:
        with browser_page(1440, 900) as (page, errors):
            page.goto(url)
            page.wait_for_selector("text=No runs yet", timeout=60000)
            assert page.title() == "xcviz"
            page.screenshot(path=str(ARTIFACTS / "dashboard-first-visit.png"))
            page.get_by_role("button", name="Compare zero and MSI initialisation on Bibtex").click()
            page.get_by_text("bibtex-msi").first.wait_for(timeout=30000)
        assert errors == []
        rows = RunStore(home).list()
        assert sorted(r["name"] for r in rows) == ["bibtex-msi", "bibtex-zero"]
        assert {json.loads(r["spec"])["params"]["init"] for r in rows} == {"zero", "msi"}
        for row in rows:
            subprocess.run([sys.executable, "-m", "xcviz.cli", "cancel", row["id"], "--home", str(home)],
                           capture_output=True)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
