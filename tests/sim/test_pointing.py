"""Pointing mode on the real simulator: points at the cubes (as the oracle-sim VLM gives them), lifted with the rendered
depth and the camera calibration, give the scripted expert's waypoints within millimetres."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner_vlm.learned.camera import CameraCalibration
from planner_vlm.pointing import PointingGeometry
from sim.tasks.registry import point_geometry
from sim.tasks.stack_three.scene import CUBE_HALF as SCENE_CUBE_HALF
from sim.tasks.stack_three.waypoint_geometry import CUBE_HALF
from tandem.core.errors import ConfigError
from tandem.core.types import KeypointTrace, Subgoal
from tandem.runtime.oracle_sim_vlm import subgoal_points

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def depth_env():
    from sim.robosuite_env import RobosuiteEnv

    env = RobosuiteEnv("stack_three", cameras=("agentview",), image_size=(128, 128), depth_cameras=("agentview",))
    yield env
    env.close()


def _pointed(env, obs, skill, args, sigma=0.0, seed=0):
    cal_json = env.camera_calibration("agentview")
    px = subgoal_points(list(args), obs.privileged["objects"], cal_json, CUBE_HALF)
    px = px + np.random.default_rng(seed).normal(0, sigma, px.shape)
    sg = Subgoal(id="s", skill=skill, args=tuple(args), text=f"{skill} {' '.join(args)}",
                 trace=KeypointTrace(camera="agentview", points=px.astype(np.float32), image_size=(128, 128)))
    geometry = PointingGeometry(point_geometry("stack_three"), CameraCalibration.from_json(cal_json))
    return geometry, sg


def _expert(env, skill, args):
    from sim.experts import plan_waypoints

    return plan_waypoints(env, Subgoal(id="e", skill=skill, args=tuple(args), text=""))


@pytest.mark.parametrize("seed", [500, 501, 502])
def test_pointing_at_the_truth_gives_the_experts_pick(depth_env, seed):
    obs, _ = depth_env.reset(seed)
    cube = "red"
    geometry, sg = _pointed(depth_env, obs, "pick", [cube])
    filled = geometry.fill(sg, obs)
    expert = _expert(depth_env, "pick", [cube])
    assert filled.trace_3d is not None and len(filled.trace_3d) == len(expert) + 1
    got = filled.trace_3d.points[1:]
    want = np.stack([w.pos for w in expert])
    assert np.abs(got - want).max() < 0.006  # m: depth lift of the top centre vs. the simulator's pose
    # the grasp yaw: the same modulo the cube's quarter-turn symmetry
    d = (filled.trace_3d.yaw[2] - expert[1].yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4
    assert abs(d) < math.radians(5)
    assert filled.trace is not None and filled.trace.points.shape == (len(expert) + 1, 2)


def test_pointing_noise_moves_the_trace_and_missing_depth_is_recorded(depth_env):
    obs, _ = depth_env.reset(500)
    geometry, sg = _pointed(depth_env, obs, "stack", ["red", "green"], sigma=4.0, seed=1)
    filled = geometry.fill(sg, obs)  # not held: the expert's pick first, then the stack (8 waypoints)
    assert filled.trace_3d is not None and len(filled.trace_3d) == 9

    class Memory:
        events: list = []

        def record_event(self, kind, step, **data):
            self.events.append((kind, data))

    no_depth = type(obs)(images=obs.images, proprio=obs.proprio, t=obs.t, step=obs.step, joints=obs.joints)
    mem = Memory()
    out = geometry.fill(sg, no_depth, mem)
    assert out.trace_3d is None and mem.events[0][0] == "pointing_failed" and "depth" in mem.events[0][1]["reason"]


def test_pointing_geometry_refuses_other_tasks():
    with pytest.raises(ConfigError, match="no pointing geometry"):
        point_geometry("nut_assembly")
    assert CUBE_HALF == SCENE_CUBE_HALF


def test_a_held_cube_is_placed_from_the_hand(depth_env):
    """After the expert's pick, the stack trace starts from the hand (no second pick), over the target's top."""
    from sim.experts import ScriptedExecutor

    obs, _ = depth_env.reset(501)
    geometry, sg = _pointed(depth_env, obs, "stack", ["red", "green"])
    assert len(geometry.fill(sg, obs).trace_3d) == 9  # at the start, red is on the table: pick, then stack
    ex = ScriptedExecutor(depth_env)
    ex.set_subgoal(Subgoal(id="p", skill="pick", args=("red",), text="pick up the red cube"))
    for _ in range(200):
        if ex.subgoal_done():
            break
        obs, *_ = depth_env.step(ex.select_action(obs))
    assert obs.privileged["predicates"]["grasped(red)"]
    geometry, sg = _pointed(depth_env, obs, "stack", ["red", "green"])
    filled = geometry.fill(sg, obs)
    assert len(filled.trace_3d) == 5  # the hand now, then the stack's four waypoints
    green = np.asarray(obs.privileged["objects"]["green"]["pos"])
    place = filled.trace_3d.points[2]  # "lower": the held cube's centre over green's top
    assert np.abs(place[:2] - green[:2]).max() < 0.006 and abs(place[2] - (green[2] + 2 * CUBE_HALF + 0.004)) < 0.006
