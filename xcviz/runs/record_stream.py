"""A run's records of one kind as CSV and JSON, streamed from the store in chunks of a fixed
number of rows: an export of a run of ten million records holds one chunk (and the stored batch
being cut) in memory, never the run.

The files are byte for byte what one DataFrame of all the records wrote (`store.records(...)`
then `to_csv(index=False)` / `to_json(orient="records")`, the export before): when the run's
batches differ in columns or dtypes (a run resumed by another version), every chunk is given the
columns and dtypes that one DataFrame would have had, learnt beforehand from the arrays' headers
(`RunStore.column_types`), so an integer column that some batch lacks is written as floats
everywhere, as pandas' concatenation made it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

import numpy as np
import pandas as pd

from .store import RunStore

CHUNK_ROWS = 50_000  # rows per chunk: about 5 MB of records, a few ms of CSV formatting each


def _shape(types: list[dict[str, np.dtype]]) -> pd.Series | None:
    """The dtypes, by column, of one DataFrame of batches of these column types (None: one kind
    of batch only, which needs no change)."""
    if len(types) < 2:
        return None
    return pd.concat([pd.DataFrame({c: np.zeros(1, t) for c, t in kind.items()}) for kind in types]).dtypes


def chunks(store: RunStore, run: str, kind: str, rows: int | None = None) -> Iterator[pd.DataFrame]:
    """The run's records of `kind`, in order, as DataFrames of `rows` rows (CHUNK_ROWS by default;
    the last one fewer), read from the store as they are consumed."""
    rows = CHUNK_ROWS if rows is None else rows
    if rows < 1:
        raise ValueError(f"chunks of at least one row, got {rows}")
    dtypes = _shape(store.column_types(run, kind))

    def shaped(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.reset_index(drop=True)
        return frame if dtypes is None else frame.reindex(columns=dtypes.index).astype(dtypes.to_dict())

    pending: list[pd.DataFrame] = []
    held = 0
    for batch in store.stored_batches(run, kind):
        pending.append(batch)
        held += len(batch)
        while held >= rows:
            frame = pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0]
            yield shaped(frame.iloc[:rows])
            rest = frame.iloc[rows:]
            pending, held = ([rest] if len(rest) else []), len(rest)
    if held:
        yield shaped(pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0])


def write_csv(frames: Iterable[pd.DataFrame], out: BinaryIO) -> None:
    """The frames as one CSV file (the header once), written as each frame comes."""
    first = True
    for frame in frames:
        out.write(frame.to_csv(index=False, header=first).encode("utf-8"))
        first = False
    if first:  # no records: what an empty DataFrame writes
        out.write(pd.DataFrame().to_csv(index=False).encode("utf-8"))


def write_json(frames: Iterable[pd.DataFrame], out: BinaryIO) -> None:
    """The frames as one JSON array of records, written as each frame comes."""
    out.write(b"[")
    first = True
    for frame in frames:
        inner = frame.to_json(orient="records")[1:-1]
        if inner:
            out.write((inner if first else "," + inner).encode("utf-8"))
            first = False
    out.write(b"]")
