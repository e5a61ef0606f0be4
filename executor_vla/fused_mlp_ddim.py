"""DDIM sampling of the MLP denoiser as one fused float32 numpy loop: the track executor's CPU fast path.

Method: the same deterministic DDIM (Song et al. 2021, eta = 0, trailing timesteps) and the same network as
:class:`executor_vla.sampling.ChunkSampler` over :class:`executor_vla.track_net.MLPDenoiser`; only the
arithmetic is rearranged. The denoiser's input layer acts on ``cat[x, cond, step_embedding(t)]``, so it splits
into ``W_x x + (W_c cond + W_s e(t_k) + b)``. The step embeddings of the k = 1..n timesteps do not depend on the
observation and are precomputed once; the condition's term is computed once per chunk, for all n steps in one
sum. Each of the n steps then runs the noisy chunk's projection, the residual blocks and the output layer on the
numpy snapshot of the MLP (:class:`executor_vla.numpy_mlp.NumpyResidualMLP`: transposed weights, LayerNorm affine
folded into the next linear layer), and the DDIM update is :meth:`ChunkSampler.ddim_step`, shared with the module
path. At batch 1 on a CPU the cost is per-call overhead (about 25 module calls per step on the module path, 7 us
per ``torch.addmm`` against 3.7 us per BLAS product from numpy); ``benchmarks/executor_latency.py`` measures it
against the module path and LeRobot's DiffusionPolicy.

The weights are snapshotted, and the snapshot and the step-embedding table are rebuilt when any of the
denoiser's parameters changes version (an optimiser step) or storage, so a model that keeps training is sampled
with its current weights. CPU float32 only: :meth:`FusedMLPDDIM.applies` says whether a condition tensor can take
this path (the executor falls back to the module path otherwise).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from executor_vla.numpy_mlp import NumpyResidualMLP, parameter_key
from executor_vla.sampling import ChunkSampler
from executor_vla.track_net import MLPDenoiser
from tandem.core.errors import ConfigError


class FusedMLPDDIM:
    """DDIM chunks from an :class:`MLPDenoiser`, equal to ``ChunkSampler("DDIM", n).sample`` to float rounding.

    Args:
        denoiser: the MLP denoiser (its ``step`` network: sinusoidal embedding -> Linear -> Mish).
        sampler: a DDIM :class:`ChunkSampler` (its timesteps, alphas and ``clip_sample`` are used).
        mlp: a snapshot of ``denoiser.mlp`` to reuse (that of an earlier sampler: a new one costs about 1.3 ms);
            another module's snapshot is ignored.

    Raises:
        ConfigError: the sampler is not DDIM (DDPM and DPM-Solver keep per-step state this loop does not model),
            or the denoiser's MLP is not a ``ResidualMLP``.
    """

    def __init__(self, denoiser: MLPDenoiser, sampler: ChunkSampler, mlp: NumpyResidualMLP | None = None):
        if sampler.name != "DDIM":
            raise ConfigError(f"FusedMLPDDIM samples DDIM only (got {sampler.name!r})")
        self.denoiser, self.sampler = denoiser, sampler
        self._timesteps = sampler.timesteps()
        self._coef = sampler.ddim_coefficients(self._timesteps)
        self.snapshot = mlp if mlp is not None and mlp.mlp is denoiser.mlp else NumpyResidualMLP(denoiser.mlp)
        self._step_params = list(denoiser.step.parameters())
        self._step_table: np.ndarray | None = None
        self._step_key: tuple = ()

    @staticmethod
    def applies(cond: Tensor) -> bool:
        """Whether ``cond`` can be sampled here: a CPU float32 tensor."""
        return cond.device.type == "cpu" and cond.dtype == torch.float32

    def _step_bias(self, n_in: int) -> np.ndarray:
        """``float32 (n, H)``: the input layer's response to each timestep's embedding (the columns from ``n_in``
        on), cached per parameter version (call after ``self.snapshot.refresh()``)."""
        key = (self.snapshot.key, parameter_key(self._step_params))
        if self._step_table is None or key != self._step_key:
            with torch.no_grad():
                t = self._timesteps.to(torch.float32)
                emb = self.denoiser.step(t.to(self.denoiser.mlp.inp.weight.device)).cpu().numpy()
            self._step_table = (emb @ self.snapshot.inp_t[n_in:]).astype(np.float32)
            self._step_key = key
        return self._step_table

    def sample(self, cond: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """One chunk per row of ``cond``.

        Args:
            cond: ``float32 (B, cond_dim)`` CPU conditioning vectors (the encoder's output).
            generator: RNG of the initial noise, drawn on its own device as ``ChunkSampler.sample`` draws it.

        Returns:
            ``(B, Tp, A)`` chunk in the normalised action space.

        Raises:
            ConfigError: ``cond`` not on the CPU in float32 (:meth:`applies`).
        """
        if not self.applies(cond):
            raise ConfigError(f"FusedMLPDDIM samples CPU float32 conditions (got {cond.dtype} on {cond.device})")
        return torch.from_numpy(self.sample_array(cond.detach().numpy(), generator))

    def sample_array(self, cond: np.ndarray, generator: torch.Generator | None = None) -> np.ndarray:
        """:meth:`sample` on ``float32 (B, cond_dim)`` arrays: returns ``float32 (B, Tp, A)``."""
        d = self.denoiser
        b = cond.shape[0]
        shape = (b, d.horizon, d.action_dim)
        gen_device = generator.device if generator is not None else "cpu"
        x = torch.randn(shape, generator=generator, dtype=torch.float32, device=gen_device).cpu().numpy()
        x = x.reshape(b, -1)
        n_x, n_c = x.shape[1], cond.shape[1]
        mlp = self.snapshot.refresh()
        steps = self._step_bias(n_x + n_c)
        w_x = mlp.inp_t[:n_x]
        base = cond @ mlp.inp_t[n_x:n_x + n_c]
        base += mlp.inp_b
        bias = steps[:, None, :] + base  # (n, B, H): every step's constant part of the input layer
        with np.errstate(over="ignore"):
            for k, (a_t, a_prev) in enumerate(self._coef):
                h = x @ w_x
                h += bias[k]
                x = self.sampler.ddim_step(mlp.trunk(h), x, a_t, a_prev)
        return x.reshape(shape)
