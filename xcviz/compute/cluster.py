"""Where a run's label blocks execute, and how to reach it.

The run spec's `cluster` field: None = numba threads in the run's own process (the default);
"local:N" or "local:NxT" = a Dask LocalCluster of N worker processes started for the run, each with
one Dask thread and T numba threads inside (T defaults to the spec's `threads`, else the cores
shared out evenly); "tcp://HOST:PORT" or "tls://HOST:PORT" = an existing scheduler started with
`dask scheduler`, whose workers (`dask worker tcp://HOST:PORT --nthreads 1`) run the blocks on the
spec's `threads` numba threads (all their cores when unset).

A local cluster speaks TLS with a key and certificate made for the run and held in memory only
(Dask's `Security.temporary`): a Dask scheduler runs whatever code its clients send, so on a shared
machine a plain loopback port would let any local user run code as the run's owner. A `tls://`
scheduler uses the certificates of Dask's own configuration (`distributed.comm.tls.*`).

`parse_cluster` checks the text (the spec and the CLI call it); `connect` starts or reaches the
cluster and returns a Client with what was found (workers, seconds it took). Dask is imported only
when a cluster is asked for, so threads runs never pay for it.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from .._util.extras import require
from .._util.processes import pid_exists
from ..engine.threads import max_threads

MAX_LOCAL_WORKERS = 64
# where a run trained, as train --json and a stored run's summary report it (data_bytes: the
# kernel's data, what a Dask run sends to each worker; threads runs report it too, for the cost model)
CLUSTER_KEYS = ("cluster", "workers", "cluster_start_seconds", "scatter_seconds", "data_bytes")
CONNECT_TIMEOUT = 10.0      # seconds to reach a scheduler before the run fails
# Dask settings of the local clusters xcviz starts (BENCHMARKS.md, "Dask": where a Dask run's time
# went). Its workers and the driver share the machine's cores, so what Dask does beside the tasks
# comes out of the training: no statistical profiler sampling every worker thread each 10 ms (the
# Dask dashboard's Profile tab stays empty), the event loops' health tick every second rather than
# 20 ms, memory checked every second rather than 100 ms and the system monitor every 2 s rather than
# 0.5 s; and the workers keep glibc's adaptive malloc (Dask sets MALLOC_TRIM_THRESHOLD_=65536, which
# also fixes the mmap threshold, so every block's fresh arrays are page-faulted in again).
# No HTTP routes either: a Dask scheduler and its workers always run an HTTP server (info pages,
# JSON, metrics, a proxy) that answers any Host name without a login; with no routes it answers 404.
LOCAL_CONFIG = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": [],
                "distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
                "distributed.worker.memory.monitor-interval": "1s", "distributed.admin.system-monitor.interval": "2s",
                "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1,
                                                        "OPENBLAS_NUM_THREADS": 1}}
WORKERS_TIMEOUT = 60.0      # seconds a scheduler may take to have at least one worker

SCRATCH_PREFIX = "xcviz-dask-"  # a local cluster's scratch folder: xcviz-dask-PID-RANDOM
_SCRATCH = re.compile(rf"{SCRATCH_PREFIX}(\d{{1,10}})-[A-Za-z0-9_]+")
_LOCAL = re.compile(r"local:(\d{1,6})(?:x(\d{1,6}))?")
_TCP = re.compile(r"(?:tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?):(\d{1,5})")


class ClusterError(ConnectionError):
    """A cluster that cannot be started or reached; the message says which and why."""


@dataclass(frozen=True)
class ClusterChoice:
    """A parsed `cluster` value: kind "local" (workers, threads per worker or None) or "scheduler"."""

    text: str
    kind: str
    workers: int | None = None
    threads: int | None = None
    address: str | None = None


def parse_cluster(text: str | None) -> ClusterChoice | None:
    """The cluster `text` asks for (None: threads in the run's process); ValueError if malformed
    or out of bounds, saying what is accepted."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"cluster must be null, 'local:N', 'local:NxT' or 'tcp://HOST:PORT', got {text!r}")
    local = _LOCAL.fullmatch(text)
    if local:
        workers = int(local.group(1))
        threads = int(local.group(2)) if local.group(2) else None
        if not 1 <= workers <= MAX_LOCAL_WORKERS:
            raise ValueError(f"cluster {text!r}: a local cluster has 1 to {MAX_LOCAL_WORKERS} workers, got {workers}")
        if threads is not None and not 1 <= threads <= max_threads():
            raise ValueError(f"cluster {text!r}: threads per worker must be from 1 to {max_threads()}, got {threads}")
        return ClusterChoice(text, "local", workers=workers, threads=threads)
    tcp = _TCP.fullmatch(text)
    if tcp:
        port = int(tcp.group(2))
        if not 1 <= port <= 65535:
            raise ValueError(f"cluster {text!r}: port must be from 1 to 65535, got {port}")
        return ClusterChoice(text, "scheduler", address=text)
    if text.startswith("local"):
        raise ValueError(f"cluster {text!r}: expected 'local:N' or 'local:NxT' (N workers, T threads each)")
    raise ValueError(f"cluster {text!r}: expected 'local:N', 'local:NxT' or a scheduler address 'tcp://HOST:PORT' "
                     "(or tls://HOST:PORT)")


@dataclass
class ClusterInfo:
    """What `connect` found: the cluster as asked, its workers, the numba threads each task uses
    (None: each worker's own cores) and the seconds spent starting or connecting."""

    cluster: str
    workers: int
    threads: int | None
    cluster_start_seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def task_threads(choice: ClusterChoice, threads: int | None) -> int | None:
    """Numba threads of each task: T of local:NxT, else the spec's threads, else for a local cluster
    the cores shared out evenly (None for a scheduler: each worker uses its own cores)."""
    if choice.threads is not None:
        return choice.threads
    if threads is not None:
        return threads
    if choice.kind == "local":
        return max(1, (os.cpu_count() or 1) // choice.workers)
    return None


def connect(choice: ClusterChoice, threads: int | None = None, *, connect_timeout: float = CONNECT_TIMEOUT,
            workers_timeout: float = WORKERS_TIMEOUT, scratch: str | None = None):
    """Start the local cluster or reach the scheduler; returns (Client, ClusterInfo). Closing the
    client stops a local cluster with it. Raises ClusterError with the address and the cause.
    scratch: the local cluster's folder, its scheduler's and its workers' (Dask's default is the
    shared $TMPDIR/dask-scratch-space: whoever made it first controls it, and the scheduler opens
    its `global.lock` there with truncation, following a planted symlink)."""
    require("distributed", "dask", f"cluster {choice.text!r}")
    import dask
    from distributed import Client

    t0 = time.monotonic()
    if choice.kind == "local":
        require("cryptography", "dask", f"cluster {choice.text!r} (its TLS certificates)")
        try:  # loopback and TLS only (security=True: Security.temporary(), shared by the client and the
            # cluster it starts); no Dask dashboard, its HTTP server on a free loopback port with no routes
            # (LOCAL_CONFIG); one Dask thread per worker process
            with dask.config.set({**LOCAL_CONFIG, **({"temporary-directory": scratch} if scratch else {})}):
                client = Client(n_workers=choice.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                security=True, dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
                                silence_logs=40, local_directory=scratch)
        except Exception as exc:
            raise ClusterError(f"could not start a local cluster of {choice.workers} workers: {exc}") from None
    else:
        try:
            client = Client(choice.address, timeout=f"{connect_timeout}s")
        except Exception as exc:
            hint = (" (a tls:// scheduler needs Dask's TLS configuration: distributed.comm.tls.ca-file and "
                    "distributed.comm.tls.client.cert/key)") if choice.address.startswith("tls://") else ""
            raise ClusterError(f"cannot reach the Dask scheduler at {choice.address} "
                               f"(within {connect_timeout:g} s): {type(exc).__name__}: {exc}{hint}") from None
    try:
        client.wait_for_workers(choice.workers or 1, timeout=workers_timeout)
    except Exception:
        client.close()
        raise ClusterError(f"the Dask scheduler at {choice.address or choice.text} has no workers after "
                           f"{workers_timeout:g} s; start some with `dask worker {choice.address or ''} --nthreads 1`") from None
    from .worker_setup import ImportSolvers

    try:  # the solvers imported on every worker now (cluster_start_seconds), not in the first tasks
        client.register_plugin(ImportSolvers())
    except Exception as exc:
        client.close()
        raise ClusterError(f"the Dask workers at {choice.address or choice.text} cannot import xcviz's solvers "
                           f"(is xcviz installed where they run?): {type(exc).__name__}: {exc}") from None
    n_workers = len(worker_addresses(client))
    info = ClusterInfo(choice.text, n_workers, task_threads(choice, threads), round(time.monotonic() - t0, 4))
    return client, info


def remove_stale_scratch(parent: str | os.PathLike) -> list[Path]:
    """Remove the `xcviz-dask-PID-*` folders in `parent` that are this user's own real folders
    (no symlinks) and whose process PID is gone: a driver killed with -9 never removes its
    scratch. Returns the folders removed."""
    removed = []
    for folder in Path(parent).glob(f"{SCRATCH_PREFIX}*"):
        match = _SCRATCH.fullmatch(folder.name)
        try:
            st = folder.lstat()
        except OSError:
            continue
        if match and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not pid_exists(int(match.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@contextmanager
def cluster_client(text: str | None, threads: int | None = None,
                   scratch_in: str | os.PathLike | None = None) -> Iterator[tuple[object, ClusterInfo] | None]:
    """`connect` for a `with` block: yields (Client, ClusterInfo), or None for threads (text None);
    the client (and a local cluster) is closed on the way out. A local cluster's scratch is an
    owner-only folder `xcviz-dask-PID-*` made in `scratch_in` (a background run's own folder;
    default the temporary folder) and removed with the cluster; those left there by killed drivers
    are removed first."""
    choice = parse_cluster(text)
    if choice is None:
        yield None
        return
    parent = tempfile.gettempdir() if scratch_in is None else os.fspath(scratch_in)
    remove_stale_scratch(parent)
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=parent,
                                     ignore_cleanup_errors=True) as scratch:
        client, info = connect(choice, threads, scratch=scratch)
        try:
            yield client, info
        finally:
            client.close()


def worker_addresses(client) -> list[str]:
    """The addresses of the cluster's workers, sorted, asked of the scheduler. Not
    `client.scheduler_info()["workers"]`: that returns the client's cached identity, which the
    client's periodic refresh (every 2 s, cluster totals only, no workers) can overwrite between
    the fresh fetch and the read, so it sometimes lists no workers at all (distributed 2026.8)."""
    return sorted(client.sync(client.scheduler.identity, n_workers=-1)["workers"])
