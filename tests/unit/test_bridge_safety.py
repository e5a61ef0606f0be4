"""Every limit of the bridge's safety layer trips (pure python, no transport)."""

from __future__ import annotations

import numpy as np
import pytest

from bridge.safety import Command, SafetyLayer, SafetyLimits
from tandem.core.errors import ConfigError

DT = 0.05
TOPICS = ("/cam", "/joint_states", "/eef")


def make(**kw) -> SafetyLayer:
    return SafetyLayer(SafetyLimits(**kw), DT, TOPICS)


def fresh(now: float = 100.0) -> dict:
    return {t: now - 0.01 for t in TOPICS}


def twist(lin=(0, 0, 0), ang=(0, 0, 0), **kw) -> Command:
    return Command(linear=np.asarray(lin, float), angular=np.asarray(ang, float), **kw)


def kinds(events) -> list[str]:
    return [e.kind for e in events]


def is_zero(cmd: Command) -> bool:
    return cmd.stop and not cmd.linear.any() and not cmd.angular.any()


def test_safe_command_passes_unchanged():
    s = make()
    out, ev = s.filter(twist((0.05, 0, 0), (0, 0, 0.1)), now=100.0, stamps=fresh(), eef_position=np.zeros(3) + [0, 0, 0.5])
    assert ev == [] and not out.stop
    np.testing.assert_allclose(out.linear, [0.05, 0, 0])
    np.testing.assert_allclose(out.angular, [0, 0, 0.1])


def test_linear_speed_limit_keeps_direction():
    s = make(max_linear_speed_mps=0.1, max_linear_accel_mps2=100.0)
    out, ev = s.filter(twist((0.3, 0.4, 0)), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.5]))
    assert "linear_speed_limit" in kinds(ev)
    np.testing.assert_allclose(np.linalg.norm(out.linear), 0.1, rtol=1e-9)
    np.testing.assert_allclose(out.linear / np.linalg.norm(out.linear), [0.6, 0.8, 0])


def test_angular_speed_limit():
    s = make(max_angular_speed_radps=0.5, max_angular_accel_radps2=100.0)
    out, ev = s.filter(twist(ang=(0, 0, 2.0)), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.5]))
    assert "angular_speed_limit" in kinds(ev)
    np.testing.assert_allclose(out.angular, [0, 0, 0.5])


def test_linear_acceleration_limit_ramps_up():
    s = make(max_linear_speed_mps=1.0, max_linear_accel_mps2=1.0)  # 0.05 m/s per 0.05 s step
    speeds = []
    for i in range(4):
        out, ev = s.filter(twist((0.2, 0, 0)), now=100.0 + i * DT, stamps=fresh(100.0 + i * DT),
                           eef_position=np.array([0, 0, 0.5]))
        speeds.append(out.linear[0])
    assert "linear_accel_limit" in kinds(s.events)
    np.testing.assert_allclose(speeds, [0.05, 0.10, 0.15, 0.20])


def test_angular_acceleration_limit():
    s = make(max_angular_speed_radps=5.0, max_angular_accel_radps2=2.0)
    out, ev = s.filter(twist(ang=(1.0, 0, 0)), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.5]))
    assert "angular_accel_limit" in kinds(ev)
    np.testing.assert_allclose(out.angular, [0.1, 0, 0])


def test_workspace_box_blocks_outward_motion_only():
    s = make(workspace_min=(-0.5, -0.5, 0.1), workspace_max=(0.5, 0.5, 1.0), max_linear_speed_mps=1.0,
             max_linear_accel_mps2=100.0)
    # 1 cm below the top face, moving up at 0.5 m/s (2.5 cm per step) and sideways: z is cut to reach the face.
    out, ev = s.filter(twist((0.1, 0, 0.5)), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.99]))
    assert "workspace" in kinds(ev)
    np.testing.assert_allclose(out.linear, [0.1, 0, 0.2], atol=1e-9)  # (1.0 - 0.99) / 0.05
    # already outside (above): moving further out is zeroed, moving back in is allowed
    out, ev = s.filter(twist((0, 0, 0.2)), now=100.05, stamps=fresh(100.05), eef_position=np.array([0, 0, 1.1]))
    assert "workspace" in kinds(ev) and out.linear[2] == 0.0
    out, ev = s.filter(twist((0, 0, -0.2)), now=100.1, stamps=fresh(100.1), eef_position=np.array([0, 0, 1.1]))
    assert "workspace" not in kinds(ev)
    np.testing.assert_allclose(out.linear, [0, 0, -0.2])


def test_gripper_width_and_force_limits():
    s = make(gripper_min_width_m=0.0, gripper_max_width_m=0.08, max_gripper_effort_n=30.0)
    out, ev = s.filter(twist(gripper_width=0.12, gripper_effort=80.0), now=100.0, stamps=fresh(),
                       eef_position=np.array([0, 0, 0.5]))
    assert {"gripper_width_limit", "gripper_effort_limit"} <= set(kinds(ev))
    assert out.gripper_width == 0.08 and out.gripper_effort == 30.0
    out, ev = s.filter(twist(gripper_width=-0.01), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.5]))
    assert out.gripper_width == 0.0 and "gripper_width_limit" in kinds(ev)


@pytest.mark.parametrize("case,kind", [
    ("stale", "stale"),
    ("missing", "missing_topic"),
    ("future", "clock_skew"),
])
def test_staleness_watchdog_stops(case, kind):
    s = make(max_message_age_s=0.2, max_clock_skew_s=0.05)
    stamps = fresh()
    if case == "stale":
        stamps["/cam"] = 100.0 - 0.3
    elif case == "missing":
        stamps["/joint_states"] = None
    else:
        stamps["/eef"] = 100.0 + 0.2
    out, ev = s.filter(twist((0.1, 0, 0)), now=100.0, stamps=stamps, eef_position=np.array([0, 0, 0.5]))
    assert is_zero(out)
    assert kinds(ev) == [kind] and ev[0].stopped


def test_policy_deadline_stops():
    s = make()
    out, ev = s.filter(twist((0.1, 0, 0)), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.5]),
                       deadline_missed=True)
    assert is_zero(out) and kinds(ev) == ["deadline_missed"]


def test_nonfinite_command_stops():
    s = make()
    out, ev = s.filter(twist((np.nan, 0, 0)), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.5]))
    assert is_zero(out) and kinds(ev) == ["nonfinite_command"]
    out, ev = s.filter(twist(gripper_width=np.inf), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.5]))
    assert is_zero(out) and kinds(ev) == ["nonfinite_command"]


def test_estop_latches_until_explicit_reset():
    s = make()
    s.trigger_estop(100.0, "test")
    for i in range(3):
        out, ev = s.filter(twist((0.05, 0, 0)), now=100.0 + i, stamps=fresh(100.0 + i), eef_position=np.array([0, 0, 0.5]))
        assert is_zero(out) and kinds(ev) == ["estop_latched"]
    s.reset_estop(104.0)
    out, ev = s.filter(twist((0.05, 0, 0)), now=104.0, stamps=fresh(104.0), eef_position=np.array([0, 0, 0.5]))
    assert not out.stop and out.linear[0] == pytest.approx(0.05)
    assert kinds(s.events)[0] == "estop" and "estop_reset" in kinds(s.events)


def test_stop_resets_acceleration_memory():
    s = make(max_linear_accel_mps2=100.0)
    s.filter(twist((0.2, 0, 0)), now=100.0, stamps=fresh(), eef_position=np.array([0, 0, 0.5]))
    s.filter(twist((0.2, 0, 0)), now=100.05, stamps={"/cam": None}, eef_position=np.array([0, 0, 0.5]))
    np.testing.assert_array_equal(s._prev_linear, 0.0)


def test_joint_mode_speed_limit_and_hold_on_stop():
    s = SafetyLayer(SafetyLimits(max_joint_speed_radps=1.0), DT, TOPICS, joint_mode=True)
    q = np.zeros(3)
    out, ev = s.filter(Command(joint_positions=np.array([0.2, -0.01, 0.0])), now=100.0, stamps=fresh(),
                       joint_positions=q)
    assert "joint_speed_limit" in kinds(ev)
    np.testing.assert_allclose(out.joint_positions, [0.05, -0.01, 0.0])
    out, ev = s.filter(Command(joint_positions=np.array([0.1, 0, 0])), now=100.0, stamps=fresh(), joint_positions=None)
    assert out.stop and out.joint_positions.size == 0 and kinds(ev) == ["joint_state_mismatch"]


@pytest.mark.parametrize("kw", [
    {"workspace_min": (0, 0, 0), "workspace_max": (1, 1, 0)},
    {"max_linear_speed_mps": 0.0},
    {"policy_deadline_s": float("nan")},
    {"gripper_min_width_m": 0.1, "gripper_max_width_m": 0.05},
])
def test_bad_limits_are_config_errors(kw):
    with pytest.raises(ConfigError):
        SafetyLimits(**kw)
