"""tandem-demo end to end, and every perturbation detected by the verifier and recovered from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import imageio.v2 as imageio
import pytest

from memory.task_memory import TaskMemoryV1
from tandem.runtime.registry import build_stack
from tandem.runtime.rollout import run_episode

pytestmark = [pytest.mark.sim, pytest.mark.integration]

DEMO = [sys.executable, "-m", "tandem.cli.demo"]
#: The oracle stack, the upper bound, one option away from the default (configs/demo.yaml, README).
ORACLE = ("planner=oracle", "verifier=oracle", "executor=scripted", "goals=oracle")


def _run_demo(tmp_path: Path, *overrides: str) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "run"
    env = {**os.environ, "MUJOCO_GL": "egl"}
    proc = subprocess.run([*DEMO, f"out_dir={out}", *overrides], capture_output=True, text=True, env=env,
                          timeout=600, cwd=Path(__file__).resolve().parents[2])
    return proc, out


@pytest.mark.slow
def test_demo_knock_top_cube_recovers_and_writes_artefacts(tmp_path):
    # the oracle stack (the demo's default is the non-privileged one): its scripted recovery is deterministic
    proc, out = _run_demo(tmp_path, *ORACLE, "task=stack_three", "seed=0", "perturb=knock_top_cube")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] is True and summary["recovered"] is True
    assert summary["replans"] >= 1 and summary["perturbations"][0]["name"] == "knock_top_cube"
    # the verifier caught the knocked cube: one failed stack verdict with an informative reason
    failed = [v for v in summary["verdicts"] if not v["success"]]
    assert failed and failed[0]["subgoal"].startswith("stack(") and "is false" in failed[0]["reason"]
    # the printed summary names what it wrote
    assert '"success": true' in proc.stdout and "episode.mp4" in proc.stdout
    # video: agentview + wrist side by side, one frame per control step
    reader = imageio.get_reader(str(out / "episode.mp4"))
    frame = reader.get_data(0)
    assert frame.shape[1] > frame.shape[0] and reader.count_frames() == summary["steps"]
    # memory reloads and tells the story: a failure with its reason, then success
    memory = TaskMemoryV1.load(out / "memory.jsonl")
    view = memory.view()
    assert view["failures"] and view["remaining"] == []
    kinds = [json.loads(line).get("kind") for line in (out / "episode.jsonl").read_text().splitlines()]
    assert {"plan", "attempt", "verdict", "perturbation", "episode_end"} <= set(kinds)
    assert (out / ".hydra" / "config.yaml").exists()


def test_demo_bad_input_is_one_clear_line(tmp_path):
    proc, _ = _run_demo(tmp_path, "task=stack_three", "perturb=pull_from_bin", "video=false")
    assert proc.returncode == 2
    assert "pull_from_bin" in proc.stderr and "knock_top_cube" in proc.stderr and "Traceback" not in proc.stderr
    proc, _ = _run_demo(tmp_path, "task=no_such_task")
    assert proc.returncode == 2 and "no_such_task" in proc.stderr and "stack_three" in proc.stderr


@pytest.mark.parametrize("override,message", [
    ("seed=-1", "error: seed must be >= 0, got -1"),
    ("env.image_size=[84,84,3]", "error: env.image_size must be [H, W] with H, W >= 1, got [84, 84, 3]"),
    ("agent.max_plans=0", "error: agent.max_plans must be >= 1, got 0"),
    ("planner.modle=x", "error: unknown config key planner.modle; known keys of planner: name, state_checkpoint"),
    ("agent.max_plans=many", "Value 'many' of type 'str' could not be converted to Integer"),
])
def test_bad_values_exit_2_before_anything_runs(tmp_path, override, message):
    """The whole config is validated first: bad input is exit status 2 (README), never a crash row (3)."""
    proc, out = _run_demo(tmp_path, override)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (out / "summary.json").exists()


def _cfg(task: str, perturb: str) -> dict:
    return {"task": {"name": task}, "planner": {"name": "oracle"}, "verifier": {"name": "oracle"},
            "executor": {"name": "scripted"}, "goals": {"name": "none"},
            "perturb": {"name": perturb, "at_step": None, "after_success": 1},
            "env": {"render": False}, "agent": {"max_attempts_per_subgoal": 3, "subgoal_step_budget": 400}}


@pytest.mark.slow
@pytest.mark.parametrize("task,perturb,seed", [("pick_place_bins", "pull_from_bin", 1),
                                               ("stack_three", "open_gripper", 0),
                                               ("nut_assembly", "open_gripper", 0)])
def test_each_perturbation_is_detected_and_recovered(task, perturb, seed):
    stack = build_stack(_cfg(task, perturb))
    try:
        result = run_episode(stack.env, stack.agent, seed=seed, record_video=False)
    finally:
        stack.close()
    s = result.summary
    assert s["perturbations"] and s["perturbations"][0]["name"] == perturb
    assert any(not v["success"] for v in s["verdicts"]), "the verifier should have caught the disturbance"
    assert s["replans"] >= 1
    assert s["success"] is True and s["recovered"] is True, s["failure"]
