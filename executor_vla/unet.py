"""A compact FiLM-conditioned 1-D temporal U-Net, after Chi et al. (Diffusion Policy, RSS 2023).

The network denoises an action sequence ``(B, T, A)`` given a diffusion timestep and a global
conditioning vector (image features, proprio, text, goal, trace). Every residual block applies FiLM
(Perez et al. 2018): the conditioning predicts a per-channel scale and bias. The structure follows
the reference ``ConditionalUnet1D`` (same as LeRobot's ``DiffusionConditionalUnet1d``), only the
default sizes are much smaller (``down_dims=(64, 128, 256)`` instead of ``(512, 1024, 2048)``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class SinusoidalPosEmb(nn.Module):
    """Transformer sinusoidal embedding of a scalar timestep: ``(B,) -> (B, dim)``."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """Timesteps ``(B,)`` -> embeddings ``(B, dim)`` (sine half, then cosine half)."""
        half = self.dim // 2
        freq = torch.exp(torch.arange(half, device=x.device, dtype=torch.float32) * (-math.log(10000) / (half - 1)))
        emb = x.float()[:, None] * freq[None, :]
        return torch.cat([emb.sin(), emb.cos()], dim=-1)


class Conv1dBlock(nn.Sequential):
    """Conv1d -> GroupNorm -> Mish, ``(B, C_in, T) -> (B, C_out, T)``."""

    def __init__(self, c_in: int, c_out: int, kernel_size: int, n_groups: int):
        super().__init__(nn.Conv1d(c_in, c_out, kernel_size, padding=kernel_size // 2),
                         nn.GroupNorm(n_groups, c_out), nn.Mish())


class FiLMResBlock1d(nn.Module):
    """Two conv blocks with FiLM (scale and bias from ``cond``) in between, plus a residual.

    Shapes: ``x (B, C_in, T)``, ``cond (B, cond_dim)`` -> ``(B, C_out, T)``.
    """

    def __init__(self, c_in: int, c_out: int, cond_dim: int, kernel_size: int, n_groups: int):
        super().__init__()
        self.c_out = c_out
        self.block1 = Conv1dBlock(c_in, c_out, kernel_size, n_groups)
        self.block2 = Conv1dBlock(c_out, c_out, kernel_size, n_groups)
        self.film = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, 2 * c_out))
        self.residual = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: Tensor, cond: Tensor) -> Tensor:
        """``x (B, C_in, T)``, ``cond (B, cond_dim)`` -> ``(B, C_out, T)``."""
        h = self.block1(x)
        scale, bias = self.film(cond).unsqueeze(-1).chunk(2, dim=1)
        h = scale * h + bias
        return self.block2(h) + self.residual(x)


class ConditionalUnet1d(nn.Module):
    """FiLM 1-D U-Net: ``forward(x (B, T, A), t (B,), global_cond (B, G)) -> (B, T, A)``.

    Args:
        action_dim: A.
        global_cond_dim: G.
        down_dims: channels per level; T must be divisible by ``2 ** (len(down_dims) - 1)``.
        kernel_size: temporal kernel.
        n_groups: GroupNorm groups.
        step_embed_dim: timestep embedding size.
    """

    def __init__(self, action_dim: int, global_cond_dim: int, down_dims: tuple[int, ...] = (64, 128, 256),
                 kernel_size: int = 5, n_groups: int = 8, step_embed_dim: int = 64):
        super().__init__()
        self.step_encoder = nn.Sequential(SinusoidalPosEmb(step_embed_dim), nn.Linear(step_embed_dim, 4 * step_embed_dim),
                                          nn.Mish(), nn.Linear(4 * step_embed_dim, step_embed_dim))
        cond_dim = step_embed_dim + global_cond_dim
        dims = [action_dim, *down_dims]
        pairs = list(zip(dims[:-1], dims[1:]))

        def res(ci: int, co: int) -> FiLMResBlock1d:
            return FiLMResBlock1d(ci, co, cond_dim, kernel_size, n_groups)

        self.down = nn.ModuleList()
        for i, (ci, co) in enumerate(pairs):
            last = i == len(pairs) - 1
            self.down.append(nn.ModuleList([res(ci, co), res(co, co),
                                            nn.Conv1d(co, co, 3, 2, 1) if not last else nn.Identity()]))
        self.mid = nn.ModuleList([res(down_dims[-1], down_dims[-1]), res(down_dims[-1], down_dims[-1])])
        self.up = nn.ModuleList()
        for ci, co in reversed(pairs[1:]):  # one upsample per downsample, as in the reference
            self.up.append(nn.ModuleList([res(co * 2, ci), res(ci, ci), nn.ConvTranspose1d(ci, ci, 4, 2, 1)]))
        self.final = nn.Sequential(Conv1dBlock(down_dims[0], down_dims[0], kernel_size, n_groups),
                                   nn.Conv1d(down_dims[0], action_dim, 1))

    def forward(self, x: Tensor, timestep: Tensor, global_cond: Tensor) -> Tensor:
        """Noise (or sample) prediction ``(B, T, A)`` of the noised chunk ``x (B, T, A)`` at diffusion step
        ``timestep`` (``(B,)`` or a scalar), given ``global_cond (B, G)``."""
        x = x.transpose(1, 2)  # (B, A, T)
        if timestep.ndim == 0:
            timestep = timestep.expand(x.shape[0])
        cond = torch.cat([self.step_encoder(timestep), global_cond], dim=-1)
        skips = []
        for r1, r2, down in self.down:
            x = r2(r1(x, cond), cond)
            skips.append(x)
            x = down(x)
        for m in self.mid:
            x = m(x, cond)
        for r1, r2, up in self.up:
            x = torch.cat([x, skips.pop()], dim=1)
            x = r2(r1(x, cond), cond)
            x = up(x)
        return self.final(x).transpose(1, 2)
