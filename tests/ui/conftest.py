"""The served dashboard on a free port, over a run store of the test's own."""
import os
import socket
import subprocess
import sys
import time
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


@pytest.fixture
def server(tmp_path, home):
    port = free_port()
    env = {**os.environ, "XCVIZ_HOME": str(home)}
    log = (tmp_path / "server.log").open("wb")  # a pipe nobody reads would block the server once full
    proc = subprocess.Popen([sys.executable, "-m", "panel", "serve", str(APP), "--port", str(port),
                             "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/dashboard"
    proc.terminate()
    proc.wait(timeout=20)
    log.close()
    output = (tmp_path / "server.log").read_text(errors="replace")
    # the server raised nothing, apart from writes to a browser that had already closed the page
    raised = [t for t in output.split("Traceback")[1:] if "ClosedError" not in t]
    assert not raised, "Traceback" + raised[0][:3000] if raised else ""
