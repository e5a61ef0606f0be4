"""The contract every long-horizon task in ``sim/tasks`` fulfils: a :class:`TaskDefinition` composed of four parts.

A task owns everything that is specific to it, split into the four roles of :mod:`sim.tasks.roles`, one file
each in the task's package:

* the scene (``scene.py``, :class:`~sim.tasks.roles.TaskScene`): which robosuite environment to build
  (``make_robosuite_env``), how an episode's goal is drawn per seed (``sample_spec``: instruction + ordered goal
  predicates + subgoal wording ``TaskSpec.skill_texts``), the object names and symmetries, and the privileged
  object poses exposed in ``Observation.privileged`` (``object_poses``);
* the predicates (``predicates.py``, :class:`~sim.tasks.roles.TaskPredicates`): the ground predicates it can
  evaluate from simulator state (``predicates``) and their label vocabulary;
* the expert (``expert.py``, :class:`~sim.tasks.roles.TaskExpert`): the scripted expert's end-effector
  waypoints for each skill (``expert_waypoints``) and the object poses once a skill succeeded (``goal_poses``);
* the perturbations (``perturbations.py``, :class:`~sim.tasks.roles.TaskPerturbations`): which perturbations
  apply to it (``perturbation_names``) and its own ones (``perturb``).

The generic parts (rendering, seeding, save/restore, projection, waypoint tracking) live in
``sim/robosuite_env.py``, ``sim/cameras.py`` and ``sim/experts.py``.

Conventions: positions in m, world frame; quaternions wxyz; yaw in rad about world +z.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.tasks.roles import TaskExpert, TaskPerturbations, TaskPredicates, TaskScene
from sim.tasks.types import SKILL_PREDICATES, TaskEpisode, Waypoint
from tandem.core.errors import ConfigError
from tandem.core.grounding import Grounding
from tandem.core.vocabulary import TaskVocabulary

__all__ = [
    "SKILL_PREDICATES",
    "TaskDefinition",
    "TaskEpisode",
    "TaskExpert",
    "TaskParts",
    "TaskPerturbations",
    "TaskPredicates",
    "TaskScene",
    "Waypoint",
]


@dataclass(frozen=True)
class TaskParts:
    """The four parts of one task, one per role of :mod:`sim.tasks.roles`.

    Raises:
        ConfigError: a part is not an instance of its role (names the role, the class expected and the one given).
    """

    scene: TaskScene
    predicates: TaskPredicates
    expert: TaskExpert
    perturbations: TaskPerturbations

    def __post_init__(self) -> None:
        for role, cls in (("scene", TaskScene), ("predicates", TaskPredicates), ("expert", TaskExpert),
                          ("perturbations", TaskPerturbations)):
            part = getattr(self, role)
            if not isinstance(part, cls):
                raise ConfigError(f"task part {role!r} must be a {cls.__name__} (sim.tasks.roles), "
                                  f"got {type(part).__name__}")


class TaskDefinition:
    """One long-horizon task, composed of its four parts. Each task subclasses it in ``sim/tasks/<task>/__init__.py``
    (which only wires the parts together) and is registered in ``sim.tasks.registry``.

    The rest of tandem uses only the members below; each one delegates to the part that owns it (its docstring is
    there), except :meth:`reference_subgoals` and :meth:`success`, which are derived from the others.

    Args:
        scene / predicates / expert / perturbations: the task's parts (see :mod:`sim.tasks.roles`).

    Attributes:
        parts: the four parts (:class:`TaskParts`), for task-specific helpers (e.g. ``parts.scene.peg_pos``).

    Raises:
        ConfigError: a part is not an instance of its role.
    """

    def __init__(self, scene: TaskScene, predicates: TaskPredicates, expert: TaskExpert,
                 perturbations: TaskPerturbations) -> None:
        self.parts = TaskParts(scene=scene, predicates=predicates, expert=expert, perturbations=perturbations)

    # ---- the scene
    @property
    def name(self) -> str:
        """Registry name (:attr:`TaskScene.name`)."""
        return self.parts.scene.name

    @property
    def skills(self) -> tuple[str, ...]:
        """The skills this task uses (:attr:`TaskScene.skills`)."""
        return self.parts.scene.skills

    @property
    def max_steps(self) -> int:
        """Whole-episode control-step budget at 20 Hz (:attr:`TaskScene.max_steps`)."""
        return self.parts.scene.max_steps

    @property
    def steps_per_subgoal(self) -> int:
        """The step budget's share of one subgoal at 20 Hz (:attr:`TaskScene.steps_per_subgoal`)."""
        return self.parts.scene.steps_per_subgoal

    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        """See :meth:`TaskScene.sample_spec`."""
        return self.parts.scene.sample_spec(rng)

    @property
    def vocabulary(self) -> TaskVocabulary:
        """The task's declared vocabulary (:meth:`TaskScene.vocabulary`)."""
        return self.parts.scene.vocabulary()

    def read_instruction(self, instruction: str) -> Grounding:
        """The judge's reference reading of ``instruction`` over :attr:`vocabulary`
        (:func:`sim.reference_reading.read_instruction`): the goals the env judges success by, or a refusal."""
        from sim.reference_reading import read_instruction

        return read_instruction(self.vocabulary, instruction)

    def episode_for_reading(self, drawn: TaskEpisode, reading: Grounding) -> TaskEpisode:
        """The episode ``drawn`` for a seed, asked instead for ``reading``'s goals in ``reading``'s words: the scene
        stays the seed's; the spec is :meth:`TaskScene.spec_for_goals`'s, with ``drawn``'s cameras, image size and
        control period.

        Raises:
            ConfigError: ``reading`` is a refusal (its reason).
        """
        if not reading.ok:
            raise ConfigError(f"instruction {reading.instruction!r}: {reading.refused}")
        spec = self.parts.scene.spec_for_goals(tuple(reading.goals), reading.instruction)
        spec = dataclasses.replace(spec, cameras=drawn.spec.cameras, image_size=drawn.spec.image_size,
                                   control_dt=drawn.spec.control_dt)
        return TaskEpisode(spec=spec, choices={**drawn.choices, "instruction_from": reading.grounded_by})

    def make_robosuite_env(self, **env_kwargs: Any) -> Any:
        """See :meth:`TaskScene.make_robosuite_env`."""
        return self.parts.scene.make_robosuite_env(**env_kwargs)

    def configure_episode(self, rs_env: Any, episode: TaskEpisode) -> None:
        """See :meth:`TaskScene.configure_episode`."""
        self.parts.scene.configure_episode(rs_env, episode)

    def after_reset(self, rs_env: Any, episode: TaskEpisode, seed: int) -> bool:
        """See :meth:`TaskScene.after_reset`."""
        return self.parts.scene.after_reset(rs_env, episode, seed)

    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        """See :meth:`TaskScene.object_names`."""
        return self.parts.scene.object_names(episode)

    def object_symmetries(self) -> dict[str, int]:
        """See :meth:`TaskScene.object_symmetries`."""
        return self.parts.scene.object_symmetries()

    def workcell(self) -> dict[str, Any]:
        """See :meth:`TaskScene.workcell`."""
        return self.parts.scene.workcell()

    def pick_geometry(self) -> dict[str, Any]:
        """See :meth:`TaskScene.pick_geometry`."""
        return self.parts.scene.pick_geometry()

    def support_z(self) -> float | None:
        """See :meth:`TaskScene.support_z`."""
        return self.parts.scene.support_z()

    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        """See :meth:`TaskScene.object_poses`."""
        return self.parts.scene.object_poses(rs_env, episode)

    def mujoco_object(self, rs_env: Any, episode: TaskEpisode, name: str) -> Any:
        """See :meth:`TaskScene.mujoco_object`."""
        return self.parts.scene.mujoco_object(rs_env, episode, name)

    # ---- the predicates
    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        """See :meth:`TaskPredicates.predicates`."""
        return self.parts.predicates.predicates(rs_env, episode)

    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """See :meth:`TaskPredicates.label_vocabulary`."""
        return self.parts.predicates.label_vocabulary()

    def success(self, rs_env: Any, episode: TaskEpisode) -> bool:
        """Task success: every goal predicate of the episode holds."""
        preds = self.predicates(rs_env, episode)
        return all(preds.get(g, False) for g in episode.spec.goals)

    # ---- the expert
    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        """See :meth:`TaskExpert.expert_waypoints`."""
        return self.parts.expert.expert_waypoints(rs_env, episode, skill, args)

    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """See :meth:`TaskExpert.goal_poses`."""
        return self.parts.expert.goal_poses(rs_env, episode, skill, args)

    def reference_subgoals(self, episode: TaskEpisode) -> list[tuple[str, tuple[str, ...]]]:
        """The reference skill sequence solving the episode, e.g. ``[("pick", ("red",)), ("stack", ("red", "green"))]``.

        For each goal predicate ``p(a, ...)`` in order, ``pick(a)`` then the skill whose template in the episode's
        ``TaskSpec.skills`` has predicate name ``p``; no pick where that skill is pick or ``a`` is not one of the
        episode's objects (a fixture's goal: close a drawer, turn on a stove).
        Used by ``benchmarks/expert_success.py`` and the oracle planner's training labels.
        """
        from tandem.core.vocabulary import parse_goal

        skills = episode.spec.skills
        by_pred = {tpl.split("(")[0]: skill for skill, tpl in skills.items() if skill != "pick"}
        if "pick" in skills:  # a goal that is itself a pick (grasped(cube)): that pick alone
            by_pred.setdefault(skills["pick"].split("(")[0], "pick")
        out: list[tuple[str, tuple[str, ...]]] = []
        for goal in episode.spec.goals:
            pred, args = parse_goal(goal)
            skill = by_pred.get(pred)
            if skill is None:
                continue
            if skill != "pick" and "pick" in skills and args[0] in episode.spec.objects:
                out.append(("pick", args[:1]))
            out.append((skill, args))
        return out

    # ---- the perturbations
    @property
    def perturbation_names(self) -> tuple[str, ...]:
        """Perturbations supported by this task (:attr:`TaskPerturbations.perturbation_names`)."""
        return self.parts.perturbations.perturbation_names

    def perturb(
        self, rs_env: Any, episode: TaskEpisode, name: str, rng: np.random.Generator, target: str | None = None
    ) -> dict[str, Any] | None:
        """See :meth:`TaskPerturbations.perturb`."""
        return self.parts.perturbations.perturb(rs_env, episode, name, rng, target=target)
