"""The scripted experts' waypoints, and the 3-D trace they make: one conversion for the oracle and the learned planner.

An expert plans a skill as a list of :class:`Waypoint` (grip-site targets); its tracker (``sim.experts``) follows
them. :func:`waypoint_trace_3d` turns such a list into the subgoal's :class:`~tandem.core.types.Trace3D`, with the yaw
the tracker will command at each waypoint (:func:`resolved_yaws`). The oracle's goal producer
(``sim.goal_render.OracleGoalProducer``) calls it with the simulator's state; the learned planner calls it with the
waypoints of an expert's geometry over the perceived state (:class:`tandem.core.pick_geometry.PickGeometry`).

Conventions: positions in m, world frame, z up; yaw in rad about world +z from world +x, the direction of the finger
axis with the gripper pointing down; gripper -1 open, +1 closed (robosuite's OSC convention). numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tandem.core.types import Trace3D
from tandem.core.wrist import PANDA_WRIST_YAW_SIGN, resolve_yaw


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
        tilt: how far (rad) the gripper's approach axis leans away from straight down, the fingertips ahead toward
            ``tilt_toward``; 0 (the default, every skill but a few pushes) keeps it pointing straight down. Traces
            (:func:`waypoint_trace_3d`) do not carry it.
        tilt_toward: the world-horizontal direction (rad about world +z from world +x) the fingertips lean toward.
    """

    pos: np.ndarray
    yaw: float = 0.0
    gripper: float = -1.0
    tol: float = 0.01
    max_step: float = 0.05
    hold: int = 0
    label: str = ""
    tilt: float = 0.0
    tilt_toward: float = 0.0


def resolved_yaws(waypoints: list[Waypoint], current_yaw: float, wrist_q: float | None) -> np.ndarray:
    """The yaw (rad) the expert's tracker will command at each waypoint, predicted from the current state.

    The tracker resolves each waypoint's yaw modulo pi when it becomes active
    (:func:`tandem.core.wrist.resolve_yaw`, nearest to the gripper's yaw then, keeping the wrist off its limit).
    Assuming each waypoint's yaw is reached before the next becomes active, this replays that choice along the
    list, so the result is continuous (not wrapped): the turn between consecutive waypoints, and its direction, is
    the difference of consecutive entries.

    Args:
        waypoints: the expert's waypoints, in order.
        current_yaw: the gripper's finger-axis yaw now (rad, :func:`tandem.core.geometry.yaw_of_mat`).
        wrist_q: Panda joint 7 now (rad), or None to ignore the joint limit.

    Returns:
        ``float64 (len(waypoints),)`` rad.

    Raises:
        ValueError: a non-finite yaw (from :func:`~tandem.core.wrist.resolve_yaw`).
    """
    out = np.zeros(len(waypoints))
    yaw, q = float(current_yaw), wrist_q
    for i, wp in enumerate(waypoints):
        nxt = resolve_yaw(wp.yaw, yaw, q)
        if q is not None:
            q = q + PANDA_WRIST_YAW_SIGN * (nxt - yaw)
        out[i] = yaw = nxt
    return out


def waypoint_trace_3d(eef: np.ndarray, current_yaw: float, wrist_q: float | None,
                      waypoints: list[Waypoint]) -> Trace3D:
    """The 3-D trace of an expert's plan: the grip site now, then each waypoint, with resolved yaws and commands.

    Args:
        eef: ``(3,)`` grip-site position now (m, world frame).
        current_yaw: the gripper's finger-axis yaw now (rad).
        wrist_q: Panda joint 7 now (rad), or None.
        waypoints: the plan (:class:`Waypoint`), in order.

    Returns:
        :class:`~tandem.core.types.Trace3D` of ``len(waypoints) + 1`` rows: row 0 is the grip site now, at the
        current yaw, with the first waypoint's gripper command (open, -1, for an empty plan).

    Raises:
        ValueError: a non-finite yaw, or ``eef`` not of shape ``(3,)`` (from :class:`~tandem.core.types.Trace3D`).
    """
    yaws = resolved_yaws(waypoints, current_yaw, wrist_q)
    points = np.stack([np.asarray(eef, np.float64)] + [np.asarray(w.pos, dtype=np.float64) for w in waypoints])
    grip = [waypoints[0].gripper if waypoints else -1.0] + [float(w.gripper) for w in waypoints]
    return Trace3D(points=points, yaw=np.concatenate([[current_yaw], yaws]), gripper=np.asarray(grip))
