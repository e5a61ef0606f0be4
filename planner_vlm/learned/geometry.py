"""``LearnedGeometry``: a subgoal's 3-D trace from the learned state and trace models, whoever chose the subgoal.

The learned planner (:class:`~planner_vlm.learned.learned_planner.LearnedPlanner`) and the VLM planner's hybrid
mode (``planner=vlm planner.geometry=learned``: the VLM decides the subgoals) share this component, so both give a
subgoal ``(skill, args)`` the same trace from the same observation. :meth:`LearnedGeometry.fill` does, in order
(the learned planner's module docstring, step 4, says why each rule exists):

1. read the scene with the state model (:class:`~planner_vlm.learned.state_model.StateModel`): every object's two
   keypoints ``(O, 2, 3)`` in m, world frame, with a confidence and a heatmap uncertainty (or take the caller's
   read, as the learned planner does after applying the hand's evidence);
2. a pick of an object hidden now is planned from its last sharp read this episode (``hidden_uncertainty``);
3. a pick of an object whose expert pick geometry the trace checkpoint records gets that geometry over the object
   as read (``geometric_picks``; :class:`tandem.core.pick_geometry.PickGeometry`, the kind's implementation read
   with the ``pick_geometry_reader`` the runtime hands in); otherwise the trace model's trace
   (:class:`~planner_vlm.learned.trace_model.TraceModel`), re-asked from the episode's start where its close
   misses the object (``max_close_offset_m``), snapped onto the object's demonstrated grasp (``grasp_prior_m``),
   its grasp yaw checked against the perceived scene (the checkpoint's workcell) and against the wrist's limit
   (``wrist_limit_rad``);
4. the 3-D trace's projection into the state model's camera (``Subgoal.trace``, for videos).

Each rule that changes a trace records a memory event (``hidden_target_remembered``, ``geometric_pick``,
``geometric_pick_skipped``, ``pick_reanchored``, ``grasp_prior_snapped``, ``grasp_turned``,
``grasp_wrist_resolved``).

It reads camera images, depth where declared, proprio and joints: never ``Observation.privileged``
(``is_oracle = False``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from planner_vlm.learned.grasp_check import Workcell, checked_grasp_yaw, turn_trace_to
from planner_vlm.learned.grasp_prior import GraspPrior, close_miss, close_rows, snapped_to_prior
from planner_vlm.learned.proprio import gripper_yaw
from planner_vlm.learned.scene_state import SceneState
from tandem.core.errors import ConfigError
from tandem.core.geometry import quat_yaw_mul, wrap_angle
from tandem.core.pick_geometry import PickGeometry, PickGeometryReader
from tandem.core.protocols import TaskMemory
from tandem.core.types import KeypointTrace, Observation, Subgoal, TaskSpec, Trace3D
from tandem.core.waypoints import waypoint_trace_3d
from tandem.core.wrist import PANDA_WRIST_LIMIT_RAD, WRIST_MARGIN_RAD, predicted_wrist, resolve_yaw

#: A pick's object read with a heatmap uncertainty above this is hidden (``SceneState.object_uncertainty``: 1 is the
#: training frames' 99th percentile): a pick planned from such a read mostly fails.
HIDDEN_UNCERTAINTY = 0.5
#: A pick's close farther than this (m, xy) from its object's demonstrated grasp, or turned more than
#: :data:`GRASP_PRIOR_DEG` from it, is moved onto it (:mod:`planner_vlm.learned.grasp_prior`).
GRASP_PRIOR_M = 0.01
GRASP_PRIOR_DEG = 15.0


def with_close_yaw(trace: Trace3D, event: int, yaw: float) -> Trace3D:
    """``trace`` with row ``event`` (its close) at ``yaw`` (rad, not wrapped): row 0 stays, the rows between turn in
    proportion, the rows after the close turn with it (:func:`~planner_vlm.learned.grasp_check.turn_trace_to`)."""
    return Trace3D(points=trace.points, yaw=turn_trace_to(trace.yaw, event, yaw), gripper=trace.gripper,
                   frame=trace.frame)


def projected_trace(trace: Trace3D, calibration: Any, camera: str, size: tuple[int, int]) -> KeypointTrace:
    """``trace``'s points ``(K, 3)`` (m, world frame) projected into ``camera`` at image size ``size`` ``(H, W)`` px:
    a :class:`KeypointTrace` ``(K, 2)`` in pixels, points behind the camera put at the image's centre and every point
    clipped into the image."""
    px = calibration.resized(size).project(trace.points)
    h, w = size
    px = np.where(np.isfinite(px), px, np.array([w / 2.0, h / 2.0]))
    px = np.clip(px, [0.0, 0.0], [w - 1.0, h - 1.0])
    return KeypointTrace(camera=camera, points=px.astype(np.float32), image_size=size)


class LearnedGeometry:
    """Gives a subgoal its 3-D trace ``Subgoal.trace_3d`` (points ``(K, 3)`` m, world frame; yaw ``(K,)`` rad;
    gripper ``(K,)`` in [-1, 1]) from the learned state and trace models (see the module docstring).

    Per episode: call :meth:`reset`, then :meth:`fill` for each subgoal to hand out (it keeps the episode's start
    pose and each object's last sharp read).

    Args:
        state_model: anything with ``cfg.objects``, ``cfg.camera``, ``calibration`` and ``predict(observation,
            use_depth) -> SceneState`` (a :class:`~planner_vlm.learned.state_model.StateModel`).
        trace_model: anything with ``cfg.skills``, ``cfg.arg_names``, ``cfg.symmetries`` (optionally ``cfg.workcell``,
            ``cfg.grasp_prior``, ``cfg.pick_geometry``) and ``predict(keypoints_3d (O, 2, 3) m, proprio (8,), skill,
            args) -> Trace3D`` (a :class:`~planner_vlm.learned.trace_model.TraceModel`).
        threshold: a grasp predicate at least this probable means the object is held (its read is then not kept as
            a sharp read).
        min_object_confidence: an object read with less confidence is not found (no geometry over it, no obstacle).
        max_close_offset_m, wrist_limit_rad, hidden_uncertainty, grasp_prior_m, grasp_prior_deg, geometric_picks:
            the rules of the module docstring, as :class:`~planner_vlm.learned.learned_planner.LearnedPlanner`
            documents them (None: that rule off).
        grasp_skill: the skill that grasps (``"pick"``).
        use_depth: where :meth:`fill` reads the scene itself, read it with the camera's depth image where the
            observation carries one.
        pick_geometry_reader: reads the trace checkpoint's ``cfg.pick_geometry`` into its kind's
            :class:`~tandem.core.pick_geometry.PickGeometry` (the runtime hands in
            :func:`sim.tasks.registry.read_pick_geometry`); needed only where the checkpoint records one and
            ``geometric_picks`` is on.

    Raises:
        ConfigError: a setting out of its range (named); a trace checkpoint's pick geometry that cannot be read (an
            unknown kind, named with the known ones, or a malformed field), that names an object the trace model does
            not know, or that is recorded while ``geometric_picks`` is on and no reader was given.
    """

    is_oracle: ClassVar[bool] = False
    #: Recorded in the VLM planner's source (``vlm+learned_geometry``) in the hybrid mode.
    source: ClassVar[str] = "learned_geometry"

    def __init__(self, state_model: Any, trace_model: Any, *, threshold: float = 0.5,
                 min_object_confidence: float = 0.05, max_close_offset_m: float | None = 0.03,
                 wrist_limit_rad: float | None = PANDA_WRIST_LIMIT_RAD,
                 hidden_uncertainty: float | None = HIDDEN_UNCERTAINTY, grasp_prior_m: float | None = GRASP_PRIOR_M,
                 grasp_prior_deg: float = GRASP_PRIOR_DEG, geometric_picks: bool = True, grasp_skill: str = "pick",
                 use_depth: bool = True, pick_geometry_reader: PickGeometryReader | None = None):
        if max_close_offset_m is not None and not max_close_offset_m > 0:
            raise ConfigError(f"learned planner max_close_offset_m must be > 0 m or null, got {max_close_offset_m}")
        if wrist_limit_rad is not None and not (math.isfinite(wrist_limit_rad) and wrist_limit_rad > 0):
            raise ConfigError(f"learned planner wrist_limit_rad must be > 0 rad or null, got {wrist_limit_rad}")
        if hidden_uncertainty is not None and not (math.isfinite(hidden_uncertainty) and hidden_uncertainty > 0):
            raise ConfigError(f"learned planner hidden_uncertainty must be > 0 or null, got {hidden_uncertainty}")
        if grasp_prior_m is not None and not (math.isfinite(grasp_prior_m) and grasp_prior_m > 0):
            raise ConfigError(f"learned planner grasp_prior_m must be > 0 m or null, got {grasp_prior_m}")
        if not (math.isfinite(grasp_prior_deg) and 0 < grasp_prior_deg <= 90):
            raise ConfigError(f"learned planner grasp_prior_deg must be in (0, 90] deg, got {grasp_prior_deg}")
        self.state_model, self.trace_model = state_model, trace_model
        self.threshold = float(threshold)
        self.min_object_confidence = float(min_object_confidence)
        self.max_close_offset_m = max_close_offset_m
        self.wrist_limit_rad = wrist_limit_rad
        self.hidden_uncertainty = hidden_uncertainty
        self.grasp_prior_m, self.grasp_prior_deg = grasp_prior_m, float(grasp_prior_deg)
        self.geometric_picks = bool(geometric_picks)
        self.grasp_skill = grasp_skill
        self.use_depth = bool(use_depth)
        cfg = getattr(trace_model, "cfg", None)
        cell, prior, pick = (getattr(cfg, k, None) for k in ("workcell", "grasp_prior", "pick_geometry"))
        self.workcell = Workcell.from_dict(cell) if cell else None
        self.grasp_prior = GraspPrior.from_dict(prior) if prior else None
        self.pick_geometry = self._read_pick_geometry(pick, pick_geometry_reader, cfg)
        self._own_place: dict[str, str] = {}  # object -> its only place (the task vocabulary's own_place)
        self._sharp_reads: dict[str, tuple[np.ndarray, int]] = {}  # object -> (keypoints (2, 3) m, step)
        self._picks_from_memory: dict[str, tuple[int, int]] = {}  # object -> (its sharp read's step, planned at step)
        self._start_proprio: np.ndarray | None = None  # proprio (8,) at the episode's first observation

    def _read_pick_geometry(self, pick: Any, reader: PickGeometryReader | None, cfg: Any) -> PickGeometry | None:
        """The trace checkpoint's recorded pick geometry, read with ``reader`` (None: none recorded, or
        ``geometric_picks`` off and no reader). Raises ConfigError as the class docstring says."""
        if pick is None or (isinstance(pick, dict) and not pick):  # a falsy non-mapping ("", [], 0) is refused
            return None
        if reader is None:
            if not self.geometric_picks:
                return None
            raise ConfigError("the trace checkpoint records a pick_geometry but the learned planner was given no "
                              "pick_geometry_reader to read it with (the runtime hands it the task registry's)")
        geometry = reader(pick)
        unknown = sorted(set(geometry.object_names()) - set(getattr(cfg, "objects", geometry.object_names())))
        if unknown:
            raise ConfigError(f"trace model pick_geometry names {unknown}, not among its objects {list(cfg.objects)}")
        return geometry

    # ------------------------------------------------------------------ episode
    def reset(self) -> None:
        """Start an episode: forget the start pose, the objects' sharp reads and the picks planned from them."""
        self._sharp_reads = {}
        self._picks_from_memory = {}
        self._start_proprio = None

    def note_episode_start(self, proprio: np.ndarray) -> None:
        """Keep ``proprio (8,)`` as the gripper where the episode started, unless one is kept already."""
        if self._start_proprio is None:
            self._start_proprio = np.array(proprio, np.float64)

    def check_task(self, task: TaskSpec) -> None:
        """Refuse models that cannot trace ``task``'s subgoals: a trace model lacking one of its skills or objects.
        Keep the task vocabulary's ``own_place`` (object -> its only place) to complete a placing subgoal that names
        its object only (:meth:`trace_args`).

        Raises:
            ConfigError: naming what the trace model lacks (a checkpoint of another task).
        """
        tm = self.trace_model.cfg
        bad = sorted(set(task.skills) - set(tm.skills)) + sorted(set(task.objects) - set(tm.arg_names))
        if bad:
            raise ConfigError(f"the learned trace model does not know {bad} of task {task.name!r} (its skills "
                              f"{list(tm.skills)}, arguments {list(tm.arg_names)}: a checkpoint of another task?)")
        vocab = task.vocabulary
        self._own_place = dict(vocab.own_place) if vocab is not None else {}

    def trace_args(self, subgoal: Subgoal) -> tuple[str, ...]:
        """The arguments the trace model is asked with: ``subgoal.args``, completed with its object's own place where
        a non-grasping skill names the object only and the trace model knows that place (a VLM's ``place(can)`` is
        the ``place(can, can_bin)`` the demonstrations were labelled with; the VLM parser's arity follows the skill's
        words, which leave the place implicit)."""
        args = tuple(subgoal.args)
        place = self._own_place.get(args[0]) if len(args) == 1 and subgoal.skill != self.grasp_skill else None
        if place is not None and place in self.trace_model.cfg.arg_names:
            return (*args, place)
        return args

    def read(self, observation: Observation) -> SceneState:
        """The state model's read of ``observation``, kept as each object's latest sharp read where it is one.

        Raises:
            ConfigError / ValueError: from the state model (e.g. the observation lacks its camera).
        """
        state = self.state_model.predict(observation, use_depth=self.use_depth)
        self.remember_sharp_reads(state, observation.step)
        return state

    def remember_sharp_reads(self, state: SceneState, step: int) -> None:
        """Keep each object's latest sharp read (uncertainty at most ``hidden_uncertainty``, not held)."""
        if self.hidden_uncertainty is None or state.object_uncertainty is None:
            return
        for i, obj in enumerate(state.objects):
            held = f"grasped({obj})" in state.predicates and state.probability(f"grasped({obj})") >= self.threshold
            if state.object_uncertainty[i] <= self.hidden_uncertainty and not held:
                self._sharp_reads[obj] = (state.keypoints_3d[i].copy(), step)

    def start_pose_proprio(self, proprio: np.ndarray) -> np.ndarray | None:
        """``float64 (8,)`` the gripper as the episode started (position m, level, opening m; the layout of
        :data:`tandem.core.types.PROPRIO_LAYOUT`) turned about world +z to the yaw of ``proprio (8,)`` now: the
        re-anchoring query's start; None before the episode's first observation. Raises nothing."""
        if self._start_proprio is None:
            return None
        start = np.array(self._start_proprio, np.float64)
        turn = float(gripper_yaw(proprio) - gripper_yaw(self._start_proprio))
        start[3:7] = quat_yaw_mul(turn, self._start_proprio[3:7])
        return start

    # ------------------------------------------------------------------ the trace
    def fill(self, subgoal: Subgoal, observation: Observation, memory: TaskMemory | None = None,
             state: SceneState | None = None) -> Subgoal:
        """A copy of ``subgoal`` with its 3-D trace (``trace_3d``: points ``(K, 3)`` m, world frame) and that trace's
        projection into the state model's camera (``trace``: ``(K, 2)`` px at the observation's image size).

        Args:
            subgoal: the subgoal to trace (its ``skill`` and ``args``; its own traces are replaced).
            observation: the observation it starts from (images, proprio ``(8,)``, joints where carried).
            memory: where the rules record their events (None: not recorded).
            state: the scene as read from ``observation`` (None: read here with :meth:`read`).

        Raises:
            UnknownSkillError / UnknownNameError: a skill or argument the trace model does not know.
            ConfigError / ValueError: from the state model (e.g. the observation lacks its camera).
        """
        self.note_episode_start(observation.proprio)
        if state is None:
            state = self.read(observation)
        state = self._hidden_target_remembered(subgoal, state, memory, observation.step)
        trace = self._geometric_pick(subgoal, state, observation, memory)
        if trace is None:
            trace = self.trace_model.predict(state.keypoints_3d, observation.proprio, subgoal.skill,
                                             self.trace_args(subgoal))
            trace = self._anchored_pick(trace, subgoal, state, observation, memory)
            trace = self._snapped_to_prior(trace, subgoal, state, memory, observation.step)
            trace = self._checked_grasp(trace, subgoal, state, memory, observation.step)
            trace = self._wrist_resolved(trace, subgoal, observation, memory)
        return replace(subgoal, trace_3d=trace, trace=self._projection(trace, observation))

    def _projection(self, trace: Trace3D, observation: Observation) -> KeypointTrace:
        camera = self.state_model.cfg.camera
        image = observation.images.get(camera)
        size = tuple(image.shape[:2]) if image is not None else tuple(self.state_model.calibration.image_size)
        return projected_trace(trace, self.state_model.calibration, camera, size)

    @staticmethod
    def _event(memory: TaskMemory | None, kind: str, step: int, **fields: Any) -> None:
        if memory is not None:
            memory.record_event(kind, step, **fields)

    def _found(self, state: SceneState, obj: str) -> bool:
        return obj in state.objects and state.object_confidence[state.object_index(obj)] >= self.min_object_confidence

    def _hidden_target_remembered(self, sg: Subgoal, state: SceneState, memory: TaskMemory | None,
                                  step: int) -> SceneState:
        """``state``, or with a pick's object put back at its last sharp read where it is hidden now.

        Evidence beats memory: once a pick planned from a remembered read has failed (a failure of the same subgoal
        in ``memory`` at or after the step it was planned), that read is dropped (a ``remembered_read_dropped``
        event) and the pick is planned from the current read, however uncertain: the object was moved while hidden,
        and the same grasp again would fail the same way. A later sharp read is remembered again."""
        target = sg.args[0] if sg.args else None
        if (self.hidden_uncertainty is None or sg.skill != self.grasp_skill or target not in state.objects
                or state.object_uncertainty is None or target not in self._sharp_reads):
            return state
        i = state.object_index(target)
        if state.object_uncertainty[i] <= self.hidden_uncertainty:
            return state
        remembered, read_step = self._sharp_reads[target]
        shift_m = round(float(np.linalg.norm(remembered[0] - state.keypoints_3d[i, 0])), 4)
        used = self._picks_from_memory.get(target)
        if used is not None and used[0] == read_step and self._failed_since(memory, sg.signature, used[1]):
            del self._sharp_reads[target]
            del self._picks_from_memory[target]
            self._event(memory, "remembered_read_dropped", step, subgoal=sg.text, object=target,
                        read_step=int(read_step), shift_m=shift_m,
                        reason="a pick planned from it failed: planned from the current read")
            return state
        self._picks_from_memory[target] = (int(read_step), int(step))
        keypoints = state.keypoints_3d.copy()
        keypoints[i] = remembered
        self._event(memory, "hidden_target_remembered", step, subgoal=sg.text, object=target,
                    uncertainty=round(float(state.object_uncertainty[i]), 3), read_step=int(read_step),
                    shift_m=shift_m)
        return replace(state, keypoints_3d=keypoints)

    @staticmethod
    def _failed_since(memory: TaskMemory | None, signature: str, step: int) -> bool:
        """Whether ``memory``'s view holds a failure of ``signature`` at or after ``step``."""
        if memory is None:
            return False
        return any(f.get("subgoal") == signature and int(f.get("step", -1)) >= step
                   for f in memory.view().get("failures", ()))

    def _geometric_pick(self, sg: Subgoal, state: SceneState, observation: Observation,
                        memory: TaskMemory | None) -> Trace3D | None:
        """The expert's pick geometry over ``sg``'s object as read, or None where it does not apply: off, not a pick,
        an object the checkpoint's geometry does not know or the state model does not find, no arm joints in the
        observation, or a read the geometry cannot plan from
        (:meth:`tandem.core.pick_geometry.PickGeometry.pick_over_read`: e.g. non-finite, a degenerate x axis, lying
        on its side). Where the geometry knows the object but cannot be used, a ``geometric_pick_skipped`` memory
        event says why."""
        target = sg.args[0] if sg.args else None
        if (not self.geometric_picks or self.pick_geometry is None or sg.skill != self.grasp_skill
                or target not in self.pick_geometry.object_names()):
            return None
        why = None
        if observation.joints is None:
            why = "the observation carries no arm joints"
        elif target not in state.objects:
            why = "the state model does not know the object"
        elif not self._found(state, target):
            why = "the state model does not find the object"
        if why is not None:  # said, not silent: the trace model's pick is taken instead
            self._event(memory, "geometric_pick_skipped", observation.step, subgoal=sg.text, object=target, reason=why)
            return None
        proprio = np.asarray(observation.proprio, np.float64)
        eef, eef_yaw, wrist = proprio[:3], float(gripper_yaw(proprio)), float(observation.joints[-1])
        found = np.asarray(state.object_confidence) >= self.min_object_confidence
        result = self.pick_geometry.pick_over_read(target, state.objects, state.keypoints_3d, found, eef, eef_yaw,
                                                   wrist)
        if isinstance(result, str):
            self._event(memory, "geometric_pick_skipped", observation.step, subgoal=sg.text, object=target,
                        reason=result)
            return None
        waypoints, fields = result
        self._event(memory, "geometric_pick", observation.step, subgoal=sg.text, object=target, **fields)
        return waypoint_trace_3d(eef, eef_yaw, wrist, waypoints)

    @staticmethod
    def _close_offset(trace: Trace3D, target_xy: np.ndarray) -> float | None:
        """xy distance (m) from ``trace``'s first close of an open gripper to ``target_xy`` (None: it closes none)."""
        closes = close_rows(trace)
        return None if not len(closes) else float(np.linalg.norm(trace.points[closes[0], :2] - target_xy))

    def _anchored_pick(self, trace: Trace3D, sg: Subgoal, state: SceneState, observation: Observation,
                       memory: TaskMemory | None) -> Trace3D:
        """``trace``, or the trace asked again from the episode's start where its close misses ``sg``'s object by
        more than ``max_close_offset_m`` (xy). Only for an object the state model finds and the workcell knows."""
        target = sg.args[0] if sg.args else None
        if (self.max_close_offset_m is None or self._start_proprio is None or self.workcell is None
                or target not in self.workcell.extents or not self._found(state, target)):
            return trace
        target_xy = state.keypoints_3d[state.object_index(target), 0, :2]
        offset = self._close_offset(trace, target_xy)
        if offset is None or offset <= self.max_close_offset_m:
            return trace
        again = self.trace_model.predict(state.keypoints_3d, self.start_pose_proprio(observation.proprio), sg.skill,
                                         self.trace_args(sg))
        offset_again = self._close_offset(again, target_xy)
        if offset_again is None or offset_again >= offset or len(again) < 2:
            return trace
        self._event(memory, "pick_reanchored", observation.step, subgoal=sg.text, offset_from_m=round(offset, 4),
                    offset_to_m=round(offset_again, 4))
        points = np.array(again.points)
        points[0] = trace.points[0]
        return Trace3D(points=points, yaw=again.yaw, gripper=again.gripper, frame=trace.frame)

    def _snapped_to_prior(self, trace: Trace3D, sg: Subgoal, state: SceneState, memory: TaskMemory | None,
                          step: int) -> Trace3D:
        """``trace``, or with its first close of an open gripper moved onto the demonstrated grasp of ``sg``'s object
        where it misses it by more than ``grasp_prior_m`` (xy) or ``grasp_prior_deg``
        (:mod:`planner_vlm.learned.grasp_prior`). Only for an object the prior knows and the state model finds."""
        target = sg.args[0] if sg.args else None
        if (self.grasp_prior_m is None or self.grasp_prior is None or target not in self.grasp_prior.objects
                or target not in state.objects):
            return trace
        closes = close_rows(trace)
        if not self._found(state, target) or not len(closes):
            return trace
        grasp = self.grasp_prior.objects[target]
        point, yaw = grasp.grasp(state.keypoints_3d[state.object_index(target)])
        event = int(closes[0])
        miss_m, miss_rad = close_miss(trace, event, point, yaw, grasp.period_rad)
        if miss_m <= self.grasp_prior_m and math.degrees(miss_rad) <= self.grasp_prior_deg:
            return trace
        snapped = snapped_to_prior(trace, event, point, yaw, grasp.period_rad)
        self._event(memory, "grasp_prior_snapped", step, subgoal=sg.text, object=target, miss_m=round(miss_m, 4),
                    miss_deg=round(math.degrees(miss_rad), 1), yaw_from=round(float(trace.yaw[event]), 3),
                    yaw_to=round(float(snapped.yaw[event]), 3))
        return snapped

    def _checked_grasp(self, trace: Trace3D, sg: Subgoal, state: SceneState, memory: TaskMemory | None,
                       step: int) -> Trace3D:
        """``trace`` with its grasp yaw checked against the perceived scene (:mod:`planner_vlm.learned.grasp_check`):
        only for a trace that closes an open gripper on ``sg``'s first argument, with a workcell that knows it; only
        the objects the state model finds are obstacles."""
        closes = close_rows(trace)
        target = sg.args[0] if sg.args else None
        if self.workcell is None or not len(closes) or target not in self.workcell.extents:
            return trace
        found = {o: state.keypoints_3d[state.object_index(o)] for o in self.state_model.cfg.objects
                 if self._found(state, o)}
        if target not in found:
            return trace
        event = int(closes[0])
        predicted = float(trace.yaw[event])
        yaw, clear, before = checked_grasp_yaw(trace.points[event], predicted, target, found,
                                               self.trace_model.cfg.symmetries, self.workcell)
        if yaw == predicted:
            return trace
        # the same grasp (the fingers are symmetric under a half turn) by the shorter turn of the wrist from now
        now = float(trace.yaw[0])
        yaw = now + wrap_angle(yaw - now, math.pi)
        self._event(memory, "grasp_turned", step, subgoal=sg.text, yaw_from=round(predicted, 3), yaw_to=round(yaw, 3),
                    clearance_from_m=round(before, 4), clearance_to_m=round(clear, 4))
        return with_close_yaw(trace, event, yaw)

    def _wrist_resolved(self, trace: Trace3D, sg: Subgoal, observation: Observation,
                        memory: TaskMemory | None) -> Trace3D:
        """``trace`` with its first close of an open gripper at a yaw, modulo a half turn, that keeps the wrist inside
        ``wrist_limit_rad``. Unchanged when its own turn fits, when off, without the arm's joints, for a trace that
        closes none, or for an object that a half turn does not map onto itself."""
        closes = close_rows(trace)
        target = sg.args[0] if sg.args else None
        if self.wrist_limit_rad is None or observation.joints is None or not len(closes) or target is None:
            return trace
        if int(self.trace_model.cfg.symmetries.get(target, 1)) % 2 == 1:
            return trace  # a half turn changes the grasp (a nut): the trace model's turn stands
        event = int(closes[0])
        asked, now, wrist = float(trace.yaw[event]), float(trace.yaw[0]), float(observation.joints[-1])
        if abs(predicted_wrist(wrist, asked, now)) <= self.wrist_limit_rad - WRIST_MARGIN_RAD:
            return trace  # the model's turn fits (a long one may be planned for the swing to the place)
        yaw = resolve_yaw(asked, now, wrist, limit=self.wrist_limit_rad)
        if abs(yaw - asked) < 1e-6:
            return trace
        self._event(memory, "grasp_wrist_resolved", observation.step, subgoal=sg.text, yaw_from=round(asked, 3),
                    yaw_to=round(yaw, 3), wrist_rad=round(wrist, 3))
        return with_close_yaw(trace, event, yaw)
