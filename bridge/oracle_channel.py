"""The SIM-ONLY oracle side channel of a loopback rehearsal (never used with a real robot).

A real robot has no ground truth, so ``RobotEnv`` never fills ``Observation.privileged`` from robot
data. To rehearse a deployment with the oracle planner, verifier and scripted executor, the
simulated robot publishes, on clearly named extra topics (JSON in ``std_msgs/String``):

* ``/tandem/oracle/privileged``: ``{"stamp", "step", "privileged", "success", "episode", "judge"}`` every step:
  the simulator's predicates/object poses (no goals), the task-success flag, and the judge's reading of the
  episode's instruction, ``judge = {"episode", "instruction", "goals", "refused"}``;
* ``/tandem/oracle/episode``: the bridge's request ``{"episode": id, "instruction"}`` at each ``RobotEnv.reset``:
  the simulated robot's judge reads the instruction the bridge runs (the task's reference reading), the scene is
  reset, and ``privileged`` messages carry ``"episode": id`` from then on. The goals thus come from the user's
  words, never from the channel's own draw; only the privileged oracle components plan or verify by them;
* ``/tandem/oracle/waypoints``: the scripted expert's waypoints for a subgoal, answering a request
  ``{"seq", "subgoal"}`` on ``/tandem/oracle/subgoal``.

The robot commands themselves never use this channel: they are computed on the bridge side from the
observation received over the normal topics, and go through the safety layer to the normal command
topics. A trained executor (``executor=diffusion``) needs none of it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from bridge import conversions as cv
from bridge.errors import MalformedMessageError, MissingTopicError
from bridge.transport import Transport
from tandem.core.types import to_jsonable

PRIVILEGED_TOPIC = "/tandem/oracle/privileged"
SUBGOAL_TOPIC = "/tandem/oracle/subgoal"
WAYPOINTS_TOPIC = "/tandem/oracle/waypoints"
EPISODE_TOPIC = "/tandem/oracle/episode"


class OracleChannelServer:
    """Sim side: answers waypoint requests with ``waypoints_fn(subgoal_json) -> dict`` (injected by the wiring).

    The answer is published as ``{"seq", **waypoints_fn(...)}`` or ``{"seq", "error"}``.
    Requests are queued by the transport thread and answered by :meth:`serve_pending` (called from
    the simulation loop, which owns the simulator).
    """

    def __init__(self, transport: Transport, waypoints_fn: Callable[[dict], dict]):
        self.transport, self.waypoints_fn = transport, waypoints_fn
        self._pending: list[dict] = []
        self._lock = threading.Lock()
        self._pub = transport.create_publisher(WAYPOINTS_TOPIC, "std_msgs/msg/String")
        transport.create_subscription(SUBGOAL_TOPIC, "std_msgs/msg/String", self._on_request, reliable=True)

    def _on_request(self, msg: Any) -> None:
        try:
            req = cv.msg_to_json(msg)
        except MalformedMessageError:
            return
        with self._lock:
            self._pending.append(req)

    def serve_pending(self) -> int:
        """Answer every queued request; returns how many."""
        with self._lock:
            reqs, self._pending = self._pending, []
        for req in reqs:
            try:
                ans = {"seq": req.get("seq"), **to_jsonable(self.waypoints_fn(req["subgoal"]))}
            except Exception as e:  # noqa: BLE001 - the error goes back to the requester
                ans = {"seq": req.get("seq"), "error": f"{type(e).__name__}: {e}"}
            self._pub(cv.json_to_msg(self.transport.msg_type, ans))
        return len(reqs)


class OracleChannelClient:
    """Bridge side: requests the scripted expert's waypoints for a subgoal and waits for the answer."""

    _seq = itertools.count(1)

    def __init__(self, transport: Transport):
        self.transport = transport
        self._answers: dict[int, dict] = {}
        self._cond = threading.Condition()
        self._pub = transport.create_publisher(SUBGOAL_TOPIC, "std_msgs/msg/String")
        transport.create_subscription(WAYPOINTS_TOPIC, "std_msgs/msg/String", self._on_answer, reliable=True)

    def _on_answer(self, msg: Any) -> None:
        try:
            ans = cv.msg_to_json(msg)
        except MalformedMessageError:
            return
        with self._cond:
            self._answers[ans.get("seq")] = ans
            self._cond.notify_all()

    def request(self, subgoal_json: dict, timeout_s: float = 5.0, resend_s: float = 0.5) -> dict:
        """Send ``{"seq", "subgoal"}`` and return the answer dict.

        Raises:
            MissingTopicError: no answer within ``timeout_s`` (is the simulated robot running?).
            MalformedMessageError: the simulated robot answered with an error (its message is included).
        """
        seq = next(self._seq)
        payload = cv.json_to_msg(self.transport.msg_type, {"seq": seq, "subgoal": subgoal_json})
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while seq not in self._answers:
                self._pub(payload)  # re-sent until answered: the reader may still be discovering us
                left = deadline - time.monotonic()
                if left <= 0:
                    raise MissingTopicError(f"no answer on {WAYPOINTS_TOPIC} within {timeout_s} s")
                self._cond.wait(min(resend_s, left))
            ans = self._answers.pop(seq)
        if "error" in ans:
            raise MalformedMessageError(f"the simulated robot could not plan waypoints: {ans['error']}")
        return ans
