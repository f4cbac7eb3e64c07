"""Open a file a user named for reading only when it is a regular file, without ever blocking.

A plain open() of a named pipe (FIFO) waits until something writes to it: a data file, manifest or
model swapped for a pipe would freeze the dashboard's server thread or a worker that no signal
then stops. Opening with O_NONBLOCK returns at once whatever the path is, and fstat on the open
descriptor (not a stat of the path before it, which a rename could outrun) decides."""
from __future__ import annotations

import os
import stat
from typing import BinaryIO

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotARegularFile(OSError):
    """The path is a pipe, a device, a socket or a folder."""

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__(f"not a regular file (a device, a pipe or a folder): {os.fspath(path)}")
        self.strerror = "not a regular file (a device, a pipe or a folder)"


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """The file opened for binary reading (blocking reads, as usual), or NotARegularFile; any
    other OSError (missing, no permission) as open() raises it."""
    fd = os.open(path, _FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotARegularFile(path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_text(path: str | os.PathLike, encoding: str = "utf-8") -> str:
    """The whole text of a regular file (see open_regular)."""
    with open_regular(path) as f:
        return f.read().decode(encoding)
