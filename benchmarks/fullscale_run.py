"""One full-scale run, end to end, as a user does it (issue #39 item 5): the amazon-670k preset at its
full shape (490,449 x 135,909, 670,091 labels), launched from the served page in the background with
its estimate shown first, watched while it streams, then its report opened with the network off.

A whole run is about 60 hours on 2 cores, so the run trains a sample of the labels (`label_sample`,
drawn stratified by positives with a fixed seed); the page, the run and the report say so. Steps:

1. the data: `xcviz generate DATA/amazon670k --like amazon-670k` if its files are absent (timed);
2. `xcviz serve` over a private store (OUT/home) offering DATA, the parsed-file cache in DATA/cache;
3. in headless chromium: the data set, dismec with init msi only, the threads and `label_sample`;
   **Estimate first** (screenshot), then **Compare** launches the run in the background;
4. at least `--minutes` of watching: its progress once a minute, and at a few points the time an
   x-axis switch (iteration -> wall time -> iteration) and an untick/tick of the run take, from
   the click to the page showing the change (screenshots);
5. the run's end (its summary: train seconds, P@k on the sample, rows scored);
6. the report downloaded from the page, opened with every request but file:// refused (screenshot).

Everything measured goes to OUT/fullscale.json and the screenshots to OUT/*.png. It takes 20 minutes
or more, so it is not in `make bench`; run it by hand:

    .venv/bin/python benchmarks/fullscale_run.py --data /path/to/folder --labels 3000 --out fullscale-out
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

PRESET = "amazon-670k"
STEM = "amazon670k"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WALL_TEXT = "x: wall time since the run started"
ITERATION_TEXT = "x: iteration (0 is the starting point)"


def page_text(page) -> str:
    """All text of the page, shadow roots included (Panel draws its components in them)."""
    return page.evaluate("""() => { const out = [];
        const walk = (node) => { if (node.nodeType === Node.TEXT_NODE) out.push(node.textContent);
            if (node.shadowRoot) walk(node.shadowRoot); node.childNodes.forEach(walk); };
        walk(document.body); return out.join(" "); }""")


def generate(data: Path) -> dict:
    """The preset's files in `data` (written now, timed, when absent): their sizes and the seconds."""
    train, test = data / f"{STEM}_train.txt", data / f"{STEM}_test.txt"
    seconds = None
    if not (train.exists() and test.exists()):
        start = time.monotonic()
        subprocess.run([sys.executable, "-m", "xcviz.cli", "generate", str(data / STEM), "--like", PRESET], check=True)
        seconds = round(time.monotonic() - start, 1)
    return {"generate_seconds": seconds, "train_bytes": train.stat().st_size, "test_bytes": test.stat().st_size}


def serve(home: Path, data: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """`xcviz serve` on a free port over the private store; (process, page address) once it answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "XCVIZ_CACHE": str(data / "cache")}
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "xcviz.cli", "serve", "--home", str(home), "--data-dir",
                                 str(data), "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/dashboard"
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"the server did not answer on port {port}; see {log}")


def wait_text(page, text: str, seconds: float, present: bool = True) -> float:
    """Seconds until `text` is on the page (gone from it, with `present` false), polled every 50 ms;
    raises after `seconds`."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if (text in page_text(page)) == present:
            return time.monotonic() - start
        page.wait_for_timeout(50)
    raise TimeoutError(f"{text!r} {'not on' if present else 'still on'} the page after {seconds} s")


def row(page, name: str):
    return page.locator(".tabulator-row", has=page.locator(".tabulator-cell[tabulator-field=name]",
                                                           has_text=re.compile(f"^{re.escape(name)}$")))


def set_field(page, label: str, value: str) -> None:
    field = page.get_by_label(label, exact=True)
    field.fill(value)
    field.press("Enter")


def interactions(page, name: str) -> dict:
    """The seconds an x-axis switch each way and an untick then tick of the run take, from the
    change to the page saying it (the plots' axis note; the status line's count of runs shown and
    how they were chosen)."""
    out = {}
    axis = page.get_by_role("combobox").filter(has_text="wall time")
    start = time.monotonic()
    axis.select_option(label="wall time (s)")
    wait_text(page, WALL_TEXT, 120)
    out["x_axis_to_wall_s"] = round(time.monotonic() - start, 2)
    start = time.monotonic()
    axis.select_option(label="iteration")
    wait_text(page, ITERATION_TEXT, 120)
    out["x_axis_to_iteration_s"] = round(time.monotonic() - start, 2)
    box = row(page, name).locator("input[type=checkbox]")
    start = time.monotonic()
    box.click()  # unticked: the status line no longer says the runs shown are the ticked ones
    wait_text(page, "ticked", 120, present=False)
    out["untick_s"] = round(time.monotonic() - start, 2)
    start = time.monotonic()
    box.click()
    wait_text(page, "runs shown: 1, ticked", 120)
    out["tick_s"] = round(time.monotonic() - start, 2)
    return out


def progress(page, name: str) -> str:
    cells = row(page, name).locator(".tabulator-cell[tabulator-field=done]").all_inner_texts()
    return cells[0] if cells else ""


def run(args: argparse.Namespace) -> dict:
    from playwright.sync_api import sync_playwright

    from xcviz.runs.store import RunStore

    out, data = Path(args.out).resolve(), Path(args.data).resolve()
    out.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    result = {"preset": PRESET, "labels_requested": args.labels, "threads": args.threads, **generate(data)}
    home = out / "home"
    name = f"{STEM}-msi"
    proc, url = serve(home, data, out / "server.log")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
        page.set_default_timeout(120_000)
        page.set_default_navigation_timeout(120_000)
        page.goto(url)
        page.wait_for_selector("text=Compare", timeout=120_000)
        page.locator("select").first.select_option(label=f"{STEM}_train.txt")
        page.locator(".choices__item", has_text=re.compile("^zero")).locator("button").click()  # msi alone
        set_field(page, "threads", str(args.threads))
        set_field(page, "label_sample", str(args.labels))
        start = time.monotonic()
        page.get_by_role("button", name="Estimate first").click()
        page.locator("table.xcviz-estimate td", has_text=name).wait_for(timeout=3_600_000)
        result["estimate_wall_s"] = round(time.monotonic() - start, 1)
        result["estimate_text"] = page.locator("table.xcviz-estimate").inner_text()
        page.screenshot(path=str(out / "fullscale-estimate.png"))
        page.get_by_role("button", name="Compare", exact=True).click()
        launched = time.monotonic()
        row(page, name).wait_for(timeout=120_000)
        row(page, name).locator("input[type=checkbox]").click()  # ticked: the report is of the ticked runs
        wait_text(page, "runs shown: 1, ticked", 120)
        store = RunStore(home)
        (run_id,) = [r["id"] for r in store.list() if r["name"] == name]
        result["run"] = run_id
        timeline, shots, checks = [], {2, args.minutes // 2, args.minutes}, []
        minute = 0
        while True:
            page.wait_for_timeout(max(0, 1000 * (60 * (minute + 1) - (time.monotonic() - launched))))
            minute += 1
            status = store.get(run_id)["status"]
            timeline.append({"minute": minute, "status": status, "progress": progress(page, name),
                             "load_1min": os.getloadavg()[0]})  # the machine is shared: its load beside each number
            print(json.dumps(timeline[-1]), flush=True)
            if minute in shots and status == "running":
                checks.append({"minute": minute, **interactions(page, name)})
                print(json.dumps(checks[-1]), flush=True)
                page.screenshot(path=str(out / f"fullscale-minute-{minute:02d}.png"))
            if status not in ("queued", "running") and minute >= args.minutes:
                break
            if status not in ("queued", "running") and minute < args.minutes:
                result["ended_early"] = f"the run ended ({status}) after {minute} min, before {args.minutes}"
                break
        final = store.get(run_id)
        result.update(timeline=timeline, interactions=checks, status=final["status"], error=final["error"],
                      summary=final["summary"], run_wall_s=round((final["ended"] or time.time()) - final["started"], 1))
        page.wait_for_timeout(3000)  # the table's once-a-second refresh shows the end
        page.screenshot(path=str(out / "fullscale-done.png"))
        with page.expect_download(timeout=600_000) as download:
            page.get_by_role("button", name="Report (HTML)").click()
        report = out / "fullscale-report.html"
        download.value.save_as(report)
        offline = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        refused = []
        offline.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                      else (refused.append(route.request.url), route.abort()))
        offline.goto(report.as_uri())
        offline.wait_for_selector("canvas", timeout=120_000)
        offline.wait_for_timeout(2000)
        result["report"] = {"canvases": offline.locator("canvas").count(), "refused_requests": refused,
                            "says_sample": "trained a sample of" in page_text(offline)}
        offline.screenshot(path=str(out / "fullscale-report.png"), full_page=True)
        browser.close()
    proc.terminate()
    proc.wait(timeout=30)
    (out / "fullscale.json").write_text(json.dumps(result, indent=2))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of the preset's files (generated there if absent)")
    parser.add_argument("--labels", type=float, default=3000, help="label_sample: a count, or a share below 1")
    parser.add_argument("--minutes", type=int, default=20, help="watch the run at least this long")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="fullscale-out", help="screenshots, the report and fullscale.json")
    args = parser.parse_args()
    print(json.dumps(run(args), indent=2))


if __name__ == "__main__":
    main()
