"""The demonstrated grasp in the object's frame: fitted where demonstrations agree, a trace moved onto it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner_vlm.learned.grasp_prior import (
    GraspPrior,
    close_miss,
    close_rows,
    fit_grasp_prior,
    snapped_to_prior,
    yaw_period,
)
from tandem.core.errors import ConfigError
from tandem.core.types import Trace3D


def _keypoints(origin, yaw):
    origin = np.asarray(origin, float)
    return np.stack([origin, origin + 0.03 * np.array([math.cos(yaw), math.sin(yaw), 0.0])])


def _demos(rng, n, handle_m, yaw_offset, jitter_m=0.0, flip=True):
    """n nut-like demos: the close 'handle_m' along the object's x, fingers across it (either way round)."""
    kps, closes = [], []
    for _ in range(n):
        yaw = rng.uniform(-math.pi, math.pi)
        kp = _keypoints([rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2), 0.83], yaw)
        point = kp[0] + handle_m * np.array([math.cos(yaw), math.sin(yaw), 0.0]) + rng.normal(0, jitter_m, 3) * [1, 1, 0]
        finger = yaw + yaw_offset + (math.pi if flip and rng.random() < 0.5 else 0.0) + 2 * math.pi * rng.integers(-1, 2)
        kps.append(kp)
        closes.append([*point, finger])
    return np.array(kps), np.array(closes)


def test_the_grasp_fixed_in_the_object_frame_is_recovered_and_the_rest_rejected_with_a_reason():
    rng = np.random.default_rng(0)
    kn, cn = _demos(rng, 40, 0.062, math.pi / 2)
    kb, cb = _demos(rng, 40, 0.0, 0.3, jitter_m=0.02)  # grasped anywhere over its body (clearance decides)
    kc, cc = _demos(rng, 40, 0.05, 0.0)  # symmetric (order 4) but grasped off its origin: which side is unknown
    ks, cs = _demos(rng, 5, 0.0, 0.0)
    names = ["nut"] * 40 + ["box"] * 40 + ["cube"] * 40 + ["rare"] * 5
    prior = fit_grasp_prior(names, np.concatenate([kn, kb, kc, ks]), np.concatenate([cn, cb, cc, cs]), {"cube": 4})
    assert set(prior.objects) == {"nut"}
    nut = prior.objects["nut"]
    np.testing.assert_allclose(nut.offset_m, [0.062, 0.0, 0.0], atol=1e-9)
    assert nut.period_rad == pytest.approx(math.pi) and nut.samples == 40
    assert abs(abs(nut.yaw_offset_rad) - math.pi / 2) < 1e-6  # across the handle, either way round
    assert "spread" in prior.rejected["box"] and "symmetric" in prior.rejected["cube"]
    assert "fewer than" in prior.rejected["rare"]
    again = GraspPrior.from_dict(prior.to_dict())
    point, yaw = again.objects["nut"].grasp(_keypoints([0.1, 0.0, 0.83], math.pi / 2))
    np.testing.assert_allclose(point, [0.1, 0.062, 0.83], atol=1e-6)
    assert abs(math.remainder(yaw - (math.pi / 2 + math.pi / 2), math.pi)) < 1e-6


def test_periods_and_bad_input():
    assert yaw_period(1) == pytest.approx(math.pi) and yaw_period(4) == pytest.approx(math.pi / 2)
    assert yaw_period(3) == pytest.approx(math.pi / 3)
    with pytest.raises(ConfigError, match="order"):
        yaw_period(0)
    with pytest.raises(ConfigError, match=r"keypoints \(N, 2, 3\)"):
        fit_grasp_prior(["a"], np.zeros((1, 3)), np.zeros((1, 4)), {})
    with pytest.raises(ConfigError, match="'nut'.*offset_m"):
        GraspPrior.from_dict({"objects": {"nut": {"offset_m": [0.0, 0.0], "yaw_offset_rad": 0, "period_rad": 1}}})
    with pytest.raises(ConfigError, match="'nut' is malformed"):
        GraspPrior.from_dict({"objects": {"nut": {"yaw_offset_rad": 0}}})


def test_a_trace_is_moved_onto_the_grasp_keeping_row_0_and_its_shape():
    pts = np.array([[0.0, 0.0, 1.0], [0.2, 0.1, 0.95], [0.2, 0.1, 0.85], [0.2, 0.1, 0.95]])
    trace = Trace3D(points=pts, yaw=np.array([0.0, 0.2, 0.4, 0.4]), gripper=np.array([-1.0, -1.0, 1.0, 1.0]))
    event = int(close_rows(trace)[0])
    assert event == 2
    goal, goal_yaw = np.array([0.23, 0.08, 0.84]), 0.4 + math.pi + 0.5  # a half turn plus 0.5 rad from the trace's
    miss_m, miss_rad = close_miss(trace, event, goal, goal_yaw, math.pi)
    assert miss_m == pytest.approx(math.hypot(0.03, 0.02)) and miss_rad == pytest.approx(0.5)
    out = snapped_to_prior(trace, event, goal, goal_yaw, math.pi)
    np.testing.assert_allclose(out.points[0], pts[0])
    np.testing.assert_allclose(out.points[event], goal, atol=1e-6)
    np.testing.assert_allclose(out.points[3] - out.points[1], pts[3] - pts[1], atol=1e-6)  # shape kept
    assert out.yaw[event] == pytest.approx(0.9, abs=1e-6)  # the nearest representative: +0.5, not a half turn more
    assert out.yaw[0] == pytest.approx(0.0) and out.yaw[1] == pytest.approx(0.2 * 0.9 / 0.4, abs=1e-6)
    np.testing.assert_array_equal(out.gripper, trace.gripper)
    with pytest.raises(ConfigError, match="close row 0"):
        snapped_to_prior(trace, 0, goal, goal_yaw, math.pi)


@pytest.mark.parametrize("entry,message", [
    ({"offset_m": "123", "yaw_offset_rad": 0, "period_rad": 1}, "needs offset_m"),
    ({"offset_m": [0, 0, 0], "yaw_offset_rad": float("nan"), "period_rad": 1}, "yaw_offset_rad out of range"),
    ({"offset_m": [0, 0, 0], "yaw_offset_rad": 0, "period_rad": float("inf")}, "period_rad out of range"),
    ({"offset_m": [0, 0, 0], "yaw_offset_rad": 0, "period_rad": 1, "spread_m": -1}, "spread_m out of range"),
])
def test_a_malformed_prior_entry_is_refused_naming_the_field(entry, message):
    with pytest.raises(ConfigError, match=f"'nut'.*{message}"):
        GraspPrior.from_dict({"objects": {"nut": entry}})
    with pytest.raises(ConfigError, match="objects must be a mapping"):
        GraspPrior.from_dict({"objects": ["nut"]})
    with pytest.raises(ConfigError, match="symmetry order of 'nut'"):
        fit_grasp_prior(["nut"], np.zeros((1, 2, 3)), np.zeros((1, 4)), {"nut": "x"}, min_samples=1)


def test_a_trace_checkpoint_with_a_prior_for_an_object_it_does_not_know_is_refused():
    from planner_vlm.learned.trace_config import TraceModelConfig

    entry = {"offset_m": [0.06, 0, 0], "yaw_offset_rad": 0, "period_rad": math.pi}
    cfg = TraceModelConfig(objects=("nut",), skills=("pick",), arg_names=("nut",), grasp_prior={"objects": {"nut": entry}})
    assert GraspPrior.from_dict(cfg.grasp_prior).objects["nut"].offset_m == (0.06, 0.0, 0.0)
    with pytest.raises(ConfigError, match=r"grasp_prior names \['teapot'\]"):
        TraceModelConfig(objects=("nut",), skills=("pick",), arg_names=("nut",), grasp_prior={"objects": {"teapot": entry}})
