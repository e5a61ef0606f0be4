"""Oracle (privileged, symbolic) planner: plans from the simulator's ground-truth predicates.

It reads only the :class:`~tandem.core.types.TaskSpec` and ``observation.privileged["predicates"]``
(simulator ground truth, so it is named *oracle*; it cannot run on a real robot). It serves as the
upper-bound baseline and as the source of plan labels for training.

The symbolic search is :class:`planner_vlm.goal_regression.GoalRegressionPlanner` (goal regression over the
task's ordered goal predicates, LoHo-Manip's done/remaining form; its docstring describes the algorithm and the
subgoal ids). The learned planner runs the same search over predicted predicates.
"""

from __future__ import annotations

from typing import Any, ClassVar

from planner_vlm.goal_regression import GoalRegressionPlanner
from tandem.core.errors import ConfigError, UnknownNameError
from tandem.core.evidence import GoalRead, GoalReading, predicate_args
from tandem.core.grounding import Grounding
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Plan, TaskSpec


class OraclePlanner(GoalRegressionPlanner):
    """Symbolic planner over ``TaskSpec.goals`` and the simulator's predicates (implements ``Planner``).

    Args:
        grasp_skill: the skill that grasps an object before it is placed (``"pick"``, predicate
            ``grasped({0})``). If the task has no such skill, no pick subgoals are emitted.
        id_prefix: prefix of subgoal ids (``"sg"`` -> ``"sg1"``, ``"sg2"``, ...).

    Raises (from ``reset``):
        ConfigError: if a goal predicate matches no skill template, or a placing skill's place cannot be
            found among ``TaskSpec.targets``.

    Attributes:
        is_oracle: True: it plans from ``Observation.privileged["predicates"]``.
        source: ``"oracle"`` (recorded in memory with every plan).
    """

    is_oracle: ClassVar[bool] = True
    source: ClassVar[str] = "oracle"
    grounding: Grounding | None = None

    def goals_of(self, task: TaskSpec) -> tuple[str, ...]:
        """``task.goals``, the judge's reading of the instruction (privileged), recorded as grounded by the oracle."""
        goals = tuple(task.goals)
        self.grounding = Grounding(instruction=task.instruction, goals=goals, ordered=True, confidence=1.0,
                                   grounded_by="oracle")
        return goals

    def plan(self, observation: Observation, memory: TaskMemory) -> Plan:
        """Return the done/remaining plan for the current ground-truth predicates.

        Args:
            observation: must carry ``privileged["predicates"]``: ground predicate string -> bool.
            memory: the episode's task memory (``attempts()`` and ``view()`` are read, nothing is written).

        Raises:
            ConfigError: if ``reset`` was not called, or ``observation.privileged`` is None / lacks
                ``"predicates"`` (the oracle planner needs simulator ground truth).
            UnknownNameError: if a goal or ``grasped(x)`` predicate is missing from the predicates
                (the message lists the known ones).
        """
        self._require_task()
        return self.plan_from_predicates(self._predicates(observation), memory)

    def read_goals(self, observation: Observation, memory: TaskMemory) -> GoalReading:
        """Every goal as the simulator's predicates say (always confident); every goal object checked present: the
        simulator's truth is the judge, and a goal over an object taken away reads false there.

        Raises:
            ConfigError / UnknownNameError: as :meth:`plan`.
        """
        task = self._require_task()
        preds = self._predicates(observation)
        goals = self.grounding.goals if self.grounding is not None else ()
        missing = [g for g in goals if g not in preds]
        if missing:
            raise UnknownNameError("goal predicate", missing[0], sorted(preds))
        objects = tuple(dict.fromkeys(a for g in goals for a in predicate_args(g) if a in task.objects))
        return GoalReading(step=observation.step, source=self.source, checked_objects=objects,
                           goals=tuple(GoalRead(g, bool(preds[g]), True, float(bool(preds[g]))) for g in goals))

    @staticmethod
    def _predicates(observation: Observation) -> dict[str, Any]:
        priv = observation.privileged
        if priv is None:
            raise ConfigError("the oracle planner needs simulator ground truth: Observation.privileged is None "
                              "(use a VLM or learned planner where there is no simulator)")
        preds = priv.get("predicates") if isinstance(priv, dict) else None
        if not isinstance(preds, dict):
            raise ConfigError("the oracle planner needs simulator ground truth: Observation.privileged has no "
                              f"'predicates' dict (keys: {sorted(priv) if isinstance(priv, dict) else type(priv)})")
        return preds
