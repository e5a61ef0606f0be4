"""The evidence a success claim rests on: one read of every grounded goal and of the goal objects' presence.

A planner reads the scene (:meth:`tandem.core.protocols.Planner.read_goals`) and says, per goal predicate of its
grounding (e.g. ``on(red,green)``), whether it holds, with what probability and whether that is confident, and which
goal objects it found absent. The agent (:mod:`tandem.runtime.agent`) claims success only when
``confirmation_gaps`` of every one of ``AgentConfig.confirm_reads`` such reads, taken ``AgentConfig.confirm_gap_steps``
control steps apart, is empty.

This module imports nothing from the project.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GoalRead:
    """One goal predicate as read on one observation.

    Attributes:
        goal: the ground predicate, e.g. ``"on(red,green)"``.
        holds: whether it reads true (e.g. a calibrated probability at least the planner's threshold).
        confident: whether the read is confident enough to end the task on (e.g. probability at least the learned
            planner's ``completion_confidence``); the simulator's truth is always confident.
        probability: in [0, 1]: the probability that it holds (1.0 or 0.0 for the simulator's truth).
    """

    goal: str
    holds: bool
    confident: bool
    probability: float

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ``{"goal", "holds", "confident", "probability"}`` (probability rounded to 4 places)."""
        return {"goal": self.goal, "holds": bool(self.holds), "confident": bool(self.confident),
                "probability": round(float(self.probability), 4)}


@dataclass(frozen=True)
class GoalReading:
    """A read of the goals and of the goal objects' presence on one observation.

    Attributes:
        step: the control step of the observation read.
        goals: one :class:`GoalRead` per goal the reader knows.
        checked_objects: the objects whose presence was checked.
        absent: ``(object, why)`` for each checked object read as absent, e.g. ``("milk", "presence 0.003 < 0.02")``.
        source: who read it, e.g. ``"learned"``, ``"oracle"``, ``"vlm"``.
    """

    step: int
    goals: tuple[GoalRead, ...]
    checked_objects: tuple[str, ...]
    absent: tuple[tuple[str, str], ...] = ()
    source: str = ""

    def read_of(self, goal: str) -> GoalRead | None:
        """The read of ``goal``, or None where this reading has none."""
        return next((g for g in self.goals if g.goal == goal), None)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ``{"step", "source", "goals", "checked_objects", "absent"}``."""
        return {"step": int(self.step), "source": self.source, "goals": [g.to_json() for g in self.goals],
                "checked_objects": list(self.checked_objects), "absent": [list(a) for a in self.absent]}


def predicate_args(predicate: str) -> tuple[str, ...]:
    """The arguments of a ground predicate: ``"on(red,green)"`` -> ``("red", "green")``; ``"done"`` -> ``()``."""
    _, _, rest = predicate.partition("(")
    return tuple(a.strip() for a in rest.rstrip(")").split(",") if a.strip())


def confirmation_gaps(reading: GoalReading | None, goals: Sequence[str], objects: Sequence[str]) -> list[str]:
    """Why ``reading`` does not confirm that every goal of ``goals`` is achieved; empty when it does.

    It confirms when there are goals, each reads true and confident, and each of ``objects`` (the goal objects) was
    checked for presence and not found absent.

    Args:
        reading: the read, or None (a reader that cannot read goals).
        goals: the grounded goal predicates, e.g. ``("on(red,green)",)``.
        objects: the objects the goals name (those that are objects of the task, not places).

    Returns:
        one short reason per gap, e.g. ``["on(blue,red) not confident (p=0.72)", "milk absent: presence 0.003"]``.
    """
    if reading is None:
        return ["the planner reads no goals: nothing to confirm success with"]
    if not goals:
        return ["no grounded goals: nothing to confirm success with"]
    gaps: list[str] = []
    for goal in goals:
        read = reading.read_of(goal)
        if read is None:
            gaps.append(f"{goal} not read")
        elif not read.holds:
            gaps.append(f"{goal} reads false (p={read.probability:.2f})")
        elif not read.confident:
            gaps.append(f"{goal} not confident (p={read.probability:.2f})")
    absent = dict(reading.absent)
    for obj in objects:
        if obj in absent:
            gaps.append(f"{obj} absent: {absent[obj]}")
        elif obj not in reading.checked_objects:
            gaps.append(f"{obj} presence not checked")
    return gaps


__all__ = ["GoalRead", "GoalReading", "confirmation_gaps", "predicate_args"]
