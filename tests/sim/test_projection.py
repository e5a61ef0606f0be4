"""world_to_pixel: projected points land on the rendered objects and move the right way."""

from __future__ import annotations

import numpy as np
import pytest

from sim import cameras
from tandem.core.errors import UnknownNameError

pytestmark = pytest.mark.sim


def test_cube_centres_project_onto_their_colour(render_env):
    env = render_env
    obs, _ = env.reset(3)
    img = obs.images["agentview"].astype(int)
    channel = {"red": 0, "green": 1, "blue": 2}
    for name, pose in obs.privileged["objects"].items():
        x, y = env.world_to_pixel(np.array(pose["pos"])[None], "agentview")[0]
        assert 0 <= x < 128 and 0 <= y < 128
        r, col = int(round(y)), int(round(x))
        px = img[r - 1:r + 2, col - 1:col + 2].reshape(-1, 3).mean(0)  # 3x3 patch around the projection
        c = channel[name]
        others = [px[i] for i in range(3) if i != c]
        # wood textures and shading are not pure colours: require a clearly dominant channel
        assert px[c] > 1.3 * max(others) + 5, (name, px)


def test_eef_moves_right_in_image(render_env):
    env = render_env
    env.reset(2)
    right = cameras.extrinsics(env.rs_env.sim, "agentview")[:3, 0]  # camera x axis (image right) in world
    right[2] = 0.0
    right /= np.linalg.norm(right)
    eef0 = env.eef_pose()[0]
    p0 = env.world_to_pixel(eef0, "agentview")[0]
    for _ in range(10):
        env.step(np.concatenate([right * 0.6, np.zeros(3), [-1.0]]))
    eef1 = env.eef_pose()[0]
    p1 = env.world_to_pixel(eef1, "agentview")[0]
    assert np.dot(eef1 - eef0, right) > 0.03
    assert p1[0] - p0[0] > 3.0 and abs(p1[1] - p0[1]) < (p1[0] - p0[0])


def test_wrist_and_shapes(render_env):
    env = render_env
    obs, _ = env.reset(1)
    # a point 10 cm in front of the wrist camera, on its optical axis, projects to the image centre
    ext = cameras.extrinsics(env.rs_env.sim, "robot0_eye_in_hand")
    p = ext[:3, 3] + 0.1 * ext[:3, 2]
    np.testing.assert_allclose(env.world_to_pixel(p, "wrist")[0], [64, 64], atol=1e-3)
    assert env.world_to_pixel(np.zeros((5, 3)), "agentview").shape == (5, 2)
    behind = ext[:3, 3] - 0.1 * ext[:3, 2]
    assert np.all(np.isnan(env.world_to_pixel(behind, "wrist")))
    with pytest.raises(ValueError):
        env.world_to_pixel(np.zeros((2, 2)), "agentview")
    with pytest.raises(UnknownNameError, match="camera"):
        env.world_to_pixel(np.zeros(3), "topview")
    k = cameras.intrinsics(env.rs_env.sim, "agentview", (128, 128))
    assert k.shape == (3, 3) and k[0, 2] == 64


def test_look_at_quat_points_a_camera_at_its_target():
    """The camera frame's -z runs from the position to the target, its x axis is horizontal (no roll) and its y
    axis points up; a line of sight along world z and a zero-length one are refused."""
    from tandem.core.geometry import quat_to_mat

    pos, target = np.array([0.75, 0.0, 1.75]), np.array([0.1, 0.2, 0.8])
    rot = quat_to_mat(cameras.look_at_quat(pos, target))
    forward = (target - pos) / np.linalg.norm(target - pos)
    np.testing.assert_allclose(-rot[:, 2], forward, atol=1e-6)  # robosuite converts in float32
    assert abs(rot[2, 0]) < 1e-6 and rot[2, 1] > 0
    np.testing.assert_allclose(rot.T @ rot, np.eye(3), atol=1e-6)
    with pytest.raises(ValueError, match="roll"):
        cameras.look_at_quat(pos, pos - [0, 0, 1])
    with pytest.raises(ValueError, match="equals"):
        cameras.look_at_quat(pos, pos)
