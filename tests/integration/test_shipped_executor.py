"""The shipped executor checkpoints load by default and drive the closed loop in robosuite.

``checkpoints/<task>_diffusion`` is the track executor (proprio + the subgoal's 3-D trace, no images);
``checkpoints/image/`` holds the image executors (Diffusion Policy's U-Net), the flat baseline among them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from executor_vla.loading import checkpoint_family, load_executor
from tandem.runtime import registry
from tandem.runtime.registry import build_stack
from tandem.runtime.rollout import run_episode

pytestmark = [pytest.mark.sim, pytest.mark.integration]

SHIPPED = {  # path under checkpoints/ -> (family, conditioning, size limit MB)
    **{f"{task}_diffusion": ("track", "subgoal", 10) for task in ("stack_three", "pick_place_bins", "nut_assembly")},
    "image/stack_three_diffusion": ("image", "subgoal", 50),
    "image/stack_three_flat": ("image", "instruction", 50),
    **{f"flat_state/{task}": ("track", "instruction", 10)
       for task in ("stack_three", "pick_place_bins", "nut_assembly")},
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_checkpoint_is_small_and_loads_without_pickle(name):
    family, conditioning, limit_mb = SHIPPED[name]
    path = registry.SHIPPED_CHECKPOINTS / name
    size = sum(f.stat().st_size for f in path.iterdir())
    assert size <= limit_mb * 2**20, f"{path} is {size / 2**20:.1f} MB"
    assert sorted(f.name for f in path.iterdir()) == ["command.txt", "config.json", "model.safetensors", "stats.json"]
    assert checkpoint_family(path) == family
    ex = load_executor(path)
    assert ex.cfg.conditioning_source == conditioning
    extra = json.loads((path / "config.json").read_text())["extra"]
    assert extra["step"] > 0  # trained, not initialised
    if family == "track":  # trained on this CPU within the budget, on its own task's demonstrations
        assert extra["train_minutes"] <= 30 and ex.cfg.tasks == (name.split("/")[-1].removesuffix("_diffusion"),)


def _cfg(planner: str, verifier: str, goals: dict, budget, render: bool):
    return {"task": {"name": "stack_three"}, "planner": {"name": planner}, "verifier": {"name": verifier},
            "executor": {"name": "diffusion", "checkpoint": None, "torch_threads": 1},
            "goals": goals, "perturb": {"name": "none"},
            "env": {"cameras": ["agentview", "wrist"], "image_size": [128, 128], "render": render},
            "agent": {"max_attempts_per_subgoal": 3, "subgoal_step_budget": budget, "max_plans": 40}}


TRACK = _cfg("oracle", "oracle", {"name": "oracle", "goal_image": False, "trace": False, "trace_3d": True}, 400,
             render=False)
FLAT_IMAGE = _cfg("instruction", "oracle_task", {"name": "none"}, None, render=True)


@pytest.mark.parametrize("cfg,family", [(TRACK, "track"), (FLAT_IMAGE, "image")], ids=["track", "flat_image"])
def test_default_executor_runs_the_closed_loop(tmp_path, cfg, family):
    stack = build_stack(cfg)
    try:
        assert type(stack.agent.executor).__name__ == {"track": "TrackExecutor", "image": "DiffusionExecutor"}[family]
        if family == "image":
            assert stack.env.image_size == (84, 84)  # built to match the checkpoint, not the config's 128 px
        actions = []
        res = run_episode(stack.env, stack.agent, seed=1000, out_dir=tmp_path, record_video=False, max_steps=12,
                          on_step=lambda rec: actions.append(np.asarray(rec.action)))
    finally:
        stack.close()
    assert res.summary["steps"] == 12 and len(actions) == 12
    a = np.stack(actions)
    assert np.isfinite(a).all() and (np.abs(a) <= 1.0).all()
    assert len(np.unique(a.round(4), axis=0)) > 1  # the policy acts; it does not repeat one action
