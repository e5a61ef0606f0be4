"""Demonstration collection: run the agent loop and turn each control step into a labelled dataset frame.

This is wiring (it may import ``sim`` through :mod:`tandem.assembly` and ``executor_vla``). The pieces:

* :class:`OracleFrameLabeller` is the ``on_step`` callback of :func:`tandem.rollout.run_episode`. It turns
  every :class:`~tandem.rollout.StepRecord` into one frame of the :mod:`executor_vla.schema`. It reads the
  simulator's ground-truth predicates (``Observation.privileged``) to label subgoal and task success, so it
  is an *oracle* labeller and works in simulation only.
* :class:`DartNoiseEnv` wraps an env and adds Gaussian noise to the **executed** action while the dataset
  keeps the expert's clean action as the label (DART: Laskey et al., "DART: Noise Injection for Robust
  Imitation Learning", CoRL 2017). The expert then demonstrates how to recover from the drift.
* :func:`collect_episode` runs one episode into a :class:`~executor_vla.dataset_writer.TandemDatasetWriter`;
  :func:`collect` runs many, resumes an interrupted collection and reports throughput.

Frame convention (LeRobot's): frame ``t`` holds the observation the action was chosen from and that action.
Labels of frame ``t`` (all from the frame's own observation unless stated):

* ``subgoal.index``: 0-based ordinal of the subgoal *attempt* in the episode. It grows by one every time the
  agent starts a subgoal, so a retry of the same subgoal gets a new index, and each index has one goal image
  and one trace.
* ``subgoal.task_index``: LeRobot task index of the attempt's subgoal text.
* ``subgoal.goal_image`` / ``subgoal.trace`` / ``subgoal.trace_mask``: the attempt's goal image (when the dataset
  stores goal images) and its trace resampled by arc length to K points (mask 1); with no trace the points are 0
  and the mask is 0.
* ``subgoal.trace_3d`` / ``subgoal.trace_3d_mask``: the attempt's 3-D trace padded to K3 rows
  (:func:`executor_vla.schema.pad_trace_3d`); zeros and mask 0 without one.
* ``subgoal.progress``: ``(i + 1) / n`` for the i-th of the attempt's n frames.
* ``subgoal.success``: 1 iff the subgoal's predicate holds in the frame's observation **and** the attempt was
  not judged failed (frames of a failed attempt are all 0: they are the negatives a verifier needs).
* ``task.success``: 1 iff every goal predicate holds in the frame's observation.
* ``labels.predicates`` / ``labels.keypoints_3d`` / ``labels.keypoints_px`` (with ``dataset.labels=true``, the
  default): the frame's ground-truth predicates over the task's label vocabulary and two keypoints per object in
  m and in agentview pixels (:func:`executor_vla.schema.object_keypoints`), the targets of the learned state model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from executor_vla import schema
from tandem.assembly import config_get
from tandem.errors import ConfigError, DatasetSchemaError, SubgoalSchemaError, TandemError
from tandem.protocols import Env
from tandem.rollout import StepRecord, run_episode
from tandem.types import KeypointTrace, Observation, Subgoal, TaskSpec


def resample_trace(trace: KeypointTrace | None, k: int, image_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """A keypoint trace as a fixed-size array: ``K`` points equally spaced by arc length along the polyline.

    Args:
        trace: ``points (K', 2)`` px ``(x right, y down)``, origin top-left, or None.
        k: K, output points.
        image_size: ``(H, W)`` px of the trace's camera; points are clipped into ``[0, W-1] x [0, H-1]``.

    Returns:
        ``(points float32 (K, 2), mask float32 (K,))``. The first and last points are the trace's own
        first and last points. With ``trace=None`` both are zeros (mask 0 = no trace). A trace of one
        point, or of zero length, repeats that point.

    Raises:
        SubgoalSchemaError: the trace has non-finite points or was made for another image size.
    """
    pts = np.zeros((k, 2), np.float32)
    if trace is None:
        return pts, np.zeros(k, np.float32)
    p = np.asarray(trace.points, np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or len(p) == 0 or not np.all(np.isfinite(p)):
        raise SubgoalSchemaError(f"trace points must be finite (K, 2), got {p.shape}")
    if tuple(trace.image_size) != tuple(image_size):
        raise SubgoalSchemaError(f"trace is for a {tuple(trace.image_size)} image, the dataset stores {tuple(image_size)}")
    seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    if len(p) == 1 or cum[-1] <= 1e-9:
        out = np.repeat(p[:1], k, axis=0)
    else:
        s = np.linspace(0.0, cum[-1], k)
        out = np.stack([np.interp(s, cum, p[:, 0]), np.interp(s, cum, p[:, 1])], axis=1)
        out[0], out[-1] = p[0], p[-1]
    h, w = image_size
    out[:, 0] = np.clip(out[:, 0], 0, w - 1)
    out[:, 1] = np.clip(out[:, 1], 0, h - 1)
    return out.astype(np.float32), np.ones(k, np.float32)


class DartNoiseEnv:
    """Adds DART noise to executed actions: ``a_exec = clip(a + N(0, sigma^2), low, high)`` on the arm dims.

    The caller records the clean action ``a`` (the expert's label); the env executes ``a_exec``
    (Laskey et al. 2017). Every other attribute is the wrapped env's.

    Args:
        env: the env to wrap.
        sigma: noise standard deviation in action units (the OSC action is in ``[-1, 1]``); 0 = no noise.
        rng: noise generator (seed it per episode for reproducible demos).
        gripper: also perturb the gripper dimension (the last one). Off by default: a flipped gripper
            command drops the object, which is a perturbation rather than noise.

    Raises:
        ConfigError: ``sigma < 0``.
    """

    def __init__(self, env: Env, sigma: float, rng: np.random.Generator, gripper: bool = False) -> None:
        if sigma < 0:
            raise ConfigError(f"DART noise sigma must be >= 0, got {sigma}")
        self.env, self.sigma, self.rng, self.gripper = env, float(sigma), rng, bool(gripper)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def reset(self, seed: int | None = None) -> tuple[Observation, dict[str, Any]]:
        return self.env.reset(seed=seed)

    def step(self, action: np.ndarray) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Step with the noisy action; ``info["executed_action"]`` is the ``float32 (A,)`` action applied."""
        a = np.asarray(action, np.float32).copy()
        if self.sigma > 0:
            n = a.shape[0] if self.gripper else a.shape[0] - 1
            a[:n] += self.rng.normal(0.0, self.sigma, size=n).astype(np.float32)
            a = np.clip(a, self.env.action_low, self.env.action_high)
        obs, r, term, trunc, info = self.env.step(a)
        info = dict(info)
        info["executed_action"] = a
        return obs, r, term, trunc, info

    def close(self) -> None:
        self.env.close()


class ContinuePastSuccessEnv:
    """Reports ``terminated=False`` on task success so the episode goes on until the agent finishes.

    ``run_episode`` ends an episode on the step the env first reports success, so the observation showing
    success would never be a frame (frame t holds the observation *before* action t). Past that step the
    expert completes its last subgoal (release, retreat) and the agent verifies it, so the dataset holds
    settled frames with ``task.success = 1`` and a verdict for the last attempt. ``truncated`` still ends it.
    """

    def __init__(self, env: Env) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def reset(self, seed: int | None = None) -> tuple[Observation, dict[str, Any]]:
        return self.env.reset(seed=seed)

    def step(self, action: np.ndarray) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        obs, r, _terminated, truncated, info = self.env.step(action)
        return obs, r, False, truncated, info

    def close(self) -> None:
        self.env.close()


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
        self._blank = np.zeros((*self.image_size, 3), np.uint8)

    def start_episode(self) -> None:
        """Forget the previous episode (call before ``run_episode``)."""
        self.task, self.pending, self.attempts = None, None, []
        self.frames_written, self.last_record, self.fatal = 0, None, None

    # ------------------------------------------------------------------ the callback
    def __call__(self, rec: StepRecord) -> None:
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
                              "reason": reason,
                              "from_frame": p.first_frame, "to_frame": p.first_frame + n,
                              "has_goal_image": p.subgoal.goal_image is not None,
                              "has_trace": p.subgoal.trace is not None, "has_trace_3d": p.subgoal.trace_3d is not None})
        self.frames_written += n
        self.pending = None

    def finish_episode(self, verdicts: list[dict[str, Any]]) -> None:
        """Flush the last attempt (judged by its verdict, or by the predicate on the final observation)."""
        if self.pending is not None:
            final = self.last_record.next_obs if self.last_record is not None else None
            self._flush(verdicts, final_obs=final)


@dataclass
class EpisodeOutcome:
    """What :func:`collect_episode` did with one episode.

    Attributes:
        seed: episode seed.
        saved: whether it was written to the dataset.
        episode_index: its index in the dataset when saved, else None.
        frames: frames recorded.
        summary: ``run_episode``'s summary (success, failure, attempts, replans, perturbations...).
        record: the per-episode record kept in the dataset journal.
        wall_s: wall time of the episode, writing included (s).
    """

    seed: int
    saved: bool
    episode_index: int | None
    frames: int
    summary: dict[str, Any]
    record: dict[str, Any]
    wall_s: float


def collect_episode(env: Env, agent: Any, writer: Any, labeller: OracleFrameLabeller, seed: int, *,
                    keep_failed: bool = False, max_steps: int | None = None, dart_sigma: float = 0.0,
                    dart_gripper: bool = False, extra: Mapping[str, Any] | None = None,
                    state: Mapping[str, Any] | None = None) -> EpisodeOutcome:
    """Run one episode with ``agent`` on ``env`` and write its frames with ``labeller`` into ``writer``.

    The episode runs past the env's first success report (``stop_on_success=False`` and
    :class:`ContinuePastSuccessEnv`) until the agent finishes, so the final subgoal's settled frames, with
    ``task.success = 1``, are recorded. ``summary["success"]`` is the env's success at the last step.

    Args:
        keep_failed: save the episode even when the task failed (its failed attempts stay labelled 0).
        max_steps: control-step cap (default: the task's).
        dart_sigma: DART noise on executed actions (action units); 0 = none.
        extra: extra JSON-safe facts stored in the episode record.
        state: collector state stored with the commit (e.g. the next seed).

    Raises:
        DatasetWriteError / DatasetSchemaError: a write or schema problem (never swallowed as an episode failure).
        KeyboardInterrupt: passed through; the unsaved episode is discarded.
    """
    t0 = time.perf_counter()
    run_env: Any = ContinuePastSuccessEnv(env)
    if dart_sigma > 0:
        run_env = DartNoiseEnv(run_env, dart_sigma, np.random.default_rng([int(seed), 0xDA27]), gripper=dart_gripper)
    labeller.start_episode()
    try:
        result = run_episode(run_env, agent, seed=int(seed), out_dir=None, record_video=False, max_steps=max_steps,
                             on_step=labeller, stop_on_success=False)
        if labeller.fatal is not None:
            raise labeller.fatal
        labeller.finish_episode(agent.status.verdicts)
    except BaseException:
        writer.discard_episode()
        raise
    s = result.summary
    record = {
        "seed": int(seed), "task": s.get("task"), "instruction": s.get("instruction"), "success": bool(s["success"]),
        "failure": s.get("failure"), "steps": int(s.get("steps", 0)), "frames": labeller.frames_written,
        "attempts": labeller.attempts, "failed_attempts": sum(not a["success"] for a in labeller.attempts),
        "replans": s.get("replans"), "perturbations": s.get("perturbations", []),
        "dart_sigma": float(dart_sigma), **dict(extra or {}),
    }
    saved = labeller.frames_written > 0 and (bool(s["success"]) or keep_failed)
    index = None
    if saved:
        index = writer.save_episode(record, state=state)
    else:
        writer.discard_episode()
        if state:
            writer.update_state(state)
    return EpisodeOutcome(seed=int(seed), saved=saved, episode_index=index, frames=labeller.frames_written,
                          summary=s, record=record, wall_s=time.perf_counter() - t0)


@dataclass
class CollectReport:
    """Result of :func:`collect` (JSON-safe via ``dataclasses.asdict``).

    Attributes:
        root: dataset directory.
        episodes_total: episodes in the dataset at the end.
        episodes_saved: episodes saved by this run; ``episodes_discarded``: failed ones not kept.
        frames_saved: frames written by this run.
        successes: successful episodes among those run.
        recovered: what opening the dataset rolled back (after an interrupted run).
        wall_s: wall time of the episodes (s); ``env_steps``: control steps run.
        demos_per_hour: saved episodes per hour of wall time of this run.
        interrupted: the run was stopped by Ctrl-C (saved episodes are committed).
    """

    root: str
    episodes_total: int
    episodes_saved: int = 0
    episodes_discarded: int = 0
    frames_saved: int = 0
    successes: int = 0
    recovered: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    env_steps: int = 0
    demos_per_hour: float = 0.0
    interrupted: bool = False
    seeds: list[int] = field(default_factory=list)


def stores_goal_images(cfg: Any) -> bool:
    """Whether a collect config records goal images: the oracle goal producer renders them (``goals.goal_image``),
    which needs a rendering env (``env.render``)."""
    goals = config_get(cfg, "goals", {}) or {}
    return (config_get(goals, "name", "oracle") != "none" and bool(config_get(goals, "goal_image", True))
            and bool(config_get(config_get(cfg, "env", {}) or {}, "render", True)))


def label_vocabulary(cfg: Any) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The task's ``(objects, predicates)`` when ``cfg.dataset.labels`` (default true) and a registered task is
    configured, else None.

    Raises:
        UnknownTaskError: a task name that is not registered.
    """
    name = config_get(config_get(cfg, "task"), "name")
    if name is None or not bool(config_get(config_get(cfg, "dataset", {}) or {}, "labels", True)):
        return None
    from sim.tasks.registry import make_task

    return make_task(name).label_vocabulary()


def open_writer(cfg: Any) -> Any:
    """The dataset writer for a collect config (``out``, ``repo_id``, ``env``, ``dataset``, ``resume``).

    Raises:
        DatasetSchemaError: ``out`` holds a dataset of a different schema (nothing is written).
        ConfigError: bad settings.
    """
    from executor_vla.dataset_writer import TandemDatasetWriter

    env_cfg, ds_cfg = config_get(cfg, "env", {}) or {}, config_get(cfg, "dataset", {}) or {}
    out = config_get(cfg, "out")
    if not out:
        raise ConfigError("collect needs out=<dataset directory>")
    cameras = tuple(config_get(env_cfg, "cameras", schema.CAMERAS)) if config_get(env_cfg, "render", True) else ()
    return TandemDatasetWriter(
        out, str(config_get(cfg, "repo_id", "tandem/dataset")),
        image_size=tuple(config_get(env_cfg, "image_size", schema.IMAGE_SIZE)),
        trace_len=int(config_get(ds_cfg, "trace_len", schema.TRACE_LEN)), cameras=cameras,
        goal_image=stores_goal_images(cfg), labels=label_vocabulary(cfg),
        checkpoint_every=int(config_get(ds_cfg, "checkpoint_every", 1)), mode=str(config_get(cfg, "resume", "auto")),
        image_threads=int(config_get(ds_cfg, "image_threads", 0)),
    )


def collect(cfg: Any, *, on_episode: Callable[[EpisodeOutcome, Any], None] | None = None,
            observer: Callable[[StepRecord], None] | None = None, stack: Any = None) -> CollectReport:
    """Collect demonstrations until the dataset at ``cfg.out`` holds ``cfg.episodes`` episodes.

    ``episodes`` is the target total: rerunning the same command after an interruption finishes the job.
    Seeds run ``cfg.seed, cfg.seed + 1, ...`` (continuing from the dataset's recorded next seed on resume).
    With ``keep_failed=false`` failed episodes are discarded; at most ``max_tries`` episodes are run.

    Args:
        cfg: the ``configs/collect.yaml`` config (or a nested dict with the same keys).
        on_episode: called after every episode with its outcome and the writer (progress display).
        observer: called on every StepRecord (progress display, tests).
        stack: a prebuilt :class:`tandem.assembly.Stack` (tests); built from ``cfg`` otherwise and closed here.

    Returns:
        CollectReport. A Ctrl-C stops after committing the saved episodes (``interrupted=True``).

    Raises:
        DatasetSchemaError: ``out`` holds a dataset with another schema, or a frame does not fit the schema.
        DatasetWriteError: a write failed (the dataset is rolled back to its last commit, which is intact).
        UnknownNameError / ConfigError: bad task, component or setting names.
    """
    from tandem.assembly import build_stack

    target = int(config_get(cfg, "episodes", 1))
    if target < 1:
        raise ConfigError(f"episodes must be >= 1, got {target}")
    dart = config_get(cfg, "dart", {}) or {}
    sigma = float(config_get(dart, "sigma", 0.0) or 0.0)
    if sigma < 0:
        raise ConfigError(f"dart.sigma must be >= 0, got {sigma}")
    fraction = float(config_get(cfg, "perturb_fraction", 1.0))
    if not 0.0 <= fraction <= 1.0:
        raise ConfigError(f"perturb_fraction must be in [0, 1], got {fraction}")
    freq = int(config_get(config_get(cfg, "env", {}) or {}, "control_freq", schema.FPS))
    if freq != schema.FPS:
        raise ConfigError(f"env.control_freq must equal the dataset fps ({schema.FPS} Hz), got {freq}")
    keep_failed = bool(config_get(cfg, "keep_failed", False))
    max_steps = config_get(cfg, "max_steps", None)
    max_steps = None if max_steps in (None, "null") else int(max_steps)
    writer = open_writer(cfg)  # schema check before the (slow) env is built
    report = CollectReport(root=str(writer.root), episodes_total=writer.num_episodes, recovered=list(writer.recovered))
    own_stack = stack is None
    failed = True
    try:
        if writer.num_episodes >= target:
            failed = False
            return report
        if own_stack:
            stack = build_stack(cfg)
        env, agent = stack.env, stack.agent
        perturbation = getattr(env, "perturbation", None)
        env_cfg, ds_cfg = config_get(cfg, "env", {}) or {}, config_get(cfg, "dataset", {}) or {}
        labels = label_vocabulary(cfg)
        labeller = OracleFrameLabeller(writer, cameras=tuple(writer.cameras), goal_image=stores_goal_images(cfg),
                                       labels=labels,
                                       project=(lambda pts: env.world_to_pixel(pts, "agentview")) if labels else None,
                                       image_size=tuple(config_get(env_cfg, "image_size", schema.IMAGE_SIZE)),
                                       trace_len=int(config_get(ds_cfg, "trace_len", schema.TRACE_LEN)), observer=observer)
        seed = int(writer.state.get("next_seed", int(config_get(cfg, "seed", 0)) + writer.num_episodes))
        max_tries = config_get(cfg, "max_tries", None)
        max_tries = 3 * (target - writer.num_episodes) if max_tries in (None, "null") else int(max_tries)
        t0 = time.perf_counter()
        tries = 0
        try:
            while writer.num_episodes < target and tries < max_tries:
                tries += 1
                perturbed = perturbation is not None and np.random.default_rng([seed, 0x9E]).random() < fraction
                if perturbation is not None:
                    env.perturbation = perturbation if perturbed else None
                out = collect_episode(env, agent, writer, labeller, seed, keep_failed=keep_failed,
                                      max_steps=max_steps, dart_sigma=sigma,
                                      dart_gripper=bool(config_get(dart, "gripper", False)),
                                      extra={"perturbation": perturbation.name if perturbed else None},
                                      state={"next_seed": seed + 1})
                seed += 1
                report.seeds.append(out.seed)
                report.env_steps += int(out.summary.get("steps", 0))
                report.successes += int(bool(out.summary.get("success")))
                if out.saved:
                    report.episodes_saved += 1
                    report.frames_saved += out.frames
                else:
                    report.episodes_discarded += 1
                if on_episode is not None:
                    on_episode(out, writer)
        except KeyboardInterrupt:
            report.interrupted = True
        report.wall_s = time.perf_counter() - t0
        if perturbation is not None:
            env.perturbation = perturbation
        failed = False
    finally:
        # never let a failing close() hide the error that is propagating
        with contextlib.suppress(Exception) if failed else contextlib.nullcontext():
            writer.close()
        if own_stack and stack is not None:
            stack.close()
    report.episodes_total = writer.num_episodes
    report.demos_per_hour = 3600.0 * report.episodes_saved / report.wall_s if report.wall_s > 0 else 0.0
    return report


def report_json(report: CollectReport) -> dict[str, Any]:
    """JSON-safe dict of a :class:`CollectReport`."""
    return dataclasses.asdict(report)


__all__ = ["CollectReport", "ContinuePastSuccessEnv", "DartNoiseEnv", "EpisodeOutcome", "OracleFrameLabeller", "collect", "collect_episode",
           "open_writer", "report_json", "resample_trace", "TandemError"]
