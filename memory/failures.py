"""Failure cause categories from a failed verdict (heuristics over the verdict's reason text).

Only what the agent itself knows is used: the subgoal, the verdict and whether the attempt's step budget ran
out. Simulator events (a perturbation the env reports) are *not* used, so a failure is labelled the same way in
simulation and on a robot, and lessons learned from the labels transfer.

Rules, first match wins (``reason`` compared in lower case):

1. the agent's budget prefix ``"step budget of N spent"`` -> ``timeout``;
2. ``unreachable``, ``out of reach``, ``cannot reach``, ``could not reach``, ``no ik solution`` -> ``unreachable``;
3. ``wrong object``, ``other object``, ``instead of`` -> ``wrong_object``;
3b. a knock, as the verifier's or the agent's reads show it: ``displaced`` (another object moved during the attempt,
   e.g. the learned verifier's ``"displaced: green moved 0.06 m during the attempt"``) or ``moved away after`` (the
   agent read the subgoal achieved earlier in the attempt, then not: ``"moved away after it was read achieved at step
   N"``) -> ``object_moved``, before the slip rules below, which would read the object's distance from the gripper
   as a slip;
4. for the grasp skill (``pick``): the oracle verifier's ``"moved D m during the attempt"`` with D >= 0.03 m ->
   ``object_moved`` (pushed away by the fingers); otherwise ``grasp_slipped`` (not held after the grasp);
5. for a placing skill: ``"still grasped"`` -> ``unknown`` (not released); the object ``"D m from the gripper"``
   with D > 0.10 m after it was carried -> ``grasp_slipped`` (it left the gripper before its target);
6. free-text keywords (VLM verifiers): ``slip``, ``dropped``, ``fell out``, ``not holding`` -> ``grasp_slipped``;
   ``knocked``, ``pushed``, ``moved``, ``displaced`` -> ``object_moved``;
7. otherwise ``unknown``.

The thresholds and phrases follow :mod:`planner_vlm.oracle_verifier`'s reason format (positions in m, world
frame); a verifier may also state the cause itself (``TaskMemoryV1.record_verdict(..., cause=...)``).
"""

from __future__ import annotations

import re

from memory.records import FailureCause

#: Distance (m) an object must move during a grasp attempt to count as pushed away rather than missed.
PUSHED_M = 0.03
#: Distance (m) between object and gripper after a placing attempt above which the object left the gripper.
LEFT_GRIPPER_M = 0.10

_MOVED = re.compile(r"moved (\d+(?:\.\d+)?) m during the attempt")
_FROM_GRIPPER = re.compile(r"(\d+(?:\.\d+)?) m from the gripper")
_UNREACHABLE = ("unreachable", "out of reach", "cannot reach", "could not reach", "no ik solution")
_WRONG = ("wrong object", "other object", "instead of")
_SLIP_WORDS = ("slip", "dropped", "fell out", "not holding", "lost the grasp")
_MOVED_WORDS = ("knocked", "pushed", "moved", "displaced")
#: Phrases of a knock that win over the slip rules: another object displaced, or the object read achieved, then not.
_KNOCK_PHRASES = ("displaced", "moved away after")


def classify_failure(signature: str, reason: str, grasp_skill: str = "pick") -> tuple[FailureCause, str]:
    """Cause category and a short detail for a failed attempt at ``signature`` (e.g. ``"stack(red,blue)"``).

    Args:
        signature: ``skill(args)`` of the failed subgoal.
        reason: the failed verdict's reason (with the agent's ``"step budget of N spent; "`` prefix if any).
        grasp_skill: the task's grasp skill name.

    Returns:
        ``(cause, detail)``; see the module docstring for the rules.
    """
    r = (reason or "").lower()
    skill = signature.partition("(")[0]
    if r.startswith("step budget of"):
        return FailureCause.TIMEOUT, "the attempt's step budget ran out"
    if any(w in r for w in _UNREACHABLE):
        return FailureCause.UNREACHABLE, "the verifier reports the target out of reach"
    if any(w in r for w in _WRONG):
        return FailureCause.WRONG_OBJECT, "the verifier reports another object"
    if any(p in r for p in _KNOCK_PHRASES):
        return FailureCause.OBJECT_MOVED, ("the reads show a knock: an object displaced, or the object moved away "
                                           "after it was read in place")
    moved = _MOVED.search(r)
    moved_m = float(moved.group(1)) if moved else None
    if skill == grasp_skill:
        if moved_m is not None and moved_m >= PUSHED_M:
            return FailureCause.OBJECT_MOVED, f"the object was pushed {moved_m:.2f} m during the grasp"
        if moved_m is not None or "did not move during the attempt" in r:
            return FailureCause.GRASP_SLIPPED, "the object is not held after the grasp"
    else:
        if "still grasped" in r:
            return FailureCause.UNKNOWN, "the object was not released"
        dist = _FROM_GRIPPER.search(r)
        if dist and float(dist.group(1)) > LEFT_GRIPPER_M and (moved_m is None or moved_m >= PUSHED_M):
            return FailureCause.GRASP_SLIPPED, (f"the object is {float(dist.group(1)):.2f} m from the gripper: it "
                                                "left the gripper before reaching its target")
    if any(w in r for w in _SLIP_WORDS):
        return FailureCause.GRASP_SLIPPED, "the verifier reports the object slipped or dropped"
    if any(w in r for w in _MOVED_WORDS):
        return FailureCause.OBJECT_MOVED, "the verifier reports the object moved"
    return FailureCause.UNKNOWN, "no cause could be told from the verdict"


__all__ = ["LEFT_GRIPPER_M", "PUSHED_M", "classify_failure"]
