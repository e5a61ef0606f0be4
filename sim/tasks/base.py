"""The contract every long-horizon task in ``sim/tasks`` implements.

A task owns everything that is specific to it:

* which robosuite environment to build (``make_robosuite_env``),
* how an episode's goal is drawn per seed (``sample_spec``: instruction + ordered goal predicates),
* the ground predicates it can evaluate from simulator state (``predicates``),
* the privileged ground truth exposed in ``Observation.privileged`` (``privileged``),
* how subgoals are worded (``TaskSpec.skill_texts``, filled in ``sample_spec``),
* the scripted expert's end-effector waypoints for each skill (``expert_waypoints``),
* which perturbations apply to it (``perturbations``).

The generic parts (rendering, seeding, save/restore, projection, waypoint tracking) live in
``sim/robosuite_env.py``, ``sim/cameras.py`` and ``sim/experts.py``.

Conventions: positions in m, world frame; quaternions wxyz; yaw in rad about world +z.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tandem.core.types import TaskSpec

#: Skill name -> predicate template shared by all tasks (``{0}``, ``{1}`` are the subgoal args).
SKILL_PREDICATES: dict[str, str] = {
    "pick": "grasped({0})",
    "place": "in_bin({0})",
    "stack": "on({0},{1})",
    "insert": "on_peg({0},{1})",
}


@dataclass(frozen=True)
class Waypoint:
    """One target of the scripted expert's waypoint tracker.

    Attributes:
        pos: ``float64 (3,)`` target position of the grip site (m, world frame).
        yaw: target gripper yaw about world +z (rad); the gripper is held pointing straight down.
        gripper: -1.0 open, +1.0 closed (robosuite OSC gripper convention).
        tol: position tolerance (m) at which the waypoint counts as reached.
        max_step: maximum translation per control step (m); small values descend slowly.
        hold: extra control steps to stay at the waypoint once reached (e.g. to let the gripper close).
        label: what this waypoint is for (``"above"``, ``"grasp"``, ``"lift"``...), for logs and traces.
    """

    pos: np.ndarray
    yaw: float = 0.0
    gripper: float = -1.0
    tol: float = 0.01
    max_step: float = 0.05
    hold: int = 0
    label: str = ""


@dataclass
class TaskEpisode:
    """What ``sample_spec`` draws for one seed: the spec plus task-private choices (e.g. object subset)."""

    spec: TaskSpec
    choices: dict[str, Any] = field(default_factory=dict)


class TaskDefinition(abc.ABC):
    """One long-horizon task. Subclasses are registered in ``sim.tasks.registry``.

    Class attributes:
        name: registry name.
        skills: the skills this task uses (subset of :data:`SKILL_PREDICATES`).
        max_steps: whole-episode control-step budget at 20 Hz.
        perturbation_names: perturbations supported by this task (see ``sim/perturbations.py``).
    """

    name: str = ""
    skills: tuple[str, ...] = ()
    max_steps: int = 1000
    perturbation_names: tuple[str, ...] = ()

    @abc.abstractmethod
    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        """Draw the episode's goal (instruction + ordered goal predicates) for a seed's rng."""

    @abc.abstractmethod
    def make_robosuite_env(self, **env_kwargs: Any) -> Any:
        """Build the robosuite env (Panda, OSC_POSE). ``env_kwargs`` come from the adapter
        (cameras, image size, ``hard_reset=False``, ...). Called once per adapter, not per episode."""

    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(objects, predicates)``: every object :meth:`object_poses` reports and every ground predicate
        :meth:`predicates` reports, whatever the episode, in a fixed order. Datasets label each frame over this
        vocabulary (``labels.*`` features), so that state models have fixed-size targets.

        Default: the graspable objects of :meth:`object_names` of an empty episode and each skill's predicate over
        them; tasks whose predicates take targets (bins, pegs) override it.
        """
        raise NotImplementedError(f"task {self.name!r} does not declare its label vocabulary")

    def object_symmetries(self) -> dict[str, int]:
        """Object -> order ``m >= 1`` of its rotational symmetry about its vertical axis, as far as a camera and a
        parallel gripper can tell (a cube with the same texture on every face: 4); its yaw, and the second label
        keypoint (3 cm along its local x axis), are then defined only modulo ``2 pi / m``. The learned perception
        models are trained and scored with it. Default: none (every object order 1)."""
        return {}

    def configure_episode(self, rs_env: Any, episode: TaskEpisode) -> None:  # noqa: B027 - optional hook
        """Optional hook before ``reset()`` (e.g. choose which objects are active)."""

    @abc.abstractmethod
    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        """Graspable object names used in this episode's instruction, e.g. ``("red", "green", "blue")``."""

    @abc.abstractmethod
    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        """All ground predicates of this episode, e.g. ``{"grasped(red)": False, "on(red,green)": True}``.

        ``on``/``in_bin``/``on_peg`` must require the object released and settled (not grasped).
        """

    @abc.abstractmethod
    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        """Object name -> ``{"pos": [x, y, z] (m, world), "quat": [w, x, y, z]}``."""

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

    # ---- optional hooks with generic defaults (added by the sim core; override where the default does not fit) ----

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

    def reference_subgoals(self, episode: TaskEpisode) -> list[tuple[str, tuple[str, ...]]]:
        """The reference skill sequence solving the episode, e.g. ``[("pick", ("red",)), ("stack", ("red", "green"))]``.

        Default: for each goal predicate ``p(a, ...)`` in order, ``pick(a)`` then the skill whose
        :data:`SKILL_PREDICATES` template has predicate name ``p`` (no extra pick if that skill is pick).
        Used by ``benchmarks/expert_success.py`` and the oracle planner's training labels.
        """
        by_pred = {tpl.split("(")[0]: skill for skill, tpl in SKILL_PREDICATES.items() if skill in self.skills}
        out: list[tuple[str, tuple[str, ...]]] = []
        for goal in episode.spec.goals:
            pred, _, rest = goal.partition("(")
            args = tuple(a.strip() for a in rest.rstrip(")").split(",") if a.strip())
            skill = by_pred.get(pred)
            if skill is None:
                continue
            if skill != "pick" and "pick" in self.skills:
                out.append(("pick", args[:1]))
            out.append((skill, args))
        return out

    def perturb(
        self, rs_env: Any, episode: TaskEpisode, name: str, rng: np.random.Generator, target: str | None = None
    ) -> dict[str, Any] | None:
        """Apply task-specific perturbation ``name`` now (see ``sim/perturbations.py``).

        Only called for names in :attr:`perturbation_names` that ``sim/perturbations.py`` lists in
        ``TASK_IMPLEMENTED`` (``pull_from_bin``), once its trigger held; ``target`` is the object of the
        triggering predicate (e.g. ``"milk"`` for ``in_bin(milk)``). Must move objects by writing free-joint
        qpos (and zero qvel) and return a JSON-safe detail dict (e.g. ``{"object": "milk", "to": [x, y, z]}``),
        or None to decline (it is retried on the next step). The env runs ``mj_forward`` afterwards.

        Raises:
            NotImplementedError: the task lists the perturbation but does not implement it.
        """
        raise NotImplementedError(f"task {self.name!r} does not implement perturbation {name!r}")

    def success(self, rs_env: Any, episode: TaskEpisode) -> bool:
        """Task success: every goal predicate of the episode holds."""
        preds = self.predicates(rs_env, episode)
        return all(preds.get(g, False) for g in episode.spec.goals)
