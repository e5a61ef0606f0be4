"""Camera calibration (project, lift, fit from labels) and probability calibration (temperature, reliability, F1)."""

from __future__ import annotations

import numpy as np
import pytest

from planner_vlm.learned.camera import CameraCalibration, fit_calibration
from planner_vlm.learned.probability_calibration import binary_nll, f1_score, fit_temperature, reliability
from planner_vlm.learned.synthetic import synthetic_calibration
from tandem.core.errors import ConfigError


def _points(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(-0.15, 0.15, n), rng.uniform(-0.2, 0.2, n), rng.uniform(0.8, 1.05, n)])


def test_lift_inverts_project_at_the_true_height():
    cal = synthetic_calibration((84, 84))
    pts = _points(50)
    px = cal.project(pts)
    assert np.all((px > 0) & (px < 84))
    np.testing.assert_allclose(cal.lift(px, pts[:, 2]), pts, atol=1e-9)
    # a wrong height slides the point along the ray: same pixel, other place
    moved = cal.lift(px, pts[:, 2] + 0.05)
    np.testing.assert_allclose(cal.project(moved), px, atol=1e-6)
    assert np.all(np.linalg.norm(moved - pts, axis=1) > 0.05)


def test_resized_calibration_scales_pixels():
    cal = synthetic_calibration((84, 84))
    big = cal.resized((168, 126))
    pts = _points(10)
    px, px2 = cal.project(pts), big.project(pts)
    np.testing.assert_allclose(px2[:, 0], px[:, 0] * 126 / 84, rtol=1e-9)
    np.testing.assert_allclose(px2[:, 1], px[:, 1] * 2.0, rtol=1e-9)


def test_fit_calibration_recovers_the_camera_from_labels():
    cal = synthetic_calibration((84, 84))
    pts = _points(400, seed=1)
    fitted, rms = fit_calibration(pts, cal.project(pts), (84, 84))
    assert rms < 1e-6
    np.testing.assert_allclose(fitted.intrinsics, cal.intrinsics, atol=1e-5)
    np.testing.assert_allclose(fitted.world_from_camera, cal.world_from_camera, atol=1e-6)
    with pytest.raises(ValueError, match=">= 6"):
        fit_calibration(pts[:5], cal.project(pts[:5]), (84, 84))


def test_calibration_json_round_trip_and_bad_input():
    cal = synthetic_calibration((48, 48))
    back = CameraCalibration.from_json(cal.to_json())
    np.testing.assert_array_equal(back.intrinsics, cal.intrinsics)
    assert back.image_size == (48, 48) and back.camera == "agentview"
    with pytest.raises(ConfigError, match="intrinsics"):
        CameraCalibration.from_json({"world_from_camera": np.eye(4).tolist(), "image_size": [8, 8]})
    with pytest.raises(ConfigError, match="orthonormal"):
        CameraCalibration(np.eye(3), np.diag([2.0, 1.0, 1.0, 1.0]), (8, 8))
    with pytest.raises(ConfigError, match="invertible"):
        CameraCalibration(np.zeros((3, 3)), np.eye(4), (8, 8))


def test_temperature_scaling_recovers_an_overconfident_temperature():
    rng = np.random.default_rng(0)
    true_logits = rng.normal(0.0, 3.0, 20000)
    labels = (rng.random(20000) < 1.0 / (1.0 + np.exp(-true_logits))).astype(float)
    overconfident = true_logits * 2.5  # a network 2.5x too sure of itself
    t = fit_temperature(overconfident, labels)
    assert t == pytest.approx(2.5, rel=0.1)
    assert binary_nll(overconfident, labels, t) < binary_nll(overconfident, labels, 1.0)
    before = reliability(1 / (1 + np.exp(-overconfident)), labels)
    after = reliability(1 / (1 + np.exp(-overconfident / t)), labels)
    assert after.ece < 0.02 < before.ece
    assert int(after.count.sum()) == 20000
    with pytest.raises(ValueError, match="0 or 1"):
        fit_temperature(np.zeros(3), np.array([0.0, 0.5, 1.0]))


def test_f1_score():
    assert f1_score(np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0])) == pytest.approx(0.5)
    assert f1_score(np.zeros(3), np.zeros(3)) == 1.0
