"""``nut_assembly`` scripted expert: grasp a nut by its handle, turn it so the handle points towards the robot, and
thread it on its peg, with the Panda's wrist (joint 7) kept inside its range throughout.

Conventions: positions in m, world frame; quaternions wxyz; angles in rad about world +z. The gripper yaw of a
:class:`~sim.tasks.types.Waypoint` is the direction of the finger axis (grip-site x axis) from world +x, as in
``sim/experts.py``; its tracker resolves a yaw modulo pi to the one nearest the current yaw, so this expert
never asks for more than :data:`YAW_STEP` of rotation per waypoint and picks the direction itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.tasks.nut_assembly.predicates import NutAssemblyPredicates
from sim.tasks.nut_assembly.scene import NUT_REST_Z, NUTS, PEG_TOP_Z, NutAssemblyScene
from sim.tasks.roles import TaskExpert
from sim.tasks.types import TaskEpisode, Waypoint
from tandem.core.geometry import quat_to_mat, quat_yaw_mul, rotate_z, wrap_pi, yaw_of_mat, yaw_of_quat

# ---- expert parameters (m, rad, control steps) ----
#: The most yaw change the expert asks for in one waypoint (the tracker resolves yaw modulo pi).
YAW_STEP = 1.0
#: Planning limit on the Panda's wrist joint 7 (hardware limit 2.8973 rad; the margin absorbs base-yaw changes).
Q7_LIMIT = 2.5
#: While inserting, the handle must point within this angle of world -x (towards the robot): with the handle
#: pointing away, the grip site would be out of the Panda's reach near the table at the peg (x > ~0.18 m).
HANDLE_WINDOW = math.radians(40.0)
APPROACH_HEIGHT = 0.10  # grip site above the grasp point before the slow descent
LIFT_HEIGHT = 0.10  # pick lifts the nut this much
CARRY_NUT_Z = PEG_TOP_Z + 0.05  # nut origin height while moving over the peg
ALIGN_NUT_Z = PEG_TOP_Z + 0.025  # nut origin height when aligned over the peg, before descending onto it
RELEASE_NUT_Z = NUT_REST_Z + 0.035  # nut origin height at which the gripper opens (threaded on the peg)
RETREAT_HEIGHT = 0.15  # grip site rises this much after releasing


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


class NutAssemblyExpert(TaskExpert):
    """Expert of ``nut_assembly`` (see module doc).

    Args:
        scene: the task's scene (nut and peg poses, skill checks).
        predicates: the task's predicates (whether the nut to insert is grasped).
    """

    def __init__(self, scene: NutAssemblyScene, predicates: NutAssemblyPredicates) -> None:
        self.scene = scene
        self.preds = predicates

    def _eef(self, rs_env: Any) -> tuple[np.ndarray, np.ndarray]:
        return self.scene.grip_site(rs_env)

    def _q7(self, rs_env: Any) -> float:
        robot = rs_env.robots[0]
        return float(rs_env.sim.data.qpos[robot._ref_joint_pos_indexes[-1]])

    def plan_pick(self, rs_env: Any, nut: str) -> PickPlan:
        """Where and how the expert grasps ``nut``, and how far it turns the lifted nut (see :class:`PickPlan`).

        The fingers close across the handle (along the nut's local y). Of the grasp yaws that do so (every
        pi), it takes the one minimising the total wrist rotation (to the grasp, then :func:`handle_turn`)
        that keeps joint 7 within :data:`Q7_LIMIT` at the grasp, after the turn and over the peg (joint 7 is
        predicted from its current value, the yaw change and the arm's azimuth change, :func:`arm_azimuth`).
        """
        pos, quat = self.scene.nut_pose(rs_env, nut)
        grasp = pos + quat_to_mat(quat) @ np.array([NUTS[nut].grasp_offset, 0.0, 0.0])
        handle_yaw = yaw_of_quat(quat)
        eef, eef_rot = self._eef(rs_env)
        start = yaw_of_mat(eef_rot)
        base_pos = np.asarray(rs_env.robots[0].base_pos)
        # joint 7 at the grasp before any yaw change, then its shift when the arm later reaches over the peg
        q7_there = self._q7(rs_env) + arm_azimuth(grasp, base_pos) - arm_azimuth(eef, base_pos)
        peg_shift = arm_azimuth(self.scene.peg_pos(rs_env, NUTS[nut].peg), base_pos) - arm_azimuth(grasp, base_pos)
        base = start + wrap_pi(handle_yaw + math.pi / 2 - start)
        best: tuple[float, float, float] | None = None  # (cost, grasp_yaw, turn)
        for k in (-2, -1, 0, 1, 2):
            g = base + k * math.pi
            q7_g = q7_there - (g - start)
            if abs(q7_g) > Q7_LIMIT:
                continue
            turn = handle_turn(handle_yaw, q7_g, peg_shift, square=NUTS[nut].square_to_peg)
            if turn is None:
                continue
            cost = abs(g - start) + abs(turn)
            if best is None or cost < best[0]:
                best = (cost, g, turn)
        if best is None:  # no admissible plan (wrist already out of range): nearest grasp yaw, no turn
            best = (0.0, start + ((handle_yaw + math.pi - start) % math.pi - math.pi / 2), 0.0)
        return PickPlan(grasp=grasp, grasp_yaw=best[1], start_yaw=start, turn=best[2])

    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        """Waypoints of the scripted expert from the current state (grip-site positions, m, world).

        ``pick(nut)``: rise and turn (<= :data:`YAW_STEP` per waypoint) to above the handle -> slow descent ->
        close and hold -> lift :data:`LIFT_HEIGHT` -> turn the nut so its handle points towards the robot
        (:data:`HANDLE_WINDOW`; keeps the grip site within reach when the nut is over its peg).
        ``insert(nut, peg)``: measures the grip-site -> hole-centre offset now (after the grasp, so any slip is
        accounted for), carries the nut so its hole centre is over the peg axis, aligns, descends slowly until
        the nut is threaded on the peg, opens, and retreats straight up. The yaw is held. If the nut is not
        grasped, it only backs off 5 cm upwards (the subgoal then fails verification).

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self.scene.check_skill_args(skill, tuple(args))
        if skill == "pick":
            return self._pick_waypoints(rs_env, args[0])
        return self._insert_waypoints(rs_env, args[0], args[1])

    def _pick_waypoints(self, rs_env: Any, nut: str) -> list[Waypoint]:
        plan = self.plan_pick(rs_env, nut)
        eef, _ = self._eef(rs_env)
        grasp = plan.grasp
        above = grasp + np.array([0.0, 0.0, APPROACH_HEIGHT])
        wps: list[Waypoint] = []
        # rise (if low), then travel to above the handle while turning, at most YAW_STEP per waypoint
        start = eef if eef[2] >= above[2] - 0.02 else np.array([eef[0], eef[1], above[2]])
        if start is not eef:
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

    def _insert_waypoints(self, rs_env: Any, nut: str, peg: str) -> list[Waypoint]:
        nut_pos, _ = self.scene.nut_pose(rs_env, nut)
        eef, eef_rot = self._eef(rs_env)
        yaw = yaw_of_mat(eef_rot)
        if not self.preds.is_grasped(rs_env, nut):  # nothing to insert: back off upwards, the verifier reports failure
            return [Waypoint(eef + np.array([0.0, 0.0, 0.05]), yaw, -1.0, 0.02, 0.03, 0, "not_grasped")]
        dz = eef[2] - nut_pos[2]  # grip site height over the hole centre
        xy = self.scene.peg_pos(rs_env, peg)[:2] + (eef - nut_pos)[:2]
        carry_z = max(eef[2], CARRY_NUT_Z + dz)
        wps: list[Waypoint] = []
        if eef[2] < carry_z - 0.01:
            wps.append(Waypoint(np.array([eef[0], eef[1], carry_z]), yaw, 1.0, 0.02, 0.03, 0, "rise"))
        wps += [
            Waypoint(np.array([*xy, carry_z]), yaw, 1.0, 0.01, 0.04, 0, "over_peg"),
            Waypoint(np.array([*xy, ALIGN_NUT_Z + dz]), yaw, 1.0, 0.003, 0.01, 6, "align"),
            Waypoint(np.array([*xy, RELEASE_NUT_Z + dz]), yaw, 1.0, 0.005, 0.006, 0, "descend"),
            Waypoint(np.array([*xy, RELEASE_NUT_Z + dz]), yaw, -1.0, 0.01, 0.01, 8, "release"),
            Waypoint(np.array([*xy, RELEASE_NUT_Z + dz + RETREAT_HEIGHT]), yaw, -1.0, 0.02, 0.03, 0, "retreat"),
        ]
        return wps

    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Nut pose once the skill succeeded, for the oracle goal image (computed from the current state).

        ``pick(nut)``: the nut lifted :data:`LIFT_HEIGHT` and turned about its grasp point as the expert will
        (:meth:`plan_pick`). ``insert(nut, peg)``: the nut lying flat around the peg (origin on the peg axis at
        :data:`NUT_REST_Z`) with its current yaw.

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self.scene.check_skill_args(skill, tuple(args))
        nut = args[0]
        pos, quat = self.scene.nut_pose(rs_env, nut)
        if skill == "pick":
            plan = self.plan_pick(rs_env, nut)
            new_pos = plan.grasp + rotate_z(pos - plan.grasp, plan.turn) + np.array([0.0, 0.0, LIFT_HEIGHT])
            return {nut: (new_pos, quat_yaw_mul(plan.turn, quat))}
        yaw = yaw_of_quat(quat)
        flat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
        peg_xy = self.scene.peg_pos(rs_env, args[1])[:2]
        return {nut: (np.array([peg_xy[0], peg_xy[1], NUT_REST_Z]), flat)}
