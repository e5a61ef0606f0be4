"""A task's skill geometry over *pointed* objects: the protocol the VLM planner's pointing mode
(``planner=vlm planner.geometry=pointing``) builds a subgoal's 3-D trace with. No task is named here.

A pointing VLM gives, per object argument of a subgoal, two image points: the object's top centre and a point on its
top face toward the middle of its local +x side. The pointing component (``planner_vlm.pointing``) lifts them to 3-D
with the camera's depth and calibration into an :class:`Anchor` per argument. The task's implementation of
:class:`PointGeometry` (beside its task, ``sim/tasks/<task>/waypoint_geometry.py``, the same waypoint geometry its
scripted expert plans with; the runtime hands it in, as it hands the learned planner its pick geometry reader) turns
the anchors into the expert's waypoints; :func:`tandem.core.waypoints.waypoint_trace_3d` makes the trace.

Conventions: positions in m, world frame, z up; yaw in rad about world +z from world +x. numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from tandem.core.waypoints import Waypoint


@dataclass(frozen=True)
class Anchor:
    """One pointed object, lifted to 3-D.

    Attributes:
        top: ``float64 (3,)`` the top centre of the object (m, world frame).
        yaw: the direction (rad about world +z) from the top centre to the pointed side; an object's symmetry makes
            it meaningful modulo its period (a cube's: pi / 2).
    """

    top: np.ndarray
    yaw: float


#: ``clearance(point (3,) m, yaw rad) -> float`` m: how clear of other things a grasp at ``point`` with the fingers
#: along ``yaw`` is (larger: clearer), as the pointing component measures it in the depth image.
Clearance = Callable[[np.ndarray, float], float]


class PointGeometry(Protocol):
    """A task's skill waypoints over pointed objects (see the module docstring)."""

    #: The task it is for (``"stack_three"``).
    task: ClassVar[str]

    def pointed_args(self, skill: str, args: Sequence[str]) -> tuple[str, ...]:
        """The arguments of ``skill(args)`` the VLM points at, in the order of its points (two points each).

        Raises:
            UnknownSkillError: a skill the geometry does not plan.
        """
        ...

    def waypoints(self, skill: str, args: Sequence[str], anchors: dict[str, Anchor], eef: np.ndarray, eef_yaw: float,
                  held: bool, clearance: Clearance | None = None) -> list[Waypoint] | str:
        """The expert's waypoints of ``skill(args)`` over ``anchors`` (one per :meth:`pointed_args`).

        Args:
            eef: ``(3,)`` the grip site now (m, world). eef_yaw: its finger yaw now (rad).
            held: whether the gripper holds the skill's object now (a place then starts from the hand).
            clearance: scores candidate grasp yaws (None: the first candidate).

        Returns:
            The waypoints, or one line saying why the geometry cannot plan it (e.g. an anchor missing).
        """
        ...


__all__ = ["Anchor", "Clearance", "PointGeometry"]
