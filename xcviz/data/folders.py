"""The data folders: where a user's own files live, for every entry point alike.

The folders are those given with `--data-dir` followed by those of `XCVIZ_DATA_DIRS` (separated
by the system's path separator, `:` on Linux). `xcviz serve`, `make dashboard`, `python
apps/dashboard.py`, a bare `panel serve apps/dashboard.py` and the CLI's data lookup read them
through `data_dirs`, so the variable means the same everywhere (it was read by the bare app only).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

DATA_DIRS_ENV = "XCVIZ_DATA_DIRS"


def data_dirs(given: list[str] | tuple[str, ...] = (), environ: Mapping[str, str] | None = None) -> list[str]:
    """The data folders: `given` first, then those of $XCVIZ_DATA_DIRS, each once, empty parts left out."""
    environ = os.environ if environ is None else environ
    listed = [*given, *environ.get(DATA_DIRS_ENV, "").split(os.pathsep)]
    return list(dict.fromkeys(d for d in listed if d))


def find_training_file(name: str, folders: list[str]) -> str | None:
    """The file a bare name means in the data folders: `NAME` itself or `NAME_train.txt` (plain,
    `.gz` or `.xz`) in the first folder that has one; None when no folder does. A name with a path
    separator or `..` is never looked up (it would leave the folders)."""
    if not name or os.sep in name or (os.altsep and os.altsep in name) or name in (".", ".."):
        return None
    for folder in folders:
        for candidate in (name, f"{name}_train.txt", f"{name}_train.txt.gz", f"{name}_train.txt.xz"):
            path = Path(folder) / candidate
            if path.is_file():
                return str(path)
    return None
