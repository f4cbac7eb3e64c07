"""The served dashboard on a free port, over a run store of the test's own."""
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "apps" / "dashboard.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def home(tmp_path):
    """The run store folder the served dashboard reads (XCVIZ_HOME)."""
    return tmp_path / "home"


def start_server(home: Path, log_path: Path, data_dirs: list[Path] = ()) -> tuple[subprocess.Popen, str]:
    """`panel serve` of the dashboard on a free port over the store in `home`; returns the process
    (its output goes to `log_path`: a pipe nobody reads would block the server once full) and the
    page's address, once the port answers. `data_dirs`: folders whose training files the page offers."""
    port = free_port()
    env = {**os.environ, "XCVIZ_HOME": str(home), "XCVIZ_DATA_DIRS": os.pathsep.join(map(str, data_dirs))}
    with log_path.open("ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "panel", "serve", str(APP), "--port", str(port),
                                 "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    return proc, f"http://127.0.0.1:{port}/dashboard"


def server_errors(log_path: Path) -> list[str]:
    """Tracebacks the server printed, apart from writes to a browser that had already closed the page,
    and Panel's warning that a widget's extension was not loaded (the second page opened lacks its
    JavaScript: the upload box broke every page but the first that way)."""
    output = log_path.read_text(errors="replace")
    missing = [line for line in output.splitlines() if "extension was not loaded" in line]  # JS a later page lacks
    return missing[:1] + ["Traceback" + t[:3000] for t in output.split("Traceback")[1:] if "ClosedError" not in t]


@contextmanager
def served(home: Path, log_path: Path, data_dirs: list[Path] = ()):
    """The dashboard served while the block runs (`start_server`), its address; stopped after,
    with no traceback in its log."""
    proc, url = start_server(home, log_path, data_dirs)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert server_errors(log_path) == []


@pytest.fixture
def server(tmp_path, home):
    proc, url = start_server(home, tmp_path / "server.log")
    yield url
    proc.terminate()
    proc.wait(timeout=20)
    raised = server_errors(tmp_path / "server.log")
    assert not raised, raised[0]
