"""CUDA-graphed chunks (executor_vla.cuda_graph): refused off CUDA; on a GPU, the same chunks as the eager path.

The CUDA cases skip on machines without a GPU (CI); ``benchmarks/executor_cuda.py`` runs them on a lent GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from executor_vla.config import ExecutorConfig
from executor_vla.cuda_graph import GraphCache, GraphedChunk
from executor_vla.policy import DiffusionExecutor
from executor_vla.sampling import ChunkSampler
from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_policy import TrackExecutor
from tandem.core.errors import ConfigError
from tandem.core.types import KeypointTrace, Observation, Subgoal, Trace3D

torch.set_num_threads(1)
CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")
S = 32
STATS = {"action": {"min": [-1] * 7, "max": [1] * 7}, "observation.state": {"min": [-2] * 8, "max": [2] * 8}}


def _image_executor(device: str = "cpu") -> DiffusionExecutor:
    torch.manual_seed(0)
    cfg = ExecutorConfig(image_size=(S, S), vision_channels=(8, 8, 16), spatial_softmax_keypoints=8,
                         down_dims=(16, 32), diffusion_step_embed_dim=16, cond_dim=16, text_encoder="hash",
                         text_dim=32, num_inference_steps=4)
    ex = DiffusionExecutor(cfg)
    ex.set_stats(STATS)
    return ex.to(device).eval()


def _track_executor(device: str = "cpu") -> TrackExecutor:
    torch.manual_seed(0)
    cfg = TrackExecutorConfig(trace_3d_len=4, text_encoder="hash", text_dim=16, hidden_dim=32, cond_dim=32,
                              n_layers=1, num_inference_steps=4)
    return TrackExecutor(cfg).to(device).eval()


def _image_subgoal(seed: int) -> Subgoal:
    rng = np.random.default_rng(seed)
    return Subgoal("sg0", "pick", ("red",), f"pick up the red cube {seed}",
                   goal_image=rng.integers(0, 255, (S, S, 3), dtype=np.uint8),
                   trace=KeypointTrace("agentview", rng.uniform(0, S, (5, 2)).astype(np.float32), (S, S)))


def _image_obs(seed: int) -> Observation:
    rng = np.random.default_rng(seed)
    return Observation(images={c: rng.integers(0, 255, (S, S, 3), dtype=np.uint8) for c in ("agentview", "wrist")},
                       proprio=rng.standard_normal(8).astype(np.float32))


def _track_subgoal(x: float) -> Subgoal:
    pts = np.array([[0.0, 0.0, 1.0], [x, 0.1, 0.9], [x, 0.1, 0.85], [x, 0.1, 0.95]])
    return Subgoal("sg0", "pick", ("obj0",), "pick up the obj0",
                   trace_3d=Trace3D(points=pts, yaw=np.full(4, 0.3), gripper=np.array([-1, -1, 1, 1.0])))


def _track_obs() -> Observation:
    return Observation(images={}, proprio=np.array([0, 0, 1, 0, 1, 0, 0, 0.08], np.float32))


def test_ddim_denoise_from_given_noise_equals_sample():
    sampler = ChunkSampler("DDIM", 5, num_train_timesteps=100, beta_schedule="squaredcos_cap_v2",
                           prediction_type="epsilon", clip_sample=True)
    w = torch.randn(7, 7, generator=torch.Generator().manual_seed(1))

    def denoiser(x, t):
        return torch.tanh(x @ w) * (1 + t[:, None, None] / 100)

    shape = (2, 16, 7)
    want = sampler.sample(denoiser, shape, torch.Generator().manual_seed(3))
    noise = ChunkSampler.initial_noise(shape, torch.Generator().manual_seed(3), "cpu")
    got = sampler.ddim_denoise(denoiser, noise, sampler.ddim_plan("cpu"))
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    ddpm = ChunkSampler("DDPM", 5, num_train_timesteps=100, beta_schedule="squaredcos_cap_v2",
                        prediction_type="epsilon", clip_sample=True)
    with pytest.raises(ConfigError, match="DDIM"):
        ddpm.ddim_plan("cpu")


def test_a_graph_is_refused_for_cpu_tensors_and_cpu_executors_keep_their_paths():
    with pytest.raises(ConfigError, match="CUDA"):
        GraphedChunk(lambda x: (x * 2,), {"x": torch.zeros(3)})
    with pytest.raises(ConfigError, match="CUDA"):
        GraphCache(lambda x: (x * 2,))({"x": torch.zeros(3)})
    assert _image_executor().optimize_for_inference()._graphs is None
    track = _track_executor().optimize_for_inference()
    assert track._graphs is None and track._fused is not None  # the CPU's fused numpy loop


def test_the_captured_functions_compute_the_eager_chunks():
    """What a graph records (``_chunk_from_noise``), run eagerly on the CPU, equals ``predict_action_chunk``."""
    ex = _image_executor()
    ex.set_subgoal(_image_subgoal(0))
    ex._history.append(_image_obs(1))
    batch = ex._obs_batch() | ex._subgoal_batch
    want = ex.predict_action_chunk(batch, ex._subgoal_cond, torch.Generator().manual_seed(4))
    progress = ex.last_progress
    ex._ddim_plan = ex.sampler.ddim_plan("cpu")
    noise = ChunkSampler.initial_noise((1, ex.cfg.horizon, 7), torch.Generator().manual_seed(4), "cpu")
    got, got_progress, _ = ex._chunk_from_noise(noise, ex._subgoal_cond, **batch)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_progress, progress)

    track = _track_executor()  # the module path (not optimised), the graph's eager twin
    track.set_subgoal(_track_subgoal(0.05))
    obs = torch.randn(1, track.cfg.n_obs_steps, track.obs_dim)
    want, want_progress = track.predict_action_chunk(obs, track._text, torch.Generator().manual_seed(4))
    track._ddim_plan = track._chunk_sampler.ddim_plan("cpu")
    noise = ChunkSampler.initial_noise((1, track.cfg.horizon, 7), torch.Generator().manual_seed(4), "cpu")
    got, got_progress = track._chunk_from_noise(obs, noise, track._text)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_progress, want_progress)


def test_bad_input_to_the_graph_and_ddim_helpers_is_named():
    sampler = ChunkSampler("DDIM", 3, num_train_timesteps=100, beta_schedule="squaredcos_cap_v2",
                           prediction_type="epsilon", clip_sample=True)
    with pytest.raises(ConfigError, match=r"shape must be \(B, Tp, A\)"):
        ChunkSampler.initial_noise((16, 7), None, "cpu")
    with pytest.raises(ConfigError, match="sizes >= 1"):
        ChunkSampler.initial_noise((0, 16, 7), None, "cpu")
    with pytest.raises(ConfigError, match="a plan from ddim_plan"):
        sampler.ddim_denoise(lambda x, t: x, torch.zeros(1, 16, 7), [])
    dpm = ChunkSampler("DPMSolver", 3, num_train_timesteps=100, beta_schedule="squaredcos_cap_v2",
                       prediction_type="epsilon", clip_sample=True)
    with pytest.raises(ConfigError, match="DDIM"):
        dpm.ddim_denoise(lambda x, t: x, torch.zeros(1, 16, 7), sampler.ddim_plan("cpu"))
    with pytest.raises(ConfigError, match=r"torch tensors only; not tensors: \['x'\]"):
        GraphedChunk(lambda x: (x,), {"x": np.zeros(3)})
    with pytest.raises(ConfigError, match="max_graphs must be >= 1"):
        GraphCache(lambda x: (x,), max_graphs=0)


@needs_cuda
def test_graphed_image_chunks_equal_eager_chunks_across_subgoals_and_batch_sizes():
    eager, graphed = _image_executor("cuda"), _image_executor("cuda").optimize_for_inference()
    assert graphed._graphs is not None and eager._graphs is None
    for k in range(2):  # a new subgoal changes the static subgoal buffers, not the graph
        for ex in (eager, graphed):
            ex.reset()
            ex.set_subgoal(_image_subgoal(k))
        for step in range(2 * eager.cfg.n_action_steps + 1):
            a, b = eager.select_action(_image_obs(step)), graphed.select_action(_image_obs(step))
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(graphed.last_progress, eager.last_progress, rtol=1e-4, atol=1e-5)
    assert len(graphed._graphs) == 1
    batch = graphed._obs_batch() | graphed._subgoal_batch
    two = {k: torch.cat([v, v]) for k, v in batch.items()}
    cond = torch.cat([graphed._subgoal_cond] * 2)
    want = eager.predict_action_chunk(two, cond, torch.Generator().manual_seed(5))
    got = graphed.predict_action_chunk(two, cond, torch.Generator().manual_seed(5))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert len(graphed._graphs) == 2


@needs_cuda
def test_graphed_track_chunks_equal_eager_chunks_and_follow_new_weights():
    eager, graphed = _track_executor("cuda"), _track_executor("cuda").optimize_for_inference()
    assert graphed._graphs is not None
    for k in range(2):
        for ex in (eager, graphed):
            ex.reset()
            ex.set_subgoal(_track_subgoal(0.05 * (k + 1)))
        for _ in range(2 * eager.cfg.n_action_steps + 1):
            np.testing.assert_allclose(graphed.select_action(_track_obs()), eager.select_action(_track_obs()),
                                       rtol=1e-4, atol=1e-5)
    with torch.no_grad():  # weights changed in place: the graph reads them live
        for ex in (eager, graphed):
            for p in ex.net.parameters():
                p.mul_(1.1)
    obs = torch.randn(1, eager.cfg.n_obs_steps, eager.obs_dim, device="cuda")
    text = eager._text
    want = eager.predict_action_chunk(obs, text, torch.Generator().manual_seed(2))
    got = graphed.predict_action_chunk(obs, text, torch.Generator().manual_seed(2))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    graphed.cpu().cuda()  # re-allocated weights: captured again, still equal
    got = graphed.predict_action_chunk(obs, text, torch.Generator().manual_seed(2))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
