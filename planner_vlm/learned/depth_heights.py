"""Depth decides an object's height where one camera's image cannot: the RGB-D check of the state model's 3-D read.

The state model finds an object's pixel well and lifts it to 3-D at a height (regressed, or a resting mode's:
:mod:`planner_vlm.learned.rest_heights`). Along the camera ray a height error is a depth error: a
failed pick of the learned stack often goes to a cube read one cube too high or too
low (a predicate misread: ``on(x, y)`` false for a stacked cube, so it was put at table height, or the reverse). An RGB-D camera measures the range along that ray.

The ray through an object's origin pixel meets the object's visible surface first; the origin lies a nearly constant
distance behind it (the *depth offset*: 26-29 mm for stack_three's cubes seen from agentview, fitted per object from
rendered scenes by ``scripts/fit_depth_offsets.py`` and stored with the state checkpoint). So the measured surface
range plus the offset gives the origin's range, hence its height, to a few millimetres. A one-cube height error
moves the range by 5-8 cm, far outside that spread.

The rule is a check, not a replacement: an object keeps the model's 3-D read when the depth agrees with it (within
``tolerance_m`` in height). Where they disagree and the depth's height is plausible for the object (from its lowest
resting height less the tolerance to ``max_rise_m`` above its highest one), the object is moved along its ray to the
depth's height, snapped to a resting mode within the tolerance. It is left alone where the depth cannot be about the
object: when it is held (``grasped`` at p >= 0.5: the fingers and the hand are in front of it), when its heatmap is
diffuse (``object_uncertainty`` above ``max_uncertainty``: something hides it, and the depth is the occluder's), when
the depth is implausible (an arm or another object in front makes the surface nearer and the height too high), or
where the checkpoint has no offset for it (its offsets scattered in the fit, e.g. a nut, whose origin pixel looks
through its hole). Depth from an RGB-D camera is real sensing, not privileged state; the bridge gives none today, and
then nothing changes.

Conventions: world frame (m), z up; depth ``float32 (H, W)`` m along the camera's optical axis (OpenCV +z), NaN where
no return, pixel-aligned with the RGB image; pixels ``(x, y)`` origin top-left at the calibration's image size.
"""

from __future__ import annotations

import numpy as np

from planner_vlm.learned.camera import CameraCalibration

#: A read and the depth agree when their heights differ by at most this (m).
DEPTH_TOLERANCE_M = 0.02
#: The depth's height is plausible up to this far (m) above the object's highest resting height (one or two objects
#: stacked under it); higher, something in front of it answered.
MAX_RISE_M = 0.12
#: Objects whose heatmap uncertainty is above this are hidden: the depth at their pixel is the occluder's.
MAX_UNCERTAINTY = 0.5
#: The depth at a pixel is the median of the finite depths in this square (px, odd) around it.
DEPTH_PATCH_PX = 3


def depth_at(depth: np.ndarray, pixel: np.ndarray, patch: int = DEPTH_PATCH_PX) -> float:
    """Median depth (m) of the finite values in the ``patch x patch`` square around ``pixel (2,)`` ``(x, y)`` px of
    ``depth (H, W)``; NaN outside the image or without a finite value."""
    h, w = depth.shape
    x, y = (int(round(float(v))) if np.isfinite(v) else -(10**6) for v in pixel)
    if not (0 <= x < w and 0 <= y < h):
        return float("nan")
    r = patch // 2
    window = depth[max(0, y - r): y + r + 1, max(0, x - r): x + r + 1]
    finite = window[np.isfinite(window)]
    return float(np.median(finite)) if finite.size else float("nan")


def surface_range(calibration: CameraCalibration, depth: np.ndarray, pixel: np.ndarray) -> float:
    """Range (m) from the camera centre along the ray through ``pixel (2,)`` ``(x, y)`` (calibration px) to the
    surface the depth image ``depth (H, W)`` m (any size; the pixel is scaled to it) sees there; NaN without a
    return, for a pixel outside the image, or a NaN pixel.

    Raises:
        ValueError: ``depth`` is not 2-D.
    """
    return _surface_hit(calibration, depth, pixel)[0]


def surface_point(calibration: CameraCalibration, depth: np.ndarray, pixel: np.ndarray) -> np.ndarray:
    """``(3,)`` world point (m) of the surface that the depth image ``depth (H, W)`` m sees along the ray through
    ``pixel (2,)`` ``(x, y)`` (calibration px; ``depth`` may have any size, the pixel is scaled to it); NaN without
    a return, for a pixel outside the image, or a NaN pixel.

    Raises:
        ValueError: ``depth`` is not 2-D.
    """
    r, ray = _surface_hit(calibration, depth, pixel)
    return calibration.position + r * ray if np.isfinite(r) else np.full(3, np.nan)


def _surface_hit(calibration: CameraCalibration, depth: np.ndarray, pixel: np.ndarray) -> tuple[float, np.ndarray]:
    """``(range m, unit ray (3,) world)`` of :func:`surface_range`."""
    if np.ndim(depth) != 2:
        raise ValueError(f"a depth image must be (H, W) m, got shape {np.shape(depth)}")
    h, w = depth.shape
    px = np.asarray(pixel, np.float64)
    d = depth_at(depth, px * np.array([w / calibration.image_size[1], h / calibration.image_size[0]]))
    ray = calibration.rays(px.reshape(1, 2))[0]
    along_axis = float(ray @ calibration.rotation[:, 2])
    return (d / along_axis if along_axis > 1e-6 else float("nan")), ray


def depth_checked_keypoints(keypoints_3d: np.ndarray, pixels: np.ndarray, grasped: np.ndarray,
                            uncertainty: np.ndarray | None, depth: np.ndarray, calibration: CameraCalibration,
                            offsets: np.ndarray, rest_heights: np.ndarray, tolerance_m: float = DEPTH_TOLERANCE_M,
                            max_rise_m: float = MAX_RISE_M, max_uncertainty: float = MAX_UNCERTAINTY
                            ) -> tuple[np.ndarray, np.ndarray]:
    """The objects' keypoints with each origin the depth disagrees with moved along its ray to the depth's height.

    Args:
        keypoints_3d: ``(O, 2, 3)`` m, each object's origin then second keypoint, as read.
        pixels: ``(O, 2, 2)`` px, the same keypoints in the calibration's image.
        grasped: ``(O,)`` probability that each object is held (0 for objects the task never grasps).
        uncertainty: ``(O,)`` heatmap uncertainty (``SceneState.object_uncertainty``), or None (not checked).
        depth: ``float32 (H, W)`` m, the camera's depth image.
        calibration: the camera's calibration.
        offsets: ``(O,)`` m, each object's depth offset (NaN: never checked).
        rest_heights: ``(O, M, 2)`` m, each object's resting modes (NaN: none; an object without one is not checked).
        tolerance_m, max_rise_m, max_uncertainty: see the module docstring.

    Returns:
        ``(keypoints_3d (O, 2, 3) m, moved bool (O,))``; the input is not modified.

    Raises:
        ValueError: shapes that do not match ``(O, 2, 3)`` / ``(O, 2, 2)`` / ``(O,)``, or a depth image that is not
            2-D.
    """
    kp = np.array(keypoints_3d, np.float64)
    px = np.asarray(pixels, np.float64)
    o = kp.shape[0]
    if kp.shape != (o, 2, 3) or px.shape != (o, 2, 2) or np.shape(grasped) != (o,) or np.shape(offsets) != (o,):
        raise ValueError(f"depth check: keypoints_3d (O, 2, 3), pixels (O, 2, 2), grasped and offsets (O,); got "
                         f"{kp.shape}, {px.shape}, {np.shape(grasped)}, {np.shape(offsets)}")
    if np.ndim(depth) != 2:
        raise ValueError(f"depth check: the depth image must be (H, W) m, got shape {np.shape(depth)}")
    moved = np.zeros(o, bool)
    for i in range(o):
        modes = np.asarray(rest_heights[i], np.float64)[:, 0]
        modes = modes[np.isfinite(modes)]
        if (not np.isfinite(offsets[i]) or grasped[i] >= 0.5 or not modes.size
                or (uncertainty is not None and uncertainty[i] > max_uncertainty)):
            continue
        r_surface, ray = _surface_hit(calibration, depth, px[i, 0])
        if not np.isfinite(r_surface):
            continue
        origin = calibration.position + (r_surface + float(offsets[i])) * ray
        z_depth, z_read = float(origin[2]), float(kp[i, 0, 2])
        if abs(z_depth - z_read) <= tolerance_m:
            continue  # they agree: the model's read stands
        if not (modes.min() - tolerance_m <= z_depth <= modes.max() + max_rise_m):
            continue  # implausible for the object: something in front of it answered
        nearest = modes[np.argmin(np.abs(modes - z_depth))]
        if abs(nearest - z_depth) <= tolerance_m:  # at rest: at its resting height exactly
            origin = calibration.lift(px[i, 0].reshape(1, 2), np.array([nearest]))[0]
        shift = origin - kp[i, 0]
        kp[i] = kp[i] + shift[None]
        moved[i] = True
    return kp, moved


def fit_depth_offsets(ranges_true: np.ndarray, ranges_surface: np.ndarray, max_spread_m: float = DEPTH_TOLERANCE_M
                      ) -> np.ndarray:
    """Each object's depth offset (m): the median of ``origin range - surface range`` over frames, NaN where its
    5th-95th percentile spread exceeds ``max_spread_m`` (the depth does not tell that object's height) or it has
    fewer than 5 finite frames.

    Args:
        ranges_true: ``(N, O)`` m, the range from the camera centre to each object's origin (the labels).
        ranges_surface: ``(N, O)`` m, the depth image's range along the ray through each origin's pixel (NaN: none).

    Raises:
        ValueError: shapes that differ or are not 2-D.
    """
    t, s = np.asarray(ranges_true, np.float64), np.asarray(ranges_surface, np.float64)
    if t.shape != s.shape or t.ndim != 2:
        raise ValueError(f"fit_depth_offsets: ranges must be (N, O) of one shape, got {t.shape} and {s.shape}")
    out = np.full(t.shape[1], np.nan)
    for i in range(t.shape[1]):
        d = (t[:, i] - s[:, i])[np.isfinite(t[:, i] - s[:, i])]
        if d.size >= 5 and np.percentile(d, 95) - np.percentile(d, 5) <= max_spread_m:
            out[i] = float(np.median(d))
    return out
