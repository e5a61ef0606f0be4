"""executor_vla.sampling: every scheduler and step count samples from t = T - 1 down, on fresh state every chunk,
and lands on the answer of the many-step sampler (issue 13, Part 2, item 1)."""

from __future__ import annotations

import pytest
import torch

from executor_vla.config import ExecutorConfig
from executor_vla.sampling import SCHEDULERS, ChunkSampler, check_timesteps, make_train_scheduler
from tandem.core.errors import ConfigError

torch.set_num_threads(1)

T = 100
BETAS = "squaredcos_cap_v2"
SHAPE = (2, 16, 7)
MU, SIGMA = 0.3, 0.05  # toy data: every action element ~ N(MU, SIGMA^2), inside [-1, 1] so clipping is inert
STEPS = (1, 2, 3, 5, 10, 29, 33, 50, 97, 99, 100)  # 29 and 97: diffusers' own trailing spacing ends at t = -1


def gaussian_denoiser(prediction_type: str):
    """The exact denoiser of data N(MU, SIGMA^2): E[x0 | x_t] (or the matching noise) in closed form."""
    abar = make_train_scheduler(T, BETAS, prediction_type, True).alphas_cumprod.double()

    def denoise(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        a = abar[t.cpu()].to(x.device).view(-1, 1, 1)
        x0 = MU + a.sqrt() * SIGMA**2 / (a * SIGMA**2 + 1 - a) * (x.double() - a.sqrt() * MU)
        if prediction_type == "sample":
            return x0.to(x.dtype)
        return ((x.double() - a.sqrt() * x0) / (1 - a).sqrt()).to(x.dtype)

    return denoise


def sampler(name: str, n: int, prediction_type: str = "sample") -> ChunkSampler:
    return ChunkSampler(name, n, num_train_timesteps=T, beta_schedule=BETAS, prediction_type=prediction_type,
                        clip_sample=True)


@pytest.mark.parametrize("name", SCHEDULERS)
def test_timesteps_start_at_t_minus_1_strictly_decreasing_with_the_requested_length(name):
    for n in range(1, T + 1):  # every allowed step count
        ts = sampler(name, n).timesteps().tolist()
        assert len(ts) == n and ts[0] == T - 1, (n, ts[:3])
        assert all(b < a for a, b in zip(ts, ts[1:])) and ts[-1] >= 0, (n, ts)


def test_the_issue_inputs_have_the_right_timesteps():
    assert sampler("DDIM", 10).timesteps().tolist() == [99, 89, 79, 69, 59, 49, 39, 29, 19, 9]  # not 90, 80, ...
    assert sampler("DDIM", 1).timesteps().tolist() == [99]  # not [0]: pure noise read as a clean sample
    assert sampler("DPMSolver", 100).timesteps().tolist() == list(range(99, -1, -1))  # no repeated 50
    assert sampler("DPMSolver", 3).timesteps().tolist() == [99, 66, 32]


@pytest.mark.parametrize("name", SCHEDULERS)
@pytest.mark.parametrize("prediction_type", ["sample", "epsilon"])
def test_chunks_are_finite_and_close_to_the_many_step_chunk(name, prediction_type):
    den = gaussian_denoiser(prediction_type)
    ref = sampler(name, 100, prediction_type).sample(den, SHAPE, generator=torch.Generator().manual_seed(0))
    assert torch.isfinite(ref).all()
    # the many-step chunk follows the data distribution N(MU, SIGMA^2)
    assert abs(ref.mean().item() - MU) < SIGMA and 0.5 * SIGMA < ref.std().item() < 1.5 * SIGMA
    for n in STEPS:
        s = sampler(name, n, prediction_type)
        x = s.sample(den, SHAPE, generator=torch.Generator().manual_seed(0))
        assert torch.isfinite(x).all(), (name, n)
        # inside the data's support, and within a data standard deviation of the many-step chunk on average
        # (the leading-spacing bug, 1 DDIM step at t = 0, returns the noise itself: ~0.8 away)
        assert ((x - MU).abs() < 6 * SIGMA).all(), (name, n, (x - MU).abs().max().item())
        assert (x - ref).abs().mean().item() < SIGMA, (name, n, (x - ref).abs().mean().item())


@pytest.mark.parametrize("name", SCHEDULERS)
def test_the_state_is_reset_for_every_chunk(name):
    """DPMSolver-3 raised IndexError on the second chunk when the timesteps were set once."""
    s = sampler(name, 3)
    den = gaussian_denoiser("sample")
    a = s.sample(den, SHAPE, generator=torch.Generator().manual_seed(1))
    b = s.sample(den, SHAPE, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(a, b)  # same generator seed, same chunk (DDPM's step noise included)


def test_denoiser_sees_batched_int_timesteps_and_bad_output_is_named():
    seen = []

    def den(x, t):
        seen.append((t.dtype, tuple(t.shape), int(t[0])))
        return torch.zeros_like(x)

    sampler("DDIM", 2).sample(den, SHAPE)
    assert seen == [(torch.int64, (2,), 99), (torch.int64, (2,), 49)]
    with pytest.raises(ConfigError, match="denoiser returned"):
        sampler("DDIM", 2).sample(lambda x, t: x[:, :1], SHAPE)


def test_bad_settings_are_config_errors():
    with pytest.raises(ConfigError, match="num_inference_steps"):
        sampler("DDIM", 0)
    with pytest.raises(ConfigError, match="num_inference_steps"):
        sampler("DDIM", T + 1)
    with pytest.raises(ConfigError, match="inference_scheduler"):
        sampler("Euler", 3)
    with pytest.raises(ConfigError, match="prediction_type"):
        sampler("DDIM", 3, prediction_type="v_prediction")
    with pytest.raises(ConfigError, match="not T - 1"):
        check_timesteps(torch.tensor([90, 80]), 2, T)
    with pytest.raises(ConfigError, match="strictly decreasing"):
        check_timesteps(torch.tensor([99, 50, 50]), 3, T)
    with pytest.raises(ConfigError, match="num_inference_steps"):
        ExecutorConfig(num_inference_steps=0)


@pytest.mark.parametrize("prediction_type", ["sample", "epsilon"])
@pytest.mark.parametrize("steps", [1, 3, 10, 29, 100])
def test_the_ddim_fast_path_equals_diffusersddim_step(prediction_type, steps):
    """ChunkSampler's DDIM arithmetic (no per-step diffusers call) gives diffusers' DDIMScheduler.step result."""
    sampler = ChunkSampler("DDIM", steps, num_train_timesteps=100, beta_schedule="squaredcos_cap_v2",
                           prediction_type=prediction_type, clip_sample=True)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 16, 7, generator=gen)
    ts = sampler.timesteps()
    for (a_t, a_prev), t in zip(sampler.ddim_coefficients(ts), ts):
        pred = 1.5 * torch.randn(2, 16, 7, generator=gen)  # > 1 in places: clipping is exercised
        want = sampler.scheduler.step(pred, t, x).prev_sample
        got = sampler.ddim_step(pred, x, a_t, a_prev)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        x = want
