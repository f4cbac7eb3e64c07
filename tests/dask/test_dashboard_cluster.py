"""The dashboard in a real browser launches a run on a local Dask cluster (2 workers x 1 thread):
the live plots fill as the workers' blocks arrive, and the Workers tab shows a lane per worker
filling with blocks until all of Delicious' 983 labels are in."""
import re
import time

import pytest

from tests.ui.browser import ARTIFACTS, browser_page, page_text
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore

pytestmark = [pytest.mark.browser, pytest.mark.cluster]

LABELS = 983  # Delicious: Bibtex's 159 labels train on two workers faster than the page polls
WORKER_ROW = re.compile(r"tls://127\.0\.0\.1:(\d+)\s+(\d+)\s+(\d+)\s")


def _records_shown(body: str) -> int:
    match = re.search(r"records shown: (\d+)", body)
    return int(match.group(1)) if match else 0


def test_launch_a_local_cluster_run_from_the_page(server, home):
    ARTIFACTS.mkdir(exist_ok=True)
    with browser_page(1300, 1000) as (page, errors):
        page.goto(server, timeout=120000)  # a loaded machine can take long to serve the first page
        page.wait_for_selector("text=Compare", timeout=60000)
        page.locator("select").first.select_option("delicious")  # several seconds of blocks to watch
        chosen = page.locator('.choices__list--multiple .choices__item[data-value="msi"]')
        chosen.locator(".choices__button").click()  # zero initialisation only
        page.get_by_role("button", name="local cluster").click()
        page.get_by_role("button", name="Compare", exact=True).click()
        page.get_by_text("Workers", exact=True).click()
        counts, labels_seen = [], []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            page.wait_for_timeout(500)
            body = page_text(page)
            counts.append(_records_shown(body))
            labels_seen.append(sum(int(m[2]) for m in WORKER_ROW.findall(body)))
            if re.search(r"done\s+(?:100\s+)?983/983 labels", body):
                break
        page.wait_for_timeout(1500)
        body = page_text(page)
        page.screenshot(path=str(ARTIFACTS / "dashboard-workers.png"), full_page=True)
        assert re.search(r"done\s+(?:100\s+)?983/983 labels", body), body[-800:]
        rows = WORKER_ROW.findall(body)
        assert len({port for port, _, _ in rows}) == 2, rows  # a lane per worker process
        assert sum(int(labels) for _, _, labels in rows) == LABELS
        assert any(0 < k < LABELS for k in labels_seen), labels_seen  # the lanes filled while it trained
        growth = [b for a, b in zip(counts, counts[1:]) if b > a]
        assert len(growth) >= 2, counts  # the live plots' records grew block by block
        page.get_by_text("Live plots", exact=True).click()
        page.wait_for_timeout(1500)
        page.screenshot(path=str(ARTIFACTS / "dashboard-cluster-live.png"), full_page=True)
        assert page.locator("canvas").count() >= 4
    assert errors == []
    (row,) = RunStore(home).list()
    assert RunSpec.from_json(row["spec"]).cluster == "local:2x1"
    assert row["summary"]["workers"] == 2 and row["status"] == "done"
