"""The files a run reads: which they are, whether they lie inside the data folders a run is
confined to, and fingerprints that tell whether they changed since the run was launched.

A run launched from the dashboard is confined to the server's data folders: every file it reads
(training file, test file) must resolve, symlinks followed, to a path inside one of them, checked
at launch and again by the worker each time it starts (launch and resume). Errors name the file as
given and the problem, never what a link points to or what the file holds. Such a run may train on
threads, on a local cluster, or on one of the Dask schedulers the server was started with
(`xcviz serve --allow-scheduler`): a scheduler sends results back to the run's process, which
unpickles them, so an address a page's user chose would let that user's scheduler run code there.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..data.shards import is_sharded
from ..data.source import data_files
from .._util.regular_file import open_regular
from ..compute.cluster import parse_cluster
from .spec import RunSpec

FULL_HASH_BYTES = 64 * 2**20  # files up to this size are hashed whole (about 0.1 s)
_SAMPLE = 2**16
_SAMPLES = 64


class InputError(ValueError):
    """A run's input that may not be read (outside the data folders) or changed since launch."""


def input_files(spec: RunSpec) -> tuple[list[Path], list[Path]]:
    """The files the run reads: the bundled data's (which every run may read) and the user's own
    (confined to a page's data folders). A bundled name may take the user's test file; a sharded
    folder reads its manifest (first), its parts and its test split."""
    return data_files(spec.dataset, spec.test)


def confined(files: list[Path], folders: list[str | os.PathLike]) -> list[Path]:
    """The files, each resolved (links followed), if every one lies inside one of `folders`;
    InputError naming the first that does not."""
    roots = [Path(f).resolve() for f in folders]
    out = []
    for file in files:
        real = file.resolve()
        if not any(real.is_relative_to(root) for root in roots):
            raise InputError(f"{file}: outside the data folders this server was started with")
        out.append(real)
    return out


def fingerprint(path: Path) -> dict:
    """Size, modification time and SHA-256 of a file: of all of it up to FULL_HASH_BYTES, else
    of its first and last 64 KiB and 64 blocks of 64 KiB spread evenly between."""
    try:
        digest = hashlib.sha256()
        with open_regular(path) as f:
            st = os.fstat(f.fileno())
            if st.st_size <= FULL_HASH_BYTES:
                for block in iter(lambda: f.read(2**20), b""):
                    digest.update(block)
                whole = True
            else:
                step = (st.st_size - _SAMPLE) // (_SAMPLES + 1)
                for k in range(_SAMPLES + 2):
                    f.seek(min(k * step, st.st_size - _SAMPLE))
                    digest.update(f.read(_SAMPLE))
                whole = False
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest.hexdigest(), "whole": whole}


def allowed_cluster(cluster: str | None, schedulers: list[str]) -> None:
    """InputError unless a confined run's `cluster` is none, a local cluster or one of `schedulers`."""
    if cluster is not None and parse_cluster(cluster).kind != "local" and cluster not in schedulers:
        raise InputError(f"the Dask scheduler {cluster[:100]!r} is not one this server was started with "
                         f"(xcviz serve --allow-scheduler): a scheduler can run code in the run's process")


def record(spec: RunSpec, data_dirs: list[str | os.PathLike] | None, schedulers: list[str] = ()) -> dict:
    """What the store keeps of a run's inputs at launch: the folders it is confined to (None: not
    confined, a local user's own launch), the schedulers it may use then, and each file's
    fingerprint. Refuses a file outside, or a scheduler not among `schedulers`."""
    bundled, own = input_files(spec)
    if data_dirs is not None:
        allowed_cluster(spec.cluster, list(schedulers))
        confined(own, data_dirs)
    files = bundled + own
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise InputError(f"{missing[0]}: no such file")
    return {"confined": None if data_dirs is None else [str(Path(d).resolve()) for d in data_dirs],
            "schedulers": None if data_dirs is None else list(schedulers),
            "files": {str(f): fingerprint(f) for f in files}}


def unchanged(recorded: dict, after_reading: bool = False) -> None:
    """InputError naming the first input file that is gone or whose fingerprint differs from the
    one recorded at launch. Called before the run reads its inputs, and again once it has read them
    (`after_reading`): a file rewritten while it was read gave a model of the new file or of a mixture
    of both (a LIBSVM file has no header whose row count would betray it, as an XC file's does)."""
    for given, then in (recorded.get("files") or {}).items():
        now = fingerprint(Path(given)) if Path(given).exists() else None
        if now is None:
            raise InputError(f"{given}: the input of this run is gone")
        same = now["size"] == then["size"] and now["sha256"] == then["sha256"]
        if not then.get("whole"):
            same = same and now["mtime_ns"] == then["mtime_ns"]
        if same:
            continue
        if after_reading:
            raise InputError(f"{given}: changed while the run read it; what was read may mix two versions "
                             f"of the file (launch a new run once it is written)")
        raise InputError(f"{given}: changed since the run was launched; resuming would mix models "
                         f"of two data sets (launch a new run instead)")


def check(spec: RunSpec, recorded: dict, schedulers: list[str] | None = None) -> tuple[str, str | None]:
    """Before a run reads its inputs (at launch and at every resume): each still inside the
    folders recorded at launch and unchanged since. Returns what to read, as `registry.resolve`
    takes it: the bundled name, or the training and test paths (resolved when confined, so that
    the file checked is the file read). InputError names the file otherwise, or a confined run's Dask
    scheduler that was not allowed at launch or is not among `schedulers` (the resuming server's)."""
    bundled, files = input_files(spec)
    folders = recorded.get("confined")
    if folders is not None:  # allowed at launch, and by the server resuming it (`schedulers`) if it says
        allowed_cluster(spec.cluster, recorded.get("schedulers") or [])
        if schedulers is not None:
            allowed_cluster(spec.cluster, schedulers)
    if folders is not None:
        files = confined(files, folders)
    unchanged(recorded)
    if bundled:
        return spec.dataset, str(files[0]) if files else None
    if is_sharded(spec.dataset):  # the folder (files[0] is its manifest); its own test split unless --test
        return str(files[0].parent), str(files[-1]) if spec.test is not None else None
    return str(files[0]), str(files[1]) if len(files) > 1 else None
