"""A real `xcviz serve` process on a free port, for the security tests."""
import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from tests.ui.conftest import free_port, server_errors

__all__ = ["free_port", "open_websocket", "serve", "server_errors", "session_token", "wait_for_port"]


def session_token(page: str) -> str:
    """The Bokeh session token a served page's HTML carries (its websocket presents it)."""
    return re.search(r'"token"\s*:\s*"([^"]+)"', page).group(1)


def open_websocket(port: int, token: str, headers: dict[str, str]) -> str:
    """Open /dashboard/ws on 127.0.0.1 with these headers (Host, Origin, Cookie): 'ACK' if the
    server accepted it and acknowledged, else 'refused N' (N: the HTTP status of the refusal)."""
    async def go() -> str:
        request = HTTPRequest(f"ws://127.0.0.1:{port}/dashboard/ws", headers=headers, follow_redirects=False)
        try:
            connection = await websocket_connect(request, subprotocols=["bokeh", token])
        except HTTPClientError as exc:
            return f"refused {exc.code}"
        message = await asyncio.wait_for(connection.read_message(), 30)
        connection.close()
        return "ACK" if "ACK" in str(message) else str(message)
    return asyncio.run(go())


def wait_for_port(proc: subprocess.Popen, address: str, port: int, timeout: float = 60) -> None:
    """Return once the server `proc` accepts connections on the port (or has ended, or timed out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex((address, port)) == 0:
                return
        time.sleep(0.2)


@contextmanager
def serve(args: list[str], log_path: Path, env: dict[str, str] | None = None, address: str = "127.0.0.1"):
    """Run `xcviz serve ARGS --address ADDRESS --port P`; yields (process, port) once the port answers, stops it after.
    The server's output goes to `log_path` (a pipe nobody reads would block it once full)."""
    port = free_port()
    with log_path.open("ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "xcviz.cli", "serve", "--port", str(port),
                                 "--address", address, *args],
                                env={**os.environ, **(env or {})}, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(proc, address, port)
        assert proc.poll() is None, log_path.read_text(errors="replace")[-2000:]
        yield proc, port
    finally:
        proc.terminate()
        proc.wait(timeout=20)
