"""Run an episode function against a :class:`bridge.robot_env.RobotEnv` so the robot always ends stopped.

Any exception from the planner, executor or verifier (or anything else in the loop) commands a stop
and is recorded before it propagates; a normal end also commands a stop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def run_guarded[T](env: Any, episode_fn: Callable[[], T]) -> T:
    """Call ``episode_fn()``; afterwards, or on any exception, ``env.stop(reason)``.

    ``env`` needs a ``stop(reason: str)`` method (:meth:`RobotEnv.stop`). If the result has a
    ``summary["failure"]`` (``tandem.runtime.rollout.EpisodeResult``), it is the recorded reason.

    Raises:
        whatever ``episode_fn`` raised, after the stop was sent.
    """
    try:
        result = episode_fn()
    except BaseException as e:
        env.stop(f"agent loop raised {type(e).__name__}: {e}")
        raise
    summary = getattr(result, "summary", None)
    failure = summary.get("failure") if isinstance(summary, dict) else None
    env.stop(f"episode ended ({'failure: ' + str(failure) if failure else 'ok'})")
    return result
