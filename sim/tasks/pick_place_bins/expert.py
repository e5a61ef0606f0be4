"""``pick_place_bins`` scripted expert: a top-down grasp whose yaw keeps the open gripper clear of the other
objects and the bin walls, and a place in the object's own cell, with the Panda's wrist kept inside its range.

Conventions: positions in m (world frame), quaternions wxyz, yaw in rad about world +z. As in
``sim/experts.py``, the gripper's yaw is the direction of its finger axis (the grip site's x axis, the line the
fingers close along) measured from world +x; fingers close along ``(cos yaw, sin yaw, 0)``. An object's yaw is
the direction of its body y axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.tasks.pick_place_bins.scene import GRASP, OBJECTS, WALL_HEIGHT, PickPlaceBinsScene
from sim.tasks.roles import TaskExpert
from sim.tasks.types import TaskEpisode, Waypoint
from tandem.core.geometry import quat_to_mat, wrap_angle, yaw_of_mat
from tandem.core.grasp_clearance import PANDA_OPEN_GRIPPER, open_gripper_clearance

#: Expert motion parameters (m, control steps).
_HOVER = 0.10  # pre-grasp height above the grasp point
_DESCENT_STEP = 0.02  # max translation per step while descending onto an object / into a bin
_TRANSIT_Z = 1.06  # grip-site height for moves above the bins (clears every object's top, 0.97 m)
_CARRY_CLEARANCE = 0.07  # carried object's lowest point above the bin walls' top while moving
_LIFT = 0.12  # pick lifts the object this far above where it was grasped
_RELEASE_CLEARANCE = 0.015  # carried object's lowest point above the goal-bin floor at release
_CLOSE_HOLD = 12  # steps to let the Panda gripper close / open
_TURN_STEP = 1.0  # largest wrist turn (rad) per waypoint when the expert turns the gripper in explicit steps
_PALM_CLEARANCE = 0.036  # the palm's collision mesh is ~0.035 m above the grip site: grasp no lower
_MAX_REACH_XY = 0.80  # farthest comfortable grip-site distance (m, xy) from the Panda's base at bin height
_CELL_MARGIN = 0.012  # gap (m) kept between a placed object's bounding circle and its cell walls


class PickPlaceBinsExpert(TaskExpert):
    """Expert of ``pick_place_bins`` (see module doc).

    Args:
        scene: the task's scene (object poses and extents, bin cells, grip site, skill checks).
    """

    def __init__(self, scene: PickPlaceBinsScene) -> None:
        self.scene = scene

    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        """Waypoints of the scripted expert for ``pick(x)`` or ``place(x, "x_bin")`` from the current state.

        pick: rise to transit height if low, hover 0.10 m above the grasp point, descend slowly
        (0.02 m/step), close and hold, lift 0.12 m. place: rise so the object clears the walls, move above
        the centre of its cell (offset by the current grasp offset so the object, not the gripper, is
        centred), descend until the object is 1.5 cm above the floor, open and hold, retreat upwards.
        The gripper points down; yaw is chosen per object (see :meth:`_grasp_yaw`).

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

        pick(x): ``x`` lifted :data:`_LIFT` m straight up, same orientation. place(x, bin): ``x`` upright at
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
            return {obj: (pos + np.array([0.0, 0.0, _LIFT]), quat)}
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
        return bool(quat_to_mat(quat)[2, 2] > math.cos(math.radians(45)))

    def _yaw_candidates(self, rs_env: Any, obj: str) -> list[tuple[float, float]]:
        """``(finger yaw in [-pi/2, pi/2), penalty (m))`` pairs that can grasp ``obj``.

        Upright: cereal only across its 3 cm side; can any yaw; milk and bread any yaw, preferring to close on
        faces (bread: on its narrow side). Lying over: fingers close across the object's long axis.
        """
        if not self._is_upright(rs_env, obj):
            _, quat = self.scene.pose(rs_env, obj)
            axis = quat_to_mat(quat)[:, 2]
            yaw = math.atan2(axis[0], -axis[1])  # closing direction perpendicular to the long axis
            return [(wrap_angle(yaw, math.pi), 0.0)]
        spec = GRASP[obj]
        base = self._object_yaw(rs_env, obj) + spec["yaw_offset"]
        if spec["yaw_sym"] is None:
            return [(math.radians(a), 0.0) for a in range(-90, 90, 15)]
        if spec["yaw_sym"] >= math.pi:  # cereal: only across its 3 cm side
            return [(wrap_angle(base, math.pi), 0.0)]
        # milk (4 x 4 cm) and bread (4 x 4.8 cm) fit the 8 cm opening at any yaw (diagonal <= 6.3 cm): prefer
        # closing on faces (bread: its narrow side) but allow any yaw that keeps the hand off tall neighbours.
        cands = []
        for k in range(12):
            delta = k * math.pi / 12
            off_face = abs(wrap_angle(delta, spec["yaw_sym"]))
            penalty = 0.004 * off_face / (math.pi / 4)
            if obj == "bread" and abs(wrap_angle(delta, math.pi)) > math.pi / 4:
                penalty += 0.002
            cands.append((wrap_angle(base + delta, math.pi), penalty))
        return cands

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

    def _grasp_clearance(self, rs_env: Any, obj: str, grasp: np.ndarray, yaw: float) -> float:
        """Smallest xy gap (m; negative = overlap) between the open gripper at ``grasp``/``yaw`` and the
        other objects and the source bin's walls (:func:`tandem.core.grasp_clearance.open_gripper_clearance`)."""
        source_bin = self.scene.source_bin(rs_env.bin1_pos, rs_env.bin_size)
        return open_gripper_clearance(grasp, yaw, self._obstacles(rs_env, obj), [source_bin])

    def _grasp_yaw(self, rs_env: Any, obj: str, grasp: np.ndarray) -> float:
        """Finger yaw (rad, in ``[-pi/2, pi/2)``) for grasping ``obj`` at ``grasp`` (3,) m.

        Among :meth:`_yaw_candidates`, the one whose open fingers, hand and wrist keep farthest from the
        other objects and the source bin's walls (see :meth:`_grasp_clearance`, capped at 2 cm) wins;
        ties go to the preferred side, then to the smallest wrist rotation.
        """
        best, best_score = 0.0, -np.inf
        for yaw, penalty in self._yaw_candidates(rs_env, obj):
            clear = self._grasp_clearance(rs_env, obj, grasp, yaw)
            score = min(clear, 0.02) - penalty - 1e-3 * abs(yaw)
            if score > best_score:
                best, best_score = yaw, score
        return float(best)

    def _wrist_plan(self, rs_env: Any, obj: str, site: np.ndarray, rot: np.ndarray, yaw: float) -> float:
        """The representative ``yaw + k*pi`` (rad) to grasp ``obj`` with, keeping the Panda's wrist (joint 7,
        limit +-2.9 rad) clear of its limit over the whole pick and place.

        Wrist model (gripper pointing down): turning the fingers by ``+a`` about world +z changes joint 7 by
        ``-a``; swinging the arm by ``b`` in azimuth about the base at a fixed world yaw changes it by ``+b``.
        The chosen representative keeps joint 7 within 2.4 rad after the turn, within 2.2 rad at the object,
        and within 2.4 rad as the tracker predicts it at the start of the place (which turns with the azimuth);
        among those, the smallest turn wins. A turn over pi/2 rad is made in explicit steps (see
        :meth:`_pick_waypoints`), because the tracker takes yaws modulo pi nearest to the current one.
        """
        q7 = float(rs_env.sim.data.qpos[rs_env.robots[0]._ref_joint_pos_indexes[-1]])
        yaw_now = yaw_of_mat(rot)
        pos, _ = self.scene.pose(rs_env, obj)
        d_az_obj = self._azimuth(rs_env, pos[:2]) - self._azimuth(rs_env, site[:2])
        d_az_place = self._azimuth(rs_env, self._place_xy(rs_env, obj)) - self._azimuth(rs_env, pos[:2])
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

    def _pick_waypoints(self, rs_env: Any, obj: str, site: np.ndarray, rot: np.ndarray) -> list[Waypoint]:
        pos, _ = self.scene.pose(rs_env, obj)
        corners = self.scene.corners(rs_env, obj)
        top = float(corners[:, 2].max())
        centre_z = float(corners[:, 2].mean())
        dz = GRASP[obj]["grasp_dz"] if self._is_upright(rs_env, obj) else 0.0
        grasp_z = max(centre_z + dz, top - _PALM_CLEARANCE, self.scene.floor_z(rs_env) + 0.02)
        grasp = np.array([pos[0], pos[1], grasp_z])
        yaw = self._grasp_yaw(rs_env, obj, grasp)
        hover = grasp + [0.0, 0.0, _HOVER]
        hover[2] = max(hover[2], top + 0.04)
        yaw = self._wrist_plan(rs_env, obj, site, rot, yaw)
        wps: list[Waypoint] = []
        up = np.array([site[0], site[1], max(site[2], _TRANSIT_Z)])
        yaw_now = yaw_of_mat(rot)
        n_turns = math.ceil(abs(yaw - yaw_now) / _TURN_STEP) if abs(yaw - yaw_now) > math.pi / 2 - 0.2 else 0
        for i in range(1, n_turns + 1):  # turn in the air, in the chosen direction, before moving over
            wps.append(Waypoint(up, yaw_now + (yaw - yaw_now) * i / n_turns, -1.0, 0.03, 0.05, 0, "turn"))
        if site[2] < _TRANSIT_Z - 0.03 and not n_turns:
            wps.append(Waypoint(up, yaw, -1.0, 0.03, 0.05, 0, "rise"))
        wps += [
            Waypoint(np.array([hover[0], hover[1], max(hover[2], _TRANSIT_Z - 0.06)]), yaw, -1.0, 0.02, 0.05, 0, "above"),
            Waypoint(hover, yaw, -1.0, 0.008, 0.03, 2, "hover"),
            Waypoint(grasp, yaw, -1.0, 0.006, _DESCENT_STEP, 2, "grasp"),
            Waypoint(grasp, yaw, 1.0, 0.03, _DESCENT_STEP, _CLOSE_HOLD, "close"),
            Waypoint(grasp + [0.0, 0.0, _LIFT], yaw, 1.0, 0.015, 0.03, 0, "lift"),
        ]
        return wps

    def _place_waypoints(self, rs_env: Any, obj: str, site: np.ndarray, rot: np.ndarray) -> list[Waypoint]:
        pos, _ = self.scene.pose(rs_env, obj)
        below = site[2] - self.scene.bottom_z(rs_env, obj)  # grip site height above the object's lowest point
        wall_top = float(rs_env.bin2_pos[2]) + WALL_HEIGHT
        carry_z = max(_TRANSIT_Z, wall_top + _CARRY_CLEARANCE + below)
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
            Waypoint(np.array([target_xy[0], target_xy[1], release_z]), yaw, 1.0, 0.012, _DESCENT_STEP, 2, "lower"),
            Waypoint(np.array([target_xy[0], target_xy[1], release_z]), yaw, -1.0, 0.04, 0.02, _CLOSE_HOLD, "release"),
            Waypoint(np.array([target_xy[0], target_xy[1], carry_z]), yaw, -1.0, 0.03, 0.04, 0, "retreat"),
        ]

    def _clamp_fingers(self, rs_env: Any, obj: str, site_xy: np.ndarray, yaw: float) -> np.ndarray:
        """Move a release position ``site_xy`` (2,) m so the open fingers at ``yaw`` stay :data:`_CELL_MARGIN`
        inside ``obj``'s cell walls (the cell is only 18 cm wide in x)."""
        lo, hi = self.scene.cell_bounds(rs_env, obj)
        c, s = abs(math.cos(yaw)), abs(math.sin(yaw))
        reach, width = PANDA_OPEN_GRIPPER[0][1], PANDA_OPEN_GRIPPER[0][2]
        half = np.array([c * reach + s * width, s * reach + c * width]) + _CELL_MARGIN
        return np.clip(site_xy, np.minimum(lo + half, (lo + hi) / 2), np.maximum(hi - half, (lo + hi) / 2))

    @staticmethod
    def _azimuth(rs_env: Any, xy: np.ndarray) -> float:
        """Direction (rad from world +x) of world point ``xy`` (2,) m as seen from the robot's base."""
        base = rs_env.sim.data.body_xpos[rs_env.sim.model.body_name2id("robot0_base")]
        return float(math.atan2(xy[1] - base[1], xy[0] - base[0]))

    def _place_xy(self, rs_env: Any, obj: str) -> np.ndarray:
        """Where ``obj``'s centre is put down (world xy, m): its cell centre, pulled towards the robot base
        until it is within :data:`_MAX_REACH_XY` of it (the far cell's centre is at the edge of the Panda's
        reach), while keeping the object's footprint :data:`_CELL_MARGIN` m inside the cell walls."""
        lo, hi = self.scene.cell_bounds(rs_env, obj)
        centre = (lo + hi) / 2
        base = np.asarray(rs_env.sim.data.body_xpos[rs_env.sim.model.body_name2id("robot0_base")][:2], float)
        away = centre - base
        dist = float(np.linalg.norm(away))
        target = centre if dist <= _MAX_REACH_XY else base + away * (_MAX_REACH_XY / dist)
        ext_lo, ext_hi = self.scene.half_extents(rs_env, obj)
        radius = float(np.linalg.norm(np.maximum(np.abs(ext_lo[:2]), np.abs(ext_hi[:2]))))
        margin = max(radius, PANDA_OPEN_GRIPPER[0][1]) + _CELL_MARGIN  # object and open fingers stay inside
        return np.clip(target, np.minimum(lo + margin, centre), np.maximum(hi - margin, centre))
