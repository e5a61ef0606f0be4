"""The interfaces between tandem's parts, as ``typing.Protocol`` classes.

Only :mod:`tandem.runtime.agent` knows all of them together. Components implement them without
importing each other (see the import-linter contracts in ``pyproject.toml``). A protocol declares every member the
runtime uses, so the runtime never probes a component with ``hasattr``; :func:`require_protocol` refuses a
component that lacks one, naming what is missing.

Every component that receives observations (planner, verifier, executor, goal producer) declares ``is_oracle``:
True when it reads the simulator's truth (``Observation.privileged``). The runtime hands a component whose
``is_oracle`` is False observations with ``privileged`` removed (:mod:`tandem.core.privileged`).

A component that is not an oracle also gets the task with its goals withheld (:func:`tandem.core.privileged.task_for`):
it plans from ``TaskSpec.instruction`` and ``TaskSpec.vocabulary``, and says how it read the words
(``Planner.grounding``).

This module imports nothing from the project but :mod:`tandem.core.types`, :mod:`tandem.core.grounding`,
:mod:`tandem.core.evidence` and :mod:`tandem.core.errors`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tandem.core.errors import ConfigError
from tandem.core.evidence import GoalReading
from tandem.core.grounding import Grounding
from tandem.core.types import Observation, Plan, RetryPolicy, Subgoal, TaskSpec, Verdict


@runtime_checkable
class Env(Protocol):
    """A manipulation environment (robosuite task or real robot), gymnasium-style.

    Attributes:
        spec: the TaskSpec of the current episode (valid after ``reset``).
        action_dim: A, length of one action (7 for robosuite OSC_POSE).
        action_low, action_high: ``float32 (A,)`` controller limits; actions are clipped to these.
    """

    spec: TaskSpec
    action_dim: int
    action_low: np.ndarray
    action_high: np.ndarray

    def reset(self, seed: int | None = None) -> tuple[Observation, dict[str, Any]]:
        """Start an episode. Returns ``(observation, info)``.

        Raises:
            PlacementError: if objects cannot be placed for this seed.
        """
        ...

    def step(self, action: np.ndarray) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Apply one ``float32 (A,)`` action. Returns ``(obs, reward, terminated, truncated, info)``.

        ``info["success"]`` is the task-success flag where the env can tell (simulation).

        Raises:
            SimUnstableError: if the physics diverged (NaN or exploding state).
            NonFiniteActionError: if ``action`` contains NaN/inf.
        """
        ...

    def close(self) -> None:
        """Release the simulator or the robot connection; the env is not used afterwards."""
        ...


@runtime_checkable
class TaskMemory(Protocol):
    """Structured task memory (Goal2Skill / RoboMemory style).

    Records plan progress (done/remaining), attempts per subgoal, failures with their reasons and causes,
    facts about objects and an event log; persists to an SQLite store per run directory (and JSONL); learns
    retry policies and planner hints from earlier episodes. Implementation: ``memory.task_memory.TaskMemoryV1``.
    """

    def start_episode(self, task: TaskSpec, meta: dict[str, Any] | None = None) -> None:
        """Start recording an episode of ``task`` (``meta``: e.g. seed and stack, kept with the episode)."""
        ...

    def record_plan(self, plan: Plan, step: int, source: str) -> None:
        """Record ``plan`` made at control step ``step`` by the planner named ``source``."""
        ...

    def record_attempt(self, subgoal: Subgoal, step: int, policy: RetryPolicy | None = None) -> int:
        """Mark the start of an attempt at ``subgoal`` run under ``policy``; returns the attempt number (1-based)."""
        ...

    def record_verdict(self, subgoal: Subgoal, verdict: Verdict, step: int) -> Any:
        """Record the verifier's ``verdict`` on the running attempt at ``subgoal``; returns the stored record (a
        failure is classified by cause)."""
        ...

    def record_fact(self, obj: str, fact: str, step: int, source: str = "agent") -> None:
        """Record ``fact`` about object ``obj`` at ``step`` (e.g. ``knocked off green``), told by ``source``."""
        ...

    def record_event(self, kind: str, step: int, **data: Any) -> None:
        """Append a ``kind`` event at ``step`` with JSON-safe ``data`` to the event log."""
        ...

    def record_step(self, step: int, t: float, subgoal_id: str | None, action: Any, proprio: Any) -> None:
        """One control step (``action`` ``(A,)``, ``proprio`` ``(D,)``), kept where the memory persists."""
        ...

    def attempts(self, subgoal: Subgoal) -> int:
        """Number of attempts so far at a subgoal with the same signature (skill + args)."""
        ...

    def retry_policy(self, subgoal: Subgoal) -> RetryPolicy:
        """How to run the next attempt at ``subgoal`` (e.g. slowed down after repeated slips)."""
        ...

    def events(self) -> list[dict[str, Any]]:
        """The append-only event log, oldest first: ``{"kind", "step", ...}`` JSON-safe dicts."""
        ...

    def view(self) -> dict[str, Any]:
        """Compact, bounded, JSON-safe view: ``MemoryView.to_dict()`` (``{"done", "remaining", "failures", "facts",
        ...}``). Components read it through ``tandem.core.memory_view.MemoryView.from_dict`` and render it for a
        prompt with ``MemoryView.to_text``, the one renderer."""
        ...

    def snapshot(self) -> TaskMemory:
        """An independent read-only copy of the current state, for a planner running in another thread."""
        ...

    def open_store(self, path: str | Path | None) -> None:
        """Persist the following episodes to the SQLite store at ``path`` (None: stop persisting)."""
        ...

    def finish_episode(self, success: bool | None, summary: dict[str, Any] | None = None) -> None:
        """Mark the episode finished where the memory persists."""
        ...

    def save(self, path: str | Path) -> Path:
        """Write the episode (records, one per line) to ``path``; returns the path written."""
        ...


@runtime_checkable
class Planner(Protocol):
    """Decomposes the instruction into subgoals; replans from memory after a failure.

    Attributes:
        is_oracle: whether it reads ``Observation.privileged`` (simulator truth), e.g. the symbolic oracle planner.
        source: what memory records as the plan's source, e.g. ``"oracle"``, ``"vlm"``, ``"instruction"``.
        grounding: after ``reset``, the planner's reading of ``task.instruction`` (the goals it pursues and who
            grounded them), or None for a planner that grounds no goals (the flat ``instruction`` planner). A
            refused reading (``Grounding.refused``) ends the episode before anything moves.
    """

    @property
    def is_oracle(self) -> bool:
        """Whether it reads ``Observation.privileged`` (a class constant in every implementation)."""
        ...

    @property
    def source(self) -> str:
        """What memory records as the plan's source."""
        ...

    @property
    def grounding(self) -> Grounding | None:
        """The planner's reading of the instruction after ``reset`` (None: it grounds no goals)."""
        ...

    def reset(self, task: TaskSpec) -> None:
        """Start an episode of ``task`` (goals withheld unless the planner is an oracle) and read its instruction."""
        ...

    def plan(self, observation: Observation, memory: TaskMemory) -> Plan:
        """Return the current done/remaining plan. ``memory.view()`` holds failures to replan around.

        Never raises on bad model output: a planner falls back (e.g. keeps its current plan), returns that plan
        with ``Plan.fallback=True`` and records why in memory. A plan with ``Plan.claims_complete`` makes the agent
        confirm the goals (:meth:`read_goals`) before it claims success.
        """
        ...

    def read_goals(self, observation: Observation, memory: TaskMemory) -> GoalReading | None:
        """A fresh read, on ``observation``, of every goal of :attr:`grounding` and of the presence of every object
        those goals name (:class:`tandem.core.evidence.GoalReading`); None for a planner that reads no goals (it
        grounds none). The agent claims success only on ``AgentConfig.confirm_reads`` such reads that confirm every
        goal (:func:`tandem.core.evidence.confirmation_gaps`). A reader may record what it read in ``memory``.
        """
        ...


@runtime_checkable
class GoalProducer(Protocol):
    """Fills in a subgoal's goal image and/or keypoint trace (oracle render, learned, or VLM).

    Attributes:
        is_oracle: whether it reads the simulator (the teleport-render oracle does).
    """

    @property
    def is_oracle(self) -> bool:
        """Whether it reads the simulator's truth (a class constant in every implementation)."""
        ...

    def produce(self, subgoal: Subgoal, observation: Observation) -> Subgoal:
        """Return ``subgoal`` with ``goal_image`` ``uint8 (H, W, 3)`` and/or ``trace`` filled in."""
        ...


@runtime_checkable
class Verifier(Protocol):
    """Decides whether a subgoal succeeded, from the observations before and after it.

    Attributes:
        is_oracle: whether it reads ``Observation.privileged`` (the simulator's predicates or success flag).
    """

    @property
    def is_oracle(self) -> bool:
        """Whether it reads the simulator's truth (a class constant in every implementation)."""
        ...

    def reset(self, task: TaskSpec, memory: TaskMemory) -> None:
        """Start an episode of ``task``; a model verifier records its exchanges in ``memory``."""
        ...

    def verify(self, before: Observation, after: Observation, subgoal: Subgoal) -> Verdict:
        """The verdict on ``subgoal`` from the observations before and after its attempt (never raises on model
        output: an unusable reply is a failed verdict with confidence 0)."""
        ...


@runtime_checkable
class Executor(Protocol):
    """Low-level policy that turns (observation, subgoal) into actions.

    Chunked policies (Diffusion Policy) keep an action queue; ``set_subgoal`` drops it.

    Attributes:
        is_oracle: whether it reads the simulator (the scripted experts drive the live simulator).
    """

    @property
    def is_oracle(self) -> bool:
        """Whether it reads the simulator's truth (a class constant in every implementation)."""
        ...

    def reset(self) -> None:
        """Forget the episode: the action queue, the subgoal and any internal state."""
        ...

    def set_subgoal(self, subgoal: Subgoal, task: TaskSpec) -> None:
        """Condition on a new subgoal; queued actions from the previous one are dropped."""
        ...

    def select_action(self, observation: Observation) -> np.ndarray:
        """Next action, ``float32 (A,)``, within the controller's limits.

        Raises:
            NonFiniteActionError: if the policy produced NaN/inf.
        """
        ...

    def subgoal_done(self) -> bool:
        """Whether, as of the last ``select_action``, the executor believes the subgoal is complete."""
        ...


@runtime_checkable
class ObjectKeypointReader(Protocol):
    """Reads the task objects' 3-D keypoints off one observation, for an executor that conditions on them
    (``scene_input="objects_3d"`` of the track executor). Implementation: the learned state model
    (``planner_vlm.learned.state_model.StateModel``), which the runtime injects: components never import each other.

    Attributes:
        is_oracle: whether it reads ``Observation.privileged`` (a non-oracle executor refuses an oracle reader).
        camera: the camera whose image it reads (``Observation.images[camera]``).
        objects: the object names, in the order of the keypoints it returns.
        symmetries: object -> order ``m >= 1`` of its rotational symmetry about the vertical: its second keypoint
            is read only modulo ``2 pi / m`` (a cube: 4). Objects not named: 1.
    """

    @property
    def is_oracle(self) -> bool:
        """Whether it reads the simulator's truth (a class constant in every implementation)."""
        ...
    camera: str
    objects: tuple[str, ...]
    symmetries: dict[str, int]

    def object_keypoints_3d(self, observation: Observation) -> np.ndarray:
        """``float (O, 2, 3)`` m, world frame (the robot base frame on a robot): per object of :attr:`objects` its
        origin and the point 3 cm along its local x axis (:func:`tandem.core.dataset_schema.object_keypoints`).

        Raises:
            ConfigError: the observation lacks :attr:`camera`'s image.
        """
        ...


def require_protocol(component: object, protocol: type, role: str) -> None:
    """Refuse ``component`` as ``role`` (e.g. ``"planner"``) unless it has every member of ``protocol``.

    Raises:
        ConfigError: naming the component's class, the role and the missing members (e.g. ``is_oracle``).
    """
    members = sorted(getattr(protocol, "__protocol_attrs__", ()))
    missing = [m for m in members if not hasattr(component, m)]
    if missing:
        raise ConfigError(f"{type(component).__name__} cannot be the {role}: it lacks {', '.join(missing)} of "
                          f"tandem.core.protocols.{protocol.__name__} (members: {', '.join(members)})")
