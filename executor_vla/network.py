"""The executor's network: observation and subgoal encoders, the FiLM U-Net, and the done head.

Global conditioning vector (Diffusion Policy's "obs as global conditioning"), concatenated:

* per observation step (To of them): one :class:`~executor_vla.vision.ImageEncoder` feature per camera
  (the trace camera's encoder sees RGB + the rasterised trace in ``trace_mode="raster"``), and the
  min-max-normalised proprio;
* per subgoal (computed once per subgoal at inference): the projected text embedding, the goal-image
  feature, and in ``trace_mode="points"`` the trace-point embedding.

The done head (an MLP on the same vector) predicts the subgoal's progress in ``[0, 1]`` and the
logit of ``subgoal.success``; ``DiffusionExecutor.subgoal_done`` thresholds one of them.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from executor_vla.conditioning import TracePointEncoder, random_shift
from executor_vla.config import ExecutorConfig
from executor_vla.unet import ConditionalUnet1d
from executor_vla.vision import ImageEncoder
from tandem.core import dataset_schema as schema

TEXT_EMB_KEY = "subgoal.text_embedding"
TRACE_RASTER_KEY = "subgoal.trace_raster"


class ExecutorNet(nn.Module):
    """All trainable parts. Inputs are the dataset-keyed tensors described in :mod:`tandem.core.dataset_schema`.

    Batch keys used (shapes; images float in ``[0, 1]``):
        ``observation.images.<cam>``: ``(B, To, 3, H, W)``; ``observation.state``: ``(B, To, D)`` normalised;
        ``subgoal.text_embedding``: ``(B, E)``; ``subgoal.goal_image``: ``(B, 3, H, W)``;
        ``subgoal.trace``: ``(B, K, 2)`` px at ``image_size``; ``subgoal.trace_mask``: ``(B, K)``;
        ``subgoal.trace_raster``: ``(B, 1, H, W)`` in ``[0, 1]`` (raster mode).
    """

    def __init__(self, cfg: ExecutorConfig):
        super().__init__()
        self.cfg = cfg
        raster = cfg.use_trace and cfg.trace_mode == "raster"
        kw = dict(channels=cfg.vision_channels, num_kp=cfg.spatial_softmax_keypoints, image_size=cfg.image_size,
                  groups=cfg.n_groups_vision)
        self.encoders = nn.ModuleDict()
        if cfg.share_camera_encoder:
            self.encoders["shared"] = ImageEncoder(4 if raster else 3, **kw)
        else:
            for cam in cfg.cameras:
                self.encoders[cam] = ImageEncoder(4 if (raster and cam == cfg.trace_camera) else 3, **kw)
        feat = self.encoder_for(cfg.cameras[0]).out_dim
        obs_dim = cfg.n_obs_steps * (feat * len(cfg.cameras) + cfg.state_dim)
        sub_dim = 0
        if cfg.use_text:
            self.text_proj = nn.Sequential(nn.Linear(cfg.text_dim, cfg.cond_dim), nn.Mish(),
                                           nn.Linear(cfg.cond_dim, cfg.cond_dim))
            sub_dim += cfg.cond_dim
        if cfg.use_goal_image:
            if cfg.goal_encoder == "own":
                self.goal_encoder = ImageEncoder(3, **kw)
            sub_dim += feat
        if cfg.use_trace and cfg.trace_mode == "points":
            self.trace_encoder = TracePointEncoder(cfg.trace_len, cfg.cond_dim, cfg.image_size)
            sub_dim += cfg.cond_dim
        self.obs_dim, self.subgoal_dim = obs_dim, sub_dim
        self.global_cond_dim = obs_dim + sub_dim
        self.unet = ConditionalUnet1d(cfg.action_dim, self.global_cond_dim, cfg.down_dims, cfg.kernel_size,
                                      cfg.n_groups, cfg.diffusion_step_embed_dim)
        self.done_head = nn.Sequential(nn.Linear(self.global_cond_dim, 128), nn.Mish(), nn.Linear(128, 2))

    def encoder_for(self, camera: str) -> ImageEncoder:
        """The image encoder of ``camera`` (the single shared one if ``share_camera_encoder``)."""
        return self.encoders["shared" if self.cfg.share_camera_encoder else camera]

    def _goal_feature(self, goal: Tensor) -> Tensor:
        x = goal * 2 - 1
        if self.cfg.goal_encoder == "own":
            return self.goal_encoder(x)
        enc = self.encoder_for(self.cfg.trace_camera)
        if enc.stem[0].in_channels == 4:  # shared with a raster-augmented encoder: empty trace channel
            x = torch.cat([x, torch.full_like(x[:, :1], -1.0)], 1)
        return enc(x)

    def encode_subgoal(self, batch: dict[str, Tensor]) -> Tensor:
        """Subgoal conditioning ``(B, subgoal_dim)`` (may be ``(B, 0)`` when all of it is off)."""
        parts: list[Tensor] = []
        cfg = self.cfg
        if cfg.use_text:
            parts.append(self.text_proj(batch[TEXT_EMB_KEY]))
        if cfg.use_goal_image:
            parts.append(self._goal_feature(batch[schema.GOAL_IMAGE_KEY]))
        if cfg.use_trace and cfg.trace_mode == "points":
            parts.append(self.trace_encoder(batch[schema.TRACE_KEY], batch[schema.TRACE_MASK_KEY]))
        if not parts:
            b = batch[schema.STATE_KEY].shape[0]
            return batch[schema.STATE_KEY].new_zeros(b, 0)
        return torch.cat(parts, -1)

    def encode_obs(self, batch: dict[str, Tensor], state_norm: Tensor, augment: bool) -> Tensor:
        """Observation conditioning ``(B, obs_dim)`` from To frames of every camera plus proprio.

        Args:
            state_norm: ``(B, To, D)`` normalised proprio.
            augment: apply the random-shift augmentation (training only).
        """
        cfg = self.cfg
        feats: list[Tensor] = []
        b, to = state_norm.shape[:2]
        for cam in cfg.cameras:
            x = batch[schema.image_key(cam)]  # (B, To, 3, H, W)
            x = x.reshape(b * to, *x.shape[2:]) * 2 - 1
            enc = self.encoder_for(cam)
            if enc.stem[0].in_channels == 4:
                if cam == cfg.trace_camera:
                    r = batch[TRACE_RASTER_KEY] * 2 - 1  # (B, 1, H, W)
                    r = r.unsqueeze(1).expand(b, to, *r.shape[1:]).reshape(b * to, *r.shape[1:])
                else:
                    r = torch.full_like(x[:, :1], -1.0)
                x = torch.cat([x, r], 1)
            if augment and cfg.augment_shift_px > 0:
                x = random_shift(x, cfg.augment_shift_px)
            feats.append(enc(x).reshape(b, -1))
        feats.append(state_norm.reshape(b, -1))
        return torch.cat(feats, -1)

    def done_outputs(self, global_cond: Tensor) -> tuple[Tensor, Tensor]:
        """``(progress in [0, 1] (B,), success logit (B,))`` from the global conditioning."""
        out = self.done_head(global_cond)
        return torch.sigmoid(out[:, 0]), out[:, 1]
