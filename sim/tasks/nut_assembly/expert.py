"""``nut_assembly`` scripted expert: grasp a nut by its handle, turn it so the handle points towards the robot, and
thread it on its peg, with the Panda's wrist (joint 7) kept inside its range throughout.

Conventions: positions in m, world frame; quaternions wxyz; angles in rad about world +z. The gripper yaw of a
:class:`~sim.tasks.types.Waypoint` is the direction of the finger axis (grip-site x axis) from world +x, as in
``sim/experts.py``; its tracker resolves a yaw modulo pi to the one nearest the current yaw, so this expert
never asks for more than :data:`~sim.tasks.nut_assembly.pick_geometry.YAW_STEP` of rotation per waypoint and picks the direction itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.tasks.nut_assembly.pick_geometry import (
    LIFT_HEIGHT,
    NutInfoForPick,
    PickPlan,
    nut_pick_waypoints,
    plan_nut_pick,
)
from sim.tasks.nut_assembly.predicates import NutAssemblyPredicates
from sim.tasks.nut_assembly.scene import NUT_REST_Z, NUTS, PEG_TOP_Z, NutAssemblyScene
from sim.tasks.roles import TaskExpert
from sim.tasks.types import TaskEpisode, Waypoint
from tandem.core.geometry import quat_to_mat, quat_yaw_mul, rotate_z, yaw_of_mat, yaw_of_quat

# ---- expert parameters (m, rad, control steps); the pick's are sim.tasks.nut_assembly.pick_geometry's ----
CARRY_NUT_Z = PEG_TOP_Z + 0.05  # nut origin height while moving over the peg
ALIGN_NUT_Z = PEG_TOP_Z + 0.025  # nut origin height when aligned over the peg, before descending onto it
RELEASE_NUT_Z = NUT_REST_Z + 0.035  # nut origin height at which the gripper opens (threaded on the peg)
RETREAT_HEIGHT = 0.15  # grip site rises this much after releasing


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
        """Where and how the expert grasps ``nut``, and how far it turns the lifted nut: :func:`plan_nut_pick
        <sim.tasks.nut_assembly.pick_geometry.plan_nut_pick>` over the simulator's poses (see :class:`PickPlan`)."""
        pos, quat = self.scene.nut_pose(rs_env, nut)
        eef, eef_rot = self._eef(rs_env)
        info = NutInfoForPick(NUTS[nut].grasp_offset, NUTS[nut].square_to_peg,
                              tuple(self.scene.peg_pos(rs_env, NUTS[nut].peg)))
        return plan_nut_pick(pos, quat_to_mat(quat)[:, 0], info, eef, yaw_of_mat(eef_rot), self._q7(rs_env),
                             np.asarray(rs_env.robots[0].base_pos))

    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        """Waypoints of the scripted expert from the current state (grip-site positions, m, world).

        ``pick(nut)``: rise and turn (<= :data:`~sim.tasks.nut_assembly.pick_geometry.YAW_STEP` per waypoint) to above the handle -> slow descent ->
        close and hold -> lift :data:`~sim.tasks.nut_assembly.pick_geometry.LIFT_HEIGHT` -> turn the nut so its handle points towards the robot
        (:data:`~sim.tasks.nut_assembly.pick_geometry.HANDLE_WINDOW`; keeps the grip site within reach when the nut is over its peg).
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
        return nut_pick_waypoints(self.plan_pick(rs_env, nut), self._eef(rs_env)[0])

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
