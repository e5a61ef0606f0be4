"""``pick_place_bins``: put 2 to 4 grocery items (milk, bread, cereal, can) into their own bin cells.

Built on robosuite's ``PickPlace`` (Panda, OSC_POSE, all four objects always present). Each seed draws
which of the four objects the instruction names and in what order; the others stay in the source bin as
distractors. The goal bin (``bin2``) is split into four cells by its dividers, one cell per object
(robosuite's ``target_bin_placements``: milk=0, bread=1, cereal=2, can=3).

Predicates (all from simulator ground truth):

* ``grasped(x)``: both finger-pad geom groups touch ``x`` (the test of robosuite's ``_check_grasp``, done on
  MuJoCo's contact arrays) and ``x``'s lowest point is at least :data:`LIFT_CLEARANCE` above the bin floors.
* ``in_bin(x)``: ``x``'s centre lies inside its own cell (divider-to-wall interior), its lowest point is
  below the cell walls' top, no gripper geom touches it (released) and it is at rest (settled).
  robosuite's own ``objects_in_bins`` uses a gripper-distance proxy instead of a release test, so it is
  not used here.

Conventions: positions in m (world frame), quaternions wxyz, yaw in rad about world +z. As in
``sim/experts.py``, the gripper's yaw is the direction of its finger axis (the grip site's x axis, the line the
fingers close along) measured from world +x; fingers close along ``(cos yaw, sin yaw, 0)``. An object's yaw is
the direction of its body y axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.tasks.base import SKILL_PREDICATES, TaskDefinition, TaskEpisode, Waypoint
from tandem.core.errors import ConfigError, UnknownNameError, UnknownObjectError, UnknownSkillError
from tandem.core.geometry import quat_to_mat, wrap_angle, yaw_of_mat
from tandem.core.types import TaskSpec

#: Objects in robosuite's PickPlace order (Milk=0, Bread=1, Cereal=2, Can=3).
OBJECTS: tuple[str, ...] = ("milk", "bread", "cereal", "can")
_RS_NAMES: dict[str, str] = {"milk": "Milk", "bread": "Bread", "cereal": "Cereal", "can": "Can"}
BINS: tuple[str, ...] = tuple(f"{o}_bin" for o in OBJECTS)

#: Minimum height (m) of an object's lowest point above the bin floor for ``grasped`` to hold.
LIFT_CLEARANCE = 0.01
#: Max object speed (m/s) and angular speed (rad/s) for ``in_bin`` to count it as settled.
SETTLED_LIN_SPEED = 0.05
SETTLED_ANG_SPEED = 0.5
#: Bin geometry of robosuite's BinsArena (m): floor half-thickness, wall/divider half-thickness and height.
_FLOOR_HALF = 0.02
_WALL_HALF = 0.01
_WALL_HEIGHT = 0.10

#: Per-object grasp choices. ``grasp_dz``: grip-site height above the object's centre (m, object upright);
#: ``yaw_sym``: symmetry of usable finger yaws (rad; ``None`` = any yaw, a cylinder);
#: ``yaw_offset``: finger yaw relative to the object's yaw (closing along the object's y axis = 0).
_GRASP: dict[str, dict[str, Any]] = {
    "milk": {"grasp_dz": 0.015, "yaw_sym": math.pi / 2, "yaw_offset": 0.0},
    "bread": {"grasp_dz": 0.004, "yaw_sym": math.pi / 2, "yaw_offset": 0.0},
    "cereal": {"grasp_dz": 0.02, "yaw_sym": math.pi, "yaw_offset": 0.0},
    "can": {"grasp_dz": 0.0, "yaw_sym": None, "yaw_offset": 0.0},
}

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
#: Open Panda gripper as boxes in the grip-site frame: ``(|x| from, |x| to, half y, bottom z)`` in m, x along
#: the closing direction, z up from the grip site (measured from the collision meshes, with ~5 mm margin).
_GRIPPER_PARTS: tuple[tuple[float, float, float, float], ...] = (
    (0.035, 0.055, 0.014, -0.012),  # fingers (open)
    (0.0, 0.105, 0.028, 0.028),  # hand
    (0.0, 0.09, 0.048, 0.095),  # wrist (link 7)
)
_MAX_REACH_XY = 0.80  # farthest comfortable grip-site distance (m, xy) from the Panda's base at bin height
_PULL_CLEARANCE = 0.03  # pull_from_bin: gap (m) between the moved object's bounding circle and others / the gripper
_CELL_MARGIN = 0.012  # gap (m) kept between a placed object's bounding circle and its cell walls


class PickPlaceBinsTask(TaskDefinition):
    """Put the named groceries into their bins (robosuite PickPlace, Panda, OSC_POSE).

    Subgoals per named object ``x``: ``pick(x)`` (predicate ``grasped(x)``) then ``place(x, "x_bin")``
    (predicate ``in_bin(x)``). Task success: ``in_bin`` holds for every named object.
    """

    name = "pick_place_bins"
    skills = ("pick", "place")
    max_steps = 1500
    perturbation_names = ("pull_from_bin", "close_gripper")
    #: Control-step budget per named object (the scripted expert needs ~200-300 steps for pick + place).
    steps_per_object = 350

    # ------------------------------------------------------------------ spec
    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        """Draw 2-4 of the four objects in a random order for one seed's ``rng``.

        Returns:
            TaskEpisode whose spec has instruction ``"put the milk, the can and the bread into their bins"``,
            goals ``("in_bin(milk)", "in_bin(can)", "in_bin(bread)")``, objects = the named ones,
            targets = their bins, and ``choices = {"objects": (...)}``.
        """
        n = int(rng.integers(2, len(OBJECTS) + 1))
        named = tuple(str(OBJECTS[i]) for i in rng.permutation(len(OBJECTS))[:n])
        phrases = [f"the {o}" for o in named]
        listed = ", ".join(phrases[:-1]) + " and " + phrases[-1]
        spec = TaskSpec(
            name=self.name,
            instruction=f"put {listed} into their bins",
            objects=named,
            max_steps=self.steps_per_object * n + 100,
            skills={s: SKILL_PREDICATES[s] for s in self.skills},
            goals=tuple(SKILL_PREDICATES["place"].format(o) for o in named),
            targets=tuple(f"{o}_bin" for o in named),
            skill_texts={"pick": "pick up the {0}", "place": "put the {0} into its bin"},
        )
        return TaskEpisode(spec=spec, choices={"objects": named})

    def subgoal_text(self, skill: str, args: tuple[str, ...]) -> str:
        """``"pick up the milk"`` / ``"put the milk into its bin"``.

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self._check(skill, args)
        return {"pick": "pick up the {0}", "place": "put the {0} into its bin"}[skill].format(*args)

    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        """The objects named by the instruction, in instruction order."""
        return tuple(episode.spec.objects)

    # ------------------------------------------------------------------ env
    def make_robosuite_env(self, **env_kwargs: Any) -> Any:
        """Build robosuite ``PickPlace`` with a Panda and the OSC_POSE (delta, base-frame) controller.

        ``env_kwargs`` (cameras, image size, ``hard_reset``, ``control_freq``, ...) are forwarded to
        robosuite; ``robots``, ``controller_configs`` and ``single_object_mode`` are fixed by this task.
        The adapter reseeds every sub-sampler of its placement initializer per episode
        (``sim.robosuite_env.seed_placement``).

        Raises:
            ConfigError: ``env_kwargs`` contains ``robots``, ``controller_configs``, ``single_object_mode`` or
                ``object_type``.
        """
        from robosuite.controllers import load_composite_controller_config

        for key in ("robots", "controller_configs", "single_object_mode", "object_type"):
            if key in env_kwargs:
                raise ConfigError(f"pick_place_bins fixes the robosuite argument {key!r}; do not pass it")
        kwargs = {
            "has_renderer": False,
            "use_object_obs": True,
            "ignore_done": True,
            "horizon": 100000,
            "hard_reset": False,
        }
        kwargs.update(env_kwargs)
        cfg = load_composite_controller_config(controller="BASIC", robot="Panda")
        from robosuite.environments.manipulation.pick_place import PickPlace

        return PickPlace(robots="Panda", controller_configs=cfg, single_object_mode=0, **kwargs)

    # ------------------------------------------------------------------ state
    def _check(self, skill: str, args: tuple[str, ...]) -> None:
        if skill not in self.skills:
            raise UnknownSkillError(skill, self.skills)
        if len(args) < 1 or args[0] not in OBJECTS:
            raise UnknownObjectError(args[0] if args else "(none)", OBJECTS)
        if skill == "place" and len(args) > 1 and args[1] != f"{args[0]}_bin":
            raise UnknownObjectError(args[1], (f"{args[0]}_bin",))

    @staticmethod
    def _body_id(rs_env: Any, obj: str) -> int:
        if obj not in _RS_NAMES:
            raise UnknownObjectError(obj, OBJECTS)
        return int(rs_env.obj_body_id[_RS_NAMES[obj]])

    @staticmethod
    def _model_object(rs_env: Any, obj: str) -> Any:
        return rs_env.objects[OBJECTS.index(obj)]

    def _pose(self, rs_env: Any, obj: str) -> tuple[np.ndarray, np.ndarray]:
        bid = self._body_id(rs_env, obj)
        return np.array(rs_env.sim.data.body_xpos[bid], float), np.array(rs_env.sim.data.body_xquat[bid], float)

    def _half_extents(self, rs_env: Any, obj: str) -> tuple[np.ndarray, np.ndarray]:
        """Body-frame AABB ``(lo (3,), hi (3,))`` in m of ``obj``'s collision mesh, cached per model."""
        cache = rs_env.__dict__.setdefault("_tandem_obj_aabb", {})
        if obj not in cache:
            import mujoco

            m = rs_env.sim.model._model
            lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
            for gname in self._model_object(rs_env, obj).contact_geoms:
                gid = m.geom(gname).id
                rot = np.zeros(9)
                mujoco.mju_quat2Mat(rot, m.geom_quat[gid])
                mid = m.geom_dataid[gid]
                if mid >= 0:
                    verts = m.mesh_vert[m.mesh_vertadr[mid] : m.mesh_vertadr[mid] + m.mesh_vertnum[mid]]
                else:  # primitive geom: use its bounding half sizes
                    s = m.geom_rbound[gid]
                    verts = np.array([[sx, sy, sz] for sx in (-s, s) for sy in (-s, s) for sz in (-s, s)])
                pts = verts @ rot.reshape(3, 3).T + m.geom_pos[gid]
                lo, hi = np.minimum(lo, pts.min(0)), np.maximum(hi, pts.max(0))
            cache[obj] = (lo, hi)
        return cache[obj]

    def _corners(self, rs_env: Any, obj: str) -> np.ndarray:
        """``(8, 3)`` world positions (m) of the corners of ``obj``'s body-frame bounding box."""
        lo, hi = self._half_extents(rs_env, obj)
        pos, quat = self._pose(rs_env, obj)
        local = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        return local @ quat_to_mat(quat).T + pos

    def _bottom_z(self, rs_env: Any, obj: str) -> float:
        return float(self._corners(rs_env, obj)[:, 2].min())

    @staticmethod
    def _floor_z(rs_env: Any) -> float:
        """Top of the bin floors (m, world z)."""
        return float(rs_env.bin2_pos[2]) + _FLOOR_HALF

    @staticmethod
    def _cell_bounds(rs_env: Any, obj: str) -> tuple[np.ndarray, np.ndarray]:
        """Interior ``(lo (2,), hi (2,))`` world xy (m) of ``obj``'s goal cell, between walls and dividers."""
        centre = np.asarray(rs_env.target_bin_placements[OBJECTS.index(obj), :2], float)
        bin_xy = np.asarray(rs_env.bin2_pos[:2], float)
        lo, hi = np.empty(2), np.empty(2)
        for k in range(2):
            if centre[k] < bin_xy[k]:
                lo[k], hi[k] = bin_xy[k] - rs_env.bin_size[k] / 2 + _WALL_HALF, bin_xy[k] - _WALL_HALF
            else:
                lo[k], hi[k] = bin_xy[k] + _WALL_HALF, bin_xy[k] + rs_env.bin_size[k] / 2 - _WALL_HALF
        return lo, hi

    @staticmethod
    def cell_centre(rs_env: Any, obj: str) -> np.ndarray:
        """``(2,)`` world xy (m) of the centre of ``obj``'s goal-bin cell."""
        lo, hi = PickPlaceBinsTask._cell_bounds(rs_env, obj)
        return (lo + hi) / 2

    def _geom_ids(self, rs_env: Any) -> dict[str, np.ndarray]:
        """Geom ids (cached per model): each object's contact geoms, the whole gripper, and each finger pad group."""
        cache = rs_env.__dict__.get("_tandem_geom_ids")
        if cache is None:
            m = rs_env.sim.model
            gripper = rs_env.robots[0].gripper["right"]

            def ids(names: Any) -> np.ndarray:
                names = [names] if isinstance(names, str) else names
                return np.array(sorted({m.geom_name2id(n) for n in names}), dtype=np.int64)

            cache = {o: ids(self._model_object(rs_env, o).contact_geoms) for o in OBJECTS}
            cache["_gripper"] = ids(gripper.contact_geoms)
            cache["_pad_left"] = ids(gripper.important_geoms["left_fingerpad"])
            cache["_pad_right"] = ids(gripper.important_geoms["right_fingerpad"])
            rs_env.__dict__["_tandem_geom_ids"] = cache
        return cache

    @staticmethod
    def _touching(rs_env: Any, geoms_a: np.ndarray, geoms_b: np.ndarray) -> bool:
        """True if any active MuJoCo contact pairs a geom of ``geoms_a`` with one of ``geoms_b``."""
        d = rs_env.sim.data._data
        if d.ncon == 0:
            return False
        g1, g2 = d.contact.geom1[: d.ncon], d.contact.geom2[: d.ncon]
        return bool(np.any((np.isin(g1, geoms_a) & np.isin(g2, geoms_b)) | (np.isin(g2, geoms_a) & np.isin(g1, geoms_b))))

    def _gripper_touches(self, rs_env: Any, obj: str) -> bool:
        """True if any geom of the robot's gripper is in contact with ``obj``."""
        ids = self._geom_ids(rs_env)
        return self._touching(rs_env, ids["_gripper"], ids[obj])

    def _is_grasped(self, rs_env: Any, obj: str) -> bool:
        """Both finger-pad groups touch ``obj`` (as robosuite's ``_check_grasp``) and it is lifted."""
        if self._bottom_z(rs_env, obj) <= self._floor_z(rs_env) + LIFT_CLEARANCE:
            return False
        ids = self._geom_ids(rs_env)
        return self._touching(rs_env, ids["_pad_left"], ids[obj]) and self._touching(rs_env, ids["_pad_right"], ids[obj])

    def _velocity(self, rs_env: Any, obj: str) -> tuple[float, float]:
        joint = self._model_object(rs_env, obj).joints[0]
        adr = rs_env.sim.model.get_joint_qvel_addr(joint)
        qvel = np.asarray(rs_env.sim.data.qvel[adr[0] : adr[1]], float)
        return float(np.linalg.norm(qvel[:3])), float(np.linalg.norm(qvel[3:6]))

    def inside_cell(self, rs_env: Any, obj: str) -> bool:
        """Geometry only: ``obj``'s centre is inside its goal cell (xy between walls and dividers) and its lowest
        point is below the walls' top. Says nothing about release or rest (see ``in_bin`` in :meth:`predicates`).

        Raises:
            UnknownObjectError: ``obj`` is not milk, bread, cereal or can.
        """
        pos, _ = self._pose(rs_env, obj)
        lo, hi = self._cell_bounds(rs_env, obj)
        inside_xy = bool(np.all(pos[:2] > lo) and np.all(pos[:2] < hi))
        wall_top = float(rs_env.bin2_pos[2]) + _WALL_HEIGHT
        return inside_xy and self._bottom_z(rs_env, obj) < wall_top and pos[2] > self._floor_z(rs_env) - 0.01

    def _is_in_bin(self, rs_env: Any, obj: str) -> bool:
        if not self.inside_cell(rs_env, obj):
            return False
        lin, ang = self._velocity(rs_env, obj)
        settled = lin < SETTLED_LIN_SPEED and ang < SETTLED_ANG_SPEED
        return settled and not self._gripper_touches(rs_env, obj)

    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return OBJECTS, tuple(p for o in OBJECTS for p in (f"grasped({o})", f"in_bin({o})"))

    def object_symmetries(self) -> dict[str, int]:
        """From the grasp symmetries of :data:`_GRASP` (``yaw_sym``; the gripper adds a half turn): milk and bread are
        grasped alike every quarter turn, cereal every half turn; the can is a cylinder (8 stands for any yaw)."""
        out = {}
        for obj in OBJECTS:
            sym = _GRASP[obj]["yaw_sym"]
            out[obj] = 8 if sym is None else max(1, round(2 * math.pi / sym))
        return out

    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        """``grasped(x)`` and ``in_bin(x)`` for all four objects (distractors included).

        ``in_bin`` requires the object inside its cell, released (no gripper contact) and settled
        (speed < :data:`SETTLED_LIN_SPEED` m/s, angular speed < :data:`SETTLED_ANG_SPEED` rad/s).
        """
        preds: dict[str, bool] = {}
        for obj in OBJECTS:
            preds[f"grasped({obj})"] = self._is_grasped(rs_env, obj)
            preds[f"in_bin({obj})"] = self._is_in_bin(rs_env, obj)
        return preds

    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        """All four objects: name -> ``{"pos": [x, y, z] (m, world), "quat": [w, x, y, z]}``."""
        out = {}
        for obj in OBJECTS:
            pos, quat = self._pose(rs_env, obj)
            out[obj] = {"pos": pos.tolist(), "quat": quat.tolist()}
        return out

    # ------------------------------------------------------------------ expert
    @staticmethod
    def _site(rs_env: Any) -> tuple[np.ndarray, np.ndarray]:
        """Grip-site position (3,) m and rotation matrix (3, 3) in the world frame."""
        robot = rs_env.robots[0]
        sid = robot.eef_site_id["right"]
        return (
            np.array(rs_env.sim.data.site_xpos[sid], float),
            np.array(rs_env.sim.data.site_xmat[sid], float).reshape(3, 3),
        )

    def _object_yaw(self, rs_env: Any, obj: str) -> float:
        """Direction (rad from world +x) of ``obj``'s body y axis projected on the world xy plane."""
        _, quat = self._pose(rs_env, obj)
        y_axis = quat_to_mat(quat)[:, 1]
        return float(math.atan2(y_axis[1], y_axis[0]))

    def _is_upright(self, rs_env: Any, obj: str) -> bool:
        _, quat = self._pose(rs_env, obj)
        return bool(quat_to_mat(quat)[2, 2] > math.cos(math.radians(45)))

    def _yaw_candidates(self, rs_env: Any, obj: str) -> list[tuple[float, float]]:
        """``(finger yaw in [-pi/2, pi/2), penalty (m))`` pairs that can grasp ``obj``.

        Upright: cereal only across its 3 cm side; can any yaw; milk and bread any yaw, preferring to close on
        faces (bread: on its narrow side). Lying over: fingers close across the object's long axis.
        """
        if not self._is_upright(rs_env, obj):
            _, quat = self._pose(rs_env, obj)
            axis = quat_to_mat(quat)[:, 2]
            yaw = math.atan2(axis[0], -axis[1])  # closing direction perpendicular to the long axis
            return [(wrap_angle(yaw, math.pi), 0.0)]
        spec = _GRASP[obj]
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
            c = self._corners(rs_env, o)
            t = np.linspace(0.0, 1.0, 7)[:, None]
            pts = np.concatenate([c[a, :2] + t * (c[b, :2] - c[a, :2]) for a, b in edges])
            out.append((pts, float(c[:, 2].max())))
        return out

    def _grasp_clearance(self, rs_env: Any, obj: str, grasp: np.ndarray, yaw: float) -> float:
        """Smallest xy gap (m; negative = overlap) between the open gripper at ``grasp``/``yaw`` and the
        other objects and the source bin's walls. Each gripper part (:data:`_GRIPPER_PARTS`) only counts
        against obstacles whose top is above that part's bottom."""
        closing = np.array([math.cos(yaw), math.sin(yaw)])
        across = np.array([closing[1], -closing[0]])
        frame = np.stack([closing, across])  # world xy -> (along closing, across)
        clear = np.inf
        for pts, top in self._obstacles(rs_env, obj):
            local = (pts - grasp[:2]) @ frame.T
            for x_lo, x_hi, half_y, z_bottom in _GRIPPER_PARTS:
                if top < grasp[2] + z_bottom:
                    continue
                ax = np.abs(local[:, 0])
                dx = np.maximum(np.maximum(x_lo - ax, ax - x_hi), 0.0)
                dy = np.maximum(np.abs(local[:, 1]) - half_y, 0.0)
                gap = np.hypot(dx, dy)
                inside = (dx == 0) & (dy == 0)
                clear = min(clear, -0.01 if inside.any() else float(gap.min()))
        wall_top = float(rs_env.bin1_pos[2]) + _WALL_HEIGHT
        inner_lo = np.asarray(rs_env.bin1_pos[:2]) - np.asarray(rs_env.bin_size[:2]) / 2 + _WALL_HALF
        inner_hi = np.asarray(rs_env.bin1_pos[:2]) + np.asarray(rs_env.bin_size[:2]) / 2 - _WALL_HALF
        for _x_lo, x_hi, half_y, z_bottom in _GRIPPER_PARTS:
            if wall_top < grasp[2] + z_bottom:
                continue
            corners = [grasp[:2] + sx * x_hi * closing + sy * half_y * across for sx in (-1, 1) for sy in (-1, 1)]
            for c in corners:
                clear = min(clear, float(np.min(c - inner_lo)), float(np.min(inner_hi - c)))
        return float(clear)

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
        self._check(skill, tuple(args))
        obj = args[0]
        site, rot = self._site(rs_env)
        if skill == "pick":
            return self._pick_waypoints(rs_env, obj, site, rot)
        return self._place_waypoints(rs_env, obj, site, rot)

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
        pos, _ = self._pose(rs_env, obj)
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
        pos, _ = self._pose(rs_env, obj)
        corners = self._corners(rs_env, obj)
        top = float(corners[:, 2].max())
        centre_z = float(corners[:, 2].mean())
        dz = _GRASP[obj]["grasp_dz"] if self._is_upright(rs_env, obj) else 0.0
        grasp_z = max(centre_z + dz, top - _PALM_CLEARANCE, self._floor_z(rs_env) + 0.02)
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
        pos, _ = self._pose(rs_env, obj)
        below = site[2] - self._bottom_z(rs_env, obj)  # grip site height above the object's lowest point
        wall_top = float(rs_env.bin2_pos[2]) + _WALL_HEIGHT
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
        release_z = max(self._floor_z(rs_env) + _RELEASE_CLEARANCE + below, wall_top - _GRIPPER_PARTS[0][3] + 0.004)
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
        lo, hi = self._cell_bounds(rs_env, obj)
        c, s = abs(math.cos(yaw)), abs(math.sin(yaw))
        reach, width = _GRIPPER_PARTS[0][1], _GRIPPER_PARTS[0][2]
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
        lo, hi = self._cell_bounds(rs_env, obj)
        centre = (lo + hi) / 2
        base = np.asarray(rs_env.sim.data.body_xpos[rs_env.sim.model.body_name2id("robot0_base")][:2], float)
        away = centre - base
        dist = float(np.linalg.norm(away))
        target = centre if dist <= _MAX_REACH_XY else base + away * (_MAX_REACH_XY / dist)
        ext_lo, ext_hi = self._half_extents(rs_env, obj)
        radius = float(np.linalg.norm(np.maximum(np.abs(ext_lo[:2]), np.abs(ext_hi[:2]))))
        margin = max(radius, _GRIPPER_PARTS[0][1]) + _CELL_MARGIN  # object and open fingers stay inside
        return np.clip(target, np.minimum(lo + margin, centre), np.maximum(hi - margin, centre))

    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Object poses once ``skill(*args)`` succeeded (for the teleport-render-restore goal image).

        pick(x): ``x`` lifted :data:`_LIFT` m straight up, same orientation. place(x, bin): ``x`` upright at
        its current yaw, resting on the goal-bin floor at the centre of its cell.

        Returns:
            ``{x: (pos (3,) m world, quat (4,) wxyz)}``.

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self._check(skill, tuple(args))
        obj = args[0]
        pos, quat = self._pose(rs_env, obj)
        if skill == "pick":
            return {obj: (pos + np.array([0.0, 0.0, _LIFT]), quat)}
        turn = self._object_yaw(rs_env, obj) - math.pi / 2  # rotation about z taking body y to its yaw
        upright = np.array([math.cos(turn / 2), 0.0, 0.0, math.sin(turn / 2)])
        lo, _ = self._half_extents(rs_env, obj)
        xy = self._place_xy(rs_env, obj)
        return {obj: (np.array([xy[0], xy[1], self._floor_z(rs_env) - lo[2] + 0.001]), upright)}


    # ------------------------------------------------------------------ perturbation
    def perturb(
        self, rs_env: Any, episode: TaskEpisode, name: str, rng: np.random.Generator, target: str | None = None
    ) -> dict[str, Any] | None:
        """``pull_from_bin``: move an object that is in its bin back into the source bin (``bin1``).

        The object (``target``, else a random named object whose ``in_bin`` holds) is set upright with a random
        yaw on the source bin's floor, at a spot whose bounding circle keeps :data:`_PULL_CLEARANCE` m from
        every other object and from the grip site, by writing its free-joint qpos and zeroing its qvel (the env
        runs ``mj_forward`` afterwards).

        Returns:
            ``{"object": x, "from": [x, y, z], "to": [x, y, z]}`` (m, world), or None to decline (no object in
            its bin, the object is grasped, or no free spot found in 200 draws).

        Raises:
            UnknownNameError: ``name`` is not ``"pull_from_bin"``. UnknownObjectError: unknown ``target``.
        """
        if name != "pull_from_bin":
            raise UnknownNameError("perturbation", name, self.perturbation_names)
        preds = self.predicates(rs_env, episode)
        if target is None:
            inside = [o for o in episode.spec.objects if preds.get(f"in_bin({o})")]
            if not inside:
                return None
            target = str(inside[int(rng.integers(len(inside)))])
        if target not in OBJECTS:
            raise UnknownObjectError(target, OBJECTS)
        if preds.get(f"grasped({target})") or self._gripper_touches(rs_env, target):
            return None
        lo, _ = self._half_extents(rs_env, target)
        radius = self._radius(rs_env, target)
        bin_xy, half = np.asarray(rs_env.bin1_pos[:2], float), np.asarray(rs_env.bin_size[:2], float) / 2
        span = half - _WALL_HALF - radius - 0.01
        site, _ = self._site(rs_env)
        others = [(self._pose(rs_env, o)[0][:2], self._radius(rs_env, o)) for o in OBJECTS if o != target]
        for _ in range(200):
            xy = bin_xy + rng.uniform(-span, span)
            if np.linalg.norm(xy - site[:2]) < radius + _PULL_CLEARANCE:
                continue
            if all(np.linalg.norm(xy - p) >= radius + r + _PULL_CLEARANCE for p, r in others):
                break
        else:
            return None
        yaw = float(rng.uniform(-math.pi, math.pi))
        pos = np.array([xy[0], xy[1], self._floor_z(rs_env) - lo[2] + 0.002])
        quat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
        before, _ = self._pose(rs_env, target)
        joint = self._model_object(rs_env, target).joints[0]
        rs_env.sim.data.set_joint_qpos(joint, np.concatenate([pos, quat]))
        rs_env.sim.data.set_joint_qvel(joint, np.zeros(6))
        return {"object": target, "from": before.round(4).tolist(), "to": pos.round(4).tolist()}

    def _radius(self, rs_env: Any, obj: str) -> float:
        """Radius (m) of ``obj``'s bounding circle in its body xy plane."""
        lo, hi = self._half_extents(rs_env, obj)
        return float(np.linalg.norm(np.maximum(np.abs(lo[:2]), np.abs(hi[:2]))))
