"""``planner=learned``: the symbolic goal-regression search over the scene state a learned model reads off the image.

A state-tracker planner in the style of CES (a learned state tracker separate from the coordinator that plans):

1. the state model (:class:`~planner_vlm.learned.state_model.StateModel`) reads the agentview image and the proprio
   and gives every ground predicate of the task's vocabulary a calibrated probability, and every object two
   keypoints in 3-D with a confidence;
2. the oracle planner's search (:class:`~planner_vlm.goal_regression.GoalRegressionPlanner`, shared, not copied)
   runs over the predicted truth values (``p >= threshold``) and gives the done/remaining plan. The task is only
   reported complete when every goal predicate is also *confident* (``p >= completion_confidence``): where all goals
   read true but some are not confident, those goals are planned again (a ``unconfirmed_goals`` memory event),
   because "nothing remaining" ends the episode and a false one cannot be recovered from, while an extra attempt at
   a goal that did hold costs only time (the evaluation stops at the env's success);
3. where the goals may be met in any order
   (:meth:`~planner_vlm.goal_regression.GoalRegressionPlanner.goals_order_free`: pick_place_bins' bins,
   nut_assembly's pegs; not stack_three's stack) and ``best_localized_first`` is set (off by default; measured per
   task in the README), the best-localized object goes first: an object the arm holds, then one whose pick is
   running, then the others by :attr:`~planner_vlm.learned.scene_state.SceneState.object_uncertainty` (how
   diffuse the object's heatmap is; an object hidden behind another reads diffuse and is often centimetres off).
   It is picked once the objects in front of it are gone, and a pick that failed on a misread object is not retried
   at once while a better-read one waits; the order is said in the rationale;
4. the next subgoal gets its 3-D trace from the trace model (:class:`~planner_vlm.learned.trace_model.TraceModel`)
   and, for videos, its projection into the camera (the 2-D trace), by
   :class:`~planner_vlm.learned.geometry.LearnedGeometry` (shared with ``planner=vlm planner.geometry=learned``). Only ``remaining[0]`` gets a trace: the agent
   replans after every verdict (receding horizon), so later subgoals are given theirs from the state they start in.
   Where the trace model's checkpoint carries its task's workcell (``TraceModelConfig.workcell``), a pick's grasp
   yaw is checked against the perceived scene and turned where the open gripper would hit a wall or another object
   (:mod:`planner_vlm.learned.grasp_check`; the turned grasp is reached by the shorter turn of the wrist from the
   gripper's yaw now, as the expert resolves a yaw modulo a half turn; a ``grasp_turned`` memory event says from and
   to what: ``yaw_from``, ``yaw_to`` in rad, ``clearance_from_m``, ``clearance_to_m`` in m, negative where the open
   gripper overlaps).
   Before that, a pick must close over the object it picks: where the trace's close lands more than
   ``max_close_offset_m`` (xy) from the object as read, the trace model is asked again with the gripper as the
   episode started (position, level, opening; turned to its yaw now), and that trace, its row 0 put back at the
   gripper now, is taken when it closes nearer (a ``pick_reanchored`` memory event: ``offset_from_m``,
   ``offset_to_m``). Such far closes come from retries out of a hand tilted by a timeout against a wall or an object,
   a proprio the trace model never saw; asked from the start pose, the model closes on the object.
   The close is judged only for objects whose geometry the trace checkpoint's workcell records (its ``extents``:
   objects grasped over their body, as pick_place_bins' boxes): a nut is grasped by its handle, 5-7 cm from the
   origin that the state model reads, so on nut_assembly (no workcell) the rule would fire on most picks.
   Then, where the trace checkpoint records the object's demonstrated grasp in the object's own frame
   (``TraceModelConfig.grasp_prior``, :mod:`planner_vlm.learned.grasp_prior`: nut_assembly's nuts, always grasped
   by the handle), a close more than ``grasp_prior_m`` (xy) or ``grasp_prior_deg`` from that grasp, placed by the
   object's read keypoints, is moved onto it: the trace's rows after row 0 shift with the close and its yaw turns to
   the grasp's (a ``grasp_prior_snapped`` memory event: ``miss_m``, ``miss_deg``, ``yaw_from``, ``yaw_to``).
   Last, a close whose turn would take the wrist joint (``Observation.joints[-1]``) past ``wrist_limit_rad`` less
   ``WRIST_MARGIN_RAD`` is turned to the equivalent yaw a half turn away (the fingers are symmetric) that keeps it
   inside, as the experts choose (:func:`tandem.core.wrist.resolve_yaw`). The trace model learns the turn from
   demonstrations in which the expert chose it with the wrist angle, which the model does not see, so it can ask
   for the turn the wrist cannot make, and the hand then swings the long way round and closes off the object. A turn
   that fits is left as the model asked: the pick_place_bins expert plans long turns on purpose, for the arm's swing
   to the bin. Rows before the close turn in proportion, rows after it turn
   with it (a ``grasp_wrist_resolved`` memory event: ``yaw_from``, ``yaw_to``, ``wrist_rad``). Not for objects that
   a half turn does not map onto themselves (odd symmetry order in the trace checkpoint: nut_assembly's nuts, whose
   pick's turn is planned with the insert's), nor without the arm's joints.
   Where ``geometric_picks`` is set and the trace checkpoint records its task's expert pick geometry
   (``TraceModelConfig.pick_geometry``, a record naming its kind, read into that kind's
   :class:`tandem.core.pick_geometry.PickGeometry` with the ``pick_geometry_reader`` the runtime hands in:
   nut_assembly's nuts, pick_place_bins' objects), a pick of such an object found by the state model is not asked of
   the trace model: its trace is the expert's own pick geometry over the object as read (its two keypoints: origin
   and x axis; for pick_place_bins also the other objects found, as obstacles), the gripper's pose from the proprio
   and the wrist from ``Observation.joints`` (:meth:`~tandem.core.pick_geometry.PickGeometry.pick_over_read`,
   :func:`tandem.core.waypoints.waypoint_trace_3d`), and none of the checks above apply to it (the geometry plans
   the yaw and the wrist itself; a ``geometric_pick`` memory event: ``object``, ``grasp``, ``grasp_yaw``, and a
   nut's ``turn``). A pick_place_bins object read as lying on its side is left to the trace model (a
   ``geometric_pick_skipped`` event with the reason). On both tasks' validation seeds the trace model's closes were
   most of the gap to the oracle traces (docs/results/non-privileged-high-level.md). Other picks, and every other
   skill, keep the trace model's trace.
   First of all, a pick whose object is hidden when it is planned (heatmap uncertainty above ``hidden_uncertainty``:
   typically behind the arm that just placed another object, where the read lands on another surface, 8-13 cm off)
   is planned from the object's last sharp read this episode (uncertainty at most that, not held), which memory keeps
   (a ``hidden_target_remembered`` event: ``object``, ``uncertainty``, ``read_step``, ``shift_m``): a pick planned
   from a hidden object's read mostly fails. On by default (:data:`HIDDEN_UNCERTAINTY`, chosen on validation seeds;
   the figures: docs/results/history.md, "Figures moved out of the code").

Where the state model reads the object of the latest pick as not held while the hand says it is (the fingers closed
on something, the object's pixel on a ray through the hand: :mod:`planner_vlm.learned.hand_evidence`), the hand
wins: after that pick's verdict was a success, ``grasped(x)`` is taken as held and the object's keypoints are moved
to the hand (a ``hand_holds`` memory event), so the place is planned rather than the same pick again
(``held_ray_m``; None: off).

Memory records, with every plan, the predicted goal and grasp predicates with their probabilities (as facts about
their first object) and a ``scene_state`` event (3-D origins, object and scene confidences). A scene whose
confidence is below ``min_scene_confidence`` (unlike the training scenes) is recorded as a ``low_scene_confidence``
event and said in the rationale.

Bad input: an instruction naming an object that is not in the state model's vocabulary, or (at the episode's first
plan) one the model cannot find in the image (object confidence below ``min_object_confidence``, or heatmap
uncertainty above the object's absent threshold recorded in the state checkpoint: :mod:`planner_vlm.learned.absence`,
``use_absent_thresholds``; a presence probability below the presence model's threshold:
:mod:`planner_vlm.learned.presence_model`; or a read pixel that shows the bare support surface in the camera's depth),
is refused: the plan is empty (so the agent ends the episode without claiming success), the refusal is recorded in memory as a
``refused`` event and a fact about each missing object, and nothing is planned around it.

It never reads ``Observation.privileged`` (``is_oracle = False``; the runtime withholds it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from planner_vlm.goal_regression import GoalRegressionPlanner
from planner_vlm.learned.absence import absent_by_depth, absent_objects
from planner_vlm.learned.geometry import GRASP_PRIOR_DEG, GRASP_PRIOR_M, HIDDEN_UNCERTAINTY, LearnedGeometry
from planner_vlm.learned.hand_evidence import (
    HELD_RAY_M,
    SHARP_CONFIDENCE,
    HandEvidence,
    hand_holds,
    with_held,
)
from planner_vlm.learned.scene_state import SceneState
from tandem.core.errors import ConfigError
from tandem.core.evidence import GoalRead, GoalReading
from tandem.core.grasp_clearance import PANDA_EMPTY_OPENING_M
from tandem.core.grounding import Grounding
from tandem.core.memory_view import MemoryView
from tandem.core.pick_geometry import PickGeometryReader
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec
from tandem.core.wrist import PANDA_WRIST_LIMIT_RAD


class LearnedPlanner(GoalRegressionPlanner):
    """State-model predicates -> goal regression -> subgoals with learned traces (see the module docstring).

    Args:
        state_model: anything with ``cfg.objects``, ``cfg.predicates``, ``cfg.camera``, ``calibration`` and
            ``predict(observation) -> SceneState`` (a :class:`~planner_vlm.learned.state_model.StateModel`).
        trace_model: anything with ``cfg.skills``, ``cfg.arg_names`` and ``predict(keypoints_3d, proprio, skill,
            args) -> Trace3D`` (a :class:`~planner_vlm.learned.trace_model.TraceModel`), or None for no traces.
        threshold: a predicate holds when its probability is at least this.
        completion_confidence: the task is reported complete only when every goal predicate's probability is at least
            this, in ``[threshold, 1)``; goals between ``threshold`` and it are planned again.
        min_object_confidence: at the first plan, an instruction object found with less confidence is absent.
        min_scene_confidence: below this, the scene is recorded as unlike the training scenes.
        best_localized_first: order goals that may be met in any order by how well their objects are localized
            (see the module docstring); False keeps the instruction's order.
        empty_grip_m: a gripper closed to less than this opening (m, ``proprio[7]``) holds nothing: every grasp
            predicate is then false, whatever the state model reads (default: the Panda's
            :data:`tandem.core.grasp_clearance.PANDA_EMPTY_OPENING_M`; None: off). Without it a misread "held"
            makes the planner plan a place for an object still in the source bin, again after each failure.
        max_close_offset_m: a pick trace whose close lands farther than this (m, xy) from the object as read is
            asked again from the episode's start (see the module docstring, step 4), for objects whose extents the
            trace checkpoint's workcell records; None: off.
        held_ray_m: after a successful pick of ``x``, a hand held apart by something holds ``x`` unless ``x`` is
            sharply located with the camera ray through it farther than this (m) from the grip site
            (:func:`~planner_vlm.learned.hand_evidence.hand_holds`); None: off.
        wrist_limit_rad: the wrist joint's limit (rad, > 0): a pick's close whose turn would take the wrist past it
            (less ``WRIST_MARGIN_RAD``) is turned a half turn the other way (see the module docstring, step 4);
            None: off.
        grasp_skill, id_prefix: as :class:`~planner_vlm.goal_regression.GoalRegressionPlanner`.
        hidden_uncertainty: a pick of an object read with a heatmap uncertainty above this is planned from its last
            sharp read (step 4 above; default :data:`HIDDEN_UNCERTAINTY`); None: off.
        use_absent_thresholds: at the first plan, also take an instruction object whose heatmap uncertainty is above
            the state checkpoint's ``absent_uncertainty`` for it as absent (:mod:`planner_vlm.learned.absence`);
            False: ``min_object_confidence`` alone.
        geometric_picks: a pick of an object whose expert geometry the trace checkpoint records
            (``TraceModelConfig.pick_geometry``) gets that geometry over the object as read (step 4 above); False:
            the trace model's trace for every pick.
        pick_geometry_reader: reads the trace checkpoint's recorded pick geometry into its kind's implementation
            (:mod:`tandem.core.pick_geometry`; the runtime hands in :func:`sim.tasks.registry.read_pick_geometry`);
            needed where the checkpoint records one and ``geometric_picks`` is on, else a ConfigError.
        presence_model: anything with ``objects`` (O names), ``predict(images) -> (O,)`` presence probabilities and
            ``absent(probabilities, names) -> [(name, reason)]`` (a
            :class:`~planner_vlm.learned.presence_model.PresenceModel`), or None: at the first plan, under
            ``use_absent_thresholds``, an instruction object of its vocabulary that it reads absent is absent too, and
            its presence probabilities are recorded in memory (a ``presence`` event).
        use_depth: read the scene with the camera's depth image where the observation carries one
            (:meth:`~planner_vlm.learned.state_model.StateModel.predict`, :mod:`planner_vlm.learned.depth_heights`).
            The first plan's depth absent check (``use_absent_thresholds``, a state checkpoint that records
            ``support_z_m``, no presence model) reads the depth even with ``use_depth`` False.

    Attributes:
        is_oracle: False. source: ``"learned"``. last_state: the latest :class:`SceneState` (for logs and tests),
        with the hand's evidence applied.
    """

    is_oracle: ClassVar[bool] = False
    source: ClassVar[str] = "learned"

    def __init__(self, state_model: Any, trace_model: Any = None, threshold: float = 0.5,
                 completion_confidence: float = 0.9, min_object_confidence: float = 0.05,
                 min_scene_confidence: float = 0.5, best_localized_first: bool = False,
                 empty_grip_m: float | None = PANDA_EMPTY_OPENING_M, max_close_offset_m: float | None = 0.03,
                 held_ray_m: float | None = HELD_RAY_M, wrist_limit_rad: float | None = PANDA_WRIST_LIMIT_RAD,
                 grasp_skill: str = "pick", id_prefix: str = "sg", use_depth: bool = True,
                 hidden_uncertainty: float | None = HIDDEN_UNCERTAINTY, grasp_prior_m: float | None = GRASP_PRIOR_M,
                 grasp_prior_deg: float = GRASP_PRIOR_DEG, use_absent_thresholds: bool = True,
                 geometric_picks: bool = True, presence_model: Any = None, grounder: Any = None,
                 pick_geometry_reader: PickGeometryReader | None = None):
        super().__init__(grasp_skill=grasp_skill, id_prefix=id_prefix)
        self.grounder = grounder
        self.grounding: Grounding | None = None
        self.presence_model = presence_model
        self.use_absent_thresholds = bool(use_absent_thresholds)
        self.use_depth = bool(use_depth)
        if not 0.0 < threshold < 1.0:
            raise ConfigError(f"learned planner threshold must be in (0, 1), got {threshold}")
        if not threshold <= completion_confidence < 1.0:
            raise ConfigError(f"learned planner completion_confidence must be in [threshold={threshold}, 1), got "
                              f"{completion_confidence}")
        self.state_model = state_model
        self.threshold = float(threshold)
        self.completion_confidence = float(completion_confidence)
        self.min_object_confidence = float(min_object_confidence)
        self.min_scene_confidence = float(min_scene_confidence)
        self.best_localized_first = bool(best_localized_first)
        self.empty_grip_m = empty_grip_m
        if held_ray_m is not None and not held_ray_m > 0:
            raise ConfigError(f"learned planner held_ray_m must be > 0 m or null, got {held_ray_m}")
        self.held_ray_m = held_ray_m
        #: The 3-D traces of the subgoals handed out (where a trace model is given): shared with ``planner=vlm
        #: planner.geometry=learned``, so both give a subgoal the same trace.
        self.geometry = LearnedGeometry(
            state_model, trace_model, threshold=threshold, min_object_confidence=min_object_confidence,
            max_close_offset_m=max_close_offset_m, wrist_limit_rad=wrist_limit_rad,
            hidden_uncertainty=hidden_uncertainty, grasp_prior_m=grasp_prior_m, grasp_prior_deg=grasp_prior_deg,
            geometric_picks=geometric_picks, grasp_skill=grasp_skill, use_depth=use_depth,
            pick_geometry_reader=pick_geometry_reader)
        self._handed: Subgoal | None = None  # the subgoal the latest plan handed out (remaining[0])
        self._object_of: dict[str, str] = {}  # goal predicate -> the object it moves (set by reset)
        self.last_state: SceneState | None = None
        self.last_presence: dict[str, float] | None = None  # object -> presence probability at the first plan
        self._refusal: str | None = None
        self._missing: list[str] = []
        self._plans = 0

    @property
    def hidden_uncertainty(self) -> float | None:
        """A pick of an object read more diffuse than this is planned from its last sharp read (None: off)."""
        return self.geometry.hidden_uncertainty

    @property
    def geometric_picks(self) -> bool:
        """Whether a pick whose expert geometry the trace checkpoint records gets that geometry."""
        return self.geometry.geometric_picks

    @property
    def trace_model(self) -> Any:
        """The trace model the subgoals' 3-D traces come from, or None (no traces)."""
        return self.geometry.trace_model

    def start_pose_proprio(self, proprio: np.ndarray) -> np.ndarray | None:
        """:meth:`LearnedGeometry.start_pose_proprio <planner_vlm.learned.geometry.LearnedGeometry.start_pose_proprio>`
        (``float64 (8,)``, the re-anchoring query's start), or None before the episode's first plan."""
        return self.geometry.start_pose_proprio(proprio)

    # ------------------------------------------------------------------ setup
    def goals_of(self, task: TaskSpec) -> tuple[str, ...]:
        """The goals the instruction's words ask for, as the learned grounder reads them (:attr:`grounding`; a refused
        reading gives none, and the agent ends the episode before anything moves).

        Raises:
            ConfigError: no grounder, or a grounder trained for another vocabulary than the task's.
        """
        if self.grounder is None:
            raise ConfigError("the learned planner has no instruction grounder: it plans from the instruction's words "
                              "(planner.grounder_checkpoint, or a shipped checkpoints/grounder/<task>)")
        vocab = task.vocabulary
        mine = self.grounder.vocabulary
        if vocab is not None and (set(mine.names) != set(vocab.names) or mine.goal_skills != vocab.goal_skills):
            raise ConfigError(f"the instruction grounder was trained for the vocabulary of {mine.task!r} (names "
                              f"{sorted(mine.names)}), not that of task {task.name!r} ({sorted(vocab.names)})")
        self.grounding = self.grounder.ground(task.instruction)
        return tuple(self.grounding.goals) if self.grounding.ok else ()

    def reset(self, task: TaskSpec) -> None:
        """Prepare for ``task``: invert its goals, check the models' vocabularies.

        An object of the goals outside the state model's vocabulary makes the episode's plans refusals (see the
        module docstring); it is not an error.

        Raises:
            ConfigError: from the goal inversion; or a state model that lacks a goal or grasp predicate of objects it
                knows, a trace model that lacks a skill or argument of the task (a checkpoint of another task), or a
                trace checkpoint whose workcell has no extents for a goal object, or a presence model that shares no
                object with the state model (a checkpoint of another task).
        """
        super().reset(task)
        if self.presence_model is not None and not set(self.presence_model.objects) & set(self.state_model.cfg.objects):
            raise ConfigError(f"the presence model's objects {list(self.presence_model.objects)} share none with the "
                              f"state model's {list(self.state_model.cfg.objects)}: a checkpoint of another task")
        self._plans, self._refusal, self._missing, self.last_state = 0, None, [], None
        self.last_presence = None
        self.geometry.reset()
        self._handed = None
        self._object_of = {goal: obj for goal, obj, _, _ in self.goal_steps()}
        known = set(self.state_model.cfg.objects)
        goal_objects = [a for _, _, _, args in self.goal_steps() for a in args if a in task.objects]
        self._missing = sorted({o for o in goal_objects if o not in known})
        if self._missing:
            self._refusal = (f"the instruction names {', '.join(self._missing)}, which the learned state model does not "
                             f"know (its objects: {', '.join(self.state_model.cfg.objects)})")
            return
        lacking = [p for p in self.predicates_needed() if p not in self.state_model.cfg.predicates]
        goals = [step.goal for step in self._steps]
        unreadable = [p for p in lacking if p in goals]
        if unreadable and self.grounding is not None:  # words that ask for a goal this model cannot read: refused
            self.grounding = replace(
                self.grounding, refused=f"{unreadable[0]}: the learned state model cannot read this goal (it reads "
                                        f"{len(self.state_model.cfg.predicates)} predicates of "
                                        f"{', '.join(self.state_model.cfg.objects)})")
            return
        if lacking:
            raise ConfigError(f"the learned state model does not predict {lacking} needed by task {task.name!r} "
                              "(a checkpoint trained on another task?)")
        if self.geometry.workcell is not None and self.geometry.workcell.extents:
            lacking = sorted(o for o in goal_objects if o in known and o not in self.geometry.workcell.extents)
            if lacking:
                raise ConfigError(f"the trace checkpoint's workcell has no extents for {lacking} of task {task.name!r} "
                                  f"(it knows {sorted(self.geometry.workcell.extents)}): the grasp check could not check "
                                  "their picks; retrain the trace model on this task's dataset (model.grasp_check)")
        if self.trace_model is not None:
            tm = self.trace_model.cfg
            skills = {s for _, _, s, _ in self.goal_steps()} | ({self.grasp_skill} & set(task.skills))
            args = {a for _, _, _, aa in self.goal_steps() for a in aa}
            bad = sorted(skills - set(tm.skills)) + sorted(args - set(tm.arg_names))
            if bad:
                raise ConfigError(f"the learned trace model does not know {bad} of task {task.name!r} (its skills "
                                  f"{list(tm.skills)}, arguments {list(tm.arg_names)}: a checkpoint of another task?)")

    # --------------------------------------------------------------- planning
    def plan(self, observation: Observation, memory: TaskMemory) -> Plan:
        """The done/remaining plan for the predicted scene state (see the module docstring).

        Raises:
            ConfigError: ``reset`` was not called, or the observation lacks the state model's camera.
        """
        task = self._require_task()
        self._plans += 1
        first = self._plans == 1
        if first:
            self.geometry.note_episode_start(observation.proprio)
        if self._refusal is not None:
            return self._refuse(memory, observation.step, first)
        state = self.state_model.predict(observation, use_depth=self.use_depth)
        held = self._held_by_hand(state, observation, memory)
        if held is not None:
            state = with_held(state, held, task.predicate_for(self.grasp_skill, (held.obj,)))
        self.last_state = state
        if first:
            absent = self._absent(state, observation, memory, self._goal_objects(task))
            if absent:
                self._missing = [o for o, _ in absent]
                why = "; ".join(f"{o}: {reason}" for o, reason in absent)
                self._refusal = (f"the instruction names {', '.join(self._missing)}, which the learned perception "
                                 f"cannot find in the image ({why})")
                return self._refuse(memory, observation.step, first)
        self._record(state, memory, observation.step)
        self.geometry.remember_sharp_reads(state, observation.step)
        truth = state.truth(self.threshold)
        empty = self._empty_hand(observation, truth)
        unconfirmed = self._unconfirmed_goals(state, truth)
        if unconfirmed:
            memory.record_event("unconfirmed_goals", observation.step, goals=unconfirmed,
                                probabilities=[round(state.probability(g), 3) for g in unconfirmed],
                                completion_confidence=self.completion_confidence)
            truth.update(dict.fromkeys(unconfirmed, False))
        order = self._localization_order(state, truth, memory)
        plan = self.plan_from_predicates(truth, memory, order=order)
        probs = "; ".join(f"p({p})={state.probability(p):.2f}" for p in self.predicates_needed())
        notes = [f"learned state: {probs}"]
        if order is not None and state.object_uncertainty is not None:
            objs = [self._object_of[g] for g in order if not truth[g]]
            ranked = ", ".join(f"{o} {state.object_uncertainty[state.object_index(o)]:.2f}" for o in objs)
            notes.append(f"best-localized object first (heatmap uncertainty: {ranked})")
        if held is not None:
            notes.append(held.describe(task.predicate_for(self.grasp_skill, (held.obj,))))
        if empty:
            notes.append(f"the gripper is closed on nothing (opening {float(observation.proprio[7]) * 1000:.1f} mm): "
                         f"{', '.join(empty)} read as false")
        if unconfirmed:
            notes.append(f"every goal reads true, but {', '.join(unconfirmed)} below completion confidence "
                         f"{self.completion_confidence:.2f}: planned again rather than reported complete")
        if state.scene_confidence < self.min_scene_confidence:
            notes.append(f"LOW SCENE CONFIDENCE {state.scene_confidence:.2f}: the image is unlike the training scenes")
        plan.rationale = "; ".join([*notes, plan.rationale]) if plan.rationale else "; ".join(notes)
        if plan.remaining and self.trace_model is not None:  # its 3-D trace, and that trace projected (for videos)
            plan.remaining[0] = self.geometry.fill(plan.remaining[0], observation, memory, state=state)
        self._handed = plan.remaining[0] if plan.remaining else None
        return plan

    def read_goals(self, observation: Observation, memory: TaskMemory) -> GoalReading | None:
        """A fresh read of every goal of the grounding on ``observation`` and of the presence of every goal object:
        a goal holds at probability ``>= threshold`` and is confident at ``>= completion_confidence`` (as the plan
        reads them), and an object is absent by the same checks as at the episode's first plan (object confidence,
        the state checkpoint's absent thresholds, the presence model, recorded as a ``presence`` event, or depth).
        None when the instruction was refused (nothing is read).

        Raises:
            ConfigError: ``reset`` was not called, or the observation lacks a camera the models read.
        """
        task = self._require_task()
        if self._refusal is not None or (self.grounding is not None and not self.grounding.ok):
            return None
        state = self.state_model.predict(observation, use_depth=self.use_depth)
        reads = tuple(GoalRead(goal, (p := state.probability(goal)) >= self.threshold,
                               p >= self.completion_confidence, p) for goal, _, _, _ in self.goal_steps())
        objects = self._goal_objects(task)
        absent = self._absent(state, observation, memory, objects)
        return GoalReading(step=observation.step, goals=reads, checked_objects=tuple(objects), absent=tuple(absent),
                           source=self.source)

    def _absent(self, state: SceneState, observation: Observation, memory: TaskMemory,
                names: list[str]) -> list[tuple[str, str]]:
        """``(object, why)`` for each of ``names`` the perception cannot find: object confidence below
        ``min_object_confidence`` or heatmap uncertainty above its absent threshold
        (:func:`~planner_vlm.learned.absence.absent_objects`), then the presence model, then depth."""
        limits = getattr(self.state_model, "absent_uncertainty", None) if self.use_absent_thresholds else None
        absent = absent_objects(state, names, self.min_object_confidence, limits)
        absent += [(o, why) for o, why in self._absent_by_presence(observation, memory, names)
                   if o not in dict(absent)]
        absent += self._absent_by_depth(state, observation, [o for o in names if o not in dict(absent)])
        return absent

    def _held_by_hand(self, state: SceneState, observation: Observation, memory: TaskMemory) -> HandEvidence | None:
        """The hand's evidence that it holds the object of the subgoal the latest plan handed out, once that object's
        pick was verified a success (see the module docstring); recorded as a ``hand_holds`` memory event. None where
        ``held_ray_m`` is off, the state model already reads it held, or the hand says nothing."""
        task = self._require_task()
        sg = self._handed
        if (self.held_ray_m is None or sg is None or not sg.args or sg.args[0] not in state.objects
                or self.grasp_skill not in task.skills):
            return None
        obj = sg.args[0]
        pick = f"{self.grasp_skill}({obj})"
        pred = task.predicate_for(self.grasp_skill, (obj,))
        if state.probability(pred) >= self.threshold or MemoryView.from_dict(memory.view()).last_outcome.get(pick) != "success":
            return None
        held = hand_holds(state, obj, observation.proprio, self.state_model.calibration, pred,
                          max_ray_m=self.held_ray_m, min_confidence=SHARP_CONFIDENCE,
                          empty_grip_m=self.empty_grip_m or PANDA_EMPTY_OPENING_M)
        if held is not None:
            memory.record_event("hand_holds", observation.step, object=obj, opening_m=round(held.opening_m, 4),
                                ray_m=round(held.ray_m, 4), read_probability=round(held.read_probability, 3))
        return held

    def _localization_order(self, state: SceneState, truth: dict[str, bool], memory: TaskMemory) -> list[str] | None:
        """The goals in the order to plan them (see the module docstring, step 3), or None for the task's order
        (``best_localized_first`` off, goals that depend on each other, an instruction that states their order, or a
        state without uncertainties)."""
        if not self.best_localized_first or state.object_uncertainty is None or not self.goals_order_free():
            return None
        if self.grounding is not None and self.grounding.ordered:  # "first the milk, then the can": as told
            return None
        task = self._require_task()
        outcomes = MemoryView.from_dict(memory.view()).last_outcome
        has_grasp = self.grasp_skill in task.skills

        def key(i_goal: tuple[int, str]) -> tuple[int, float, int]:
            i, goal = i_goal
            obj = self._object_of[goal]
            held = has_grasp and truth.get(task.predicate_for(self.grasp_skill, (obj,)), False)
            running = outcomes.get(f"{self.grasp_skill}({obj})") == "running"
            rank = 0 if held else 1 if running else 2
            return rank, float(state.object_uncertainty[state.object_index(obj)]), i

        return [g for _, g in sorted(enumerate(self._object_of), key=key)]

    def _empty_hand(self, observation: Observation, truth: dict[str, bool]) -> list[str]:
        """With the gripper closed to under ``empty_grip_m``, set every grasp predicate that reads true in ``truth``
        to false (in place) and return them."""
        task = self._require_task()
        if (self.empty_grip_m is None or self.grasp_skill not in task.skills or len(observation.proprio) < 8
                or float(observation.proprio[7]) >= self.empty_grip_m):
            return []
        held = [p for o in self.state_model.cfg.objects
                if truth.get(p := task.predicate_for(self.grasp_skill, (o,)), False)]
        truth.update(dict.fromkeys(held, False))
        return held

    def _unconfirmed_goals(self, state: SceneState, truth: dict[str, bool]) -> list[str]:
        """Goal predicates that keep the task from being reported complete: empty unless every goal reads true,
        then those below :attr:`completion_confidence`."""
        goals = [g for g, _, _, _ in self.goal_steps()]
        if not all(truth[g] for g in goals):
            return []
        return [g for g in goals if state.probability(g) < self.completion_confidence]

    def _absent_by_presence(self, observation: Observation, memory: TaskMemory,
                            names: list[str]) -> list[tuple[str, str]]:
        """The presence model's absent objects among ``names`` (those of its vocabulary), where the absent check is on
        and a presence model is given; its probabilities are recorded in memory (a ``presence`` event) and kept in
        ``last_presence``.

        Raises:
            ConfigError: the observation lacks a camera the presence model reads (named).
        """
        if not self.use_absent_thresholds or self.presence_model is None:
            return []
        names = [n for n in names if n in self.presence_model.objects]
        if not names:
            return []
        try:
            probs = self.presence_model.predict(observation.images)
            absent = self.presence_model.absent(probs, names)
        except ValueError as e:
            raise ConfigError(f"learned planner presence check: {e}") from e
        self.last_presence = {o: float(p) for o, p in zip(self.presence_model.objects, probs)}
        memory.record_event("presence", observation.step,
                            probabilities={o: round(p, 4) for o, p in self.last_presence.items() if o in names})
        return absent

    def _absent_by_depth(self, state: SceneState, observation: Observation, names: list[str]) -> list[tuple[str, str]]:
        """:func:`~planner_vlm.learned.absence.absent_by_depth` of ``names``, where the absent check is on, no presence
        model is given, the state checkpoint records the support surface (``support_z_m``) and the observation carries
        its camera's depth;
        else none."""
        if self.presence_model is not None:  # the trained presence check supersedes this one (it refuses more
            return []  # and falsely refused none of pick_place_bins' validation scenes; docs/results)
        support_z = getattr(self.state_model, "support_z", None)
        if not self.use_absent_thresholds or support_z is None or observation.depth is None or not names:
            return []
        depth = observation.depth.get(self.state_model.cfg.camera)  # (a lazy image renders here, once)
        if depth is None:
            return []
        return absent_by_depth(state, names, depth, self.state_model.calibration, float(support_z))

    def _goal_objects(self, task: TaskSpec) -> list[str]:
        return list(dict.fromkeys(a for _, _, _, args in self.goal_steps() for a in args if a in task.objects))

    def _refuse(self, memory: TaskMemory, step: int, first: bool) -> Plan:
        if first:
            memory.record_event("refused", step, reason=self._refusal, objects=list(self._missing))
            for obj in self._missing:
                memory.record_fact(obj, f"absent: {self._refusal}", step)
        return Plan(rationale=f"refused: {self._refusal}; nothing is planned around a missing object")

    def _record(self, state: SceneState, memory: TaskMemory, step: int) -> None:
        for pred in self.predicates_needed():
            obj = pred.partition("(")[2].split(",")[0].rstrip(")")
            p = state.probability(pred)
            memory.record_fact(obj, f"{pred} {'holds' if p >= self.threshold else 'does not hold'} (p={p:.2f}, "
                                    f"learned state model)", step)
        memory.record_event("scene_state", step, **state.to_json())
        if state.scene_confidence < self.min_scene_confidence:
            memory.record_event("low_scene_confidence", step, scene_confidence=round(state.scene_confidence, 3),
                                threshold=self.min_scene_confidence)
