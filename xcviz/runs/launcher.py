"""Start, resume and wait for background runs: detached processes that outlive their launcher.

Launching and resuming claim the run in the store first (one transaction that checks its status
and makes this process its owner), then start the worker with the claim's token (in its
environment, `XCVIZ_CLAIM`: other local users read a process's arguments, never its environment)
and name it as the owner: of several `xcviz resume` at once exactly one starts a worker, and a
launcher that dies between the two steps leaves an interrupted run, never one queued for ever.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import time

from .inputs import check, record
from .spec import RunSpec
from .store import CLAIM_VARIABLE, RunStore, StoreError, process_start

FINAL = ("done", "failed", "cancelled", "interrupted")


def _private_log(path: str | os.PathLike) -> io.BufferedWriter:
    """The run's log.txt opened to append, readable by this user alone (0600 from the moment it
    exists; an older run's log loses the group's and others' bits)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        mode = os.fstat(fd).st_mode & 0o777
        if mode & 0o077:
            try:
                os.fchmod(fd, mode & 0o700)
            except PermissionError:
                pass  # another user's (root's) log: not ours to change, and the store folder hides it
        return os.fdopen(fd, "ab")
    except BaseException:
        os.close(fd)
        raise


def _start(store: RunStore, run: str, token: str) -> int:
    """Start the worker of a run this process has claimed; a start that fails fails the run."""
    try:
        log = _private_log(store.run_dir(run) / "log.txt")
        with log:
            proc = subprocess.Popen([sys.executable, "-m", "xcviz.runs.worker", str(store.home.resolve()), run],
                                    env={**os.environ, CLAIM_VARIABLE: token}, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=log, start_new_session=True, close_fds=True)
    except OSError as exc:
        store.update(run, status="failed", ended=time.time(), error=f"the worker could not start ({exc.strerror or exc})")
        raise StoreError(f"run {run}: the worker could not start ({exc.strerror or exc})") from None
    store.hand_over(run, token, proc.pid, process_start(proc.pid))
    return proc.pid


def launch(spec: RunSpec, store: RunStore, data_dirs: list[str | os.PathLike] | None = None,
           schedulers: list[str] = ()) -> str:
    """Record the run as queued and start its worker; returns the run id. With `data_dirs` (the
    dashboard's), every file the run reads must lie inside them, and a Dask scheduler it uses must
    be one of `schedulers`, now and at every resume."""
    spec.validate()
    run = store.create(spec.to_json(), spec.name, inputs=record(spec, data_dirs, schedulers))
    _start(store, run, store.token(run))
    return run


def resume(store: RunStore, run: str, schedulers: list[str] | None = None) -> None:
    """Restart an interrupted, cancelled or failed run whose inputs have not changed; labels
    already trained are not trained again. `schedulers` (the dashboard's): a confined run's Dask
    scheduler must still be one of them, not only one of those allowed when it was launched."""
    row = store.get(run)
    check(RunSpec.from_json(row["spec"], source=f"run {run}"), row["inputs"], schedulers)
    _start(store, run, store.claim(run))


def wait(store: RunStore, run: str, poll: float = 0.25, timeout: float | None = None) -> dict:
    """Block until the run ends; returns its final row (TimeoutError after `timeout` seconds)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        row = store.get(run)
        if row["status"] in FINAL:
            return row
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"run {run} still {row['status']} after {timeout} s")
        time.sleep(poll)
