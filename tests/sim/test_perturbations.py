"""Perturbations fire once, at the right moment, and show up in the predicates."""

from __future__ import annotations

import numpy as np
import pytest
from sim_helpers import make_subgoal, run_subgoal

from sim.experts import ScriptedExecutor
from sim.perturbations import PerturbationSpec
from tandem.core.errors import ConfigError, UnknownNameError

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def env_factory():
    from sim.robosuite_env import RobosuiteEnv

    envs = []

    def make(spec):
        env = RobosuiteEnv("stack_three", render=False, perturbation=spec)
        envs.append(env)
        return env

    yield make
    for e in envs:
        e.close()


def _collect(fired):
    def on_info(info):
        if "perturbation" in info:
            fired.append(info)
    return on_info


def test_knock_top_cube(env_factory):
    env = env_factory(PerturbationSpec("knock_top_cube"))
    obs, _ = env.reset(0)
    c = env.episode.choices
    ex = ScriptedExecutor(env)
    fired: list = []
    obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 0, "pick", (c["middle"],)), obs, on_info=_collect(fired))
    assert not fired
    obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 1, "stack", (c["middle"], c["bottom"])), obs,
                               on_info=_collect(fired))
    assert len(fired) == 1
    p = fired[0]["perturbation"]
    assert p["name"] == "knock_top_cube" and p["detail"]["object"] == c["middle"]
    assert p["detail"]["support"] == c["bottom"] and p["step"] == fired[0]["step"]
    # on the step it fired the cube is already off the bottom cube, lying on the table
    assert not fired[0]["predicates"][f"on({c['middle']},{c['bottom']})"]
    for _ in range(10):
        obs, _, _, _, info = env.step(np.zeros(7))
    assert "perturbation" not in info  # once per episode
    assert not info["predicates"][f"on({c['middle']},{c['bottom']})"]
    z = obs.privileged["objects"][c["middle"]]["pos"][2]
    assert abs(z - (env.rs_env.table_offset[2] + 0.022)) < 0.005
    # the expert recovers: pick + stack again
    obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 2, "stack", (c["middle"], c["bottom"])), obs)
    assert info["predicates"][f"on({c['middle']},{c['bottom']})"]


def test_open_gripper_drops_the_carried_cube(env_factory):
    env = env_factory(PerturbationSpec("open_gripper", at_step=5))
    obs, _ = env.reset(1)
    c = env.episode.choices
    ex = ScriptedExecutor(env)
    fired: list = []
    obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 0, "pick", (c["middle"],)), obs, on_info=_collect(fired))
    assert len(fired) == 1 and fired[0]["perturbation"]["detail"]["object"] == c["middle"]
    assert fired[0]["predicates"][f"grasped({c['middle']})"]  # it fired while carrying
    for _ in range(15):
        obs, _, _, _, info = env.step(ex.select_action(obs))
    assert not info["predicates"][f"grasped({c['middle']})"]
    z = obs.privileged["objects"][c["middle"]]["pos"][2]
    assert z < env.rs_env.table_offset[2] + 0.03  # it fell back to the table


def test_close_gripper_closes_the_free_gripper_after_the_first_grasp_and_the_expert_reopens_it(env_factory):
    env = env_factory(PerturbationSpec("close_gripper", after_success=2))
    obs, _ = env.reset(2)
    c = env.episode.choices
    ex = ScriptedExecutor(env)
    fired: list = []
    obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 0, "pick", (c["middle"],)), obs, on_info=_collect(fired))
    assert not fired  # the first free moment (n = 1, the episode's start) is not the one asked for
    obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 1, "stack", (c["middle"], c["bottom"])), obs,
                               on_info=_collect(fired))
    obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 2, "pick", (c["top"],)), obs, on_info=_collect(fired))
    assert len(fired) == 1
    detail = fired[0]["perturbation"]["detail"]
    assert detail == {"after_grasps": 1, "close_steps": 15}
    assert info["predicates"][f"grasped({c['top']})"]  # the expert opened the gripper again and still picked


def test_bad_perturbations():
    from sim.robosuite_env import RobosuiteEnv

    with pytest.raises(UnknownNameError, match="knock_top_cube, open_gripper, pull_from_bin"):
        RobosuiteEnv("stack_three", render=False, perturbation=PerturbationSpec("earthquake"))
    with pytest.raises(UnknownNameError, match=r"stack_three.*knock_top_cube, open_gripper"):
        RobosuiteEnv("stack_three", render=False, perturbation=PerturbationSpec("pull_from_bin"))
    with pytest.raises(ConfigError, match="after_success"):
        RobosuiteEnv("stack_three", render=False, perturbation=PerturbationSpec("open_gripper", after_success=0))


class _FakeTask:
    """Minimal TaskDefinition stand-in: in_bin(milk) becomes true at step 3."""

    name = "fake_bins"
    perturbation_names = ("pull_from_bin",)

    def __init__(self):
        self.calls = []

    def predicates(self, rs_env, episode):
        return {"in_bin(milk)": rs_env["step"] >= 3, "in_bin(can)": False}

    def perturb(self, rs_env, episode, name, rng, target=None):
        self.calls.append((name, target))
        return {"object": target, "to": [0.0, 0.0, 0.9]}


class _FakeEnv:
    def __init__(self):
        self.rs_env = {"step": 0}
        self.episode = None
        self.step_count = 0
        self.forwards = 0

    def forward(self):
        self.forwards += 1


@pytest.mark.parametrize("spec", [PerturbationSpec("pull_from_bin"), PerturbationSpec("pull_from_bin", at_step=1)])
def test_task_implemented_perturbation_is_routed_to_the_task(spec):
    """pull_from_bin is applied by TaskDefinition.perturb once in_bin(x) first holds (no robosuite needed)."""
    from sim.perturbations import Perturber

    task, env = _FakeTask(), _FakeEnv()
    p = Perturber(spec, task, np.random.default_rng(0))
    fired = []
    for step in range(1, 7):
        env.step_count = env.rs_env["step"] = step
        out = p.after_step(env)
        if out is not None:
            fired.append(out)
    assert fired == [{"name": "pull_from_bin", "step": 3, "detail": {"object": "milk", "to": [0.0, 0.0, 0.9]}}]
    assert task.calls == [("pull_from_bin", "milk")] and env.forwards == 1
