"""A run's last word when its store cannot take it: `failure.txt` in the run's folder, written
whole (NOTE_BYTES of blanks) when the worker starts, so that a disk that fills or a store made
read-only under the run still leaves the reason the run stopped. Overwriting blocks already
written needs no new space, and the descriptor opened at the start still writes after the folder
is made read-only. The store shows the note as the run's error (runs whose worker is gone)."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .._util.regular_file import open_regular

NOTE_NAME = "failure.txt"
NOTE_BYTES = 4096


class FailureNote:
    """The reserved note of one run: `write(text)` puts the reason into the space reserved at
    construction, `discard()` removes it once the store has recorded the run's end."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / NOTE_NAME
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.pwrite(self._fd, b" " * NOTE_BYTES, 0)
        os.fsync(self._fd)

    def write(self, text: str) -> None:
        """The reason, cut to the space reserved (at a character boundary), blanks after it."""
        data = text.encode("utf-8")[:NOTE_BYTES].decode("utf-8", "ignore").encode("utf-8")
        os.pwrite(self._fd, data.ljust(NOTE_BYTES), 0)
        os.fsync(self._fd)

    def discard(self) -> None:
        """Close and remove the note; one left behind is harmless (read only for runs whose worker
        died while `running`), so a failed removal does not fail the run."""
        os.close(self._fd)
        with contextlib.suppress(OSError):
            self.path.unlink()

    def close(self) -> None:
        os.close(self._fd)


def read_note(folder: Path) -> str | None:
    """A run's note, if its worker left one (its first NOTE_BYTES, a regular file only); None when
    there is none or it is blank."""
    try:
        with open_regular(folder / NOTE_NAME) as f:
            text = f.read(NOTE_BYTES).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return text or None
