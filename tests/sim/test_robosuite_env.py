"""RobosuiteEnv adapter: seeding, images, proprio, save/restore, errors, instability detection."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from sim_helpers import random_actions

from tandem.core.errors import (
    ConfigError,
    NonFiniteActionError,
    PlacementError,
    SimUnstableError,
    UnknownNameError,
    UnknownTaskError,
)
from tandem.core.protocols import Env
from tandem.core.types import PROPRIO_LAYOUT

pytestmark = pytest.mark.sim


def _qpos(env) -> np.ndarray:
    return env.rs_env.sim.data._data.qpos.copy()


def test_protocol_and_spec(render_env):
    env = render_env
    obs, info = env.reset(0)
    assert isinstance(env, Env)
    assert env.action_dim == 7 and env.action_low.dtype == np.float32
    assert np.all(env.action_low == -1) and np.all(env.action_high == 1)
    assert env.spec.name == "stack_three" and env.spec.cameras == ("agentview", "wrist")
    assert env.spec.image_size == (128, 128) and env.spec.control_dt == pytest.approx(0.05)
    assert info["instruction"] == env.spec.instruction and len(info["goals"]) == 2
    priv = obs.privileged
    assert set(priv) == {"task", "objects", "predicates", "success", "goals"}
    assert set(priv["objects"]) == {"red", "green", "blue"} and priv["success"] is False


def test_seed_determinism(render_env):
    env = render_env
    obs_a, info_a = env.reset(11)
    q_a = _qpos(env)
    obs_b, info_b = env.reset(11)
    assert info_a["instruction"] == info_b["instruction"]
    np.testing.assert_array_equal(q_a, _qpos(env))
    np.testing.assert_array_equal(obs_a.images["agentview"], obs_b.images["agentview"])
    env.reset(12)
    assert not np.array_equal(q_a, _qpos(env))
    instructions = {env.reset(s)[1]["instruction"] for s in range(8)}
    assert len(instructions) > 1  # the order is drawn per seed


def test_images_upright_uint8(render_env):
    obs, _ = render_env.reset(3)
    for cam in ("agentview", "wrist"):
        img = obs.images[cam]
        assert img.shape == (128, 128, 3) and img.dtype == np.uint8
    ag = obs.images["agentview"].astype(float)
    # agentview looks at the (white) table from the front and above: the table fills the bottom half,
    # the robot base / background the top. Upside-down images fail this.
    assert ag[64:].mean() > ag[:32].mean() + 20


def test_proprio_layout_grip_site(render_env):
    env = render_env
    obs, _ = env.reset(4)
    for _ in range(3):
        obs, *_ = env.step(np.array([0, 0, 0, 0, 0, 0, 1.0]))
    p = obs.proprio
    assert p.shape == (len(PROPRIO_LAYOUT),) == (8,) and p.dtype == np.float32
    d = env.rs_env.sim.data._data
    sid = env.eef_site_id
    assert env.rs_env.sim.model.site_id2name(sid) == env.controller.ref_name  # the frame OSC tracks
    np.testing.assert_allclose(p[:3], d.site_xpos[sid], atol=1e-6)
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, p[3:7].astype(np.float64))
    np.testing.assert_allclose(mat, d.site_xmat[sid], atol=1e-5)
    assert abs(np.linalg.norm(p[3:7]) - 1) < 1e-5 and p[3] >= 0
    # gripper pointing down: site z axis ~ world -z
    assert mat.reshape(3, 3)[2, 2] < -0.9
    assert 0.0 <= p[7] <= 0.085
    assert obs.step == 3 and obs.t == pytest.approx(0.15)
    # the arm's joints as robosuite reports them (robot0_joint_pos), the wrist last
    assert obs.joints.shape == (7,) and obs.joints.dtype == np.float32
    assert obs.joints[-1] == pytest.approx(env.wrist_angle(), abs=1e-6)


def test_save_restore_bit_exact(render_env):
    env = render_env
    env.reset(5)
    acts = random_actions(60, seed=1)
    for a in acts[:10]:
        env.step(a)
    state = env.save_state()

    def roll():
        qs, imgs = [], []
        for a in acts:
            obs, *_ = env.step(a)
            qs.append(_qpos(env))
        imgs.append(obs.images["agentview"])
        imgs.append(obs.images["wrist"])
        return np.stack(qs), imgs, obs.step

    q1, im1, s1 = roll()
    env.restore_state(state)
    q2, im2, s2 = roll()
    np.testing.assert_array_equal(q1, q2)
    for a, b in zip(im1, im2):
        np.testing.assert_array_equal(a, b)
    assert s1 == s2 == 70


def test_bad_actions_raise(render_env):
    env = render_env
    env.reset(0)
    with pytest.raises(NonFiniteActionError, match="NaN"):
        env.step(np.array([0, 0, np.nan, 0, 0, 0, 0]))
    with pytest.raises(ConfigError, match="shape"):
        env.step(np.zeros(6))
    obs, *_ = env.step(np.full(7, 5.0))  # clipped, not an error
    assert obs.step == 1


def test_instability_raises(render_env):
    env = render_env
    env.reset(0)
    env.rs_env.sim.data._data.qvel[:] = 1e9
    with pytest.raises(SimUnstableError, match="unstable"):
        env.step(np.zeros(7))
    env.reset(0)
    env.rs_env.sim.data._data.qpos[3] = np.nan
    with pytest.raises(SimUnstableError):
        env.step(np.zeros(7))
    env.reset(0)  # the env is usable again after a reset
    env.step(np.zeros(7))


def test_truncation_and_errors():
    from sim.robosuite_env import RobosuiteEnv

    with pytest.raises(UnknownTaskError, match="stack_three"):
        RobosuiteEnv("stack_four", render=False)
    with pytest.raises(UnknownNameError, match="camera"):
        RobosuiteEnv("stack_three", cameras=("nope",))
    env = RobosuiteEnv("stack_three", render=False, max_steps=3)
    try:
        obs, _ = env.reset(1)
        assert obs.images == {}
        flags = [env.step(np.zeros(7))[3] for _ in range(3)]
        assert flags == [False, False, True]
        with pytest.raises(ConfigError):
            env.render_camera("agentview")

        from robosuite.utils.errors import RandomizationError

        def fail(*a, **k):
            raise RandomizationError("Cannot place all objects ):")

        env.rs_env.placement_initializer.sample = fail
        with pytest.raises(PlacementError, match=r"stack_three.*seed 77"):
            env.reset(77)
    finally:
        env.close()


def test_two_envs_render_independently(render_env):
    """robosuite does not re-bind its GL context before rendering; the adapter does (several envs per process)."""
    from sim.robosuite_env import RobosuiteEnv

    obs_a, _ = render_env.reset(8)
    other = RobosuiteEnv("stack_three", cameras=("agentview",))
    try:
        obs_b, _ = other.reset(9)
        again_a = render_env.render_camera("agentview")
        np.testing.assert_array_equal(again_a, obs_a.images["agentview"])
        assert not np.array_equal(obs_b.images["agentview"], obs_a.images["agentview"])
        other.reset(8)
        np.testing.assert_array_equal(other.render_camera("agentview"), obs_a.images["agentview"])
    finally:
        other.close()
    np.testing.assert_array_equal(render_env.render_camera("agentview"), obs_a.images["agentview"])


def test_images_render_when_first_read_and_only_while_current(render_env, monkeypatch):
    from tandem.core.errors import StaleObservationError
    from tandem.core.lazy_images import LazyImages, materialize_images

    env = render_env
    obs, _ = env.reset(5)
    assert isinstance(obs.images, LazyImages) and set(obs.images) == {"agentview", "wrist"}
    renders: list[str] = []
    real = env.render_camera
    monkeypatch.setattr(env, "render_camera", lambda cam, size=None: renders.append(cam) or real(cam, size))
    move = np.array([0.5, 0, 0, 0, 0, 0, -1], np.float32)  # the arm moves: every step changes the state
    first, _, _, _, _ = env.step(move)
    second, _, _, _, _ = env.step(move)
    assert renders == []  # nobody read an image: nothing rendered
    agentview = second.images["agentview"]
    assert renders == ["agentview"] and second.images["agentview"] is agentview  # rendered once, kept
    np.testing.assert_array_equal(agentview, real("agentview"))  # the same picture as an eager render
    with pytest.raises(StaleObservationError, match="'wrist' image of step 1 was never rendered"):
        first.images["wrist"]
    materialize_images(second)
    env.step(move)
    assert second.images["wrist"].shape == (128, 128, 3)  # rendered while current: readable after the step
    assert "wrist" in first.images and len(first.images) == 2  # the keys cost no render


def test_eager_images_on_request():
    from sim.robosuite_env import RobosuiteEnv

    env = RobosuiteEnv("stack_three", cameras=("agentview",), image_size=(32, 32), lazy_images=False)
    try:
        obs, _ = env.reset(0)
        assert type(obs.images) is dict and obs.images["agentview"].shape == (32, 32, 3)
    finally:
        env.close()


def test_an_image_never_rendered_before_the_env_closed_is_stale():
    from sim.robosuite_env import RobosuiteEnv
    from tandem.core.errors import StaleObservationError

    env = RobosuiteEnv("stack_three", cameras=("agentview",), image_size=(32, 32))
    obs, _ = env.reset(0)
    env.close()
    with pytest.raises(StaleObservationError, match="never rendered"):
        obs.images["agentview"]


def test_depth_camera_measures_the_range_to_the_objects():
    """An RGB-D agentview: depth (m, float32, rendered lazily) that puts each cube's visible surface 2-4 cm in front
    of its origin along the camera ray (the depth check's offset), and a refusal of a depth camera that is not one
    of the env's cameras."""
    from planner_vlm.learned.camera import CameraCalibration
    from planner_vlm.learned.depth_heights import surface_range
    from sim.robosuite_env import RobosuiteEnv
    from tandem.core.lazy_images import LazyImages

    with pytest.raises(ConfigError, match="depth_cameras"):
        RobosuiteEnv("stack_three", cameras=("agentview",), image_size=(84, 84), depth_cameras=("wrist",))
    env = RobosuiteEnv("stack_three", cameras=("agentview",), image_size=(84, 84), depth_cameras=("agentview",))
    try:
        obs, _ = env.reset(3)
        assert isinstance(obs.depth, LazyImages) and obs.depth.rendered == ()
        depth = obs.depth["agentview"]
        assert depth.shape == (84, 84) and depth.dtype == np.float32 and np.all(depth[np.isfinite(depth)] > 0)
        cal = CameraCalibration.from_json(env.camera_calibration("agentview"))
        for pose in obs.privileged["objects"].values():
            origin = np.asarray(pose["pos"], np.float64)
            gap = np.linalg.norm(origin - cal.position) - surface_range(cal, depth, cal.project(origin[None])[0])
            assert 0.015 < gap < 0.04
    finally:
        env.close()
