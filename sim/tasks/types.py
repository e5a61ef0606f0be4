"""The values a task and its four parts exchange: skill -> predicate templates, expert waypoints, a drawn episode.

Conventions: positions in m, world frame; yaw in rad about world +z; gripper -1 open, +1 closed.
"""

from __future__ import annotations

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
