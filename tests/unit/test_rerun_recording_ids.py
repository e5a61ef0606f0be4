"""rerun.io recording ids are unique per memory store and episode, also for run folders of one name (issue 47)."""

from __future__ import annotations

import sqlite3

from memory.replay import episode_recording_id
from memory.store import MemoryStore


def _store_with_episode(folder):
    folder.mkdir(parents=True)
    store = MemoryStore(folder)
    store.begin_episode("stack_three", "stack").finish(True, {})
    return store


def test_run_folders_of_one_name_give_different_recording_ids(tmp_path):
    a, b = _store_with_episode(tmp_path / "a" / "run"), _store_with_episode(tmp_path / "b" / "run")
    try:
        ids = {episode_recording_id(s.store_id, s.path.parent.name, 1) for s in (a, b)}
        assert len(ids) == 2 and all(i.startswith("run#1@") for i in ids)
        assert episode_recording_id(a.store_id, "run", 1) != episode_recording_id(a.store_id, "run", 2)
        assert MemoryStore(tmp_path / "a" / "run", create=False).store_id == a.store_id  # stable across opens
    finally:
        a.close()
        b.close()


def test_a_store_from_before_store_ids_is_told_apart_by_its_path(tmp_path):
    paths = []
    for name in ("a", "b"):
        store = _store_with_episode(tmp_path / name / "run")
        store.close()
        with sqlite3.connect(store.path) as con:
            con.execute("DELETE FROM store_info WHERE key = 'store_id'")
        paths.append(store.path)
    ids = []
    for p in paths:
        with MemoryStore(p, create=False) as store:
            ids.append(store.store_id)
    assert ids[0] != ids[1]
