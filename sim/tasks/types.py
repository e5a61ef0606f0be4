"""The values a task and its four parts exchange: skill -> predicate templates (``SKILL_PREDICATES``, defined in
:mod:`tandem.core.vocabulary`), expert waypoints, a drawn episode.

Conventions: positions in m, world frame; yaw in rad about world +z; gripper -1 open, +1 closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tandem.core.types import TaskSpec
from tandem.core.vocabulary import SKILL_PREDICATES
from tandem.core.waypoints import Waypoint

__all__ = ["SKILL_PREDICATES", "TaskEpisode", "Waypoint"]


@dataclass
class TaskEpisode:
    """What ``sample_spec`` draws for one seed: the spec plus task-private choices (e.g. object subset)."""

    spec: TaskSpec
    choices: dict[str, Any] = field(default_factory=dict)
