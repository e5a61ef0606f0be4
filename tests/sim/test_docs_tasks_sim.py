"""docs/tasks.md's example task, written from the guide's blocks, runs the oracle stack in robosuite and succeeds, as
the guide says."""

from __future__ import annotations

import re

import pytest
from docs_blocks import TASKS_GUIDE, drop_modules, install_example_task

pytestmark = pytest.mark.sim


def test_the_example_task_succeeds_with_the_oracle_stack(tmp_path, monkeypatch):
    from tandem.runtime.config import DemoConfig, load
    from tandem.runtime.registry import build_stack
    from tandem.runtime.rollout import run_episode

    name = install_example_task(tmp_path, monkeypatch)
    claim = re.search(r"succeeds in\s+(\d+) steps", TASKS_GUIDE.read_text())
    assert claim, "the guide no longer says how many steps the example takes"
    cfg = load(DemoConfig, {"task": {"name": name}, "planner": {"name": "oracle"}, "verifier": {"name": "oracle"},
                            "executor": {"name": "scripted"}, "goals": {"name": "oracle", "goal_image": False},
                            "env": {"render": False}, "video": False})
    try:
        stack = build_stack(cfg)
        try:
            summary = run_episode(stack.env, stack.agent, seed=0).summary
        finally:
            stack.close()
    finally:
        drop_modules(name)
    assert summary["success"] is True and summary["privileged"] is True  # the oracle stack, labelled as such
    assert summary["steps"] <= int(claim.group(1)) + 10, summary["steps"]
