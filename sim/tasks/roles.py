"""The four roles of a task, one abstract class each; a task implements each in its own file:

* :class:`TaskScene` (``<task>/scene.py``): the robosuite env and placement, the per-seed goal and its wording,
  object names and symmetries, the privileged object poses;
* :class:`TaskPredicates` (``<task>/predicates.py``): the ground predicates read from simulator state, and their
  fixed label vocabulary;
* :class:`TaskExpert` (``<task>/expert.py``): the scripted expert's waypoints (grasp planning) per skill, and the
  object poses once a skill succeeded (for goal images);
* :class:`TaskPerturbations` (``<task>/perturbations.py``): which perturbations apply, and the task's own ones.

:class:`sim.tasks.base.TaskDefinition` composes one of each; the rest of tandem sees only it. A part may use the
parts above it in this list (the predicates read the scene's poses, the expert checks ``grasped``...), which it
receives in its constructor; never the parts below (no import cycles).

Every ``rs_env`` argument is the raw robosuite env that :meth:`TaskScene.make_robosuite_env` built (privileged:
only oracles reach it). Conventions: positions in m, world frame; quaternions wxyz; yaw in rad about world +z.
"""

from __future__ import annotations

import abc
import functools
import sys
from pathlib import Path
from typing import Any

import numpy as np

from sim.tasks.types import TaskEpisode, Waypoint
from tandem.core.types import TaskSpec
from tandem.core.vocabulary import TaskVocabulary

#: The file beside a task's ``scene.py`` that declares its vocabulary (:class:`TaskVocabulary`).
VOCABULARY_FILE = "vocabulary.yaml"


@functools.cache
def vocabulary_from_file(path: Path) -> TaskVocabulary:
    """The vocabulary declared in ``path``, read once per path (raises ConfigError naming a bad file)."""
    return TaskVocabulary.load(path)


class TaskScene(abc.ABC):
    """Role 1 of 4 (``scene.py``): the world of a task and the goal of each episode.

    Class attributes:
        name: registry name.
        skills: the skills this task uses (subset of :data:`tandem.core.vocabulary.SKILL_PREDICATES`).
        max_steps: whole-episode control-step budget at 20 Hz.
        steps_per_subgoal: the budget's share of one subgoal (control steps at 20 Hz): what the episode's budget
            grows by for each subgoal a perturbation undoes (:data:`sim.perturbations.ADDED_SUBGOALS`).
    """

    name: str = ""
    skills: tuple[str, ...] = ()
    max_steps: int = 1000
    steps_per_subgoal: int = 250

    @abc.abstractmethod
    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        """Draw the episode's goal (instruction + ordered goal predicates) for a seed's rng."""

    @abc.abstractmethod
    def spec_for_goals(self, goals: tuple[str, ...], instruction: str) -> TaskSpec:
        """The episode's spec when the judge reads ``goals`` (ordered goal predicates) from ``instruction``: the
        objects, targets and step budget those goals need, with :meth:`vocabulary` attached. ``sample_spec`` builds
        its drawn spec with it too."""

    def vocabulary(self) -> TaskVocabulary:
        """The task's declared vocabulary, :data:`VOCABULARY_FILE` in the scene's package (read once).

        Raises:
            ConfigError: the file is missing or not a valid vocabulary (names the file).
        """
        return vocabulary_from_file(Path(sys.modules[type(self).__module__].__file__).parent / VOCABULARY_FILE)

    @abc.abstractmethod
    def make_robosuite_env(self, **env_kwargs: Any) -> Any:
        """Build the robosuite env (Panda, OSC_POSE). ``env_kwargs`` come from the adapter
        (cameras, image size, ``hard_reset=False``, ...). Called once per adapter, not per episode."""

    def configure_episode(self, rs_env: Any, episode: TaskEpisode) -> None:  # noqa: B027 - optional hook
        """Optional hook before ``reset()`` (e.g. choose which objects are active)."""

    def after_reset(self, rs_env: Any, episode: TaskEpisode, seed: int) -> bool:
        """Optional hook after robosuite's ``reset()`` drew the scene for ``seed`` (e.g. load a benchmark's fixed init
        state). Returns True when the scene is now a fixed state that the adapter must not redraw for an overlap.
        Default: nothing, False."""
        return False

    @abc.abstractmethod
    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        """Graspable object names used in this episode's instruction, e.g. ``("red", "green", "blue")``."""

    def object_symmetries(self) -> dict[str, int]:
        """Object -> order ``m >= 1`` of its rotational symmetry about its vertical axis, as far as a camera and a
        parallel gripper can tell (a cube with the same texture on every face: 4); its yaw, and the second label
        keypoint (3 cm along its local x axis), are then defined only modulo ``2 pi / m``. The learned perception
        models are trained and scored with it. Default: none (every object order 1)."""
        return {}

    def workcell(self) -> dict[str, Any]:
        """The scene's static geometry for a grasp check over perceived poses, JSON-safe: ``{"containers": [{"inner_lo":
        [x, y], "inner_hi": [x, y], "rim_z": z}], "extents": {object: [[lo x, y, z], [hi x, y, z]]}}`` in m (world
        frame; extents in the object's body frame about its origin, upright): the walls the gripper picks inside of
        and each object's bounding box (read by ``planner_vlm.learned.grasp_check.Workcell``). Facts of the scene's
        design, the same in every episode, never a pose. Default: empty (no check)."""
        return {}

    def pick_geometry(self) -> dict[str, Any]:
        """The static facts a pick's expert geometry needs besides poses, JSON-safe, for the learned planner's
        ``geometric_picks``, as a dict naming its ``kind``: the ``to_dict`` of a
        :class:`tandem.core.pick_geometry.PickGeometry` kind beside the task, registered in :mod:`sim.tasks.registry`
        (nut_assembly: ``nut_pegs``, pick_place_bins: ``bin_objects``). Facts of the scene's design, the same in
        every episode, never a pose. Default: empty (the trace model's picks)."""
        return {}

    def support_z(self) -> float | None:
        """World z (m) of the surface the task's objects rest on, for the learned state model's depth absent check
        (``planner_vlm.learned.absence.absent_by_depth``), recorded in its checkpoint at training. A task opts in
        where that check was measured on its validation seeds. Default: None (not checked)."""
        return None

    @abc.abstractmethod
    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        """Object name -> ``{"pos": [x, y, z] (m, world), "quat": [w, x, y, z]}``."""

    def mujoco_object(self, rs_env: Any, episode: TaskEpisode, name: str) -> Any:
        """The robosuite ``MujocoObject`` behind object ``name`` (used by ``teleport`` and perturbations).

        Default: the object of ``rs_env.model.mujoco_objects`` whose robosuite name equals ``name`` ignoring
        case and underscores (``"square_nut"`` -> ``"SquareNut"``, ``"milk"`` -> ``"Milk"``). Override when
        the names differ.

        Raises:
            UnknownObjectError: no such object (lists the task's object names).
        """
        from tandem.core.errors import UnknownObjectError

        def norm(s: str) -> str:
            return s.replace("_", "").lower()

        for obj in getattr(rs_env.model, "mujoco_objects", []):
            if norm(obj.name) == norm(name):
                return obj
        raise UnknownObjectError(name, list(self.object_names(episode)))


class TaskPredicates(abc.ABC):
    """Role 2 of 4 (``predicates.py``): the ground predicates of the task, read from simulator state."""

    @abc.abstractmethod
    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        """All ground predicates of this episode, e.g. ``{"grasped(red)": False, "on(red,green)": True}``.

        ``on``/``in_bin``/``on_peg`` must require the object released and settled (not grasped).
        """

    @abc.abstractmethod
    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(objects, predicates)``: every object ``object_poses`` reports and every ground predicate
        :meth:`predicates` reports, whatever the episode, in a fixed order. Datasets label each frame over this
        vocabulary (``labels.*`` features), so that state models have fixed-size targets."""


class TaskExpert(abc.ABC):
    """Role 3 of 4 (``expert.py``): the privileged scripted expert, skill by skill (where to go; the generic
    waypoint tracker of ``sim/experts.py`` decides how)."""

    @abc.abstractmethod
    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        """Waypoints of the scripted expert for ``skill(*args)`` from the current state.

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """

    @abc.abstractmethod
    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Object poses once ``skill(*args)`` has succeeded, for the oracle goal image (teleport-render-restore).

        Returns object name -> ``(pos (3,) m world, quat (4,) wxyz)`` for the objects that move.
        """


class TaskPerturbations(abc.ABC):  # noqa: B024 - a task without perturbations of its own overrides nothing
    """Role 4 of 4 (``perturbations.py``): which perturbations of ``sim/perturbations.py`` apply to the task, and
    the task's own ones (those in ``sim.perturbations.TASK_IMPLEMENTED``).

    Class attributes:
        perturbation_names: perturbations supported by this task (see ``sim/perturbations.py``).
    """

    perturbation_names: tuple[str, ...] = ()

    def perturb(
        self, rs_env: Any, episode: TaskEpisode, name: str, rng: np.random.Generator, target: str | None = None
    ) -> dict[str, Any] | None:
        """Apply task-specific perturbation ``name`` now (see ``sim/perturbations.py``).

        Only called for names in :attr:`perturbation_names` that ``sim/perturbations.py`` lists in
        ``TASK_IMPLEMENTED`` (``pull_from_bin``, ``jam_on_peg``, ``miss_grasp``), once its trigger held; ``target``
        is the object of the triggering predicate (e.g. ``"milk"`` for ``in_bin(milk)``). It moves objects by
        writing free-joint qpos (and zero qvel), or names a grip-site point ``"push_to": [x, y, z]`` (m, world)
        towards which the arm is then driven for ``PUSH_STEPS`` control steps, and returns a JSON-safe detail dict (e.g.
        ``{"object": "milk", "to": [x, y, z]}``), or None to decline (it is retried on every later step while the
        triggering predicate holds). The env runs ``mj_forward`` afterwards.

        Raises:
            NotImplementedError: the task lists the perturbation but does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement perturbation {name!r}")
