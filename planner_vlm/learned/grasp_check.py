"""The learned planner's grasp check: a pick trace's finger yaw tested against the perceived scene.

The trace model learns the expert's grasp yaw from demonstrations, but pick_place_bins' expert chooses it by
geometry that the model does not see: it turns the open gripper so that the hand and fingers clear the source
bin's walls and the other objects (:mod:`tandem.core.grasp_clearance`). The model's pick yaws stray from the
expert's (``event_yaw_error_deg`` in the trace model's metrics), and picks of objects read well then fail with the
hand on the bin's wall.

The check runs the same clearance on the state model's reading: the objects' footprints from their keypoints and
known extents, and the workcell's fixed walls. When the predicted grasp would touch (clearance below
:attr:`Workcell.min_clearance_m`), the yaw is turned to the candidate (every 15 deg over a half turn, among those
that the object's width across the fingers allows) with the most clearance, counted up to
:attr:`Workcell.enough_clearance_m` as the expert counts it, ties to the smallest turn. The trace's turn points are
scaled so that the turn ends there. A grasp that clears is left as the model predicted it.

Conventions: m, world frame; yaw in rad about +z from +x, of the finger axis (:mod:`tandem.core.grasp_clearance`);
keypoints as :func:`tandem.core.dataset_schema.object_keypoints` (the origin, then a point along the object's
local x axis); trace rows as :data:`tandem.core.dataset_schema.TRACE_3D_COLUMNS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tandem.core.errors import ConfigError
from tandem.core.grasp_clearance import Container, footprint, open_gripper_clearance

#: Candidate yaws over a half turn (every 15 deg, as the expert tries a can's).
N_CANDIDATES = 12


@dataclass(frozen=True)
class Workcell:
    """What the grasp check knows besides the state model's reading: static facts of the task's scene.

    Attributes:
        containers: walls the gripper picks inside of (pick_place_bins' source bin).
        extents: object -> its body-frame bounding box ``((lo x, y, z), (hi x, y, z))`` m about its origin (the
            first keypoint), upright.
        max_grasp_width_m: the widest extent across the fingers (m) a candidate yaw may close on (the Panda opens
            8 cm).
        min_clearance_m: a predicted grasp with less clearance (m) is turned.
        enough_clearance_m: clearances above this count as equal (the expert's 2 cm).
    """

    containers: tuple[Container, ...] = ()
    extents: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)
    max_grasp_width_m: float = 0.07
    min_clearance_m: float = 0.0
    enough_clearance_m: float = 0.02

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (:meth:`from_dict` reads it back)."""
        return {"containers": [{"inner_lo": list(c.inner_lo), "inner_hi": list(c.inner_hi), "rim_z": c.rim_z}
                               for c in self.containers],
                "extents": {k: [list(lo), list(hi)] for k, (lo, hi) in self.extents.items()},
                "max_grasp_width_m": self.max_grasp_width_m, "min_clearance_m": self.min_clearance_m,
                "enough_clearance_m": self.enough_clearance_m}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Workcell:
        """Inverse of :meth:`to_dict`.

        Raises:
            ConfigError: an unknown key, a missing or malformed field, a box whose low corner is not below its high
                one, a non-finite number or a width or clearance out of range (each named).
        """
        if not isinstance(d, dict):
            raise ConfigError(f"workcell must be a mapping, got {type(d).__name__}")
        known = {"containers", "extents", "max_grasp_width_m", "min_clearance_m", "enough_clearance_m"}
        if set(d) - known:
            raise ConfigError(f"workcell: unknown key(s) {sorted(set(d) - known)}; known: {sorted(known)}")

        def vec(where: str, v: Any, n: int) -> tuple[float, ...]:
            try:
                out = tuple(float(x) for x in v)
            except (TypeError, ValueError):
                raise ConfigError(f"workcell {where}: expected {n} numbers, got {v!r}") from None
            if len(out) != n or not all(math.isfinite(x) for x in out):
                raise ConfigError(f"workcell {where}: expected {'a finite number' if n == 1 else f'{n} finite numbers'}"
                                  f", got {v[0] if n == 1 else v!r}")
            return out

        if not isinstance(d.get("containers", []), (list, tuple)) or not isinstance(d.get("extents", {}), dict):
            raise ConfigError("workcell: containers must be a list and extents a mapping, got "
                              f"{type(d.get('containers', [])).__name__} and {type(d.get('extents', {})).__name__}")
        containers = []
        for i, c in enumerate(d.get("containers", [])):
            if not isinstance(c, dict) or {"inner_lo", "inner_hi", "rim_z"} - set(c):
                raise ConfigError(f"workcell containers[{i}]: needs inner_lo, inner_hi and rim_z, got {c!r}")
            lo, hi = vec(f"containers[{i}].inner_lo", c["inner_lo"], 2), vec(f"containers[{i}].inner_hi", c["inner_hi"], 2)
            (rim,) = vec(f"containers[{i}].rim_z", [c["rim_z"]], 1)
            if not all(a < b for a, b in zip(lo, hi, strict=True)):
                raise ConfigError(f"workcell containers[{i}]: inner_lo {list(lo)} must be below inner_hi {list(hi)}")
            containers.append(Container(lo, hi, rim))  # type: ignore[arg-type]
        extents = {}
        for name, box in dict(d.get("extents", {})).items():
            if not isinstance(box, (list, tuple)) or len(box) != 2:
                raise ConfigError(f"workcell extents[{name!r}]: expected [lo xyz, hi xyz], got {box!r}")
            lo, hi = vec(f"extents[{name!r}] lo", box[0], 3), vec(f"extents[{name!r}] hi", box[1], 3)
            if not all(a < b for a, b in zip(lo, hi, strict=True)):
                raise ConfigError(f"workcell extents[{name!r}]: lo {list(lo)} must be below hi {list(hi)}")
            extents[str(name)] = (lo, hi)
        scalars = {k: vec(k, [d[k]], 1)[0] for k in ("max_grasp_width_m", "min_clearance_m", "enough_clearance_m")
                   if k in d}
        if not 0 < scalars.get("max_grasp_width_m", 0.07) <= 0.08:
            raise ConfigError(f"workcell max_grasp_width_m must be in (0, 0.08] m, got {scalars['max_grasp_width_m']}")
        if scalars.get("enough_clearance_m", 0.02) < 0:
            raise ConfigError(f"workcell enough_clearance_m must be >= 0 m, got {scalars['enough_clearance_m']}")
        return cls(tuple(containers), extents, **scalars)


def width_across(outline: np.ndarray, yaw: float) -> float:
    """Extent (m) of ``outline (N, 2)`` along the closing direction ``(cos yaw, sin yaw)``."""
    proj = np.asarray(outline, np.float64) @ np.array([math.cos(yaw), math.sin(yaw)])
    return float(proj.max() - proj.min())


def checked_grasp_yaw(grasp: np.ndarray, yaw: float, target: str, keypoints: dict[str, np.ndarray],
                      symmetries: dict[str, int], cell: Workcell) -> tuple[float, float, float]:
    """The grasp yaw to use at ``grasp`` for ``target`` (see the module docstring).

    Args:
        grasp: ``(3,)`` grip-site position of the close (m, world).
        yaw: the predicted finger yaw there (rad).
        target: the object to pick.
        keypoints: object -> ``(2, 3)`` keypoints (m, world) of every object the state model finds in the scene.
        symmetries: object -> symmetry order (1 when absent).
        cell: the workcell.

    Returns:
        ``(yaw (rad, the predicted one plus a turn in [-pi/2, pi/2)), clearance at it (m), clearance at the
        predicted yaw (m))``.

    Raises:
        ConfigError: ``target`` has no extents in the workcell.
    """
    if target not in cell.extents:
        raise ConfigError(f"grasp check: no extents for {target!r} in the workcell (known: {sorted(cell.extents)})")
    obstacles = []
    for name, kp in keypoints.items():
        if name == target or name not in cell.extents:
            continue
        lo, hi = (np.asarray(v, np.float64) for v in cell.extents[name])
        obstacles.append((footprint(kp, lo, hi, symmetries.get(name, 1)), float(np.asarray(kp)[0, 2] + hi[2])))
    lo, hi = (np.asarray(v, np.float64) for v in cell.extents[target])
    outline = footprint(keypoints[target], lo, hi, symmetries.get(target, 1))
    now = open_gripper_clearance(grasp, yaw, obstacles, cell.containers)
    if now >= cell.min_clearance_m:
        return float(yaw), now, now
    best, best_score, best_clear = float(yaw), -np.inf, now
    for k in range(N_CANDIDATES):
        turn = (k * math.pi / N_CANDIDATES + math.pi / 2) % math.pi - math.pi / 2
        cand = float(yaw) + turn
        if width_across(outline, cand) > cell.max_grasp_width_m:
            continue
        clear = open_gripper_clearance(grasp, cand, obstacles, cell.containers)
        score = min(clear, cell.enough_clearance_m) - 1e-3 * abs(turn)
        if score > best_score:
            best, best_score, best_clear = cand, score, clear
    return best, best_clear, now


def turn_trace_to(yaws: np.ndarray, event: int, new_yaw: float) -> np.ndarray:
    """``yaws (R,)`` rad of a trace whose row ``event`` (the close) gets ``new_yaw``: row 0 (the gripper now) stays,
    the rows before the close move in proportion to their part of the turn from row 0 to it, and the rows from the
    close on move with it."""
    out = np.array(yaws, np.float64, copy=True)
    delta = float(new_yaw) - out[event]
    span = out[event] - out[0]
    for r in range(1, len(out)):
        w = 1.0 if r >= event or abs(span) < 1e-6 else float(np.clip((out[r] - out[0]) / span, 0.0, 1.0))
        out[r] += delta * w
    return out
