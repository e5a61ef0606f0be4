"""Oracle (privileged) task-success verifier: a subgoal succeeded iff the WHOLE task succeeded in the simulator.

It judges any subgoal by the environment's task-success signal, ignoring the subgoal's skill and args, so it
is meant for the single whole-task subgoal of :class:`planner_vlm.instruction_planner.InstructionPlanner`
(flat policies). It reads simulator ground truth, so it is named *oracle* and cannot run on a real robot.

Where success comes from: ``after.privileged["success"]`` (set by ``sim.robosuite_env.RobosuiteEnv`` to
the conjunction of the task's goal predicates, the same flag as ``info["success"]`` of ``env.step``). The
failure reason lists the goal predicates that are false, read from ``privileged["predicates"]`` with the
goals of the TaskSpec given to :meth:`OracleTaskSuccessVerifier.reset` (else ``privileged["goals"]``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from tandem.core.errors import ConfigError
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Subgoal, TaskSpec, Verdict


class OracleTaskSuccessVerifier:
    """Verdicts from the simulator's task-success flag (implements ``tandem.core.protocols.Verifier``).

    Args:
        task: optional; same as calling :meth:`reset` with it.
    """

    #: True: it reads the simulator's task-success flag (``Observation.privileged``).
    is_oracle: ClassVar[bool] = True
    source: ClassVar[str] = "oracle"

    def __init__(self, task: TaskSpec | None = None):
        self.task: TaskSpec | None = None
        if task is not None:
            self.reset(task)

    def reset(self, task: TaskSpec, memory: TaskMemory | None = None) -> None:
        """Use ``task``'s goal predicates in failure reasons (``memory`` is not used).

        Raises:
            ConfigError: if ``task`` is not a TaskSpec.
        """
        if not isinstance(task, TaskSpec):
            raise ConfigError(f"OracleTaskSuccessVerifier.reset needs a TaskSpec, got {type(task).__name__}")
        self.task = task

    def verify(self, before: Observation, after: Observation, subgoal: Subgoal) -> Verdict:
        """Whether the whole task holds in ``after`` (``subgoal`` only names what was attempted).

        Returns:
            ``Verdict(success, confidence=1.0, reason, source="oracle")``; on failure the reason lists the
            goal predicates that are false, e.g. ``"task not achieved: on(blue,red) is false (1 of 2 goals
            hold)"``.

        Raises:
            ConfigError: if ``after.privileged`` is None or has no boolean ``"success"`` flag.
        """
        priv = after.privileged
        if not isinstance(priv, dict) or not isinstance(priv.get("success"), bool):
            have = sorted(priv) if isinstance(priv, dict) else type(priv).__name__
            raise ConfigError("the oracle task verifier needs the simulator's task-success flag: the 'after' "
                              f"observation's privileged['success'] is missing (privileged: {have}); use a VLM "
                              "verifier without a simulator")
        goals, preds = self._goals(priv), priv.get("predicates") or {}
        held = [g for g in goals if preds.get(g)]
        if priv["success"]:
            reason = "task success: " + (", ".join(goals) + " hold" if goals else "the simulator reports success")
            return Verdict(success=True, confidence=1.0, reason=reason, source="oracle")
        unmet = [g for g in goals if not preds.get(g)]
        reason = "task not achieved"
        if unmet:
            reason += f": {', '.join(unmet)} {'is' if len(unmet) == 1 else 'are'} false ({len(held)} of {len(goals)} goals hold)"
        return Verdict(success=False, confidence=1.0, reason=reason, source="oracle")

    def _goals(self, priv: dict[str, Any]) -> list[str]:
        if self.task is not None and self.task.goals:
            return list(self.task.goals)
        return [g for g in priv.get("goals") or () if isinstance(g, str)]
