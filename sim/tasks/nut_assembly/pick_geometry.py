"""nut_assembly's pick geometry, kind ``nut_pegs`` (:data:`KIND`): the expert's pick as geometry over a nut's pose,
one implementation for the scripted expert, which reads the simulator's poses (:mod:`sim.tasks.nut_assembly.expert`),
and for the learned planner, which reads the state model's estimate (``geometric_picks``; through
:class:`tandem.core.pick_geometry.PickGeometry`, registered in :mod:`sim.tasks.registry`).

The expert grasps a nut across its handle, ``grasp_offset_m`` along the nut's local x axis from its origin (the
hole's centre), lifts it and turns it so that the handle points towards the robot (:data:`HANDLE_WINDOW` around
world -x), planning the grasp's yaw and the turn together so that the Panda's wrist (joint 7) stays within
:data:`Q7_LIMIT` at the grasp, after the turn and later over the nut's peg. :func:`plan_nut_pick` makes that plan
(:class:`PickPlan`) from the nut's pose, the gripper's pose and joint 7; :func:`nut_pick_waypoints` makes the
waypoints (:class:`tandem.core.waypoints.Waypoint`) the expert's tracker follows. :class:`NutPickGeometry` holds the
static facts the plan needs besides poses (each nut's grasp offset and peg, whether it must be squared to its peg,
the robot base's position), recorded in a trace checkpoint at training (``TraceModelConfig.pick_geometry``), and
plans the same pick over a read nut (:meth:`NutPickGeometry.pick_over_read`: its origin keypoint and the direction of
its x keypoint, levelled).

Conventions: positions in m, world frame, z up; yaws in rad about world +z from world +x (a nut's yaw: its local x
axis, the handle's direction; the gripper's: its finger axis, with the gripper pointing down); gripper -1 open,
+1 closed. The numbers were measured on robosuite's NutAssembly (Zhu et al. 2020) with the Panda. numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from tandem.core.errors import ConfigError
from tandem.core.geometry import wrap_pi
from tandem.core.number_fields import finite_number
from tandem.core.pick_geometry import PickOverRead, checked_read, fields_of_kind, rounded
from tandem.core.waypoints import Waypoint

#: This geometry's kind, as recorded (``to_dict()["kind"]``) and registered (:mod:`sim.tasks.registry`).
KIND = "nut_pegs"

#: The most yaw change the expert asks for in one waypoint (the tracker resolves yaw modulo pi).
YAW_STEP = 1.0
#: Planning limit on the Panda's wrist joint 7 (hardware limit 2.8973 rad; the margin absorbs base-yaw changes).
Q7_LIMIT = 2.5
#: While inserting, the handle must point within this angle of world -x (towards the robot): with the handle
#: pointing away, the grip site would be out of the Panda's reach near the table at the peg (x > ~0.18 m).
HANDLE_WINDOW = math.radians(40.0)
APPROACH_HEIGHT = 0.10  # grip site above the grasp point before the slow descent
LIFT_HEIGHT = 0.10  # pick lifts the nut this much


def handle_turn(handle_yaw: float, q7: float, q7_shift_at_peg: float = 0.0, square: bool = False) -> float | None:
    """Rotation (rad, about +z) that brings a nut's handle into :data:`HANDLE_WINDOW` around world -x (towards the
    robot) while the wrist joint 7 stays within :data:`Q7_LIMIT` (turning the gripper yaw by +d moves joint 7 by
    about -d), both where the nut is turned and, later, over the peg: the smallest such rotation or, with
    ``square``, the one that points the handle most nearly at -x (then the smallest).

    Why ``square``: the handle's direction is the nut's yaw, and the square nut fits its square peg with 6.75 mm of
    clearance on each side when their faces are parallel (nut yaw a multiple of pi/2) but 0.25 mm at 40 degrees
    off (the peg's half-diagonal then nearly spans the hole). The smallest rotation stops at the window's edge, 40
    degrees off, which left the learned executor's square-nut inserts to sub-millimetre alignment. The round nut
    fits at any yaw, and turning it further costs wrist range (a centred turn threw it off the table on seed 3000).

    Args:
        handle_yaw: current handle direction (rad).
        q7: Panda joint 7 angle (rad) predicted at the grasp.
        q7_shift_at_peg: predicted change of joint 7 (rad) when the arm then moves over the peg at constant
            gripper yaw (the arm's azimuth changes, see :func:`arm_azimuth`).
        square: aim at the window's centre (:attr:`NutInfo.square_to_peg`) instead of its nearest admissible point.

    Returns:
        the rotation, or None if no admissible one exists.
    """
    lo_q = q7 - Q7_LIMIT + max(0.0, q7_shift_at_peg)  # admissible rotations for the wrist
    hi_q = q7 + Q7_LIMIT + min(0.0, q7_shift_at_peg)
    cands: list[tuple[tuple[float, float], float]] = []  # ((distance from the handle exactly at -x, |turn|), turn)
    for k in range(-2, 3):
        centre = math.pi - handle_yaw + 2 * math.pi * k  # the turn that points the handle exactly at -x
        lo, hi = max(centre - HANDLE_WINDOW, lo_q), min(centre + HANDLE_WINDOW, hi_q)
        if lo > hi:
            continue
        cand = min(max(centre if square else 0.0, lo), hi)  # the admissible turn nearest to the aim
        cands.append(((round(abs(cand - centre), 9) if square else 0.0, abs(cand)), cand))
    return min(cands, key=lambda c: c[0])[1] if cands else None  # the first of equal keys, as k runs


def arm_azimuth(point: np.ndarray, base_pos: np.ndarray) -> float:
    """Direction (rad, about world +z) from the robot base to ``point`` (m, world).

    For the Panda pointing down, joint 7 is about ``q1 + q3 + 3*pi/4 - gripper_yaw`` and ``q1 + q3`` follows
    this azimuth, so moving the hand at constant yaw from azimuth ``a`` to ``b`` changes joint 7 by ``b - a``
    (measured on robosuite's NutAssembly to within ~0.1 rad).
    """
    return float(math.atan2(point[1] - base_pos[1], point[0] - base_pos[0]))


def yaw_steps(start: float, delta: float) -> list[float]:
    """Yaws from ``start`` (exclusive) to ``start + delta`` (inclusive) in steps of at most :data:`YAW_STEP`."""
    n = max(1, math.ceil(abs(delta) / YAW_STEP - 1e-9))
    return [start + delta * (i + 1) / n for i in range(n)]


@dataclass(frozen=True)
class PickPlan:
    """What the expert will do for ``pick(nut)`` from a given state (all world frame).

    Attributes:
        grasp: ``(3,)`` grip-site position (m) at the grasp, on the handle axis.
        grasp_yaw: gripper yaw (rad, unwrapped: continuous from the current yaw) at the grasp.
        start_yaw: current gripper yaw (rad).
        turn: rotation (rad about +z) applied to the lifted nut so its handle points into the window.
    """

    grasp: np.ndarray
    grasp_yaw: float
    start_yaw: float
    turn: float


@dataclass(frozen=True)
class NutInfoForPick:
    """What a pick needs to know of one nut besides its pose.

    Attributes:
        grasp_offset_m: distance (m) from the nut's origin along its local +x axis at which the handle is grasped.
        square_to_peg: turn the nut square to its peg (:func:`handle_turn`'s ``square``).
        peg_pos: ``(3,)`` world position (m) of the nut's peg (its body's origin), for the wrist's shift over it.
    """

    grasp_offset_m: float
    square_to_peg: bool
    peg_pos: tuple[float, float, float]


@dataclass(frozen=True)
class NutPickGeometry:
    """The static facts of nut_assembly's pick (see the module docstring): the same in every episode, never a pose.
    Implements :class:`tandem.core.pick_geometry.PickGeometry`.

    Attributes:
        base_pos: ``(3,)`` world position (m) of the robot's base.
        nuts: nut name -> :class:`NutInfoForPick`.
    """

    kind: ClassVar[str] = KIND
    base_pos: tuple[float, float, float]
    nuts: dict[str, NutInfoForPick] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict naming its kind (:meth:`from_dict` reads it back)."""
        return {"kind": KIND, "base_pos": list(self.base_pos),
                "nuts": {n: {"grasp_offset_m": i.grasp_offset_m, "square_to_peg": i.square_to_peg,
                             "peg_pos": list(i.peg_pos)} for n, i in self.nuts.items()}}

    @classmethod
    def from_dict(cls, d: Any) -> NutPickGeometry:
        """Inverse of :meth:`to_dict`.

        Args:
            d: the dict; its ``kind``, where it names one, must be :data:`KIND`.

        Raises:
            ConfigError: not a mapping, another kind, an unknown or missing key, a value that is not a finite JSON
                number (a numeric string, null, a bool: :func:`tandem.core.number_fields.finite_number`), a vector of
                the wrong length, an offset outside (0, 0.5) m or a ``square_to_peg`` that is not a boolean (each
                named).
        """
        def vec3(where: str, v: Any) -> tuple[float, float, float]:
            if not isinstance(v, (list, tuple)) or len(v) != 3:
                raise ConfigError(f"pick_geometry {where}: expected 3 numbers (m), got {v!r}")
            return tuple(finite_number(x, f"pick_geometry {where}") for x in v)  # type: ignore[return-value]

        d = fields_of_kind(d, KIND)
        if not isinstance(d, dict) or set(d) != {"base_pos", "nuts"}:
            raise ConfigError("pick_geometry must be a mapping with exactly base_pos and nuts, got "
                              f"{sorted(d, key=str) if isinstance(d, dict) else type(d).__name__}")
        if not isinstance(d["nuts"], dict) or not d["nuts"]:
            raise ConfigError(f"pick_geometry nuts must be a non-empty mapping, got {d['nuts']!r}")
        nuts = {}
        for name, raw in d["nuts"].items():
            keys = {"grasp_offset_m", "square_to_peg", "peg_pos"}
            if not isinstance(raw, dict) or set(raw) != keys:
                raise ConfigError(f"pick_geometry nuts.{name}: needs exactly {sorted(keys)}, got {raw!r}")
            offset = finite_number(raw["grasp_offset_m"], f"pick_geometry nuts.{name}.grasp_offset_m (m)")
            if not 0.0 < offset < 0.5:
                raise ConfigError(f"pick_geometry nuts.{name}.grasp_offset_m must be in (0, 0.5) m, got {offset}")
            if not isinstance(raw["square_to_peg"], bool):
                raise ConfigError(f"pick_geometry nuts.{name}.square_to_peg must be true or false, "
                                  f"got {raw['square_to_peg']!r}")
            nuts[str(name)] = NutInfoForPick(offset, raw["square_to_peg"], vec3(f"nuts.{name}.peg_pos", raw["peg_pos"]))
        return cls(base_pos=vec3("base_pos", d["base_pos"]), nuts=nuts)

    def object_names(self) -> tuple[str, ...]:
        """The nuts whose pick this geometry plans."""
        return tuple(self.nuts)

    def pick_over_read(self, target: str, objects: Sequence[str], keypoints_3d: np.ndarray, found: np.ndarray,
                       eef: np.ndarray, eef_yaw: float, wrist: float) -> PickOverRead:
        """The expert's pick of nut ``target`` over a read (:meth:`tandem.core.pick_geometry.PickGeometry.pick_over_read`
        documents the arguments and errors): :func:`plan_nut_pick` from its origin keypoint and its x keypoint's
        direction, levelled. The other objects play no part.

        Returns:
            ``(waypoints, {grasp (m), grasp_yaw (rad), turn (rad)})``, or the reason it does not apply (a non-finite
            read or proprio, a degenerate x axis).
        """
        checked = checked_read(self, target, objects, keypoints_3d, found, eef, eef_yaw, wrist)
        if isinstance(checked, str):
            return checked
        keypoints = checked[1]
        axis = keypoints[1] - keypoints[0]
        flat = math.hypot(float(axis[0]), float(axis[1]))
        if flat < 1e-6:
            return "the read's x axis is degenerate"
        plan = plan_nut_pick(keypoints[0], np.array([axis[0] / flat, axis[1] / flat, 0.0]), self.nuts[target],
                             eef, eef_yaw, wrist, np.asarray(self.base_pos))
        return nut_pick_waypoints(plan, eef), {"grasp": rounded(plan.grasp), "grasp_yaw": round(plan.grasp_yaw, 3),
                                               "turn": round(plan.turn, 3)}


def plan_nut_pick(nut_pos: np.ndarray, nut_x_axis: np.ndarray, info: NutInfoForPick, eef: np.ndarray,
                  eef_yaw: float, q7: float, base_pos: np.ndarray) -> PickPlan:
    """Where and how the expert grasps a nut, and how far it turns the lifted nut (see :class:`PickPlan`).

    The fingers close across the handle (along the nut's local y). Of the grasp yaws that do so (every pi), it
    takes the one minimising the total wrist rotation (to the grasp, then :func:`handle_turn`) that keeps joint 7
    within :data:`Q7_LIMIT` at the grasp, after the turn and over the peg (joint 7 is predicted from its current
    value, the yaw change and the arm's azimuth change, :func:`arm_azimuth`).

    Args:
        nut_pos: ``(3,)`` the nut's origin (m, world). nut_x_axis: ``(3,)`` unit vector of its local x axis (world;
            the handle's direction): the grasp lies ``info.grasp_offset_m`` along it, the handle's yaw is its yaw.
        info: the nut's grasp offset, squaring and peg (:class:`NutInfoForPick`).
        eef: ``(3,)`` the grip site now (m, world). eef_yaw: the finger axis's yaw now (rad).
        q7: Panda joint 7 now (rad). base_pos: ``(3,)`` the robot base (m, world).

    Returns:
        the :class:`PickPlan`. Raises nothing (non-finite input gives non-finite output).
    """
    axis = np.asarray(nut_x_axis, np.float64)
    grasp = np.asarray(nut_pos, np.float64) + info.grasp_offset_m * axis
    handle_yaw = math.atan2(axis[1], axis[0])
    eef = np.asarray(eef, np.float64)
    start = float(eef_yaw)
    base_pos = np.asarray(base_pos, np.float64)
    # joint 7 at the grasp before any yaw change, then its shift when the arm later reaches over the peg
    q7_there = q7 + arm_azimuth(grasp, base_pos) - arm_azimuth(eef, base_pos)
    peg_shift = arm_azimuth(np.asarray(info.peg_pos), base_pos) - arm_azimuth(grasp, base_pos)
    base = start + wrap_pi(handle_yaw + math.pi / 2 - start)
    best: tuple[float, float, float] | None = None  # (cost, grasp_yaw, turn)
    for k in (-2, -1, 0, 1, 2):
        g = base + k * math.pi
        q7_g = q7_there - (g - start)
        if abs(q7_g) > Q7_LIMIT:
            continue
        turn = handle_turn(handle_yaw, q7_g, peg_shift, square=info.square_to_peg)
        if turn is None:
            continue
        cost = abs(g - start) + abs(turn)
        if best is None or cost < best[0]:
            best = (cost, g, turn)
    if best is None:  # no admissible plan (wrist already out of range): nearest grasp yaw, no turn
        best = (0.0, start + ((handle_yaw + math.pi - start) % math.pi - math.pi / 2), 0.0)
    return PickPlan(grasp=grasp, grasp_yaw=best[1], start_yaw=start, turn=best[2])


def nut_pick_waypoints(plan: PickPlan, eef: np.ndarray) -> list[Waypoint]:
    """The expert's waypoints for a pick planned as ``plan`` from the grip site at ``eef`` (``(3,)`` m, world).

    Rise (if low) and travel to above the handle while turning, at most :data:`YAW_STEP` per waypoint -> slow
    descent -> close and hold -> lift :data:`LIFT_HEIGHT` -> turn the nut by ``plan.turn`` -> hold.

    Returns:
        list of :class:`~tandem.core.waypoints.Waypoint` (grip-site positions in m, world frame). Raises nothing.
    """
    eef = np.asarray(eef, np.float64)
    grasp = plan.grasp
    above = grasp + np.array([0.0, 0.0, APPROACH_HEIGHT])
    wps: list[Waypoint] = []
    low = eef[2] < above[2] - 0.02
    start = np.array([eef[0], eef[1], above[2]]) if low else eef
    if low:
        wps.append(Waypoint(start, plan.start_yaw, -1.0, 0.02, 0.05, 0, "rise"))
    yaws = yaw_steps(plan.start_yaw, plan.grasp_yaw - plan.start_yaw)
    for i, y in enumerate(yaws):
        p = start + (above - start) * (i + 1) / len(yaws)
        last = i == len(yaws) - 1
        wps.append(Waypoint(p, y, -1.0, 0.01 if last else 0.03, 0.05, 0, "above" if last else "travel"))
    y = plan.grasp_yaw
    wps += [
        Waypoint(grasp + np.array([0.0, 0.0, 0.03]), y, -1.0, 0.006, 0.025, 0, "pre_grasp"),
        Waypoint(grasp, y, -1.0, 0.005, 0.01, 2, "grasp"),
        Waypoint(grasp, y, 1.0, 0.01, 0.01, 10, "close"),
    ]
    lifted = grasp + np.array([0.0, 0.0, LIFT_HEIGHT])
    wps.append(Waypoint(lifted, y, 1.0, 0.01, 0.02, 0, "lift"))
    for t in yaw_steps(y, plan.turn) if abs(plan.turn) > 1e-6 else []:
        wps.append(Waypoint(lifted, t, 1.0, 0.01, 0.02, 0, "turn"))
    wps.append(Waypoint(lifted, y + plan.turn, 1.0, 0.01, 0.02, 4, "hold"))
    return wps
