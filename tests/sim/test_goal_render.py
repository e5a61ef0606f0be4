"""OracleGoalProducer: goal image by teleport-render-restore leaves the simulation bit-exact; trace in pixels."""

from __future__ import annotations

import numpy as np
import pytest
from sim_helpers import make_subgoal, random_actions

from sim.goal_render import OracleGoalProducer
from tandem.core.errors import ConfigError, UnknownObjectError
from tandem.core.protocols import GoalProducer

pytestmark = pytest.mark.sim


def _full_state(env):
    d = env.rs_env.sim.data._data
    return d.qpos.copy(), d.qvel.copy(), d.act.copy(), d.qacc_warmstart.copy(), d.ctrl.copy()


def test_goal_render_is_bit_exact_and_shows_the_goal(render_env):
    env = render_env
    obs, _ = env.reset(6)
    for a in random_actions(5, seed=3):
        obs, *_ = env.step(a * 0.2)
    c = env.episode.choices
    producer = OracleGoalProducer(env)
    assert isinstance(producer, GoalProducer)
    snap = env.save_state()
    before = _full_state(env)
    img_before = env.render_camera("agentview")
    sg = producer.produce(make_subgoal(env, 0, "stack", (c["middle"], c["bottom"])), obs)
    after = _full_state(env)
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(img_before, env.render_camera("agentview"))
    assert sg.goal_image.shape == (128, 128, 3) and sg.goal_image.dtype == np.uint8
    assert np.abs(sg.goal_image.astype(int) - img_before.astype(int)).sum() > 1000  # the cube moved
    # the moved cube appears where it would rest on the bottom cube
    goal_pos = env.task_def.goal_poses(env.rs_env, env.episode, "stack", (c["middle"], c["bottom"]))[c["middle"]][0]
    gx, gy = np.round(env.world_to_pixel(goal_pos, "agentview")[0]).astype(int)
    ch = {"red": 0, "green": 1, "blue": 2}[c["middle"]]
    px = sg.goal_image[gy, gx].astype(int)
    assert px[ch] == px.max(), px

    # a rollout after producing is identical to one from the restored snapshot without producing
    acts = random_actions(20, seed=4)
    q1 = [env.step(a)[0].proprio for a in acts]
    env.restore_state(snap)
    q2 = [env.step(a)[0].proprio for a in acts]
    np.testing.assert_array_equal(np.stack(q1), np.stack(q2))


def test_trace_starts_at_eef_and_stays_in_image(render_env):
    env = render_env
    obs, _ = env.reset(7)
    c = env.episode.choices
    producer = OracleGoalProducer(env, goal_image=False)
    sg = producer.produce(make_subgoal(env, 0, "pick", (c["middle"],)), obs)
    assert sg.goal_image is None
    tr = sg.trace
    assert tr.camera == "agentview" and tr.image_size == (128, 128)
    assert tr.points.shape == (5, 2) and tr.points.dtype == np.float32  # eef + 4 pick waypoints
    assert np.all(tr.points >= 0) and np.all(tr.points <= 127)
    np.testing.assert_allclose(tr.points[0], env.world_to_pixel(env.eef_pose()[0], "agentview")[0], atol=1e-4)
    # the grasp waypoint projects onto the cube
    cube = obs.privileged["objects"][c["middle"]]["pos"]
    np.testing.assert_allclose(tr.points[2], env.world_to_pixel(np.array(cube), "agentview")[0], atol=1.0)


def test_errors(render_env, blind_env):
    with pytest.raises(ConfigError, match="render=True"):
        OracleGoalProducer(blind_env)
    env = render_env
    env.reset(0)
    with pytest.raises(UnknownObjectError):
        OracleGoalProducer(env).produce(make_subgoal(env, 0, "pick", ("purple",)), None)
