"""SQLite persistence of task memory: one database per run directory, many episodes, one commit per record.

Layout (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`, ``PRAGMA application_id`` = :data:`APPLICATION_ID`)::

    store_info(key, value)                              format name, schema version, creation time, store id
    episodes(id, task, instruction, status, success,    status: running | finished | interrupted
             started_at, ended_at, last_step, meta, summary, writer)
    records(episode_id, seq, step, kind, t, body)       one typed record (memory.records) per row, JSON body
    steps(episode_id, step, t, subgoal_id, action, proprio)   one row per control step (JSON arrays)
    images(episode_id, name, step, height, width, data)      uint8 (H, W, 3) images, zlib-compressed (goal images)

Durability and crash recovery:

* WAL journal mode; every :meth:`EpisodeWriter.append` is one ``BEGIN IMMEDIATE ... COMMIT`` transaction, so a
  record is either wholly in the database or not at all. ``synchronous=NORMAL`` (default) survives a killed
  process (SIGKILL, OOM kill, segfault): a committed transaction is in the WAL file. Pass ``durable=True`` for
  ``synchronous=FULL``, which also survives a power cut, at the cost of an fsync per record.
* While an episode is written, its writer holds an exclusive ``flock`` on ``<db>.locks/<token>.lock``. The
  kernel releases it when the process dies however it dies. Opening the store (or :meth:`MemoryStore.recover`)
  marks every ``running`` episode whose lock is free as ``interrupted``; all its committed records stay.
* Step rows are buffered and committed with the next record, every :data:`STEP_FLUSH` steps, and at the end.

Bad files are refused, never overwritten: a file that is not SQLite (wrong header, or empty), a corrupt database
(``PRAGMA quick_check`` fails), an SQLite database of another application (``application_id``) raise
:class:`MemoryStoreError`; another schema version raises :class:`MemorySchemaError`. A new database is built in a
temporary file and hard-linked into place, so a crash during creation never leaves a half-made file at the path.

Concurrency (parallel evaluation workers): **one shared database per run directory**. Each worker process
opens its own connection; SQLite's WAL locking serialises the short write transactions (``busy_timeout``
30 s) and readers never block writers. Episode ids come from ``AUTOINCREMENT``, so workers never collide. This
needs the run directory on a local file system of one machine: SQLite's locks (and the ``flock`` liveness
locks) are not reliable on network file systems, so a multi-node Ray cluster must give each node its own
``memory.db`` path. Connections are per process; do not share a :class:`MemoryStore` across ``fork``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from memory.records import AttemptRecord, Record, VerdictRecord, record_from_json
from tandem.core.errors import TandemError
from tandem.core.types import to_jsonable

#: Version of the table layout; a database of another version is refused with :class:`MemorySchemaError`.
SCHEMA_VERSION = 1
#: ``PRAGMA application_id`` of a tandem memory store (ASCII "TNDM").
APPLICATION_ID = 0x544E444D
FORMAT_NAME = "tandem.memory"
#: Buffered step rows are committed at least every this many steps.
STEP_FLUSH = 20
#: File name of the store in a run directory.
DB_NAME = "memory.sqlite"
EPISODE_STATUSES = ("running", "finished", "interrupted")
_SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task TEXT NOT NULL,
    instruction TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'interrupted')),
    success INTEGER,
    started_at REAL NOT NULL,
    ended_at REAL,
    last_step INTEGER NOT NULL DEFAULT 0,
    meta TEXT NOT NULL DEFAULT '{}',
    summary TEXT NOT NULL DEFAULT '{}',
    writer TEXT NOT NULL
);
CREATE TABLE records (
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    seq INTEGER NOT NULL,
    step INTEGER NOT NULL,
    kind TEXT NOT NULL,
    t REAL NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (episode_id, seq)
);
CREATE TABLE steps (
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    step INTEGER NOT NULL,
    t REAL NOT NULL,
    subgoal_id TEXT,
    action TEXT NOT NULL,
    proprio TEXT NOT NULL,
    PRIMARY KEY (episode_id, step)
);
CREATE TABLE images (
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    name TEXT NOT NULL,
    step INTEGER NOT NULL,
    height INTEGER NOT NULL,
    width INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (episode_id, name)
);
CREATE INDEX episodes_by_task ON episodes(task, status);
"""


class MemoryStoreError(TandemError):
    """A memory database cannot be used: not SQLite, corrupt, another application's, or unwritable.

    Attributes:
        path: the database file.
    """

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        super().__init__(f"memory store {path}: {reason}")


class MemorySchemaError(MemoryStoreError):
    """A tandem memory database with another schema version than this code reads (:data:`SCHEMA_VERSION`)."""


@dataclass(frozen=True)
class EpisodeInfo:
    """One row of ``episodes``.

    Attributes:
        id: episode number in this store (1-based, in start order).
        task, instruction: the task name and its instruction.
        status: ``running``, ``finished`` or ``interrupted``.
        success: the episode's outcome (None until finished, and for interrupted episodes).
        started_at, ended_at: Unix times (s).
        last_step: highest control step of any committed record or step row.
        meta, summary: JSON dicts given to :meth:`MemoryStore.begin_episode` / :meth:`EpisodeWriter.finish`.
    """

    id: int
    task: str
    instruction: str
    status: str
    success: bool | None
    started_at: float
    ended_at: float | None
    last_step: int
    meta: dict[str, Any]
    summary: dict[str, Any]


def _check_existing(path: Path) -> None:
    """Refuse a file that is not an intact tandem memory store of this schema, touching nothing (read-only)."""
    if path.is_dir():
        raise MemoryStoreError(path, "is a directory, not a database file")
    with path.open("rb") as f:
        head = f.read(len(_SQLITE_HEADER))
    if not head:
        raise MemoryStoreError(path, "is an empty file, not a tandem memory database; it was left untouched "
                                     "(delete it or choose another run directory)")
    if head != _SQLITE_HEADER:
        raise MemoryStoreError(path, "is not an SQLite database (corrupt, or a file of another program); it was "
                                     "left untouched")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as e:
        raise MemoryStoreError(path, f"cannot be opened read-only ({e}); it was left untouched") from e
    try:
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise MemoryStoreError(path, f"is an SQLite database of another application (application_id="
                                         f"{app_id:#x}, tandem's is {APPLICATION_ID:#x}); it was left untouched")
        if version != SCHEMA_VERSION:
            raise MemorySchemaError(path, f"has memory schema version {version}, this tandem reads version "
                                          f"{SCHEMA_VERSION}; open it with the tandem release that wrote it, or use "
                                          "a new run directory (the file was left untouched)")
        check = con.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in check] != ["ok"]:
            raise MemoryStoreError(path, f"is corrupt (quick_check: {check[:3]}); it was left untouched")
    except sqlite3.DatabaseError as e:
        raise MemoryStoreError(path, f"is corrupt ({e}); it was left untouched") from e
    finally:
        con.close()


def _create(path: Path) -> None:
    """Create an empty store at ``path`` atomically (temporary file + hard link); no-op if it appeared meanwhile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.executescript(_SCHEMA)
            con.execute("INSERT INTO store_info VALUES ('format', ?), ('schema_version', ?), ('created_at', ?), "
                        "('store_id', ?)", (FORMAT_NAME, str(SCHEMA_VERSION), repr(time.time()), uuid.uuid4().hex))
            con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            con.execute("PRAGMA journal_mode = WAL")  # persistent: stored in the file header
        finally:
            con.close()
        with contextlib.suppress(FileExistsError):  # another process created it first: validated like any other
            os.link(tmp, path)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)


class MemoryStore:
    """A run directory's memory database (see the module docstring for layout, durability and concurrency).

    Args:
        path: the database file (conventionally ``<run_dir>/memory.sqlite``, :data:`DB_NAME`), or a run directory.
        create: create the file when it does not exist (else raise).
        durable: ``synchronous=FULL`` (survives power loss) instead of ``NORMAL`` (survives process death).
        timeout_s: how long a write waits for another process's transaction (``busy_timeout``).

    Raises:
        MemoryStoreError: missing file with ``create=False``; not SQLite, corrupt, foreign or unwritable file.
        MemorySchemaError: another schema version.
    """

    def __init__(self, path: str | Path, create: bool = True, durable: bool = False, timeout_s: float = 30.0):
        p = Path(path)
        if p.is_dir():
            p = p / DB_NAME
        self.path = p
        if not p.exists():
            if not create:
                raise MemoryStoreError(p, "does not exist (no memory was recorded in this run directory)")
            _create(p)
        _check_existing(p)
        try:
            self._con = sqlite3.connect(p, isolation_level=None, timeout=timeout_s, check_same_thread=False)
            self._con.execute("PRAGMA journal_mode = WAL")
            self._con.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            self._con.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as e:
            raise MemoryStoreError(p, f"cannot be opened for writing ({e})") from e
        self._lock = threading.RLock()
        self.lock_dir = p.parent / f"{p.name}.locks"
        self.recovered: list[int] = self.recover()

    # ------------------------------------------------------------------ plumbing
    def _write(self, fn: Any) -> Any:
        """Run ``fn(con)`` in one ``BEGIN IMMEDIATE ... COMMIT`` transaction (rolled back if it raises)."""
        with self._lock:
            try:
                self._con.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise MemoryStoreError(self.path, f"cannot start a write ({e})") from e
            try:
                out = fn(self._con)
                self._con.execute("COMMIT")
                return out
            except BaseException:
                self._con.execute("ROLLBACK")
                raise

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._con.execute(sql, tuple(args)).fetchall()

    @property
    def store_id(self) -> str:
        """This store's identity: the random id recorded when it was created, or, for a store made before stores
        recorded one, a digest of its resolved path. Two stores never share it, even in run folders of one name."""
        import hashlib

        rows = self._query("SELECT value FROM store_info WHERE key = 'store_id'")
        if rows:
            return str(rows[0][0])
        return hashlib.sha1(str(self.path.resolve()).encode()).hexdigest()[:32]

    def close(self) -> None:
        """Close the connection (open writers of this store must be finished first)."""
        with self._lock:
            self._con.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ recovery
    def recover(self) -> list[int]:
        """Mark ``running`` episodes whose writer process is gone as ``interrupted``; returns their ids.

        A writer is gone when its lock file is missing or can be locked (the kernel released its ``flock``).
        Committed records are kept; the summary says ``{"interrupted": reason, "last_step": k}``.
        """
        import fcntl

        dead = []
        for eid, writer, last_step in self._query("SELECT id, writer, last_step FROM episodes WHERE status='running'"):
            lock = self.lock_dir / f"{writer}.lock"
            try:
                fd = os.open(lock, os.O_RDWR)
            except FileNotFoundError:
                dead.append((eid, last_step))
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # alive: its writer holds the lock
            finally:
                os.close(fd)
            dead.append((eid, last_step))
            lock.unlink(missing_ok=True)
        if not dead:
            return []
        now = time.time()

        def mark(con: sqlite3.Connection) -> None:
            for eid, last_step in dead:
                summary = {"interrupted": "the writing process died before the episode finished",
                           "last_step": int(last_step)}
                con.execute("UPDATE episodes SET status='interrupted', ended_at=?, summary=? WHERE id=? AND "
                            "status='running'", (now, json.dumps(summary), eid))

        self._write(mark)
        return [eid for eid, _ in dead]

    # ------------------------------------------------------------------ writing
    def begin_episode(self, task: str, instruction: str = "", meta: dict[str, Any] | None = None) -> EpisodeWriter:
        """Start a new ``running`` episode and return its writer (which holds the episode's liveness lock).

        Raises:
            MemoryStoreError: the lock directory cannot be created, or the database cannot be written.
        """
        import fcntl

        token = uuid.uuid4().hex
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        lock_path = self.lock_dir / f"{token}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        meta_json = json.dumps(to_jsonable(meta or {}))
        try:
            eid = self._write(lambda con: con.execute(
                "INSERT INTO episodes (task, instruction, status, started_at, meta, writer) VALUES (?, ?, 'running', "
                "?, ?, ?)", (str(task), str(instruction), time.time(), meta_json, token)).lastrowid)
        except BaseException:
            os.close(fd)
            lock_path.unlink(missing_ok=True)
            raise
        return EpisodeWriter(self, int(eid), fd, lock_path)

    # ------------------------------------------------------------------ reading
    def episodes(self, task: str | None = None, status: str | None = None) -> list[EpisodeInfo]:
        """Episodes in start order, optionally only those of ``task`` and/or with ``status``."""
        sql = ("SELECT id, task, instruction, status, success, started_at, ended_at, last_step, meta, summary "
               "FROM episodes")
        cond, args = [], []
        if task is not None:
            cond.append("task = ?")
            args.append(task)
        if status is not None:
            cond.append("status = ?")
            args.append(status)
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        rows = self._query(sql + " ORDER BY id", args)
        return [EpisodeInfo(id=r[0], task=r[1], instruction=r[2], status=r[3],
                            success=None if r[4] is None else bool(r[4]), started_at=r[5], ended_at=r[6],
                            last_step=r[7], meta=json.loads(r[8]), summary=json.loads(r[9])) for r in rows]

    def episode(self, episode_id: int) -> EpisodeInfo:
        """One episode's info.

        Raises:
            MemoryStoreError: no such episode (the message lists the ids there are).
        """
        for e in self.episodes():
            if e.id == int(episode_id):
                return e
        ids = [e.id for e in self.episodes()]
        raise MemoryStoreError(self.path, f"has no episode {episode_id}; episodes: "
                                          f"{_ranges(ids) if ids else '(none)'}")

    def records(self, episode_id: int, kinds: Sequence[str] | None = None) -> list[Record]:
        """The episode's records in commit order (only those of ``kinds`` if given), with each attempt's
        ``end_step`` taken from its verdict."""
        sql, args = "SELECT body FROM records WHERE episode_id=?", [int(episode_id)]
        if kinds is not None:
            sql += f" AND kind IN ({', '.join('?' * len(kinds))})"
            args += list(kinds)
        rows = self._query(sql + " ORDER BY seq", args)
        recs = [record_from_json(json.loads(b)) for (b,) in rows]
        return close_attempts(recs)

    def steps(self, episode_id: int) -> list[dict[str, Any]]:
        """Step rows ``{"step", "t", "subgoal_id", "action": list (A,), "proprio": list (D,)}`` in step order."""
        rows = self._query("SELECT step, t, subgoal_id, action, proprio FROM steps WHERE episode_id=? ORDER BY step",
                           (int(episode_id),))
        return [{"step": s, "t": t, "subgoal_id": sg, "action": json.loads(a), "proprio": json.loads(p)}
                for s, t, sg, a, p in rows]

    def images(self, episode_id: int) -> dict[str, tuple[int, np.ndarray]]:
        """Stored images of the episode: name -> ``(step, uint8 (H, W, 3))``."""
        rows = self._query("SELECT name, step, height, width, data FROM images WHERE episode_id=? ORDER BY step",
                           (int(episode_id),))
        return {n: (s, np.frombuffer(zlib.decompress(d), np.uint8).reshape(h, w, 3)) for n, s, h, w, d in rows}


def close_attempts(records: Iterable[Record]) -> list[Record]:
    """Fill each :class:`AttemptRecord`'s ``end_step`` from the verdict with the same signature and attempt."""
    recs = list(records)
    ends = {(r.signature, r.attempt): r.step for r in recs if isinstance(r, VerdictRecord)}
    return [replace(r, end_step=ends.get((r.signature, r.attempt), r.end_step)) if isinstance(r, AttemptRecord)
            else r for r in recs]


def _ranges(ids: list[int]) -> str:
    return f"{ids[0]}..{ids[-1]}" if ids == list(range(ids[0], ids[-1] + 1)) else ", ".join(map(str, ids))


class EpisodeWriter:
    """Appends one episode's records, steps and images to a :class:`MemoryStore` (made by ``begin_episode``).

    Not thread-safe by itself: use it from the thread that runs the control loop.
    """

    def __init__(self, store: MemoryStore, episode_id: int, lock_fd: int, lock_path: Path):
        self.store, self.episode_id = store, episode_id
        self._lock_fd: int | None = lock_fd
        self._lock_path = lock_path
        self._seq = 0
        self._last_step = 0
        self._steps: list[tuple] = []

    @property
    def open(self) -> bool:
        """Whether the writer still holds the store's episode lock."""
        return self._lock_fd is not None

    def _require_open(self) -> None:
        if self._lock_fd is None:
            raise MemoryStoreError(self.store.path, f"episode {self.episode_id} was already finished")

    def _flush_steps(self, con: sqlite3.Connection) -> None:
        if self._steps:
            con.executemany("INSERT OR REPLACE INTO steps VALUES (?, ?, ?, ?, ?, ?)", self._steps)
            self._steps = []
        con.execute("UPDATE episodes SET last_step=? WHERE id=?", (self._last_step, self.episode_id))

    def append(self, *records: Record) -> None:
        """Commit ``records`` (and any buffered step rows) in one transaction: all of them or none."""
        self._require_open()
        now = time.time()
        rows = []
        for r in records:
            rows.append((self.episode_id, self._seq + len(rows), int(r.step), r.kind, now, json.dumps(r.to_json())))
            self._last_step = max(self._last_step, int(r.step))

        def write(con: sqlite3.Connection) -> None:
            con.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?)", rows)
            self._flush_steps(con)

        self.store._write(write)
        self._seq += len(rows)

    def add_step(self, step: int, t: float, subgoal_id: str | None, action: Any, proprio: Any) -> None:
        """Buffer one control step (``action`` ``(A,)``, ``proprio`` ``(D,)``); committed every :data:`STEP_FLUSH`."""
        self._require_open()
        self._steps.append((self.episode_id, int(step), float(t), subgoal_id,
                            json.dumps(to_jsonable(np.asarray(action, np.float32))),
                            json.dumps(to_jsonable(np.asarray(proprio, np.float32)))))
        self._last_step = max(self._last_step, int(step))
        if len(self._steps) >= STEP_FLUSH:
            self.store._write(self._flush_steps)

    def add_image(self, name: str, step: int, image: np.ndarray) -> None:
        """Store a ``uint8 (H, W, 3)`` image (e.g. ``goal/<subgoal id>``) under ``name``; replaces one of that name.

        Raises:
            ValueError: the image is not uint8 (H, W, 3).
        """
        self._require_open()
        img = np.ascontiguousarray(image)
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(f"add_image({name!r}) needs uint8 (H, W, 3), got {img.dtype} {img.shape}")
        blob = zlib.compress(img.tobytes(), 6)
        self.store._write(lambda con: con.execute("INSERT OR REPLACE INTO images VALUES (?, ?, ?, ?, ?, ?)",
                                                  (self.episode_id, name, int(step), img.shape[0], img.shape[1], blob)))

    def finish(self, success: bool | None, summary: dict[str, Any] | None = None) -> None:
        """Commit the buffered steps, mark the episode ``finished`` and release its lock. Idempotent."""
        if self._lock_fd is None:
            return
        summary_json = json.dumps(to_jsonable(summary or {}))

        def write(con: sqlite3.Connection) -> None:
            self._flush_steps(con)
            con.execute("UPDATE episodes SET status='finished', success=?, ended_at=?, summary=? WHERE id=?",
                        (None if success is None else int(bool(success)), time.time(), summary_json, self.episode_id))

        try:
            self.store._write(write)
        finally:
            self._release()

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
            self._lock_path.unlink(missing_ok=True)


__all__ = ["APPLICATION_ID", "DB_NAME", "EPISODE_STATUSES", "SCHEMA_VERSION", "STEP_FLUSH", "EpisodeInfo",
           "EpisodeWriter", "MemorySchemaError", "MemoryStore", "MemoryStoreError", "close_attempts"]
