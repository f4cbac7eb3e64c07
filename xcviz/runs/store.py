"""The run store: runs, their records and their trained weights in one SQLite database.

Under XCVIZ_HOME (default ./xcviz-runs): `runs.sqlite` in WAL mode (one writer per run, any number
of readers) and a folder per run for its model and log. Records are stored as batches, one row per
block of labels (the columns as an .npz blob), so writing costs one INSERT per block and readers
can follow a run by asking for the batches after the last one they saw. The weights of every
finished block are stored too, in the same transaction as its records: a run that dies resumes
from its completed labels, each recorded once.

A run has one owner at a time: the process named by (host, pid, start time of that pid), which
makes liveness exact even when the system reuses a pid, and a claim token. Launching or resuming
claims the run in one transaction that checks its status; the worker then takes the run only with
that token, and writes a block only while it still holds it. Every SQLite failure (a missing,
truncated, locked or read-only store) is raised as one `StoreError` naming the store.

The store is private: its folder is made 0700 and `runs.sqlite` 0600 (SQLite gives its -wal and
-shm files the database's mode). A store folder or database that another user owns, that group or
others may write, or that is a link made by another user is refused when the store is opened:
whoever can write the store decides what a run does (a trigger can point its `cluster` at a Dask
scheduler of theirs, which runs code as the user). A store of this user that others may only read
(made by an older xcviz) has the group and other bits taken away on open.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import sqlite3
import stat
import threading
import time
import uuid
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._util.processes import pid_exists
from .._util.text import printable
from .derived import per_label_fields
from .failure_note import read_note
from .sketch import Summary

SCHEMA_VERSION = 3
STATUSES = ("queued", "running", "done", "failed", "cancelled", "interrupted")
RESUMABLE = ("interrupted", "cancelled", "failed")
# hands a worker its claim's token: every local user reads a process's arguments, not its environment
CLAIM_VARIABLE = "XCVIZ_CLAIM"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, name TEXT, spec TEXT NOT NULL, status TEXT NOT NULL, pid INTEGER, host TEXT,
    created REAL NOT NULL, started REAL, ended REAL, error TEXT, summary TEXT, versions TEXT,
    done INTEGER NOT NULL DEFAULT 0, total INTEGER NOT NULL DEFAULT 0, cancel INTEGER NOT NULL DEFAULT 0,
    pid_start INTEGER, claim TEXT, inputs TEXT);
CREATE TABLE IF NOT EXISTS batches (
    run TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, payload BLOB NOT NULL, PRIMARY KEY (run, seq));
CREATE TABLE IF NOT EXISTS summaries (
    run TEXT NOT NULL, kind TEXT NOT NULL, level INTEGER NOT NULL, seq INTEGER NOT NULL, payload BLOB NOT NULL,
    PRIMARY KEY (run, kind, level, seq));
CREATE TABLE IF NOT EXISTS batch_labels (
    run TEXT NOT NULL, kind TEXT NOT NULL, label INTEGER NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (run, kind, label, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pieces (
    run TEXT NOT NULL, seq INTEGER NOT NULL, payload BLOB NOT NULL, PRIMARY KEY (run, seq));
"""
_ADDED_IN_2 = ("pid_start INTEGER", "claim TEXT", "inputs TEXT")
# version 3 adds the `summaries` table (made by _SCHEMA); runs recorded before have none and are read whole.
# `batch_labels` (which batches hold a label's records, one row per label of a one-vs-all batch) came
# later within version 3: a new table, which writers that predate it leave alone, so a run's index is
# used only when it covers the run (`labels_indexed`); otherwise a label is found by a scan.
SUMMARY_FANOUT = 8  # this many summaries of one level are merged into one of the next (see _add_summary)


class StoreError(ValueError):
    """A store that cannot be used (missing, unreadable, newer schema) or a run that cannot be
    acted on (unknown, owned by another process, not in a state that allows the action)."""


def _pack(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _unpack(blob: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _column_types(blob: bytes) -> dict[str, np.dtype]:
    """A packed batch's {column: dtype}, from each array's .npy header alone."""
    types = {}
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        for name in archive.namelist():
            with archive.open(name) as f:
                version = np.lib.format.read_magic(f)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                types[name.removesuffix(".npy")] = read(f)[2]
    return types


def label_rows(batches: Iterable[pd.DataFrame], label: int) -> pd.DataFrame:
    """The records of one label among these batches, in their order (empty if none holds it)."""
    parts = [b[b["label"].to_numpy() == label] for b in batches]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _begin_rows(sizes: dict[str, np.ndarray]) -> int | None:
    """The training rows a `begin` batch names (None if it names none)."""
    n = sizes.get("n", ())
    return int(n[-1]) if len(n) else None


def _rows(db: sqlite3.Connection, run: str, known: dict[str, tuple[int, int | None]]) -> int | None:
    """The run's number of training rows from its latest `begin` batch (None before it). `known`
    keeps {run: (that batch's number, its rows)}: the batch is decoded once, not for every batch
    of iteration records (np.load's fixed cost), and again only when a later `begin` replaces it."""
    row = db.execute("SELECT seq FROM batches WHERE run = ? AND kind = 'begin' ORDER BY seq DESC LIMIT 1",
                     (run,)).fetchone()
    if row is None:
        return None
    if known.get(run, (None,))[0] != row[0]:
        payload = db.execute("SELECT payload FROM batches WHERE run = ? AND seq = ?", (run, row[0])).fetchone()[0]
        known[run] = (row[0], _begin_rows(_unpack(payload)))
    return known[run][1]


def default_home() -> Path:
    return Path(os.environ.get("XCVIZ_HOME", "xcviz-runs"))


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None if no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def process_start(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat): with the
    pid it names one process for good, since a reused pid has a later start."""
    fields = _proc_stat(pid)
    return int(fields[19]) if fields else None


def owner() -> dict:
    """This process as a run's owner: host, pid and the pid's start time."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "pid_start": process_start(os.getpid())}


def alive(pid: int | None, host: str | None, start: int | None = None) -> bool:
    """Whether the owner (host, pid, start) still runs: the pid exists on this host, is no zombie,
    and (when `start` is known) started when recorded. Another host's owner counts as gone."""
    if pid is None or host != socket.gethostname():
        return False
    fields = _proc_stat(pid)
    if fields is None:
        return not Path("/proc/self/stat").exists() and pid_exists(pid)  # no /proc: ask the kernel
    if fields[0] == "Z":  # killed, not yet reaped
        return False
    return start is None or int(fields[19]) == int(start)


def _new_id() -> str:
    """A run id: the creation time to the second, then six random hex digits."""
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


EMPTY_GRACE_SECONDS = 10.0  # a store being made is empty for milliseconds; one empty for longer was cut short


def _check_private(path: Path, what: str, kind, missing_ok: bool = False,
                   tighten: bool = True) -> os.stat_result | None:
    """Refuse the store's folder or database at `path` unless this user owns it and neither its
    group nor others may write it (followed if it is a link, and the link itself must be this
    user's or root's); with `tighten`, take away the group's and others' read bits if it has them.
    Returns what was checked (None: missing and `missing_ok`). The refusal names the path as given
    and the remedy, nothing read from the file."""
    me = os.geteuid()
    try:
        link = os.lstat(path)
        info = os.stat(path)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise StoreError(f"{path}: cannot open the run store's {what} (a link to nothing?)") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot check the run store's {what} ({exc.strerror or exc})") from None
    why = ("whoever can write a run store decides what your runs do (a trigger can send a run to their own Dask "
           "scheduler, which runs code as you)")
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (me, 0):
        raise StoreError(f"{path}: the run store's {what} is a link made by another user (uid {link.st_uid}); "
                         f"refused, since {why}. Use a store of your own (--home or XCVIZ_HOME)")
    if info.st_uid != me:
        raise StoreError(f"{path}: the run store's {what} belongs to another user (uid {info.st_uid}, you are "
                         f"{me}); refused, since {why}. Use a store of your own (--home or XCVIZ_HOME)")
    if not kind(info.st_mode):
        kind_name = "folder" if kind is stat.S_ISDIR else "regular file"
        raise StoreError(f"{path}: the run store's {what} is not a {kind_name}")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022:
        raise StoreError(f"{path}: the run store's {what} may be written by its group or others (mode {mode:04o}); "
                         f"refused, since {why}. If nobody else has changed it, `chmod go-w {path}` and try again")
    if tighten and mode & 0o077:
        try:
            os.chmod(path, mode & 0o700)
        except OSError:
            pass  # a read-only file system: nobody can write it there either
    return info


def _check_parent(home: Path) -> None:
    """Refuse a store whose folder another user could rename or replace: one inside a folder that
    another user (not root) owns, or that everyone may write without the sticky bit (in /tmp,
    sticky, only the owner may rename its own entries)."""
    parent = home.absolute().parent.resolve()
    try:
        info = os.stat(parent)
    except OSError as exc:
        raise StoreError(f"{home}: cannot check the folder the run store lies in ({exc.strerror or exc})") from None
    if info.st_uid not in (os.geteuid(), 0) or (info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX):
        raise StoreError(f"{home}: the run store's folder lies in {parent}, which another user owns or anyone may "
                         f"write (mode {stat.S_IMODE(info.st_mode):04o}): they could swap the store for their own. "
                         f"Use a store in a folder of your own (--home or XCVIZ_HOME)")


RUN_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{6}")  # what _new_id makes, and the only ids a folder is made for
# a name that starts as an id does (the date, then a dash) and is also the start of another run's id
# is refused by `find` as ambiguous; shorter names ("2", "2026") are found by name, as typed
ID_SHAPED = re.compile(r"[0-9]{8}-")


class RunStore:
    """Access to the store under `home`; every method opens its own short connection.

    create=False refuses a missing store instead of making an empty one (every command that acts
    on existing runs). A store the user may not write is opened read-only: it can be listed and
    read, and writing raises StoreError. Every way in (commands, the dashboard, the worker) makes
    one of these, so every one refuses a store that is not this user's alone (_check_private)."""

    def __init__(self, home: str | os.PathLike | None = None, create: bool = True) -> None:
        self.home = Path(home) if home is not None else default_home()
        self.path = self.home / "runs.sqlite"
        if not self.path.exists() and not create:
            raise StoreError(f"{self.path}: no run store here (launch a run first, or pass --home)")
        made = False
        try:
            if create:
                self.home.parent.mkdir(parents=True, exist_ok=True)
            _check_parent(self.home)  # before making anything there
            if create and not os.path.lexists(self.home):
                os.mkdir(self.home, 0o700)
                os.chmod(self.home, 0o700)  # whatever the umask
                made = True
        except FileExistsError:
            pass  # made meanwhile by someone: checked below like any existing folder
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create the run store ({exc})") from None
        # an existing folder is tightened only if it is a store already (`--home ~` must not make ~ 0700)
        folder = _check_private(self.home, "folder", stat.S_ISDIR, tighten=made or self.path.exists())
        if create and not os.path.lexists(self.path):
            try:  # private from its first moment: never a window in which others could open it
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                try:
                    os.fchmod(fd, 0o600)
                finally:
                    os.close(fd)
            except FileExistsError:
                pass
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot create the run store ({exc})") from None
        database = _check_private(self.path, "database", stat.S_ISREG)
        wal = Path(f"{self.path}-wal")  # a WAL store's pages may all still be in its log: empty is then fine
        if (database.st_size == 0 and not (wal.exists() and wal.stat().st_size > 0)
                and not (create and time.time() - database.st_mtime < EMPTY_GRACE_SECONDS)):
            raise StoreError(f"{self.path}: empty file (0 bytes): not a run store, or one truncated; move it "
                             f"away to start a new store here")
        self._identity = (folder.st_dev, folder.st_ino, database.st_dev, database.st_ino)
        self._begin_rows: dict[str, tuple[int, int | None]] = {}  # _rows' decoded `begin` batches
        for suffix in ("-wal", "-shm", "-journal"):  # SQLite reads their pages as the database's
            _check_private(Path(f"{self.path}{suffix}"), f"{suffix[1:]} file", stat.S_ISREG, missing_ok=True)
        self.read_only = not (os.access(self.path, os.W_OK) and os.access(self.home, os.W_OK))
        if self.read_only:
            with self._db() as db:
                self._check_version(db)
            return
        self._check_whole(database.st_size)
        with self._db() as db:
            db.executescript(_SCHEMA)
        with self._transaction() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) < SCHEMA_VERSION:
                columns = {r[1] for r in db.execute("PRAGMA table_info(runs)")}
                for column in _ADDED_IN_2:
                    if column.split()[0] not in columns:
                        db.execute(f"ALTER TABLE runs ADD COLUMN {column}")
                db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            self._check_version(db)

    def _check_whole(self, size: int) -> None:
        """Refuse a store cut short (a copy or a disk that ended mid-file): SQLite reads its missing
        pages as absent rows, so it listed a run that `wait` and `resume` could not find. SQLite
        writes whole pages, so a file that ends inside one was cut. `size` is the file's, read with
        os.stat before any connection, and a size no page size divides is refused without one: the
        last connection to close checkpoints the log into the file, which rounds it up to whole
        pages (and opening the file beside SQLite would drop the process's locks on it). A cut on a
        page boundary shows when a run goes missing (_no_run)."""
        page_size = 512  # the smallest: a size no page size divides needs no connection to refuse
        if not size % page_size:
            with self._db() as db:
                page_size = db.execute("PRAGMA page_size").fetchone()[0]
        if size % page_size:
            raise StoreError(f"{self.path}: truncated: the file ends inside a page ({size} bytes, pages of "
                             f"{page_size}); move it away to start a new store here")

    def _no_run(self, what: str, hint: str = "") -> StoreError:
        """The error for a run not found: "no run", unless SQLite's own check (O(store), paid on this
        path only) finds the store damaged, whose missing pages read as missing runs."""
        try:
            with self._db() as db:
                problem = db.execute("PRAGMA quick_check(1)").fetchone()[0]
        except StoreError as exc:
            return exc
        if problem != "ok":
            return StoreError(f"{self.path}: damaged or truncated (SQLite's check: {problem[:200]}); move it away "
                              f"to start a new store here")
        return StoreError(f"no run {what} in {self.path}{hint}")

    def _check_version(self, db: sqlite3.Connection) -> None:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None and int(row[0]) > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {row[0]} is newer than this xcviz ({SCHEMA_VERSION})")

    def _check_same(self) -> None:
        """Refuse a store whose folder or database was replaced since it was checked (one gone
        passes: connecting to it fails, and says so)."""
        try:
            folder, database = os.stat(self.home), os.stat(self.path)
        except FileNotFoundError:
            return
        if (folder.st_dev, folder.st_ino, database.st_dev, database.st_ino) != self._identity:
            raise StoreError(f"{self.path}: the run store was replaced since it was opened; refused (open it again "
                             f"to have it checked)")

    def _connect(self) -> sqlite3.Connection:
        """A connection that never creates the file: a store deleted under a run is an error, not
        a new empty store; nor one whose folder or database was replaced since it was checked."""
        self._check_same()
        mode = "ro" if self.read_only else "rw"
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode={mode}", uri=True, timeout=60,
                             isolation_level=None)
        try:
            if self.read_only:
                db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            else:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error:
            db.close()
            if not self.read_only:
                raise
            # a read-only WAL store whose shared-memory file cannot be made: read it as a snapshot
            db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True,
                                 isolation_level=None)
        db.row_factory = sqlite3.Row
        return db

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A short connection; any SQLite failure becomes one StoreError naming the store."""
        try:
            db = self._connect()
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        try:
            yield db
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            db.close()

    @contextmanager
    def _on(self, db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """A connection held by the caller (`hold`), with _db's errors and _connect's checks (a held
        connection would go on writing into a store deleted or replaced under it); left open."""
        self._check_same()
        if not self.path.exists():
            raise StoreError(f"{self.path}: the run store is gone")
        try:
            yield db
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    @contextmanager
    def _transaction(self, held: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (BEGIN IMMEDIATE): what it reads no other writer
        changes before it commits; any error rolls all of it back. On `held` (a connection from
        `hold`, idle) instead of a new short one, which saves opening and closing one per write."""
        if self.read_only:
            raise StoreError(f"{self.path}: the run store is read-only here (it can be listed, not changed)")
        with self._on(held) if held is not None else self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def hold(self) -> sqlite3.Connection | None:
        """An idle connection to keep open while a run writes (close it when the run ends). SQLite
        checkpoints the write-ahead log into the store and deletes it when the last connection
        closes, so without one every short write paid a checkpoint: about half the cost of
        recording (BENCHMARKS.md, "Cost of recording"). It holds no lock: the log is still
        checkpointed as it grows. None on a read-only store."""
        if self.read_only:
            return None
        try:
            return self._connect()
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def _error(self, exc: sqlite3.Error) -> StoreError:
        if not self.path.exists():
            return StoreError(f"{self.path}: the run store is gone ({exc})")
        if isinstance(exc, sqlite3.DatabaseError) and "malformed" in str(exc):
            return StoreError(f"{self.path}: damaged or truncated (SQLite: {exc}); move it away to start a new store "
                              f"here")
        return StoreError(f"{self.path}: run store error: {exc}")

    def _folder(self, run: str) -> Path:
        """The run's folder under the store. An id not of _new_id's making (a store edited by hand
        or copied from someone else: `../../somewhere`) is refused: the path would leave the store."""
        if not RUN_ID.fullmatch(run):
            raise StoreError(f"run id {printable(run)!r} in {self.path} is not one xcviz makes; its folder would "
                             f"lie outside the store (an edited or foreign store?)")
        return self.home / "runs" / run

    def run_dir(self, run: str) -> Path:
        folder = self._folder(run)
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        return folder

    def create(self, spec_json: str, name: str = "", inputs: dict | None = None) -> str:
        """A new queued run owned by this process until its worker takes it over (a launcher that
        dies before that leaves an interrupted run, never an eternal `queued` one). A name already
        taken gets a suffix (-2, -3, ...), so names address runs. The id's random tail is drawn
        again while it is taken: hundreds of runs created in one second do meet."""
        me = owner()
        with self._transaction() as db:  # no other writer between reading the names and taking one
            rows = db.execute("SELECT id, name FROM runs").fetchall()
            ids, taken = {r[0] for r in rows}, {r[1] for r in rows}
            run = _new_id()
            while run in ids:
                run = _new_id()
            if name in taken or name in ids:  # another run's id as a name would never reach this run
                taken |= ids
                name = next(f"{name}-{k}" for k in range(2, len(taken) + 3) if f"{name}-{k}" not in taken)
            db.execute("INSERT INTO runs (id, name, spec, status, created, pid, host, pid_start, claim, inputs) "
                       "VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)",
                       (run, name or run, spec_json, time.time(), me["pid"], me["host"], me["pid_start"],
                        uuid.uuid4().hex, json.dumps(inputs or {})))
        return run

    def update(self, run: str, **values) -> None:
        """Set fields of a run's row. A new `pid` without `pid_start` names that process as it is
        now (its start time is read), so the owner stays exact."""
        if "status" in values and values["status"] not in STATUSES:
            raise ValueError(f"unknown status {values['status']!r}")
        if "pid" in values and "pid_start" not in values:
            values["pid_start"] = process_start(values["pid"]) if values["pid"] else None
        for key in ("summary", "versions", "inputs"):
            if key in values and not isinstance(values[key], str):
                values[key] = json.dumps(values[key])
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._transaction() as db:
            if db.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*values.values(), run)).rowcount != 1:
                raise self._no_run(repr(run))

    def begin_run(self, run: str, total: int, sizes: dict[str, np.ndarray],
                  held: sqlite3.Connection | None = None) -> None:
        """A run's start as its sink records it: its label count and (unless `sizes` is empty) its
        `begin` batch of problem sizes, in one transaction (on `held` as append_batch)."""
        with self._transaction(held) as db:
            if db.execute("UPDATE runs SET total = ? WHERE id = ?", (total, run)).rowcount != 1:
                raise self._no_run(repr(run))
            if sizes:
                self._insert_batch(db, run, "begin", sizes)

    def get(self, run: str) -> dict:
        with self._db() as db:
            row = db.execute("SELECT rowid AS number, * FROM runs WHERE id = ?", (run,)).fetchone()
        if row is None:
            raise self._no_run(repr(run))
        return self._shown(dict(row))

    def find(self, ref: str) -> str:
        """The id of the run `ref` names: its id, its name, or a prefix of exactly one id (a name shaped
        like an id that is also the start of another run's id is refused: it could mean either)."""
        with self._db() as db:
            rows = db.execute("SELECT id, name FROM runs").fetchall()
        matches = [r["id"] for r in rows if ref and r["id"].startswith(ref)]
        for key in ("id", "name"):
            exact = [r["id"] for r in rows if r[key] == ref]
            if key == "name" and exact and ID_SHAPED.match(ref) and set(matches) - set(exact):  # a decoy name
                raise StoreError(f"{printable(ref)!r} is a run's name and the start of another run's id "
                                 f"({', '.join(sorted(set(matches) - set(exact))[:5])}): give the whole id")
            if exact:
                return exact[0]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise StoreError(f"{ref!r} is the start of {len(matches)} run ids ({', '.join(matches[:5])}): give more of it")
        raise self._no_run(f"with id, name or id prefix {ref!r}", " (`xcviz runs` lists them)")

    def list(self) -> list[dict]:
        with self._db() as db:
            rows = db.execute("SELECT rowid AS number, * FROM runs ORDER BY created").fetchall()
        return [self._shown(dict(r)) for r in rows]

    def _shown(self, row: dict) -> dict:
        """A run as users see it: a running or queued run whose owner is gone is interrupted."""
        if row["status"] in ("running", "queued") and not alive(row["pid"], row["host"], row.get("pid_start")):
            row["status"] = "interrupted"
            note = read_note(self._folder(row["id"])) if RUN_ID.fullmatch(row["id"]) else None
            if note is not None:  # its worker failed and the store could not take the reason
                row["status"], row["error"] = "failed", note
        for key in ("summary", "versions", "inputs"):
            row[key] = json.loads(row[key]) if row.get(key) else {}
        return row

    def claim(self, run: str, allowed: tuple[str, ...] = RESUMABLE) -> str:
        """Make this process the owner of `run` if its status (as users see it) is one of
        `allowed`, in one transaction: of several processes claiming at once, one wins and the
        others get StoreError. The run becomes `queued`; returns the new claim token."""
        token = uuid.uuid4().hex
        me = owner()
        with self._transaction() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run,)).fetchone()
            if row is None:
                raise self._no_run(repr(run))
            status = self._shown(dict(row))["status"]
            if status not in allowed:
                raise StoreError(f"run {run} is {status}; only {', '.join(allowed)} runs can be resumed")
            db.execute("UPDATE runs SET status = 'queued', cancel = 0, pid = ?, host = ?, pid_start = ?, claim = ? "
                       "WHERE id = ?", (me["pid"], me["host"], me["pid_start"], token, run))
        return token

    def hand_over(self, run: str, token: str, pid: int, start: int | None) -> None:
        """The launcher names the worker it started as the owner (if the claim is still its own)."""
        with self._transaction() as db:
            db.execute("UPDATE runs SET pid = ?, pid_start = ?, host = ? WHERE id = ? AND claim = ?",
                       (pid, start, socket.gethostname(), run, token))

    def take(self, run: str, token: str, **values) -> bool:
        """The worker takes its run: only with the token of the claim that started it, and only
        while the run is still queued for it. False: another process owns the run now."""
        me = owner()
        values = {"status": "running", **me, **values}
        for key in ("summary", "versions"):
            if key in values and not isinstance(values[key], str):
                values[key] = json.dumps(values[key])
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._transaction() as db:
            cur = db.execute(f"UPDATE runs SET {sets} WHERE id = ? AND claim = ? AND status = 'queued'",
                             (*values.values(), run, token))
            return cur.rowcount == 1

    def token(self, run: str) -> str | None:
        with self._db() as db:
            row = db.execute("SELECT claim FROM runs WHERE id = ?", (run,)).fetchone()
        return None if row is None else row[0]

    def request_cancel(self, run: str) -> str:
        """Ask a run to stop after its current block; a run no process owns any more (never
        started, or its launcher died) is cancelled at once. Returns the run's status."""
        with self._transaction() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run,)).fetchone()
            if row is None:
                raise self._no_run(repr(run))
            status = self._shown(dict(row))["status"]
            if status == "interrupted":
                db.execute("UPDATE runs SET status = 'cancelled', ended = ?, claim = NULL WHERE id = ?",
                           (time.time(), run))
                return "cancelled"
            if status in ("queued", "running"):
                db.execute("UPDATE runs SET cancel = 1 WHERE id = ?", (run,))
            return status

    def cancel_requested(self, run: str) -> bool:
        with self._db() as db:
            row = db.execute("SELECT cancel FROM runs WHERE id = ?", (run,)).fetchone()
        if row is None:
            raise self._no_run(repr(run))
        return bool(row[0])

    def _insert_batch(self, db: sqlite3.Connection, run: str, kind: str, columns: dict[str, np.ndarray]) -> None:
        """Append a batch; a one-vs-all iteration batch (whole labels, no `epoch`) also adds its
        summary (sketch.Summary, derived fields included) and its labels to `batch_labels` (the
        label inspector's index) in the same transaction."""
        seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM batches WHERE run = ?", (run,)).fetchone()[0]
        db.execute("INSERT INTO batches (run, seq, kind, payload) VALUES (?, ?, ?, ?)", (run, seq, kind, _pack(columns)))
        if kind == "begin":  # what _rows would decode from it (a begin rolled back leaves a number no batch holds)
            self._begin_rows[run] = (seq, _begin_rows(columns))
        if kind == "iteration" and {"label", "iteration"} <= set(columns) and "epoch" not in columns:
            derived = per_label_fields(columns, _rows(db, run, self._begin_rows))
            RunStore._add_summary(db, run, kind, Summary.of({**columns, **derived}))
            db.executemany("INSERT INTO batch_labels (run, kind, label, seq) VALUES (?, ?, ?, ?)",
                           ((run, kind, int(label), seq) for label in np.unique(columns["label"])))

    @staticmethod
    def _add_summary(db: sqlite3.Connection, run: str, kind: str, summary: Summary) -> None:
        """Store a batch's summary at level 0; whenever SUMMARY_FANOUT summaries share a level, they
        are merged into one of the next level (a log-structured merge: each record is merged about
        log_FANOUT(batches) times, and a reader merges at most FANOUT - 1 summaries per level)."""
        level, payload = 0, summary.pack()
        while True:
            db.execute("INSERT INTO summaries (run, kind, level, seq, payload) VALUES (?, ?, ?, (SELECT "
                       "COALESCE(MAX(seq), 0) + 1 FROM summaries WHERE run = ? AND kind = ? AND level = ?), ?)",
                       (run, kind, level, run, kind, level, payload))
            if db.execute("SELECT COUNT(*) FROM summaries WHERE run = ? AND kind = ? AND level = ?",
                          (run, kind, level)).fetchone()[0] < SUMMARY_FANOUT:
                return  # counted, not read: the payloads are read only when they are merged
            rows = db.execute("SELECT payload FROM summaries WHERE run = ? AND kind = ? AND level = ?",
                              (run, kind, level)).fetchall()
            db.execute("DELETE FROM summaries WHERE run = ? AND kind = ? AND level = ?", (run, kind, level))
            level, payload = level + 1, Summary.merge([Summary.unpack(r[0]) for r in rows]).pack()

    def summary(self, run: str, kind: str = "iteration") -> tuple[Summary | None, int]:
        """The merged summary of every batch of `kind` of the run and the last batch number, or
        (None, 0) if some batch has none (recorded before schema 3, or not one-vs-all records)."""
        with self._db() as db:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'summaries'").fetchone() is None:
                return None, 0  # a read-only store of schema 2, which this process may not migrate
            rows = db.execute("SELECT payload FROM summaries WHERE run = ? AND kind = ?", (run, kind)).fetchall()
            count, last = db.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM batches WHERE run = ? AND kind = ?",
                                     (run, kind)).fetchone()
        if not rows:
            return None, 0
        summary = Summary.merge([Summary.unpack(r[0]) for r in rows])
        return (summary, last) if summary.batches == count else (None, 0)

    def append_batch(self, run: str, kind: str, columns: dict[str, np.ndarray],
                     held: sqlite3.Connection | None = None) -> None:
        """Append one batch of records (on `held`, a connection from `hold`, if given)."""
        with self._transaction(held) as db:
            self._insert_batch(db, run, kind, columns)

    def records(self, run: str, kind: str, after: int = 0) -> tuple[pd.DataFrame, int]:
        """The records of one kind in batches after `after`, and the last batch number seen."""
        with self._db() as db:
            rows = db.execute("SELECT seq, payload FROM batches WHERE run = ? AND kind = ? AND seq > ? ORDER BY seq",
                              (run, kind, after)).fetchall()
        if not rows:
            return pd.DataFrame(), after
        return pd.concat([pd.DataFrame(_unpack(r["payload"])) for r in rows], ignore_index=True), rows[-1]["seq"]

    def _payloads(self, run: str, kind: str) -> Iterator[bytes]:
        """The packed batches of one kind, in order, read from SQLite as they are consumed."""
        with self._db() as db:
            for row in db.execute("SELECT payload FROM batches WHERE run = ? AND kind = ? ORDER BY seq", (run, kind)):
                yield row["payload"]

    def stored_batches(self, run: str, kind: str) -> Iterator[pd.DataFrame]:
        """The records of one kind, one stored batch (a block of labels) at a time, read from SQLite
        as they are consumed: a reader of a run of any size holds one batch."""
        for payload in self._payloads(run, kind):
            yield pd.DataFrame(_unpack(payload))

    def column_types(self, run: str, kind: str) -> list[dict[str, np.dtype]]:
        """The distinct {column: dtype} of the run's batches of `kind`, in the order they first
        appear, read from the arrays' headers (no array is read): what one DataFrame of all of
        them would hold is then known before any record is read."""
        seen: list[dict[str, np.dtype]] = []
        for payload in self._payloads(run, kind):
            types = _column_types(payload)
            if types not in seen:
                seen.append(types)
        return seen

    def has_records(self, run: str, kind: str) -> bool:
        with self._db() as db:
            return db.execute("SELECT 1 FROM batches WHERE run = ? AND kind = ? LIMIT 1", (run, kind)).fetchone() is not None

    def labels_indexed(self, run: str, kind: str = "iteration") -> int:
        """How many (label, batch) pairs of the run `batch_labels` holds (0 in a store without the
        table). A run whose every batch is indexed has as many as its summary's `labels`."""
        with self._db() as db:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'batch_labels'").fetchone() is None:
                return 0
            return db.execute("SELECT COUNT(*) FROM batch_labels WHERE run = ? AND kind = ?", (run, kind)).fetchone()[0]

    def label_records(self, run: str, label: int, kind: str = "iteration") -> pd.DataFrame:
        """One label's records, read through `batch_labels` (an indexed lookup, then only the
        batches that hold the label): empty when the index does not name the label."""
        with self._db() as db:
            rows = db.execute("SELECT b.payload FROM batch_labels AS i JOIN batches AS b ON b.run = i.run AND "
                              "b.seq = i.seq WHERE i.run = ? AND i.kind = ? AND i.label = ? ORDER BY i.seq",
                              (run, kind, int(label))).fetchall()
        return label_rows((pd.DataFrame(_unpack(r[0])) for r in rows), label)

    def clear_records(self, run: str) -> None:
        """Drop a run's records (a multiclass run that starts again writes them anew). A `reset`
        batch takes their place in the same transaction, so batch numbers keep growing and a reader
        that has seen the old records learns that they are gone."""
        with self._transaction() as db:
            last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM batches WHERE run = ?", (run,)).fetchone()[0]
            db.execute("DELETE FROM batches WHERE run = ?", (run,))
            db.execute("DELETE FROM summaries WHERE run = ?", (run,))
            db.execute("DELETE FROM batch_labels WHERE run = ?", (run,))
            db.execute("INSERT INTO batches (run, seq, kind, payload) VALUES (?, ?, 'reset', ?)",
                       (run, last + 1, _pack({"dropped_through": np.array([last])})))

    def add_block(self, run: str, labels: np.ndarray, weights: sp.csr_matrix, bias_weights: np.ndarray,
                  batches: list[tuple[str, dict[str, np.ndarray]]] = (), token: str | None = None,
                  held: sqlite3.Connection | None = None) -> None:
        """A finished block: its record batches and its weights, in one transaction (a crash keeps all of it or none). With `token`, written only while that claim
        still owns the run; StoreError otherwise (another process resumed it). On `held` as append_batch."""
        payload = _pack({"labels": labels, "indptr": weights.indptr, "indices": weights.indices,
                         "data": weights.data, "bias": bias_weights, "shape": np.array(weights.shape)})
        with self._transaction(held) as db:
            if token is not None:
                row = db.execute("SELECT claim FROM runs WHERE id = ?", (run,)).fetchone()
                if row is None or row[0] != token:
                    raise StoreError(f"run {run} is no longer owned by this worker (resumed elsewhere)")
            for kind, columns in batches:
                self._insert_batch(db, run, kind, columns)
            db.execute("INSERT INTO pieces (run, seq, payload) VALUES "
                       "(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM pieces WHERE run = ?), ?)", (run, run, payload))

    def add_piece(self, run: str, labels: np.ndarray, weights: sp.csr_matrix, bias_weights: np.ndarray) -> None:
        self.add_block(run, labels, weights, bias_weights)

    def pieces(self, run: str) -> list[tuple[np.ndarray, sp.csr_matrix, np.ndarray]]:
        with self._db() as db:
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
        if row["status"] in ("running", "queued"):
            raise StoreError(f"run {run} is {row['status']}: cancel it before deleting it")
        folder = self._folder(run)  # refused before anything is deleted
        with self._transaction() as db:
            for table, key in (("batches", "run"), ("summaries", "run"), ("batch_labels", "run"), ("pieces", "run"), ("runs", "id")):
                db.execute(f"DELETE FROM {table} WHERE {key} = ?", (run,))
        shutil.rmtree(folder, ignore_errors=True)


class SqliteSink:
    """Record sink writing each block of records as one batch of the run in the store.

    With a claim `token` (a background worker), the records of a block are held until its
    weights arrive through `block` (the solver's on_block), and both are written in one
    transaction: after a crash the store holds a block's records exactly when it holds its weights,
    so a resumed run records every label once."""

    def __init__(self, store: RunStore, run: str, token: str | None = None) -> None:
        self.store, self.run, self.token = store, run, token
        self._held: list[tuple[str, dict[str, np.ndarray]]] = []
        self._keeper: sqlite3.Connection | None = None
        self._keeper_thread: int | None = None

    def begin(self, meta: dict) -> None:
        """Sets the run's label count, and keeps the problem's sizes as a `begin` record (readers
        need the number of training rows to show the active set as a fraction). Holds a store
        connection open until `end` (RunStore.hold: the run's many short writes stay cheap), and
        writes the run's batches through it."""
        if self._keeper is None:
            self._keeper = self.store.hold()
            self._keeper_thread = threading.get_ident()
        sizes = {k: np.array([int(meta[k])]) for k in ("n", "n_features", "n_labels", "threads", "workers")
                 if k in meta}  # workers: DS-MLR's, whose records' `label` is the worker
        self.store.begin_run(self.run, int(meta.get("n_labels", 0)), sizes, held=self._connection())

    def _connection(self) -> sqlite3.Connection | None:
        """The held connection, in the thread that made it (SQLite's connections belong to their
        thread); None elsewhere or before `begin`: the store opens a short one."""
        return self._keeper if self._keeper_thread == threading.get_ident() else None

    def write(self, kind: str, columns: dict[str, np.ndarray]) -> None:
        columns = {k: np.asarray(v) for k, v in columns.items()}
        if self.token is None:
            self.store.append_batch(self.run, kind, columns, held=self._connection())
        else:
            self._held.append((kind, columns))

    def block(self, labels: np.ndarray, weights: sp.csr_matrix, bias_weights: np.ndarray) -> None:
        """A finished block's weights: stored with the records held since the last block."""
        held, self._held = self._held, []
        self.store.add_block(self.run, labels, weights, bias_weights, held, token=self.token,
                             held=self._connection())

    def end(self, summary: dict) -> None:
        """Lets go of the connection `begin` held (a run that fails before its end lets go of it
        when the sink is collected)."""
        if self._keeper is not None:
            self._keeper.close()
            self._keeper, self._keeper_thread = None, None
