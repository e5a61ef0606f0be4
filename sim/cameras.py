"""Pinhole camera geometry of MuJoCo cameras: intrinsics, extrinsics and world -> pixel projection.

Conventions (shared with :mod:`tandem.core.types`):

* World points in m, MuJoCo world frame.
* Pixels are ``(x, y)`` = (column, row) floats, x right, y down, origin at the top-left of the
  **upright** image (the adapter flips robosuite's OpenGL images), at the camera's native resolution
  ``(H, W)``. Pixel centres are at integer coordinates, as in robosuite's ``camera_utils``.

The maths is robosuite's ``robosuite.utils.camera_utils`` (``get_camera_transform_matrix`` =
``K @ inv(extrinsic)`` in OpenCV axes). We call it for the matrix, but do the perspective divide
ourselves because ``camera_utils.project_points_from_world_to_camera`` rounds to ints, clips, and
returns ``(row, col)`` rather than ``(x, y)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from robosuite.utils import camera_utils

from tandem.core.errors import UnknownNameError


def camera_names_in_model(sim: Any) -> list[str]:
    """All camera names defined in the MuJoCo model of a robosuite ``MjSim``."""
    return [sim.model.camera_id2name(i) for i in range(sim.model.ncam)]


def _check_camera(sim: Any, camera: str) -> None:
    names = camera_names_in_model(sim)
    if camera not in names:
        raise UnknownNameError("camera", camera, names)


def intrinsics(sim: Any, camera: str, image_size: tuple[int, int]) -> np.ndarray:
    """Intrinsic matrix ``K`` ``float64 (3, 3)`` in px of a MuJoCo camera rendered at ``image_size = (H, W)``.

    ``f = 0.5 H / tan(fovy / 2)``; principal point at the image centre (robosuite ``camera_utils``).

    Raises:
        UnknownNameError: if ``camera`` is not a camera of the model (lists the known ones).
    """
    _check_camera(sim, camera)
    h, w = image_size
    return np.asarray(camera_utils.get_camera_intrinsic_matrix(sim, camera, h, w), dtype=np.float64)


def extrinsics(sim: Any, camera: str) -> np.ndarray:
    """Camera pose in the world, ``float64 (4, 4)`` homogeneous, OpenCV axes (x right, y down, z forward).

    Reads the live ``data.cam_xpos``/``cam_xmat`` (so call it after ``mj_forward``); the wrist camera moves.

    Raises:
        UnknownNameError: if ``camera`` is not a camera of the model.
    """
    _check_camera(sim, camera)
    return np.asarray(camera_utils.get_camera_extrinsic_matrix(sim, camera), dtype=np.float64)


def world_to_pixel(sim: Any, camera: str, image_size: tuple[int, int], points: np.ndarray) -> np.ndarray:
    """Project world points into an upright image of ``camera``.

    Args:
        sim: robosuite ``MjSim`` (state must be forwarded).
        camera: MuJoCo camera name (e.g. ``"agentview"``, ``"robot0_eye_in_hand"``).
        image_size: ``(H, W)`` in px of the rendered image.
        points: ``(N, 3)`` or ``(3,)`` world points (m).

    Returns:
        ``float32 (N, 2)`` pixel coordinates ``(x, y)``: x right, y down, origin top-left, not clipped
        (points outside the view land outside ``[0, W) x [0, H)``). Points behind the camera get NaN.

    Raises:
        UnknownNameError: unknown camera.
        ValueError: ``points`` is not ``(N, 3)``.
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim == 1:
        pts = pts[None]
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"world_to_pixel: points must be (N, 3) in m, got shape {pts.shape}")
    _check_camera(sim, camera)
    h, w = image_size
    proj = np.asarray(camera_utils.get_camera_transform_matrix(sim, camera, h, w), dtype=np.float64)
    hom = np.concatenate([pts, np.ones((len(pts), 1))], axis=1) @ proj.T  # (N, 4): (u*z, v*z, z, 1)
    z = hom[:, 2:3]
    with np.errstate(divide="ignore", invalid="ignore"):
        uv = hom[:, :2] / z
    uv[(z[:, 0] <= 1e-9)] = np.nan
    return uv.astype(np.float32)


def look_at_quat(position: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The MuJoCo camera orientation ``float64 (4,)`` wxyz (world frame) that looks from ``position`` at ``target``
    (both ``(3,)`` m, world) with the image's up towards world +z (no roll).

    A MuJoCo camera looks along its frame's -z with +y up and +x right (MJCF ``<camera>``), so its frame's columns
    are ``(right, up, -forward)``.

    Raises:
        ValueError: ``position`` equal to ``target``, or a line of sight along world z (its roll is undefined).
    """
    pos, tgt = np.asarray(position, np.float64).reshape(3), np.asarray(target, np.float64).reshape(3)
    forward = tgt - pos
    if np.linalg.norm(forward) < 1e-9:
        raise ValueError(f"look_at_quat: position {pos.tolist()} equals target")
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    if np.linalg.norm(right) < 1e-6:
        raise ValueError("look_at_quat: a line of sight along world z has no defined roll")
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    from robosuite.utils.transform_utils import mat2quat

    x, y, z, w = mat2quat(np.stack([right, up, -forward], axis=1))  # robosuite's quaternions are xyzw
    return np.array([w, x, y, z], np.float64)


def clip_to_image(pixels: np.ndarray, image_size: tuple[int, int]) -> np.ndarray:
    """Clip ``(N, 2)`` ``(x, y)`` pixels into ``[0, W-1] x [0, H-1]``; NaN rows become the image centre."""
    h, w = image_size
    px = np.array(pixels, dtype=np.float32, copy=True)
    bad = ~np.all(np.isfinite(px), axis=1)
    px[bad] = (w / 2.0, h / 2.0)
    px[:, 0] = np.clip(px[:, 0], 0, w - 1)
    px[:, 1] = np.clip(px[:, 1], 0, h - 1)
    return px
