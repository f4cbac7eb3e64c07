"""Whether a process exists, asked of the kernel (for owners of runs and of scratch folders)."""
from __future__ import annotations

import os


def pid_exists(pid: int) -> bool:
    """Whether a process `pid` exists; another user's counts (it is not ours to judge it gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
