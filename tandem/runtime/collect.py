"""Demonstration collection: run the agent loop and write each episode as labelled dataset frames.

* :class:`DartNoiseEnv` wraps an env and adds Gaussian noise to the **executed** action while the dataset
  keeps the expert's clean action as the label (DART: Laskey et al., "DART: Noise Injection for Robust
  Imitation Learning", CoRL 2017). The expert then demonstrates how to recover from the drift.
* :class:`ContinuePastSuccessEnv` lets an episode run past the env's first success report.
* :func:`collect_episode` runs one episode into a :class:`~executor_vla.dataset_writer.TandemDatasetWriter`, its
  frames labelled by :class:`~tandem.runtime.labelling.OracleFrameLabeller` (see there for every label);
  :func:`collect` runs many, resumes an interrupted collection and reports throughput.

Stacks are built through :mod:`tandem.runtime.registry`, as for the demo and the evaluation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError
from tandem.core.protocols import Env
from tandem.core.types import Observation
from tandem.runtime.config import CollectConfig, load
from tandem.runtime.labelling import OracleFrameLabeller
from tandem.runtime.rollout import StepRecord, run_episode


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
        """Reset the wrapped env (see ``Env.reset``)."""
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
        """Close the wrapped env."""
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
        """Reset the wrapped env (see ``Env.reset``)."""
        return self.env.reset(seed=seed)

    def step(self, action: np.ndarray) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Step the wrapped env; success does not terminate the episode (see the class), truncation still does."""
        obs, r, _terminated, truncated, info = self.env.step(action)
        return obs, r, False, truncated, info

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()


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


def stores_goal_images(cfg: CollectConfig) -> bool:
    """Whether a collect config records goal images: the oracle goal producer renders them (``goals.goal_image``),
    which needs a rendering env (``env.render``)."""
    return cfg.goals.name != "none" and bool(getattr(cfg.goals, "goal_image", True)) and cfg.env.render


def label_vocabulary(cfg: CollectConfig) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The task's ``(objects, predicates)`` (``TaskDefinition.label_vocabulary``) when ``cfg.dataset.labels``.

    Raises:
        UnknownTaskError: a task name that is not registered.
    """
    if not cfg.dataset.labels:
        return None
    from sim.tasks.registry import make_task

    return make_task(cfg.task.name).label_vocabulary()


def check_label_camera(cfg: CollectConfig) -> None:
    """Refuse a rendering collection whose ``dataset.label_camera`` is not among ``env.cameras``: its keypoint labels
    would be the pixels of a camera whose images the dataset does not hold.

    Raises:
        ConfigError: naming the label camera and the env's cameras.
    """
    camera = cfg.dataset.label_camera
    if cfg.env.render and camera not in cfg.env.cameras:
        raise ConfigError(f"dataset.label_camera={camera!r} is not among env.cameras {list(cfg.env.cameras)}: the "
                          "keypoint labels must be in the pixels of a stored camera")


def stored_cameras(cfg: CollectConfig) -> tuple[str, ...]:
    """The cameras a collect config stores: ``env.cameras``, none without rendering (a low-dimensional dataset)."""
    return tuple(cfg.env.cameras) if cfg.env.render else ()


def open_writer(cfg: CollectConfig) -> Any:
    """The dataset writer for a collect config (``out``, ``repo_id``, ``env``, ``dataset``, ``resume``).

    Raises:
        DatasetSchemaError: ``out`` holds a dataset of a different schema (nothing is written).
        ConfigError: bad settings.
    """
    from executor_vla.dataset_writer import TandemDatasetWriter

    return TandemDatasetWriter(
        cfg.out, cfg.repo_id, image_size=tuple(cfg.env.image_size), trace_len=cfg.dataset.trace_len,
        cameras=stored_cameras(cfg), goal_image=stores_goal_images(cfg), labels=label_vocabulary(cfg),
        label_camera=cfg.dataset.label_camera, checkpoint_every=cfg.dataset.checkpoint_every, mode=cfg.resume,
        image_threads=cfg.dataset.image_threads,
    )


def resume_seed(requested: int, next_recorded: int | None, num_episodes: int) -> int:
    """The first seed a collection runs: ``requested`` for a new dataset; on resume the later of ``requested`` and
    the dataset's recorded next seed (``next_recorded``, or ``requested + num_episodes`` for a dataset without one).
    A ``requested`` seed below it would repeat recorded seeds: the recorded one is taken and a line on stderr says so.
    """
    recorded = requested + num_episodes if next_recorded is None else int(next_recorded)
    if requested < recorded:
        print(f"tandem-collect: resuming at the dataset's next seed {recorded} (seed={requested} would repeat its "
              "recorded episodes)", file=sys.stderr)
    return max(requested, recorded)


def collect(cfg: Any, *, on_episode: Callable[[EpisodeOutcome, Any], None] | None = None,
            observer: Callable[[StepRecord], None] | None = None, stack: Any = None) -> CollectReport:
    """Collect demonstrations until the dataset at ``cfg.out`` holds ``cfg.episodes`` episodes.

    ``episodes`` is the target total: rerunning the same command after an interruption finishes the job.
    Seeds run ``cfg.seed, cfg.seed + 1, ...``. On resume they continue from the dataset's recorded next seed, or from
    ``cfg.seed`` where that is later (a new seed range for more episodes); a ``cfg.seed`` below the next recorded seed
    would repeat recorded episodes, so collection continues from the recorded one and says so on stderr.
    With ``keep_failed=false`` failed episodes are discarded; at most ``max_tries`` episodes are run.

    Args:
        cfg: a :class:`~tandem.runtime.config.CollectConfig` (or a dict / OmegaConf node of one, loaded here).
        on_episode: called after every episode with its outcome and the writer (progress display).
        observer: called on every StepRecord (progress display, tests).
        stack: a prebuilt :class:`tandem.runtime.registry.Stack` (tests); built from ``cfg`` otherwise and closed here.

    Returns:
        CollectReport. A Ctrl-C stops after committing the saved episodes (``interrupted=True``).

    Raises:
        DatasetSchemaError: ``out`` holds a dataset with another schema, or a frame does not fit the schema.
        DatasetWriteError: a write failed (the dataset is rolled back to its last commit, which is intact).
        UnknownNameError / ConfigError: bad task, component or setting names.
        Where this call created ``out`` and nothing was saved, ``out`` is removed again on any of these.
    """
    from tandem.runtime.registry import build_stack

    if not isinstance(cfg, CollectConfig):
        cfg = load(CollectConfig, cfg)
    if cfg.env.control_freq != schema.FPS:
        raise ConfigError(f"env.control_freq must equal the dataset fps ({schema.FPS} Hz), got {cfg.env.control_freq}")
    target = cfg.episodes
    if label_vocabulary(cfg) is not None:
        check_label_camera(cfg)  # before the (slow) env is built
    created = not Path(cfg.out).exists()
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
        labels = label_vocabulary(cfg)
        labeller = OracleFrameLabeller(writer, cameras=stored_cameras(cfg), image_size=tuple(cfg.env.image_size),
                                       trace_len=cfg.dataset.trace_len, observer=observer,
                                       goal_image=stores_goal_images(cfg), labels=labels,
                                       project=(lambda pts: env.world_to_pixel(pts, cfg.dataset.label_camera))
                                       if labels else None)
        seed = resume_seed(int(cfg.seed), writer.state.get("next_seed"), writer.num_episodes)
        max_tries = 3 * (target - writer.num_episodes) if cfg.max_tries is None else cfg.max_tries
        t0 = time.perf_counter()
        tries = 0
        try:
            while writer.num_episodes < target and tries < max_tries:
                tries += 1
                perturbed = perturbation is not None and np.random.default_rng([seed, 0x9E]).random() < \
                    cfg.perturb_fraction
                if perturbation is not None:
                    env.perturbation = perturbation if perturbed else None
                out = collect_episode(env, agent, writer, labeller, seed, keep_failed=cfg.keep_failed,
                                      max_steps=cfg.max_steps, dart_sigma=cfg.dart.sigma,
                                      dart_gripper=cfg.dart.gripper,
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
        if failed and created and writer.num_episodes == 0:  # e.g. a stack refused at build: leave no empty dataset
            shutil.rmtree(writer.root, ignore_errors=True)
        if own_stack and stack is not None:
            stack.close()
    report.episodes_total = writer.num_episodes
    report.demos_per_hour = 3600.0 * report.episodes_saved / report.wall_s if report.wall_s > 0 else 0.0
    return report


def report_json(report: CollectReport) -> dict[str, Any]:
    """JSON-safe dict of a :class:`CollectReport`."""
    return dataclasses.asdict(report)


__all__ = ["CollectReport", "ContinuePastSuccessEnv", "DartNoiseEnv", "EpisodeOutcome", "collect", "collect_episode",
           "open_writer", "report_json"]
