"""The values a task and its four parts exchange: skill -> predicate templates, expert waypoints, a drawn episode.

Conventions: positions in m, world frame; yaw in rad about world +z; gripper -1 open, +1 closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tandem.core.types import TaskSpec
from tandem.core.waypoints import Waypoint

__all__ = ["SKILL_PREDICATES", "TaskEpisode", "Waypoint"]

#: Skill name -> predicate template shared by all tasks (``{0}``, ``{1}`` are the subgoal args).
SKILL_PREDICATES: dict[str, str] = {
    "pick": "grasped({0})",
    "place": "in_bin({0})",
    "stack": "on({0},{1})",
    "insert": "on_peg({0},{1})",
}


@dataclass
class TaskEpisode:
    """What ``sample_spec`` draws for one seed: the spec plus task-private choices (e.g. object subset)."""

    spec: TaskSpec
    choices: dict[str, Any] = field(default_factory=dict)
