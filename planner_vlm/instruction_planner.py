"""Instruction planner: the whole task as ONE subgoal whose text is the task's instruction (no decomposition).

This is the "planner" of a flat policy (the flat Diffusion Policy baseline, a LeRobot policy trained on whole
episodes): it does not plan at all. It reads only the :class:`~tandem.core.types.TaskSpec` and the task memory,
never ``Observation.privileged``, so it runs on a real robot too.

* ``plan()`` returns ``Plan(done=[], remaining=[Subgoal(skill="task", args=(), text=task.instruction)])``:
  no goal image, no keypoint trace. After a failed verdict, replanning returns the same single subgoal (the
  agent's ``max_attempts_per_subgoal`` decides whether it is tried again).
* Once memory records a success verdict for it, the subgoal moves to ``done`` and ``remaining`` is empty: the
  plan claims the task complete. It grounds no goals and reads none (``read_goals`` is None), so the agent cannot
  confirm that claim and never claims success for it (it ends ``not_confirmed``): the env's success flag is the only
  judge of a flat policy's episode.

The subgoal's signature is ``"task()"`` (skill :data:`TASK_SKILL`, no args); it is not one of the task's
``TaskSpec.skills``, so the predicate-based oracle verifier cannot judge it: pair this planner with the
``oracle_task`` verifier (:class:`planner_vlm.oracle_task_verifier.OracleTaskSuccessVerifier`, simulator task
success) or a model verifier. Subgoal ids are ``"task<n>"`` for attempt ``n`` (1-based).
"""

from __future__ import annotations

from typing import ClassVar

from tandem.core.errors import ConfigError
from tandem.core.memory_view import MemoryView
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec

#: Skill name of the single whole-task subgoal.
TASK_SKILL = "task"


class InstructionPlanner:
    """One subgoal = the whole instruction (implements ``tandem.core.protocols.Planner``). Non-privileged.

    Attributes:
        is_oracle: False: it never reads ``Observation.privileged``.
        source: ``"instruction"`` (recorded in memory with every plan).
    """

    is_oracle: ClassVar[bool] = False
    source: ClassVar[str] = "instruction"
    grounding: ClassVar[None] = None  # it grounds no goals: the flat policy reads the words itself

    def __init__(self) -> None:
        self.task: TaskSpec | None = None

    def reset(self, task: TaskSpec) -> None:
        """Start an episode of ``task``.

        Raises:
            ConfigError: if ``task`` is not a TaskSpec or its instruction is empty.
        """
        if not isinstance(task, TaskSpec):
            raise ConfigError(f"InstructionPlanner.reset needs a TaskSpec, got {type(task).__name__}")
        if not task.instruction or not task.instruction.strip():
            raise ConfigError(f"task {task.name!r} has an empty instruction; the instruction planner has nothing "
                              "to condition the executor on")
        self.task = task

    def read_goals(self, observation: Observation, memory: TaskMemory) -> None:
        """None: this planner grounds no goals, so it has none to read (the agent cannot confirm success with it)."""
        return None

    def plan(self, observation: Observation, memory: TaskMemory) -> Plan:
        """The single whole-task subgoal, in ``remaining`` until memory records its success, then in ``done``.

        Args:
            observation: unused (the plan does not depend on the scene).
            memory: read through ``attempts()`` and its view's ``last_outcome`` (``MemoryView``); nothing is
                written.

        Raises:
            ConfigError: if ``reset`` was not called.
        """
        task = self.task
        if task is None:
            raise ConfigError("InstructionPlanner.plan called before reset(task)")
        sg = Subgoal(id="", skill=TASK_SKILL, args=(), text=task.instruction)
        n = int(memory.attempts(sg))
        outcome = MemoryView.from_dict(memory.view()).last_outcome.get(sg.signature)
        if outcome == "success":
            sg.id = f"task{max(n, 1)}"
            return Plan(done=[sg], remaining=[], rationale="the whole task was judged achieved")
        attempt_no = n if outcome == "running" and n > 0 else n + 1
        sg.id = f"task{attempt_no}"
        why = "flat policy: the whole instruction is one subgoal"
        if n and outcome != "running":
            why += f"; {n} earlier attempt(s), last {outcome or 'ended'}"
        return Plan(done=[], remaining=[sg], rationale=why)
