"""Whole-or-nothing file writes: the one helper every xcviz writer of a stored file uses.

The content goes to a temporary file in the target's own folder (so the rename stays on one file
system and is atomic), is flushed and fsynced, renamed over the target with os.replace, and the
folder is fsynced so the rename itself survives a power cut. A reader therefore sees the previous
file or the new one, whole, never a torn one, even when the writing process is killed (SIGKILL)
midway. On any failure, KeyboardInterrupt included, the temporary file is removed and the
original exception propagates unchanged.

A leaf module: it imports nothing from xcviz, so xcviz.engine (kernel loading) can use it too.
(Not to be confused with xcviz/engine/atomic.py, an LLVM fetch-and-add for numba kernels.)
"""
from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import BinaryIO

Content = bytes | Callable[[BinaryIO], object]

TEMP_SUFFIX = ".tmp"
STALE_SECONDS = 3600  # a temporary file this old is a killed writer's: no live write takes an hour


def write_atomic(path: str | os.PathLike, content: Content, *, mode: int | None = None) -> None:
    """Replace `path` by `content` whole or not at all.

    content: the bytes to write, or a callable that writes them into the binary file object it is
    given (np.savez, pickle.dump, ...). mode: the new file's permission bits; None keeps the
    temporary file's owner-only 0o600. The temporary file is `.<name>.<random>.tmp` beside `path`;
    those of earlier writers of `path` killed midway (SIGKILL leaves them) are removed once an hour old.
    """
    write_all_atomic({path: content}, mode=mode)


def write_all_atomic(files: Mapping[str | os.PathLike, Content], *, mode: int | None = None) -> None:
    """Replace each of `files` ({path: content}, as `write_atomic` takes them) whole, and none of
    them unless every content was written: all are written to their temporary files first (a
    callable content streams into its file), then renamed over their targets."""
    written: list[tuple[str, str]] = []
    try:
        for path, content in files.items():
            path = os.fspath(path)
            folder, name = os.path.split(path)
            folder = folder or os.curdir
            _remove_stale(folder, name)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=TEMP_SUFFIX)
            written.append((tmp, path))
            with open(fd, "wb") as f:
                if callable(content):
                    content(f)
                else:
                    f.write(content)
                f.flush()
                os.fsync(f.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
        for tmp, path in written:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in written:  # those renamed already are gone: nothing to remove
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    for folder in sorted({os.path.dirname(os.fspath(p)) or os.curdir for p in files}):
        _fsync_folder(folder)


def sync_files(paths) -> None:
    """fsync files written by other means (then their folders once each), before a write_atomic
    that refers to them: after a power cut, a manifest written last then names only whole files."""
    folders = set()
    for path in paths:
        path = os.fspath(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        folders.add(os.path.dirname(path) or os.curdir)
    for folder in sorted(folders):
        _fsync_folder(folder)


def _remove_stale(folder: str, name: str) -> None:
    """Remove the temporary files `.<name>.*.tmp` in `folder` older than STALE_SECONDS (left by
    writers of the same file that were killed); younger ones may belong to a write in progress."""
    prefix, now = f".{name}.", time.time()
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(TEMP_SUFFIX):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > STALE_SECONDS:
                        os.unlink(entry.path)


def _fsync_folder(folder: str) -> None:
    """Make a rename in `folder` durable, where the platform and the file system can (POSIX;
    some file systems refuse to fsync a folder, which leaves the rename done but not yet synced)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)
