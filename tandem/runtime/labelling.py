"""Oracle frame labelling: every control step of a collected episode becomes one labelled dataset frame.

:class:`OracleFrameLabeller` is the ``on_step`` callback of :func:`tandem.runtime.rollout.run_episode`. It turns
every :class:`~tandem.runtime.rollout.StepRecord` into one frame of :mod:`tandem.core.dataset_schema`. It reads the
simulator's ground-truth predicates (``Observation.privileged``) to label subgoal and task success, so it is an
*oracle* labeller and works in simulation only (it runs in the runtime, never inside a non-oracle component).

Frame convention (LeRobot's): frame ``t`` holds the observation the action was chosen from and that action.
Labels of frame ``t`` (all from the frame's own observation unless stated):

* ``subgoal.index``: 0-based ordinal of the subgoal *attempt* in the episode. It grows by one every time the
  agent starts a subgoal, so a retry of the same subgoal gets a new index, and each index has one goal image
  and one trace.
* ``subgoal.task_index``: LeRobot task index of the attempt's subgoal text.
* ``subgoal.goal_image`` / ``subgoal.trace`` / ``subgoal.trace_mask``: the attempt's goal image and its trace
  resampled by arc length to K points and clipped to the image (:func:`tandem.core.traces.resample_trace`, the
  same function the executor applies at run time; mask 1); with no trace the points are 0 and the mask is 0. A
  dataset collected without rendering stores no goal image.
* ``subgoal.trace_3d`` / ``subgoal.trace_3d_mask``: the attempt's 3-D trace padded to K3 rows
  (:func:`tandem.core.dataset_schema.pad_trace_3d`, the conversion the track executor applies at run time); zeros
  and mask 0 without one.
* ``labels.predicates`` / ``labels.keypoints_3d`` / ``labels.keypoints_px`` (with ``labels``): the frame's
  ground-truth predicates over the task's label vocabulary and two keypoints per object in m and in agentview
  pixels (:func:`tandem.core.dataset_schema.object_keypoints`), the targets of the learned state model.
* ``subgoal.progress``: ``(i + 1) / n`` for the i-th of the attempt's n frames.
* ``subgoal.success``: 1 iff the subgoal's predicate holds in the frame's observation **and** the attempt was
  not judged failed (frames of a failed attempt are all 0: they are the negatives a verifier needs).
* ``task.success``: 1 iff every goal predicate holds in the frame's observation.

Each attempt is also summarised in the episode's journal record (``attempts``): its signature, text, frames,
``success``, ``verified`` (the agent gave it a verdict) and ``cut`` (the episode ended while it was active, e.g.
at the step cap: it was verified on the last observation, or not at all, but not finished).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError, SubgoalSchemaError
from tandem.core.traces import resample_trace
from tandem.core.types import Observation, Subgoal, TaskSpec
from tandem.runtime.rollout import StepRecord


@dataclass
class _Pending:
    """Frames of the subgoal attempt being recorded (flushed to the writer when it ends)."""

    index: int
    subgoal: Subgoal
    predicate: str | None
    task_index: int
    goal_image: np.ndarray | None
    trace: np.ndarray
    trace_mask: np.ndarray
    trace_3d: np.ndarray
    trace_3d_mask: np.ndarray
    frames: list[dict[str, Any]] = field(default_factory=list)
    holds: list[bool] = field(default_factory=list)
    first_frame: int = 0


class OracleFrameLabeller:
    """``on_step`` callback that writes labelled frames of one episode (privileged: reads sim predicates).

    Frames of a subgoal attempt are buffered until the attempt ends (its progress and outcome are known then),
    then handed to ``writer.add_frame``. See the module docstring for every label.

    Args:
        writer: where frames go (a :class:`~executor_vla.dataset_writer.TandemDatasetWriter`).
        cameras: cameras stored as ``observation.images.<camera>``; each must be in ``Observation.images``.
        image_size: ``(H, W)`` px of the cameras and the goal image.
        trace_len: K, trace points per frame.
        observer: optional extra callback on every StepRecord (tests, progress display).
        goal_image: write ``subgoal.goal_image`` (the writer's schema must have it).
        labels: ``(objects, predicates)`` to write the ``labels.*`` features over (the writer's schema must have
            them), or None.
        project: world points ``(N, 3)`` m -> agentview pixels ``(N, 2)`` at ``image_size`` (for
            ``labels.keypoints_px``); required with ``labels``.

    Raises:
        ConfigError: ``labels`` without ``project``.
    """

    def __init__(self, writer: Any, cameras: tuple[str, ...] = schema.CAMERAS,
                 image_size: tuple[int, int] = schema.IMAGE_SIZE, trace_len: int = schema.TRACE_LEN,
                 observer: Callable[[StepRecord], None] | None = None, goal_image: bool = True,
                 labels: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
                 project: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        if labels is not None and project is None:
            raise ConfigError("OracleFrameLabeller(labels=...) needs project= (world -> agentview pixels)")
        self.writer = writer
        self.goal_image = bool(goal_image)
        self.labels = labels
        self.project = project
        self.cameras = tuple(cameras)
        self.image_size = (int(image_size[0]), int(image_size[1]))
        self.trace_len = int(trace_len)
        self.observer = observer
        self.task: TaskSpec | None = None
        self.pending: _Pending | None = None
        self.attempts: list[dict[str, Any]] = []
        self.frames_written = 0
        self.last_record: StepRecord | None = None
        self.fatal: BaseException | None = None
        self.hold_steps_skipped = 0  # hold actions of the agent (no subgoal): not written
        self._hold_steps_seen = 0
        self._blank = np.zeros((*self.image_size, 3), np.uint8)

    def start_episode(self) -> None:
        """Forget the previous episode (call before ``run_episode``)."""
        self.task, self.pending, self.attempts = None, None, []
        self.frames_written, self.last_record, self.fatal = 0, None, None
        self.hold_steps_skipped, self._hold_steps_seen = 0, 0

    # ------------------------------------------------------------------ the callback
    def __call__(self, rec: StepRecord) -> None:
        """Label one control step (the rollout's step callback); an error is kept in :attr:`fatal` and re-raised."""
        try:
            self._on_step(rec)
        except BaseException as e:
            self.fatal = e  # run_episode records errors as a failed episode; the collector re-raises this
            raise
        if self.observer is not None:
            self.observer(rec)

    def _on_step(self, rec: StepRecord) -> None:
        agent = rec.agent
        self.task = agent.task
        hold_steps = getattr(agent.status, "hold_steps", 0)  # an agent without the counter never holds
        holding = rec.subgoal is None and hold_steps > self._hold_steps_seen
        self._hold_steps_seen = hold_steps
        if holding:  # the agent held still (between its confirmation reads): a step of no subgoal, not a frame
            self.hold_steps_skipped += 1
            return
        if rec.subgoal is None:
            raise SubgoalSchemaError(f"step {rec.step}: an action without an active subgoal cannot be labelled")
        index = agent.status.attempts - 1
        if self.pending is None or self.pending.index != index:
            if self.pending is not None:
                self._flush(agent.status.verdicts, final_obs=None)
            self.pending = self._begin(index, rec.subgoal)
        self.pending.frames.append(self._frame(rec))
        self.pending.holds.append(self._holds(rec.obs, self.pending.predicate))
        self.last_record = rec

    def _begin(self, index: int, sg: Subgoal) -> _Pending:
        goal = None
        if self.goal_image:
            goal = sg.goal_image if sg.goal_image is not None else self._blank
            if goal.shape != (*self.image_size, 3) or goal.dtype != np.uint8:
                raise SubgoalSchemaError(f"subgoal {sg.signature}: goal image must be uint8 {(*self.image_size, 3)}, "
                                         f"got {goal.dtype} {goal.shape}")
        if sg.trace is not None and tuple(sg.trace.image_size) != self.image_size:
            raise SubgoalSchemaError(f"subgoal {sg.signature}: trace is for a {tuple(sg.trace.image_size)} image, "
                                     f"the dataset stores {self.image_size}")
        trace, mask = resample_trace(sg.trace, self.trace_len, self.image_size)
        trace_3d, mask_3d = schema.pad_trace_3d(sg.trace_3d)
        predicate = None
        if self.task is not None and sg.skill in self.task.skills:
            predicate = self.task.predicate_for(sg.skill, sg.args)
        return _Pending(index=index, subgoal=sg, predicate=predicate,
                        task_index=self.writer.subgoal_task_index(sg.text), goal_image=goal, trace=trace,
                        trace_mask=mask, trace_3d=trace_3d, trace_3d_mask=mask_3d, first_frame=self.frames_written)

    @staticmethod
    def _holds(obs: Observation, predicate: str | None) -> bool:
        preds = (obs.privileged or {}).get("predicates") or {}
        return bool(predicate is not None and preds.get(predicate, False))

    def _frame(self, rec: StepRecord) -> dict[str, Any]:
        obs = rec.obs
        frame: dict[str, Any] = {}
        for cam in self.cameras:
            if cam not in obs.images:
                raise DatasetSchemaError(f"observation has no {cam!r} image (has {sorted(obs.images)})")
            frame[schema.image_key(cam)] = obs.images[cam]
        frame[schema.STATE_KEY] = np.asarray(obs.proprio, np.float32)
        frame[schema.ACTION_KEY] = np.asarray(rec.action, np.float32)
        frame[schema.TASK_SUCCESS_KEY] = np.array([float(bool((obs.privileged or {}).get("success", False)))],
                                                  np.float32)
        frame["task"] = self.task.instruction if self.task is not None else ""
        if self.labels is not None:
            frame.update(self._labels(obs))
        return frame

    def _labels(self, obs: Observation) -> dict[str, np.ndarray]:
        """The ``labels.*`` features of one observation, from its privileged ground truth."""
        assert self.labels is not None and self.project is not None
        objects, predicates = self.labels
        priv = obs.privileged or {}
        poses, preds = priv.get("objects") or {}, priv.get("predicates") or {}
        missing = [o for o in objects if o not in poses] + [p for p in predicates if p not in preds]
        if missing:
            raise DatasetSchemaError(f"step {obs.step}: the simulator's ground truth lacks {missing[:5]} of the "
                                     "label vocabulary (TaskDefinition.label_vocabulary)")
        kp = np.concatenate([schema.object_keypoints(poses[o]["pos"], poses[o]["quat"]) for o in objects])
        return {schema.LABEL_PREDICATES_KEY: np.array([float(bool(preds[p])) for p in predicates], np.float32),
                schema.LABEL_KEYPOINTS_3D_KEY: kp.reshape(-1).astype(np.float32),
                schema.LABEL_KEYPOINTS_PX_KEY: np.asarray(self.project(kp), np.float32).reshape(-1)}

    def _flush(self, verdicts: list[dict[str, Any]], final_obs: Observation | None) -> None:
        p = self.pending
        assert p is not None
        verified = p.index < len(verdicts)
        if verified:
            ok, reason = bool(verdicts[p.index]["success"]), str(verdicts[p.index].get("reason", ""))
        else:  # the episode ended before the attempt was verified: judge it on the final observation
            ok = self._holds(final_obs, p.predicate) if final_obs is not None else False
            reason = "episode ended before verification; predicate " + ("holds" if ok else "does not hold") + " at the end"
        n = len(p.frames)
        for i, frame in enumerate(p.frames):
            frame[schema.SUBGOAL_INDEX_KEY] = np.array([p.index], np.int64)
            frame[schema.SUBGOAL_TASK_INDEX_KEY] = np.array([p.task_index], np.int64)
            if p.goal_image is not None:
                frame[schema.GOAL_IMAGE_KEY] = p.goal_image
            frame[schema.TRACE_KEY] = p.trace
            frame[schema.TRACE_MASK_KEY] = p.trace_mask
            frame[schema.TRACE_3D_KEY] = p.trace_3d
            frame[schema.TRACE_3D_MASK_KEY] = p.trace_3d_mask
            frame[schema.PROGRESS_KEY] = np.array([(i + 1) / n], np.float32)
            frame[schema.SUBGOAL_SUCCESS_KEY] = np.array([float(ok and p.holds[i])], np.float32)
            self.writer.add_frame(frame)
        self.attempts.append({"index": p.index, "id": p.subgoal.id, "signature": p.subgoal.signature,
                              "text": p.subgoal.text, "task_index": p.task_index, "success": ok, "verified": verified,
                              "cut": not verified or bool(verdicts[p.index].get("at_episode_end", False)),
                              "reason": reason,
                              "from_frame": p.first_frame, "to_frame": p.first_frame + n,
                              "has_goal_image": p.subgoal.goal_image is not None,
                              "has_trace": p.subgoal.trace is not None,
                              "has_trace_3d": p.subgoal.trace_3d is not None})
        self.frames_written += n
        self.pending = None

    def finish_episode(self, verdicts: list[dict[str, Any]]) -> None:
        """Flush the last attempt (judged by its verdict, or by the predicate on the final observation)."""
        if self.pending is not None:
            final = self.last_record.next_obs if self.last_record is not None else None
            self._flush(verdicts, final_obs=final)


__all__ = ["OracleFrameLabeller"]
