"""D and L that a data set's rows can use. A header, a manifest or a lone index can declare sizes
far beyond what the rows hold (a 4-row file with D = 10^8, a shard folder with L = 5 x 10^6): every
solver would then allocate for sizes the data never reaches. Such sizes are refused before training,
naming the file and the sizes: for a training file, a sharded folder's parts, and a LIBSVM test file
whose indices or unseen labels would widen the training set."""
from __future__ import annotations

from .errors import DatasetFormatError

SPARSE_SLACK = 16  # a data set may declare up to this many times more D (or L) than its body holds
SMALL_SIZE = 2**20  # ... and any D or L up to this (a dense row of it is 8 MiB)


def refuse_unused_sizes(path: str, rows: int, sizes: dict[str, tuple[int, int]], whose: str = "the file's") -> None:
    """DatasetFormatError naming `path` when a size ("D" or "L": (size, entries that use it)) exceeds
    what `rows` rows holding `entries` entries can use: SPARSE_SLACK times their entries and rows, at
    least SMALL_SIZE."""
    for what, (size, entries) in sizes.items():
        if size > max(SMALL_SIZE, SPARSE_SLACK * (entries + rows)):
            raise DatasetFormatError(path, None, f"{what} = {size}, but {whose} {rows} rows hold only {entries} "
                                     f"entries: refused (training would allocate for {size} "
                                     f"{'features' if what == 'D' else 'labels'})")
