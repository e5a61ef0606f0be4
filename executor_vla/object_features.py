"""Scene features of the track executor: the task objects' 3-D keypoints relative to the grip site.

With ``scene_input="objects_3d"`` (:class:`executor_vla.track_config.TrackExecutorConfig`) every frame's features
also hold, per object, what the learned high level reads off the camera image (the state model of
:mod:`planner_vlm.learned.state_model`): two keypoints per object, its origin and the point 3 cm along its local x
axis (:func:`tandem.core.dataset_schema.object_keypoints`). A flat policy given these features sees the same
perception as the hierarchical stack's non-privileged high level, without its planner, subgoals, traces or
verifier (issue 11 item 4, issue 12 item 6): the comparison isolates what the hierarchy adds.

The features follow the track features' lessons (:mod:`executor_vla.track_features`): positions relative to the
grip site (P3PO, ATM: geometry, not memorising), a fine copy that resolves millimetres near the object, and the
object's yaw relative to the gripper's as sines and cosines of its harmonics :data:`YAW_HARMONICS` (a cube looks
the same every quarter turn, the gripper every half turn; the harmonics say the angle modulo each symmetry without
knowing which object has which).

Conventions: positions in m (world frame; the robot base frame on a robot), angles in rad, quaternions wxyz,
yaw = direction of the gripper's finger axis (the grip site's x axis) about world +z, an object's yaw = direction
of its second keypoint from its first about world +z.
"""

from __future__ import annotations

import numpy as np

from tandem.core.dataset_schema import KEYPOINTS_PER_OBJECT
from tandem.core.geometry import quats_to_mats, yaws_of_mats

#: Harmonics ``m`` of the yaw difference ``d`` given as ``(sin m d, cos m d)``.
YAW_HARMONICS: tuple[int, ...] = (1, 2, 4)
#: Features per object: both keypoints relative to the grip site (2 x 3), the yaw harmonics (2 x 3).
OBJECT_FEATURES = 3 * KEYPOINTS_PER_OBJECT + 2 * len(YAW_HARMONICS)
#: With a fine scale: the origin keypoint's relative position again as ``tanh(rel / fine_scale_m)`` (3 more).
OBJECT_FINE_FEATURES = 3


def object_feature_dim(n_objects: int, fine: bool = False) -> int:
    """Length of :func:`object_features`' output per frame for ``n_objects`` objects."""
    return (OBJECT_FEATURES + (OBJECT_FINE_FEATURES if fine else 0)) * int(n_objects)


def object_features(proprio: np.ndarray, keypoints_3d: np.ndarray, fine_scale_m: float | None = None) -> np.ndarray:
    """Features of the objects' keypoints against the grip site of each proprio frame.

    Args:
        proprio: ``float (T, 8)``: grip-site position (m, world), quaternion wxyz, gripper opening (m), as
            :data:`tandem.core.types.PROPRIO_LAYOUT`.
        keypoints_3d: ``float (T, O, 2, 3)`` m, world frame: per frame and object its origin and its x-axis point, in
            the checkpoint's object order (``TrackExecutorConfig.scene_objects``); ``(O, 2, 3)`` uses the same
            keypoints for every frame.
        fine_scale_m: when set, each object also gets ``tanh((k0 - eef) / fine_scale_m)`` (3).

    Returns:
        ``float32 (T, O * F)``, per object (in order) ``k0 - eef`` (3, m), ``k1 - eef`` (3, m), ``sin(m d)`` for each
        harmonic ``m`` of :data:`YAW_HARMONICS` then ``cos(m d)`` (6), ``d`` = the object's yaw minus the gripper's, and with
        ``fine_scale_m`` the fine origin position (3); ``F`` = :data:`OBJECT_FEATURES` (+
        :data:`OBJECT_FINE_FEATURES`).

    Raises:
        ValueError: wrong shapes, or NaN/inf in ``proprio`` or ``keypoints_3d`` (named).
    """
    p = np.asarray(proprio, dtype=np.float64)
    kp = np.asarray(keypoints_3d, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 8:
        raise ValueError(f"proprio must be (T, 8) (eef pos, quat wxyz, gripper), got {p.shape}")
    if kp.ndim == 3:
        kp = np.broadcast_to(kp, (len(p), *kp.shape))
    if kp.ndim != 4 or kp.shape[0] != len(p) or kp.shape[2:] != (KEYPOINTS_PER_OBJECT, 3):
        raise ValueError(f"object keypoints must be (T={len(p)}, O, {KEYPOINTS_PER_OBJECT}, 3) or "
                         f"(O, {KEYPOINTS_PER_OBJECT}, 3) m, got {np.shape(keypoints_3d)}")
    if not np.all(np.isfinite(p)):
        raise ValueError("proprio contains NaN or inf")
    if not np.all(np.isfinite(kp)):
        raise ValueError("the object keypoints contain NaN or inf")
    eef = p[:, :3]
    rel = kp - eef[:, None, None, :]  # (T, O, 2, 3)
    axis = kp[:, :, 1, :2] - kp[:, :, 0, :2]
    d = np.arctan2(axis[..., 1], axis[..., 0]) - yaws_of_mats(quats_to_mats(p[:, 3:7]))[:, None]  # (T, O)
    harmonics = np.asarray(YAW_HARMONICS, np.float64)
    md = d[..., None] * harmonics  # (T, O, H)
    parts = [rel.reshape(*rel.shape[:2], -1), np.sin(md), np.cos(md)]
    if fine_scale_m:
        parts.append(np.tanh(rel[:, :, 0] / fine_scale_m))
    return np.concatenate(parts, axis=-1).reshape(len(p), -1).astype(np.float32)
