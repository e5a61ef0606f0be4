"""Networks of the track-conditioned executor: an observation encoder, an action head and a progress head.

* :class:`ResidualMLP`: pre-norm residual MLP blocks (LayerNorm -> Linear -> Mish -> Linear), as in the MLP
  diffusion policies of IDQL (Hansen-Estruch et al. 2023) and Diffusion Policy's low-dimensional ablations.
* :class:`MLPDenoiser`: predicts the clean chunk (or the noise) from the noisy flattened chunk ``(B, Tp * A)``, the
  sinusoidal timestep embedding and the conditioning vector; about 1 M parameters, ~0.1 ms per call on one core.
* The U-Net option reuses :class:`executor_vla.unet.ConditionalUnet1d` (Chi et al.'s FiLM 1-D U-Net).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from executor_vla.track_config import TrackExecutorConfig
from executor_vla.unet import ConditionalUnet1d, SinusoidalPosEmb


class ResidualMLP(nn.Module):
    """``(B, in_dim) -> (B, out_dim)``: input projection, ``n_layers`` pre-norm residual blocks, output projection."""

    def __init__(self, in_dim: int, out_dim: int, hidden_dim: int, n_layers: int):
        super().__init__()
        self.inp = nn.Linear(in_dim, hidden_dim)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(hidden_dim), nn.Linear(hidden_dim, hidden_dim), nn.Mish(),
                          nn.Linear(hidden_dim, hidden_dim)) for _ in range(n_layers))
        self.out = nn.Sequential(nn.LayerNorm(hidden_dim), nn.Mish(), nn.Linear(hidden_dim, out_dim))

    def forward(self, x: Tensor) -> Tensor:
        """``(B, in_dim) -> (B, out_dim)``."""
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


class MLPDenoiser(nn.Module):
    """``forward(x (B, Tp, A), t (B,), cond (B, C)) -> (B, Tp, A)``: the diffusion model over the flattened chunk."""

    def __init__(self, horizon: int, action_dim: int, cond_dim: int, hidden_dim: int, n_layers: int,
                 step_embed_dim: int = 64):
        super().__init__()
        self.horizon, self.action_dim = horizon, action_dim
        self.step = nn.Sequential(SinusoidalPosEmb(step_embed_dim), nn.Linear(step_embed_dim, step_embed_dim),
                                  nn.Mish())
        self.mlp = ResidualMLP(horizon * action_dim + cond_dim + step_embed_dim, horizon * action_dim,
                               hidden_dim, n_layers)

    def forward(self, x: Tensor, timestep: Tensor, cond: Tensor) -> Tensor:
        """Noise (or sample) prediction ``(B, Tp, A)`` of the noised chunk ``x (B, Tp, A)`` at diffusion step
        ``timestep (B,)``, given ``cond (B, C)``."""
        b = x.shape[0]
        h = torch.cat([x.reshape(b, -1), cond, self.step(timestep.reshape(b).to(x.dtype))], dim=-1)
        return self.mlp(h).reshape(b, self.horizon, self.action_dim)


class TrackNet(nn.Module):
    """Observation/subgoal encoder plus action and progress heads.

    Args:
        cfg: the executor config.
        obs_dim: features per observation frame (:func:`executor_vla.track_features.feature_dim`, or the 2-D trace
            layout).

    Inputs (``forward`` is not used; the policy calls the parts):
        ``encode(obs (B, To, F) normalised, text (B, E) or None) -> cond (B, cond_dim)``;
        ``progress(cond) -> (B,)`` in ``[0, 1]``; the action head is ``self.denoiser`` (diffusion) or
        ``self.regressor`` (MSE).
    """

    def __init__(self, cfg: TrackExecutorConfig, obs_dim: int):
        super().__init__()
        self.cfg = cfg
        text_out = 64 if cfg.use_text else 0
        self.text_proj = nn.Sequential(nn.Linear(cfg.text_dim, text_out), nn.Mish()) if cfg.use_text else None
        self.encoder = ResidualMLP(cfg.n_obs_steps * obs_dim + text_out, cfg.cond_dim, cfg.hidden_dim,
                                   max(1, cfg.n_layers - 1))
        self.progress_head = nn.Linear(cfg.cond_dim, 1)
        self.denoiser: nn.Module | None = None
        self.regressor: nn.Module | None = None
        if cfg.head == "diffusion":
            if cfg.denoiser == "mlp":
                self.denoiser = MLPDenoiser(cfg.horizon, cfg.action_dim, cfg.cond_dim, cfg.hidden_dim, cfg.n_layers)
            else:
                self.denoiser = ConditionalUnet1d(cfg.action_dim, cfg.cond_dim, down_dims=cfg.down_dims)
        else:
            self.regressor = ResidualMLP(cfg.cond_dim, cfg.horizon * cfg.action_dim, cfg.hidden_dim, cfg.n_layers)

    def encode(self, obs: Tensor, text: Tensor | None) -> Tensor:
        """``obs (B, To, F)`` normalised features and ``text (B, E)`` (None without text) -> ``cond (B, cond_dim)``.

        Raises:
            ValueError: the config uses text and ``text`` is None.
        """
        parts = [obs.reshape(obs.shape[0], -1)]
        if self.text_proj is not None:
            if text is None:
                raise ValueError("TrackNet.encode: the config uses text but no text embedding was given")
            parts.append(self.text_proj(text))
        return self.encoder(torch.cat(parts, dim=-1))

    def progress(self, cond: Tensor) -> Tensor:
        """Predicted progress through the subgoal, ``(B,)`` in ``[0, 1]``, from ``cond (B, cond_dim)``."""
        return torch.sigmoid(self.progress_head(cond)).reshape(-1)

    def regress(self, cond: Tensor) -> Tensor:
        """The regression head's action chunk ``(B, horizon, action_dim)`` (normalised) from ``cond (B, cond_dim)``."""
        assert self.regressor is not None
        return self.regressor(cond).reshape(cond.shape[0], self.cfg.horizon, self.cfg.action_dim)
