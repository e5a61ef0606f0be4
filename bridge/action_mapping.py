"""Map tandem actions to robot commands and back (the inverse drives the simulated robot).

The forward map is configured by :class:`bridge.config.ActionMapping`; see its docstring for the
formulas. The robosuite OSC_POSE layout (``tandem.core.types.OSC_ACTION_LAYOUT``) is the ``eef_delta``
action: delta position and delta axis-angle scaled to [-1, 1], then the gripper (-1 open, +1 close).
"""

from __future__ import annotations

import numpy as np

from bridge.config import ActionMapping
from bridge.safety import Command
from tandem.core.errors import ConfigError, NonFiniteActionError


def action_dim(mapping: ActionMapping) -> int:
    """A: 7 for ``eef_delta``; ``len(arm_joints) + 1`` for ``joint_pos``."""
    return 7 if mapping.space == "eef_delta" else len(mapping.arm_joints) + 1


def gripper_action_to_width(g: float, mapping: ActionMapping) -> float:
    """Gripper action in [-1 (open), +1 (close)] -> finger gap (m), linear between open and closed widths."""
    g = float(np.clip(g, -1.0, 1.0))
    return mapping.gripper_open_width_m + (g + 1.0) / 2.0 * (mapping.gripper_closed_width_m - mapping.gripper_open_width_m)


def width_to_gripper_action(width: float, mapping: ActionMapping) -> float:
    """Inverse of :func:`gripper_action_to_width`, clipped to [-1, 1]."""
    span = mapping.gripper_closed_width_m - mapping.gripper_open_width_m
    return float(np.clip(2.0 * (width - mapping.gripper_open_width_m) / span - 1.0, -1.0, 1.0))


def action_to_command(action: np.ndarray, mapping: ActionMapping) -> Command:
    """Action ``(A,)`` -> :class:`Command` (before the safety layer).

    Raises:
        NonFiniteActionError: if the action has NaN/inf.
        ConfigError: if its length is not :func:`action_dim`.
    """
    a = np.asarray(action, np.float64).ravel()
    if a.size != action_dim(mapping):
        raise ConfigError(f"action has {a.size} values; action.space={mapping.space} needs {action_dim(mapping)}")
    if not np.all(np.isfinite(a)):
        raise NonFiniteActionError(f"action contains NaN or inf: {a.tolist()}")
    width = gripper_action_to_width(a[-1], mapping)
    if mapping.space == "eef_delta":
        return Command(linear=np.clip(a[0:3], -1, 1) * mapping.linear_scale_mps,
                       angular=np.clip(a[3:6], -1, 1) * mapping.angular_scale_radps,
                       gripper_width=width, gripper_effort=mapping.gripper_effort_n)
    return Command(joint_positions=a[:-1].copy(), gripper_width=width, gripper_effort=mapping.gripper_effort_n)


def twist_to_action(linear: np.ndarray, angular: np.ndarray, gripper_width: float | None,
                    mapping: ActionMapping, prev_gripper_action: float = -1.0) -> np.ndarray:
    """Inverse map for the simulated robot: twist (m/s, rad/s) + width (m) -> ``float32 (7,)`` OSC action.

    A missing gripper width keeps ``prev_gripper_action``.
    """
    if mapping.space != "eef_delta":
        raise ConfigError("twist_to_action needs action.space=eef_delta")
    a = np.zeros(7, np.float64)
    a[0:3] = np.asarray(linear, float) / mapping.linear_scale_mps
    a[3:6] = np.asarray(angular, float) / mapping.angular_scale_radps
    a[6] = prev_gripper_action if gripper_width is None else width_to_gripper_action(gripper_width, mapping)
    return np.clip(a, -1.0, 1.0).astype(np.float32)
