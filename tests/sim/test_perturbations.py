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

    def make(spec, **kwargs):
        env = RobosuiteEnv("stack_three", render=False, perturbation=spec, **kwargs)
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
    at_start = env.save_state()
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
    # a pick and a stack to do again: the budget grows by two subgoals' share (800 for stack_three's 4)
    assert p["added_steps"] == 400 and env.spec.max_steps == 1200 and env.episode.spec.max_steps == 1200
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
    env.restore_state(at_start)  # a snapshot from before the perturbation brings its budget back
    assert env.spec.max_steps == 800


def test_open_gripper_drops_the_carried_cube(env_factory):
    env = env_factory(PerturbationSpec("open_gripper", at_step=5), perturbation_budget=False)
    obs, _ = env.reset(1)
    c = env.episode.choices
    ex = ScriptedExecutor(env)
    fired: list = []
    obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 0, "pick", (c["middle"],)), obs, on_info=_collect(fired))
    assert len(fired) == 1 and fired[0]["perturbation"]["detail"]["object"] == c["middle"]
    assert fired[0]["perturbation"]["added_steps"] == 0 and env.spec.max_steps == 800  # perturbation_budget off
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
    assert fired[0]["perturbation"]["added_steps"] == 0  # it undid nothing finished
    assert info["predicates"][f"grasped({c['top']})"]  # the expert opened the gripper again and still picked


def test_bad_perturbations():
    from sim.robosuite_env import RobosuiteEnv

    with pytest.raises(UnknownNameError, match="knock_top_cube, miss_grasp, move_hidden, open_gripper, pull_from_bin"):
        RobosuiteEnv("stack_three", render=False, perturbation=PerturbationSpec("earthquake"))
    with pytest.raises(UnknownNameError, match=r"stack_three.*knock_top_cube, move_hidden, open_gripper"):
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


def _step_through(perturber, env, steps) -> list:
    """Run the perturber's after-step hook on a fake env at each of ``steps``; returns what fired."""
    fired = []
    for step in steps:
        env.step_count = env.rs_env["step"] = step
        out = perturber.after_step(env)
        if out is not None:
            fired.append(out)
    return fired


@pytest.mark.parametrize("spec", [PerturbationSpec("pull_from_bin"), PerturbationSpec("pull_from_bin", at_step=1)])
def test_task_implemented_perturbation_is_routed_to_the_task(spec):
    """pull_from_bin is applied by TaskDefinition.perturb once in_bin(x) first holds (no robosuite needed)."""
    from sim.perturbations import Perturber

    task, env = _FakeTask(), _FakeEnv()
    p = Perturber(spec, task, np.random.default_rng(0))
    fired = _step_through(p, env, range(1, 7))
    assert fired == [{"name": "pull_from_bin", "step": 3, "detail": {"object": "milk", "to": [0.0, 0.0, 0.9]}}]
    assert task.calls == [("pull_from_bin", "milk")] and env.forwards == 1


class _DecliningTask(_FakeTask):
    """in_bin(milk) holds from step 3 until step 8; perturb declines until step 5."""

    def predicates(self, rs_env, episode):
        return {"in_bin(milk)": 3 <= rs_env["step"] < 8, "in_bin(can)": False}

    def perturb(self, rs_env, episode, name, rng, target=None):
        self.calls.append((name, target))
        return None if rs_env["step"] < 5 else {"object": target, "push_to": [0.1, 0.2, 0.9]}


def test_a_declined_task_perturbation_is_retried_while_its_event_holds_and_its_push_drives_the_arm():
    """The documented contract of TaskDefinition.perturb: None declines and the perturbation is retried on the next
    step (it used to be dropped for good in event mode). A detail with ``push_to`` replaces the position action by
    the P-law towards it for PUSH_STEPS steps, zeroes the rotation and keeps the gripper."""
    from sim.perturbations import PUSH_STEPS, Perturber

    task, env = _DecliningTask(), _FakeEnv()
    env.controller_settings = {"output_max": [0.05, 0.05, 0.05, 0.5, 0.5, 0.5]}
    env.eef_pose = lambda: (np.array([0.1, 0.2, 1.0]), np.eye(3))
    p = Perturber(PerturbationSpec("pull_from_bin"), task, np.random.default_rng(0))
    fired = _step_through(p, env, range(1, 10))
    assert [f["step"] for f in fired] == [5]
    assert fired[0]["detail"]["push_steps"] == PUSH_STEPS
    assert task.calls == [("pull_from_bin", "milk")] * 3  # steps 3, 4 (declined), 5 (applied)
    action = np.array([0.3, -0.2, 0.1, 0.4, 0.4, 0.4, 1.0])
    pushed = p.before_step(env, action)
    np.testing.assert_allclose(pushed, [0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0])  # 10 cm down, clipped to one unit
    for _ in range(PUSH_STEPS - 1):
        p.before_step(env, action)
    np.testing.assert_array_equal(p.before_step(env, action), action)  # the push is over


def test_a_declined_perturbation_is_dropped_once_its_event_no_longer_holds():
    from sim.perturbations import Perturber

    class Never(_DecliningTask):
        def perturb(self, rs_env, episode, name, rng, target=None):
            self.calls.append((name, target))
            return None

    task, env = Never(), _FakeEnv()
    p = Perturber(PerturbationSpec("pull_from_bin"), task, np.random.default_rng(0))
    assert _step_through(p, env, range(1, 12)) == []
    assert len(task.calls) == 5 and p.pending is None  # steps 3..7, while in_bin(milk) held


def test_jam_on_peg_brings_the_nut_down_on_its_pegs_top_and_the_expert_still_inserts_it():
    """nut_assembly's jam_on_peg: over its peg, the grasped nut is driven 1.5-3 cm off the axis onto the peg's top
    (still grasped, resting about 1 cm above the top); the expert then rises, aligns and threads it."""
    from sim.robosuite_env import RobosuiteEnv
    from sim.tasks.nut_assembly.perturbations import JAM_OFFSET
    from sim.tasks.nut_assembly.scene import NUTS, PEG_TOP_Z

    env = RobosuiteEnv("nut_assembly", render=False, perturbation=PerturbationSpec("jam_on_peg"))
    try:
        obs, _ = env.reset(3)
        nut = env.episode.choices["order"][0]
        peg = NUTS[nut].peg
        ex = ScriptedExecutor(env)
        obs, info, _ = run_subgoal(env, ex, make_subgoal(env, 0, "pick", (nut,)), obs)
        assert info["predicates"][f"grasped({nut})"]
        axis = env.task_def.parts.scene.peg_pos(env.rs_env, peg)[:2]
        ex.set_subgoal(make_subgoal(env, 1, "insert", (nut, peg)), env.spec)
        fired_at, jammed = None, []
        for t in range(400):
            obs, _, _, _, info = env.step(ex.select_action(obs))
            if "perturbation" in info:
                fired_at = t
                detail = info["perturbation"]["detail"]
                assert detail["object"] == nut and detail["peg"] == peg
                assert JAM_OFFSET[0] <= detail["offset_m"] <= JAM_OFFSET[1]
            if fired_at is not None and t == fired_at + 16:  # the end of the push: resting on the peg's top
                pos = np.asarray(obs.privileged["objects"][nut]["pos"])
                jammed = [float(np.linalg.norm(pos[:2] - axis)), float(pos[2] - PEG_TOP_Z)]
                assert info["predicates"][f"grasped({nut})"]
            if ex.subgoal_done():
                break
        assert fired_at is not None
        assert jammed[0] > 0.012 and 0.0 < jammed[1] < 0.015, jammed
        assert info["predicates"][f"on_peg({nut},{peg})"]
    finally:
        env.close()


def test_a_perturbation_the_task_lacks_is_named_with_the_task_and_its_perturbations():
    from sim.robosuite_env import RobosuiteEnv

    with pytest.raises(UnknownNameError) as e:
        RobosuiteEnv("stack_three", render=False, perturbation=PerturbationSpec("jam_on_peg"))
    assert str(e.value) == ("unknown perturbation 'jam_on_peg' for task 'stack_three'; known perturbations for task "
                            "'stack_three': appearance_shift, close_gripper, knock_at_release, knock_top_cube, move_hidden, "
                            "open_gripper, slip_fast, vanish")
