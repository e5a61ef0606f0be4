"""pick_place_bins' pick geometry, kind ``bin_objects`` (:data:`KIND`): the expert's top-down pick among other objects
in a bin, as geometry over poses, one implementation for the scripted expert, which reads the simulator's poses
(:mod:`sim.tasks.pick_place_bins.expert`), and for the learned planner, which reads the state model's estimate
(``geometric_picks``; through :class:`tandem.core.pick_geometry.PickGeometry`, registered in
:mod:`sim.tasks.registry`).

The expert grasps an object from above at its centre (``grasp_dz`` above it when upright, never so low that the palm
touches its top), turned to the finger yaw that keeps the open gripper farthest from the other objects and the source
bin's walls (:func:`tandem.core.grasp_clearance.open_gripper_clearance`, counted up to
:data:`ENOUGH_CLEARANCE`) among the yaws the object's shape allows (:func:`yaw_candidates`), then picks among that
yaw's half-turn equivalents the one that keeps the Panda's wrist (joint 7) inside its range over the pick and the
place that follows (:func:`wrist_yaw`). :func:`plan_bin_pick` makes that plan (:class:`BinPickPlan`);
:func:`bin_pick_waypoints` makes the waypoints (:class:`tandem.core.waypoints.Waypoint`) the expert's tracker
follows. :class:`BinPickGeometry` holds the static facts the plan needs besides poses (each object's grasp choices,
extents and place point, the source bin, the bins' floor, the robot base), recorded in a trace checkpoint at training
(``TraceModelConfig.pick_geometry``).

Over a read (:meth:`BinPickGeometry.pick_over_read`: each object's origin keypoint and a point along its local x axis)
the geometry needs the target standing upright (its grasp height and the yaws that close on its faces follow from
that); an object read as lying on its side (its x keypoint steeply over or under its origin, or its origin
:data:`LYING_DROP_M` or more below its upright rest height on the floor) is left to the caller, with the reason. Two
lying poses pass as upright: a bread on its y face (3 mm lower, its x axis level: near a cube, grasped alike) and any
object lying on top of another (the drop is measured from the floor). The other objects found are the obstacles the
open gripper must clear, as outlines from their keypoints and extents: upright, the box turned to the read
(:func:`tandem.core.grasp_clearance.footprint`); read as lying with its x axis level, the box laid along the read x axis
(its long z extent across it); read with its x axis steep, a disc as wide as its longest extent. The bread's yaw is
read modulo a quarter turn (the state model's symmetry order 4), so its ``narrow_side`` preference falls on whichever
face reads as its x.

Conventions: positions in m, world frame, z up; yaws in rad about world +z from world +x. An object's yaw is the
direction of its body y axis; the gripper's is its finger axis, the line the fingers close along, with the gripper
pointing down. Gripper -1 open, +1 closed. The numbers were measured on robosuite's PickPlace (Zhu et al. 2020) with
the Panda. numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from tandem.core.errors import ConfigError
from tandem.core.geometry import wrap_angle
from tandem.core.grasp_clearance import (
    PANDA_OPEN_GRIPPER,
    ROUND_ORDER,
    Container,
    footprint,
    open_gripper_clearance,
)
from tandem.core.number_fields import finite_number
from tandem.core.pick_geometry import PickOverRead, checked_read, fields_of_kind, rounded
from tandem.core.waypoints import Waypoint

#: This geometry's kind, as recorded (``to_dict()["kind"]``) and registered (:mod:`sim.tasks.registry`).
KIND = "bin_objects"

HOVER = 0.10  # pre-grasp height above the grasp point (m)
DESCENT_STEP = 0.02  # max translation per step while descending onto an object (m)
TRANSIT_Z = 1.06  # grip-site height for moves above the bins (clears every object's top, 0.97 m)
LIFT = 0.12  # a pick lifts the object this far above where it was grasped (m)
CLOSE_HOLD = 12  # control steps to let the Panda gripper close
TURN_STEP = 1.0  # largest wrist turn (rad) per waypoint when the gripper turns in explicit steps
PALM_CLEARANCE = 0.036  # the palm's collision mesh is ~0.035 m above the grip site: grasp no lower below a top
MAX_REACH_XY = 0.80  # farthest comfortable grip-site distance (m, xy) from the Panda's base at bin height
CELL_MARGIN = 0.012  # gap (m) kept between a placed object's bounding circle and its cell walls
ENOUGH_CLEARANCE = 0.02  # clearances above this (m) count as equal when choosing the grasp yaw
#: An object whose body z axis is tilted more than 45 deg from world +z lies on its side.
UPRIGHT_MIN_COS = math.cos(math.radians(45))
#: A read origin this far (m) or more below its upright rest height on the bins' floor reads as lying on its side (a
#: lying cereal box's origin is 6 cm lower, a milk carton's 4 cm, a can's 1.5 cm; the state model's 3-D error is 3 mm
#: at the median).
LYING_DROP_M = 0.012
#: A read whose x keypoint is this steep (sin of its elevation) or steeper has its x axis up: lying on its side.
STEEP_AXIS_SIN = math.sin(math.radians(45))


@dataclass(frozen=True)
class BinObjectForPick:
    """One object's grasp choices and the static facts of its pick.

    Attributes:
        grasp_dz: grip-site height above the object's centre (m) when it stands upright.
        yaw_sym: symmetry (rad) of the finger yaws that close on its faces; None: any yaw (a cylinder).
        yaw_offset: finger yaw relative to the object's yaw (rad; 0 closes along its body y axis).
        narrow_side: among the yaws that close on its faces, prefer those at ``yaw_offset`` from its yaw modulo a half
            turn over the quarter-turned ones (2 mm of penalty): the bread, closed along its body y across its 4 cm
            faces rather than across its 4.8 cm ones.
        extents: body-frame bounding box ``((lo x, y, z), (hi x, y, z))`` m about its origin.
        place_xy: ``(x, y)`` m, world: where its centre is put down in its goal cell (:func:`place_xy_in_cell`).
    """

    grasp_dz: float
    yaw_sym: float | None
    yaw_offset: float
    narrow_side: bool
    extents: tuple[tuple[float, float, float], tuple[float, float, float]]
    place_xy: tuple[float, float]


@dataclass(frozen=True)
class BinPickGeometry:
    """The static facts of pick_place_bins' pick (see the module docstring): the same in every episode, never a pose.
    Implements :class:`tandem.core.pick_geometry.PickGeometry`.

    Attributes:
        base_pos: ``(3,)`` world position (m) of the robot's base.
        source_bin: the walls the objects are picked inside of.
        floor_z: world z (m) of the bins' floors.
        objects: object name -> :class:`BinObjectForPick`.
    """

    kind: ClassVar[str] = KIND
    base_pos: tuple[float, float, float]
    source_bin: Container
    floor_z: float
    objects: dict[str, BinObjectForPick] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict naming its kind (:meth:`from_dict` reads it back)."""
        box = self.source_bin
        return {"kind": KIND, "base_pos": list(self.base_pos),
                "source_bin": {"inner_lo": list(box.inner_lo), "inner_hi": list(box.inner_hi), "rim_z": box.rim_z},
                "floor_z": self.floor_z,
                "objects": {n: {"grasp_dz": o.grasp_dz, "yaw_sym": o.yaw_sym, "yaw_offset": o.yaw_offset,
                                "narrow_side": o.narrow_side, "extents": [list(o.extents[0]), list(o.extents[1])],
                                "place_xy": list(o.place_xy)} for n, o in self.objects.items()}}

    @classmethod
    def from_dict(cls, d: Any) -> BinPickGeometry:
        """Inverse of :meth:`to_dict`.

        Args:
            d: the dict; its ``kind``, where it names one, must be :data:`KIND`.

        Raises:
            ConfigError: not a mapping, another kind, an unknown or missing key, a value of the wrong type, a
                non-finite number, a vector of the wrong length, a box whose low corner is not below its high one, or
                a symmetry that is not positive (each named).
        """
        def num(where: str, v: Any) -> float:
            return finite_number(v, f"pick_geometry {where}")

        def vec(where: str, v: Any, n: int) -> tuple[float, ...]:
            if not isinstance(v, (list, tuple)) or len(v) != n:
                raise ConfigError(f"pick_geometry {where}: expected {n} numbers (m), got {v!r}")
            return tuple(num(where, x) for x in v)

        def keys(where: str, v: Any, want: set[str]) -> dict[str, Any]:
            if not isinstance(v, dict) or set(v) != want:
                raise ConfigError(f"pick_geometry {where}: needs exactly {sorted(want)}, got "
                                  f"{sorted(v, key=str) if isinstance(v, dict) else repr(v)}")
            return v

        d = keys("(top level)", fields_of_kind(d, KIND), {"base_pos", "source_bin", "floor_z", "objects"})
        box = keys("source_bin", d["source_bin"], {"inner_lo", "inner_hi", "rim_z"})
        lo, hi = vec("source_bin.inner_lo", box["inner_lo"], 2), vec("source_bin.inner_hi", box["inner_hi"], 2)
        if not all(a < b for a, b in zip(lo, hi, strict=True)):
            raise ConfigError(f"pick_geometry source_bin: inner_lo {list(lo)} must be below inner_hi {list(hi)}")
        if not isinstance(d["objects"], dict) or not d["objects"]:
            raise ConfigError(f"pick_geometry objects must be a non-empty mapping, got {d['objects']!r}")
        objects = {}
        for name, raw in d["objects"].items():
            raw = keys(f"objects.{name}", raw, {"grasp_dz", "yaw_sym", "yaw_offset", "narrow_side", "extents",
                                                "place_xy"})
            sym = None if raw["yaw_sym"] is None else num(f"objects.{name}.yaw_sym", raw["yaw_sym"])
            order = 2 * math.pi / sym if sym is not None and math.pi / 4.5 < sym <= math.pi else None
            if sym is not None and (order is None or abs(order - round(order)) > 1e-6):
                raise ConfigError(f"pick_geometry objects.{name}.yaw_sym must be a half, third, ... or eighth turn "
                                  f"(2 pi / k rad, k in 2..8) or null, got {sym}")
            if not isinstance(raw["narrow_side"], bool):
                raise ConfigError(f"pick_geometry objects.{name}.narrow_side must be true or false, "
                                  f"got {raw['narrow_side']!r}")
            ext = raw["extents"]
            if not isinstance(ext, (list, tuple)) or len(ext) != 2:
                raise ConfigError(f"pick_geometry objects.{name}.extents: expected [lo xyz, hi xyz], got {ext!r}")
            e_lo, e_hi = vec(f"objects.{name}.extents lo", ext[0], 3), vec(f"objects.{name}.extents hi", ext[1], 3)
            if not all(a < b for a, b in zip(e_lo, e_hi, strict=True)):
                raise ConfigError(f"pick_geometry objects.{name}.extents: lo {list(e_lo)} must be below hi {list(e_hi)}")
            objects[str(name)] = BinObjectForPick(
                num(f"objects.{name}.grasp_dz", raw["grasp_dz"]), sym, num(f"objects.{name}.yaw_offset",
                                                                              raw["yaw_offset"]),
                raw["narrow_side"], (e_lo, e_hi), vec(f"objects.{name}.place_xy", raw["place_xy"], 2))  # type: ignore[arg-type]
        return cls(base_pos=vec("base_pos", d["base_pos"], 3),  # type: ignore[arg-type]
                   source_bin=Container(lo, hi, num("source_bin.rim_z", box["rim_z"])),  # type: ignore[arg-type]
                   floor_z=num("floor_z", d["floor_z"]), objects=objects)

    def object_names(self) -> tuple[str, ...]:
        """The objects whose pick this geometry plans."""
        return tuple(self.objects)

    def pick_over_read(self, target: str, objects: Sequence[str], keypoints_3d: np.ndarray, found: np.ndarray,
                       eef: np.ndarray, eef_yaw: float, wrist: float) -> PickOverRead:
        """The expert's pick of ``target`` over a read (see the module docstring;
        :meth:`tandem.core.pick_geometry.PickGeometry.pick_over_read` documents the arguments and errors): the
        other objects found (``found``) that this geometry knows are the obstacles.

        Returns:
            ``(waypoints, {grasp (m), grasp_yaw (rad)})``, or the reason it does not apply (a non-finite read or
            proprio, a degenerate x axis, the target read as lying on its side).
        """
        checked = checked_read(self, target, objects, keypoints_3d, found, eef, eef_yaw, wrist)
        if isinstance(checked, str):
            return checked
        _, keypoints, found = checked
        info = self.objects[target]
        lo, hi = (np.asarray(v, np.float64) for v in info.extents)
        pose = _read_pose(keypoints, lo, self.floor_z)
        if pose == "steep":
            return "the object reads as lying on its side (its x axis points up or down)"
        if pose == "degenerate":
            return "the read's x axis is degenerate"
        if pose != "upright":
            return f"the object reads as lying on its side ({pose} below its upright rest height)"
        obstacles = []
        for j, name in enumerate(objects):
            if name == target or name not in self.objects or not found[j]:
                continue
            kp = np.asarray(keypoints_3d[j], np.float64)
            if np.all(np.isfinite(kp)):
                obstacles.append(_obstacle(kp, self.objects[name], self.floor_z))
        axis = keypoints[1] - keypoints[0]
        object_yaw = math.atan2(float(axis[1]), float(axis[0])) + math.pi / 2  # body y, the object's yaw, upright
        plan = plan_bin_pick(keypoints[0], float(keypoints[0, 2] + hi[2]), float(keypoints[0, 2] + (lo[2] + hi[2]) / 2),
                             info.grasp_dz, yaw_candidates(info, object_yaw), obstacles, self,
                             np.asarray(info.place_xy), eef, eef_yaw, wrist)
        return bin_pick_waypoints(plan, eef, eef_yaw), {"grasp": rounded(plan.grasp), "grasp_yaw": round(plan.yaw, 3)}


@dataclass(frozen=True)
class BinPickPlan:
    """Where and how the expert grasps an object.

    Attributes:
        grasp: ``(3,)`` grip-site position of the close (m, world).
        hover: ``(3,)`` grip-site position above it, where the slow descent starts (m, world).
        yaw: finger yaw at the close (rad), the half-turn representative that keeps the wrist in range (not wrapped).
        top: the object's highest point (m, world z).
    """

    grasp: np.ndarray
    hover: np.ndarray
    yaw: float
    top: float


def azimuth(base_xy: np.ndarray, xy: np.ndarray) -> float:
    """Direction (rad from world +x) of world point ``xy (2,)`` m as seen from the robot base at ``base_xy (2,)`` m."""
    return float(math.atan2(xy[1] - base_xy[1], xy[0] - base_xy[0]))


def place_xy_in_cell(cell_lo: np.ndarray, cell_hi: np.ndarray, base_xy: np.ndarray,
                     extents: tuple[Sequence[float], Sequence[float]]) -> np.ndarray:
    """Where an object's centre is put down (world xy, m): its cell's centre, pulled towards the robot base until it is
    within :data:`MAX_REACH_XY` of it (a far cell's centre is at the edge of the Panda's reach), while keeping the
    object's footprint and the open fingers :data:`CELL_MARGIN` inside the cell's walls.

    Args:
        cell_lo, cell_hi: ``(2,)`` the goal cell's inner corners (m, world). base_xy: ``(2,)`` the robot base (m).
        extents: the object's body-frame box ``(lo (3,), hi (3,))`` m.

    Returns:
        ``float64 (2,)`` m, world.
    """
    lo, hi = np.asarray(cell_lo, float), np.asarray(cell_hi, float)
    centre = (lo + hi) / 2
    base = np.asarray(base_xy, float)
    away = centre - base
    dist = float(np.linalg.norm(away))
    target = centre if dist <= MAX_REACH_XY else base + away * (MAX_REACH_XY / dist)
    ext_lo, ext_hi = np.asarray(extents[0], float), np.asarray(extents[1], float)
    radius = float(np.linalg.norm(np.maximum(np.abs(ext_lo[:2]), np.abs(ext_hi[:2]))))
    margin = max(radius, PANDA_OPEN_GRIPPER[0][1]) + CELL_MARGIN
    return np.clip(target, np.minimum(lo + margin, centre), np.maximum(hi - margin, centre))


def yaw_candidates(info: BinObjectForPick, object_yaw: float) -> list[tuple[float, float]]:
    """``(finger yaw in [-pi/2, pi/2), penalty (m))`` pairs that can grasp an upright object of yaw ``object_yaw``
    (rad): across its faces where its shape asks (``yaw_sym`` pi: only :attr:`BinObjectForPick.yaw_offset` from its
    yaw, a half turn being the same grasp), any of 12 yaws over a half turn otherwise, with a penalty of up to 4 mm
    for closing off a face (and 2 mm off the narrow side); a cylinder any yaw every 15 deg."""
    if info.yaw_sym is None:
        return [(math.radians(a), 0.0) for a in range(-90, 90, 15)]
    base = object_yaw + info.yaw_offset
    if info.yaw_sym >= math.pi:
        return [(wrap_angle(base, math.pi), 0.0)]
    cands = []
    for k in range(12):
        delta = k * math.pi / 12
        penalty = 0.004 * abs(wrap_angle(delta, info.yaw_sym)) / (math.pi / 4)
        if info.narrow_side and abs(wrap_angle(delta, math.pi)) > math.pi / 4:
            penalty += 0.002
        cands.append((wrap_angle(base + delta, math.pi), penalty))
    return cands


def lying_close_yaw(long_axis: np.ndarray) -> float:
    """Finger yaw (rad, in ``[-pi/2, pi/2)``) that closes across a lying object's long axis ``(3,)`` (world, its body
    z axis)."""
    return wrap_angle(math.atan2(long_axis[0], -long_axis[1]), math.pi)


def grasp_yaw(candidates: Sequence[tuple[float, float]], grasp: np.ndarray,
              obstacles: Sequence[tuple[np.ndarray, float]], containers: Sequence[Container]) -> float:
    """Among ``candidates`` (:func:`yaw_candidates`), the finger yaw (rad) whose open gripper at ``grasp (3,)`` m keeps
    farthest from ``obstacles`` (``(xy points (N, 2) m, top z m)`` each) and ``containers``' walls, clearance counted
    up to :data:`ENOUGH_CLEARANCE`; ties go to the smaller penalty, then the smaller yaw."""
    best, best_score = 0.0, -np.inf
    for yaw, penalty in candidates:
        clear = open_gripper_clearance(grasp, yaw, obstacles, containers)
        score = min(clear, ENOUGH_CLEARANCE) - penalty - 1e-3 * abs(yaw)
        if score > best_score:
            best, best_score = yaw, score
    return float(best)


def wrist_yaw(yaw: float, yaw_now: float, q7: float, d_az_obj: float, d_az_place: float) -> float:
    """The representative ``yaw + k*pi`` (rad) to grasp with, keeping the Panda's wrist (joint 7, limit +-2.9 rad)
    clear of its limit over the whole pick and place.

    Wrist model (gripper pointing down): turning the fingers by ``+a`` about world +z changes joint 7 by ``-a``;
    swinging the arm by ``b`` in azimuth about the base at a fixed world yaw changes it by ``+b``. The chosen
    representative keeps joint 7 within 2.4 rad after the turn, within 2.2 rad at the object, and within 2.4 rad as
    predicted at the start of the place (which turns with the azimuth); among those, the smallest turn wins. The
    margins (hardware limit 2.8973 rad) were set on the scripted expert's demonstrations, where they kept every
    pick and place off the limit.

    Args:
        yaw: the chosen finger yaw (rad, any representative). yaw_now: the finger yaw now (rad). q7: joint 7 now (rad).
        d_az_obj: the arm's azimuth change (rad) from the grip site now to the object. d_az_place: from the object to
            its place point.
    """
    near = yaw_now + wrap_angle(yaw - yaw_now, math.pi)
    best, best_cost = near, np.inf
    for k in range(-2, 3):
        cand = near + k * math.pi
        q7_turned = q7 - (cand - yaw_now)
        q7_obj = q7_turned + d_az_obj
        q7_place = q7_obj - d_az_place
        ok = abs(q7_turned) <= 2.4 and abs(q7_obj) <= 2.2 and abs(q7_place) <= 2.4
        cost = (0.0 if ok else 10.0) + abs(cand - yaw_now) + 0.1 * abs(q7_obj)
        if cost < best_cost:
            best, best_cost = cand, cost
    return float(best)


def plan_bin_pick(pos: np.ndarray, top: float, centre_z: float, grasp_dz: float,
                  candidates: Sequence[tuple[float, float]], obstacles: Sequence[tuple[np.ndarray, float]],
                  geometry: BinPickGeometry, place_xy: np.ndarray, site: np.ndarray, yaw_now: float,
                  q7: float) -> BinPickPlan:
    """Where and how the expert grasps an object (see the module docstring and :class:`BinPickPlan`).

    Args:
        pos: ``(3,)`` the object's origin (m, world). top, centre_z: its highest point and its bounding box's centre
            (m, world z). grasp_dz: the grip site's height above the centre (m; 0 for an object lying on its side).
        candidates: its finger yaws and penalties (:func:`yaw_candidates`, or :func:`lying_close_yaw` alone).
        obstacles: every other object as ``(xy outline points (N, 2) m, top z m)``.
        geometry: the task's static facts (the source bin, floor and robot base are read).
        place_xy: ``(2,)`` where the object will be put down (m, world).
        site: ``(3,)`` the grip site now (m, world). yaw_now: its finger yaw now (rad). q7: Panda joint 7 now (rad).

    Returns:
        :class:`BinPickPlan`. Raises nothing for finite inputs.
    """
    grasp_z = max(centre_z + grasp_dz, top - PALM_CLEARANCE, geometry.floor_z + 0.02)
    grasp = np.array([pos[0], pos[1], grasp_z])
    yaw = grasp_yaw(candidates, grasp, obstacles, [geometry.source_bin])
    hover = grasp + [0.0, 0.0, HOVER]
    hover[2] = max(hover[2], top + 0.04)
    base_xy = np.asarray(geometry.base_pos[:2], float)
    d_az_obj = azimuth(base_xy, pos[:2]) - azimuth(base_xy, site[:2])
    d_az_place = azimuth(base_xy, place_xy) - azimuth(base_xy, pos[:2])
    return BinPickPlan(grasp, hover, wrist_yaw(yaw, yaw_now, q7, d_az_obj, d_az_place), float(top))


def bin_pick_waypoints(plan: BinPickPlan, site: np.ndarray, yaw_now: float) -> list[Waypoint]:
    """The expert's waypoints for ``plan`` from the grip site ``site (3,)`` m at finger yaw ``yaw_now`` (rad): turn in
    the air in steps of at most :data:`TURN_STEP` where the turn is long (the tracker takes yaws modulo pi nearest
    to the current one), else rise to :data:`TRANSIT_Z` if low; then above, hover, a slow descent to the grasp, close
    and hold, lift :data:`LIFT`."""
    yaw = plan.yaw
    wps: list[Waypoint] = []
    up = np.array([site[0], site[1], max(site[2], TRANSIT_Z)])
    n_turns = math.ceil(abs(yaw - yaw_now) / TURN_STEP) if abs(yaw - yaw_now) > math.pi / 2 - 0.2 else 0
    for i in range(1, n_turns + 1):
        wps.append(Waypoint(up, yaw_now + (yaw - yaw_now) * i / n_turns, -1.0, 0.03, 0.05, 0, "turn"))
    if site[2] < TRANSIT_Z - 0.03 and not n_turns:
        wps.append(Waypoint(up, yaw, -1.0, 0.03, 0.05, 0, "rise"))
    hover, grasp = plan.hover, plan.grasp
    wps += [
        Waypoint(np.array([hover[0], hover[1], max(hover[2], TRANSIT_Z - 0.06)]), yaw, -1.0, 0.02, 0.05, 0, "above"),
        Waypoint(hover, yaw, -1.0, 0.008, 0.03, 2, "hover"),
        Waypoint(grasp, yaw, -1.0, 0.006, DESCENT_STEP, 2, "grasp"),
        Waypoint(grasp, yaw, 1.0, 0.03, DESCENT_STEP, CLOSE_HOLD, "close"),
        Waypoint(grasp + [0.0, 0.0, LIFT], yaw, 1.0, 0.015, 0.03, 0, "lift"),
    ]
    return wps


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
