"""``nut_assembly`` scene: robosuite's ``NutAssembly`` with both nuts resting on the table, and which nut goes first.

Built on robosuite's ``NutAssembly`` environment (Zhu et al., "robosuite", 2020; task from Mandlekar et al.,
"RoboTurk", CoRL 2018): a Panda arm under the OSC_POSE controller, two nuts with an offset handle, two pegs
fixed to the table (square peg = robosuite body ``peg1``, round peg = ``peg2``).

Geometry the expert relies on (robosuite ``square-nut.xml``, ``round-nut.xml``, ``pegs_arena.xml``):

* nut body origin = centre of the hole; a nut is 0.02 m thick, so lying flat its origin is 0.01 m above the
  table top (z = 0.83 m);
* the handle lies along the nut's local +x axis (handle site 0.054 m from the origin on the square nut,
  0.06 m on the round nut) and is 0.032 m wide along local y, so the fingers close along local y;
* square peg: box, half-width 0.016 m (hole half-width 0.02275 m); round peg: cylinder, radius 0.02 m
  (hole inner radius ~0.031 m); both peg tops are at z = 0.95 m, at x = 0.23 m, y = +0.1 / -0.1 m.

Conventions: positions in m, world frame; quaternions wxyz; angles in rad about world +z.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.tasks.nut_assembly.pick_geometry import KIND as PICK_GEOMETRY_KIND
from sim.tasks.roles import TaskScene
from sim.tasks.types import SKILL_PREDICATES, TaskEpisode
from tandem.core.errors import UnknownObjectError, UnknownSkillError
from tandem.core.types import TaskSpec

#: z of the table top in robosuite's NutAssembly (``table_offset[2]``), m.
TABLE_Z = 0.82
#: z of both pegs' tops (peg bodies at 0.85 m, half-height 0.1 m), m.
PEG_TOP_Z = 0.95
#: z of a nut's origin when the nut lies flat on the table, m.
NUT_REST_Z = TABLE_Z + 0.01
#: World position (m) of each peg's body (its centre; robosuite's NutAssembly fixes them to the table) and of the
#: Panda's base there: the same in every episode (``tests/sim/test_nut_assembly.py`` checks them on the live env).
PEG_BODY_POS: dict[str, tuple[float, float, float]] = {"square_peg": (0.23, 0.10, 0.85),
                                                       "round_peg": (0.23, -0.10, 0.85)}
ROBOT_BASE_POS: tuple[float, float, float] = (-0.56, 0.0, 0.912)


@dataclass(frozen=True)
class NutInfo:
    """Static facts about one nut.

    Attributes:
        rs_name: robosuite object name (``"SquareNut"`` / ``"RoundNut"``).
        peg: name of the peg this nut belongs on.
        label: words used in the instruction (``"square nut"``).
        grasp_offset: distance (m) from the nut origin along its local +x axis at which the expert grasps the
            handle: past the ring, so the finger pads touch only the handle.
        square_to_peg: the nut's hole fits its peg only with their faces near parallel (the square nut: 6.75 mm
            of clearance per side when its yaw is a multiple of pi/2, 0.25 mm at 40 degrees off), so the expert
            turns it square to the peg; a round nut on its round peg fits at any yaw (11 mm).
    """

    rs_name: str
    peg: str
    label: str
    grasp_offset: float
    square_to_peg: bool = False


@dataclass(frozen=True)
class PegInfo:
    """Static facts about one peg: robosuite body name, instruction words, ``on_peg`` xy tolerance (m)."""

    body: str
    label: str
    xy_tol: float


NUTS: dict[str, NutInfo] = {
    "square_nut": NutInfo("SquareNut", "square_peg", "square nut", 0.062, square_to_peg=True),
    "round_nut": NutInfo("RoundNut", "round_peg", "round nut", 0.068),
}
PEGS: dict[str, PegInfo] = {
    # A nut threaded on a peg is off-centre by at most ~0.007 m (square on square) to ~0.011 m (round on round).
    # 0.02 m still excludes a nut lying against the outside of the peg (its origin is then >= 0.03 m away).
    "square_peg": PegInfo("peg1", "square peg", 0.02),
    "round_peg": PegInfo("peg2", "round peg", 0.02),
}

#: Subgoal wording per skill (``TaskSpec.skill_texts``).
SKILL_TEXTS: dict[str, str] = {"pick": "pick up the {0}", "insert": "put the {0} on the {1}"}


def _check_name(name: str, known: dict[str, Any]) -> None:
    if name not in known:
        raise UnknownObjectError(name, list(known))


class NutAssemblyScene(TaskScene):
    """Scene of ``nut_assembly``: ``pick(nut)`` then ``insert(nut, peg)`` for each nut, nut order drawn per seed."""

    name = "nut_assembly"
    skills = ("pick", "insert")
    max_steps = 1200
    steps_per_subgoal = max_steps // 4  # its 4 subgoals: a pick and an insert per nut

    # ------------------------------------------------------------------ spec
    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        """Draw which nut goes first (one ``rng.permutation(2)``).

        Returns:
            TaskEpisode whose spec has instruction e.g. ``"put the square nut on the square peg, then the round
            nut on the round peg"``, objects ``("square_nut", "round_nut")``, targets ``("square_peg",
            "round_peg")``, skills ``pick``/``insert``, goals ``on_peg(nut,peg)`` in the drawn order;
            ``choices["order"]`` is the nut order.
        """
        nuts = list(NUTS)
        order = tuple(nuts[i] for i in rng.permutation(len(nuts)))
        parts = [f"the {NUTS[n].label} on the {PEGS[NUTS[n].peg].label}" for n in order]
        spec = self.spec_for_goals(tuple(SKILL_PREDICATES["insert"].format(n, NUTS[n].peg) for n in order),
                                   f"put {parts[0]}, then {parts[1]}")
        return TaskEpisode(spec=spec, choices={"order": order})

    def spec_for_goals(self, goals: tuple[str, ...], instruction: str) -> TaskSpec:
        """The spec of an episode whose judge reads ``goals`` (``on_peg(nut,peg)``, in order) from ``instruction``."""
        return TaskSpec(
            name=self.name,
            instruction=instruction,
            objects=tuple(NUTS),
            max_steps=self.max_steps,
            skills={s: SKILL_PREDICATES[s] for s in self.skills},
            goals=tuple(goals),
            targets=tuple(PEGS),
            skill_texts=dict(SKILL_TEXTS),
            vocabulary=self.vocabulary(),
        )

    def subgoal_text(self, skill: str, args: tuple[str, ...]) -> str:
        """``"pick up the square_nut"`` / ``"put the square_nut on the square_peg"`` (the spec's ``skill_texts``).

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self.check_skill_args(skill, tuple(args))
        return SKILL_TEXTS[skill].format(*args)

    def check_skill_args(self, skill: str, args: tuple[str, ...]) -> None:
        """Check ``skill(*args)``: ``pick(nut)`` or ``insert(nut, peg)``.

        Raises:
            UnknownSkillError: ``skill`` is not pick or insert. UnknownObjectError: a wrong number of args, or a
                name that is not a nut (first arg) or a peg (second arg).
        """
        if skill not in self.skills:
            raise UnknownSkillError(skill, list(self.skills))
        want = 1 if skill == "pick" else 2
        if len(args) != want:
            raise UnknownObjectError(",".join(args), list(NUTS) + (list(PEGS) if want == 2 else []))
        _check_name(args[0], NUTS)
        if want == 2:
            _check_name(args[1], PEGS)

    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        """``("square_nut", "round_nut")``."""
        return tuple(NUTS)

    # ------------------------------------------------------------------ env
    def make_robosuite_env(self, **env_kwargs: Any) -> Any:
        """Build robosuite ``NutAssembly`` with both nuts, a Panda and OSC_POSE (robosuite's BASIC config).

        ``env_kwargs`` (cameras, image size, ``hard_reset``, ``control_freq``...) are forwarded to
        ``robosuite.make`` and override the defaults here. Unless given, the placement initializer is
        :func:`make_nut_sampler`: robosuite's default ranges, but nuts spawn resting on the table.
        """
        import robosuite
        from robosuite.controllers import load_composite_controller_config

        kwargs: dict[str, Any] = {
            "robots": "Panda",
            "controller_configs": load_composite_controller_config(controller="BASIC", robot="Panda"),
            "has_renderer": False,
            "has_offscreen_renderer": False,
            "use_camera_obs": False,
            "hard_reset": False,
            "control_freq": 20,
            "ignore_done": True,
        }
        kwargs.update(env_kwargs)
        kwargs["single_object_mode"] = 0
        if kwargs.get("placement_initializer") is None:
            kwargs["placement_initializer"] = make_nut_sampler(kwargs.get("table_offset", (0.0, 0.0, TABLE_Z)))
        return robosuite.make("NutAssembly", **kwargs)

    # ------------------------------------------------------------------ state
    def nut_object(self, rs_env: Any, name: str) -> Any:
        """The robosuite nut object (``MujocoObject``) of nut ``name``.

        Raises:
            UnknownObjectError: ``name`` is not a nut, or the env has no such nut.
        """
        _check_name(name, NUTS)
        for nut in rs_env.nuts:
            if nut.name == NUTS[name].rs_name:
                return nut
        raise UnknownObjectError(name, [n.name for n in rs_env.nuts])

    def nut_pose(self, rs_env: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(pos float64 (3,) m world, quat float64 (4,) wxyz)`` of a nut's origin (the centre of its hole).

        Raises:
            UnknownObjectError: ``name`` is not a nut.
        """
        _check_name(name, NUTS)
        bid = rs_env.obj_body_id[NUTS[name].rs_name]
        return np.array(rs_env.sim.data.body_xpos[bid]), np.array(rs_env.sim.data.body_xquat[bid])

    def grip_site(self, rs_env: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(pos float64 (3,) m world, rotation float64 (3, 3) site->world)`` of the Panda's grip site."""
        robot = rs_env.robots[0]
        sid = robot.eef_site_id[robot.arms[0]] if isinstance(robot.eef_site_id, dict) else robot.eef_site_id
        return np.array(rs_env.sim.data.site_xpos[sid]), np.array(rs_env.sim.data.site_xmat[sid]).reshape(3, 3)

    def peg_pos(self, rs_env: Any, peg: str) -> np.ndarray:
        """``float64 (3,)`` world position (m) of a peg's centre (its top is 0.1 m higher).

        Raises:
            UnknownObjectError: ``peg`` is not a peg.
        """
        _check_name(peg, PEGS)
        return np.array(rs_env.sim.data.body_xpos[rs_env.sim.model.body_name2id(PEGS[peg].body)])

    def pick_geometry(self) -> dict[str, Any]:
        """Each nut's handle grasp, squaring and peg, and the robot's base (:meth:`TaskScene.pick_geometry`;
        :class:`sim.tasks.nut_assembly.pick_geometry.NutPickGeometry` as a dict, naming its kind)."""
        return {"kind": PICK_GEOMETRY_KIND, "base_pos": list(ROBOT_BASE_POS),
                "nuts": {n: {"grasp_offset_m": i.grasp_offset, "square_to_peg": i.square_to_peg,
                             "peg_pos": list(PEG_BODY_POS[i.peg])} for n, i in NUTS.items()}}

    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        """Nut name -> ``{"pos": [x, y, z] (m, world, hole centre), "quat": [w, x, y, z]}``."""
        out = {}
        for n in NUTS:
            pos, quat = self.nut_pose(rs_env, n)
            out[n] = {"pos": pos.tolist(), "quat": quat.tolist()}
        return out


def make_nut_sampler(table_offset: tuple[float, float, float] | np.ndarray) -> Any:
    """robosuite's default NutAssembly placement, with the nuts spawned resting on the table.

    Same as robosuite: a ``SequentialCompositeSampler`` with ``SquareNutSampler`` (x in [-0.115, -0.11],
    y in [0.11, 0.225] m) and ``RoundNutSampler`` (y in [-0.225, -0.11] m), uniform yaw, relative to
    ``table_offset`` (m, world). Different: robosuite's ``z_offset=0.02`` plus the nuts' 0.05 m
    ``bottom_site`` drops them from 0.06 m; here ``z_offset=-0.039`` puts them 1 mm above the table, so the
    state at reset is already at rest (no fall, and the first observation shows where the nuts lie).
    """
    from robosuite.utils.placement_samplers import SequentialCompositeSampler, UniformRandomSampler

    sampler = SequentialCompositeSampler(name="ObjectSampler")
    for nut_name, y_range in (("SquareNut", [0.11, 0.225]), ("RoundNut", [-0.225, -0.11])):
        sampler.append_sampler(
            UniformRandomSampler(
                name=f"{nut_name}Sampler",
                x_range=[-0.115, -0.11],
                y_range=y_range,
                rotation=None,
                rotation_axis="z",
                ensure_object_boundary_in_range=False,
                ensure_valid_placement=True,
                reference_pos=np.asarray(table_offset, dtype=np.float64),
                z_offset=-0.039,
            )
        )
    return sampler
