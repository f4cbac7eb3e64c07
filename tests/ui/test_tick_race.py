"""Ticks made in the runs table while a live run changes it once a second: each sticks in the page and
reaches the server. The server's refresh used to send the table whole (`value`) and with it the
ticks it had last seen, over a tick that had reached it less than Panel's debounce (50 ms) before:
Panel let that stale selection win and dropped the tick, so the box flipped back and the server
never had it (about 1 change in 20 in the records benchmark, where the legend kept an unticked run)."""
import threading
import time

import pytest

from tests.ui.browser import ARTIFACTS, browser_page
from tests.ui.conftest import served
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore, owner

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# in the page: when the runs table's data next changes (a refresh reached the page), `delay` ms later
# the ticked boxes and the status line as they are, then a click on the box of the run `name`
CLICK_AFTER_DATA = """([name, delay]) => new Promise((done) => {
  const table = [...Bokeh.documents[0].all_models].find((m) => m.select_mode !== undefined && m.source?.get_column('ETA s'));
  const all = () => { const out = [];
    const walk = (root) => root.querySelectorAll('*').forEach((el) => {
      if (el.shadowRoot) walk(el.shadowRoot);
      out.push(el); });
    walk(document); return out; };
  const box = () => all().filter((el) => el.classList.contains('tabulator-row')).find((row) =>
    row.querySelector('.tabulator-cell[tabulator-field=name]')?.textContent === name)
    ?.querySelector('input[type=checkbox]');
  let armed = true;
  table.source.properties.data.change.connect(() => {
    if (!armed) return;
    armed = false;
    setTimeout(() => {
      const el = box(), before = el.checked;
      const ticked = all().filter((e) => e.matches('.tabulator-row input[type=checkbox]:checked')).length;
      const status = (document.body.innerText + all().filter((e) => e.shadowRoot)
        .map((e) => e.shadowRoot.textContent).join(' ')).match(/runs shown: (\\d+), (\\w+)/);
      el.click();
      done({before, ticked, server: status ? (status[2] === 'ticked' ? +status[1] : 0) : null});
    }, delay);
  });
})"""
NAMES = [f"done-{i}" for i in range(3)]
# the page's refresh comes once a second: clicks from just after it arrives to just before the next
# (a tick reaching the server in the 50 ms before a refresh was lost: whatever the refresh's cost,
# some of these land there)
DELAYS = [0, *range(980, 480, -20)]


def _spec(init: str) -> str:
    return RunSpec(dataset="bibtex", params={"init": init}).validate().to_json()


def _live_run(store: RunStore, stop: threading.Event) -> threading.Thread:
    """A run training in this process: its done count (so its table row) changes five times a second."""
    live = store.create(_spec("zero"), "live")
    store.update(live, status="running", total=10**6, started=time.time(), **owner())

    def train():
        done = 0
        while not stop.wait(0.2):
            done += 7
            store.update(live, done=done)
    thread = threading.Thread(target=train, daemon=True)
    thread.start()
    return thread


def test_ticks_made_while_a_live_run_refreshes_the_table_stick(home, tmp_path):
    """Three finished runs, ticked and unticked in turn, each click at another moment of the
    once-a-second refresh: no click is undone in the page, and the server's count of ticked runs
    (the line above the plots) follows the page's, a refresh or two behind."""
    store = RunStore(home)
    for i, name in enumerate(NAMES):
        run = store.create(_spec(("zero", "msi", "bias")[i]), name)
        store.update(run, status="done", done=3, total=3, summary={"p@1": 50.0 + i})
    stop = threading.Event()
    thread = _live_run(store, stop)
    expected = dict.fromkeys(NAMES, False)  # the page's ticks, as the clicks made them
    counts, undone, unheard = [], [], []
    try:
        with served(home, tmp_path / "server.log") as url, browser_page(1440, 900) as (page, errors):
            page.goto(url)
            page.wait_for_selector("text=Compare", timeout=60000)
            page.get_by_text("runs shown: 1, launched").wait_for(timeout=30000)  # the live run, nothing ticked
            for k, delay in enumerate(DELAYS):
                name = NAMES[k % len(NAMES)]
                seen = page.evaluate(CLICK_AFTER_DATA, [name, delay])
                if seen["before"] != expected[name]:  # the page undid the click before this run's last
                    undone.append(DELAYS[k - len(NAMES)])
                # the server has the clicks up to the one before last at least
                if len(counts) >= 2 and seen["server"] not in counts[-2:]:
                    unheard.append((k, seen["server"], counts[-2:]))
                expected[name] = not seen["before"]
                counts.append(sum(expected.values()))
            page.wait_for_timeout(2500)  # two refreshes
            for name in NAMES:
                box = page.locator(".tabulator-row", has=page.get_by_text(name, exact=True)).locator(
                    "input[type=checkbox]")
                if box.is_checked() != expected[name]:
                    undone.append(DELAYS[-1])
            n = counts[-1]
            page.get_by_text(f"runs shown: {n}, ticked" if n else "runs shown: 1, launched").wait_for(timeout=5000)
            page.screenshot(path=str(ARTIFACTS / "tick-race.png"))
            assert errors == []
    finally:
        stop.set()
        thread.join()
    assert (undone, unheard) == ([], []), f"{len(undone)} of {len(DELAYS)} clicks undone in the page " \
                                          f"(ms after a refresh: {undone}); server behind the page: {unheard}"
