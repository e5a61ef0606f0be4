"""Proprioceptive features of the learned perception models: the one conversion training and inference share.

A robot has its own state, so the state model and the trace model may use it: a held object's height follows the
gripper's, and a trace starts at the gripper. The quaternion is turned into the continuous 6-D rotation
representation (Zhou et al., CVPR 2019): with the gripper pointing down the proprio quaternion has w close to 0 and
flips sign on sub-degree tilts, the rotation matrix does not.
"""

from __future__ import annotations

import numpy as np

from tandem.core.geometry import quats_to_mats, rotation_6d, yaws_of_mats

#: Features per frame: grip-site position (3, m, world), 6-D rotation (6), gripper opening (1, m).
PROPRIO_FEATURES = 10
#: Column of the gripper opening (m) in the raw proprio (:data:`tandem.core.types.PROPRIO_LAYOUT`).
PROPRIO_OPENING = 7
#: Column of the gripper opening (m) in :func:`proprio_features`.
OPENING_FEATURE = 9


def proprio_features(proprio: np.ndarray) -> np.ndarray:
    """``float32 (N, 10)`` features of ``proprio (N, 8)`` (or ``(8,)``) laid out as
    :data:`tandem.core.types.PROPRIO_LAYOUT` (position m, quaternion wxyz, gripper opening m).

    Raises:
        ValueError: a shape other than ``(N, >=8)`` or non-finite values.
    """
    p = np.asarray(proprio, np.float64)
    p = p[None] if p.ndim == 1 else p
    if p.ndim != 2 or p.shape[1] < 8:
        raise ValueError(f"proprio must be (N, 8) (eef pos m, quat wxyz, gripper m), got {p.shape}")
    if not np.all(np.isfinite(p[:, :8])):
        raise ValueError("proprio contains NaN or inf")
    rot = quats_to_mats(p[:, 3:7])
    return np.concatenate([p[:, :3], rotation_6d(rot), p[:, 7:8]], axis=1).astype(np.float32)


def gripper_yaw(proprio: np.ndarray) -> np.ndarray:
    """``float64 (N,)`` rad: yaw about world +z of the gripper's finger axis (the grip site's x axis) of
    ``proprio (N, 8)`` (or a scalar array for ``(8,)``)."""
    p = np.asarray(proprio, np.float64)
    single = p.ndim == 1
    yaw = yaws_of_mats(quats_to_mats(np.atleast_2d(p)[:, 3:7]))
    return yaw[0] if single else yaw
