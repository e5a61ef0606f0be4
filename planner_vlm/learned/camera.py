"""A calibrated pinhole camera: project world points to pixels, and lift pixels back to 3-D at a known height.

The state model sees one fixed, calibrated camera (agentview). Its intrinsics and its pose are calibration, not
privileged state: a real robot has them from a calibration routine, the simulator from its model. The runtime
injects them (:mod:`tandem.runtime.registry`); a checkpoint stores the calibration it was trained with, and a robot
config can override it.

Conventions (those of :mod:`sim.cameras` and robosuite's ``camera_utils``):

* pixels ``(x, y)`` = (column, row), x right, y down, origin at the top-left of the upright image, pixel centres at
  integer coordinates, at the image size ``(H, W)`` the calibration is for;
* ``intrinsics`` ``K`` ``(3, 3)`` px; ``world_from_camera`` ``(4, 4)``: the camera's pose in the world frame (m), in
  OpenCV axes (x right, y down, z forward), so a world point ``p`` projects to ``K @ R.T @ (p - t)``.

Lifting (:meth:`CameraCalibration.lift`): the 3-D point of a pixel is where the camera ray through it meets the
horizontal plane ``z = height`` (world frame). One camera cannot tell depth, but object heights in a tabletop scene
are nearly discrete (on the table, stacked, held), so the state model predicts a height per keypoint and the ray
gives the rest; the same maths in torch is :func:`planner_vlm.learned.state_net.lift_to_height`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tandem.core.errors import ConfigError

#: Rays closer to horizontal than this (|dir_z|) do not meet a horizontal plane in front of the camera usefully.
MIN_RAY_SLOPE = 1e-6


@dataclass(frozen=True)
class CameraCalibration:
    """Intrinsics and pose of one camera at one image size.

    Attributes:
        intrinsics: ``float64 (3, 3)`` K in px.
        world_from_camera: ``float64 (4, 4)`` homogeneous pose of the camera in the world (m), OpenCV axes.
        image_size: ``(H, W)`` px the intrinsics are for.
        camera: the camera's name (``"agentview"``).

    Raises:
        ConfigError: wrong shapes, non-finite values, a singular K, a rotation that is not orthonormal, or a
            non-positive image size.
    """

    intrinsics: np.ndarray
    world_from_camera: np.ndarray
    image_size: tuple[int, int]
    camera: str = "agentview"

    def __post_init__(self) -> None:
        k = np.asarray(self.intrinsics, np.float64)
        t = np.asarray(self.world_from_camera, np.float64)
        size = tuple(int(v) for v in self.image_size)
        if k.shape != (3, 3) or not np.all(np.isfinite(k)) or abs(np.linalg.det(k)) < 1e-9:
            raise ConfigError(f"camera {self.camera!r}: intrinsics must be a finite, invertible (3, 3) K, got {k.tolist()}")
        if t.shape != (4, 4) or not np.all(np.isfinite(t)):
            raise ConfigError(f"camera {self.camera!r}: world_from_camera must be a finite (4, 4) pose, got shape {t.shape}")
        r = t[:3, :3]
        if not np.allclose(r @ r.T, np.eye(3), atol=1e-4):
            raise ConfigError(f"camera {self.camera!r}: world_from_camera's rotation is not orthonormal")
        if len(size) != 2 or min(size) < 1:
            raise ConfigError(f"camera {self.camera!r}: image_size must be (H, W) >= 1, got {self.image_size}")
        object.__setattr__(self, "intrinsics", k)
        object.__setattr__(self, "world_from_camera", t)
        object.__setattr__(self, "image_size", size)

    # ------------------------------------------------------------------ geometry
    @property
    def rotation(self) -> np.ndarray:
        """``(3, 3)`` world-from-camera rotation (OpenCV camera axes)."""
        return self.world_from_camera[:3, :3]

    @property
    def position(self) -> np.ndarray:
        """``(3,)`` camera centre in the world (m)."""
        return self.world_from_camera[:3, 3]

    def project(self, points: np.ndarray) -> np.ndarray:
        """World points ``(N, 3)`` m -> pixels ``float64 (N, 2)`` ``(x, y)``; points behind the camera -> NaN.

        Raises:
            ValueError: ``points`` is not ``(N, 3)`` (or ``(3,)``).
        """
        p = np.asarray(points, np.float64)
        p = p[None] if p.ndim == 1 else p
        if p.ndim != 2 or p.shape[1] != 3:
            raise ValueError(f"project: points must be (N, 3) m, got {p.shape}")
        cam = (p - self.position) @ self.rotation  # R.T @ (p - t), row-wise
        uvw = cam @ self.intrinsics.T
        with np.errstate(divide="ignore", invalid="ignore"):
            px = uvw[:, :2] / uvw[:, 2:3]
        px[cam[:, 2] <= 1e-9] = np.nan
        return px

    def rays(self, pixels: np.ndarray) -> np.ndarray:
        """Unit ray directions ``float64 (N, 3)`` in the world frame through pixels ``(N, 2)`` ``(x, y)``; the rays
        start at :attr:`position`."""
        px = np.asarray(pixels, np.float64).reshape(-1, 2)
        hom = np.concatenate([px, np.ones((len(px), 1))], axis=1)
        d = np.linalg.solve(self.intrinsics, hom.T).T @ self.rotation.T
        return d / np.linalg.norm(d, axis=1, keepdims=True)

    def lift(self, pixels: np.ndarray, heights: np.ndarray) -> np.ndarray:
        """3-D points ``float64 (N, 3)`` m where the rays through ``pixels (N, 2)`` meet the planes ``z = heights (N,)``.

        Raises:
            ValueError: a ray parallel to its plane (|dir_z| < :data:`MIN_RAY_SLOPE`), or mismatched lengths.
        """
        d = self.rays(pixels)
        z = np.asarray(heights, np.float64).reshape(-1)
        if len(z) != len(d):
            raise ValueError(f"lift: {len(d)} pixels but {len(z)} heights")
        if np.any(np.abs(d[:, 2]) < MIN_RAY_SLOPE):
            raise ValueError("lift: a camera ray is parallel to the horizontal plane; no height can be intersected")
        s = (z - self.position[2]) / d[:, 2]
        return self.position[None] + s[:, None] * d

    def nearest_on_ray(self, pixel: np.ndarray, point: np.ndarray) -> tuple[float, np.ndarray]:
        """``(distance m, nearest point float64 (3,) m)`` from the world point ``point (3,)`` to the ray through
        ``pixel (2,)`` ``(x, y)`` px; the ray starts at :attr:`position` (a point behind the camera is measured from
        the camera centre). A NaN pixel gives a NaN distance."""
        d = self.rays(np.asarray(pixel, np.float64).reshape(1, 2))[0]
        p = np.asarray(point, np.float64)
        nearest = self.position + max(float((p - self.position) @ d), 0.0) * d
        return float(np.linalg.norm(p - nearest)), nearest

    def resized(self, image_size: tuple[int, int]) -> CameraCalibration:
        """The same camera rendered at ``image_size = (H, W)``: K scaled per axis (the principal point at the image
        centre scales with it, as in robosuite's ``get_camera_intrinsic_matrix``)."""
        h, w = (int(v) for v in image_size)
        sy, sx = h / self.image_size[0], w / self.image_size[1]
        k = self.intrinsics.copy()
        k[0, :] *= sx
        k[1, :] *= sy
        return CameraCalibration(k, self.world_from_camera, (h, w), self.camera)

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ``{"camera", "image_size": [H, W], "intrinsics": 3x3, "world_from_camera": 4x4}``."""
        return {"camera": self.camera, "image_size": list(self.image_size),
                "intrinsics": self.intrinsics.tolist(), "world_from_camera": self.world_from_camera.tolist()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CameraCalibration:
        """Inverse of :meth:`to_json`.

        Raises:
            ConfigError: a missing key or an invalid value (named).
        """
        try:
            return cls(intrinsics=np.asarray(d["intrinsics"], np.float64),
                       world_from_camera=np.asarray(d["world_from_camera"], np.float64),
                       image_size=tuple(d["image_size"]), camera=str(d.get("camera", "agentview")))
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"camera calibration needs intrinsics (3x3), world_from_camera (4x4) and image_size "
                              f"[H, W]: {e!r}") from e


def fit_calibration(points_3d: np.ndarray, pixels: np.ndarray, image_size: tuple[int, int],
                    camera: str = "agentview") -> tuple[CameraCalibration, float]:
    """Fit a pinhole calibration to 3-D/pixel correspondences (e.g. a dataset's ``labels.keypoints_3d`` and
    ``labels.keypoints_px``): the direct linear transform (Hartley & Zisserman, Multiple View Geometry, 2nd ed.,
    sec. 7.1) with normalised coordinates, then an RQ decomposition of ``P = K [R.T | -R.T t]``.

    Args:
        points_3d: ``(N, 3)`` world points (m), N >= 6, not all on one plane.
        pixels: ``(N, 2)`` their pixels ``(x, y)`` at ``image_size``.
        image_size: ``(H, W)`` px.
        camera: the name recorded in the calibration.

    Returns:
        ``(calibration, rms reprojection error in px)``.

    Raises:
        ValueError: fewer than 6 finite correspondences, or a degenerate (e.g. planar) point set.
    """
    x = np.asarray(points_3d, np.float64).reshape(-1, 3)
    u = np.asarray(pixels, np.float64).reshape(-1, 2)
    ok = np.all(np.isfinite(x), axis=1) & np.all(np.isfinite(u), axis=1)
    x, u = x[ok], u[ok]
    if len(x) < 6:
        raise ValueError(f"fit_calibration needs >= 6 finite correspondences, got {len(x)}")
    # normalise (Hartley): zero mean, mean distance sqrt(3) / sqrt(2)
    mx, mu = x.mean(0), u.mean(0)
    sx = np.sqrt(3) / max(np.linalg.norm(x - mx, axis=1).mean(), 1e-12)
    su = np.sqrt(2) / max(np.linalg.norm(u - mu, axis=1).mean(), 1e-12)
    tx = np.diag([sx, sx, sx, 1.0])
    tx[:3, 3] = -sx * mx
    tu = np.diag([su, su, 1.0])
    tu[:2, 2] = -su * mu
    xh = np.concatenate([x, np.ones((len(x), 1))], 1) @ tx.T
    uh = np.concatenate([u, np.ones((len(u), 1))], 1) @ tu.T
    a = np.zeros((2 * len(xh), 12))
    a[0::2, 0:4], a[0::2, 8:12] = xh, -uh[:, 0:1] * xh
    a[1::2, 4:8], a[1::2, 8:12] = xh, -uh[:, 1:2] * xh
    _, sv, vt = np.linalg.svd(a, full_matrices=False)
    if sv[-2] < 1e-9 * sv[0]:
        raise ValueError("fit_calibration: degenerate correspondences (all points on a plane or a line?)")
    p = np.linalg.inv(tu) @ vt[-1].reshape(3, 4) @ tx
    m = p[:, :3]
    if np.linalg.det(m) < 0:
        p, m = -p, -m
    # RQ decomposition of M = K Q (K upper triangular with a positive diagonal, Q a rotation)
    flip = np.flipud(np.eye(3))
    q_, r_ = np.linalg.qr((flip @ m).T)
    k = flip @ r_.T @ flip
    q = flip @ q_.T
    d = np.diag(np.sign(np.diag(k)))
    k, q = k @ d, d @ q
    scale = k[2, 2]
    k = k / scale
    cam_centre = -np.linalg.solve(m, p[:, 3])
    world_from_camera = np.eye(4)
    world_from_camera[:3, :3] = q.T
    world_from_camera[:3, 3] = cam_centre
    cal = CameraCalibration(k, world_from_camera, image_size, camera)
    err = cal.project(x) - u
    return cal, float(np.sqrt(np.nanmean(np.sum(err ** 2, axis=1))))
