"""Your own file from the page (issue 40, item 5): dropped in the launch panel, kept in the data
folder, selected, trained by Compare; a bad file refused with its line, not its content."""
import re

import pytest

from tests.ui.browser import ARTIFACTS, browser_page, page_text
from tests.ui.conftest import server_errors, start_server
from xcviz.app.dashboard import Dashboard
from xcviz.data.uploads import MAX_UPLOAD_MB
from xcviz.runs.store import RunStore

SECRET = "TOKEN-41aa07"
ROWS = "".join(f"{i % 3},{3 + (i + 1) % 4} {1 + i % 5}:0.5 {6 + i % 7}:1.0 {14 + i % 3}:0.25\n" for i in range(60))


def test_a_dropped_file_is_kept_offered_and_selected(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    page = Dashboard(RunStore(tmp_path / "home"), data_dirs=[data])
    page.upload.dropper.value = {"../Mine data.txt": ROWS}
    kept = data / "Mine-data_train.txt"
    assert kept.read_text() == ROWS
    assert page.launcher.dataset.value == str(kept) and str(kept) in page.launcher.dataset.options.values()
    assert "Added Mine-data_train.txt" in page.upload.message.object
    page.upload.dropper.value = {"Mine-data_test.txt": "".join(ROWS.splitlines(keepends=True)[:5])}
    assert (data / "Mine-data_test.txt").is_file(), page.upload.message.object  # its test split, paired by name
    assert page.launcher.dataset.value == str(kept)
    page.upload.dropper.value = {"bad<b>.txt": ROWS + f"1 2:x{SECRET}\n"}
    text = page.upload.message.object
    assert "Not added: bad&lt;b&gt;.txt:61:" in text and SECRET not in text and "<b>" not in text, text
    assert sorted(p.name for p in data.iterdir()) == ["Mine-data_test.txt", "Mine-data_train.txt"]


def test_the_server_drops_a_file_whose_chunks_exceed_the_limit_whatever_the_page_sends(tmp_path, monkeypatch):
    """A page that skips the browser's size check: the chunks past the limit are dropped, the
    rest of that file too, and the panel says so; a file within the limit still arrives whole."""
    from types import SimpleNamespace

    import xcviz.app.ui.upload as upload

    monkeypatch.setattr(upload, "MAX_CHUNKS_BYTES", 1000)
    data = tmp_path / "data"
    data.mkdir()
    page = Dashboard(RunStore(tmp_path / "home"), data_dirs=[data])
    dropper = page.upload.dropper

    def send(name, chunk, total, payload):
        dropper._process_event(SimpleNamespace(event_name="upload_event", data={
            "name": name, "chunk": chunk, "total_chunks": total, "data": payload, "type": "text/plain"}))
    for chunk in range(1, 6):  # 5 x 400 bytes: dropped at the third
        send("big.txt", chunk, 5, b"x" * 400)
    assert dropper._file_buffer == {} and dropper.value == {}
    assert "Not added: big.txt is larger than" in page.upload.message.object
    rows = ROWS.encode()[:600].rsplit(b"\n", 1)[0] + b"\n"
    send("small.txt", 1, 2, rows[:300])
    send("small.txt", 2, 2, rows[300:])
    assert (data / "small_train.txt").read_bytes() == rows


def test_without_a_data_folder_the_dropper_is_off_and_says_why(tmp_path):
    page = Dashboard(RunStore(tmp_path / "home"), data_dirs=[])
    assert page.upload.dropper.disabled and "--data-dir" in page.upload.help.object
    assert f"up to {MAX_UPLOAD_MB} MB" in page.upload.help.object


@pytest.mark.browser
def test_my_own_file_in_three_steps_drop_it_compare_watch(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    mine = tmp_path / "mine.txt"
    mine.write_text(ROWS)
    home = tmp_path / "home"
    proc, url = start_server(home, tmp_path / "server.log", [data])
    try:
        with browser_page(1440, 900) as (page, errors):
            page.goto(url)
            page.wait_for_selector("text=Compare", timeout=60000)
            page.locator("input[type=file]").set_input_files(str(mine))  # 1: drop (or choose) the file
            page.get_by_text("Added mine_train.txt").wait_for(timeout=60000)
            page.screenshot(path=str(ARTIFACTS / "dashboard-upload.png"))
            assert page.locator("select").first.input_value().endswith("mine_train.txt")
            page.get_by_role("button", name="Compare", exact=True).click()  # 2: Compare
            page.locator(".tabulator-cell", has_text=re.compile(r"^done$")).nth(1).wait_for(timeout=300000)  # 3: watch
            text = page_text(page)
        assert errors == []
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    rows = RunStore(home).list()
    assert sorted(r["name"] for r in rows) == ["mine-msi", "mine-zero"] and all(r["status"] == "done" for r in rows)
    assert "mine-msi" in text
    assert server_errors(tmp_path / "server.log") == []
