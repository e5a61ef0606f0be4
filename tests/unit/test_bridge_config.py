"""The bridge's example configs compose and validate; bad configs are clear ConfigErrors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bridge.action_mapping import (
    action_to_command,
    gripper_action_to_width,
    twist_to_action,
    width_to_gripper_action,
)
from bridge.config import ActionMapping, bridge_config_from_dict, load_bridge_config
from tandem.core.errors import ConfigError, NonFiniteActionError

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
EXAMPLES = ("sim_loopback", "franka_moveit_servo", "ur_moveit_servo")


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_configs_compose_with_hydra(name):
    from omegaconf import OmegaConf

    from tandem.cli.common import compose_config

    cfg = compose_config(f"bridge/{name}")
    d = OmegaConf.to_container(cfg, resolve=False)
    bcfg = bridge_config_from_dict(d["bridge"])
    assert bcfg.required_topics and bcfg.action.space == "eef_delta"
    assert d["planner"]["name"] in ("oracle", "vlm") and d["executor"]["name"] in ("oracle_remote", "diffusion")
    if name != "sim_loopback":
        assert not bcfg.oracle_side_channel and bcfg.transport == "rclpy" and bcfg.gripper_mode == "action"
        assert not bcfg.loopback_only


def test_load_from_yaml_file():
    cfg = load_bridge_config(CONFIG_DIR / "bridge" / "sim_loopback.yaml")
    assert cfg.transport == "dds" and cfg.loopback_only and cfg.oracle_side_channel
    assert cfg.dt == pytest.approx(0.05)


BASE = {"topics": {"cameras": {"a": "/a"}, "twist_cmd": "/t", "eef_pose": "/p"}}


@pytest.mark.parametrize("bad,match", [
    ({"transprt": "dds"}, "unknown key"),
    ({"transport": "zenoh"}, "transport"),
    ({"safety": {"max_linear_speed": 1.0}}, "unknown key"),
    ({"topics": {"cameras": {}}}, "cameras"),
    ({"topics": {"cameras": {"a": "/a"}}}, "twist_cmd"),
    ({"gripper_mode": "action"}, "rclpy"),
    ({"oracle_side_channel": True}, "oracle_privileged"),
    ({"domain_id": 300}, "domain_id"),
    ({"action": {"space": "joint_pos"}}, "joint_trajectory_cmd"),
])
def test_bad_configs_raise_config_error(bad, match):
    d = {**BASE, **bad}
    with pytest.raises(ConfigError, match=match):
        bridge_config_from_dict(d)


def test_missing_file_is_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_bridge_config(tmp_path / "nope.yaml")


def test_action_mapping_round_trip():
    m = ActionMapping(linear_scale_mps=1.0, angular_scale_radps=10.0, gripper_open_width_m=0.08, gripper_closed_width_m=0.0)
    a = [0.2, -0.4, 1.0, 0.1, 0.0, -0.3, 1.0]
    cmd = action_to_command(a, m)
    assert cmd.gripper_width == pytest.approx(0.0) and cmd.linear[1] == pytest.approx(-0.4)
    back = twist_to_action(cmd.linear, cmd.angular, cmd.gripper_width, m)
    assert back.tolist() == pytest.approx(a, abs=1e-6)
    assert gripper_action_to_width(-1.0, m) == pytest.approx(0.08)
    assert width_to_gripper_action(0.04, m) == pytest.approx(0.0)
    with pytest.raises(NonFiniteActionError):
        action_to_command([float("nan")] * 7, m)
    with pytest.raises(ConfigError, match="7"):
        action_to_command([0.0] * 6, m)


def robot_config(name: str):
    return load_bridge_config(CONFIG_DIR / "bridge" / f"{name}.yaml")


def test_franka_gripper_commands_are_half_the_width():
    """franka_gripper's GripperCommand server moves to 2 x command.position (gripper_action_server.cpp): the open
    width 0.08 m is commanded as 0.04, closed as 0.0; its finger joints each report width / 2."""
    a = robot_config("franka_moveit_servo").action
    assert a.gripper_command(a.gripper_open_width_m) == pytest.approx(0.04)
    assert 2 * a.gripper_command(a.gripper_open_width_m) == pytest.approx(0.08)  # what the server moves to
    assert a.gripper_command(a.gripper_closed_width_m) == pytest.approx(0.0)
    assert a.gripper_width_from_joints([0.03, 0.03]) == pytest.approx(0.06)


def test_robotiq_gripper_commands_are_knuckle_angles():
    """ros2_robotiq_gripper: knuckle 0 rad = 85 mm open, 0.7929 rad (gripper_closed_position) = closed."""
    a = robot_config("ur_moveit_servo").action
    assert a.gripper_command(a.gripper_open_width_m) == pytest.approx(0.0, abs=1e-4)
    assert a.gripper_command(a.gripper_closed_width_m) == pytest.approx(0.7929, abs=1e-4)
    assert a.gripper_width_from_joints([0.0]) == pytest.approx(0.085)
    assert a.gripper_width_from_joints([0.7929]) == pytest.approx(0.0, abs=1e-4)
    assert a.gripper_width_from_command(a.gripper_command(0.03)) == pytest.approx(0.03)


def test_the_old_franka_scale_is_refused_at_load():
    """gripper_command_scale 1.0 asked franka_gripper for a 0.16 m opening (0.08 m maximum)."""
    d = yaml.safe_load((CONFIG_DIR / "bridge" / "franka_moveit_servo.yaml").read_text())["bridge"]
    d["action"]["gripper_command_scale"] = 1.0
    with pytest.raises(ConfigError, match=r"gripper_open_width_m 0.08 m maps to gripper command 0.08.*\[0.0, 0.04\]"):
        bridge_config_from_dict(d)


@pytest.mark.parametrize("action, match", [
    ({"gripper_effort_n": 0}, "gripper_effort_n must be a positive number, got 0"),
    ({"gripper_effort_n": -5}, "gripper_effort_n must be a positive number, got -5"),
    ({"gripper_effort_n": float("nan")}, "gripper_effort_n"),
    ({"gripper_open_width_m": 0.04, "gripper_closed_width_m": 0.04}, r"must be greater than gripper_closed_width_m"),
    ({"gripper_open_width_m": 0.0, "gripper_closed_width_m": 0.08}, r"must be greater than gripper_closed_width_m"),
    ({"gripper_closed_width_m": -0.01}, ">= 0 m"),
    ({"gripper_command_scale": 0}, "gripper_command_scale must be a non-zero number"),
    ({"gripper_joint_scale": 0}, "gripper_joint_scale must be a non-zero number"),
    ({"linear_scale_mps": 0}, "linear_scale_mps"),
    ({"gripper_command_limits": [0.1, 0.0]}, "low < high"),
    ({"gripper_effort_n": 50.0}, r"exceeds safety.max_gripper_effort_n \(40.0 N\)"),
    ({"gripper_open_width_m": 0.1}, r"outside the safety range \[0.0, 0.08\]"),
])
def test_bad_gripper_settings_fail_at_load_naming_the_key(action, match):
    with pytest.raises(ConfigError, match=match):
        bridge_config_from_dict({**BASE, "action": action})


def test_equal_widths_no_longer_divide_by_zero():
    with pytest.raises(ConfigError):  # was ZeroDivisionError in width_to_gripper_action
        ActionMapping(gripper_open_width_m=0.05, gripper_closed_width_m=0.05)
