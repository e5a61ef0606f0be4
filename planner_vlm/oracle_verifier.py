"""Oracle (privileged) verifier: a subgoal succeeded iff its ground predicate holds in the simulator.

``success = after.privileged["predicates"][task.predicate_for(subgoal.skill, subgoal.args)]``, with the
skill -> predicate templates of ``TaskSpec.skills`` (``stack`` -> ``on({0},{1})``). It reads simulator
ground truth, so it is named *oracle* and cannot run on a real robot.

Where the templates come from (the chosen design): the task is given per episode with
:meth:`OracleVerifier.reset` (like ``Planner.reset``), because a ``TaskSpec``'s goals change with the
seed; the constructor's ``task`` argument is a shortcut for ``reset(task)``. Without a ``reset`` the
verifier falls back to the templates every task shares (:data:`tandem.core.vocabulary.SKILL_PREDICATES`) and
takes the goals from ``privileged["goals"]``, so ``OracleVerifier()`` works with any sim task.

The verdict's reason is written for a replanner: on failure it says where the object is (world frame,
m), how far it is from the place it should be at, from where it was before the attempt and from the
gripper (``proprio[:3]``), whether it is still grasped; on success it names goal predicates that the
attempt broke (e.g. a cube knocked off), if any.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from tandem.core.errors import ConfigError, SubgoalSchemaError, UnknownNameError, UnknownSkillError
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Subgoal, TaskSpec, Verdict
from tandem.core.vocabulary import SKILL_PREDICATES


def _fmt(p: np.ndarray) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in p) + ")"


class OracleVerifier:
    """Verdicts from the simulator's ground-truth predicates (implements ``tandem.core.protocols.Verifier``).

    Args:
        task: optional; same as calling :meth:`reset` with it.
        grasp_skill: the skill whose predicate says an object is held (``"pick"`` -> ``grasped({0})``);
            used to tell "still grasped" in failure reasons.
    """

    #: True: it reads the simulator's predicates (``Observation.privileged``).
    is_oracle: ClassVar[bool] = True
    source: ClassVar[str] = "oracle"

    def __init__(self, task: TaskSpec | None = None, grasp_skill: str = "pick"):
        self.grasp_skill = grasp_skill
        self.task: TaskSpec | None = None
        if task is not None:
            self.reset(task)

    def reset(self, task: TaskSpec, memory: TaskMemory | None = None) -> None:
        """Use ``task``'s skill templates and goals for the following verdicts (``memory`` is not used).

        Raises:
            ConfigError: if ``task`` is not a TaskSpec.
        """
        if not isinstance(task, TaskSpec):
            raise ConfigError(f"OracleVerifier.reset needs a TaskSpec, got {type(task).__name__}")
        self.task = task

    def verify(self, before: Observation, after: Observation, subgoal: Subgoal) -> Verdict:
        """Decide whether ``subgoal`` succeeded, from the state ``after`` it (``before`` refines the reason).

        Returns:
            ``Verdict(success, confidence=1.0, reason, source="oracle")``.

        Raises:
            ConfigError: if ``after.privileged`` is None / lacks ``"predicates"``.
            UnknownSkillError: if ``subgoal.skill`` is not a skill of the task (or of the defaults).
            SubgoalSchemaError: if ``subgoal.args`` are too few for the skill's predicate template.
            UnknownNameError: if the predicate is not among ``after.privileged["predicates"]`` (the message
                names it and lists the known predicates).
        """
        priv_after = self._privileged(after, "after")
        skills = self._skills()
        if subgoal.skill not in skills:
            raise UnknownSkillError(subgoal.skill, list(skills))
        try:
            pred = skills[subgoal.skill].format(*subgoal.args)
        except IndexError as e:
            raise SubgoalSchemaError(f"subgoal {subgoal.signature} has too few args for the predicate template "
                                     f"{skills[subgoal.skill]!r} of skill {subgoal.skill!r}") from e
        preds = priv_after["predicates"]
        if pred not in preds:
            raise UnknownNameError("predicate", pred, list(preds))
        priv_before = before.privileged if isinstance(before.privileged, dict) else {}
        held_before = (priv_before.get("predicates") or {}).get(pred)
        if bool(preds[pred]):
            reason = f"{pred} holds" + (" (it already held before the attempt)" if held_before else "")
            goals = self.task.goals if self.task is not None else tuple(
                g for g in priv_after.get("goals") or () if isinstance(g, str))
            broken = [g for g in goals if g != pred and (priv_before.get("predicates") or {}).get(g)
                      and not preds.get(g, False)]
            if broken:
                reason += f"; but {', '.join(broken)} became false during the attempt"
            return Verdict(success=True, confidence=1.0, reason=reason, source="oracle")
        reason = f"{pred} is false" + self._where(pred, subgoal, before, after, priv_before, priv_after)
        if held_before:
            reason += "; it held before the attempt"
        return Verdict(success=False, confidence=1.0, reason=reason, source="oracle")

    @staticmethod
    def _privileged(obs: Observation, which: str) -> dict[str, Any]:
        priv = obs.privileged
        if not isinstance(priv, dict) or not isinstance(priv.get("predicates"), dict):
            raise ConfigError(f"the oracle verifier needs simulator ground truth: the {which!r} observation's "
                              "privileged['predicates'] is missing (use a VLM or learned verifier without a simulator)")
        return priv

    def _skills(self) -> dict[str, str]:
        return dict(self.task.skills) if self.task is not None else dict(SKILL_PREDICATES)

    def _where(self, pred: str, sg: Subgoal, before: Observation, after: Observation,
               priv_before: dict[str, Any], priv_after: dict[str, Any]) -> str:
        """``": red is at (x, y, z), 0.11 m from green; ..."`` from the privileged poses (m, world frame)."""
        if not sg.args:
            return ""
        obj = sg.args[0]
        poses = priv_after.get("objects") or {}
        pos = _pos(poses, obj)
        if pos is None:
            return ""
        parts = [f"{obj} is at {_fmt(pos)}"]
        if len(sg.args) > 1:
            target = sg.args[1]
            tpos = _pos(poses, target)
            if tpos is not None:
                d = pos - tpos
                parts.append(f"{np.linalg.norm(d):.2f} m from {target} (horizontal {np.linalg.norm(d[:2]):.2f} m, "
                             f"height {d[2]:+.2f} m)")
        if after.proprio.shape[0] >= 3:
            parts.append(f"{np.linalg.norm(pos - after.proprio[:3].astype(np.float64)):.2f} m from the gripper")
        old = _pos(priv_before.get("objects") or {}, obj)
        if old is not None:
            moved = float(np.linalg.norm(pos - old))
            parts.append(f"moved {moved:.2f} m during the attempt" if moved >= 0.005 else "did not move during the attempt")
        skills = self._skills()
        if sg.skill != self.grasp_skill and self.grasp_skill in skills:
            gp = skills[self.grasp_skill].format(obj)
            if (priv_after["predicates"]).get(gp):
                parts.append(f"{obj} is still grasped (not released)")
        return ": " + ", ".join(parts)


def _pos(poses: dict[str, Any], name: str) -> np.ndarray | None:
    entry = poses.get(name)
    if not isinstance(entry, dict) or "pos" not in entry:
        return None
    p = np.asarray(entry["pos"], dtype=np.float64).reshape(-1)
    return p[:3] if p.shape[0] >= 3 and np.all(np.isfinite(p[:3])) else None
