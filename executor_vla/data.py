"""LeRobotDataset (tandem schema) -> training samples for :class:`~executor_vla.policy.DiffusionExecutor`.

Each sample is the dataset's own keys, loaded by LeRobot with ``delta_timestamps`` (Diffusion Policy's
windows): ``To`` frames of every camera and of the proprio ending at the current frame, and ``Tp``
actions starting at the first observation frame, with LeRobot's ``action_is_pad`` marking targets
past the episode end. Added keys:

* ``subgoal.text_embedding`` ``float32 (E,)``: the embedding of the subgoal text, resolved from
  ``subgoal.task_index`` through LeRobot's tasks table (``dataset.meta.tasks``). All texts are
  encoded once when the dataset opens (the encoder is frozen). For the flat baseline
  (``conditioning_source="instruction"``) it embeds the episode's instruction (``task_index``).
* in flat mode, ``subgoal.progress`` / ``subgoal.success`` are replaced by the episode's progress
  (``frame_index / (length - 1)``) and ``task.success``: the done head then learns task completion.

Scalar features (LeRobot squeezes ``(1,)``) come out as ``(B,)`` after collation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from executor_vla.config import ExecutorConfig
from executor_vla.dataset_timing import LEROBOT_TOLERANCE_S, timing_problems
from executor_vla.network import TEXT_EMB_KEY
from executor_vla.text_encoder import TextEncoder, load_text_encoder
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError


def delta_timestamps(cfg: ExecutorConfig, fps: int) -> dict[str, list[float]]:
    """LeRobot ``delta_timestamps`` (s) for the observation window and the action chunk.

    Observations: ``[-(To-1), ..., 0] / fps``; actions: ``[-(To-1), ..., Tp-To] / fps`` (Chi et al.).
    """
    obs = [(i - (cfg.n_obs_steps - 1)) / fps for i in range(cfg.n_obs_steps)]
    act = [(i - (cfg.n_obs_steps - 1)) / fps for i in range(cfg.horizon)]
    d = {schema.image_key(c): obs for c in cfg.cameras}
    d[schema.STATE_KEY] = obs
    d[schema.ACTION_KEY] = act
    return d


def required_features(cfg: ExecutorConfig) -> dict[str, tuple[int, ...] | None]:
    """Dataset features the config needs -> expected shape (None: any image shape)."""
    req: dict[str, tuple[int, ...] | None] = {schema.image_key(c): None for c in cfg.cameras}
    req[schema.STATE_KEY] = (cfg.state_dim,)
    req[schema.ACTION_KEY] = (cfg.action_dim,)
    if cfg.conditioning_source == "subgoal":
        req[schema.PROGRESS_KEY] = (1,)
        req[schema.SUBGOAL_SUCCESS_KEY] = (1,)
        if cfg.use_text:
            req[schema.SUBGOAL_TASK_INDEX_KEY] = (1,)
    else:
        req[schema.TASK_SUCCESS_KEY] = (1,)
    if cfg.use_goal_image:
        req[schema.GOAL_IMAGE_KEY] = None
    if cfg.use_trace:
        req[schema.TRACE_KEY] = (cfg.trace_len, 2)
        req[schema.TRACE_MASK_KEY] = (cfg.trace_len,)
    return req


def check_features(features: dict[str, dict[str, Any]], cfg: ExecutorConfig) -> None:
    """Raise :class:`DatasetSchemaError` naming every missing or mis-shaped feature."""
    problems = []
    for key, shape in required_features(cfg).items():
        if key not in features:
            problems.append(f"missing {key!r}")
            continue
        got = tuple(features[key]["shape"])
        if shape is None:
            if features[key]["dtype"] not in ("image", "video") or len(got) != 3 or got[2] != 3:
                problems.append(f"{key!r} must be an RGB image (H, W, 3), got {features[key]['dtype']} {got}")
        elif got != shape:
            problems.append(f"{key!r} has shape {got}, expected {shape}")
    if problems:
        raise DatasetSchemaError("dataset does not follow tandem.core.dataset_schema: " + "; ".join(problems))


def check_image_sizes(features: dict[str, dict[str, Any]], cfg: ExecutorConfig) -> None:
    """Refuse a dataset whose camera or goal images are not ``cfg.image_size`` (H, W) px.

    Images are never resized for training: the closed loop renders (or the bridge crops and resizes) each camera
    at ``cfg.image_size`` directly, and a bilinear resize of a 128 px frame to 84 px is not the 84 px render (4.4 %
    of agentview pixels differ by more than 8/255). Training and inference then see the same pixels through the same
    preprocessing: uint8 -> ``float / 255`` (LeRobot's decoding, ``DiffusionExecutor._image_tensor``).

    Raises:
        DatasetSchemaError: naming each image feature of another size, and the two ways out.
    """
    h, w = cfg.image_size
    keys = [schema.image_key(c) for c in cfg.cameras] + ([schema.GOAL_IMAGE_KEY] if cfg.use_goal_image else [])
    wrong = {k: tuple(features[k]["shape"][:2]) for k in keys if k in features
             and tuple(features[k]["shape"][:2]) != (h, w)}
    if wrong:
        sizes = ", ".join(f"{k} {a}x{b}" for k, (a, b) in wrong.items())
        raise DatasetSchemaError(
            f"dataset images are not the executor's {h}x{w} px ({sizes}): training would have to resize them, while "
            f"the closed loop renders {h}x{w} px directly, so the executor would learn from other pixels than it "
            f"sees. Collect at the executor's size (tandem-collect 'env.image_size=[{h},{w}]') or train at the "
            f"dataset's ('executor.image_size=[{next(iter(wrong.values()))[0]},{next(iter(wrong.values()))[1]}]')")


class ExecutorDataset(torch.utils.data.Dataset):
    """Training samples from a LeRobotDataset in the tandem schema.

    Args:
        root: dataset directory (opened offline).
        cfg: the executor config (windows, which conditioning keys are needed).
        repo_id: LeRobot repo id recorded in the dataset (any string works offline).
        text_encoder: encoder to use instead of loading ``cfg.text_encoder`` (tests).
        episodes: optional subset of episode indices.
        cache: decode every frame once into RAM (:class:`~executor_vla.frame_cache.FrameCache`) and build
            the windows from there: identical items, about 3x faster training on a CPU, needs RAM for all
            frames (``frames x image keys x H x W x 3`` bytes).
        control_hz: the control rate the executor will run at (Hz; the env's ``control_freq``, default
            :data:`tandem.core.dataset_schema.FPS`): the dataset's fps must equal it.
        tolerance_s: allowed deviation of each frame interval from ``1 / fps`` (s; LeRobot's default 1e-4).

    Raises:
        DatasetSchemaError: missing/mis-shaped features; images whose size differs from ``cfg.image_size``
            (never resized: see :func:`check_image_sizes`); an fps other than ``control_hz`` or frames not
            ``1 / fps`` apart (:func:`executor_vla.dataset_timing.timing_problems`); a ``subgoal.task_index``
            not in the tasks table.
        FileNotFoundError: if ``root`` does not exist.
    """

    def __init__(self, root: str | Path, cfg: ExecutorConfig, repo_id: str = "tandem/dataset",
                 text_encoder: TextEncoder | None = None, episodes: list[int] | None = None, cache: bool = False,
                 control_hz: float = schema.FPS, tolerance_s: float = LEROBOT_TOLERANCE_S):
        from lerobot.datasets.lerobot_dataset import LeRobotDataset, LeRobotDatasetMetadata

        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"dataset root {root} does not exist")
        self.cfg = cfg
        meta = LeRobotDatasetMetadata(repo_id, root=root)
        check_features(meta.features, cfg)
        check_image_sizes(meta.features, cfg)
        self.fps = int(meta.fps)
        if float(meta.fps) != self.fps:
            raise DatasetSchemaError(f"dataset at {root}: fps {meta.fps} is not a whole number of frames per second")
        self.ds = LeRobotDataset(repo_id, root=root, episodes=episodes, video_backend="pyav",
                                 delta_timestamps=delta_timestamps(cfg, self.fps), tolerance_s=tolerance_s)
        cols = self.ds.hf_dataset.select_columns(["timestamp", "episode_index"]).with_format("numpy")[:]
        problems = timing_problems(meta.fps, cols["timestamp"], cols["episode_index"], control_hz, tolerance_s)
        if problems:
            raise DatasetSchemaError(f"dataset at {root} cannot train an executor run at {control_hz:g} Hz:\n  - "
                                     + "\n  - ".join(problems))
        self.meta = self.ds.meta
        self.cache = None
        if cache:
            from executor_vla.frame_cache import FrameCache

            deltas = {k: [round(d * self.fps) for d in v] for k, v in delta_timestamps(cfg, self.fps).items()}
            self.cache = FrameCache(self.ds, deltas)
        self.image_size = tuple(meta.features[schema.image_key(cfg.cameras[0])]["shape"][:2])
        tasks = self.meta.tasks  # DataFrame: index = task text, column task_index
        self.texts: dict[int, str] = {int(i): str(t) for t, i in zip(tasks.index, tasks["task_index"])}
        self.text_table: torch.Tensor | None = None
        if cfg.use_text:
            enc = text_encoder if text_encoder is not None else load_text_encoder(cfg.text_encoder, cfg.text_dim)
            n = max(self.texts) + 1 if self.texts else 0
            table = np.zeros((n, cfg.text_dim), np.float32)
            order = sorted(self.texts)
            if order:
                table[order] = enc.encode([self.texts[i] for i in order])
            self.text_table = torch.from_numpy(table)
        self.episode_lengths: dict[int, int] = {}
        if cfg.conditioning_source == "instruction":
            eps = self.meta.episodes
            self.episode_lengths = {int(e): int(n) for e, n in zip(eps["episode_index"], eps["length"])}

    @property
    def stats(self) -> dict[str, dict[str, np.ndarray]]:
        """``{"action": {"min", "max"}, "observation.state": {"min", "max"}}`` from LeRobot's stats."""
        st = self.meta.stats
        return {k: {"min": np.asarray(st[k]["min"]), "max": np.asarray(st[k]["max"])}
                for k in ("action", "observation.state")}

    def __len__(self) -> int:
        return len(self.ds)

    def _text_index(self, idx: int) -> int:
        if idx not in self.texts:
            raise DatasetSchemaError(f"text index {idx} not in the dataset's tasks table (meta/tasks.parquet); "
                                     f"known: {sorted(self.texts)[:20]}")
        return idx

    def __getitem__(self, i: int) -> dict[str, Any]:
        item = self.cache.window(i) if self.cache is not None else self.ds[i]
        for key in schema.LANGUAGE_KEYS:  # row lists of varying length that torch's default collate cannot stack;
            item.pop(key, None)  # the subgoal text comes from subgoal.task_index
        cfg = self.cfg
        if schema.ACTION_IS_PAD_KEY not in item:
            raise DatasetSchemaError("LeRobot did not return action_is_pad; the action window must be loaded with "
                                     "delta_timestamps")
        if cfg.conditioning_source == "instruction":
            ti = self._text_index(int(item["task_index"]))
            length = self.episode_lengths[int(item["episode_index"])]
            item[schema.PROGRESS_KEY] = torch.tensor(float(item["frame_index"]) / max(length - 1, 1))
            item[schema.SUBGOAL_SUCCESS_KEY] = item[schema.TASK_SUCCESS_KEY].reshape(())
        else:
            ti = self._text_index(int(item[schema.SUBGOAL_TASK_INDEX_KEY])) if cfg.use_text else -1
        if cfg.use_text:
            item[TEXT_EMB_KEY] = self.text_table[ti]
        item[schema.PROGRESS_KEY] = item[schema.PROGRESS_KEY].reshape(()).float()
        item[schema.SUBGOAL_SUCCESS_KEY] = item[schema.SUBGOAL_SUCCESS_KEY].reshape(()).float()
        return item


def batch_to_device(batch: dict[str, Any], device: torch.device | str) -> dict[str, Any]:
    """Move every tensor of a collated batch to ``device`` (non-tensors are kept)."""
    return {k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def cycle(loader):
    """Iterate a DataLoader forever (a new epoch, reshuffled, each time it ends)."""
    while True:
        yield from loader
