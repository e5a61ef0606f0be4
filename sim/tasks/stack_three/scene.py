"""``stack_three`` scene: three equal coloured cubes on a table, and which tower each seed asks for.

The robosuite environment :class:`StackThreeEnv` is a custom subclass of robosuite's ``Stack`` with three
equal cubes (half size :data:`CUBE_HALF` m) placed by a ``UniformRandomSampler`` with random yaw and at least
:data:`MIN_SPACING` m between cube centres.

Per seed a permutation (bottom, middle, top) is drawn; instruction
``"stack the <middle> cube on the <bottom> cube, then the <top> cube on the <middle> cube"``,
goals ``("on(middle,bottom)", "on(top,middle)")``. Skills: ``pick`` -> ``grasped(x)``, ``stack`` -> ``on(x,y)``.
"""

from __future__ import annotations

from typing import Any, override

import numpy as np
from robosuite.environments.manipulation.manipulation_env import ManipulationEnv
from robosuite.environments.manipulation.stack import Stack
from robosuite.models.arenas import TableArena
from robosuite.models.objects import BoxObject
from robosuite.models.tasks import ManipulationTask
from robosuite.utils.mjcf_utils import CustomMaterial
from robosuite.utils.placement_samplers import UniformRandomSampler

from sim.tasks.roles import TaskScene
from sim.tasks.types import SKILL_PREDICATES, TaskEpisode
from tandem.core.errors import UnknownObjectError, UnknownSkillError
from tandem.core.types import TaskSpec

COLORS: tuple[str, ...] = ("red", "green", "blue")
CUBE_HALF = 0.022  # m
MIN_SPACING = 0.11  # m between cube centres at placement (open fingers reach ~5 cm from the centre)
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

    Reward is always 0 and ``_check_success`` False: success is decided by the task's predicates.
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

    @override
    def reward(self, action: Any = None) -> float:
        return 0.0

    def _check_success(self) -> bool:
        return False

    @override
    def visualize(self, vis_settings: dict) -> None:
        ManipulationEnv.visualize(self, vis_settings=vis_settings)


class StackThreeScene(TaskScene):
    """Scene of ``stack_three`` (see module doc)."""

    name = "stack_three"
    skills = ("pick", "stack")
    max_steps = 800
    steps_per_subgoal = max_steps // 4  # its 4 subgoals: two picks, two stacks

    # ---------------------------------------------------------------- episode
    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        """Draw the tower's order (one ``rng.permutation(3)``) and word it (see the module docstring)."""
        bottom, middle, top = (COLORS[i] for i in rng.permutation(3))
        instruction = f"stack the {middle} cube on the {bottom} cube, then the {top} cube on the {middle} cube"
        spec = self.spec_for_goals((f"on({middle},{bottom})", f"on({top},{middle})"), instruction)
        return TaskEpisode(spec=spec, choices={"bottom": bottom, "middle": middle, "top": top})

    def spec_for_goals(self, goals: tuple[str, ...], instruction: str) -> TaskSpec:
        """The spec of an episode whose judge reads ``goals`` (``on(x,y)``, bottom first) from ``instruction``."""
        return TaskSpec(
            name=self.name, instruction=instruction, objects=COLORS, max_steps=self.max_steps,
            skills={s: SKILL_PREDICATES[s] for s in self.skills}, goals=tuple(goals),
            skill_texts=dict(SKILL_TEXTS), vocabulary=self.vocabulary(),
        )

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

    @override
    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        return COLORS

    def object_symmetries(self) -> dict[str, int]:
        """The cubes carry the same wood texture on every face: a quarter turn looks the same."""
        return dict.fromkeys(COLORS, 4)

    @override
    def mujoco_object(self, rs_env: Any, episode: TaskEpisode, name: str) -> Any:
        if name not in COLORS:
            raise UnknownObjectError(name, list(COLORS))
        return rs_env.cubes[name]

    def check_skill_args(self, skill: str, args: tuple[str, ...]) -> None:
        """Check ``skill(*args)``: ``pick(cube)`` or ``stack(cube, other cube)``.

        Raises:
            UnknownSkillError: ``skill`` is not pick or stack. UnknownObjectError: a wrong number of args, a name
                that is not a cube, or a cube stacked on itself.
        """
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

    # ---------------------------------------------------------------- state
    def cube_pos(self, rs_env: Any, c: str) -> np.ndarray:
        """``float64 (3,)`` position (m, world) of cube ``c``'s centre."""
        return np.array(rs_env.sim.data.body_xpos[rs_env.cube_body_ids[c]])

    def cube_quat(self, rs_env: Any, c: str) -> np.ndarray:
        """``float64 (4,)`` orientation (wxyz, world) of cube ``c``."""
        return np.array(rs_env.sim.data.body_xquat[rs_env.cube_body_ids[c]])

    @override
    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        return {c: {"pos": self.cube_pos(rs_env, c).tolist(), "quat": self.cube_quat(rs_env, c).tolist()} for c in COLORS}
