"""``pick_place_bins`` scripted expert: a top-down grasp whose yaw keeps the open gripper clear of the other
objects and the bin walls, and a place in the object's own cell, with the Panda's wrist kept inside its range.

Conventions: positions in m (world frame), quaternions wxyz, yaw in rad about world +z. As in
``sim/experts.py``, the gripper's yaw is the direction of its finger axis (the grip site's x axis, the line the
fingers close along) measured from world +x; fingers close along ``(cos yaw, sin yaw, 0)``. An object's yaw is
the direction of its body y axis.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from sim.tasks.pick_place_bins.pick_geometry import (
    CELL_MARGIN,
    CLOSE_HOLD,
    DESCENT_STEP,
    LIFT,
    TRANSIT_Z,
    UPRIGHT_MIN_COS,
    BinPickGeometry,
    BinPickPlan,
    azimuth,
    bin_pick_waypoints,
    lying_close_yaw,
    place_xy_in_cell,
    plan_bin_pick,
    yaw_candidates,
)
from sim.tasks.pick_place_bins.scene import GRASP, OBJECTS, WALL_HEIGHT, PickPlaceBinsScene
from sim.tasks.roles import TaskExpert
from sim.tasks.types import TaskEpisode, Waypoint
from tandem.core.geometry import quat_to_mat, yaw_of_mat
from tandem.core.grasp_clearance import PANDA_OPEN_GRIPPER

#: Expert place parameters (m, control steps); the pick's, and the shared ones, are sim.tasks.pick_place_bins.pick_geometry's.
_CARRY_CLEARANCE = 0.07  # carried object's lowest point above the bin walls' top while moving
_RELEASE_CLEARANCE = 0.015  # carried object's lowest point above the goal-bin floor at release


class PickPlaceBinsExpert(TaskExpert):
    """Expert of ``pick_place_bins`` (see module doc).

    Args:
        scene: the task's scene (object poses and extents, bin cells, grip site, skill checks).
    """

    def __init__(self, scene: PickPlaceBinsScene) -> None:
        self.scene = scene
        self._geometry = BinPickGeometry.from_dict(scene.pick_geometry())

    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        """Waypoints of the scripted expert for ``pick(x)`` or ``place(x, "x_bin")`` from the current state.

        pick: rise to transit height if low, hover 0.10 m above the grasp point, descend slowly
        (0.02 m/step), close and hold, lift 0.12 m. place: rise so the object clears the walls, move above
        the centre of its cell (offset by the current grasp offset so the object, not the gripper, is
        centred), descend until the object is 1.5 cm above the floor, open and hold, retreat upwards.
        The gripper points down; yaw is chosen per object (:func:`sim.tasks.pick_place_bins.pick_geometry.grasp_yaw`).

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self.scene.check_skill_args(skill, tuple(args))
        obj = args[0]
        site, rot = self.scene.site(rs_env)
        if skill == "pick":
            return self._pick_waypoints(rs_env, obj, site, rot)
        return self._place_waypoints(rs_env, obj, site, rot)

    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Object poses once ``skill(*args)`` succeeded (for the teleport-render-restore goal image).

        pick(x): ``x`` lifted :data:`~sim.tasks.pick_place_bins.pick_geometry.LIFT` m straight up, same orientation. place(x, bin): ``x`` upright at
        its current yaw, resting on the goal-bin floor at the centre of its cell.

        Returns:
            ``{x: (pos (3,) m world, quat (4,) wxyz)}``.

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self.scene.check_skill_args(skill, tuple(args))
        obj = args[0]
        pos, quat = self.scene.pose(rs_env, obj)
        if skill == "pick":
            return {obj: (pos + np.array([0.0, 0.0, LIFT]), quat)}
        turn = self._object_yaw(rs_env, obj) - math.pi / 2  # rotation about z taking body y to its yaw
        upright = np.array([math.cos(turn / 2), 0.0, 0.0, math.sin(turn / 2)])
        lo, _ = self.scene.half_extents(rs_env, obj)
        xy = self._place_xy(rs_env, obj)
        return {obj: (np.array([xy[0], xy[1], self.scene.floor_z(rs_env) - lo[2] + 0.001]), upright)}

    def _object_yaw(self, rs_env: Any, obj: str) -> float:
        """Direction (rad from world +x) of ``obj``'s body y axis projected on the world xy plane."""
        _, quat = self.scene.pose(rs_env, obj)
        y_axis = quat_to_mat(quat)[:, 1]
        return float(math.atan2(y_axis[1], y_axis[0]))

    def _is_upright(self, rs_env: Any, obj: str) -> bool:
        _, quat = self.scene.pose(rs_env, obj)
        return bool(quat_to_mat(quat)[2, 2] > UPRIGHT_MIN_COS)

    def _yaw_candidates(self, rs_env: Any, obj: str) -> list[tuple[float, float]]:
        """``(finger yaw in [-pi/2, pi/2), penalty (m))`` pairs that can grasp ``obj``: upright as its shape allows
        (:func:`sim.tasks.pick_place_bins.pick_geometry.yaw_candidates`), lying over across its long axis
        (:func:`sim.tasks.pick_place_bins.pick_geometry.lying_close_yaw`)."""
        if not self._is_upright(rs_env, obj):
            _, quat = self.scene.pose(rs_env, obj)
            return [(lying_close_yaw(quat_to_mat(quat)[:, 2]), 0.0)]
        return yaw_candidates(self._geometry.objects[obj], self._object_yaw(rs_env, obj))

    def _obstacles(self, rs_env: Any, exclude: str) -> list[tuple[np.ndarray, float]]:
        """Every other object as ``(xy points (N, 2) sampled on its bounding-box edges, top z)`` (m, world)."""
        edges = [(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1]
        out = []
        for o in OBJECTS:
            if o == exclude:
                continue
            c = self.scene.corners(rs_env, o)
            t = np.linspace(0.0, 1.0, 7)[:, None]
            pts = np.concatenate([c[a, :2] + t * (c[b, :2] - c[a, :2]) for a, b in edges])
            out.append((pts, float(c[:, 2].max())))
        return out

    def plan_pick(self, rs_env: Any, obj: str) -> BinPickPlan:
        """Where and how the expert grasps ``obj``: :func:`sim.tasks.pick_place_bins.pick_geometry.plan_bin_pick` over the simulator's
        poses (the object's bounding box, the other objects' boxes, the grip site and joint 7)."""
        site, rot = self.scene.site(rs_env)
        pos, _ = self.scene.pose(rs_env, obj)
        corners = self.scene.corners(rs_env, obj)
        dz = GRASP[obj]["grasp_dz"] if self._is_upright(rs_env, obj) else 0.0
        geometry = replace(self._geometry, source_bin=self.scene.source_bin(rs_env.bin1_pos, rs_env.bin_size),
                           floor_z=self.scene.floor_z(rs_env), base_pos=tuple(self._base(rs_env)))
        q7 = float(rs_env.sim.data.qpos[rs_env.robots[0]._ref_joint_pos_indexes[-1]])
        return plan_bin_pick(pos, float(corners[:, 2].max()), float(corners[:, 2].mean()), dz,
                             self._yaw_candidates(rs_env, obj), self._obstacles(rs_env, obj), geometry,
                             self._place_xy(rs_env, obj), site, yaw_of_mat(rot), q7)

    def _pick_waypoints(self, rs_env: Any, obj: str, site: np.ndarray, rot: np.ndarray) -> list[Waypoint]:
        return bin_pick_waypoints(self.plan_pick(rs_env, obj), site, yaw_of_mat(rot))

    def _place_waypoints(self, rs_env: Any, obj: str, site: np.ndarray, rot: np.ndarray) -> list[Waypoint]:
        pos, _ = self.scene.pose(rs_env, obj)
        below = site[2] - self.scene.bottom_z(rs_env, obj)  # grip site height above the object's lowest point
        wall_top = float(rs_env.bin2_pos[2]) + WALL_HEIGHT
        carry_z = max(TRANSIT_Z, wall_top + _CARRY_CLEARANCE + below)
        offset = site[:2] - pos[:2]  # keep the object (not the gripper) centred over the cell
        target_xy = self._place_xy(rs_env, obj) + offset
        # Keep the gripper's yaw fixed relative to the arm (turn it with the arm's azimuth about the base):
        # holding a world yaw while the arm swings from bin to bin winds the wrist towards its joint limit.
        yaw = yaw_of_mat(rot) + self._azimuth(rs_env, target_xy) - self._azimuth(rs_env, site[:2])
        target_xy = self._clamp_fingers(rs_env, obj, target_xy, yaw)
        # Release just above the floor, but never with the fingers below the walls' top: the far cells are at the
        # edge of the Panda's reach, where the tracker lags by 1-2 cm and a finger would catch a divider. Short
        # objects (can, bread) are therefore dropped from 4-7 cm.
        release_z = max(self.scene.floor_z(rs_env) + _RELEASE_CLEARANCE + below, wall_top - PANDA_OPEN_GRIPPER[0][3] + 0.004)
        return [
            Waypoint(np.array([site[0], site[1], carry_z]), yaw, 1.0, 0.02, 0.04, 0, "rise"),
            Waypoint(np.array([target_xy[0], target_xy[1], carry_z]), yaw, 1.0, 0.015, 0.04, 0, "above_bin"),
            Waypoint(np.array([target_xy[0], target_xy[1], release_z]), yaw, 1.0, 0.012, DESCENT_STEP, 2, "lower"),
            Waypoint(np.array([target_xy[0], target_xy[1], release_z]), yaw, -1.0, 0.04, 0.02, CLOSE_HOLD, "release"),
            Waypoint(np.array([target_xy[0], target_xy[1], carry_z]), yaw, -1.0, 0.03, 0.04, 0, "retreat"),
        ]

    def _clamp_fingers(self, rs_env: Any, obj: str, site_xy: np.ndarray, yaw: float) -> np.ndarray:
        """Move a release position ``site_xy`` (2,) m so the open fingers at ``yaw`` stay :data:`~sim.tasks.pick_place_bins.pick_geometry.CELL_MARGIN`
        inside ``obj``'s cell walls (the cell is only 18 cm wide in x)."""
        lo, hi = self.scene.cell_bounds(rs_env, obj)
        c, s = abs(math.cos(yaw)), abs(math.sin(yaw))
        reach, width = PANDA_OPEN_GRIPPER[0][1], PANDA_OPEN_GRIPPER[0][2]
        half = np.array([c * reach + s * width, s * reach + c * width]) + CELL_MARGIN
        return np.clip(site_xy, np.minimum(lo + half, (lo + hi) / 2), np.maximum(hi - half, (lo + hi) / 2))

    @staticmethod
    def _base(rs_env: Any) -> np.ndarray:
        """``(3,)`` world position (m) of the robot's base."""
        return np.asarray(rs_env.sim.data.body_xpos[rs_env.sim.model.body_name2id("robot0_base")], float)

    def _azimuth(self, rs_env: Any, xy: np.ndarray) -> float:
        """Direction (rad from world +x) of world point ``xy`` (2,) m as seen from the robot's base."""
        return azimuth(self._base(rs_env)[:2], xy)

    def _place_xy(self, rs_env: Any, obj: str) -> np.ndarray:
        """Where ``obj``'s centre is put down (world xy, m): :func:`sim.tasks.pick_place_bins.pick_geometry.place_xy_in_cell` in its
        goal cell."""
        return place_xy_in_cell(*self.scene.cell_bounds(rs_env, obj), self._base(rs_env)[:2],
                                self.scene.half_extents(rs_env, obj))
