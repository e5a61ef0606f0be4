"""Replay equals the live log: what tandem-replay reads from memory.sqlite is what the live episode recorded."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from eval_fakes import build_fake_stack

from memory.records import AttemptRecord
from memory.replay import timeline, timeline_table, write_rerun
from memory.store import MemoryStore
from tandem.core.types import EpisodeLog
from tandem.runtime.rollout import run_episode


def run(tmp_path: Path, seed: int, fail: bool = False):
    stack = build_fake_stack({"executor": {"need": 3, "fail_seeds": [seed] if fail else []}})
    result = run_episode(stack.env, stack.agent, seed=seed, out_dir=tmp_path, record_video=False,
                         meta={"config": {"task": {"name": "toy"}}})
    return stack, result


def test_store_equals_the_live_log(tmp_path):
    stack, result = run(tmp_path, seed=4, fail=True)
    assert result.summary["failure"].startswith("gave up")
    store = MemoryStore(tmp_path, create=False)
    (ep,) = store.episodes()
    assert ep.status == "finished" and ep.success is False and ep.summary["attempts"] == result.summary["attempts"]
    # records: exactly the live memory's, and the events of the live EpisodeLog (minus the rollout's episode_end)
    stored = store.records(ep.id)
    assert [r.to_json() for r in stored] == [r.to_json() for r in stack.agent.memory.records()]
    live_log = EpisodeLog.load_jsonl(tmp_path / "episode.jsonl")
    as_written = [(replace(r, end_step=None) if isinstance(r, AttemptRecord) else r).to_json() for r in stored]
    assert as_written == [e for e in live_log.events if e["kind"] != "episode_end"]
    # steps: the same actions, proprio and subgoal ids as the live log
    keys = ("step", "subgoal_id", "action", "proprio")
    assert [{k: s[k] for k in keys} for s in store.steps(ep.id)] == [{k: s[k] for k in keys} for s in live_log.steps]
    # the timeline from the store equals the timeline from the live memory
    assert timeline(store.records(ep.id)) == timeline(stack.agent.memory.records())
    rows = timeline(store.records(ep.id))
    kinds = [r.kind for r in rows]
    assert kinds.count("attempt") == result.summary["attempts"] and kinds.count("replan") == result.summary["plans"] - 1
    assert [r.detail for r in rows if r.kind == "failure"] == ["unknown: no cause could be told from the verdict"] * 3
    attempts = [r for r in rows if r.kind == "attempt"]
    assert all(a.end_step is not None and a.end_step >= a.step for a in attempts)


def test_many_episodes_in_one_store_and_the_cli(tmp_path, capsys):
    from tandem.cli.replay import main

    for seed in (1, 2):
        run(tmp_path, seed=seed)
    assert [e.meta["seed"] for e in MemoryStore(tmp_path).episodes()] == [1, 2]
    with pytest.raises(SystemExit) as ei:
        main([str(tmp_path), "--episode", "1"])
    assert ei.value.code == 0
    out = capsys.readouterr().out
    assert "episode 1: toy seed 1 - finished, success=True" in out
    assert re.search(r"verdict\s+.*pick\(a\)", out) and "replan" in out
    with pytest.raises(SystemExit) as ei:
        main([str(tmp_path), "--list"])
    assert ei.value.code == 0 and "episodes" in capsys.readouterr().out
    with pytest.raises(SystemExit) as ei:
        main([str(tmp_path), "--episode", "9"])
    assert ei.value.code == 2 and "has no episode 9; episodes: 1..2" in capsys.readouterr().err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "memory.sqlite").write_bytes(b"garbage" * 100)
    with pytest.raises(SystemExit) as ei:
        main([str(tmp_path / "bad")])
    assert ei.value.code == 2 and "not an SQLite database" in capsys.readouterr().err


def test_rerun_recording_has_the_memory_timeline_and_the_series(tmp_path):
    stack, _ = run(tmp_path, seed=0)
    store = MemoryStore(tmp_path)
    recs, steps = store.records(1), store.steps(1)
    rrd = write_rerun(tmp_path / "ep.rrd", recs, steps, store.images(1), frames=None, recording_id="t")
    assert rrd.stat().st_size > 0
    rerun = shutil.which("rerun") or str(Path(sys.executable).parent / "rerun")
    if not Path(rerun).exists():
        pytest.skip("the rerun CLI is not installed next to this Python")
    out = subprocess.run([rerun, "rrd", "print", str(rrd)], capture_output=True, text=True, timeout=120).stdout
    counts: dict[str, int] = {}
    for m in re.finditer(r"with (\d+) rows .* - (/\S+) - data", out):  # one line per chunk
        counts[m.group(2)] = counts.get(m.group(2), 0) + int(m.group(1))
    assert counts["/memory/timeline"] == len([r for r in timeline(recs)])
    assert counts["/action/dx"] == len(steps) and counts["/proprio/eef_x"] == len(steps)
    assert counts["/memory/attempts"] == 4 and "/subgoal/text" in counts
    assert len(timeline_table(timeline(recs)).rows) == len(timeline(recs))
