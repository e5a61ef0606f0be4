"""Rotations and angles: the one implementation every task, expert and perturbation uses.

Conventions (as in :mod:`tandem.core.types`):

* quaternions are **wxyz** (scalar first, MuJoCo's order), of a body frame -> world frame rotation;
* rotation matrices are ``float64 (3, 3)`` body -> world, so their columns are the body axes in world coordinates;
* angles are in radians; yaw is measured about world +z from world +x (counter-clockwise seen from above);
* wrapped angles lie in the half-open interval ``[-period/2, period/2)``: ``wrap_pi(pi) == -pi``.

numpy and ``math`` only. Formulas: the standard unit-quaternion rotation matrix (e.g. Shoemake 1985,
"Animating rotation with quaternion curves").
"""

from __future__ import annotations

import math

import numpy as np


def wrap_angle(angle: float, period: float) -> float:
    """``angle`` (rad) wrapped into ``[-period/2, period/2)``, e.g. ``period=pi`` for a gripper's half-turn symmetry.

    Raises:
        ValueError: ``period <= 0``.
    """
    if period <= 0:
        raise ValueError(f"period must be > 0, got {period}")
    return float((angle + period / 2) % period - period / 2)


def wrap_pi(angle: float) -> float:
    """``angle`` (rad) wrapped into ``[-pi, pi)``: ``wrap_pi(pi) == -pi``, ``wrap_pi(3 * pi / 2) == -pi / 2``."""
    return wrap_angle(angle, 2 * math.pi)


def quats_to_mats(quat_wxyz: np.ndarray) -> np.ndarray:
    """``float64 (..., 3, 3)`` rotation matrices (body -> world) of **wxyz** quaternions ``(..., 4)``, each normalised
    first. The matrix does not depend on the quaternion's sign (``q`` and ``-q`` give the same rotation).

    Raises:
        ValueError: the last axis is not 4 long, or a quaternion of zero or non-finite norm.
    """
    q = np.asarray(quat_wxyz, dtype=np.float64)
    n = np.linalg.norm(q, axis=-1, keepdims=True) if q.ndim else np.zeros(1)
    if q.ndim == 0 or q.shape[-1] != 4 or not np.all(np.isfinite(n)) or np.any(n == 0.0):
        raise ValueError(f"quaternions must be finite non-zero (..., 4) wxyz arrays, got shape {q.shape}")
    u = q / n
    prod = 2.0 * u[..., :, None] * u[..., None, :]  # (..., 4, 4): 2 q_i q_j, written once into the matrix below
    (ww, wx, wy, wz), (_, xx, xy, xz), (_, _, yy, yz), (_, _, _, zz) = np.moveaxis(prod, (-2, -1), (0, 1))
    out = np.empty(q.shape[:-1] + (3, 3))
    out[..., 0, 0], out[..., 0, 1], out[..., 0, 2] = 1 - (yy + zz), xy - wz, xz + wy
    out[..., 1, 0], out[..., 1, 1], out[..., 1, 2] = xy + wz, 1 - (xx + zz), yz - wx
    out[..., 2, 0], out[..., 2, 1], out[..., 2, 2] = xz - wy, yz + wx, 1 - (xx + yy)
    return out


def quat_to_mat(quat_wxyz: np.ndarray) -> np.ndarray:
    """``float64 (3, 3)`` rotation matrix (body -> world) of a **wxyz** quaternion ``(4,)``; normalised first.

    Raises:
        ValueError: not a ``(4,)`` array, or a quaternion of zero or non-finite norm.
    """
    q = np.asarray(quat_wxyz, dtype=np.float64)
    if q.shape != (4,):
        raise ValueError(f"quaternion must be a finite non-zero (4,) wxyz array, got {q!r}")
    return quats_to_mats(q)


def rotation_6d(rot: np.ndarray) -> np.ndarray:
    """The 6-D rotation representation of Zhou et al. (CVPR 2019, "On the Continuity of Rotation Representations
    in Neural Networks"): the first two columns of ``(..., 3, 3)`` as ``(..., 6)``, laid out
    ``[R00, R10, R20, R01, R11, R21]``. Continuous over SO(3), unlike quaternions with a forced sign."""
    m = np.asarray(rot)
    return np.concatenate([m[..., :, 0], m[..., :, 1]], axis=-1)


def yaws_of_mats(rot: np.ndarray) -> np.ndarray:
    """:func:`yaw_of_mat` of rotation matrices ``(..., 3, 3)``: ``(...)`` rad in ``(-pi, pi]``."""
    m = np.asarray(rot)
    return np.arctan2(m[..., 1, 0], m[..., 0, 0])


def yaw_of_mat(rot: np.ndarray) -> float:
    """Yaw (rad, in ``(-pi, pi]``) of a rotation matrix ``(3, 3)``: the direction of its x axis (first column)
    projected on the world xy plane. For a grip site pointing down this is the finger axis."""
    return float(math.atan2(rot[1, 0], rot[0, 0]))


def yaw_of_quat(quat_wxyz: np.ndarray) -> float:
    """Yaw (rad, in ``(-pi, pi]``) of a **wxyz** quaternion: the direction of the frame's x axis projected on
    the world xy plane (equals :func:`yaw_of_mat` of :func:`quat_to_mat`)."""
    w, x, y, z = np.asarray(quat_wxyz, dtype=np.float64)
    return float(math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))


def yaw_quat(yaw: float) -> np.ndarray:
    """``float64 (4,)`` **wxyz** quaternion of a rotation by ``yaw`` (rad) about world +z."""
    return np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])


def quat_yaw_mul(angle: float, quat_wxyz: np.ndarray) -> np.ndarray:
    """``float64 (4,)`` **wxyz** quaternion of ``quat_wxyz`` followed by a rotation of ``angle`` (rad) about
    world +z (the Hamilton product ``yaw_quat(angle) * quat_wxyz``)."""
    c, s = math.cos(angle / 2), math.sin(angle / 2)
    w, x, y, z = np.asarray(quat_wxyz, dtype=np.float64)
    return np.array([c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w])


def rotate_z(vec: np.ndarray, angle: float) -> np.ndarray:
    """``float64 (3,)``: ``vec (3,)`` rotated by ``angle`` (rad) about world +z."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([c * vec[0] - s * vec[1], s * vec[0] + c * vec[1], vec[2]], dtype=np.float64)


__all__ = ["quat_to_mat", "quat_yaw_mul", "rotate_z", "wrap_angle", "wrap_pi", "yaw_of_mat", "yaw_of_quat",
           "yaw_quat"]
