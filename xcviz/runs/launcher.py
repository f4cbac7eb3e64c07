"""Start, resume and wait for background runs: detached processes that outlive their launcher."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

from .spec import RunSpec
from .store import RunStore, StoreError

FINAL = ("done", "failed", "cancelled", "interrupted")


def _start(store: RunStore, run: str) -> int:
    log = (store.run_dir(run) / "log.txt").open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "xcviz.runs.worker", str(store.home.resolve()), run],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)
    log.close()
    store.update(run, pid=proc.pid, host=socket.gethostname())
    return proc.pid


def launch(spec: RunSpec, store: RunStore) -> str:
    """Record the run as queued and start its worker; returns the run id."""
    spec.validate()
    run = store.create(spec.to_json(), spec.name)
    _start(store, run)
    return run


def resume(store: RunStore, run: str) -> None:
    """Restart an interrupted, cancelled or failed run; labels already trained are not trained again."""
    status = store.get(run)["status"]
    if status not in ("interrupted", "cancelled", "failed"):
        raise StoreError(f"run {run} is {status}; only interrupted, cancelled or failed runs can be resumed")
    store.update(run, status="queued", cancel=0)
    _start(store, run)


def wait(store: RunStore, run: str, poll: float = 0.25, timeout: float | None = None) -> dict:
    """Block until the run ends; returns its final row."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        row = store.get(run)
        if row["status"] in FINAL:
            return row
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"run {run} still {row['status']} after {timeout} s")
        time.sleep(poll)
