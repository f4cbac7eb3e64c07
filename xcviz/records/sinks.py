"""Record sinks: where a solver's records go.

The record protocol (docs/records.md and GUIDE section 2): a solver calls `begin(meta)` once, then
`write(kind, columns)` with whole blocks of records as equal-length numpy columns, then
`end(summary)`. Kinds: "iteration" (one row per solver iteration of a label) and "label" (one row
per finished label). Batching by block keeps recording nearly free and works the same from a
thread, a background process or a remote worker.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:  # pandas is imported where frames are built: `xcviz train` without records never needs it
    import pandas as pd


class Recorder(Protocol):
    """What a solver needs from a sink."""

    def begin(self, meta: dict) -> None: ...

    def write(self, kind: str, columns: dict[str, np.ndarray]) -> None: ...

    def end(self, summary: dict) -> None: ...


class NullSink:
    """Accepts records and drops them (recording on, nothing kept)."""

    def begin(self, meta: dict) -> None:
        pass

    def write(self, kind: str, columns: dict[str, np.ndarray]) -> None:
        pass

    def end(self, summary: dict) -> None:
        pass


class MemorySink:
    """Keeps every record in memory; `frame(kind)` returns them as a DataFrame."""

    def __init__(self) -> None:
        self.meta: dict = {}
        self.summary: dict = {}
        self._blocks: dict[str, list[dict[str, np.ndarray]]] = {}

    def begin(self, meta: dict) -> None:
        self.meta = dict(meta)

    def write(self, kind: str, columns: dict[str, np.ndarray]) -> None:
        self._blocks.setdefault(kind, []).append({k: np.asarray(v) for k, v in columns.items()})

    def end(self, summary: dict) -> None:
        self.summary = dict(summary)

    def count(self, kind: str) -> int:
        """How many records of `kind` it holds (without building their frame)."""
        return sum(len(next(iter(b.values()), ())) for b in self._blocks.get(kind, []))

    def last(self, kind: str, field: str):
        """The `field` of the last record of `kind` (None if there is none or it lacks the field)."""
        blocks = self._blocks.get(kind, [])
        column = blocks[-1].get(field) if blocks else None
        return None if column is None or len(column) == 0 else column[-1].item()

    def frame(self, kind: str) -> pd.DataFrame:
        import pandas as pd

        blocks = self._blocks.get(kind, [])
        if not blocks:
            return pd.DataFrame()
        return pd.concat([pd.DataFrame(b) for b in blocks], ignore_index=True)

    @property
    def iterations(self) -> pd.DataFrame:
        return self.frame("iteration")

    @property
    def labels(self) -> pd.DataFrame:
        return self.frame("label")


def _jsonable(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class JsonLinesSink:
    """Writes one JSON object per line: a "begin" line, one line per record, an "end" line.

    Every record line carries `kind` and `run`; the file is flushed after each block so that
    another process can follow it while the run trains."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh: IO[str] | None = None
        self._run = None

    def begin(self, meta: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("w", encoding="utf-8")
        self._run = meta.get("run")
        self._line({"kind": "begin", **meta})

    def write(self, kind: str, columns: dict[str, np.ndarray]) -> None:
        names = list(columns)
        cols = [np.asarray(columns[k]).tolist() for k in names]
        for row in zip(*cols):
            self._line({"kind": kind, "run": self._run, **dict(zip(names, row))}, flush=False)
        self._fh.flush()

    def end(self, summary: dict) -> None:
        self._line({"kind": "end", "run": self._run, **summary})
        self._fh.close()
        self._fh = None

    def _line(self, obj: dict, flush: bool = True) -> None:
        self._fh.write(json.dumps(_jsonable(obj), allow_nan=False) + "\n")
        if flush:
            self._fh.flush()


class TeeSink:
    """Sends every call to several sinks."""

    def __init__(self, *sinks: Recorder) -> None:
        self.sinks = sinks

    def begin(self, meta: dict) -> None:
        for s in self.sinks:
            s.begin(meta)

    def write(self, kind: str, columns: dict[str, np.ndarray]) -> None:
        for s in self.sinks:
            s.write(kind, columns)

    def end(self, summary: dict) -> None:
        for s in self.sinks:
            s.end(summary)


def read_jsonl(path: str | Path, kind: str) -> pd.DataFrame:
    """The records of one kind from a JSON-lines file, as a DataFrame."""
    import pandas as pd

    rows = []
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            if obj.get("kind") == kind:
                rows.append(obj)
    return pd.DataFrame(rows)
