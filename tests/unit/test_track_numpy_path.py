"""The track executor's numpy CPU path (numpy MLP snapshot, numpy encoder, fused DDIM loop) equals the module path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

from executor_vla.fused_mlp_ddim import FusedMLPDDIM
from executor_vla.numpy_mlp import NumpyResidualMLP, mish
from executor_vla.numpy_track_encoder import NumpyTrackEncoder
from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_net import ResidualMLP, TrackNet
from executor_vla.track_policy import TrackExecutor
from tandem.core.errors import ConfigError
from tandem.core.types import Observation, Subgoal, TaskSpec, Trace3D

TASK = TaskSpec(name="toy", instruction="visit the targets", objects=("obj0",), max_steps=100)


def _randomise(module: nn.Module, seed: int) -> None:
    """Non-trivial weights everywhere, LayerNorm scales and shifts included (their default is 1 and 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))


def test_mish_equals_torch_including_where_exp_overflows():
    a = np.array([[-100.0, -20.0, -1.0, 0.0, 0.5, 3.0, 20.0, 89.0, 200.0]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the overflow of exp(200) must stay silent under errstate
        with np.errstate(over="ignore"):
            got = mish(a)
    np.testing.assert_allclose(got, torch.nn.functional.mish(torch.from_numpy(a)).numpy(), rtol=1e-6, atol=1e-7)


def test_the_numpy_residual_mlp_equals_the_module_and_follows_its_weights():
    torch.manual_seed(0)
    mlp = ResidualMLP(12, 5, 32, 3).eval()
    _randomise(mlp, 1)
    x = torch.randn(4, 12)
    snap = NumpyResidualMLP(mlp)
    with torch.no_grad():
        np.testing.assert_allclose(snap.forward(x.numpy()), mlp(x).numpy(), rtol=1e-5, atol=1e-5)
        key = snap.key
        mlp.blocks[1][0].weight.mul_(1.5)  # an in-place update of a LayerNorm scale (folded into a linear layer)
        np.testing.assert_allclose(snap.forward(x.numpy()), mlp(x).numpy(), rtol=1e-5, atol=1e-5)
        assert snap.key != key
    with pytest.raises(ConfigError, match="ResidualMLP"):
        NumpyResidualMLP(nn.Linear(3, 3))


def _net(use_text: bool) -> TrackNet:
    cfg = TrackExecutorConfig(text_encoder="hash", text_dim=16, hidden_dim=32, cond_dim=24, n_layers=3,
                              use_text=use_text)
    net = TrackNet(cfg, obs_dim=20).eval()
    _randomise(net, 2)
    return net


@pytest.mark.parametrize("use_text", [True, False])
def test_the_numpy_encoder_equals_tracknet_encode_and_progress(use_text):
    net = _net(use_text)
    enc = NumpyTrackEncoder(net)
    obs, text = torch.randn(3, 2, 20), torch.randn(3, 16) if use_text else None
    with torch.no_grad():
        want = net.encode(obs, text)
        got = enc.encode(obs.reshape(3, -1).numpy(), text)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(enc.progress(got), net.progress(want).numpy(), rtol=1e-5, atol=1e-6)
    if use_text:
        with pytest.raises(ValueError, match="no text embedding"):
            enc.encode(obs.reshape(3, -1).numpy(), None)


def test_the_text_term_is_computed_once_per_text_and_again_when_text_or_weights_change():
    net = _net(True)
    enc = NumpyTrackEncoder(net)
    calls = []
    net.text_proj.register_forward_hook(lambda *_: calls.append(1))
    obs, text = torch.randn(1, 40), torch.randn(1, 16)

    def check(t):
        with torch.no_grad():
            want = net.encode(obs.reshape(1, 2, 20), t).numpy()
        np.testing.assert_allclose(enc.encode(obs.numpy(), t), want, rtol=1e-5, atol=1e-5)

    check(text)
    n = len(calls)
    enc.encode(obs.numpy(), text)
    enc.encode(obs.numpy(), text)
    assert len(calls) == n  # the same subgoal text: the cached term (the reference forward of check() not counted)
    check(torch.randn(1, 16))  # another subgoal's text
    with torch.no_grad():
        text.mul_(-1.0)  # the same tensor changed in place
        net.text_proj[0].weight.add_(0.1)  # and the projection's weights
    check(text)


def _executor(tmp_path, **kw) -> TrackExecutor:
    torch.manual_seed(0)
    cfg = TrackExecutorConfig(**{"trace_3d_len": 4, "text_encoder": "hash", "text_dim": 16, "hidden_dim": 32,
                                 "cond_dim": 32, "n_layers": 2, "tasks": ("toy",), "objects": ("obj0",),
                                 "n_action_steps": 4, "action_space": "setpoint", "gripper_hysteresis": 0.3, **kw})
    ex = TrackExecutor(cfg).eval()
    _randomise(ex.net, 3)
    return TrackExecutor.from_checkpoint(ex.save(tmp_path / "ck"))


@pytest.mark.parametrize("compand_m", [None, 0.005])
def test_select_action_on_the_numpy_path_gives_the_module_paths_actions_step_by_step(tmp_path, compand_m):
    fast = _executor(tmp_path, action_compand_m=compand_m)
    slow = _executor(tmp_path, action_compand_m=compand_m)
    slow._fused = None  # the module path
    assert fast._fast_path_applies() and not slow._fast_path_applies()
    trace = Trace3D(points=np.array([[0.0, 0.0, 1.0], [0.02, 0.0, 0.98]]), yaw=np.zeros(2),
                    gripper=np.array([-1.0, 1.0]))
    sg = Subgoal(id="sg0", skill="pick", args=("obj0",), text="pick up the obj0", trace_3d=trace)
    for ex in (fast, slow):
        ex.set_subgoal(sg, TASK)
    quat = np.array([0.0, 1.0, 0.0, 0.0])
    for k in range(13):  # three chunks and a bit, the grip site moving between steps
        p = np.array([0.001 * k, 0.0, 1.0 - 0.0015 * k, *quat, 0.08 - 0.002 * k], np.float32)
        a, b = fast.select_action(Observation(images={}, proprio=p)), slow.select_action(Observation(images={}, proprio=p))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        assert a.dtype == np.float32 and fast.subgoal_done() == slow.subgoal_done()
        assert fast.last_progress == pytest.approx(slow.last_progress, abs=1e-6)


def test_reset_keeps_the_weight_snapshot_and_the_fused_loop_is_cpu_float32_only(tmp_path):
    ex = _executor(tmp_path)
    snapshot = ex._fused.snapshot
    ex.reset()
    assert ex._fused.snapshot is snapshot
    with pytest.raises(ConfigError, match="CPU float32"):
        ex._fused.sample(torch.zeros(1, 32, dtype=torch.float64))
    assert not FusedMLPDDIM.applies(torch.zeros(1, 32, dtype=torch.float64))
    obs = torch.randn(1, 2, ex.obs_dim, dtype=torch.float64)
    assert not ex._fast_path_applies(obs)


@pytest.mark.parametrize("prediction_type", ["sample", "epsilon"])
def test_the_shared_ddim_step_gives_the_same_update_on_float32_arrays_as_on_tensors(prediction_type):
    from executor_vla.sampling import ChunkSampler

    sampler = ChunkSampler("DDIM", 10, num_train_timesteps=100, beta_schedule="squaredcos_cap_v2",
                           prediction_type=prediction_type, clip_sample=True)
    g = torch.Generator().manual_seed(0)
    pred, x = 2.0 * torch.randn(2, 16, 7, generator=g), torch.randn(2, 16, 7, generator=g)
    for a_t, a_prev in sampler.ddim_coefficients(sampler.timesteps()):
        got = sampler.ddim_step(pred.numpy(), x.numpy(), a_t, a_prev)
        assert isinstance(got, np.ndarray) and got.dtype == np.float32
        np.testing.assert_allclose(got, sampler.ddim_step(pred, x, a_t, a_prev).numpy(), rtol=1e-6, atol=1e-6)
