"""The demonstrated grasp in each object's own frame: a check on the learned trace's close.

The trace model regresses a pick's close point and yaw from the keypoints and the proprio, and off the
demonstrations' states its close can land centimetres from where the expert grasps, with the object read well
(nut_assembly's failed learned picks; docs/results/non-privileged-high-level.md). Where
the expert always grasps an object the same way in the object's frame (a nut by its handle: 62 mm along the square
nut's local x, 68 mm along the round nut's, fingers across it), that grasp is a fact of the demonstrations, as
keypoint-based policies use it (P3PO, Levy et al. 2024: actions tied to tracked object points), and the object's
read keypoints place it in the scene.

:func:`fit_grasp_prior` reads it from a dataset's pick attempts (the expert's trace at each attempt's first frame and
the object's labelled keypoints there): each close point in the object's frame and the finger yaw relative to the
object's, modulo the turns that leave the grasp the same. An object is kept only where its demonstrations agree
(90% of the closes within ``max_spread_m`` of their median, yaws within ``max_yaw_spread_deg``); objects grasped by
clearance (pick_place_bins' boxes, standing or lying) or anywhere on a symmetric body with an off-centre grasp are
left out, and the fit says why. :func:`snapped_to_prior` moves a trace whose close misses the prior onto it.

Conventions: m, world frame, z up; an object's keypoints as :func:`tandem.core.dataset_schema.object_keypoints`
(``(2, 3)``: the origin, then a point along the object's local x axis); its frame has x along that axis projected
onto the table, z world up. Yaws in rad about +z from +x; the finger axis's (:mod:`tandem.core.grasp_clearance`),
whose grasp is the same under a half turn; an object of symmetry order ``m`` is the same under ``2 pi / m``; so a
grasp yaw relative to the object's is known modulo ``2 pi / lcm(2, m)``. Trace rows as
:data:`tandem.core.dataset_schema.TRACE_3D_COLUMNS`. Plain numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner_vlm.learned.grasp_check import turn_trace_to
from tandem.core.errors import ConfigError
from tandem.core.geometry import wrap_angle
from tandem.core.types import Trace3D

#: Defaults of the fit: the demonstrations agree when 90% of their closes lie within this of the median (m) ...
MAX_SPREAD_M = 0.005
#: ... and 90% of their relative yaws within this of theirs (deg).
MAX_YAW_SPREAD_DEG = 5.0
#: Fewer pick attempts of an object than this fit nothing.
MIN_SAMPLES = 10


def close_rows(trace: Trace3D) -> np.ndarray:
    """``int (C,)``: indices of ``trace``'s rows where an open gripper (command ``<= 0``) is commanded closed
    (``> 0``), in order; empty when it closes none (robosuite's -1 open / +1 closed). Raises nothing."""
    g = np.asarray(trace.gripper)
    return np.flatnonzero((g[1:] > 0) & (g[:-1] <= 0)) + 1


def yaw_period(order: int) -> float:
    """rad: the turn that leaves a grasp of an object of symmetry order ``order >= 1`` the same (the fingers' half
    turn combined with the object's ``2 pi / order``): ``2 pi / lcm(2, order)``.

    Raises:
        ConfigError: ``order < 1``.
    """
    if int(order) < 1:
        raise ConfigError(f"symmetry order must be >= 1, got {order}")
    return 2.0 * math.pi / math.lcm(2, int(order))


def object_yaw(keypoints: np.ndarray) -> float:
    """rad: the yaw of an object's local x axis from its keypoints ``(2, 3)`` m (origin, point along x)."""
    d = np.asarray(keypoints, np.float64)[1] - np.asarray(keypoints, np.float64)[0]
    return float(math.atan2(d[1], d[0]))


def _to_object_frame(point: np.ndarray, keypoints: np.ndarray) -> np.ndarray:
    """``(3,)`` m: ``point (3,)`` world frame, in the frame of the object at ``keypoints (2, 3)``."""
    yaw = object_yaw(keypoints)
    p = np.asarray(point, np.float64) - np.asarray(keypoints, np.float64)[0]
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([c * p[0] + s * p[1], -s * p[0] + c * p[1], p[2]])


@dataclass(frozen=True)
class ObjectGrasp:
    """One object's demonstrated grasp (see the module docstring).

    Attributes:
        offset_m: ``(3,)`` m, the close point in the object's frame (from its origin keypoint).
        yaw_offset_rad: the finger yaw minus the object's, in ``[-period / 2, period / 2)``.
        period_rad: the turn under which the grasp is the same (:func:`yaw_period`).
        spread_m: the demonstrations' 90th-percentile distance (xy, m) from ``offset_m``.
        yaw_spread_rad: their 90th-percentile yaw difference from ``yaw_offset_rad`` (modulo the period).
        samples: pick attempts fitted.
    """

    offset_m: tuple[float, float, float]
    yaw_offset_rad: float
    period_rad: float
    spread_m: float
    yaw_spread_rad: float
    samples: int

    def grasp(self, keypoints: np.ndarray) -> tuple[np.ndarray, float]:
        """The grasp of the object read at ``keypoints (2, 3)`` m: ``(point (3,) m world frame, yaw rad)`` (the yaw is
        one representative; any whole multiple of :attr:`period_rad` away is the same grasp). Raises nothing."""
        kp = np.asarray(keypoints, np.float64)
        yaw = object_yaw(kp)
        c, s = math.cos(yaw), math.sin(yaw)
        x, y, z = self.offset_m
        point = kp[0] + np.array([c * x - s * y, s * x + c * y, z])
        return point, yaw + self.yaw_offset_rad


@dataclass(frozen=True)
class GraspPrior:
    """The objects whose demonstrated grasp is fixed in their frame (see the module docstring).

    Attributes:
        objects: object -> :class:`ObjectGrasp`, only those whose demonstrations agree.
        rejected: object -> why it has none (spread, too few samples, symmetric off-centre), for the record.
    """

    objects: dict[str, ObjectGrasp] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (:meth:`from_dict` reads it back)."""
        return {"objects": {k: {"offset_m": [round(float(v), 6) for v in g.offset_m],
                                "yaw_offset_rad": round(g.yaw_offset_rad, 6), "period_rad": round(g.period_rad, 9),
                                "spread_m": round(g.spread_m, 6), "yaw_spread_rad": round(g.yaw_spread_rad, 6),
                                "samples": g.samples} for k, g in self.objects.items()},
                "rejected": dict(self.rejected)}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> GraspPrior:
        """Read :meth:`to_dict`'s form.

        Raises:
            ConfigError: a malformed entry (named): ``objects`` or ``rejected`` not a mapping, an offset that is not
                a list of 3 finite numbers (m), a yaw offset that is not finite, a period that is not finite and
                > 0, a negative or non-finite spread.
        """
        if not isinstance(raw, dict):
            raise ConfigError(f"grasp prior must be a mapping, got {type(raw).__name__}")
        objects_raw, rejected_raw = raw.get("objects", {}), raw.get("rejected", {})
        for key, value in (("objects", objects_raw), ("rejected", rejected_raw)):
            if not isinstance(value, dict):
                raise ConfigError(f"grasp prior {key} must be a mapping of object names, got {type(value).__name__}")
        objects = {}
        for name, g in objects_raw.items():
            where = f"grasp prior of {name!r}"
            if not isinstance(g, dict) or not isinstance(g.get("offset_m"), (list, tuple)):
                raise ConfigError(f"{where} is malformed: needs offset_m [x, y, z] (m), yaw_offset_rad and period_rad")
            try:
                offset = tuple(float(v) for v in g["offset_m"])
                numbers = {k: float(g[k]) for k in ("yaw_offset_rad", "period_rad")}
                numbers.update({k: float(g.get(k, 0.0)) for k in ("spread_m", "yaw_spread_rad")})
                samples = int(g.get("samples", 0))
            except (KeyError, TypeError, ValueError) as e:
                raise ConfigError(f"{where} is malformed ({e!r}): needs offset_m [x, y, z] (m), yaw_offset_rad and "
                                  "period_rad as numbers") from e
            bad = [k for k, v in numbers.items() if not math.isfinite(v)]
            if len(offset) != 3 or not all(math.isfinite(v) for v in offset):
                bad.insert(0, "offset_m")
            if numbers["period_rad"] <= 0:
                bad.append("period_rad")
            bad += [k for k in ("spread_m", "yaw_spread_rad") if numbers[k] < 0]
            if bad:
                raise ConfigError(f"{where}: {', '.join(dict.fromkeys(bad))} out of range (offset_m: 3 finite numbers, m; "
                                  f"yaw_offset_rad finite; period_rad finite and > 0; spreads finite and >= 0), got "
                                  f"offset_m {list(offset)}, " + ", ".join(f"{k} {v}" for k, v in numbers.items()))
            objects[str(name)] = ObjectGrasp(offset_m=offset, yaw_offset_rad=numbers["yaw_offset_rad"],
                                             period_rad=numbers["period_rad"], spread_m=numbers["spread_m"],
                                             yaw_spread_rad=numbers["yaw_spread_rad"], samples=samples)
        return cls(objects=objects, rejected={str(k): str(v) for k, v in rejected_raw.items()})


def _circular_center(angles: np.ndarray, period: float) -> tuple[float, np.ndarray]:
    """The mean direction of ``angles (N,)`` rad modulo ``period``, in ``[-period / 2, period / 2)``, and each
    angle's signed difference from it (same range)."""
    k = 2.0 * math.pi / period
    center = wrap_angle(float(np.angle(np.mean(np.exp(1j * k * angles)))) / k, period)
    diff = ((angles - center + period / 2.0) % period) - period / 2.0
    return center, diff


def fit_grasp_prior(objects: list[str], keypoints: np.ndarray, closes: np.ndarray, symmetries: dict[str, int],
                    max_spread_m: float = MAX_SPREAD_M, max_yaw_spread_deg: float = MAX_YAW_SPREAD_DEG,
                    min_samples: int = MIN_SAMPLES) -> GraspPrior:
    """Fit each object's demonstrated grasp (see the module docstring).

    Args:
        objects: ``(N,)`` the picked object of each sample.
        keypoints: ``(N, 2, 3)`` m, world frame: that object's keypoints at the attempt's first frame.
        closes: ``(N, 4)``: the expert trace's first close of an open gripper, point (m, world frame) and finger
            yaw (rad).
        symmetries: object -> symmetry order ``m >= 1`` (absent: 1).
        max_spread_m, max_yaw_spread_deg, min_samples: when the demonstrations of an object agree.

    Returns:
        A :class:`GraspPrior` with the objects that agree, and the others' reasons.

    Raises:
        ConfigError: arrays of other shapes or lengths, or non-positive limits.
    """
    kp, cl = np.asarray(keypoints, np.float64), np.asarray(closes, np.float64)
    if kp.ndim != 3 or kp.shape[1:] != (2, 3) or cl.shape != (len(kp), 4) or len(objects) != len(kp):
        raise ConfigError(f"fit_grasp_prior needs objects (N,), keypoints (N, 2, 3) and closes (N, 4), got "
                          f"{len(objects)}, {kp.shape} and {cl.shape}")
    if not (max_spread_m > 0 and max_yaw_spread_deg > 0 and min_samples >= 1):
        raise ConfigError(f"fit_grasp_prior limits must be > 0, got {max_spread_m} m, {max_yaw_spread_deg} deg, "
                          f"{min_samples} samples")
    fitted, rejected = {}, {}
    names = np.asarray(objects, dtype=object)
    for name in sorted(set(objects)):
        rows = np.flatnonzero(names == name)
        if len(rows) < min_samples:
            rejected[name] = f"{len(rows)} pick attempts, fewer than {min_samples}"
            continue
        order = symmetries.get(name, 1)
        if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
            raise ConfigError(f"symmetry order of {name!r} must be an integer >= 1, got {order!r}")
        period = yaw_period(order)
        local = np.stack([_to_object_frame(cl[r, :3], kp[r]) for r in rows])
        rel = np.array([cl[r, 3] - object_yaw(kp[r]) for r in rows])
        offset = np.median(local, axis=0)
        spread = float(np.percentile(np.linalg.norm(local[:, :2] - offset[:2], axis=1), 90))
        center, diff = _circular_center(rel, period)
        yaw_spread = float(np.percentile(np.abs(diff), 90))
        if spread > max_spread_m:
            rejected[name] = f"closes spread {spread * 1000:.1f} mm (90th percentile) > {max_spread_m * 1000:.1f} mm"
        elif math.degrees(yaw_spread) > max_yaw_spread_deg:
            rejected[name] = f"yaws spread {math.degrees(yaw_spread):.1f} deg > {max_yaw_spread_deg:.1f} deg"
        elif order > 1 and float(np.linalg.norm(offset[:2])) > max_spread_m:
            rejected[name] = (f"symmetric (order {order}) with a grasp {np.linalg.norm(offset[:2]) * 1000:.1f} mm off "
                              "its origin: which side is not known from its keypoints")
        else:
            fitted[name] = ObjectGrasp(offset_m=tuple(float(v) for v in offset), yaw_offset_rad=center,
                                       period_rad=period, spread_m=spread, yaw_spread_rad=yaw_spread,
                                       samples=len(rows))
    return GraspPrior(objects=fitted, rejected=rejected)


def snapped_to_prior(trace: Trace3D, event: int, point: np.ndarray, yaw: float, period: float) -> Trace3D:
    """``trace`` with its close (row ``event``) moved onto the grasp ``point (3,)`` m / ``yaw`` rad (modulo
    ``period``): every row but row 0 (the gripper now) shifts by the close's offset, so the approach and lift keep
    their shape; the close turns to the representative of ``yaw`` nearest the trace's own, the rows before it in
    proportion and the rows after it with it (:func:`~planner_vlm.learned.grasp_check.turn_trace_to`).

    Raises:
        ConfigError: ``event`` outside rows 1..len-1.
    """
    if not 1 <= int(event) < len(trace):
        raise ConfigError(f"close row {event} outside the trace's rows 1..{len(trace) - 1}")
    points = np.array(trace.points, np.float64)
    points[1:] += np.asarray(point, np.float64) - points[event]
    own = float(trace.yaw[event])
    target = own + wrap_angle(yaw - own, period)
    return Trace3D(points=points.astype(trace.points.dtype), yaw=turn_trace_to(trace.yaw, event, target),
                   gripper=trace.gripper, frame=trace.frame)


def close_miss(trace: Trace3D, event: int, point: np.ndarray, yaw: float, period: float) -> tuple[float, float]:
    """How far ``trace``'s close (row ``event``) is from the grasp ``point (3,)`` / ``yaw``: ``(xy distance m, yaw
    difference rad modulo period, in [0, period / 2])``. Raises nothing."""
    d_xy = float(np.linalg.norm(np.asarray(trace.points[event, :2], np.float64) - np.asarray(point, np.float64)[:2]))
    d_yaw = abs(wrap_angle(float(trace.yaw[event]) - yaw, period))
    return d_xy, d_yaw
