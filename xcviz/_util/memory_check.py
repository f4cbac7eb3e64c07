"""Refuse what cannot fit. A solver that keeps a dense model (DS-MLR's K x D weights), and `xcviz
generate` before it draws a data set, check their estimate against the memory this machine, or its
control group, has available before they allocate anything: a run on a shared machine then fails
at once, with the sizes, instead of swapping or waking the kernel's OOM killer for whatever process
it picks."""
from __future__ import annotations

from pathlib import Path

GIB = 2**30


def _meminfo_available(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable in bytes (memory that can be allocated without swapping), None if unknown."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom(proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """memory.max less memory.current of this process's cgroup (v2), None when there is no limit."""
    try:
        lines = [line for line in proc_cgroup.read_text().splitlines() if line.startswith("0::")]
        folder = root / lines[0][3:].lstrip("/") if lines else root
        limit = (folder / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((folder / "memory.current").read_text().strip()))
    except (OSError, ValueError):
        return None


def available_bytes() -> int | None:
    """The memory a new allocation can take: /proc/meminfo's MemAvailable, or the cgroup's headroom
    when that is lower; None where neither can be read (not Linux)."""
    known = [b for b in (_meminfo_available(), _cgroup_headroom()) if b is not None]
    return min(known) if known else None


def check_fits(what: str, need: float, advice: str) -> None:
    """ValueError naming `what`, its `need` in bytes and the memory available, when it exceeds it."""
    available = available_bytes()
    if available is not None and need > available:
        raise ValueError(f"{what} needs about {need / GIB:.1f} GiB, more than the {available / GIB:.1f} GiB this "
                         f"machine has available; {advice}")
