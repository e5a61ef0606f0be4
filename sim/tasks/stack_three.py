"""``stack_three``: stack three coloured cubes (red, green, blue) into a tower in a seed-drawn order.

The robosuite environment :class:`StackThreeEnv` is a custom subclass of robosuite's ``Stack`` with three
equal cubes (half size :data:`CUBE_HALF` m) placed by a ``UniformRandomSampler`` with random yaw and at least
:data:`MIN_SPACING` m between cube centres.

Per seed a permutation (bottom, middle, top) is drawn; instruction
``"stack the <middle> cube on the <bottom> cube, then the <top> cube on the <middle> cube"``,
goals ``("on(middle,bottom)", "on(top,middle)")``. Skills: ``pick`` -> ``grasped(x)``, ``stack`` -> ``on(x,y)``.

Predicates (from simulator state):

* ``grasped(x)``: both Panda fingerpads touch cube x (robosuite ``_check_grasp``).
* ``on(x,y)``: x rests on y: xy centre distance < :data:`ON_XY_TOL`, ``|z_x - (z_y + 2 h)| <`` :data:`ON_Z_TOL`,
  x not grasped and settled (linear speed < :data:`SETTLED_SPEED` m/s).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from robosuite.environments.manipulation.manipulation_env import ManipulationEnv
from robosuite.environments.manipulation.stack import Stack
from robosuite.models.arenas import TableArena
from robosuite.models.objects import BoxObject
from robosuite.models.tasks import ManipulationTask
from robosuite.utils.mjcf_utils import CustomMaterial
from robosuite.utils.placement_samplers import UniformRandomSampler

from sim.tasks.base import SKILL_PREDICATES, TaskDefinition, TaskEpisode, Waypoint
from tandem.core.errors import UnknownObjectError, UnknownSkillError
from tandem.core.geometry import yaw_of_mat, yaw_of_quat
from tandem.core.types import TaskSpec

COLORS: tuple[str, ...] = ("red", "green", "blue")
CUBE_HALF = 0.022  # m
MIN_SPACING = 0.11  # m between cube centres at placement (open fingers reach ~5 cm from the centre)
ON_XY_TOL = 0.02  # m
ON_Z_TOL = 0.008  # m
SETTLED_SPEED = 0.05  # m/s
#: Subgoal wording (``TaskSpec.skill_texts``).
SKILL_TEXTS = {"pick": "pick up the {0} cube", "stack": "stack the {0} cube on the {1} cube"}
_RGBA = {"red": [1, 0, 0, 1], "green": [0, 1, 0, 1], "blue": [0, 0, 1, 1]}
_TEX = {"red": "WoodRed", "green": "WoodGreen", "blue": "WoodBlue"}


class _SpacedBox(BoxObject):
    """A BoxObject whose placement radius is inflated so the sampler keeps ``MIN_SPACING`` between cubes."""

    @property
    def horizontal_radius(self) -> float:
        return MIN_SPACING / 2.0


class StackThreeEnv(Stack):
    """robosuite ``Stack`` with three cubes ``red_cube``, ``green_cube``, ``blue_cube`` (same kwargs as Stack).

    Reward is always 0 and ``_check_success`` False: success is decided by :class:`StackThreeTask`.
    """

    def _load_model(self) -> None:
        ManipulationEnv._load_model(self)
        xpos = self.robots[0].robot_model.base_xpos_offset["table"](self.table_full_size[0])
        self.robots[0].robot_model.set_base_xpos(xpos)
        arena = TableArena(table_full_size=self.table_full_size, table_friction=self.table_friction,
                           table_offset=self.table_offset)
        arena.set_origin([0, 0, 0])
        self.cubes: dict[str, BoxObject] = {}
        for color in COLORS:
            mat = CustomMaterial(texture=_TEX[color], tex_name=f"{color}wood", mat_name=f"{color}wood_mat",
                                 tex_attrib={"type": "cube"},
                                 mat_attrib={"texrepeat": "1 1", "specular": "0.4", "shininess": "0.1"})
            self.cubes[color] = _SpacedBox(name=f"{color}_cube", size_min=[CUBE_HALF] * 3, size_max=[CUBE_HALF] * 3,
                                           rgba=_RGBA[color], material=mat)
        cubes = list(self.cubes.values())
        if self.placement_initializer is not None:
            self.placement_initializer.reset()
            self.placement_initializer.add_objects(cubes)
        else:
            self.placement_initializer = UniformRandomSampler(
                name="ObjectSampler", mujoco_objects=cubes, x_range=[-0.1, 0.1], y_range=[-0.15, 0.15],
                rotation=None, ensure_object_boundary_in_range=False, ensure_valid_placement=True,
                reference_pos=self.table_offset, z_offset=0.01, rng=self.rng)
        self.model = ManipulationTask(mujoco_arena=arena, mujoco_robots=[r.robot_model for r in self.robots],
                                      mujoco_objects=cubes)

    def _setup_references(self) -> None:
        ManipulationEnv._setup_references(self)
        self.cube_body_ids = {c: self.sim.model.body_name2id(o.root_body) for c, o in self.cubes.items()}

    def _setup_observables(self):  # noqa: ANN202 - robosuite's OrderedDict
        return ManipulationEnv._setup_observables(self)

    def reward(self, action: Any = None) -> float:
        return 0.0

    def _check_success(self) -> bool:
        return False

    def visualize(self, vis_settings: dict) -> None:
        ManipulationEnv.visualize(self, vis_settings=vis_settings)


class StackThreeTask(TaskDefinition):
    """Task definition of ``stack_three`` (see module doc)."""

    name = "stack_three"
    skills = ("pick", "stack")
    max_steps = 800
    perturbation_names = ("knock_top_cube", "open_gripper", "close_gripper", "slip_fast")

    # ---------------------------------------------------------------- episode
    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        bottom, middle, top = (COLORS[i] for i in rng.permutation(3))
        instruction = f"stack the {middle} cube on the {bottom} cube, then the {top} cube on the {middle} cube"
        spec = TaskSpec(
            name=self.name, instruction=instruction, objects=COLORS, max_steps=self.max_steps,
            skills={s: SKILL_PREDICATES[s] for s in self.skills},
            goals=(f"on({middle},{bottom})", f"on({top},{middle})"),
            skill_texts=dict(SKILL_TEXTS),
        )
        return TaskEpisode(spec=spec, choices={"bottom": bottom, "middle": middle, "top": top})

    def make_robosuite_env(self, **env_kwargs: Any) -> StackThreeEnv:
        """Build :class:`StackThreeEnv` with a Panda and robosuite's default Panda OSC_POSE (delta) controller.

        ``env_kwargs`` (renderer flags, ``control_freq``, ``hard_reset``...) are forwarded to robosuite.
        """
        from robosuite.controllers import load_composite_controller_config

        kwargs: dict[str, Any] = {
            "robots": "Panda",
            "controller_configs": load_composite_controller_config(robot="Panda"),  # default_panda.json
            "has_renderer": False,
            "use_camera_obs": False,
            "hard_reset": False,
            "ignore_done": True,
        }
        kwargs.update(env_kwargs)
        return StackThreeEnv(**kwargs)

    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        return COLORS

    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        preds = tuple(f"grasped({c})" for c in COLORS)
        preds += tuple(f"on({x},{y})" for x in COLORS for y in COLORS if x != y)
        return COLORS, preds

    def object_symmetries(self) -> dict[str, int]:
        """The cubes carry the same wood texture on every face: a quarter turn looks the same."""
        return dict.fromkeys(COLORS, 4)

    def mujoco_object(self, rs_env: Any, episode: TaskEpisode, name: str) -> Any:
        if name not in COLORS:
            raise UnknownObjectError(name, list(COLORS))
        return rs_env.cubes[name]

    # ---------------------------------------------------------------- state
    def _pos(self, rs_env: Any, c: str) -> np.ndarray:
        return np.array(rs_env.sim.data.body_xpos[rs_env.cube_body_ids[c]])

    def _quat(self, rs_env: Any, c: str) -> np.ndarray:
        return np.array(rs_env.sim.data.body_xquat[rs_env.cube_body_ids[c]])

    def _speed(self, rs_env: Any, c: str) -> float:
        return float(np.linalg.norm(rs_env.sim.data.get_joint_qvel(rs_env.cubes[c].joints[0])[:3]))

    def _grasped(self, rs_env: Any, c: str) -> bool:
        return bool(rs_env._check_grasp(gripper=rs_env.robots[0].gripper, object_geoms=rs_env.cubes[c]))

    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        return {c: {"pos": self._pos(rs_env, c).tolist(), "quat": self._quat(rs_env, c).tolist()} for c in COLORS}

    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        pos = {c: self._pos(rs_env, c) for c in COLORS}
        grasped = {c: self._grasped(rs_env, c) for c in COLORS}
        out = {f"grasped({c})": grasped[c] for c in COLORS}
        for x in COLORS:
            for y in COLORS:
                if x == y:
                    continue
                d = pos[x] - pos[y]
                on = (np.linalg.norm(d[:2]) < ON_XY_TOL and abs(d[2] - 2 * CUBE_HALF) < ON_Z_TOL
                      and not grasped[x] and self._speed(rs_env, x) < SETTLED_SPEED)
                out[f"on({x},{y})"] = bool(on)
        return out

    # ---------------------------------------------------------------- expert
    def _check(self, skill: str, args: tuple[str, ...]) -> None:
        if skill not in self.skills:
            raise UnknownSkillError(skill, list(self.skills))
        n = {"pick": 1, "stack": 2}[skill]
        if len(args) != n:
            raise UnknownObjectError(",".join(args), list(COLORS))
        for a in args:
            if a not in COLORS:
                raise UnknownObjectError(a, list(COLORS))
        if skill == "stack" and args[0] == args[1]:
            raise UnknownObjectError(args[1], [c for c in COLORS if c != args[0]])

    def grasp_yaw(self, rs_env: Any, c: str) -> float:
        """Gripper yaw (rad, finger axis) for grasping cube ``c``: the cube's yaw mod 90 deg whose finger
        positions (+-6 cm along the finger axis) keep the most clearance from the other cubes (FIELD-NOTES)."""
        p = self._pos(rs_env, c)
        base = yaw_of_quat(self._quat(rs_env, c))
        others = [self._pos(rs_env, o)[:2] for o in COLORS if o != c]
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
        p = self._pos(rs_env, c)
        yaw = self.grasp_yaw(rs_env, c)
        return [
            Waypoint(pos=p + [0, 0, 0.10], yaw=yaw, gripper=-1.0, tol=0.015, max_step=0.05, label="above"),
            Waypoint(pos=p + [0, 0, 0.0], yaw=yaw, gripper=-1.0, tol=0.008, max_step=0.025, label="grasp"),
            Waypoint(pos=p + [0, 0, 0.0], yaw=yaw, gripper=1.0, tol=0.02, max_step=0.01, hold=10, label="close"),
            Waypoint(pos=p + [0, 0, 0.12], yaw=yaw, gripper=1.0, tol=0.02, max_step=0.03, label="lift"),
        ]

    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        self._check(skill, args)
        if skill == "pick":
            return self._pick_waypoints(rs_env, args[0])
        x, y = args
        eef = np.array(rs_env.sim.data.site_xpos[rs_env.robots[0].eef_site_id[rs_env.robots[0].arms[0]]])
        mat = np.array(rs_env.sim.data.site_xmat[rs_env.robots[0].eef_site_id[rs_env.robots[0].arms[0]]]).reshape(3, 3)
        cur_yaw = yaw_of_mat(mat)
        pre: list[Waypoint] = []
        if self._grasped(rs_env, x):
            offset = self._pos(rs_env, x) - eef  # cube centre relative to the grip site
            grip_yaw = cur_yaw
        else:  # not holding x: pick it first (then the cube centre is at the grip site)
            pre = self._pick_waypoints(rs_env, x)
            offset = np.zeros(3)
            grip_yaw = pre[0].yaw
        # rotate so that x's faces align with y's (cube yaw difference modulo 90 deg)
        dyaw = yaw_of_quat(self._quat(rs_env, y)) - yaw_of_quat(self._quat(rs_env, x))
        dyaw = (dyaw + math.pi / 4) % (math.pi / 2) - math.pi / 4
        yaw = grip_yaw + dyaw
        q = self._pos(rs_env, y)
        place = q + [0, 0, 2 * CUBE_HALF + 0.004]
        g = place - offset * np.array([1.0, 1.0, 1.0])
        return pre + [
            Waypoint(pos=g + [0, 0, 0.07], yaw=yaw, gripper=1.0, tol=0.012, max_step=0.04, label="above_target"),
            Waypoint(pos=g + [0, 0, 0.0], yaw=yaw, gripper=1.0, tol=0.006, max_step=0.015, hold=2, label="lower"),
            Waypoint(pos=g + [0, 0, 0.0], yaw=yaw, gripper=-1.0, tol=0.03, max_step=0.005, hold=8, label="release"),
            Waypoint(pos=g + [0, 0, 0.10], yaw=yaw, gripper=-1.0, tol=0.02, max_step=0.03, label="retreat"),
        ]

    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str,
                   args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        self._check(skill, args)
        x = args[0]
        if skill == "pick":
            p = self._pos(rs_env, x)
            p[2] = max(p[2], rs_env.table_offset[2] + CUBE_HALF) + 0.10
            return {x: (p, self._quat(rs_env, x))}
        q = self._pos(rs_env, args[1])
        return {x: (q + [0, 0, 2 * CUBE_HALF], self._quat(rs_env, args[1]))}
