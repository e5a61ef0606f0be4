"""``stack_three``'s skill waypoints as pure geometry: the scripted expert (:mod:`sim.tasks.stack_three.expert`) plans
with these functions over the simulator's cube poses, and the VLM planner's pointing mode over cubes it pointed at
(:class:`StackPointGeometry`, a :class:`tandem.core.point_geometry.PointGeometry`), so both give a subgoal the same
waypoints. No simulator here.

Conventions: positions in m, world frame, z up; yaw in rad about world +z (the gripper's finger axis, pointing down).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from sim.tasks.types import Waypoint
from tandem.core.errors import UnknownSkillError
from tandem.core.point_geometry import Anchor, Clearance

#: Cube half size (m); the scene's cubes (:data:`sim.tasks.stack_three.scene.CUBE_HALF`, kept equal by a test).
CUBE_HALF = 0.022
#: Gap (m) left between a placed cube and the one below it.
PLACE_GAP_M = 0.004


def pick_waypoints(center: np.ndarray, yaw: float) -> list[Waypoint]:
    """Pick the cube whose centre is ``center (3,)`` m with the fingers along ``yaw`` rad: above, down, close, lift."""
    p = np.asarray(center, np.float64)
    return [
        Waypoint(pos=p + [0, 0, 0.10], yaw=yaw, gripper=-1.0, tol=0.015, max_step=0.05, label="above"),
        Waypoint(pos=p + [0, 0, 0.0], yaw=yaw, gripper=-1.0, tol=0.008, max_step=0.025, label="grasp"),
        Waypoint(pos=p + [0, 0, 0.0], yaw=yaw, gripper=1.0, tol=0.02, max_step=0.01, hold=10, label="close"),
        Waypoint(pos=p + [0, 0, 0.12], yaw=yaw, gripper=1.0, tol=0.02, max_step=0.03, label="lift"),
    ]


def face_turn(yaw_target: float, yaw_held: float) -> float:
    """The turn (rad, in [-pi/4, pi/4)) that aligns the held cube's faces with the target's (yaws modulo pi/2)."""
    d = yaw_target - yaw_held
    return (d + math.pi / 4) % (math.pi / 2) - math.pi / 4


def stack_waypoints(target_center: np.ndarray, yaw: float, offset: np.ndarray) -> list[Waypoint]:
    """Put the held cube on the cube whose centre is ``target_center (3,)`` m, the gripper at ``yaw`` rad; ``offset
    (3,)`` m is the held cube's centre relative to the grip site: above, lower, release, retreat."""
    place = np.asarray(target_center, np.float64) + [0, 0, 2 * CUBE_HALF + PLACE_GAP_M]
    g = place - np.asarray(offset, np.float64)
    return [
        Waypoint(pos=g + [0, 0, 0.07], yaw=yaw, gripper=1.0, tol=0.012, max_step=0.04, label="above_target"),
        Waypoint(pos=g + [0, 0, 0.0], yaw=yaw, gripper=1.0, tol=0.006, max_step=0.015, hold=2, label="lower"),
        Waypoint(pos=g + [0, 0, 0.0], yaw=yaw, gripper=-1.0, tol=0.03, max_step=0.005, hold=8, label="release"),
        Waypoint(pos=g + [0, 0, 0.10], yaw=yaw, gripper=-1.0, tol=0.02, max_step=0.03, label="retreat"),
    ]


class StackPointGeometry:
    """``stack_three``'s :class:`~tandem.core.point_geometry.PointGeometry`: ``pick(x)`` points at x; ``stack(x, y)``
    at x then y (x's points are used only where x is not held: the expert then picks it first)."""

    task: ClassVar[str] = "stack_three"

    def pointed_args(self, skill: str, args: Sequence[str]) -> tuple[str, ...]:
        """``pick(x)``: ``(x,)``; ``stack(x, y)``: ``(x, y)`` (UnknownSkillError for another skill)."""
        if skill == "pick":
            return (args[0],)
        if skill == "stack":
            return (args[0], args[1])
        raise UnknownSkillError(skill, ["pick", "stack"])

    @staticmethod
    def grasp_yaw(center: np.ndarray, yaw: float, clearance: Clearance | None) -> float:
        """Of the cube's two grasp yaws (``yaw`` and a quarter turn more), the one ``clearance`` scores clearer (the
        expert's choice, from a measured clearance instead of the other cubes' poses)."""
        candidates = [yaw, yaw + math.pi / 2]
        if clearance is None:
            return candidates[0]
        scores = [clearance(center, c) for c in candidates]
        return candidates[int(np.argmax(scores))]

    def waypoints(self, skill: str, args: Sequence[str], anchors: dict[str, Anchor], eef: np.ndarray, eef_yaw: float,
                  held: bool, clearance: Clearance | None = None) -> list[Waypoint] | str:
        """The scripted expert's pick or stack waypoints over the pointed anchors (m, world), or why not (a str)."""
        needed = self.pointed_args(skill, args)[: 1 if skill == "pick" else 2]
        if skill == "stack" and held:
            needed = (args[1],)
        missing = [a for a in needed if a not in anchors]
        if missing:
            return f"no pointed anchor for {missing}"
        if skill == "pick":
            a = anchors[args[0]]
            center = a.top - [0, 0, CUBE_HALF]
            return pick_waypoints(center, self.grasp_yaw(center, a.yaw, clearance))
        y = anchors[args[1]]
        pre: list[Waypoint] = []
        if held:  # the held cube's faces follow the fingers (a cube is grasped square): align the fingers
            grip_yaw, held_yaw = float(eef_yaw), float(eef_yaw)
        else:
            x = anchors[args[0]]
            center = x.top - [0, 0, CUBE_HALF]
            pre = pick_waypoints(center, self.grasp_yaw(center, x.yaw, clearance))
            grip_yaw, held_yaw = pre[0].yaw, x.yaw
        yaw = grip_yaw + face_turn(y.yaw, held_yaw)
        return pre + stack_waypoints(y.top - [0, 0, CUBE_HALF], yaw, np.zeros(3))


__all__ = ["CUBE_HALF", "StackPointGeometry", "face_turn", "pick_waypoints", "stack_waypoints"]
