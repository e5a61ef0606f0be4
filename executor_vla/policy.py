"""``DiffusionExecutor``: a Diffusion Policy conditioned on subgoal text, goal image and keypoint trace.

Method: Diffusion Policy (Chi et al., RSS 2023): a denoising diffusion model over action chunks
``(Tp, A)`` conditioned on To observation frames. Trained with diffusers' ``DDPMScheduler`` (100
steps, squared-cosine betas); sampled with DDIM (Song et al. 2021) in few steps, DDPM, or DPM-Solver++
through :class:`executor_vla.sampling.ChunkSampler` (trailing timesteps, the scheduler reset for every chunk).
Receding horizon: of each chunk predicted at step t, the actions for steps t .. t + Ta - 1 (indices
``To - 1 .. To - 2 + Ta``) are queued and executed.

It implements :class:`tandem.core.protocols.Executor`:

* ``set_subgoal(subgoal, task)`` encodes the subgoal once (text embedding cached per text, goal-image
  feature, trace raster or point embedding) and drops the queued actions;
* ``select_action(obs)`` serves from the action queue, predicting a new chunk when it is empty, and
  returns a ``float32 (7,)`` action clipped to the controller's limits ``[-1, 1]``;
* ``subgoal_done()`` thresholds the done head evaluated with each new chunk (every Ta steps):
  predicted progress (trained on ``subgoal.progress``) >= ``done_threshold``, or, with
  ``done_source="success"``, the predicted probability of ``subgoal.success``.

The flat baseline is the same class with ``conditioning_source="instruction"``: it conditions on
``task.instruction`` only and is trained on whole episodes.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from executor_vla.checkpoint import (
    WEIGHTS,
    check_normalizer,
    load_weights_strict,
    read_checkpoint,
    save_checkpoint,
)
from executor_vla.conditioning import rasterize_batch
from executor_vla.config import ExecutorConfig
from executor_vla.cuda_graph import GraphCache
from executor_vla.network import TEXT_EMB_KEY, TRACE_RASTER_KEY, ExecutorNet
from executor_vla.normalizer import MinMaxNormalizer
from executor_vla.sampling import ChunkSampler, make_train_scheduler
from executor_vla.text_encoder import TextEncoder, load_text_encoder
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError, NonFiniteActionError, SubgoalSchemaError
from tandem.core.traces import resample_trace
from tandem.core.types import Observation, Subgoal, TaskSpec


class DiffusionExecutor(nn.Module):
    """The conditioned diffusion executor (see the module docstring).

    Args:
        cfg: the configuration.
        text_encoder: a :class:`~executor_vla.text_encoder.TextEncoder` to use instead of loading
            ``cfg.text_encoder`` (e.g. a fake in tests). Only used when ``cfg.use_text``.
        action_low, action_high: ``(A,)`` controller limits actions are clipped to (default ``+-1``).

    Raises:
        CheckpointError: if the text encoder's size differs from ``cfg.text_dim``.
    """

    #: Seed of the sampling-noise generator, re-applied at every :meth:`reset`.
    SAMPLE_SEED = 0

    #: False: it sees camera images, proprio and the subgoal only, never ``Observation.privileged``.
    is_oracle: ClassVar[bool] = False

    def __init__(self, cfg: ExecutorConfig, text_encoder: TextEncoder | None = None,
                 action_low: np.ndarray | None = None, action_high: np.ndarray | None = None):
        super().__init__()
        self.cfg = cfg
        self.net = ExecutorNet(cfg)
        self.normalizer = MinMaxNormalizer(cfg.action_dim, cfg.state_dim)
        self.train_scheduler = make_train_scheduler(cfg.num_train_timesteps, cfg.beta_schedule, cfg.prediction_type,
                                                    cfg.clip_sample)
        self.sampler = ChunkSampler(cfg.inference_scheduler, cfg.num_inference_steps,
                                    num_train_timesteps=cfg.num_train_timesteps, beta_schedule=cfg.beta_schedule,
                                    prediction_type=cfg.prediction_type, clip_sample=cfg.clip_sample)
        self._text_encoder = text_encoder
        if text_encoder is not None and cfg.use_text and text_encoder.dim != cfg.text_dim:
            raise ConfigError(f"text encoder dim {text_encoder.dim} != cfg.text_dim {cfg.text_dim}")
        self.action_low = np.full(cfg.action_dim, -1.0, np.float32) if action_low is None else np.asarray(action_low, np.float32)
        self.action_high = np.full(cfg.action_dim, 1.0, np.float32) if action_high is None else np.asarray(action_high, np.float32)
        self.command: str = ""
        self._graphs: GraphCache | None = None  # optimize_for_inference() on CUDA: chunks as CUDA graphs
        self.reset()

    # ------------------------------------------------------------------ helpers
    @property
    def device(self) -> torch.device:
        """The device the network's parameters are on."""
        return self.normalizer.action_center.device

    @property
    def text_encoder(self) -> TextEncoder:
        """The (cached) text encoder, loaded on first use."""
        if self._text_encoder is None:
            self._text_encoder = load_text_encoder(self.cfg.text_encoder, self.cfg.text_dim)
        return self._text_encoder

    def set_stats(self, stats: dict[str, Any]) -> None:
        """Set normalisation statistics ``{"action": {"min", "max"}, "observation.state": {...}}``."""
        self.normalizer.set_stats(stats)

    def _global_cond(self, batch: dict[str, Tensor], augment: bool, subgoal_cond: Tensor | None = None) -> Tensor:
        state = self.normalizer.normalize_state(batch[schema.STATE_KEY])
        obs = self.net.encode_obs(batch, state, augment=augment)
        sub = self.net.encode_subgoal(batch) if subgoal_cond is None else subgoal_cond
        return torch.cat([obs, sub], -1)

    def prepare_batch(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        """Add what the network needs but datasets do not store: the trace raster (raster mode).

        ``batch`` tensors must already be on ``self.device``. Images are never resized here: training and the
        closed loop must see the same pixels (:func:`executor_vla.data.check_image_sizes`).

        Raises:
            DatasetSchemaError: an image whose (H, W) is not ``cfg.image_size``.
        """
        cfg = self.cfg
        out = dict(batch)
        h, w = cfg.image_size
        for key in [schema.image_key(c) for c in cfg.cameras] + [schema.GOAL_IMAGE_KEY]:
            x = out.get(key)
            if isinstance(x, Tensor) and tuple(x.shape[-2:]) != (h, w):
                raise DatasetSchemaError(f"{key} is {tuple(x.shape[-2:])} px but the executor takes ({h}, {w}); "
                                         "images are not resized (collect or render at the executor's size)")
        if cfg.use_trace and cfg.trace_mode == "raster" and TRACE_RASTER_KEY not in out:
            out[TRACE_RASTER_KEY] = rasterize_batch(out[schema.TRACE_KEY], out[schema.TRACE_MASK_KEY], (h, w))
        return out

    # ------------------------------------------------------------------ training
    def compute_loss(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """Diffusion loss (+ done-head loss) on a training batch.

        Args:
            batch: dataset-keyed tensors on ``self.device`` (see :class:`ExecutorNet`), plus
                ``action (B, Tp, A)`` in controller units, ``action_is_pad (B, Tp)`` bool,
                ``subgoal.progress (B,)`` and ``subgoal.success (B,)`` (for the flat baseline the
                data loader fills these two with episode progress and ``task.success``).

        Returns:
            ``{"loss", "diffusion_loss", "progress_loss", "success_loss"}`` scalars; ``loss`` is the
            total to back-propagate. The diffusion MSE (of the noise, or of x0 with
            ``prediction_type="sample"``) is averaged over non-padded action steps only.

        Raises:
            DatasetSchemaError: if ``action_is_pad`` (or another required key) is missing, or the
                action chunk is not ``(B, horizon, action_dim)``.
        """
        cfg = self.cfg
        required = [schema.ACTION_KEY, schema.ACTION_IS_PAD_KEY, schema.STATE_KEY, schema.PROGRESS_KEY,
                    schema.SUBGOAL_SUCCESS_KEY]
        missing = [k for k in required if k not in batch]
        if missing:
            raise DatasetSchemaError(f"training batch lacks {missing} (action_is_pad is required: padded targets "
                                     "past the episode end must be masked)")
        batch = self.prepare_batch(batch)
        actions = batch[schema.ACTION_KEY]
        b = actions.shape[0]
        if tuple(actions.shape[1:]) != (cfg.horizon, cfg.action_dim):
            raise DatasetSchemaError(f"action chunk shape {tuple(actions.shape)}, expected (B, {cfg.horizon}, "
                                     f"{cfg.action_dim})")
        cond = self._global_cond(batch, augment=self.training)
        x0 = self.normalizer.normalize_action(actions)
        noise = torch.randn_like(x0)
        t = torch.randint(0, cfg.num_train_timesteps, (b,), device=x0.device)
        noisy = self.train_scheduler.add_noise(x0, noise, t)
        pred = self.net.unet(noisy, t, cond)
        target = noise if cfg.prediction_type == "epsilon" else x0
        valid = (~batch[schema.ACTION_IS_PAD_KEY].bool()).unsqueeze(-1).to(pred.dtype)
        diff = ((pred - target) ** 2 * valid).sum() / (valid.sum() * cfg.action_dim).clamp_min(1.0)
        progress, success_logit = self.net.done_outputs(cond)
        p_loss = F.mse_loss(progress, batch[schema.PROGRESS_KEY].reshape(b).to(progress.dtype))
        s_loss = F.binary_cross_entropy_with_logits(success_logit,
                                                    batch[schema.SUBGOAL_SUCCESS_KEY].reshape(b).to(progress.dtype))
        loss = diff + cfg.progress_loss_weight * (p_loss + s_loss)
        return {"loss": loss, "diffusion_loss": diff.detach(), "progress_loss": p_loss.detach(),
                "success_loss": s_loss.detach()}

    def forward(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """Same as :meth:`compute_loss` (so DDP/accelerate wrappers synchronise gradients)."""
        return self.compute_loss(batch)

    # ------------------------------------------------------------------ inference
    @torch.no_grad()
    def predict_action_chunk(self, batch: dict[str, Tensor], subgoal_cond: Tensor | None = None,
                             generator: torch.Generator | None = None) -> Tensor:
        """Denoise one action chunk per batch element.

        Args:
            batch: dataset-keyed observation tensors on ``self.device`` (``observation.images.<cam>``
                ``(B, To, 3, H, W)`` in ``[0, 1]``, ``observation.state`` ``(B, To, D)``) and, unless
                ``subgoal_cond`` is given, the subgoal keys the config uses.
            subgoal_cond: precomputed ``(B, subgoal_dim)`` subgoal conditioning (set_subgoal's cache).
            generator: RNG of the initial noise, for reproducible samples.

        Returns:
            ``(B, Tp, A)`` actions in controller units (not clipped). The done-head outputs of the same
            pass are stored in ``self.last_progress`` / ``self.last_success_prob`` ``(B,)``.
        """
        cfg = self.cfg
        if subgoal_cond is None:
            batch = self.prepare_batch(batch)
        elif cfg.use_trace and cfg.trace_mode == "raster" and TRACE_RASTER_KEY not in batch:
            raise SubgoalSchemaError("predict_action_chunk: raster trace conditioning needs subgoal.trace_raster")
        if self._graphs is not None and not self.training and subgoal_cond is not None \
                and subgoal_cond.device.type == "cuda":
            noise = ChunkSampler.initial_noise((subgoal_cond.shape[0], cfg.horizon, cfg.action_dim), generator,
                                               subgoal_cond.device, subgoal_cond.dtype)
            actions, progress, success_logit = self._graphs({**batch, "subgoal_cond": subgoal_cond, "noise": noise})
            self.last_progress, self.last_success_prob = progress, torch.sigmoid(success_logit)
            return actions
        cond = self._global_cond(batch, augment=False, subgoal_cond=subgoal_cond)
        shape = (cond.shape[0], cfg.horizon, cfg.action_dim)
        x = self.sampler.sample(lambda noisy, t: self.net.unet(noisy, t, cond), shape, generator=generator,
                                device=cond.device, dtype=cond.dtype)
        progress, success_logit = self.net.done_outputs(cond)
        self.last_progress, self.last_success_prob = progress, torch.sigmoid(success_logit)
        return self.normalizer.unnormalize_action(x)

    def _chunk_from_noise(self, noise: Tensor, subgoal_cond: Tensor, **batch: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The graphed chunk: initial noise ``(B, Tp, A)``, the subgoal conditioning ``(B, subgoal_dim)`` and the
        observation tensors of :meth:`predict_action_chunk` -> ``(actions (B, Tp, A) in controller units, progress
        (B,), success logit (B,))``, as the eager path computes them (DDIM)."""
        cond = self._global_cond(batch, augment=False, subgoal_cond=subgoal_cond)
        x = self.sampler.ddim_denoise(lambda noisy, t: self.net.unet(noisy, t, cond), noise, self._ddim_plan)
        progress, success_logit = self.net.done_outputs(cond)
        return self.normalizer.unnormalize_action(x), progress, success_logit

    def optimize_for_inference(self) -> DiffusionExecutor:
        """On CUDA with DDIM, replay each chunk (image encoders, every U-Net step, the done head) as one CUDA graph
        (:mod:`executor_vla.cuda_graph`), captured at the first chunk of each input shape; the same chunks to float
        rounding. A no-op on the CPU. ``benchmarks/executor_cuda.py`` measures it against the eager path. Call it
        again after moving the model to another device. Returns ``self``."""
        self._graphs = None
        if self.device.type == "cuda" and self.cfg.inference_scheduler == "DDIM":
            self._ddim_plan = self.sampler.ddim_plan(self.device)
            self._graphs = GraphCache(self._chunk_from_noise, weights=lambda: [*self.parameters(), *self.buffers()])
        return self

    # ------------------------------------------------------------------ Executor protocol
    def reset(self) -> None:
        """Forget the observation history, the action queue and the subgoal, and re-seed the sampling noise.

        The initial noise of every chunk comes from a CPU ``torch.Generator`` seeded with :attr:`SAMPLE_SEED`
        here, so an episode is reproducible given the env's seed (tandem-eval's rows are deterministic given
        task, seed and variant).
        """
        self._noise = torch.Generator().manual_seed(self.SAMPLE_SEED)
        self._history: collections.deque[Observation] = collections.deque(maxlen=self.cfg.n_obs_steps)
        self._queue: collections.deque[np.ndarray] = collections.deque()
        self._subgoal_batch: dict[str, Tensor] | None = None
        self._subgoal_cond: Tensor | None = None
        self._done = False
        self.last_progress = self.last_success_prob = None

    def _image_tensor(self, img: np.ndarray, what: str) -> Tensor:
        h, w = self.cfg.image_size
        if not (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.shape == (h, w, 3)):
            raise ConfigError(f"{what}: expected uint8 ({h}, {w}, 3), got {getattr(img, 'dtype', type(img))} "
                              f"{getattr(img, 'shape', '')}")
        return torch.from_numpy(np.ascontiguousarray(img)).to(self.device).permute(2, 0, 1).float().div_(255.0)

    @torch.no_grad()
    def set_subgoal(self, subgoal: Subgoal, task: TaskSpec | None = None) -> None:
        """Condition on ``subgoal`` (or, for the flat baseline, on ``task.instruction``); drops the queue.

        Args:
            subgoal: its ``text``; its ``goal_image`` ``uint8 (H, W, 3)`` if ``use_goal_image``; its
                ``trace`` (camera ``trace_camera``, points in px of ``trace.image_size``) if
                ``use_trace``. Traces are resampled to ``trace_len`` points, rescaled to ``image_size`` and clipped to
                the image, as the dataset labels are (:func:`tandem.core.traces.resample_trace`).
                Conditioning that the config turns off is ignored.
            task: needed for ``conditioning_source="instruction"``.

        Raises:
            SubgoalSchemaError: a goal image or trace the config needs is missing, a goal image of the
                wrong size, a trace in another camera, or an empty text.
        """
        cfg = self.cfg
        self._queue.clear()
        self._done = False
        self.last_progress = self.last_success_prob = None
        batch: dict[str, Tensor] = {}
        if cfg.use_text:
            if cfg.conditioning_source == "instruction":
                if task is None:
                    raise SubgoalSchemaError("the flat baseline conditions on task.instruction: pass the TaskSpec")
                text = task.instruction
            else:
                text = subgoal.text
            if not text or not text.strip():
                raise SubgoalSchemaError(f"subgoal {subgoal.id!r} has an empty text")
            emb = self.text_encoder.encode([text])
            batch[TEXT_EMB_KEY] = torch.from_numpy(np.asarray(emb, np.float32)).to(self.device)
        if cfg.use_goal_image:
            if subgoal.goal_image is None:
                raise SubgoalSchemaError(f"subgoal {subgoal.id!r} has no goal_image but the executor conditions on "
                                         "goal images (use_goal_image=true); fill it with a GoalProducer")
            try:
                batch[schema.GOAL_IMAGE_KEY] = self._image_tensor(subgoal.goal_image, "subgoal.goal_image")[None]
            except ConfigError as e:
                raise SubgoalSchemaError(str(e)) from e
        if cfg.use_trace:
            tr = subgoal.trace
            if tr is None:
                raise SubgoalSchemaError(f"subgoal {subgoal.id!r} has no trace but the executor conditions on "
                                         "keypoint traces (use_trace=true); fill it with a GoalProducer")
            if tr.camera != cfg.trace_camera:
                raise SubgoalSchemaError(f"trace is in camera {tr.camera!r}, the executor expects {cfg.trace_camera!r}")
            pts, mask = resample_trace(tr, cfg.trace_len, cfg.image_size)  # as the dataset labels: clipped
            batch[schema.TRACE_KEY] = torch.from_numpy(pts).to(self.device)[None]
            batch[schema.TRACE_MASK_KEY] = torch.from_numpy(mask).to(self.device)[None]
        batch[schema.STATE_KEY] = torch.zeros(1, cfg.n_obs_steps, cfg.state_dim, device=self.device)
        if cfg.use_trace and cfg.trace_mode == "raster":
            batch[TRACE_RASTER_KEY] = rasterize_batch(batch[schema.TRACE_KEY], batch[schema.TRACE_MASK_KEY],
                                                      cfg.image_size)
        self._subgoal_batch = {k: v for k, v in batch.items() if k == TRACE_RASTER_KEY}
        self._subgoal_cond = self.net.encode_subgoal(batch)

    def _obs_batch(self) -> dict[str, Tensor]:
        cfg = self.cfg
        hist = list(self._history)
        while len(hist) < cfg.n_obs_steps:  # pad the start of an episode with the first frame
            hist.insert(0, hist[0])
        batch = {schema.image_key(c): torch.stack([self._image_tensor(o.images[c], f"images[{c!r}]") for o in hist])[None]
                 for c in cfg.cameras}
        batch[schema.STATE_KEY] = torch.from_numpy(np.stack([o.proprio for o in hist])).to(self.device)[None]
        return batch

    def _check_obs(self, obs: Observation) -> None:
        cfg = self.cfg
        missing = [c for c in cfg.cameras if c not in obs.images]
        if missing:
            raise ConfigError(f"observation lacks camera(s) {missing}; it has {sorted(obs.images)}, the executor "
                              f"expects {list(cfg.cameras)}")
        h, w = cfg.image_size
        for c in cfg.cameras:
            if obs.images[c].shape != (h, w, 3):
                raise ConfigError(f"observation image {c!r} is {obs.images[c].shape}, the executor expects ({h}, {w}, 3)")
        if obs.proprio.shape != (cfg.state_dim,):
            raise ConfigError(f"observation proprio is {obs.proprio.shape}, the executor expects ({cfg.state_dim},)")
        if not np.all(np.isfinite(obs.proprio)):
            raise NonFiniteActionError(f"observation proprio contains NaN/inf: {obs.proprio.tolist()}")

    @torch.no_grad()
    def select_action(self, observation: Observation) -> np.ndarray:
        """Next action ``float32 (A,)``, clipped to ``[action_low, action_high]``.

        A new chunk is predicted when the queue is empty (every ``n_action_steps`` calls).

        Raises:
            SubgoalSchemaError: if ``set_subgoal`` was not called.
            ConfigError: a missing camera, an image of the wrong size, proprio of the wrong length.
            NonFiniteActionError: NaN/inf in the proprio or in the predicted actions.
        """
        if self._subgoal_cond is None:
            raise SubgoalSchemaError("select_action called before set_subgoal")
        self._check_obs(observation)
        self._history.append(observation)
        if not self._queue:
            batch = self._obs_batch()
            batch.update(self._subgoal_batch)
            chunk = self.predict_action_chunk(batch, subgoal_cond=self._subgoal_cond,
                                              generator=self._noise)[0].cpu().numpy()
            if not np.all(np.isfinite(chunk)):
                raise NonFiniteActionError("the diffusion executor produced NaN/inf actions")
            start = self.cfg.n_obs_steps - 1
            self._queue.extend(chunk[start:start + self.cfg.n_action_steps].astype(np.float32))
            score = self.last_progress if self.cfg.done_source == "progress" else self.last_success_prob
            self._done = bool(score[0].item() >= self.cfg.done_threshold)
        return np.clip(self._queue.popleft(), self.action_low, self.action_high).astype(np.float32)

    def subgoal_done(self) -> bool:
        """Whether the done head, at the latest chunk, says the subgoal is complete (see module docs)."""
        return self._done

    # ------------------------------------------------------------------ checkpoints
    def save(self, path: str | Path, command: str | None = None, extra: dict[str, Any] | None = None) -> Path:
        """Write a checkpoint directory (see :mod:`executor_vla.checkpoint`)."""
        return save_checkpoint(self, path, command=command if command is not None else self.command, extra=extra)

    @classmethod
    def from_checkpoint(cls, path: str | Path, text_encoder: TextEncoder | None = None,
                        overrides: Mapping[str, Any] | None = None, device: str = "cpu") -> DiffusionExecutor:
        """Load a checkpoint directory without unpickling (see :mod:`executor_vla.checkpoint`).

        Args:
            path: a directory written by :meth:`save` (``tandem-train``).
            text_encoder: an encoder to use instead of loading the checkpoint's (tests).
            overrides: inference-time settings, e.g. ``{"inference_scheduler": "DDPM", "num_inference_steps": 3,
                "n_action_steps": 4}``; every key of ``ExecutorConfig.INFERENCE_FIELDS`` is applied, ``None`` keeps the
                checkpoint's value, any other field must equal the checkpoint's
                (:func:`executor_vla.checkpoint.apply_overrides`).
            device: torch device (``cpu``, ``cuda``, ``cuda:N``).

        Returns:
            the executor in eval mode on ``device``, with ``.command`` from ``command.txt``, optimised for inference
            there (:meth:`optimize_for_inference`: CUDA graphs on a GPU).

        Raises:
            CheckpointError: missing files, missing/unexpected/mis-shaped weights, wrong statistics.
            OverrideError (a CheckpointError and a ConfigError): an override that is unknown, changes the network,
                or is invalid; the message names the key.
        """
        files = read_checkpoint(path, overrides)
        executor = cls(files.cfg, text_encoder=text_encoder, action_low=files.raw.get("action_low"),
                       action_high=files.raw.get("action_high"))
        load_weights_strict(executor, files.weights, str(Path(path) / WEIGHTS))
        check_normalizer(executor.normalizer, files.stats, str(path))
        executor.command = files.command
        return executor.to(device).eval().optimize_for_inference()
