"""An expert's pick geometry over the state model's reading: the learned planner's ``geometric_picks``.

Where a task's scripted expert plans its pick by geometry over the object's pose (nut_assembly:
:mod:`tandem.core.nut_pick`; pick_place_bins: :mod:`tandem.core.bin_pick`), the learned planner can run that same
geometry over the object **as the state model reads it** (its two keypoints: origin and a point along its local x
axis), the gripper's pose from the proprio and the wrist from the arm's joints, instead of asking the trace model.
The geometry's static facts (never a pose) are recorded in the trace checkpoint at training
(``TraceModelConfig.pick_geometry``); :func:`pick_geometry_from_dict` reads either kind.

pick_place_bins' geometry needs the object standing upright (its grasp height and the yaws that close on its faces
follow from that); an object read as lying on its side (its x keypoint steeply over or under its origin, or its origin
:data:`LYING_DROP_M` or more below its upright rest height on the floor) is left to the trace model, with the reason.
Two lying poses pass as upright: a bread on its y face (3 mm lower, its x axis level: near a cube, grasped alike) and
any object lying on top of another (the drop is measured from the floor). The other objects found (object confidence
at least the planner's ``min_object_confidence``) are the obstacles the open gripper must clear, as outlines from
their keypoints and extents: upright, the box turned to the read (:func:`planner_vlm.learned.grasp_check.footprint`);
read as lying with its x axis level, the box laid along the read x axis (its long z extent across it); read with its
x axis steep, a disc as wide as its longest extent. The bread's yaw is read modulo a quarter turn (the state model's
symmetry order 4), so its ``narrow_side`` preference falls on whichever face reads as its x: on validation seed 714
the gripper closed twice across its 4.8 cm side where the expert closes across 4 cm, and missed.

Conventions: m, world frame, z up; yaws in rad about +z from +x (the gripper's: its finger axis); keypoints as
:class:`~planner_vlm.learned.scene_state.SceneState` (``(O, 2, 3)``). numpy only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner_vlm.learned.grasp_check import ROUND_ORDER, footprint
from planner_vlm.learned.scene_state import SceneState
from tandem.core.bin_pick import (
    BinObjectForPick,
    BinPickGeometry,
    bin_pick_waypoints,
    plan_bin_pick,
    yaw_candidates,
)
from tandem.core.errors import ConfigError
from tandem.core.nut_pick import NutPickGeometry, nut_pick_waypoints, plan_nut_pick
from tandem.core.waypoints import Waypoint

PickGeometry = NutPickGeometry | BinPickGeometry

#: An origin read this far (m) or more below its upright rest height on the bins' floor reads as lying on its side
#: (pick_place_bins: a lying cereal box's origin is 6 cm lower, a milk carton's 4 cm, a can's 1.5 cm; the state
#: model's 3-D error is 3 mm at the median).
LYING_DROP_M = 0.012
#: A read whose x keypoint is this steep (sin of its elevation) or steeper has its x axis up: lying on its side.
STEEP_AXIS_SIN = math.sin(math.radians(45))


def pick_geometry_from_dict(d: Any) -> PickGeometry:
    """The geometry a trace checkpoint records: :class:`~tandem.core.nut_pick.NutPickGeometry` where it names
    ``nuts``, :class:`~tandem.core.bin_pick.BinPickGeometry` where it names ``objects``.

    Raises:
        ConfigError: not a mapping, neither kind or both, or a malformed field of its kind (each named).
    """
    if isinstance(d, dict) and "nuts" in d and "objects" in d:
        raise ConfigError("pick_geometry names both nuts (nut_assembly) and objects (pick_place_bins); one kind only")
    if isinstance(d, dict) and "nuts" in d:
        return NutPickGeometry.from_dict(d)
    if isinstance(d, dict) and "objects" in d:
        return BinPickGeometry.from_dict(d)
    raise ConfigError("pick_geometry must be a mapping naming nuts (nut_assembly) or objects (pick_place_bins), got "
                      f"{sorted(d, key=str) if isinstance(d, dict) else type(d).__name__}")


def geometry_objects(geometry: PickGeometry) -> tuple[str, ...]:
    """The objects whose pick ``geometry`` plans."""
    return tuple(geometry.nuts if isinstance(geometry, NutPickGeometry) else geometry.objects)


def geometric_pick_waypoints(geometry: PickGeometry, target: str, state: SceneState, found: np.ndarray,
                             eef: np.ndarray, eef_yaw: float, wrist: float) -> tuple[list[Waypoint], dict[str, Any]] | str:
    """The expert's pick of ``target`` over ``state`` (see the module docstring).

    Args:
        geometry: the task's static pick facts. target: an object of :func:`geometry_objects` and of ``state``.
        state: the state model's reading. found: ``bool (O,)`` the objects it finds (obstacles for a bin pick).
        eef: ``(3,)`` the grip site now (m, world). eef_yaw: its finger yaw now (rad). wrist: Panda joint 7 now (rad).

    Returns:
        ``(waypoints, memory-event fields: grasp (m), grasp_yaw (rad) and, for a nut, turn (rad))``, or the reason
        the geometry does not apply (a non-finite or degenerate read, an object read as lying on its side).

    Raises:
        UnknownNameError: ``target`` is not in ``state.objects``. ConfigError: ``target`` is not in the geometry, or
            ``found`` is not one flag per object of ``state``.
    """
    i = state.object_index(target)
    if target not in geometry_objects(geometry):
        raise ConfigError(f"pick geometry knows {list(geometry_objects(geometry))}, not {target!r}")
    found = np.asarray(found, bool)
    if found.shape != (len(state.objects),):
        raise ConfigError(f"found must hold one flag per object {list(state.objects)}, got shape {found.shape}")
    keypoints = np.asarray(state.keypoints_3d[i], np.float64)
    if not (np.all(np.isfinite(keypoints)) and np.all(np.isfinite(eef)) and math.isfinite(eef_yaw)
            and math.isfinite(wrist)):
        return "a non-finite read or proprio"
    axis = keypoints[1] - keypoints[0]
    flat = math.hypot(float(axis[0]), float(axis[1]))
    if isinstance(geometry, NutPickGeometry):
        if flat < 1e-6:
            return "the read's x axis is degenerate"
        plan = plan_nut_pick(keypoints[0], np.array([axis[0] / flat, axis[1] / flat, 0.0]), geometry.nuts[target],
                             eef, eef_yaw, wrist, np.asarray(geometry.base_pos))
        return nut_pick_waypoints(plan, eef), {"grasp": _rounded(plan.grasp), "grasp_yaw": round(plan.grasp_yaw, 3),
                                               "turn": round(plan.turn, 3)}
    info = geometry.objects[target]
    lo, hi = (np.asarray(v, np.float64) for v in info.extents)
    pose = _read_pose(keypoints, lo, geometry.floor_z)
    if pose == "steep":
        return "the object reads as lying on its side (its x axis points up or down)"
    if pose == "degenerate":
        return "the read's x axis is degenerate"
    if pose != "upright":
        return f"the object reads as lying on its side ({pose} below its upright rest height)"
    obstacles = []
    for j, name in enumerate(state.objects):
        if name == target or name not in geometry.objects or not found[j]:
            continue
        kp = np.asarray(state.keypoints_3d[j], np.float64)
        if np.all(np.isfinite(kp)):
            obstacles.append(_obstacle(kp, geometry.objects[name], geometry.floor_z))
    object_yaw = math.atan2(float(axis[1]), float(axis[0])) + math.pi / 2  # body y, the object's yaw, upright
    plan = plan_bin_pick(keypoints[0], float(keypoints[0, 2] + hi[2]), float(keypoints[0, 2] + (lo[2] + hi[2]) / 2),
                         info.grasp_dz, yaw_candidates(info, object_yaw), obstacles, geometry,
                         np.asarray(info.place_xy), eef, eef_yaw, wrist)
    return bin_pick_waypoints(plan, eef, eef_yaw), {"grasp": _rounded(plan.grasp), "grasp_yaw": round(plan.yaw, 3)}


def _read_pose(keypoints: np.ndarray, lo: np.ndarray, floor_z: float) -> str:
    """How an object's read keypoints ``(2, 3)`` m stand: ``"upright"``; ``"steep"`` (its x axis up or down: lying);
    ``"degenerate"`` (no x axis); or, lying with its x axis level, its drop below the upright rest height on the
    floor at ``floor_z`` m (its box's low corner ``lo (3,)`` m), as text (``"3.0 cm"``)."""
    axis = keypoints[1] - keypoints[0]
    norm = float(np.linalg.norm(axis))
    if norm < 1e-6:
        return "degenerate"
    if abs(float(axis[2])) >= STEEP_AXIS_SIN * norm:
        return "steep"
    drop = floor_z - lo[2] - keypoints[0, 2]
    return f"{100 * drop:.1f} cm" if drop >= LYING_DROP_M else "upright"


def _obstacle(keypoints: np.ndarray, info: BinObjectForPick, floor_z: float) -> tuple[np.ndarray, float]:
    """An object found, as the open gripper must clear it: ``(xy outline (N, 2) m, top z m)`` from its read
    keypoints ``(2, 3)`` m as it stands (see the module docstring)."""
    lo, hi = (np.asarray(v, np.float64) for v in info.extents)
    pose = _read_pose(keypoints, lo, floor_z)
    if pose == "upright":
        return footprint(keypoints, lo, hi, _symmetry_order(info.yaw_sym)), float(keypoints[0, 2] + hi[2])
    reach = float(np.max(np.abs(np.concatenate([lo, hi]))))
    if pose in ("steep", "degenerate"):
        a = np.linspace(0.0, 2 * math.pi, 24, endpoint=False)
        return keypoints[0, :2] + reach * np.stack([np.cos(a), np.sin(a)], axis=1), float(keypoints[0, 2] + reach)
    # lying with its x axis level: its body z (the long side) lies across x in the table's plane, its y is up
    laid = (np.array([lo[0], lo[2], lo[1]]), np.array([hi[0], hi[2], hi[1]]))
    top = float(keypoints[0, 2] + max(abs(lo[1]), abs(hi[1])))
    return footprint(keypoints, laid[0], laid[1], 1), top


def _symmetry_order(yaw_sym: float | None) -> int:
    """The footprint's symmetry order for grasp symmetry ``yaw_sym`` (rad; None: a cylinder, a disc)."""
    return ROUND_ORDER if yaw_sym is None else max(1, round(2 * math.pi / yaw_sym))


def _rounded(v: np.ndarray) -> list[float]:
    return [round(float(x), 4) for x in v]
