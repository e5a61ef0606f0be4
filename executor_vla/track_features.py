"""Observation features of the track-conditioned executor: proprioception relative to the subgoal's 3-D trace.

The one preprocessing path of the track executor: the dataset loader (:mod:`executor_vla.track_data`) and the
closed loop (:class:`executor_vla.track_policy.TrackExecutor`) both call :func:`track_features`, so a frame is
featurised identically in training and at run time (tested).

Why these features (measured on stack_three, see the README's learning-curve table):

* **Geometry, not memorising.** The trace is expressed relative to the gripper (``p_k - eef``), so the network
  learns one reaching behaviour instead of a camera model from a few hundred examples (P3PO, ATM).
* **A third dimension.** The points are in metres (:class:`tandem.core.types.Trace3D`): one camera's 2-D trace
  confuses height with depth, and a stack must land within about 2 cm.
* **Yaw.** Each trace point carries the gripper yaw to reach, as ``(sin, cos)`` of its difference to the
  gripper's current yaw: cubes, nut handles and elongated objects are grasped at an angle.
* **A continuous rotation.** The gripper's orientation enters as the 6-D rotation representation of Zhou et al.
  (CVPR 2019, :func:`tandem.core.geometry.rotation_6d`): the first two columns of the rotation matrix. The proprio quaternion has w close to 0 with the gripper pointing down, and forcing w >= 0
  flips its sign on sub-degree tilts; the matrix does not care about the sign.

Conventions: positions in m (world frame; robot base frame on a real robot), angles in rad, quaternions wxyz,
yaw = direction of the gripper's finger axis (the grip site's x axis) about world +z.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from executor_vla.object_features import object_feature_dim, object_features
from tandem.core.dataset_schema import TRACE_3D_COLUMNS
from tandem.core.errors import SubgoalSchemaError
from tandem.core.geometry import quats_to_mats, rotation_6d, yaws_of_mats

#: Proprio features per observation step: eef position (3), 6-D rotation (6), gripper opening (1).
PROPRIO_FEATURES = 10
#: Features per trace point: relative position (3), sin/cos of the yaw difference (2), gripper command (1), mask (1).
POINT_FEATURES = 7
#: With a fine scale: the relative position again as ``tanh(rel / fine_scale_m)`` (3 more per point).
FINE_FEATURES = 3


def track_features(proprio: np.ndarray, trace_rows: np.ndarray, trace_mask: np.ndarray,
                   fine_scale_m: float | None = None) -> np.ndarray:
    """Features of proprio frames against one subgoal's 3-D trace.

    Args:
        proprio: ``float (T, 8)``: grip-site position (m, world), quaternion wxyz, gripper opening (m), as
            :data:`tandem.core.types.PROPRIO_LAYOUT`.
        trace_rows: ``float (K, 5)`` rows ``(x, y, z, yaw, gripper)`` (:func:`tandem.core.dataset_schema.pad_trace_3d`).
        trace_mask: ``float (K,)``, 1 for real points.
        fine_scale_m: when set, each point also gets ``tanh((p_k - eef) / fine_scale_m)`` (3): a copy of the
            relative position that resolves millimetres near the point (a nut must be aligned over its peg within
            about 3 mm, which is 1.5 % of the relative positions' spread) and saturates far from it.

    Returns:
        ``float32 (T, 10 + 7 K)`` (``10 + 10 K`` with ``fine_scale_m``): per frame the eef position (3), its 6-D
        rotation (6), the gripper opening (1), then per trace point ``p_k - eef`` (3, m), ``sin, cos(yaw_k -
        yaw_eef)`` (2), the gripper command (1), the mask (1) and, with ``fine_scale_m``, the fine position (3).

    Raises:
        SubgoalSchemaError: wrong shapes, or NaN/inf in the trace (a trace must be valid before it is used).
        ValueError: NaN/inf in ``proprio``.
    """
    p = np.asarray(proprio, dtype=np.float64)
    rows = np.asarray(trace_rows, dtype=np.float64)
    mask = np.asarray(trace_mask, dtype=np.float64).reshape(-1)
    if p.ndim != 2 or p.shape[1] < 8:
        raise ValueError(f"proprio must be (T, 8) (eef pos, quat wxyz, gripper), got {p.shape}")
    if rows.ndim != 2 or rows.shape[1] != len(TRACE_3D_COLUMNS) or mask.shape != (rows.shape[0],):
        raise SubgoalSchemaError(f"trace rows must be (K, {len(TRACE_3D_COLUMNS)}) with a (K,) mask, got "
                                 f"{rows.shape} and {mask.shape}")
    if not (np.all(np.isfinite(rows)) and np.all(np.isfinite(mask))):
        raise SubgoalSchemaError("the 3-D trace contains NaN or inf")
    if not np.all(np.isfinite(p)):
        raise ValueError("proprio contains NaN or inf")
    eef, rot = p[:, :3], quats_to_mats(p[:, 3:7])
    yaw = yaws_of_mats(rot)
    rel = rows[None, :, :3] - eef[:, None, :]  # (T, K, 3)
    dyaw = rows[None, :, 3] - yaw[:, None]  # (T, K)
    k = rows.shape[0]
    per_point = np.concatenate([
        rel, np.sin(dyaw)[..., None], np.cos(dyaw)[..., None],
        np.broadcast_to(rows[None, :, 4:5], (len(p), k, 1)),
        np.broadcast_to(mask[None, :, None], (len(p), k, 1)),
        *([np.tanh(rel / fine_scale_m)] if fine_scale_m else []),
    ], axis=-1)
    own = np.concatenate([eef, rotation_6d(rot), p[:, 7:8]], axis=-1)
    return np.concatenate([own, per_point.reshape(len(p), -1)], axis=-1).astype(np.float32)


def feature_dim(trace_len: int, fine: bool = False) -> int:
    """Length of one frame's feature vector for a trace of ``trace_len`` rows: ``10 + 7 * trace_len`` (``10 + 10 *
    trace_len`` with the fine position features)."""
    return PROPRIO_FEATURES + (POINT_FEATURES + (FINE_FEATURES if fine else 0)) * int(trace_len)


def trace_2d_features(proprio: np.ndarray, trace: np.ndarray, mask: np.ndarray,
                      image_size: tuple[int, int]) -> np.ndarray:
    """The 2-D-trace ablation's features: proprio as in :func:`track_features` (first 10 columns) plus the pixel
    trace scaled to ``[-1, 1]`` (``x / W``, ``y / H``; origin top-left) and its mask.

    Args:
        proprio: ``(T, 8)``. trace: ``(K, 2)`` px. mask: ``(K,)``. image_size: ``(H, W)`` px.

    Returns:
        ``float32 (T, 10 + 3 K)``.
    """
    own = track_features(proprio, np.zeros((1, len(TRACE_3D_COLUMNS))), np.zeros(1))[:, :PROPRIO_FEATURES]
    h, w = image_size
    pts = np.asarray(trace, np.float64) / np.array([w, h]) * 2.0 - 1.0
    tail = np.concatenate([pts.reshape(-1), np.asarray(mask, np.float64).reshape(-1)])
    return np.concatenate([own, np.broadcast_to(tail, (len(own), len(tail)))], axis=1).astype(np.float32)


def frame_features(cfg: Any, proprio: np.ndarray, rows: np.ndarray, mask: np.ndarray,
                   keypoints_3d: np.ndarray | None = None) -> np.ndarray:
    """``float32 (T, F)`` features of proprio frames ``(T, D)`` against one subgoal's trace, for the executor
    configured by ``cfg`` (a :class:`executor_vla.track_config.TrackExecutorConfig`): the ONE dispatch the dataset
    loader, the closed loop and the LeRobot plugin call.

    * ``trace_input="3d"`` (or the flat baseline, whose trace is all zeros with mask 0): :func:`track_features`
      with ``cfg.fine_scale_m``;
    * ``trace_input="2d"``: :func:`trace_2d_features` at ``cfg.image_size``;
    * then, with ``cfg.scene_input="objects_3d"``, the objects' keypoints relative to the grip site
      (:func:`executor_vla.object_features.object_features` with ``cfg.scene_orders()``, fine copy with
      ``cfg.fine_scale_m``).

    Args:
        keypoints_3d: ``(T, O, 2, 3)`` or ``(O, 2, 3)`` m, in the order of ``cfg.scene_objects``; needed exactly when
            ``cfg.scene_input="objects_3d"``.

    Raises:
        SubgoalSchemaError: a malformed or non-finite trace, or missing keypoints for a scene-input config.
        ValueError: NaN/inf in ``proprio`` or the keypoints, or keypoints of the wrong shape.
    """
    if cfg.trace_input == "3d" or cfg.conditioning_source == "instruction":
        own = track_features(proprio, rows, mask, fine_scale_m=cfg.fine_scale_m)
    else:
        own = trace_2d_features(proprio, rows, mask, cfg.image_size)
    if cfg.scene_input == "none":
        return own
    if keypoints_3d is None:
        raise SubgoalSchemaError(f"this track executor reads object keypoints (scene_input={cfg.scene_input!r}) "
                                 "and none were given")
    n = len(cfg.scene_objects)
    if np.shape(keypoints_3d)[-3:-2] != (n,):
        raise ValueError(f"object keypoints {np.shape(keypoints_3d)} do not hold the {n} objects "
                         f"{list(cfg.scene_objects)} (O, 2, 3)")
    return np.concatenate([own, object_features(proprio, keypoints_3d, cfg.scene_orders(), cfg.fine_scale_m)],
                          axis=1)


def config_feature_dim(cfg: Any) -> int:
    """Features per frame of :func:`frame_features` for ``cfg``."""
    if cfg.trace_input == "3d" or cfg.conditioning_source == "instruction":
        own = feature_dim(cfg.trace_3d_len, fine=cfg.fine_scale_m is not None)
    else:
        own = PROPRIO_FEATURES + 3 * cfg.trace_len
    if cfg.scene_input == "none":
        return own
    return own + object_feature_dim(len(cfg.scene_objects), fine=cfg.fine_scale_m is not None)
