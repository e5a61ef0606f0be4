"""``stack_three`` scripted expert: pick a cube from above at a yaw that keeps the fingers clear of the other cubes,
then stack it on another with its faces aligned (FIELD-NOTES: vertical gripper, yaw modulo 90 deg, slow descent).
The waypoints are :mod:`sim.tasks.stack_three.waypoint_geometry`'s, which the VLM planner's pointing mode shares.
"""

from __future__ import annotations

import math
from typing import Any, override

import numpy as np

from sim.tasks.roles import TaskExpert
from sim.tasks.stack_three.predicates import StackThreePredicates
from sim.tasks.stack_three.scene import COLORS, CUBE_HALF, StackThreeScene
from sim.tasks.stack_three.waypoint_geometry import face_turn, pick_waypoints, stack_waypoints
from sim.tasks.types import TaskEpisode, Waypoint
from tandem.core.geometry import yaw_of_mat, yaw_of_quat


class StackThreeExpert(TaskExpert):
    """Expert of ``stack_three`` (see module doc).

    Args:
        scene: the task's scene (cube poses, skill checks).
        predicates: the task's predicates (whether a cube is already grasped).
    """

    def __init__(self, scene: StackThreeScene, predicates: StackThreePredicates) -> None:
        self.scene = scene
        self.preds = predicates

    def grasp_yaw(self, rs_env: Any, c: str) -> float:
        """Gripper yaw (rad, finger axis) for grasping cube ``c``: the cube's yaw mod 90 deg whose finger
        positions (+-6 cm along the finger axis) keep the most clearance from the other cubes (FIELD-NOTES)."""
        p = self.scene.cube_pos(rs_env, c)
        base = yaw_of_quat(self.scene.cube_quat(rs_env, c))
        others = [self.scene.cube_pos(rs_env, o)[:2] for o in COLORS if o != c]
        best, best_clear = base, -1.0
        for k in range(2):
            yaw = base + k * math.pi / 2
            u = np.array([math.cos(yaw), math.sin(yaw)])
            fingers = [p[:2] + 0.06 * u, p[:2] - 0.06 * u]
            clear = min(np.linalg.norm(f - o) for f in fingers for o in others)
            if clear > best_clear:
                best, best_clear = yaw, clear
        return best

    def _pick_waypoints(self, rs_env: Any, c: str) -> list[Waypoint]:
        return pick_waypoints(self.scene.cube_pos(rs_env, c), self.grasp_yaw(rs_env, c))

    @override
    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        self.scene.check_skill_args(skill, args)
        if skill == "pick":
            return self._pick_waypoints(rs_env, args[0])
        x, y = args
        eef = np.array(rs_env.sim.data.site_xpos[rs_env.robots[0].eef_site_id[rs_env.robots[0].arms[0]]])
        mat = np.array(rs_env.sim.data.site_xmat[rs_env.robots[0].eef_site_id[rs_env.robots[0].arms[0]]]).reshape(3, 3)
        cur_yaw = yaw_of_mat(mat)
        pre: list[Waypoint] = []
        if self.preds.is_grasped(rs_env, x):
            offset = self.scene.cube_pos(rs_env, x) - eef  # cube centre relative to the grip site
            grip_yaw = cur_yaw
        else:  # not holding x: pick it first (then the cube centre is at the grip site)
            pre = self._pick_waypoints(rs_env, x)
            offset = np.zeros(3)
            grip_yaw = pre[0].yaw
        # rotate so that x's faces align with y's (cube yaw difference modulo 90 deg)
        yaw = grip_yaw + face_turn(yaw_of_quat(self.scene.cube_quat(rs_env, y)),
                                   yaw_of_quat(self.scene.cube_quat(rs_env, x)))
        return pre + stack_waypoints(self.scene.cube_pos(rs_env, y), yaw, offset)

    @override
    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str,
                   args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        self.scene.check_skill_args(skill, args)
        x = args[0]
        if skill == "pick":
            p = self.scene.cube_pos(rs_env, x)
            p[2] = max(p[2], rs_env.table_offset[2] + CUBE_HALF) + 0.10
            return {x: (p, self.scene.cube_quat(rs_env, x))}
        q = self.scene.cube_pos(rs_env, args[1])
        return {x: (q + [0, 0, 2 * CUBE_HALF], self.scene.cube_quat(rs_env, args[1]))}
