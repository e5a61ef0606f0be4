"""``TandemDiffusionConfig``: LeRobot ``PreTrainedConfig`` for the ``tandem_diffusion`` policy type.

Its fields mirror :class:`executor_vla.config.ExecutorConfig` (see there for meanings); image size and
cameras are read from the dataset's features. Normalisation happens inside the model (min-max to
``[-1, 1]``, statistics as buffers), so LeRobot's normaliser steps are set to IDENTITY.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import override

from lerobot.configs.policies import PreTrainedConfig
from lerobot.configs.types import NormalizationMode
from lerobot.optim.optimizers import AdamWConfig
from lerobot.optim.schedulers import DiffuserSchedulerConfig

from executor_vla.config import ExecutorConfig
from tandem.core import dataset_schema as schema


@PreTrainedConfig.register_subclass("tandem_diffusion")
@dataclass
class TandemDiffusionConfig(PreTrainedConfig):
    """LeRobot-side config of tandem's executor (Diffusion Policy + text/goal-image/trace conditioning)."""

    n_obs_steps: int = 2
    horizon: int = 16
    n_action_steps: int = 8
    cameras: tuple[str, ...] = schema.CAMERAS
    use_text: bool = True
    use_goal_image: bool = True
    use_trace: bool = True
    trace_mode: str = "raster"
    trace_len: int = schema.TRACE_LEN
    conditioning_source: str = "subgoal"
    text_encoder: str = "minilm"
    text_dim: int = 384
    vision_channels: tuple[int, ...] = (32, 32, 64, 128)
    spatial_softmax_keypoints: int = 32
    down_dims: tuple[int, ...] = (64, 128, 256)
    diffusion_step_embed_dim: int = 64
    cond_dim: int = 64
    num_train_timesteps: int = 100
    prediction_type: str = "sample"
    inference_scheduler: str = "DDIM"
    num_inference_steps: int = 10
    augment_shift_px: int = 4
    normalization_mapping: dict[str, NormalizationMode] = field(default_factory=lambda: {
        "VISUAL": NormalizationMode.IDENTITY, "STATE": NormalizationMode.IDENTITY,
        "ACTION": NormalizationMode.IDENTITY})
    optimizer_lr: float = 1e-4
    optimizer_betas: tuple[float, float] = (0.95, 0.999)
    optimizer_weight_decay: float = 1e-6
    scheduler_warmup_steps: int = 500

    def __post_init__(self) -> None:
        super().__post_init__()
        self.executor_config(image_size=(128, 128))  # validate early (raises ConfigError)

    def executor_config(self, image_size: tuple[int, int] | None = None) -> ExecutorConfig:
        """The equivalent :class:`ExecutorConfig` (image size from the dataset's camera features)."""
        if image_size is None:
            key = schema.image_key(self.cameras[0])
            feat = (self.input_features or {}).get(key)
            image_size = tuple(feat.shape[-2:]) if feat is not None else schema.IMAGE_SIZE
        return ExecutorConfig(
            n_obs_steps=self.n_obs_steps, horizon=self.horizon, n_action_steps=self.n_action_steps,
            image_size=image_size, cameras=tuple(self.cameras), use_text=self.use_text,
            use_goal_image=self.use_goal_image, use_trace=self.use_trace, trace_mode=self.trace_mode,
            trace_len=self.trace_len, conditioning_source=self.conditioning_source, text_encoder=self.text_encoder,
            text_dim=self.text_dim, vision_channels=tuple(self.vision_channels),
            spatial_softmax_keypoints=self.spatial_softmax_keypoints, down_dims=tuple(self.down_dims),
            diffusion_step_embed_dim=self.diffusion_step_embed_dim, cond_dim=self.cond_dim,
            num_train_timesteps=self.num_train_timesteps, prediction_type=self.prediction_type,
            inference_scheduler=self.inference_scheduler, num_inference_steps=self.num_inference_steps,
            augment_shift_px=self.augment_shift_px)

    @property
    @override
    def observation_delta_indices(self) -> list[int]:
        return list(range(1 - self.n_obs_steps, 1))

    @property
    @override
    def action_delta_indices(self) -> list[int]:
        return list(range(1 - self.n_obs_steps, 1 - self.n_obs_steps + self.horizon))

    @property
    @override
    def reward_delta_indices(self) -> None:
        return None

    @override
    def get_optimizer_preset(self) -> AdamWConfig:
        return AdamWConfig(lr=self.optimizer_lr, betas=self.optimizer_betas, weight_decay=self.optimizer_weight_decay)

    @override
    def get_scheduler_preset(self) -> DiffuserSchedulerConfig:
        return DiffuserSchedulerConfig(name="cosine", num_warmup_steps=self.scheduler_warmup_steps)

    def validate_features(self) -> None:
        """Raise ``ValueError`` naming the dataset features this policy needs but the dataset lacks."""
        from executor_vla.data import required_features

        have = set(self.input_features or {}) | set(self.output_features or {})
        # Non-observation features (subgoal.*) are not policy features in LeRobot; only check these:
        need = [k for k in required_features(self.executor_config()) if k.startswith(("observation.", "action"))]
        missing = [k for k in need if k not in have]
        if missing:
            raise ValueError(f"tandem_diffusion needs dataset features {missing}")
