"""Which of a parallel gripper's two equivalent grasp yaws to turn to, given the wrist joint's limit.

A parallel gripper is symmetric under a half turn about its approach axis: a grasp at yaw ``a`` and one at
``a + pi`` close the fingers on the same faces. Which of the two a controller commands decides which way the wrist
turns, and the Franka Panda's wrist (joint 7) turns only ``+-2.8973`` rad. A turn that runs into the limit stalls
the hand, and OSC then swings it the long way round, off its path. The scripted experts (``sim.experts``) and the
learned planner (:mod:`planner_vlm.learned.learned_planner`) both choose with :func:`resolve_yaw`, so that a learned
trace turns the way its demonstrations did.

Conventions: yaw is the direction (rad, about world +z, from world +x) of the finger axis with the gripper pointing
down; ``wrist_q`` is joint 7's angle (rad, as the robot reports it). Numbers: Franka's datasheet (joint 7 range
``[-2.8973, 2.8973]`` rad) and robosuite's Panda model.
"""

from __future__ import annotations

import math

from tandem.core.geometry import wrap_pi

#: The Franka Panda's (and FR3's) wrist joint 7 limit, rad (symmetric: ``[-limit, limit]``).
PANDA_WRIST_LIMIT_RAD = 2.8973
#: Room (rad) kept from the limit when choosing between a yaw and its half turn (absorbs the base's yaw changes).
WRIST_MARGIN_RAD = 0.3
#: d(joint 7)/d(yaw) with the gripper pointing down (measured on robosuite's Panda: turning the fingers by +a rad
#: about world +z changes joint 7 by about -a rad).
PANDA_WRIST_YAW_SIGN = -1.0


def nearest_symmetric_yaw(target: float, current: float) -> float:
    """``target + k*pi`` nearest to ``current`` (rad; not wrapped: ``current`` plus a turn in ``[-pi/2, pi/2]``)."""
    d = wrap_pi(target - current)
    if d > math.pi / 2:
        d -= math.pi
    elif d < -math.pi / 2:
        d += math.pi
    return current + d


def predicted_wrist(wrist_q: float, yaw: float, current: float, sign: float = PANDA_WRIST_YAW_SIGN) -> float:
    """The wrist joint's angle (rad) after the gripper turns from yaw ``current`` to ``yaw`` (rad, not wrapped):
    ``wrist_q + sign * (yaw - current)``, with the gripper pointing down. Raises nothing (NaN in, NaN out)."""
    return wrist_q + sign * (yaw - current)


def resolve_yaw(target: float, current: float, wrist_q: float | None, limit: float = PANDA_WRIST_LIMIT_RAD,
                margin: float = WRIST_MARGIN_RAD, sign: float = PANDA_WRIST_YAW_SIGN) -> float:
    """The yaw to command for a grasp at ``target`` modulo a half turn, from the gripper's yaw ``current``.

    Among ``target + k*pi`` (the three nearest ``current``), the one nearest ``current`` whose predicted wrist angle
    ``wrist_q + sign * (yaw - current)`` stays ``margin`` inside ``[-limit, limit]``; where none does, the one that
    leaves the wrist the most room. Without a wrist angle (None or NaN: a robot that does not report it), the
    nearest.

    Args:
        target: the grasp's yaw (rad, any multiple of pi may be added).
        current: the gripper's yaw now (rad).
        wrist_q: the wrist joint's angle now (rad), or None.
        limit: the wrist joint's limit (rad, > 0). margin: the room to keep (rad, >= 0). sign: d(joint)/d(yaw).

    Returns:
        The yaw to command (rad), not wrapped: the turn from ``current`` is the difference.

    Raises:
        ValueError: a non-finite ``target`` or ``current``, or a ``limit`` that is not > 0.
    """
    if not (math.isfinite(target) and math.isfinite(current)):
        raise ValueError(f"resolve_yaw needs finite yaws, got target={target}, current={current}")
    if not limit > 0:
        raise ValueError(f"resolve_yaw needs a wrist limit > 0 rad, got {limit}")
    near = nearest_symmetric_yaw(target, current)
    if wrist_q is None or not math.isfinite(wrist_q):
        return near
    cands = sorted((near + k * math.pi for k in (-1, 0, 1)), key=lambda y: abs(y - current))
    for y in cands:
        if abs(predicted_wrist(wrist_q, y, current, sign)) <= limit - margin:
            return y
    return min(cands, key=lambda y: abs(predicted_wrist(wrist_q, y, current, sign)))


__all__ = ["PANDA_WRIST_LIMIT_RAD", "PANDA_WRIST_YAW_SIGN", "WRIST_MARGIN_RAD", "nearest_symmetric_yaw",
           "predicted_wrist", "resolve_yaw"]
