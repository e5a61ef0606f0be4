"""``TrackExecutor``: the track-conditioned executor, a diffusion policy (or chunk regressor) that learns on a CPU.

It implements ``tandem.core.protocols.Executor``. Inputs, at run time exactly what a real robot stack has:

* proprioception (grip-site position, orientation, gripper opening) over the observation horizon;
* the subgoal the planner handed over: its 3-D trace (:class:`tandem.core.types.Trace3D`: points, yaw and gripper
  command at each), and its text embedding;
* with ``scene_input="objects_3d"``, the objects' 3-D keypoints, read off the camera image by a non-privileged
  reader at every chunk (:meth:`TrackExecutor.attach_scene_reader`, :mod:`executor_vla.scene_reading`).

Features come from :func:`executor_vla.track_features.track_features`, the same function the dataset loader
calls. The network (:mod:`executor_vla.track_net`) is about 2 M parameters; a chunk costs about a millisecond on
one core. Methods: Diffusion Policy (Chi et al., RSS 2023: DDPM training, DDIM sampling with "trailing" timestep
spacing through :class:`executor_vla.sampling.ChunkSampler`, x0 prediction, action chunks with receding-horizon execution, EMA), the trace as in LoHo-Manip and
track-conditioned policies (ATM, Wen et al. 2023; P3PO 2024), the 6-D rotation of Zhou et al. (2019).

``subgoal_done`` comes from a progress head trained on each frame's fraction of its subgoal attempt.
"""

from __future__ import annotations

import collections
import json
import math
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from executor_vla.action_scaling import normalise_actions, standardise, unnormalise_actions
from executor_vla.checkpoint_json import config_text
from executor_vla.cuda_graph import GraphCache
from executor_vla.fused_mlp_ddim import FusedMLPDDIM
from executor_vla.numpy_track_encoder import NumpyTrackEncoder
from executor_vla.sampling import ChunkSampler, make_train_scheduler
from executor_vla.scene_reading import SceneKeypoints
from executor_vla.track_config import EMPTY_HAND_STEPS, TrackExecutorConfig
from executor_vla.track_data import TrackStats
from executor_vla.track_features import config_feature_dim, frame_features
from executor_vla.track_net import MLPDenoiser, TrackNet
from tandem.core import dataset_schema as schema
from tandem.core.errors import CheckpointError, ConfigError, NonFiniteActionError, SubgoalSchemaError
from tandem.core.geometry import wrap_angle, yaw_of_quat
from tandem.core.protocols import ObjectKeypointReader
from tandem.core.types import Observation, Subgoal, TaskSpec

FORMAT = "tandem-executor/1"
FAMILY = "track"

class TrackExecutor(nn.Module):
    """Track-conditioned executor (see module doc).

    Args:
        cfg: :class:`TrackExecutorConfig`.
        stats: normalisation statistics (:meth:`executor_vla.track_data.TrackDataset.stats`); None = identity until
            :meth:`set_stats`.
        text_encoder: a :class:`executor_vla.text_encoder.TextEncoder` (loaded lazily from ``cfg.text_encoder``).
        action_low, action_high: ``float32 (A,)`` controller limits the actions are clipped to.

    Attributes:
        last_progress: the progress head's value (in [0, 1]) at the latest chunk, None before one.
        emptied_hand: the current subgoal ended because a hand that held something emptied (``cfg.empty_grip_m``).

    Raises:
        ConfigError: an invalid config.
    """

    SAMPLE_SEED: ClassVar[int] = 0
    #: Not an oracle: it never reads ``Observation.privileged`` (the runtime hands it observations without it).
    is_oracle: ClassVar[bool] = False

    def __init__(self, cfg: TrackExecutorConfig, stats: TrackStats | None = None, text_encoder: Any = None,
                 action_low: np.ndarray | None = None, action_high: np.ndarray | None = None):
        super().__init__()
        self.cfg = cfg
        self.obs_dim = config_feature_dim(cfg)
        self.net = TrackNet(cfg, self.obs_dim)
        self.register_buffer("feature_mean", torch.zeros(self.obs_dim))
        self.register_buffer("feature_std", torch.ones(self.obs_dim))
        self.register_buffer("action_min", -torch.ones(cfg.action_dim))
        self.register_buffer("action_max", torch.ones(cfg.action_dim))
        if stats is not None:
            self.set_stats(stats)
        self._text_encoder = text_encoder
        self.action_low = np.full(cfg.action_dim, -1.0, np.float32) if action_low is None else np.asarray(action_low, np.float32)
        self.action_high = np.full(cfg.action_dim, 1.0, np.float32) if action_high is None else np.asarray(action_high, np.float32)
        self.train_scheduler = make_train_scheduler(cfg.num_train_timesteps, cfg.beta_schedule, cfg.prediction_type,
                                                    cfg.clip_sample)
        self.command = ""
        self._fast_sampling = False  # optimize_for_inference() turns on the fused DDIM loop (FusedMLPDDIM)
        self._fused: FusedMLPDDIM | None = None
        self._fast_encoder: NumpyTrackEncoder | None = None  # the encoder's numpy path, with the fused loop
        self._graphs: GraphCache | None = None  # optimize_for_inference() on CUDA: chunks as CUDA graphs
        self._scene: SceneKeypoints | None = None  # attach_scene_reader() with scene_input="objects_3d"
        self.reset()

    # ------------------------------------------------------------------ normalisation
    def set_stats(self, stats: TrackStats) -> None:
        """Set the normaliser from dataset statistics.

        Raises:
            ConfigError: statistics of the wrong size or non-finite.
        """
        vals = {"feature_mean": stats.feature_mean, "feature_std": stats.feature_std,
                "action_min": stats.action_min, "action_max": stats.action_max}
        for name, v in vals.items():
            v = np.asarray(v, np.float32)
            buf = getattr(self, name)
            if v.shape != tuple(buf.shape) or not np.all(np.isfinite(v)):
                raise ConfigError(f"stats {name}: expected finite {tuple(buf.shape)}, got {v.shape}")
            buf.copy_(torch.from_numpy(v))

    def stats(self) -> TrackStats:
        """The normalisation statistics the buffers hold, as numpy arrays."""
        return TrackStats(*(getattr(self, n).cpu().numpy() for n in ("feature_mean", "feature_std", "action_min",
                                                                      "action_max")))

    def _norm_obs(self, obs: Tensor) -> Tensor:
        return standardise(obs, self.feature_mean, self.feature_std)

    def normalize_action(self, a: Tensor) -> Tensor:
        """Actions ``(B, Tp, A)`` in controller units (set-points in m) -> ``[-1, 1]``
        (:func:`executor_vla.action_scaling.normalise_actions`, companded with ``action_compand_m``)."""
        return normalise_actions(a, self.action_min, self.action_max, self.cfg.action_compand_m)

    def unnormalize_action(self, a: Tensor) -> Tensor:
        """Inverse of :meth:`normalize_action`."""
        return unnormalise_actions(a, self.action_min, self.action_max, self.cfg.action_compand_m)

    @property
    def device(self) -> torch.device:
        """The device the network's parameters are on."""
        return self.feature_mean.device

    @property
    def text_encoder(self) -> Any:
        """The sentence encoder of subgoal texts (``cfg.text_encoder``), loaded on first use."""
        if self._text_encoder is None:
            from executor_vla.text_encoder import load_text_encoder

            self._text_encoder = load_text_encoder(self.cfg.text_encoder, expected_dim=self.cfg.text_dim)
        return self._text_encoder

    # ------------------------------------------------------------------ training
    def compute_loss(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """Loss on a training batch.

        Args:
            batch: ``obs (B, To, F)`` raw features, ``text (B, E)`` (if ``use_text``), ``action (B, Tp, A)`` in
                controller units, ``action_is_pad (B, Tp)`` bool, ``progress (B,)``.

        Returns:
            ``{"loss", "action_loss", "progress_loss"}``; the action loss (diffusion MSE of x0 or noise, or the MSE
            of the regressed chunk, in normalised units) is averaged over non-padded steps only.

        Raises:
            KeyError: a missing key (``action_is_pad`` is required: padded targets must be masked).
        """
        cfg = self.cfg
        obs = self._norm_obs(batch["obs"])
        if self.training and cfg.obs_noise_std > 0:
            obs = obs + cfg.obs_noise_std * torch.randn_like(obs)
        cond = self.net.encode(obs, batch.get("text"))
        x0 = self.normalize_action(batch["action"])
        valid = (~batch["action_is_pad"].bool()).unsqueeze(-1).to(x0.dtype)
        if cfg.head == "diffusion":
            b = x0.shape[0]
            noise = torch.randn_like(x0)
            t = torch.randint(0, cfg.num_train_timesteps, (b,), device=x0.device)
            noisy = self.train_scheduler.add_noise(x0, noise, t)
            pred = self.net.denoiser(noisy, t, cond)
            target = x0 if cfg.prediction_type == "sample" else noise
        else:
            pred, target = self.net.regress(cond), x0
        act = ((pred - target) ** 2 * valid).sum() / (valid.sum() * cfg.action_dim).clamp_min(1.0)
        prog = F.mse_loss(self.net.progress(cond), batch["progress"].reshape(-1).to(cond.dtype))
        loss = act + cfg.progress_loss_weight * prog
        return {"loss": loss, "action_loss": act.detach(), "progress_loss": prog.detach()}

    def forward(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """Same as :meth:`compute_loss`."""
        return self.compute_loss(batch)

    # ------------------------------------------------------------------ inference
    def _sampler(self) -> ChunkSampler | None:
        cfg = self.cfg
        if cfg.head != "diffusion":
            return None
        return ChunkSampler(cfg.inference_scheduler, cfg.num_inference_steps, num_train_timesteps=cfg.num_train_timesteps,
                            beta_schedule=cfg.beta_schedule, prediction_type=cfg.prediction_type,
                            clip_sample=cfg.clip_sample)

    @torch.no_grad()
    def predict_action_chunk(self, obs: Tensor, text: Tensor | None,
                             generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        """One action chunk per batch element.

        Args:
            obs: ``(B, To, F)`` raw features. text: ``(B, E)`` or None. generator: RNG of the initial noise.

        Returns:
            ``(actions (B, Tp, A) in controller units (not clipped), progress (B,) in [0, 1])``.
        """
        cfg = self.cfg
        if self._fast_path_applies(obs):
            chunk, progress = self._chunk_array(obs.detach().numpy(), text, generator)
            return torch.from_numpy(chunk), torch.from_numpy(progress)
        if self._graph_applies(obs):
            noise = ChunkSampler.initial_noise((obs.shape[0], cfg.horizon, cfg.action_dim), generator, obs.device,
                                               obs.dtype)
            inputs = {"obs": obs, "noise": noise} | ({} if text is None else {"text": text})
            chunk, progress = self._graphs(inputs)
            return chunk, progress
        cond = self.net.encode(self._norm_obs(obs), text)
        b = cond.shape[0]
        if cfg.head == "mse":
            x = self.net.regress(cond)
        elif self._fused is not None and not self.training and FusedMLPDDIM.applies(cond):
            x = self._fused.sample(cond, generator)
        else:
            x = self._chunk_sampler.sample(lambda x_t, t: self.net.denoiser(x_t, t, cond),
                                           (b, cfg.horizon, cfg.action_dim), generator, cond.device)
        return self.unnormalize_action(x), self.net.progress(cond)

    def _graph_applies(self, obs: Tensor) -> bool:
        """Whether chunks replay a CUDA graph: :meth:`optimize_for_inference` was called, evaluation mode, a DDIM
        diffusion head, and ``obs`` on a CUDA device."""
        return (self._graphs is not None and not self.training and obs.device.type == "cuda"
                and self.cfg.head == "diffusion" and self.cfg.inference_scheduler == "DDIM")

    def _chunk_from_noise(self, obs: Tensor, noise: Tensor, text: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """The graphed chunk: raw features ``(B, To, F)``, initial noise ``(B, Tp, A)`` and the text embedding
        ``(B, E)`` -> ``(actions (B, Tp, A) in controller units, progress (B,))``, as the eager path computes them."""
        cond = self.net.encode(self._norm_obs(obs), text)
        x = self._chunk_sampler.ddim_denoise(lambda x_t, t: self.net.denoiser(x_t, t, cond), noise,
                                             self._ddim_plan)
        return self.unnormalize_action(x), self.net.progress(cond)

    def _fast_path_applies(self, obs: Tensor | None = None) -> bool:
        """Whether chunks take the numpy fast path: :meth:`optimize_for_inference` found the fused DDIM loop, the
        executor is in evaluation mode, and the weights (and ``obs``) are CPU float32."""
        return (self._fused is not None and self._fast_encoder is not None and not self.training
                and self.feature_mean.device.type == "cpu" and self.feature_mean.dtype == torch.float32
                and (obs is None or FusedMLPDDIM.applies(obs)))

    def _chunk_array(self, obs: np.ndarray, text: Tensor | None,
                     generator: torch.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict_action_chunk` on the numpy fast path: ``obs float32 (B, To, F)`` raw features ->
        ``(actions float32 (B, Tp, A) in controller units, progress float32 (B,))``, the same arithmetic as the
        module path to float32 rounding (the encoder of :class:`NumpyTrackEncoder`, the DDIM loop of
        :class:`FusedMLPDDIM`)."""
        assert self._fused is not None and self._fast_encoder is not None
        # the normalisers on numpy views of the live buffers (a torch round trip costs more than their arithmetic)
        x = standardise(obs, self.feature_mean.numpy(), self.feature_std.numpy())
        cond = self._fast_encoder.encode(x.reshape(x.shape[0], -1), text)
        chunk = unnormalise_actions(self._fused.sample_array(cond, generator), self.action_min.numpy(),
                                    self.action_max.numpy(), self.cfg.action_compand_m)
        return chunk, self._fast_encoder.progress(cond)

    def optimize_for_inference(self) -> TrackExecutor:
        """Take the fastest evaluation-mode path for the device the weights are on; the same chunks to float rounding.

        * On the CPU, the fused DDIM loop (:class:`executor_vla.fused_mlp_ddim.FusedMLPDDIM`) where it applies
          (diffusion head, MLP denoiser, DDIM), without the ``nn.Module`` dispatch that dominates a 1 M-parameter MLP
          at batch 1 on a CPU. The encoder then runs on :class:`executor_vla.numpy_track_encoder.NumpyTrackEncoder`,
          with the subgoal text's term computed once per subgoal.
        * On CUDA (DDIM), each chunk (encoder, every denoising step, unnormalisation) replays one CUDA graph
          (:mod:`executor_vla.cuda_graph`), captured at the first chunk of each batch size.

        ``benchmarks/executor_latency.py`` (CPU) and ``benchmarks/executor_cuda.py`` (CUDA) measure both against the
        module-by-module path. Both read the live weights, so training afterwards stays correct (training mode uses
        the module path). Call it again after moving the model to another device. Returns ``self``.
        """
        self._fast_sampling = True
        self._fused = self._fused_sampler()
        self._graphs = None
        if self.device.type == "cuda" and self.cfg.head == "diffusion" and self.cfg.inference_scheduler == "DDIM":
            self._ddim_plan = self._chunk_sampler.ddim_plan(self.device)
            self._graphs = GraphCache(self._chunk_from_noise, weights=lambda: [*self.parameters(), *self.buffers()])
        return self

    def _fused_sampler(self) -> FusedMLPDDIM | None:
        cfg = self.cfg
        if (not self._fast_sampling or cfg.head != "diffusion" or cfg.denoiser != "mlp"
                or cfg.inference_scheduler != "DDIM" or not isinstance(self.net.denoiser, MLPDenoiser)):
            self._fast_encoder = None
            return None
        if self._fast_encoder is None:  # kept across reset(): its snapshot follows the weights by version
            self._fast_encoder = NumpyTrackEncoder(self.net)
        return FusedMLPDDIM(self.net.denoiser, self._chunk_sampler,
                            mlp=self._fused.snapshot if self._fused is not None else None)  # reset() keeps the snapshot

    # ------------------------------------------------------------------ scene input
    def attach_scene_reader(self, reader: ObjectKeypointReader) -> None:
        """Read the objects' keypoints with ``reader`` (``scene_input="objects_3d"``): the runtime injects the learned
        state model (the diffusion executor builder of :mod:`tandem.runtime.registry`). Kept across :meth:`reset`.

        Raises:
            ConfigError: a checkpoint without scene input, an oracle reader, a reader that does not know one of
                ``cfg.scene_objects`` or reads one more ambiguously than ``cfg.scene_symmetries`` allow
                (:class:`executor_vla.scene_reading.SceneKeypoints`).
        """
        if self.cfg.scene_input == "none":
            raise ConfigError("this track executor takes no scene input (scene_input='none'): it needs no reader")
        self._scene = SceneKeypoints(reader, self.cfg.scene_objects, self.cfg.scene_orders())

    @property
    def scene_reader(self) -> ObjectKeypointReader | None:
        """The attached reader of the objects' keypoints (None: none attached)."""
        return None if self._scene is None else self._scene.reader

    # ------------------------------------------------------------------ Executor protocol
    def reset(self) -> None:
        """Forget history, queue and subgoal; re-seed the sampling noise (episodes are reproducible)."""
        self._noise = torch.Generator().manual_seed(self.SAMPLE_SEED)
        self._history: collections.deque[np.ndarray] = collections.deque(maxlen=self.cfg.n_obs_steps)
        self._queue: collections.deque[np.ndarray] = collections.deque()
        self._trace: tuple[np.ndarray, np.ndarray] | None = None
        self._trace_end: tuple[np.ndarray, bool, float] | None = None  # _end_of_trace(), per subgoal
        self._contact: tuple[np.ndarray, float] | None = None  # _contact_point(), per subgoal
        self._end_armed = False  # the gripper command switched into the trace's final state during this subgoal
        self._last_grip: float | None = None  # sign of the last gripper command (kept across subgoals)
        self._text: Tensor | None = None
        self._done = False
        self._gripper: float | None = None  # binarised gripper state (None until the first action)
        self._holding: bool | None = None  # the subgoal started holding something (decided at its first step)
        self._empty_steps = 0  # consecutive steps the closed hand has been empty since
        self.emptied_hand = False  # the subgoal ended because the hand emptied (empty_grip_m)
        self._release: np.ndarray | None = None  # _release_point(), per subgoal
        self._stall_window: collections.deque[np.ndarray] = collections.deque(maxlen=self.cfg.stall_release_steps or 1)
        self.stall_released = False  # the guarded release opened the gripper during this subgoal (stall_release_steps)
        self.last_progress: float | None = None
        self._chunk_sampler = self._sampler()
        self._fused = self._fused_sampler()

    def _check_vocabulary(self, subgoal: Subgoal, task: TaskSpec | None) -> None:
        cfg = self.cfg
        if task is not None and cfg.tasks and task.name not in cfg.tasks:
            raise SubgoalSchemaError(f"this track executor was trained on task(s) {list(cfg.tasks)}, not "
                                     f"{task.name!r}: use a checkpoint trained for it")
        if cfg.objects and cfg.conditioning_source == "subgoal":
            unknown = [a for a in subgoal.args if a not in cfg.objects]
            if unknown:
                raise SubgoalSchemaError(f"subgoal {subgoal.signature} names {unknown}, which this executor never saw "
                                         f"in training (its objects: {list(cfg.objects)})")

    @torch.no_grad()
    def set_subgoal(self, subgoal: Subgoal, task: TaskSpec | None = None) -> None:
        """Condition on ``subgoal``; the previous subgoal's queued actions are dropped first, even if this raises.

        Args:
            subgoal: with ``trace_3d`` (``trace_input="3d"``) or ``trace`` (``"2d"``) and a non-empty ``text``.
            task: its ``name`` is checked against the checkpoint's tasks; the flat baseline conditions on
                ``task.instruction``.

        Raises:
            SubgoalSchemaError: no trace of the kind the checkpoint needs, a trace longer than it can take, an
                empty text, a task or object the checkpoint was not trained for.
            ConfigError: a checkpoint with ``scene_input="objects_3d"`` and no scene reader attached.
        """
        cfg = self.cfg
        self._queue.clear()
        self._history.clear()
        self._trace, self._text, self._done, self.last_progress = None, None, False, None
        self._trace_end = None
        self._contact = None
        self._holding, self._empty_steps, self.emptied_hand = None, 0, False
        self._release, self.stall_released = None, False
        self._stall_window.clear()
        self._check_vocabulary(subgoal, task)
        if cfg.scene_input != "none" and self._scene is None:
            raise ConfigError(f"this track executor conditions on the keypoints of {list(cfg.scene_objects)} "
                              f"(scene_input={cfg.scene_input!r}) and has no reader for them: build it with tandem's "
                              "registry (executor=diffusion loads the learned state model, executor.state_checkpoint "
                              "or checkpoints/state/<task>), or call attach_scene_reader(<state model>)")
        if cfg.conditioning_source == "instruction":
            if task is None:
                raise SubgoalSchemaError("the flat track executor conditions on task.instruction: pass the TaskSpec")
            trace = (np.zeros((cfg.trace_3d_len, 5), np.float32), np.zeros(cfg.trace_3d_len, np.float32))
            text = task.instruction
        elif cfg.trace_input == "3d":
            if subgoal.trace_3d is None:
                raise SubgoalSchemaError(f"subgoal {subgoal.signature} has no trace_3d, which this track executor "
                                         "follows: use a planner or goal producer that emits 3-D traces")
            trace = schema.pad_trace_3d(subgoal.trace_3d, cfg.trace_3d_len)
            text = subgoal.text
        else:
            if subgoal.trace is None:
                raise SubgoalSchemaError(f"subgoal {subgoal.signature} has no 2-D trace, which this executor needs")
            from tandem.core.traces import resample_trace

            trace = resample_trace(subgoal.trace, cfg.trace_len, cfg.image_size)  # px of cfg.image_size, mask
            text = subgoal.text
        if cfg.use_text:
            if not text or not text.strip():
                raise SubgoalSchemaError(f"subgoal {subgoal.id!r} has an empty text")
            self._text = torch.from_numpy(np.asarray(self.text_encoder.encode([text]), np.float32)).to(self.device)
        self._trace = trace
        self._trace_end = self._end_of_trace()
        self._contact = self._contact_point()
        self._release = self._release_point()
        # a trace that changes the gripper's state is done at its end only once this subgoal commanded the change
        self._end_armed = self._trace_end is None or bool(trace[0][0, 4] > 0) == self._trace_end[1]

    def features(self, proprio: np.ndarray, keypoints_3d: np.ndarray | None = None) -> np.ndarray:
        """``float32 (T, F)`` features of proprio frames ``(T, D)`` against the current subgoal's trace (and, with
        ``scene_input="objects_3d"``, the objects' keypoints ``(O, 2, 3)`` or ``(T, O, 2, 3)`` m).

        Raises:
            SubgoalSchemaError: no subgoal set, or no keypoints for a scene-input checkpoint.
        """
        if self._trace is None:
            raise SubgoalSchemaError("select_action called before set_subgoal (or after a set_subgoal that failed)")
        return frame_features(self.cfg, proprio, *self._trace, keypoints_3d=keypoints_3d)

    def select_action(self, observation: Observation) -> np.ndarray:
        """Next action ``float32 (A,)`` clipped to ``[action_low, action_high]``; a new chunk every ``Ta`` calls.

        With ``action_space="setpoint"`` the chunk's position part holds set-points relative to the grip site when
        the chunk was predicted; each call turns its step's set-point into the OSC delta from the grip site *now*
        (``(set-point - proprio[:3]) / position_scale_m``), so a lagging arm is pushed on within the chunk.

        With ``scene_input="objects_3d"`` each chunk reads the objects' keypoints off this observation (the attached
        reader); the observation horizon's earlier frames are featurised against the same reading (objects move at
        most a few mm in one control step; in training each frame has its own labels).

        Raises:
            SubgoalSchemaError: no subgoal set.
            ConfigError: proprio of the wrong length; the scene reader's camera missing from the observation.
            NonFiniteActionError: NaN/inf in the proprio, the object keypoints or the predicted actions.
        """
        cfg = self.cfg
        p = np.asarray(observation.proprio, np.float32)
        if p.shape != (cfg.state_dim,):
            raise ConfigError(f"observation proprio is {p.shape}, the track executor expects ({cfg.state_dim},)")
        if not np.isfinite(p).all():
            raise NonFiniteActionError(f"observation proprio contains NaN/inf: {p.tolist()}")
        if self._trace is None:
            raise SubgoalSchemaError("select_action called before set_subgoal (or after a set_subgoal that failed)")
        self._history.append(p)
        if not self._queue:
            self._next_chunk(observation, p)
        self._done = self._done or self._at_trace_end(p) or self._hand_emptied(p)
        action = self._queue.popleft()  # a row of this chunk's own float32 copy: changed in place below
        if cfg.action_space == "setpoint":  # P-law to this step's set-point, from where the grip site is now
            action[:3] = (self._chunk_origin + action[:3] - p[:3]) / cfg.position_scale_m
        np.minimum(np.maximum(action, self.action_low, out=action), self.action_high, out=action)  # clip, in place
        h = cfg.gripper_hysteresis
        if h is not None:
            g = float(action[-1])
            if self._gripper is None:
                self._gripper = 1.0 if g > 0 else -1.0
            elif (self._gripper < 0 and g > h) or (self._gripper > 0 and g < -h):
                self._gripper = -self._gripper
            action[-1] = self._gripper
        if self._release is not None and self._stalled_at_release(p, float(action[-1])):
            self._gripper = -1.0  # opened, and held open for the rest of the subgoal
            action[-1] = -1.0
        grip = 1.0 if action[-1] > 0 else -1.0
        if (self._trace_end is not None and self._last_grip is not None and grip != self._last_grip
                and (grip > 0) == self._trace_end[1]):
            self._end_armed = True
        self._last_grip = grip
        if self._contact is not None:
            self._servo(action, p, grip)
        return action

    def _servo(self, action: np.ndarray, proprio: np.ndarray, grip: float) -> None:
        """``trace_servo_m`` (see :class:`TrackExecutorConfig`): near the contact point and while this step's gripper
        command is still the trace's starting state, the position action's xy becomes the P-law to the point's xy
        (clipped) and a descent waits for alignment (``action``: this step's clipped ``(A,)`` action in controller
        units, changed in place; ``grip``: the sign of its gripper command)."""
        cfg = self.cfg
        point, start_state = self._contact  # type: ignore[misc]
        if grip != start_state:  # this step's gripper command has left the starting state: the contact is made
            return
        ex, ey = float(point[0] - proprio[0]), float(point[1] - proprio[1])
        dist = math.hypot(ex, ey)
        if dist >= cfg.trace_servo_m or proprio[2] - point[2] >= cfg.trace_servo_height_m:  # type: ignore[operator]
            return
        action[0] = min(max(ex / cfg.position_scale_m, self.action_low[0]), self.action_high[0])
        action[1] = min(max(ey / cfg.position_scale_m, self.action_low[1]), self.action_high[1])
        if dist > cfg.trace_servo_gate_m and action[2] < 0:
            action[2] = 0.0

    def _stalled_at_release(self, proprio: np.ndarray, grip: float) -> bool:
        """``stall_release_steps`` (see :class:`TrackExecutorConfig`): whether the guarded release holds the gripper
        open at this step: it already opened during this subgoal, or the closed grip site (``grip``: this step's
        gripper command) has stayed within ``stall_motion_m`` for ``stall_release_steps`` steps, within
        ``stall_release_m`` of the release point."""
        if self.stall_released:
            return True
        cfg = self.cfg
        self._stall_window.append(proprio[:3].astype(np.float64))
        if grip <= 0 or len(self._stall_window) < (cfg.stall_release_steps or 0):
            return False
        if float(np.linalg.norm(proprio[:3] - self._release)) >= cfg.stall_release_m:
            return False
        window = np.stack(self._stall_window)
        if float(np.linalg.norm(window.max(axis=0) - window.min(axis=0))) >= cfg.stall_motion_m:
            return False
        self.stall_released = True
        return True

    def _release_point(self) -> np.ndarray | None:
        """The 3-D trace's first open point ``(3,) m`` after a closed start (where the held object is let go), or
        None (the guarded release off, no 3-D trace, a trace that starts open or never opens)."""
        if self.cfg.stall_release_steps is None or self._trace is None or self.cfg.trace_input != "3d":
            return None
        rows, mask = self._trace
        rows = rows[: int(max(mask.sum(), 1))]
        if not rows[0, 4] > 0:
            return None
        opened = np.flatnonzero(rows[:, 4] <= 0)
        return rows[int(opened[0]), :3].astype(np.float64) if len(opened) else None

    def _contact_point(self) -> tuple[np.ndarray, float] | None:
        """``(point (3,) m, gripper state before it: -1 open / +1 closed)``: the 3-D trace's first point whose gripper
        state differs from its first point's, or None (servo off, no 3-D trace, or no change along the trace)."""
        if self.cfg.trace_servo_m is None or self._trace is None or self.cfg.trace_input != "3d":
            return None
        rows, mask = self._trace
        rows = rows[: int(max(mask.sum(), 1))]
        start = 1.0 if rows[0, 4] > 0 else -1.0
        changed = np.flatnonzero((rows[:, 4] > 0) != (start > 0))
        return (rows[int(changed[0]), :3].astype(np.float64), start) if len(changed) else None

    @torch.no_grad()
    def _next_chunk(self, observation: Observation, p: np.ndarray) -> None:
        """Predict a chunk from the observation history (``p``: this step's proprio) and queue its first ``Ta``
        actions as float32 rows; set the progress and the set-points' origin.

        Raises:
            NonFiniteActionError: NaN/inf in the predicted actions.
        """
        cfg = self.cfg
        hist = list(self._history)
        hist = [hist[0]] * (cfg.n_obs_steps - len(hist)) + hist
        keypoints = self._scene.read(observation) if self._scene is not None else None
        feats = self.features(np.stack(hist), keypoints)[None]
        if self._fast_path_applies():  # numpy in, numpy out: no torch round trip on the CPU fast path
            chunk, progress = self._chunk_array(feats, self._text, self._noise)
        else:
            chunk_t, progress_t = self.predict_action_chunk(torch.from_numpy(feats).to(self.device), self._text,
                                                            generator=self._noise)
            chunk, progress = chunk_t.cpu().numpy(), progress_t.cpu().numpy()
        chunk = chunk[0]
        if not np.isfinite(chunk).all():
            raise NonFiniteActionError("the track executor produced NaN/inf actions")
        self._queue.extend(chunk[:cfg.n_action_steps].astype(np.float32))
        self._chunk_origin = p[:3].copy()
        self.last_progress = float(progress[0])
        self._done = self.last_progress >= cfg.done_threshold

    def _at_trace_end(self, proprio: np.ndarray) -> bool:
        """Whether the grip site is within ``done_at_trace_end_m`` of the 3-D trace's last point, with the gripper
        in that point's state (open: wider than 5 cm; closed: the last command was to close), its yaw within
        ``done_at_trace_end_rad`` of that point's (modulo pi) and, where the trace changes the gripper's state,
        after this subgoal commanded that change: a retried pick whose trace ends where it starts (above the
        object) with the gripper still closed on nothing is not done at its first step."""
        end = self._trace_end
        if end is None or not self._end_armed:
            return False
        last, closed, yaw = end
        grip_ok = (self._gripper is not None and self._gripper > 0) if closed else float(proprio[7]) > 0.05
        if not grip_ok:
            return False
        diff = proprio[:3] - last
        if not np.sqrt(diff.dot(diff)) < self.cfg.done_at_trace_end_m:  # np.linalg.norm's arithmetic, unchecked
            return False
        yaw_tol = self.cfg.done_at_trace_end_rad
        # modulo pi: the gripper is symmetric under a half turn
        return yaw_tol is None or abs(wrap_angle(yaw_of_quat(proprio[3:7]) - yaw, math.pi)) < yaw_tol

    def _hand_emptied(self, proprio: np.ndarray) -> bool:
        """``empty_grip_m`` (see :class:`TrackExecutorConfig`): whether a subgoal that started holding something has
        had its closed gripper under ``empty_grip_m`` (m, the proprio's opening) for ``EMPTY_HAND_STEPS`` steps."""
        limit = self.cfg.empty_grip_m
        if limit is None or self._trace is None or self.cfg.trace_input != "3d":
            return False
        opening = float(proprio[7])
        if self._holding is None:  # the subgoal's first step: does it start with something in a closed hand?
            self._holding = bool(self._trace[0][0, 4] > 0) and opening >= limit
        closed = self._last_grip is None or self._last_grip > 0  # no command yet, or the last one closed
        self._empty_steps = self._empty_steps + 1 if (self._holding and closed and opening < limit) else 0
        self.emptied_hand = self.emptied_hand or self._empty_steps >= EMPTY_HAND_STEPS
        return self.emptied_hand

    def _end_of_trace(self) -> tuple[np.ndarray, bool, float] | None:
        """``(last point (3,) m, closed gripper there, its yaw (rad))`` of the current 3-D trace, or None where
        :meth:`_at_trace_end` does not apply; computed once per subgoal."""
        d = self.cfg.done_at_trace_end_m
        if d is None or self._trace is None or self.cfg.trace_input != "3d" or self.cfg.conditioning_source != "subgoal":
            return None
        rows, mask = self._trace
        last = rows[int(max(mask.sum(), 1)) - 1]
        return last[:3].copy(), bool(last[4] > 0), float(last[3])

    def subgoal_done(self) -> bool:
        """Whether the progress head, at the latest chunk, reached ``done_threshold``, the gripper reached the
        trace's end (``done_at_trace_end_m``), or a subgoal that started holding something found the hand empty
        (``empty_grip_m``; :attr:`emptied_hand` then says so)."""
        return self._done

    # ------------------------------------------------------------------ checkpoints
    def with_weights(self, state_dict: dict[str, Tensor]) -> TrackExecutor:
        """A separate eval-mode copy holding ``state_dict`` (e.g. the EMA weights)."""
        ex = TrackExecutor(self.cfg, text_encoder=self._text_encoder, action_low=self.action_low,
                           action_high=self.action_high)
        ex.load_state_dict(state_dict)
        return ex.to(self.device).eval()

    def save(self, path: str | Path, command: str | None = None, extra: dict[str, Any] | None = None,
             state_dict: dict[str, Tensor] | None = None) -> Path:
        """Write a checkpoint directory: ``model.safetensors``, ``config.json`` (``family: "track"``),
        ``stats.json`` and ``command.txt`` (no pickle)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        sd = state_dict if state_dict is not None else self.state_dict()
        sd = {k: v.detach().cpu().contiguous().clone() for k, v in sd.items()}
        save_file(sd, str(path / "model.safetensors"), metadata={"format": FORMAT, "family": FAMILY})
        (path / "config.json").write_text(config_text({
            "format": FORMAT, "family": FAMILY, "executor": self.cfg.to_dict(),
            "action_low": self.action_low.tolist(), "action_high": self.action_high.tolist(), "extra": extra or {}}))
        (path / "stats.json").write_text(json.dumps(self.stats().to_json(), indent=1))
        (path / "command.txt").write_text((command if command is not None else self.command or "(unknown)").strip()
                                          + "\n")
        return path

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str = "cpu", overrides: dict[str, Any] | None = None,
                        text_encoder: Any = None) -> TrackExecutor:
        """Load a checkpoint written by :meth:`save` (safetensors + JSON only).

        Args:
            overrides: inference settings to change (:data:`TrackExecutorConfig.INFERENCE_OVERRIDES`).

        Raises:
            CheckpointError: missing files, another family, weights that do not match the config, stats that
                disagree with the weights.
            ConfigError: an override that is not allowed (named).
        """
        path = Path(path)
        cfg_file = path / "config.json"
        if not cfg_file.is_file():
            raise CheckpointError(f"checkpoint file missing: {cfg_file}")
        try:
            raw = json.loads(cfg_file.read_text())
        except json.JSONDecodeError as e:
            raise CheckpointError(f"{cfg_file} is not valid JSON: {e}") from e
        if raw.get("format") != FORMAT or raw.get("family") != FAMILY:
            raise CheckpointError(f"{path} is not a track executor checkpoint (format {raw.get('format')!r}, "
                                  f"family {raw.get('family')!r})")
        try:
            saved = dict(raw["executor"])
            saved.setdefault("fine_scale_m", None)  # checkpoints from before the option had no fine features
            cfg = TrackExecutorConfig.from_dict(saved)
        except (ConfigError, KeyError, TypeError) as e:
            raise CheckpointError(f"{cfg_file}: invalid executor config: {e}") from e
        if overrides:
            cfg = cfg.with_overrides(dict(overrides))
        ex = cls(cfg, text_encoder=text_encoder, action_low=np.asarray(raw.get("action_low", [-1] * cfg.action_dim)),
                 action_high=np.asarray(raw.get("action_high", [1] * cfg.action_dim)))
        weights_file = path / "model.safetensors"
        if not weights_file.is_file():
            raise CheckpointError(f"checkpoint file missing: {weights_file}")
        try:
            sd = load_file(str(weights_file))
        except Exception as e:  # noqa: BLE001 - safetensors raises its own error types on a truncated or corrupt file
            raise CheckpointError(f"{weights_file} is not a readable safetensors file: {e}") from e
        own = ex.state_dict()
        missing, unexpected = sorted(set(own) - set(sd)), sorted(set(sd) - set(own))
        shapes = [f"{k}: {tuple(sd[k].shape)} vs {tuple(own[k].shape)}" for k in set(own) & set(sd)
                  if tuple(sd[k].shape) != tuple(own[k].shape)]
        if missing or unexpected or shapes:
            raise CheckpointError(f"{weights_file} does not match its config: missing {missing[:10]}, unexpected "
                                  f"{unexpected[:10]}, shapes {shapes[:10]}")
        ex.load_state_dict(sd)
        stats_file = path / "stats.json"
        if stats_file.is_file():
            saved = TrackStats.from_json(json.loads(stats_file.read_text()))
            if not np.allclose(saved.feature_mean, ex.feature_mean.numpy(), atol=1e-5) or \
                    not np.allclose(saved.action_max, ex.action_max.numpy(), atol=1e-5):
                raise CheckpointError(f"{stats_file} disagrees with the normaliser stored in {weights_file}")
        ex.command = (path / "command.txt").read_text().strip() if (path / "command.txt").is_file() else ""
        return ex.to(device).eval().optimize_for_inference()
