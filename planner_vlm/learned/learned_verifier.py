"""``verifier=learned``: the learned state model applied to the observation after the subgoal, calibrated.

The verdict is the calibrated probability ``p`` of the subgoal's predicate (``TaskSpec.predicate_for``, e.g.
``on(red,green)`` for ``stack(red,green)``) in the observation after the attempt
(:class:`~planner_vlm.learned.state_model.StateModel`, temperature-scaled on held-out frames): success iff
``p >= 0.5``, confidence ``max(p, 1 - p)`` times the confidence of the objects the subgoal names (the lowest of
their heatmap confidences: how sharply the model located them, low on an image unlike the training scenes, where a
calibrated probability is not to be trusted). Objects the subgoal does not name do not count: with a cube in the
gripper, the arm often hides another cube, and a grasp that held was judged uncertain for it (seed 1013); a subgoal
that names no object of the model gets the scene confidence (the lowest of all objects). A verdict whose confidence
is below ``confidence_threshold`` is marked ``uncertain``: the agent keeps executing and verifies again on later frames
(``AgentConfig.verify_rechecks``), and never takes it as a success (:mod:`tandem.runtime.agent`). Frames right after
a release are the typical case: the cube has not settled yet.

A pick that the image reads as failed, or as uncertain, while the hand says it holds the object (the fingers closed
on something, the object's pixel on a ray through the hand, or the object not located sharply: an arm hides it)
is a success with confidence :data:`~planner_vlm.learned.hand_evidence.HELD_PROBABILITY`, and the reason says why
(:mod:`planner_vlm.learned.hand_evidence`; ``held_ray_m``, None: off): where the image misses a held object at the
pick's verdict, the planner would otherwise ask for the same pick again with the object in the fingers.

The reason says where the object is (its 3-D origin keypoint, m, world frame), how far from the second argument
and from the gripper, and whether it still seems held, for a replanning planner. A failed verdict also says which other
objects were displaced during the attempt (``"displaced: green moved 0.06 m during the attempt"``): an object other
than the one the subgoal moves, located sharply (confidence at least
:data:`~planner_vlm.learned.hand_evidence.SHARP_CONFIDENCE`) in the observations before and after the attempt, whose
origin moved at least :data:`DISPLACED_M`: a knock, which the task memory records as ``object_moved`` rather than as a
slip. It never reads ``Observation.privileged``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from planner_vlm.learned.hand_evidence import HELD_PROBABILITY, HELD_RAY_M, SHARP_CONFIDENCE, hand_holds
from planner_vlm.learned.scene_state import SceneState
from tandem.core.errors import ConfigError, SubgoalSchemaError, UnknownNameError, UnknownSkillError
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Subgoal, TaskSpec, Verdict

#: An object other than the one a subgoal moves whose origin moved at least this (m) during the attempt was displaced.
DISPLACED_M = 0.03


def displaced_objects(before: SceneState, after: SceneState, moved: str | None,
                      min_confidence: float = SHARP_CONFIDENCE, min_shift_m: float = DISPLACED_M
                      ) -> list[tuple[str, float]]:
    """``(object, shift in m)`` of each object but ``moved`` located with at least ``min_confidence`` in both reads
    whose 3-D origin moved at least ``min_shift_m`` from ``before`` to ``after``, largest shift first."""
    out = []
    for obj in after.objects:
        if obj == moved or obj not in before.objects:
            continue
        sharp = min(float(before.object_confidence[before.object_index(obj)]),
                    float(after.object_confidence[after.object_index(obj)]))
        shift = float(np.linalg.norm(after.position(obj) - before.position(obj)))
        if sharp >= min_confidence and shift >= min_shift_m:
            out.append((obj, shift))
    return sorted(out, key=lambda o: -o[1])


def located_confidence(state: SceneState, args: Sequence[str]) -> tuple[float, list[str]]:
    """How sharply the state model located the objects a subgoal names: ``(the lowest object confidence in [0, 1]
    among ``args`` that are objects of ``state``, those objects)``; ``(scene confidence, [])`` when none is (e.g. a
    bin). The verdict's confidence is ``max(p, 1 - p)`` times this (see the module docstring)."""
    named = [a for a in args if a in state.objects]
    if not named:
        return float(state.scene_confidence), []
    return min(float(state.object_confidence[state.object_index(a)]) for a in named), named


class LearnedVerifier:
    """Calibrated verdicts from the learned state model (implements ``tandem.core.protocols.Verifier``).

    Args:
        state_model: a :class:`~planner_vlm.learned.state_model.StateModel` (or anything with ``cfg.predicates``,
            ``calibration`` and ``predict(observation) -> SceneState``).
        confidence_threshold: verdicts less confident than this are uncertain, in (0.5, 1].
        grasp_skill: the skill whose predicate says an object is held (for reasons, and the hand's evidence).
        held_ray_m: a pick whose object the hand holds (:func:`~planner_vlm.learned.hand_evidence.hand_holds`, with
            this ``max_ray_m`` in m and ``confidence_threshold`` as the sharpness) is a success; None: off.
        use_depth: read the scene with the camera's depth image where the observation carries one (see
            :class:`~planner_vlm.learned.learned_planner.LearnedPlanner`).

    Attributes:
        is_oracle: False. source: ``"learned"``.
    """

    is_oracle: ClassVar[bool] = False
    source: ClassVar[str] = "learned"

    def __init__(self, state_model: Any, confidence_threshold: float = 0.9, grasp_skill: str = "pick",
                 held_ray_m: float | None = HELD_RAY_M, use_depth: bool = True):
        if not 0.5 < confidence_threshold <= 1.0:
            raise ConfigError(f"learned verifier confidence_threshold must be in (0.5, 1], got {confidence_threshold}")
        if held_ray_m is not None and not held_ray_m > 0:
            raise ConfigError(f"learned verifier held_ray_m must be > 0 m or null, got {held_ray_m}")
        self.held_ray_m = held_ray_m
        self.use_depth = bool(use_depth)
        self.state_model = state_model
        self.confidence_threshold = float(confidence_threshold)
        self.grasp_skill = grasp_skill
        self.task: TaskSpec | None = None

    def reset(self, task: TaskSpec, memory: TaskMemory | None = None) -> None:
        """Use ``task``'s skill templates for the following verdicts.

        Raises:
            ConfigError: ``task`` is not a TaskSpec.
        """
        if not isinstance(task, TaskSpec):
            raise ConfigError(f"LearnedVerifier.reset needs a TaskSpec, got {type(task).__name__}")
        self.task = task

    def verify(self, before: Observation, after: Observation, subgoal: Subgoal) -> Verdict:
        """Judge ``subgoal`` from the observation ``after`` it (``before`` is read only for a failure's displaced objects).

        Returns:
            ``Verdict(success=p >= 0.5, confidence=max(p, 1 - p) * the named objects' confidence, reason,
            "learned", uncertain=confidence < confidence_threshold)``; for a pick whose object the hand holds,
            ``Verdict(True, HELD_PROBABILITY, reason, "learned", uncertain=False)``.

        Raises:
            ConfigError: ``reset`` was not called. UnknownSkillError: a skill outside the task.
            SubgoalSchemaError: too few arguments for the skill's predicate. UnknownNameError: a predicate outside
            the state model's vocabulary (a checkpoint of another task).
        """
        if self.task is None:
            raise ConfigError("LearnedVerifier.verify called before reset(task)")
        if subgoal.skill not in self.task.skills:
            raise UnknownSkillError(subgoal.skill, list(self.task.skills))
        try:
            pred = self.task.predicate_for(subgoal.skill, subgoal.args)
        except IndexError as e:
            raise SubgoalSchemaError(f"subgoal {subgoal.signature} has too few args for the predicate template "
                                     f"{self.task.skills[subgoal.skill]!r}") from e
        if pred not in self.state_model.cfg.predicates:
            raise UnknownNameError("predicate of the learned state model", pred, list(self.state_model.cfg.predicates))
        state = self.state_model.predict(after, use_depth=self.use_depth)
        p = state.probability(pred)
        seen, named = located_confidence(state, subgoal.args)
        confidence = max(p, 1.0 - p) * seen
        success = p >= 0.5
        reason = f"{pred} {'holds' if success else 'is false'}: p={p:.2f} (calibrated), " + (
            f"{'/'.join(named)} located with confidence {seen:.2f}" if named else f"scene confidence {seen:.2f}")
        reason += self._where(state, subgoal, after)
        uncertain = confidence < self.confidence_threshold
        if subgoal.skill == self.grasp_skill and not (success and not uncertain) and self.held_ray_m is not None:
            held = hand_holds(state, subgoal.args[0], after.proprio, self.state_model.calibration, pred,
                              max_ray_m=self.held_ray_m, min_confidence=self.confidence_threshold)
            if held is not None:
                return Verdict(success=True, confidence=HELD_PROBABILITY, source="learned", uncertain=False,
                               reason=f"{held.describe(pred)}; the image alone: {reason}")
        if not success:
            reason += self._displaced(before, state, subgoal)
        if uncertain:
            reason += f"; UNCERTAIN (confidence {confidence:.2f} < {self.confidence_threshold})"
        return Verdict(success=success, confidence=float(np.clip(confidence, 0.0, 1.0)), reason=reason,
                       source="learned", uncertain=uncertain)

    def _displaced(self, before: Observation, after_state: SceneState, sg: Subgoal) -> str:
        """``"; displaced: green moved 0.06 m during the attempt"`` (see the module docstring), or ``""``."""
        if not before.images:
            return ""
        before_state = self.state_model.predict(before, use_depth=self.use_depth)
        moved = displaced_objects(before_state, after_state, sg.args[0] if sg.args else None)
        if not moved:
            return ""
        return "; displaced: " + ", ".join(f"{o} moved {d:.2f} m during the attempt" for o, d in moved)

    def _where(self, state: Any, sg: Subgoal, after: Observation) -> str:
        """``": red at (x, y, z), 0.05 m from green, 0.02 m from the gripper, still held (p=0.9)"``."""
        if not sg.args or sg.args[0] not in state.objects:
            return ""
        obj = sg.args[0]
        pos = state.position(obj)
        parts = [f"{obj} at ({', '.join(f'{v:.2f}' for v in pos)})"]
        if len(sg.args) > 1 and sg.args[1] in state.objects:
            d = pos - state.position(sg.args[1])
            parts.append(f"{np.linalg.norm(d):.2f} m from {sg.args[1]} (height {d[2]:+.2f} m)")
        if after.proprio.shape[0] >= 3:
            parts.append(f"{np.linalg.norm(pos - after.proprio[:3].astype(np.float64)):.2f} m from the gripper")
        if sg.skill != self.grasp_skill and self.grasp_skill in self.task.skills:
            gp = self.task.predicate_for(self.grasp_skill, (obj,))
            if gp in state.predicates and state.probability(gp) >= 0.5:
                parts.append(f"still held (p={state.probability(gp):.2f})")
        return ": " + ", ".join(parts)
