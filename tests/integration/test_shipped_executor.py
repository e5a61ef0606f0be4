"""The shipped executor checkpoints load by default and drive the closed loop in robosuite."""

from __future__ import annotations

import json

import numpy as np
import pytest

from executor_vla.policy import DiffusionExecutor
from tandem.runtime import registry
from tandem.runtime.registry import build_stack
from tandem.runtime.rollout import run_episode

pytestmark = [pytest.mark.sim, pytest.mark.integration]


def _cfg(planner: str, verifier: str, goals: str, budget):
    return {"task": {"name": "stack_three"}, "planner": {"name": planner}, "verifier": {"name": verifier},
            "executor": {"name": "diffusion", "checkpoint": None, "torch_threads": 1},
            "goals": {"name": goals, "camera": "agentview"}, "perturb": {"name": "none"},
            "env": {"cameras": ["agentview", "wrist"], "image_size": [128, 128], "render": True},
            "agent": {"max_attempts_per_subgoal": 3, "subgoal_step_budget": budget, "max_plans": 40}}


@pytest.mark.parametrize("kind", ["diffusion", "flat"])
def test_shipped_checkpoint_is_small_and_loads_without_pickle(kind):
    path = registry.SHIPPED_CHECKPOINTS / f"stack_three_{kind}"
    size = sum(f.stat().st_size for f in path.iterdir())
    assert size <= 50 * 2**20, f"{path} is {size / 2**20:.1f} MB"
    assert sorted(f.name for f in path.iterdir()) == ["command.txt", "config.json", "model.safetensors", "stats.json"]
    ex = DiffusionExecutor.from_checkpoint(path)
    assert ex.cfg.conditioning_source == ("instruction" if kind == "flat" else "subgoal")
    assert json.loads((path / "config.json").read_text())["extra"]["step"] > 0  # trained, not initialised


@pytest.mark.parametrize("planner,verifier,goals,budget", [("oracle", "oracle", "oracle", 400),
                                                            ("instruction", "oracle_task", "none", None)])
def test_default_diffusion_executor_runs_the_closed_loop(tmp_path, planner, verifier, goals, budget):
    stack = build_stack(_cfg(planner, verifier, goals, budget))
    try:
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
