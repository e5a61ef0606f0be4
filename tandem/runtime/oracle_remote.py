"""SIM-ONLY bridge rehearsal executor: the scripted expert, its privileged waypoints fetched over the oracle side
channel and its actions computed here from the proprio the bridge receives.

It sits in the runtime because it joins two components: ``bridge`` (the oracle channel client) and ``sim`` (the
waypoint tracker). It is an oracle: the waypoints come from the simulator's truth.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from tandem.core.errors import TandemError
from tandem.core.geometry import quat_to_mat
from tandem.core.types import Observation, Subgoal, TaskSpec


class OracleRemoteExecutor:
    """The scripted expert over the bridge (implements ``tandem.core.protocols.Executor``; an oracle).

    Its waypoints for a subgoal come from the simulated robot (:class:`bridge.oracle_channel.OracleChannelClient`);
    its actions are ``sim.experts.WaypointTracker`` actions from the received proprio. Never usable on a real robot
    (there is no simulated robot to answer).

    Args:
        client: the oracle channel client (``request(subgoal_json) -> {"waypoints", "pos_scale", ...}``).
    """

    is_oracle: ClassVar[bool] = True

    def __init__(self, client: Any):
        self.client = client
        self.tracker: Any = None

    def reset(self) -> None:
        """Forget the current subgoal's waypoints."""
        self.tracker = None

    def set_subgoal(self, subgoal: Subgoal, task: TaskSpec | None = None) -> None:
        """Ask the simulated robot for the waypoints of ``subgoal`` (raises MissingTopicError if it never answers)."""
        from sim.experts import WaypointTracker
        from sim.tasks.base import Waypoint

        ans = self.client.request(subgoal.to_json())
        wps = [Waypoint(**{**w, "pos": np.asarray(w["pos"], np.float64)}) for w in ans["waypoints"]]
        self.tracker = WaypointTracker(wps, np.asarray(ans["pos_scale"]), np.asarray(ans["rot_scale"]),
                                       np.asarray(ans["base_rot"]))

    def select_action(self, observation: Observation) -> np.ndarray:
        """OSC action ``float32 (7,)`` from ``observation.proprio`` (grip-site position m, quaternion wxyz).

        Raises:
            TandemError: called before ``set_subgoal``.
        """
        if self.tracker is None:
            raise TandemError("OracleRemoteExecutor.select_action: call set_subgoal() first")
        return self.tracker.action(observation.proprio[:3].astype(np.float64), quat_to_mat(observation.proprio[3:7]))

    def subgoal_done(self) -> bool:
        """Whether the waypoint tracker of the current subgoal has reached its last waypoint."""
        return self.tracker is not None and self.tracker.done


__all__ = ["OracleRemoteExecutor"]
