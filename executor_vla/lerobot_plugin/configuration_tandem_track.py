"""``TandemTrackConfig``: LeRobot ``PreTrainedConfig`` for the ``tandem_track`` policy type.

The policy is :class:`executor_vla.track_policy.TrackExecutor` (proprioception + the subgoal's 3-D trace + its text,
no images). Every field of :class:`executor_vla.track_config.TrackExecutorConfig` except ``extra`` is mirrored here
with the same default (see there for meanings, shapes and units; ``tests/unit/test_lerobot_track_plugin.py``
checks that the two stay in step), so ``--policy.<field>=...`` on ``lerobot-train`` sets the executor's field.

Windows follow the track executor, not Diffusion Policy's LeRobot convention: the observation frames are
``t - To + 1 .. t`` and the action chunk starts at the current frame ``t`` (``action_delta_indices = 0 .. Tp - 1``).
Normalisation happens inside the model (feature mean/std, action min-max to ``[-1, 1]``, statistics as buffers),
so LeRobot's normaliser steps are IDENTITY. Optimiser and schedule presets are tandem-train's
(:class:`executor_vla.train.TrainConfig` defaults: AdamW lr 1e-4, betas (0.95, 0.999), weight decay 1e-6, gradient
norm clipped at 1, cosine schedule with 500 warm-up steps; Chi et al. 2023). LeRobot's loop keeps no EMA of the
weights, which tandem-train does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import override

from lerobot.configs.policies import PreTrainedConfig
from lerobot.configs.types import NormalizationMode
from lerobot.optim.optimizers import AdamWConfig
from lerobot.optim.schedulers import DiffuserSchedulerConfig

from executor_vla.track_config import TrackExecutorConfig
from tandem.core import dataset_schema as schema

#: The track executor's defaults: the single source of this config's defaults.
_TRACK = TrackExecutorConfig()
#: TrackExecutorConfig fields that are not mirrored: free-form metadata (``extra``), the action space and the
#: set-points' companding, scale, contact-point servo (``trace_servo_*``) and guarded release (``stall_*``), which stay ``"delta"`` / off here
#: because lerobot-train's action windows are the recorded controller actions (set-point executors are trained with
#: ``tandem-train executor=track executor.action_space=setpoint``), and the scene input, which stays ``"none"`` (object-keypoint executors are
#: trained with ``tandem-train ... executor.scene_input=objects_3d`` and need the learned state model at run time,
#: which tandem's runtime attaches).
UNMIRRORED_FIELDS: tuple[str, ...] = ("extra", "action_space", "action_compand_m", "position_scale_m", "trace_servo_m",
                                      "trace_servo_height_m", "trace_servo_gate_m", "stall_release_steps",
                                      "stall_release_m", "stall_motion_m", "scene_input", "scene_objects",
                                      "scene_symmetries")


@PreTrainedConfig.register_subclass("tandem_track")
@dataclass
class TandemTrackConfig(PreTrainedConfig):
    """LeRobot-side config of tandem's track-conditioned executor (fields: :class:`TrackExecutorConfig`'s).

    Besides the mirrored executor fields: ``optimizer_*`` and ``scheduler_warmup_steps`` are LeRobot's optimiser
    and LR-schedule presets. ``tasks`` and ``objects`` (the checkpoint's vocabulary, checked at ``set_subgoal``)
    are filled from the dataset's journal when the policy is first built on a dataset and left empty.

    Raises:
        ConfigError: (at construction) values :class:`TrackExecutorConfig` refuses, named.
    """

    n_obs_steps: int = _TRACK.n_obs_steps
    horizon: int = _TRACK.horizon
    n_action_steps: int = _TRACK.n_action_steps
    state_dim: int = _TRACK.state_dim
    action_dim: int = _TRACK.action_dim
    trace_input: str = _TRACK.trace_input
    trace_3d_len: int = _TRACK.trace_3d_len
    trace_len: int = _TRACK.trace_len
    image_size: tuple[int, int] = _TRACK.image_size
    use_text: bool = _TRACK.use_text
    text_encoder: str = _TRACK.text_encoder
    text_dim: int = _TRACK.text_dim
    conditioning_source: str = _TRACK.conditioning_source
    head: str = _TRACK.head
    denoiser: str = _TRACK.denoiser
    cond_dim: int = _TRACK.cond_dim
    hidden_dim: int = _TRACK.hidden_dim
    n_layers: int = _TRACK.n_layers
    down_dims: tuple[int, ...] = _TRACK.down_dims
    num_train_timesteps: int = _TRACK.num_train_timesteps
    beta_schedule: str = _TRACK.beta_schedule
    prediction_type: str = _TRACK.prediction_type
    clip_sample: bool = _TRACK.clip_sample
    inference_scheduler: str = _TRACK.inference_scheduler
    num_inference_steps: int = _TRACK.num_inference_steps
    progress_loss_weight: float = _TRACK.progress_loss_weight
    done_threshold: float = _TRACK.done_threshold
    gripper_hysteresis: float | None = _TRACK.gripper_hysteresis
    hold_after_end: bool = _TRACK.hold_after_end
    done_at_trace_end_m: float | None = _TRACK.done_at_trace_end_m
    done_at_trace_end_rad: float | None = _TRACK.done_at_trace_end_rad
    empty_grip_m: float | None = _TRACK.empty_grip_m
    fine_scale_m: float | None = _TRACK.fine_scale_m
    obs_noise_std: float = _TRACK.obs_noise_std
    tasks: tuple[str, ...] = _TRACK.tasks
    objects: tuple[str, ...] = _TRACK.objects
    normalization_mapping: dict[str, NormalizationMode] = field(default_factory=lambda: {
        "VISUAL": NormalizationMode.IDENTITY, "STATE": NormalizationMode.IDENTITY,
        "ACTION": NormalizationMode.IDENTITY})
    optimizer_lr: float = 1e-4
    optimizer_betas: tuple[float, float] = (0.95, 0.999)
    optimizer_weight_decay: float = 1e-6
    optimizer_grad_clip_norm: float = 1.0
    scheduler_warmup_steps: int = 500

    def __post_init__(self) -> None:
        super().__post_init__()
        self.executor_config()  # validate early (raises ConfigError naming the bad values)

    def executor_config(self) -> TrackExecutorConfig:
        """The equivalent :class:`TrackExecutorConfig` (the weights' meaning).

        Raises:
            ConfigError: invalid values, named.
        """
        names = [f.name for f in fields(TrackExecutorConfig) if f.name not in UNMIRRORED_FIELDS]
        return TrackExecutorConfig(**{n: getattr(self, n) for n in names})

    @property
    def observation_delta_indices(self) -> list[int]:
        """Frames ``t - To + 1 .. t`` of every ``observation.*`` feature."""
        return list(range(1 - self.n_obs_steps, 1))

    @property
    def action_delta_indices(self) -> list[int]:
        """Actions ``t .. t + Tp - 1``: the track executor's chunk starts at the current frame."""
        return list(range(0, self.horizon))

    @property
    @override
    def reward_delta_indices(self) -> None:
        return None

    def get_optimizer_preset(self) -> AdamWConfig:
        """AdamW with tandem-train's defaults (gradient norm clipped at ``optimizer_grad_clip_norm``)."""
        return AdamWConfig(lr=self.optimizer_lr, betas=self.optimizer_betas, weight_decay=self.optimizer_weight_decay,
                           grad_clip_norm=self.optimizer_grad_clip_norm)

    def get_scheduler_preset(self) -> DiffuserSchedulerConfig:
        """Cosine learning-rate schedule with ``scheduler_warmup_steps`` of linear warm-up (diffusers)."""
        return DiffuserSchedulerConfig(name="cosine", num_warmup_steps=self.scheduler_warmup_steps)

    def validate_features(self) -> None:
        """Check the dataset's ``observation.state`` and ``action`` features against ``state_dim`` / ``action_dim``.

        The trace and text features (``subgoal.*``) are not LeRobot policy features; the policy checks them
        against the dataset's metadata when it is built (:class:`TandemTrackPolicy`).

        Raises:
            ValueError: a missing feature, or one of another size than the config's (named, with the flag to set).
        """
        have = {**(self.input_features or {}), **(self.output_features or {})}
        problems = []
        for key, size, flag in ((schema.STATE_KEY, self.state_dim, "state_dim"),
                                (schema.ACTION_KEY, self.action_dim, "action_dim")):
            feat = have.get(key)
            if feat is None:
                problems.append(f"the dataset has no {key!r} feature")
            elif tuple(feat.shape) != (size,):
                problems.append(f"{key} is {tuple(feat.shape)} in the dataset but the policy's {flag} is {size} "
                                f"(set --policy.{flag}={feat.shape[-1]})")
        if problems:
            raise ValueError("tandem_track: " + "; ".join(problems))
