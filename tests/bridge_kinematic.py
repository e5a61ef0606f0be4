"""A kinematic stand-in robot and its bridge config, for the loopback tests over Cyclone DDS and over rclpy
(tests/integration/test_bridge_*_loopback.py): no robosuite, so a few control steps take a second."""

from __future__ import annotations

import numpy as np

from tandem.core.types import Observation, TaskSpec


class KinematicEnv:
    """A point robot: the grip site moves by ``a[:3] * 0.05`` m per step; 16x16 images show its x position."""

    def __init__(self):
        self.spec = TaskSpec(name="kinematic", instruction="move", objects=(), max_steps=1000)
        self.action_dim = 7
        self.action_low, self.action_high = -np.ones(7, np.float32), np.ones(7, np.float32)
        self.pos = np.array([0.0, 0.0, 1.0])
        self.width = 0.08
        self.n = 0

    def _obs(self):
        img = np.zeros((16, 16, 3), np.uint8)
        img[:, int(np.clip(8 + self.pos[0] * 20, 0, 15))] = 255
        return Observation(images={"front": img}, proprio=np.r_[self.pos, 1, 0, 0, 0, self.width], step=self.n,
                           joints=np.r_[self.pos[:2], 0.5])  # three "joints" (rad) that follow the grip site

    def reset(self, seed=None):
        return self._obs(), {}

    def step(self, a):
        self.pos = self.pos + np.asarray(a[:3], float) * 0.05
        self.width = 0.04 * (1 - a[6])
        self.n += 1
        return self._obs(), 0.0, False, False, {"success": False}

    def close(self):
        pass


def fast_config(domain: int, transport: str = "dds") -> dict:
    """The bridge config of the kinematic robot (topics, 20 Hz, a 1 m box), over ``transport``."""
    return {
        "transport": transport, "domain_id": domain, "loopback_only": True, "rate_hz": 20.0, "base_frame": "world",
        "image_size": [16, 16], "startup_timeout_s": 10.0, "watchdog": True,
        "topics": {"cameras": {"front": "/sim/front/image_raw"}, "joint_states": "/joint_states",
                   "eef_pose": "/sim/eef_pose", "twist_cmd": "/servo_node/delta_twist_cmds",
                   "gripper_cmd": "/gripper/command"},
        "action": {"linear_scale_mps": 1.0, "angular_scale_radps": 10.0, "gripper_joints": ["f1", "f2"],
                   "arm_joints": ["a1", "a2", "a3"]},
        "safety": {"workspace_min": [-1, -1, 0.5], "workspace_max": [1, 1, 1.5], "max_linear_speed_mps": 1.0,
                   "max_linear_accel_mps2": 100.0, "max_angular_speed_radps": 10.0, "max_message_age_s": 0.3,
                   "policy_deadline_s": 0.5},
    }
