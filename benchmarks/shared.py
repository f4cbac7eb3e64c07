"""What the benchmarks find beside the repository in `../shared` (or $XCVIZ_SHARED): peers' sources and
the real data set debian-tags, in one place so every benchmark reads them the same way; and the
machine's load as every section quotes it.

debian-tags (`../shared/data/debian-tags`, see its SOURCE.md) is real multi-label data, 20,068 x 24,219
with 560 labels, too large to bundle; a benchmark that uses it skips it, saying so, where it is absent.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEBIAN_NAME = "debian-tags"


def shared_dir() -> Path:
    """The shared folder: $XCVIZ_SHARED, else `shared` beside the repository."""
    return Path(os.environ.get("XCVIZ_SHARED", ROOT.parent / "shared"))


def debian_files() -> tuple[Path, Path] | None:
    """debian-tags' (train, test) files (gzip XC text), or None where the shared data is absent."""
    folder = shared_dir() / "data" / DEBIAN_NAME
    train, test = (folder / f"{DEBIAN_NAME}_{split}.txt.gz" for split in ("train", "test"))
    return (train, test) if train.exists() and test.exists() else None


def load_debian():
    """debian-tags' (train, test) Datasets, or None where the shared data is absent."""
    from xcviz.data.registry import load_files

    files = debian_files()
    return None if files is None else load_files(*files)


def load_average() -> str:
    """The 1, 5 and 15-minute load averages as a section quotes them ("1.2 / 0.9 / 0.7"): on 2 cores,
    above about 2 other jobs shared the machine with the measurement."""
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())
