"""Diffusion schedulers and the chunk sampler shared by every diffusion executor of this package.

Method: DDPM training (Ho et al. 2020) with diffusers' ``DDPMScheduler``; sampling with DDIM (Song et al. 2021),
ancestral DDPM, or DPM-Solver++ multistep (Lu et al. 2022, ``DPMSolverMultistepScheduler``), as in Diffusion
Policy (Chi et al. 2023). Library: diffusers (0.42).

Two facts of diffusers decide the design of this module:

* **Spacing.** DDIM and DDPM default to ``timestep_spacing="leading"``: 10 steps out of 100 start at t = 90, and
  1 step is t = 0, which reads pure noise as an almost clean sample. DPM-Solver defaults to ``"linspace"``, which
  rounds 100 steps of 100 onto repeated timesteps (50 twice) and divides by zero: an all-NaN chunk. Every
  inference scheduler here uses ``"trailing"`` spacing (Lin et al. 2024, "Common Diffusion Noise Schedules and
  Sample Steps are Flawed"): the first step is always t = T - 1 and n steps are n distinct timesteps. diffusers
  0.42 computes it with a float ``arange`` that yields one step too many, ending at t = -1, for some n (29, 31,
  58, 62 and 97 of T = 100), so the timesteps are computed here (:func:`trailing_timesteps`) and given to the
  scheduler. (DDIM then still steps to ``t - T // n``, as diffusers' DDIM always does, which for n not dividing
  T lands within one timestep of the next one.)
* **State.** ``DPMSolverMultistepScheduler`` keeps a step index and the previous model outputs between
  ``step`` calls; they are reset only by ``set_timesteps``. :meth:`ChunkSampler.sample` therefore calls
  ``set_timesteps`` at the start of EVERY sampling run (a scheduler set once raises ``IndexError`` on the second
  chunk), and checks the timesteps it got (:func:`check_timesteps`).

A denoiser is any callable ``(noisy (B, Tp, A), timesteps (B,) int64) -> prediction (B, Tp, A)``: the clean chunk
x0 when ``prediction_type="sample"``, the noise when ``"epsilon"``. Chunks are in the normalised action space the
denoiser was trained in (``[-1, 1]`` for min-max normalised actions, which is what makes ``clip_sample`` valid).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from tandem.core.errors import ConfigError

#: Inference schedulers a config may name.
SCHEDULERS: tuple[str, ...] = ("DDIM", "DDPM", "DPMSolver")
#: diffusers ``timestep_spacing`` of every inference scheduler (see the module docstring).
TIMESTEP_SPACING = "trailing"
PREDICTION_TYPES: tuple[str, ...] = ("epsilon", "sample")

#: ``(noisy (B, Tp, A), timesteps (B,) int64) -> prediction (B, Tp, A)``.
Denoiser = Callable[[Tensor, Tensor], Tensor]


def make_train_scheduler(num_train_timesteps: int, beta_schedule: str, prediction_type: str,
                         clip_sample: bool) -> Any:
    """diffusers ``DDPMScheduler`` used for training (``add_noise``); ``clip_sample_range`` is 1.

    Raises:
        ConfigError: an unknown ``prediction_type`` or a beta schedule diffusers does not implement.
    """
    from diffusers import DDPMScheduler

    _check_common(num_train_timesteps, prediction_type)
    try:
        return DDPMScheduler(num_train_timesteps=num_train_timesteps, beta_schedule=beta_schedule,
                             clip_sample=clip_sample, clip_sample_range=1.0, prediction_type=prediction_type)
    except NotImplementedError as e:
        raise ConfigError(f"beta_schedule {beta_schedule!r}: {e}") from e


def make_inference_scheduler(name: str, num_train_timesteps: int, beta_schedule: str, prediction_type: str,
                             clip_sample: bool) -> Any:
    """The diffusers scheduler named ``name`` (one of :data:`SCHEDULERS`) with ``"trailing"`` timestep spacing.

    ``clip_sample`` clamps the predicted x0 to ``[-1, 1]`` in DDIM and DDPM. diffusers' DPM-Solver has no such
    option (only dynamic thresholding); with it the predicted x0 is not clamped.

    Raises:
        ConfigError: an unknown scheduler name or prediction type, or a beta schedule diffusers lacks.
    """
    from diffusers import DDIMScheduler, DDPMScheduler, DPMSolverMultistepScheduler

    _check_common(num_train_timesteps, prediction_type)
    common = dict(num_train_timesteps=num_train_timesteps, beta_schedule=beta_schedule,
                  prediction_type=prediction_type, timestep_spacing=TIMESTEP_SPACING)
    try:
        if name == "DDIM":
            return DDIMScheduler(clip_sample=clip_sample, clip_sample_range=1.0, **common)
        if name == "DDPM":
            return DDPMScheduler(clip_sample=clip_sample, clip_sample_range=1.0, **common)
        if name == "DPMSolver":
            return DPMSolverMultistepScheduler(**common)
    except NotImplementedError as e:
        raise ConfigError(f"beta_schedule {beta_schedule!r}: {e}") from e
    raise ConfigError(f"inference_scheduler must be one of {SCHEDULERS} (got {name!r})")


def _check_common(num_train_timesteps: int, prediction_type: str) -> None:
    if int(num_train_timesteps) < 1:
        raise ConfigError(f"num_train_timesteps must be >= 1 (got {num_train_timesteps})")
    if prediction_type not in PREDICTION_TYPES:
        raise ConfigError(f"prediction_type must be one of {PREDICTION_TYPES} (got {prediction_type!r})")


def trailing_timesteps(num_inference_steps: int, num_train_timesteps: int) -> np.ndarray:
    """``int64 (n,)`` trailing timesteps ``round(T - k T / n) - 1`` for k = 0 .. n - 1: T - 1 first, strictly
    decreasing, >= 0 (diffusers' ``timestep_spacing="trailing"`` formula without its extra final step)."""
    n, t = int(num_inference_steps), int(num_train_timesteps)
    return (np.round(t + np.arange(n) * (-t / n)) - 1).astype(np.int64)


def check_timesteps(timesteps: Tensor, num_inference_steps: int, num_train_timesteps: int) -> None:
    """Check a sampling run's timesteps: ``num_inference_steps`` of them, strictly decreasing, starting at T - 1.

    Raises:
        ConfigError: naming what is wrong (a diffusers version whose spacing differs would trip this).
    """
    ts = [int(t) for t in timesteps]
    problems = []
    if len(ts) != num_inference_steps:
        problems.append(f"{len(ts)} timesteps for {num_inference_steps} steps")
    if ts and ts[0] != num_train_timesteps - 1:
        problems.append(f"the first timestep is {ts[0]}, not T - 1 = {num_train_timesteps - 1}")
    if any(b >= a for a, b in zip(ts, ts[1:])):
        problems.append("timesteps are not strictly decreasing")
    if ts and ts[-1] < 0:
        problems.append(f"negative timestep {ts[-1]}")
    if problems:
        raise ConfigError(f"bad sampling timesteps {ts[:12]}{'...' if len(ts) > 12 else ''}: " + "; ".join(problems))


def _check_prediction(pred: Tensor, shape: tuple[int, ...]) -> None:
    if tuple(pred.shape) != tuple(shape):
        raise ConfigError(f"the denoiser returned {tuple(pred.shape)}, expected {tuple(shape)}")


class ChunkSampler:
    """Denoises action chunks with one inference scheduler, re-initialised for every chunk.

    Args:
        scheduler: one of :data:`SCHEDULERS`.
        num_inference_steps: denoising steps per chunk, in ``[1, num_train_timesteps]``.
        num_train_timesteps, beta_schedule, prediction_type, clip_sample: the training diffusion's settings
            (they must match the trained denoiser).

    Attributes:
        scheduler: the diffusers scheduler (its state is only valid during :meth:`sample`).

    Raises:
        ConfigError: an unknown scheduler or prediction type, or ``num_inference_steps`` out of range.
    """

    def __init__(self, scheduler: str, num_inference_steps: int, *, num_train_timesteps: int, beta_schedule: str,
                 prediction_type: str, clip_sample: bool):
        if not 1 <= int(num_inference_steps) <= int(num_train_timesteps):
            raise ConfigError(f"num_inference_steps must be in [1, num_train_timesteps={num_train_timesteps}] "
                              f"(got {num_inference_steps})")
        self.name = scheduler
        self.num_inference_steps = int(num_inference_steps)
        self.num_train_timesteps = int(num_train_timesteps)
        self.scheduler = make_inference_scheduler(scheduler, self.num_train_timesteps, beta_schedule,
                                                  prediction_type, clip_sample)

    def timesteps(self) -> Tensor:
        """Reset the scheduler for a new sampling run; return its checked timesteps ``(n,)`` int64 (CPU).

        Raises:
            ConfigError: see :func:`check_timesteps`.
        """
        ts = trailing_timesteps(self.num_inference_steps, self.num_train_timesteps)
        if self.name == "DDIM":  # no custom timesteps in diffusers' DDIM: set n (its step stride), then the list
            self.scheduler.set_timesteps(self.num_inference_steps)
            self.scheduler.timesteps = torch.from_numpy(ts)
        else:
            self.scheduler.set_timesteps(timesteps=ts.tolist())
        ts = self.scheduler.timesteps
        check_timesteps(ts, self.num_inference_steps, self.num_train_timesteps)
        return ts

    @torch.no_grad()
    def sample(self, denoiser: Denoiser, shape: tuple[int, int, int], generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Tensor:
        """Denoise one chunk per batch element from Gaussian noise.

        Args:
            denoiser: ``(noisy (B, Tp, A), timesteps (B,)) -> prediction (B, Tp, A)`` (see the module docstring).
            shape: ``(B, Tp, A)``.
            generator: RNG of the initial noise (and of DDPM's per-step noise). A CPU generator may drive sampling
                on another device: the noise is drawn on the CPU and moved, so samples do not depend on the device.
            device: where the chunk lives (default: the generator's device, else the CPU).

        Returns:
            ``(B, Tp, A)`` chunk in the denoiser's (normalised) action space.

        Raises:
            ConfigError: bad timesteps (see :func:`check_timesteps`), or a denoiser output of the wrong shape.
        """
        device = torch.device(device) if device is not None else (generator.device if generator is not None
                                                                    else torch.device("cpu"))
        x = self.initial_noise(shape, generator, device, dtype)
        if self.name == "DDIM":
            return self.ddim_denoise(denoiser, x, self.ddim_plan(device))
        for t in self.timesteps():
            pred = denoiser(x, t.to(device=device, dtype=torch.long).expand(shape[0]))
            _check_prediction(pred, shape)
            x = self.scheduler.step(pred, t, x, generator=generator).prev_sample
        return x

    @staticmethod
    def initial_noise(shape: tuple[int, int, int], generator: torch.Generator | None, device: torch.device | str,
                      dtype: torch.dtype = torch.float32) -> Tensor:
        """Standard normal ``(B, Tp, A)`` on ``device``, drawn on ``generator``'s device (the CPU by default) and
        moved, so the same generator gives the same chunk on every device.

        Raises:
            ConfigError: ``shape`` not three positive sizes.
        """
        if len(shape) != 3 or any(int(n) < 1 for n in shape):
            raise ConfigError(f"initial_noise: shape must be (B, Tp, A) with sizes >= 1, got {tuple(shape)}")
        device = torch.device(device)
        if generator is not None and generator.device != device:
            return torch.randn(shape, generator=generator, dtype=dtype, device=generator.device).to(device)
        return torch.randn(shape, generator=generator, dtype=dtype, device=device)

    def ddim_plan(self, device: torch.device | str) -> list[tuple[Tensor, float, float]]:
        """Per DDIM step: ``(timestep int64 (1,) on device, alpha_bar_t, alpha_bar_prev)`` (see
        :meth:`ddim_coefficients`). Made before a CUDA graph is captured, since the capture may not copy from host.

        Raises:
            ConfigError: the sampler is not DDIM, or bad timesteps (:func:`check_timesteps`).
        """
        if self.name != "DDIM":
            raise ConfigError(f"ddim_plan needs the DDIM scheduler (got {self.name!r})")
        ts = self.timesteps()
        return [(t.reshape(1).to(device=device, dtype=torch.long), a_t, a_prev)
                for t, (a_t, a_prev) in zip(ts, self.ddim_coefficients(ts))]

    def ddim_denoise(self, denoiser: Denoiser, x: Tensor, plan: list[tuple[Tensor, float, float]]) -> Tensor:
        """Deterministic DDIM (eta = 0) from the noise ``x`` ``(B, Tp, A)`` through every step of ``plan``
        (:meth:`ddim_plan`); only device arithmetic, so it can be captured in a CUDA graph.

        Raises:
            ConfigError: the sampler is not DDIM, an empty plan, or a denoiser output of the wrong shape.
        """
        if self.name != "DDIM" or not plan:
            raise ConfigError(f"ddim_denoise needs the DDIM scheduler and a plan from ddim_plan (got {self.name!r}, "
                              f"{len(plan)} steps)")
        b = x.shape[0]
        for t, a_t, a_prev in plan:
            pred = denoiser(x, t.expand(b))
            _check_prediction(pred, tuple(x.shape))
            x = self.ddim_step(pred, x, a_t, a_prev)
        return x

    def ddim_coefficients(self, timesteps: Tensor) -> list[tuple[float, float]]:
        """``(alpha_bar_t, alpha_bar_prev)`` (unitless, in (0, 1]) per step of ``timesteps`` ``(n,)``, exactly as
        diffusers' ``DDIMScheduler.step`` picks them: the previous timestep is ``t - T // n`` and a negative one means
        ``final_alpha_cumprod`` (1 here)."""
        sch = self.scheduler
        ac = sch.alphas_cumprod
        stride = self.num_train_timesteps // self.num_inference_steps
        out = []
        for t in timesteps.tolist():
            prev = t - stride
            out.append((float(ac[t]), float(ac[prev]) if prev >= 0 else float(sch.final_alpha_cumprod)))
        return out

    def ddim_step(self, pred: Tensor, x: Tensor, a_t: float, a_prev: float) -> Tensor:
        """One deterministic DDIM step (eta = 0) from ``x`` to the previous timestep; ``pred`` and ``x`` tensors or
        float32 numpy arrays (the fused CPU loop) of any equal shape (e.g. ``(B, Tp, A)``), ``a_t`` / ``a_prev`` from
        :meth:`ddim_coefficients`; the arithmetic of diffusers' ``DDIMScheduler.step`` without its per-call overhead
        (about 0.3 ms of Python per step on this CPU, more than the MLP denoiser itself)."""
        cfg = self.scheduler.config
        b_t = 1.0 - a_t
        if cfg.prediction_type == "epsilon":
            eps = pred
            x0 = (x - b_t ** 0.5 * eps) / a_t ** 0.5
        else:
            x0 = pred
            eps = (x - a_t ** 0.5 * x0) / b_t ** 0.5
        if cfg.clip_sample:
            x0 = x0.clip(-cfg.clip_sample_range, cfg.clip_sample_range)  # Tensor.clip or ndarray.clip
        return a_prev ** 0.5 * x0 + (1.0 - a_prev) ** 0.5 * eps
