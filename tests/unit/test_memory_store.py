"""MemoryStore: round trip, SIGKILL recovery (subprocess), live writers left alone, refusal of bad files
(never overwritten), schema version, concurrent writer processes on one database."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from memory.records import AttemptRecord, EventRecord, FailureCause, FailureRecord, VerdictRecord
from memory.store import (
    APPLICATION_ID,
    DB_NAME,
    SCHEMA_VERSION,
    MemorySchemaError,
    MemoryStore,
    MemoryStoreError,
)
from memory.task_memory import TaskMemoryV1
from tandem.core.types import Plan, Subgoal, TaskSpec, Verdict

SPEC = TaskSpec(name="toy", instruction="put a away", objects=("a",), max_steps=100,
                skills={"pick": "grasped({0})", "place": "done({0})"}, goals=("done(a)",))
PICK = Subgoal("sg1", "pick", ("a",), "pick a")
PLACE = Subgoal("sg2", "place", ("a",), "place a")
ROOT = Path(__file__).resolve().parents[2]


def child(code: str) -> subprocess.Popen:
    """A Python subprocess running ``code`` with this worktree importable; stdout is line-buffered."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_episode(mem: TaskMemoryV1) -> None:
    mem.start_episode(SPEC, meta={"seed": 7})
    mem.record_plan(Plan(remaining=[PICK, PLACE]), 0, "oracle")
    mem.record_attempt(PICK, 0)
    for k in range(1, 4):
        mem.record_step(k, k * 0.05, "sg1", np.full(7, 0.1 * k, np.float32), np.arange(8, dtype=np.float32))
    mem.record_verdict(PICK, Verdict(False, 1.0, "grasped(a) is false: a is at (0.1, 0.2, 0.8), did not move "
                                                "during the attempt", "oracle"), 3)
    mem.record_plan(Plan(remaining=[Subgoal("sg3", "pick", ("a",), "pick a"), PLACE]), 3, "oracle")
    mem.record_attempt(PICK, 3)
    mem.record_verdict(PICK, Verdict(True, 1.0, "grasped(a) holds", "oracle"), 9)


def test_round_trip_records_steps_images_and_status(tmp_path):
    mem = TaskMemoryV1()
    mem.open_store(tmp_path)  # a run directory: memory.sqlite inside
    write_episode(mem)
    goal = Subgoal("sg4", "place", ("a",), "place a", goal_image=np.full((4, 5, 3), 9, np.uint8))
    mem.record_attempt(goal, 9)
    mem.finish_episode(True, {"steps": 9})
    live = mem.records()
    mem.open_store(None)

    store = MemoryStore(tmp_path / DB_NAME, create=False)
    (ep,) = store.episodes()
    assert (ep.id, ep.task, ep.status, ep.success, ep.meta, ep.summary) == (1, "toy", "finished", True, {"seed": 7},
                                                                              {"steps": 9})
    assert ep.last_step == 9
    recs = store.records(1)
    assert [r.to_json() for r in recs] == [r.to_json() for r in live]
    attempts = [r for r in recs if isinstance(r, AttemptRecord)]
    assert [(a.step, a.end_step) for a in attempts] == [(0, 3), (3, 9), (9, None)]
    (failure,) = [r for r in recs if isinstance(r, FailureRecord)]
    assert failure.cause is FailureCause.GRASP_SLIPPED and failure.attempt == 1
    steps = store.steps(1)
    assert [s["step"] for s in steps] == [1, 2, 3] and steps[2]["action"] == pytest.approx([0.3] * 7)
    step, img = store.images(1)["goal/place(a)#1"]
    assert step == 9 and img.shape == (4, 5, 3) and int(img[0, 0, 0]) == 9
    # the file is what it claims: WAL, tandem's application id, this schema
    con = sqlite3.connect(tmp_path / DB_NAME)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    con.close()


KILL_WRITER = """
    import sys, time
    from memory.records import EventRecord
    from memory.store import MemoryStore
    store = MemoryStore(sys.argv[1] if len(sys.argv) > 1 else {db!r})
    w = store.begin_episode("toy", "put a away", {{"seed": 1}})
    print("episode", w.episode_id, flush=True)
    k = 0
    while True:
        w.append(EventRecord(k, event="tick", data={{"k": k, "pad": "x" * 200}}))
        w.add_step(k + 1, 0.05 * (k + 1), None, [0.0] * 7, [0.0] * 8)
        print("committed", k + 1, flush=True)
        k += 1
"""


def test_sigkill_mid_write_keeps_committed_records_and_marks_interrupted(tmp_path):
    db = tmp_path / "run" / DB_NAME
    proc = child(KILL_WRITER.format(db=str(db)))
    assert proc.stdout.readline().split() == ["episode", "1"]
    committed = 0
    while committed < 300:  # it writes continuously: the kill lands in the middle of some write
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        committed = int(line.split()[1])
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    store = MemoryStore(db)  # reopening recovers
    assert store.recovered == [1]
    (ep,) = store.episodes()
    assert ep.status == "interrupted" and ep.success is None
    assert "died" in ep.summary["interrupted"]
    recs = store.records(1)
    assert len(recs) >= committed  # every record it reported committed is there (one more may have landed)
    assert [r.data["k"] for r in recs] == list(range(len(recs)))  # a gap-free prefix: commits are atomic
    assert all(isinstance(r, EventRecord) and r.kind == "tick" for r in recs)
    assert ep.summary["last_step"] >= committed - 1
    assert len(store.steps(1)) >= committed - 20  # step rows are flushed at least every STEP_FLUSH steps
    assert MemoryStore(db).recovered == []  # recovery happens once


def test_a_live_writer_in_another_process_is_not_marked_interrupted(tmp_path):
    db = tmp_path / DB_NAME
    proc = child(f"""
        import time
        from memory.store import MemoryStore
        w = MemoryStore({str(db)!r}).begin_episode("toy")
        print("started", w.episode_id, flush=True)
        time.sleep(120)
    """)
    try:
        assert proc.stdout.readline().split() == ["started", "1"]
        store = MemoryStore(db)
        assert store.recovered == [] and store.episodes()[0].status == "running"
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert MemoryStore(db).episodes()[0].status == "interrupted"


def test_concurrent_writer_processes_share_one_database(tmp_path):
    db = tmp_path / DB_NAME
    MemoryStore(db).close()
    code = f"""
        import sys
        from memory.records import EventRecord
        from memory.store import MemoryStore
        store = MemoryStore({str(db)!r})
        w = store.begin_episode("toy", meta={{"worker": int(sys.argv[1])}})
        for k in range(150):
            w.append(EventRecord(k, event="tick", data={{"k": k}}))
            w.add_step(k + 1, 0.0, None, [0.0], [0.0])
        w.finish(True)
        print("done", flush=True)
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), str(i)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for i in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "done", err
    store = MemoryStore(db)
    eps = store.episodes()
    assert sorted(e.meta["worker"] for e in eps) == [0, 1, 2] and {e.status for e in eps} == {"finished"}
    for e in eps:
        assert [r.data["k"] for r in store.records(e.id)] == list(range(150))
        assert len(store.steps(e.id)) == 150


@pytest.mark.parametrize("content, match", [
    (b"", "empty file"),
    (b"this is not a database at all" * 20, "not an SQLite database"),
    (b"SQLite format 3\x00" + bytes(range(256)) * 40, "corrupt|cannot be opened"),
])
def test_bad_files_are_refused_and_left_untouched(tmp_path, content, match):
    path = tmp_path / DB_NAME
    path.write_bytes(content)
    before, mtime = digest(path), path.stat().st_mtime_ns
    with pytest.raises(MemoryStoreError, match=match) as ei:
        MemoryStore(path)
    assert str(path) in str(ei.value) and "left untouched" in str(ei.value)
    assert digest(path) == before and path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == [DB_NAME]  # no -wal/-shm/lock files next to it


def test_foreign_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    con.execute("INSERT INTO customers VALUES (1, 'ada')")
    con.commit()
    con.close()
    before = digest(path)
    with pytest.raises(MemoryStoreError, match="another application"):
        MemoryStore(path)
    assert digest(path) == before


def test_corrupt_pages_of_a_tandem_store_are_refused(tmp_path):
    path = tmp_path / DB_NAME
    mem = TaskMemoryV1()
    mem.open_store(path)
    write_episode(mem)
    mem.finish_episode(True)
    mem.open_store(None)
    data = bytearray(path.read_bytes())
    assert len(data) > 3 * 4096
    data[4096:3 * 4096] = os.urandom(2 * 4096)  # garbage over the pages after the header page
    path.write_bytes(bytes(data))
    before = digest(path)
    with pytest.raises(MemoryStoreError, match="corrupt"):
        MemoryStore(path)
    assert digest(path) == before


def test_other_schema_version_raises_a_clear_error(tmp_path):
    path = tmp_path / DB_NAME
    MemoryStore(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(MemorySchemaError, match=rf"schema version {SCHEMA_VERSION + 1}, this tandem reads version "
                                                rf"{SCHEMA_VERSION}"):
        MemoryStore(path)


def test_missing_store_without_create_and_unknown_episode(tmp_path):
    with pytest.raises(MemoryStoreError, match="does not exist"):
        MemoryStore(tmp_path / DB_NAME, create=False)
    store = MemoryStore(tmp_path / DB_NAME)
    store.begin_episode("toy").finish(True)
    with pytest.raises(MemoryStoreError, match=r"has no episode 5; episodes: 1"):
        store.episode(5)


def test_records_are_committed_one_call_at_a_time(tmp_path):
    """A reader in another connection sees each record as soon as its call returns (no buffering)."""
    mem = TaskMemoryV1()
    mem.open_store(tmp_path)
    mem.start_episode(SPEC)
    reader = MemoryStore(tmp_path)
    assert [r.kind for r in reader.records(1)] == ["episode_start"]
    mem.record_attempt(PICK, 0)
    assert [r.kind for r in reader.records(1)] == ["episode_start", "attempt"]
    mem.record_verdict(PICK, Verdict(False, 1.0, "step budget of 5 spent; grasped(a) is false", "oracle"), 5)
    kinds = [(r.kind, getattr(r, "cause", None)) for r in reader.records(1)]
    assert kinds[-2:] == [("verdict", None), ("failure", FailureCause.TIMEOUT)]
    assert isinstance(reader.records(1)[-2], VerdictRecord)
    assert reader.episodes()[0].status == "running"
    mem.finish_episode(False)
    assert reader.episodes()[0].status == "finished"


def test_start_time_and_json_bodies_are_plain(tmp_path):
    store = MemoryStore(tmp_path)
    w = store.begin_episode("toy", meta={"arr": np.arange(3)})
    w.append(EventRecord(0, event="x", data={"v": 1}))
    w.finish(None)
    con = sqlite3.connect(store.path)
    (body,) = con.execute("SELECT body FROM records").fetchone()
    assert json.loads(body) == {"kind": "x", "step": 0, "v": 1}
    started, meta = con.execute("SELECT started_at, meta FROM episodes").fetchone()
    assert abs(started - time.time()) < 60 and json.loads(meta) == {"arr": [0, 1, 2]}
    con.close()
