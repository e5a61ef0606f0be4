"""The surprise perturbations (``configs/suite/surprises.yaml``) fire once and have their effect in the simulator:
an object gone from the table, the surface and lights recoloured, a cube knocked off as it is released, an object
under the arm displaced, a grasp lost right after it closed."""

from __future__ import annotations

import numpy as np
import pytest
from sim_helpers import make_subgoal, run_subgoal

from sim.experts import ScriptedExecutor
from sim.perturbations import (
    DROP_OPEN_STEPS,
    HIDE_SHIFT_M,
    VANISH_POS,
    PerturbationSpec,
    object_geoms,
    surface_geoms,
)

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def env_factory():
    from sim.robosuite_env import RobosuiteEnv

    envs = []

    def make(task, spec, **kwargs):
        env = RobosuiteEnv(task, render=kwargs.pop("render", False), perturbation=spec, **kwargs)
        envs.append(env)
        return env

    yield make
    for e in envs:
        e.close()


def _fired(infos):
    return [i["perturbation"] for i in infos if "perturbation" in i]


def test_vanish_removes_the_object_from_the_scene_for_good_and_reset_brings_it_back(env_factory):
    env = env_factory("stack_three", PerturbationSpec("vanish", at_step=2))
    obs, _ = env.reset(500)
    m = env.rs_env.sim.model._model
    masks = (m.geom_contype.copy(), m.geom_conaffinity.copy())
    infos = [env.step(np.zeros(7))[4] for _ in range(3)]
    (p,) = _fired(infos)
    obj = p["detail"]["object"]
    assert p["step"] == 2 and p["detail"]["kind"] == "unplaced" and p["added_steps"] == 0
    geoms = object_geoms(env, obj)
    assert geoms and all(m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0 for g in geoms)
    for _ in range(20):  # pinned: it does not fall, and nothing can reach it
        obs, _, _, _, info = env.step(np.zeros(7))
    np.testing.assert_allclose(obs.privileged["objects"][obj]["pos"], VANISH_POS, atol=1e-6)
    assert not info["success"] and not any(v for k, v in info["predicates"].items() if obj in k)
    env.reset(500)  # the next episode starts with the object's collisions back and the object on the table
    assert any(masks[0][g] for g in geoms)  # it collided before
    np.testing.assert_array_equal(m.geom_contype, masks[0])
    np.testing.assert_array_equal(m.geom_conaffinity, masks[1])
    assert env.observe().privileged["objects"][obj]["pos"][2] > 0.8


def test_appearance_shift_recolours_the_table_and_lights_and_is_undone_by_restore_and_reset(env_factory):
    env = env_factory("stack_three", PerturbationSpec("appearance_shift", at_step=1), render=True,
                      cameras=("agentview",), image_size=(64, 64), lazy_images=False)
    obs, _ = env.reset(501)
    m = env.rs_env.sim.model._model
    mats = sorted({int(m.geom_matid[g]) for g in surface_geoms(env)} - {-1})
    rgba0, light0 = m.mat_rgba[mats].copy(), m.light_diffuse.copy()
    before = env.save_state()
    img0 = obs.images["agentview"].astype(float)
    obs, _, _, _, info = env.step(np.zeros(7))
    p = info["perturbation"]
    assert p["name"] == "appearance_shift" and "table_ceramic" in p["detail"]["materials"]
    assert not np.allclose(m.mat_rgba[mats], rgba0) and not np.allclose(m.light_diffuse, light0)
    assert np.abs(obs.images["agentview"].astype(float) - img0).mean() > 3.0  # the camera sees it
    shifted, after = m.mat_rgba[mats].copy(), env.save_state()
    env.restore_state(before)  # a snapshot from before the shift shows the old appearance ...
    np.testing.assert_array_equal(m.mat_rgba[mats], rgba0)
    env.restore_state(after)  # ... and one from after it the shifted one
    np.testing.assert_array_equal(m.mat_rgba[mats], shifted)
    env.reset(501)
    np.testing.assert_array_equal(m.light_diffuse, light0)


def test_knock_at_release_knocks_the_cube_off_as_the_fingers_open_over_its_support(env_factory):
    env = env_factory("stack_three", PerturbationSpec("knock_at_release"))
    obs, _ = env.reset(502)
    c = env.episode.choices
    ex = ScriptedExecutor(env)
    infos: list = []
    obs, _, _ = run_subgoal(env, ex, make_subgoal(env, 0, "pick", (c["middle"],)), obs, on_info=infos.append)
    assert not _fired(infos)
    obs, _, _ = run_subgoal(env, ex, make_subgoal(env, 1, "stack", (c["middle"], c["bottom"])), obs,
                            on_info=infos.append)
    (p,) = _fired(infos)
    assert p["detail"]["object"] == c["middle"] and p["detail"]["support"] == c["bottom"]
    assert p["added_steps"] == 2 * env.task_def.steps_per_subgoal
    on = f"on({c['middle']},{c['bottom']})"
    assert not any(i["predicates"][on] for i in infos)  # it never rested on its support
    dist = np.linalg.norm(np.subtract(obs.privileged["objects"][c["middle"]]["pos"][:2],
                                      obs.privileged["objects"][c["bottom"]]["pos"][:2]))
    assert dist > 0.05


def test_move_hidden_moves_the_cube_under_the_arm_a_few_cm(env_factory):
    env = env_factory("stack_three", PerturbationSpec("move_hidden"))
    obs, _ = env.reset(503)
    cube = env.episode.choices["middle"]
    start = np.asarray(obs.privileged["objects"][cube]["pos"])
    ex = ScriptedExecutor(env)
    infos: list = []
    obs, _, _ = run_subgoal(env, ex, make_subgoal(env, 0, "pick", (cube,)), obs, budget=150, on_info=infos.append)
    (p,) = _fired(infos)
    detail = p["detail"]
    assert detail["object"] == cube and HIDE_SHIFT_M[0] <= detail["shift_m"] <= HIDE_SHIFT_M[1]
    fired_info = next(i for i in infos if "perturbation" in i)
    assert not fired_info["predicates"][f"grasped({cube})"]  # moved before the fingers took it
    moved = np.linalg.norm(np.subtract(detail["to"][:2], start[:2]))
    assert HIDE_SHIFT_M[0] - 0.005 <= moved <= HIDE_SHIFT_M[1] + 0.005


def test_drop_after_grasp_opens_the_gripper_right_after_the_nut_is_grasped(env_factory):
    env = env_factory("nut_assembly", PerturbationSpec("drop_after_grasp"))
    obs, _ = env.reset(504)
    nut = env.episode.choices["order"][0]
    ex = ScriptedExecutor(env)
    ex.set_subgoal(make_subgoal(env, 0, "pick", (nut,)), env.spec)
    fired_at, widths, grasped_after = None, [], []
    for t in range(300):
        obs, _, _, _, info = env.step(ex.select_action(obs))
        if "perturbation" in info:
            fired_at = t
            assert info["perturbation"]["detail"] == {"object": nut, "open_steps": DROP_OPEN_STEPS}
            assert info["predicates"][f"grasped({nut})"]  # it fired on the grasp's onset
            width0 = env.gripper_opening()
        elif fired_at is not None and t <= fired_at + DROP_OPEN_STEPS:
            widths.append(env.gripper_opening())
            grasped_after.append(info["predicates"][f"grasped({nut})"])
        elif fired_at is not None:
            break
    assert fired_at is not None
    assert max(widths) > width0 + 0.01 and not grasped_after[-1]  # the fingers opened and let go
