"""``pick_place_bins`` scene: robosuite's ``PickPlace`` with all four groceries, and which 2 to 4 of them each seed
asks for, in what order.

Built on robosuite's ``PickPlace`` (Panda, OSC_POSE, all four objects always present). Each seed draws
which of the four objects the instruction names and in what order; the others stay in the source bin as
distractors. The goal bin (``bin2``) is split into four cells by its dividers, one cell per object
(robosuite's ``target_bin_placements``: milk=0, bread=1, cereal=2, can=3).

Conventions: positions in m (world frame), quaternions wxyz, yaw in rad about world +z. An object's yaw is the
direction of its body y axis.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from sim.tasks.pick_place_bins.pick_geometry import KIND as PICK_GEOMETRY_KIND
from sim.tasks.pick_place_bins.pick_geometry import place_xy_in_cell
from sim.tasks.roles import TaskScene
from sim.tasks.types import SKILL_PREDICATES, TaskEpisode
from tandem.core.errors import ConfigError, UnknownObjectError, UnknownSkillError
from tandem.core.geometry import quat_to_mat
from tandem.core.grasp_clearance import Container
from tandem.core.types import TaskSpec

#: Objects in robosuite's PickPlace order (Milk=0, Bread=1, Cereal=2, Can=3).
OBJECTS: tuple[str, ...] = ("milk", "bread", "cereal", "can")
_RS_NAMES: dict[str, str] = {"milk": "Milk", "bread": "Bread", "cereal": "Cereal", "can": "Can"}
BINS: tuple[str, ...] = tuple(f"{o}_bin" for o in OBJECTS)
#: Subgoal wording per skill (``TaskSpec.skill_texts``).
SKILL_TEXTS: dict[str, str] = {"pick": "pick up the {0}", "place": "put the {0} into its bin"}

#: Bin geometry of robosuite's BinsArena (m): floor half-thickness, wall/divider half-thickness and height.
_FLOOR_HALF = 0.02
WALL_HALF = 0.01
WALL_HEIGHT = 0.10

#: robosuite PickPlace's fixed bins (m, world): the source bin's (``bin1_pos``) and both bins' outer size
#: (``bin_size``); :meth:`PickPlaceBinsScene.workcell` states them without a simulator (a sim test checks them).
SOURCE_BIN_POS: tuple[float, float, float] = (0.1, -0.25, 0.8)
BIN_SIZE: tuple[float, float, float] = (0.39, 0.49, 0.82)
#: robosuite PickPlace's goal bin (``bin2_pos``, m, world) and the Panda's base (m, world): fixed (a sim test checks
#: them), so :meth:`PickPlaceBinsScene.pick_geometry` states them without a simulator.
TARGET_BIN_POS: tuple[float, float, float] = (0.1, 0.28, 0.8)
ROBOT_BASE_POS: tuple[float, float, float] = (-0.5, -0.1, 0.912)
#: The ``workcell`` camera this task adds to robosuite's model (m, world; fovy deg): in front of the table, higher
#: and steeper (55 deg down) than ``agentview``, aimed at the middle of the two bins. Rendered at 64 x 128 px (H x W)
#: the bins fill the image: 0.9 cm per px across them against 1.5 cm at 84 x 84 px of ``agentview``, whose 45 deg
#: view also hides the low objects (bread, can) behind the tall ones in the source bin. A fixed camera, as a real
#: workcell has; the learned state model of pick_place_bins reads it.
WORKCELL_CAMERA: dict[str, Any] = {"name": "workcell", "position": (0.75, 0.015, 1.75), "target": (0.1, 0.015, 0.82),
                                   "fovy_deg": 27.4}
#: Body-frame bounding boxes ``(lo, hi)`` (m) of the objects' collision meshes about their origins, upright, as
#: :meth:`PickPlaceBinsScene.half_extents` measures them (a sim test checks them).
OBJECT_EXTENTS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "milk": ((-0.0199, -0.0199, -0.061), (0.0199, 0.0199, 0.083)),
    "bread": ((-0.024, -0.02, -0.0233), (0.024, 0.02, 0.0247)),
    "cereal": ((-0.05, -0.015, -0.075), (0.05, 0.015, 0.075)),
    "can": ((-0.025, -0.0251, -0.0403), (0.025, 0.0249, 0.0397)),
}

#: Per-object grasp choices. ``grasp_dz``: grip-site height above the object's centre (m, object upright);
#: ``yaw_sym``: symmetry of usable finger yaws (rad; ``None`` = any yaw, a cylinder);
#: ``yaw_offset``: finger yaw relative to the object's yaw (closing along the object's y axis = 0).
GRASP: dict[str, dict[str, Any]] = {
    "milk": {"grasp_dz": 0.015, "yaw_sym": math.pi / 2, "yaw_offset": 0.0},
    "bread": {"grasp_dz": 0.004, "yaw_sym": math.pi / 2, "yaw_offset": 0.0},
    "cereal": {"grasp_dz": 0.02, "yaw_sym": math.pi, "yaw_offset": 0.0},
    "can": {"grasp_dz": 0.0, "yaw_sym": None, "yaw_offset": 0.0},
}


class PickPlaceBinsScene(TaskScene):
    """Scene of ``pick_place_bins``: put the named groceries into their bins (robosuite PickPlace, Panda, OSC_POSE).

    Subgoals per named object ``x``: ``pick(x)`` (predicate ``grasped(x)``) then ``place(x, "x_bin")``
    (predicate ``in_bin(x)``). Task success: ``in_bin`` holds for every named object.
    """

    name = "pick_place_bins"
    skills = ("pick", "place")
    max_steps = 1500
    #: Control-step budget per named object (the scripted expert needs ~200-300 steps for pick + place).
    steps_per_object = 350
    steps_per_subgoal = steps_per_object // 2  # a pick and a place per object

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
        spec = self.spec_for_goals(tuple(SKILL_PREDICATES["place"].format(o) for o in named),
                                   f"put {listed} into their bins")
        return TaskEpisode(spec=spec, choices={"objects": named})

    def spec_for_goals(self, goals: tuple[str, ...], instruction: str) -> TaskSpec:
        """The spec of an episode whose judge reads ``goals`` (``in_bin(x)``, in order) from ``instruction``: the
        objects are the goals' objects, the targets their bins, the budget :attr:`steps_per_object` each + 100."""
        named = tuple(g[g.index("(") + 1:g.index(")")] for g in goals)
        return TaskSpec(
            name=self.name,
            instruction=instruction,
            objects=named,
            max_steps=self.steps_per_object * len(named) + 100,
            skills={s: SKILL_PREDICATES[s] for s in self.skills},
            goals=tuple(goals),
            targets=tuple(f"{o}_bin" for o in named),
            skill_texts=dict(SKILL_TEXTS),
            vocabulary=self.vocabulary(),
        )

    def subgoal_text(self, skill: str, args: tuple[str, ...]) -> str:
        """``"pick up the milk"`` / ``"put the milk into its bin"``.

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self.check_skill_args(skill, args)
        return SKILL_TEXTS[skill].format(*args)

    def check_skill_args(self, skill: str, args: tuple[str, ...]) -> None:
        """Check ``skill(*args)``: ``pick(x)`` or ``place(x[, "x_bin"])`` for one of the four objects.

        Raises:
            UnknownSkillError: ``skill`` is not pick or place. UnknownObjectError: no object, an unknown object,
                or a bin that is not the object's own.
        """
        if skill not in self.skills:
            raise UnknownSkillError(skill, self.skills)
        if len(args) < 1 or args[0] not in OBJECTS:
            raise UnknownObjectError(args[0] if args else "(none)", OBJECTS)
        if skill == "place" and len(args) > 1 and args[1] != f"{args[0]}_bin":
            raise UnknownObjectError(args[1], (f"{args[0]}_bin",))

    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        """The objects named by the instruction, in instruction order."""
        return tuple(episode.spec.objects)

    def make_robosuite_env(self, **env_kwargs: Any) -> Any:
        """Build robosuite ``PickPlace`` with a Panda and the OSC_POSE (delta, base-frame) controller.

        ``env_kwargs`` (cameras, image size, ``hard_reset``, ``control_freq``, ...) are forwarded to
        robosuite; ``robots``, ``controller_configs`` and ``single_object_mode`` are fixed by this task.
        The adapter reseeds every sub-sampler of its placement initializer per episode
        (``sim.robosuite_env.seed_placement``).

        The model also has the :data:`WORKCELL_CAMERA` (``workcell``), beside robosuite's cameras.

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
        return pick_place_with_workcell_camera()(robots="Panda", controller_configs=cfg, single_object_mode=0,
                                                 **kwargs)

    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        """All four objects: name -> ``{"pos": [x, y, z] (m, world), "quat": [w, x, y, z]}``."""
        out = {}
        for obj in OBJECTS:
            pos, quat = self.pose(rs_env, obj)
            out[obj] = {"pos": pos.tolist(), "quat": quat.tolist()}
        return out

    @staticmethod
    def source_bin(bin_pos: Any = SOURCE_BIN_POS, bin_size: Any = BIN_SIZE) -> Container:
        """The source bin's inner walls as a :class:`~tandem.core.grasp_clearance.Container` (m, world) from its
        centre ``bin_pos (3,)`` and outer size ``bin_size (3,)`` (m; robosuite's ``bin1_pos`` and ``bin_size``,
        by default the fixed values :data:`SOURCE_BIN_POS`, :data:`BIN_SIZE`)."""
        pos, size = np.asarray(bin_pos, float), np.asarray(bin_size, float)
        lo, hi = pos[:2] - size[:2] / 2 + WALL_HALF, pos[:2] + size[:2] / 2 - WALL_HALF
        return Container((float(lo[0]), float(lo[1])), (float(hi[0]), float(hi[1])), float(pos[2]) + WALL_HEIGHT)

    def pick_geometry(self) -> dict[str, Any]:
        """The static facts of the expert's pick (:meth:`TaskScene.pick_geometry`;
        :class:`sim.tasks.pick_place_bins.pick_geometry.BinPickGeometry` as a dict, naming its kind): each object's
        grasp choices (:data:`GRASP`),
        extents (:data:`OBJECT_EXTENTS`) and place point in its goal cell, the source bin's walls, the bins' floor
        and the robot's base, all from this module's constants (robosuite's goal cells: milk in the cell at low x and
        low y, bread high x low y, cereal low x high y, can high x high y)."""
        box = self.source_bin()
        objects = {}
        for i, obj in enumerate(OBJECTS):
            side = np.array([1.0 if i % 2 else -1.0, 1.0 if i >= 2 else -1.0])
            lo, hi = goal_cell_bounds(np.asarray(TARGET_BIN_POS[:2]) + side * 0.01, TARGET_BIN_POS, BIN_SIZE)
            place = place_xy_in_cell(lo, hi, np.asarray(ROBOT_BASE_POS[:2]), OBJECT_EXTENTS[obj])
            spec = GRASP[obj]
            objects[obj] = {"grasp_dz": spec["grasp_dz"], "yaw_sym": spec["yaw_sym"], "yaw_offset": spec["yaw_offset"],
                            "narrow_side": obj == "bread", "extents": [list(v) for v in OBJECT_EXTENTS[obj]],
                            "place_xy": [float(v) for v in place]}
        return {"kind": PICK_GEOMETRY_KIND, "base_pos": list(ROBOT_BASE_POS),
                "source_bin": {"inner_lo": list(box.inner_lo), "inner_hi": list(box.inner_hi), "rim_z": box.rim_z},
                "floor_z": TARGET_BIN_POS[2] + _FLOOR_HALF, "objects": objects}

    def support_z(self) -> float:
        """The bins' floor (m, world z; both bins stand at the same height), for the learned state model's depth
        absent check (:data:`planner_vlm.learned.absence.SUPPORT_CLEARANCE_M` above it)."""
        return TARGET_BIN_POS[2] + _FLOOR_HALF

    def workcell(self) -> dict[str, Any]:
        """The source bin's inner walls (:meth:`source_bin`) and the objects' extents (:meth:`TaskScene.workcell`)."""
        box = self.source_bin()
        return {"containers": [{"inner_lo": list(box.inner_lo), "inner_hi": list(box.inner_hi), "rim_z": box.rim_z}],
                "extents": {o: [list(lo_), list(hi_)] for o, (lo_, hi_) in OBJECT_EXTENTS.items()}}

    def object_symmetries(self) -> dict[str, int]:
        """From the grasp symmetries of :data:`GRASP` (``yaw_sym``; the gripper adds a half turn): milk and bread are
        grasped alike every quarter turn, cereal every half turn; the can is a cylinder (8 stands for any yaw)."""
        out = {}
        for obj in OBJECTS:
            sym = GRASP[obj]["yaw_sym"]
            out[obj] = 8 if sym is None else max(1, round(2 * math.pi / sym))
        return out

    @staticmethod
    def body_id(rs_env: Any, obj: str) -> int:
        """MuJoCo body id of ``obj``. Raises UnknownObjectError: ``obj`` is not milk, bread, cereal or can."""
        if obj not in _RS_NAMES:
            raise UnknownObjectError(obj, OBJECTS)
        return int(rs_env.obj_body_id[_RS_NAMES[obj]])

    @staticmethod
    def model_object(rs_env: Any, obj: str) -> Any:
        """The robosuite ``MujocoObject`` of ``obj`` (one of :data:`OBJECTS`)."""
        return rs_env.objects[OBJECTS.index(obj)]

    def pose(self, rs_env: Any, obj: str) -> tuple[np.ndarray, np.ndarray]:
        """``(pos float64 (3,) m world, quat float64 (4,) wxyz)`` of ``obj``'s body.

        Raises:
            UnknownObjectError: ``obj`` is not milk, bread, cereal or can.
        """
        bid = self.body_id(rs_env, obj)
        return np.array(rs_env.sim.data.body_xpos[bid], float), np.array(rs_env.sim.data.body_xquat[bid], float)

    def half_extents(self, rs_env: Any, obj: str) -> tuple[np.ndarray, np.ndarray]:
        """Body-frame AABB ``(lo (3,), hi (3,))`` in m of ``obj``'s collision mesh, cached per model."""
        cache = rs_env.__dict__.setdefault("_tandem_obj_aabb", {})
        if obj not in cache:
            import mujoco

            m = rs_env.sim.model._model
            lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
            for gname in self.model_object(rs_env, obj).contact_geoms:
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

    def corners(self, rs_env: Any, obj: str) -> np.ndarray:
        """``(8, 3)`` world positions (m) of the corners of ``obj``'s body-frame bounding box."""
        lo, hi = self.half_extents(rs_env, obj)
        pos, quat = self.pose(rs_env, obj)
        local = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        return local @ quat_to_mat(quat).T + pos

    def bottom_z(self, rs_env: Any, obj: str) -> float:
        """World z (m) of ``obj``'s lowest bounding-box corner."""
        return float(self.corners(rs_env, obj)[:, 2].min())

    @staticmethod
    def floor_z(rs_env: Any) -> float:
        """Top of the bin floors (m, world z)."""
        return float(rs_env.bin2_pos[2]) + _FLOOR_HALF

    @staticmethod
    def cell_bounds(rs_env: Any, obj: str) -> tuple[np.ndarray, np.ndarray]:
        """Interior ``(lo (2,), hi (2,))`` world xy (m) of ``obj``'s goal cell, between walls and dividers."""
        centre = np.asarray(rs_env.target_bin_placements[OBJECTS.index(obj), :2], float)
        return goal_cell_bounds(centre, rs_env.bin2_pos, rs_env.bin_size)

    @staticmethod
    def cell_centre(rs_env: Any, obj: str) -> np.ndarray:
        """``(2,)`` world xy (m) of the centre of ``obj``'s goal-bin cell."""
        lo, hi = PickPlaceBinsScene.cell_bounds(rs_env, obj)
        return (lo + hi) / 2

    @staticmethod
    def site(rs_env: Any) -> tuple[np.ndarray, np.ndarray]:
        """Grip-site position (3,) m and rotation matrix (3, 3) in the world frame."""
        robot = rs_env.robots[0]
        sid = robot.eef_site_id["right"]
        return (
            np.array(rs_env.sim.data.site_xpos[sid], float),
            np.array(rs_env.sim.data.site_xmat[sid], float).reshape(3, 3),
        )


def goal_cell_bounds(centre: Any, bin_pos: Any, bin_size: Any) -> tuple[np.ndarray, np.ndarray]:
    """Interior ``(lo (2,), hi (2,))`` world xy (m) of the goal bin's cell that holds world point ``centre`` (2,): the
    quarter of the bin at ``bin_pos`` (3,) of outer size ``bin_size`` (3,) on that side of its dividers, inside the
    walls (m, world)."""
    centre, bin_xy = np.asarray(centre, float)[:2], np.asarray(bin_pos, float)[:2]
    lo, hi = np.empty(2), np.empty(2)
    for k in range(2):
        if centre[k] < bin_xy[k]:
            lo[k], hi[k] = bin_xy[k] - bin_size[k] / 2 + WALL_HALF, bin_xy[k] - WALL_HALF
        else:
            lo[k], hi[k] = bin_xy[k] + WALL_HALF, bin_xy[k] + bin_size[k] / 2 - WALL_HALF
    return lo, hi


@functools.cache
def pick_place_with_workcell_camera() -> type:
    """robosuite's ``PickPlace`` class with :data:`WORKCELL_CAMERA` added to its MJCF world (``<camera mode="fixed">``,
    oriented by :func:`sim.cameras.look_at_quat`), made once. Imported lazily: robosuite is loaded only when an env is
    built. Raises nothing."""
    from robosuite.environments.manipulation.pick_place import PickPlace
    from robosuite.utils.mjcf_utils import array_to_string, new_element

    from sim.cameras import look_at_quat

    cam = WORKCELL_CAMERA

    class PickPlaceWithWorkcellCamera(PickPlace):
        def _load_model(self) -> None:
            super()._load_model()
            quat = look_at_quat(np.asarray(cam["position"]), np.asarray(cam["target"]))
            self.model.worldbody.append(new_element("camera", name=cam["name"], mode="fixed",
                                                    pos=array_to_string(cam["position"]),
                                                    quat=array_to_string(quat), fovy=str(cam["fovy_deg"])))

    return PickPlaceWithWorkcellCamera
