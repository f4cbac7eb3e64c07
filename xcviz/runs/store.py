"""The run store: runs, their records and their trained weights in one SQLite database.

Under XCVIZ_HOME (default ./xcviz-runs): `runs.sqlite` in WAL mode (one writer per run, any number
of readers) and a folder per run for its model and log. Records are stored as batches, one row per
block of labels (the columns as an .npz blob), so writing costs one INSERT per block and readers
can follow a run by asking for the batches after the last one they saw. The weights of every
finished block are stored too: a run that dies resumes from its completed labels.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import socket
import sqlite3
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

SCHEMA_VERSION = 1
STATUSES = ("queued", "running", "done", "failed", "cancelled", "interrupted")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, name TEXT, spec TEXT NOT NULL, status TEXT NOT NULL, pid INTEGER, host TEXT,
    created REAL NOT NULL, started REAL, ended REAL, error TEXT, summary TEXT, versions TEXT,
    done INTEGER NOT NULL DEFAULT 0, total INTEGER NOT NULL DEFAULT 0, cancel INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS batches (
    run TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, payload BLOB NOT NULL, PRIMARY KEY (run, seq));
CREATE TABLE IF NOT EXISTS pieces (
    run TEXT NOT NULL, seq INTEGER NOT NULL, payload BLOB NOT NULL, PRIMARY KEY (run, seq));
"""


class StoreError(ValueError):
    """A store that cannot be used (newer schema, unknown run)."""


def _pack(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _unpack(blob: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def default_home() -> Path:
    return Path(os.environ.get("XCVIZ_HOME", "xcviz-runs"))


def _alive(pid: int | None, host: str | None) -> bool:
    if pid is None or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except OSError:
        return True


class RunStore:
    """Access to the store under `home`; every method opens its own short connection."""

    def __init__(self, home: str | os.PathLike | None = None) -> None:
        self.home = Path(home) if home is not None else default_home()
        self.home.mkdir(parents=True, exist_ok=True)
        self.path = self.home / "runs.sqlite"
        with self._connect() as db:
            db.executescript(_SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: schema version {row[0]} is newer than this xcviz ({SCHEMA_VERSION})")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.row_factory = sqlite3.Row
        return db

    def run_dir(self, run: str) -> Path:
        folder = self.home / "runs" / run
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def create(self, spec_json: str, name: str = "") -> str:
        """A new queued run; a name already taken gets a suffix (-2, -3, ...), so names address runs."""
        run = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")  # no other writer between reading the names and taking one
            taken = {r[0] for r in db.execute("SELECT name FROM runs")}
            if name in taken:
                name = next(f"{name}-{k}" for k in range(2, len(taken) + 3) if f"{name}-{k}" not in taken)
            db.execute("INSERT INTO runs (id, name, spec, status, created) VALUES (?, ?, ?, 'queued', ?)",
                       (run, name or run, spec_json, time.time()))
        return run

    def update(self, run: str, **values) -> None:
        if "status" in values and values["status"] not in STATUSES:
            raise ValueError(f"unknown status {values['status']!r}")
        for key in ("summary", "versions"):
            if key in values and not isinstance(values[key], str):
                values[key] = json.dumps(values[key])
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._connect() as db:
            db.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*values.values(), run))

    def get(self, run: str) -> dict:
        with self._connect() as db:
            row = db.execute("SELECT rowid AS number, * FROM runs WHERE id = ?", (run,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run!r} in {self.path}")
        return self._shown(dict(row))

    def find(self, ref: str) -> str:
        """The id of the run `ref` names: its id, its name, or a prefix of exactly one id."""
        with self._connect() as db:
            rows = db.execute("SELECT id, name FROM runs").fetchall()
        for key in ("id", "name"):
            exact = [r["id"] for r in rows if r[key] == ref]
            if exact:
                return exact[0]
        matches = [r["id"] for r in rows if ref and r["id"].startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise StoreError(f"{ref!r} is the start of {len(matches)} run ids ({', '.join(matches[:5])}): give more of it")
        raise StoreError(f"no run with id, name or id prefix {ref!r} in {self.path} (`xcviz runs` lists them)")

    def list(self) -> list[dict]:
        with self._connect() as db:
            rows = db.execute("SELECT rowid AS number, * FROM runs ORDER BY created").fetchall()
        return [self._shown(dict(r)) for r in rows]

    def _shown(self, row: dict) -> dict:
        """A run as users see it: a running or queued run whose process is gone is interrupted."""
        if row["status"] in ("running", "queued") and row["pid"] is not None and not _alive(row["pid"], row["host"]):
            row["status"] = "interrupted"
        for key in ("summary", "versions"):
            row[key] = json.loads(row[key]) if row[key] else {}
        return row

    def request_cancel(self, run: str) -> None:
        self.get(run)
        self.update(run, cancel=1)

    def cancel_requested(self, run: str) -> bool:
        with self._connect() as db:
            return bool(db.execute("SELECT cancel FROM runs WHERE id = ?", (run,)).fetchone()[0])

    def append_batch(self, run: str, kind: str, columns: dict[str, np.ndarray]) -> None:
        with self._connect() as db:
            db.execute("INSERT INTO batches (run, seq, kind, payload) VALUES "
                       "(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM batches WHERE run = ?), ?, ?)",
                       (run, run, kind, _pack(columns)))

    def records(self, run: str, kind: str, after: int = 0) -> tuple[pd.DataFrame, int]:
        """The records of one kind in batches after `after`, and the last batch number seen."""
        with self._connect() as db:
            rows = db.execute("SELECT seq, payload FROM batches WHERE run = ? AND kind = ? AND seq > ? ORDER BY seq",
                              (run, kind, after)).fetchall()
        if not rows:
            return pd.DataFrame(), after
        return pd.concat([pd.DataFrame(_unpack(r["payload"])) for r in rows], ignore_index=True), rows[-1]["seq"]

    def clear_records(self, run: str) -> None:
        """Drop a run's records (a multiclass run that starts again writes them anew). A `reset`
        batch takes their place in the same transaction, so batch numbers keep growing and a reader
        that has seen the old records learns that they are gone."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM batches WHERE run = ?", (run,)).fetchone()[0]
            db.execute("DELETE FROM batches WHERE run = ?", (run,))
            db.execute("INSERT INTO batches (run, seq, kind, payload) VALUES (?, ?, 'reset', ?)",
                       (run, last + 1, _pack({"dropped_through": np.array([last])})))
            db.execute("COMMIT")

    def add_piece(self, run: str, labels: np.ndarray, weights: sp.csr_matrix, bias_weights: np.ndarray) -> None:
        payload = _pack({"labels": labels, "indptr": weights.indptr, "indices": weights.indices,
                         "data": weights.data, "bias": bias_weights, "shape": np.array(weights.shape)})
        with self._connect() as db:
            db.execute("INSERT INTO pieces (run, seq, payload) VALUES "
                       "(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM pieces WHERE run = ?), ?)", (run, run, payload))

    def pieces(self, run: str) -> list[tuple[np.ndarray, sp.csr_matrix, np.ndarray]]:
        with self._connect() as db:
            rows = db.execute("SELECT payload FROM pieces WHERE run = ? ORDER BY seq", (run,)).fetchall()
        out = []
        for r in rows:
            z = _unpack(r["payload"])
            out.append((z["labels"], sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])),
                        z["bias"]))
        return out

    def delete(self, run: str) -> None:
        """Remove a run for good: its row, records, stored weights and its folder (model, log).
        A run whose process is still training is refused: cancel it first."""
        row = self.get(run)
        if row["status"] in ("running", "queued") and row["pid"] is not None:
            raise StoreError(f"run {run} is {row['status']}: cancel it before deleting it")
        with self._connect() as db:
            for table, key in (("batches", "run"), ("pieces", "run"), ("runs", "id")):
                db.execute(f"DELETE FROM {table} WHERE {key} = ?", (run,))
        shutil.rmtree(self.home / "runs" / run, ignore_errors=True)


class SqliteSink:
    """Record sink writing each block of records as one batch of the run in the store."""

    def __init__(self, store: RunStore, run: str) -> None:
        self.store, self.run = store, run

    def begin(self, meta: dict) -> None:
        """Sets the run's label count, and keeps the problem's sizes as a `begin` record (readers
        need the number of training rows to show the active set as a fraction)."""
        self.store.update(self.run, total=int(meta.get("n_labels", 0)))
        sizes = {k: np.array([int(meta[k])]) for k in ("n", "n_features", "n_labels", "threads") if k in meta}
        if sizes:
            self.store.append_batch(self.run, "begin", sizes)

    def write(self, kind: str, columns: dict[str, np.ndarray]) -> None:
        self.store.append_batch(self.run, kind, {k: np.asarray(v) for k, v in columns.items()})

    def end(self, summary: dict) -> None:
        pass
