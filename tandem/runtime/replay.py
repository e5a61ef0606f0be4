"""Re-simulating a recorded episode from its memory store: camera frames, the annotated video, a rerun recording.

The store keeps no camera images (a run directory would grow by megabytes per episode), but it keeps everything
needed to make them again: the episode's config (``meta["config"]``: task, env, perturbation) and seed, and
every action. :func:`resimulate` rebuilds the simulated env with rendering on, resets it with the seed and
replays the actions open-loop; robosuite is deterministic for a given seed and action sequence, so the
observations are those of the live run, which :class:`Resimulation` checks by comparing the proprio of every step
with the logged one (``max_proprio_error``, m / quaternion units).

:func:`render_video` writes the annotated MP4 as ``tandem.runtime.rollout`` did live (agentview with the subgoal
text, keypoint trace and goal-image inset, wrist view beside, header with step, attempts and replans), taking each
step's subgoal, trace and goal image from the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memory.records import AttemptRecord, Record, ReplanRecord
from memory.store import EpisodeInfo, MemoryStore
from tandem.core.errors import ConfigError
from tandem.core.types import Observation, Subgoal


def episode_config(info: EpisodeInfo) -> dict[str, Any]:
    """The build config (``task``, ``env``, ``perturb`` ...) recorded with the episode.

    Raises:
        ConfigError: the episode's metadata has no config (it was not run through ``tandem-demo`` / ``tandem-eval``).
    """
    cfg = info.meta.get("config")
    if not isinstance(cfg, Mapping) or not isinstance(cfg.get("task"), Mapping):
        raise ConfigError(f"episode {info.id} records no build config (meta keys: {sorted(info.meta)}); it cannot be "
                          "re-simulated (the timeline and the rerun recording without camera streams still work)")
    return dict(cfg)


@dataclass
class Resimulation:
    """Re-simulated observations of one episode (iterate once: ``(step, Observation)`` per logged step).

    Attributes:
        max_proprio_error: largest ``|proprio - logged proprio|`` seen so far (0.0 for an exact replay).
    """

    info: EpisodeInfo
    steps: list[dict[str, Any]]
    cameras: tuple[str, ...] | None = None
    max_proprio_error: float = 0.0
    first_obs: Observation | None = field(default=None, repr=False)

    def __iter__(self) -> Iterator[tuple[int, Observation]]:
        from tandem.runtime.config import EnvConfig, PerturbConfig, TaskConfig, load
        from tandem.runtime.registry import build_sim_env

        cfg = episode_config(self.info)
        env_cfg = dict(cfg.get("env") or {})
        env_cfg["render"] = True
        env_cfg["lazy_images"] = False  # a viewer may keep the frames past the step (and the env's close)
        if self.cameras is not None:
            env_cfg["cameras"] = list(self.cameras)
        seed = self.info.meta.get("seed")
        if not isinstance(seed, int):
            raise ConfigError(f"episode {self.info.id} records no integer seed (meta seed={seed!r})")
        env = build_sim_env(load(TaskConfig, cfg["task"], "task"), load(EnvConfig, env_cfg, "env"),
                            load(PerturbConfig, cfg.get("perturb") or {}, "perturb"))
        try:
            obs, _ = env.reset(seed=seed)
            self.first_obs = obs
            for row in self.steps:
                obs, _r, _term, _trunc, _info = env.step(np.asarray(row["action"], dtype=np.float32))
                logged = np.asarray(row["proprio"], dtype=np.float32)
                if logged.shape == obs.proprio.shape:
                    err = float(np.max(np.abs(obs.proprio - logged))) if logged.size else 0.0
                    self.max_proprio_error = max(self.max_proprio_error, err)
                yield int(row["step"]), obs
        finally:
            env.close()


def resimulate(store: MemoryStore, episode_id: int, cameras: tuple[str, ...] | None = None) -> Resimulation:
    """Re-simulation of episode ``episode_id`` of ``store`` (see :class:`Resimulation`).

    Raises:
        ConfigError: from iteration, when the episode records no config or seed.
        MemoryStoreError: no such episode.
    """
    return Resimulation(store.episode(episode_id), store.steps(episode_id), cameras)


class SubgoalAtStep:
    """Which subgoal (with trace and goal image) and which counters were live at each control step of an episode.

    Args:
        records: the episode's records.
        images: its stored images (``goal/<signature>#<attempt>``).
    """

    def __init__(self, records: list[Record], images: Mapping[str, tuple[int, np.ndarray]]):
        self.attempts = [r for r in records if isinstance(r, AttemptRecord)]
        self.replans = [r.step for r in records if isinstance(r, ReplanRecord) and r.after_failure]
        self.images = images
        self._cache: dict[int, Subgoal] = {}

    def subgoal(self, subgoal_id: str | None, step: int) -> Subgoal | None:
        """The subgoal with id ``subgoal_id`` whose latest attempt started before ``step`` (1-based action step)."""
        if subgoal_id is None:
            return None
        match = None
        for i, a in enumerate(self.attempts):
            if a.subgoal.get("id") == subgoal_id and a.step <= step - 1:
                match = i
        if match is None:
            return None
        if match not in self._cache:
            a = self.attempts[match]
            sg = Subgoal.from_json(a.subgoal)
            img = self.images.get(f"goal/{a.signature}#{a.attempt}")
            sg.goal_image = None if img is None else img[1]
            self._cache[match] = sg
        return self._cache[match]

    def counters(self, step: int) -> tuple[int, int]:
        """``(attempts, replans after a failure)`` started before action step ``step``."""
        return (sum(1 for a in self.attempts if a.step <= step - 1), sum(1 for s in self.replans if s <= step - 1))


def render_video(store: MemoryStore, episode_id: int, out: str | Path) -> tuple[Path, float]:
    """Re-simulate episode ``episode_id`` and write its annotated MP4 to ``out``.

    Returns:
        ``(path, max_proprio_error)``.

    Raises:
        ConfigError: the episode cannot be re-simulated (no config / seed). MemoryStoreError: no such episode.
    """
    from tandem.runtime.video import VideoWriter, compose_frame

    info = store.episode(episode_id)
    sim = resimulate(store, episode_id)
    where = SubgoalAtStep(store.records(episode_id), store.images(episode_id))
    task = info.task
    seed = info.meta.get("seed")
    rows = {r["step"]: r for r in sim.steps}
    writer: VideoWriter | None = None
    try:
        for step, obs in sim:
            if writer is None:
                from tandem.runtime.config import EnvConfig, load

                env_cfg = load(EnvConfig, episode_config(info).get("env") or {}, "env")  # its defaults where unset
                writer = VideoWriter(out, fps=float(env_cfg.control_freq))
            sg = where.subgoal(rows[step]["subgoal_id"], step)
            n_att, n_rep = where.counters(step)
            writer.add(compose_frame(obs, sg, header=f"{task}  seed {seed}  step {step}  attempts {n_att}  "
                                                     f"replans {n_rep}"))
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise ConfigError(f"episode {episode_id} has no recorded steps; nothing to render")
    return Path(out), sim.max_proprio_error


__all__ = ["Resimulation", "SubgoalAtStep", "episode_config", "render_video", "resimulate"]
