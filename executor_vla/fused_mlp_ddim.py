"""DDIM sampling of the MLP denoiser as one fused loop of plain tensor ops: the track executor's CPU fast path.

Method: the same deterministic DDIM (Song et al. 2021, eta = 0, trailing timesteps) and the same network as
:class:`executor_vla.sampling.ChunkSampler` over :class:`executor_vla.track_net.MLPDenoiser`; only the
arithmetic is rearranged. The denoiser's input layer acts on ``cat[x, cond, step_embedding(t)]``, so it splits
into ``W_x x + (W_c cond + W_s e(t_k) + b)``. The step embeddings of the k = 1..n timesteps do not depend on the
observation and are precomputed once; the condition's term is computed once per chunk. Each of the n steps then
runs the noisy chunk's projection and the residual blocks with ``torch.nn.functional`` calls and no ``nn.Module``
dispatch (the DDIM update is :meth:`ChunkSampler.ddim_step`, shared with the module path), which is what dominates a 1 M-parameter MLP at batch 1 on a CPU (about 25 module calls
per step). ``benchmarks/executor_latency.py`` measures it against the module path and LeRobot's DiffusionPolicy.

The weights are read from the module at every :meth:`FusedMLPDDIM.sample` call (views, no copies), so a model
that keeps training is sampled with its current weights. Only the per-timestep step-embedding table is cached, and
it is rebuilt when the step network's parameters change version (an optimiser step).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812 - the usual alias
from torch import Tensor

from executor_vla.sampling import ChunkSampler
from executor_vla.track_net import MLPDenoiser
from tandem.core.errors import ConfigError


class FusedMLPDDIM:
    """DDIM chunks from an :class:`MLPDenoiser`, equal to ``ChunkSampler("DDIM", n).sample`` to float rounding.

    Args:
        denoiser: the MLP denoiser (its ``step`` network: sinusoidal embedding -> Linear -> Mish).
        sampler: a DDIM :class:`ChunkSampler` (its timesteps, alphas and ``clip_sample`` are used).

    Raises:
        ConfigError: the sampler is not DDIM (DDPM and DPM-Solver keep per-step state this loop does not model).
    """

    def __init__(self, denoiser: MLPDenoiser, sampler: ChunkSampler):
        if sampler.name != "DDIM":
            raise ConfigError(f"FusedMLPDDIM samples DDIM only (got {sampler.name!r})")
        self.denoiser, self.sampler = denoiser, sampler
        timesteps = sampler.timesteps()
        self._timesteps = timesteps
        self._coef = sampler.ddim_coefficients(timesteps)
        self._step_table: Tensor | None = None
        self._step_version: tuple[int, ...] = ()

    def _step_bias(self, w_s: Tensor) -> Tensor:
        """``(n, hidden)``: the input layer's response to each timestep's embedding (cached per weight version)."""
        version = tuple(p._version for p in self.denoiser.step.parameters()) + (w_s._version,)
        if self._step_table is None or version != self._step_version or self._step_table.device != w_s.device:
            t = self._timesteps.to(w_s.device, torch.float32)
            self._step_table = self.denoiser.step(t) @ w_s.T
            self._step_version = version
        return self._step_table

    @torch.no_grad()
    def sample(self, cond: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """One chunk per row of ``cond``.

        Args:
            cond: ``(B, cond_dim)`` conditioning vectors (the encoder's output).
            generator: RNG of the initial noise; drawn on its own device and moved, as ``ChunkSampler.sample``.

        Returns:
            ``(B, Tp, A)`` chunk in the normalised action space.
        """
        d = self.denoiser
        mlp = d.mlp
        b, device = cond.shape[0], cond.device
        shape = (b, d.horizon, d.action_dim)
        gen_device = generator.device if generator is not None else device
        x = torch.randn(shape, generator=generator, dtype=cond.dtype, device=gen_device).to(device).reshape(b, -1)
        n_x, n_c = x.shape[1], cond.shape[1]
        w_in = mlp.inp.weight
        w_x, w_c, w_s = w_in[:, :n_x], w_in[:, n_x:n_x + n_c], w_in[:, n_x + n_c:]
        base = torch.addmm(mlp.inp.bias, cond, w_c.T)  # (B, hidden)
        steps = self._step_bias(w_s)
        blocks = [(blk[0], blk[1], blk[3]) for blk in mlp.blocks]
        out_norm, out_lin = mlp.out[0], mlp.out[2]
        for k, (a_t, a_prev) in enumerate(self._coef):
            h = torch.addmm(base + steps[k], x, w_x.T)
            for norm, lin1, lin2 in blocks:
                z = F.layer_norm(h, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
                h = h + F.linear(F.mish(F.linear(z, lin1.weight, lin1.bias)), lin2.weight, lin2.bias)
            z = F.layer_norm(h, out_norm.normalized_shape, out_norm.weight, out_norm.bias, out_norm.eps)
            pred = F.linear(F.mish(z), out_lin.weight, out_lin.bias)
            x = self.sampler.ddim_step(pred, x, a_t, a_prev)
        return x.reshape(shape)
