"""Run numba parallel kernels on a chosen number of threads."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numba


def max_threads() -> int:
    """The most threads numba can use here (all cores unless NUMBA_NUM_THREADS says otherwise)."""
    return numba.config.NUMBA_NUM_THREADS


def thread_count(threads: int | None) -> int:
    """The threads a `threads` setting means: None = all (max_threads)."""
    return max_threads() if threads is None else int(threads)


@contextmanager
def using_threads(threads: int | None) -> Iterator[int]:
    """Set numba's thread count for the block (None = all); yields the count actually used."""
    count = thread_count(threads)
    if not 1 <= count <= max_threads():
        raise ValueError(f"threads must be between 1 and {max_threads()}, got {threads}")
    previous = numba.get_num_threads()
    numba.set_num_threads(count)
    try:
        yield count
    finally:
        numba.set_num_threads(previous)
