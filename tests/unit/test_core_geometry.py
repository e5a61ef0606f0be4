"""tandem.core.geometry: the one implementation of rotations and angle wrapping, checked against MuJoCo."""

import math

import mujoco
import numpy as np
import pytest

from tandem.core.geometry import (
    quat_to_mat,
    quat_yaw_mul,
    rotate_z,
    wrap_angle,
    wrap_pi,
    yaw_of_mat,
    yaw_of_quat,
    yaw_quat,
)


def test_wrap_pi_is_half_open_at_minus_pi():
    assert wrap_pi(math.pi) == pytest.approx(-math.pi)
    assert wrap_pi(-math.pi) == pytest.approx(-math.pi)
    assert wrap_pi(3 * math.pi / 2) == pytest.approx(-math.pi / 2)
    assert wrap_pi(-3 * math.pi / 2) == pytest.approx(math.pi / 2)
    assert wrap_pi(0.25) == pytest.approx(0.25)
    assert wrap_pi(0.25 + 6 * math.pi) == pytest.approx(0.25)


def test_wrap_angle_with_a_half_turn_period():
    assert wrap_angle(math.pi / 2, math.pi) == pytest.approx(-math.pi / 2)
    assert wrap_angle(3.0, math.pi) == pytest.approx(3.0 - math.pi)
    with pytest.raises(ValueError, match="period"):
        wrap_angle(1.0, 0.0)


def _random_quats(n=20, seed=0):
    q = np.random.default_rng(seed).standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_quat_to_mat_matches_mujoco_and_normalises():
    for q in _random_quats():
        ref = np.zeros(9)
        mujoco.mju_quat2Mat(ref, q)
        np.testing.assert_allclose(quat_to_mat(q), ref.reshape(3, 3), atol=1e-12)
        np.testing.assert_allclose(quat_to_mat(3.0 * q), ref.reshape(3, 3), atol=1e-12)
    with pytest.raises(ValueError, match="quaternion"):
        quat_to_mat(np.zeros(4))


def test_yaw_of_quat_equals_yaw_of_its_matrix():
    for q in _random_quats(seed=1):
        assert yaw_of_quat(q) == pytest.approx(yaw_of_mat(quat_to_mat(q)), abs=1e-12)


def test_yaw_quat_rotates_x_to_the_yaw_direction():
    for yaw in (-2.5, -0.3, 0.0, 1.0, 3.0):
        q = yaw_quat(yaw)
        np.testing.assert_allclose(quat_to_mat(q) @ [1, 0, 0], [math.cos(yaw), math.sin(yaw), 0], atol=1e-12)
        assert yaw_of_quat(q) == pytest.approx(yaw)


def test_quat_yaw_mul_is_the_hamilton_product_with_a_z_rotation():
    for q in _random_quats(seed=2):
        ref = np.zeros(4)
        mujoco.mju_mulQuat(ref, yaw_quat(0.7), q)
        np.testing.assert_allclose(quat_yaw_mul(0.7, q), ref, atol=1e-12)


def test_rotate_z():
    np.testing.assert_allclose(rotate_z(np.array([1.0, 0.0, 0.5]), math.pi / 2), [0.0, 1.0, 0.5], atol=1e-12)
