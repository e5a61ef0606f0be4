"""DiffusionExecutor: loss masking, sampling, the Executor protocol and bad input."""

import numpy as np
import pytest
import torch

from executor_vla.config import ExecutorConfig
from executor_vla.network import TEXT_EMB_KEY
from executor_vla.policy import DiffusionExecutor
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError, NonFiniteActionError, SubgoalSchemaError
from tandem.core.protocols import Executor
from tandem.core.types import KeypointTrace, Observation, Subgoal, TaskSpec

S = 32
STATS = {"action": {"min": [-1] * 7, "max": [1] * 7}, "observation.state": {"min": [-2] * 8, "max": [2] * 8}}

# Tiny models on a shared 2-core CPU: one intra-op thread avoids OpenMP oversubscription stalls.
torch.set_num_threads(1)


def small_cfg(**kw):
    base = dict(image_size=(S, S), vision_channels=(8, 8, 16), spatial_softmax_keypoints=8, down_dims=(16, 32),
                diffusion_step_embed_dim=16, cond_dim=16, text_encoder="hash", text_dim=32, num_inference_steps=3)
    base.update(kw)
    return ExecutorConfig(**base)


def make(**kw):
    torch.manual_seed(0)
    ex = DiffusionExecutor(small_cfg(**kw))
    ex.set_stats(STATS)
    return ex


def batch(cfg, b=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    d = {schema.image_key(c): torch.rand(b, cfg.n_obs_steps, 3, S, S, generator=g) for c in cfg.cameras}
    d[schema.STATE_KEY] = torch.randn(b, cfg.n_obs_steps, 8, generator=g)
    d[TEXT_EMB_KEY] = torch.randn(b, cfg.text_dim, generator=g)
    d[schema.GOAL_IMAGE_KEY] = torch.rand(b, 3, S, S, generator=g)
    d[schema.TRACE_KEY] = torch.rand(b, cfg.trace_len, 2, generator=g) * S
    d[schema.TRACE_MASK_KEY] = torch.ones(b, cfg.trace_len)
    d[schema.ACTION_KEY] = torch.rand(b, cfg.horizon, 7, generator=g) * 2 - 1
    d[schema.ACTION_IS_PAD_KEY] = torch.zeros(b, cfg.horizon, dtype=torch.bool)
    d[schema.PROGRESS_KEY] = torch.rand(b, generator=g)
    d[schema.SUBGOAL_SUCCESS_KEY] = torch.zeros(b)
    return d


def obs(seed=0, size=S, cams=("agentview", "wrist")):
    rng = np.random.default_rng(seed)
    return Observation(images={c: rng.integers(0, 255, (size, size, 3), dtype=np.uint8) for c in cams},
                       proprio=rng.standard_normal(8).astype(np.float32))


def subgoal(goal=True, trace=True, camera="agentview"):
    return Subgoal("sg0", "pick", ("red",), "pick up the red cube",
                   goal_image=np.zeros((S, S, 3), np.uint8) if goal else None,
                   trace=KeypointTrace(camera, np.array([[0, 0], [60, 60], [120, 10]], np.float32), (128, 128))
                   if trace else None)


def test_it_is_an_executor():
    assert isinstance(make(), Executor)


@pytest.mark.parametrize("mode", ["raster", "points"])
def test_loss_is_finite_and_backpropagates(mode):
    ex = make(trace_mode=mode)
    out = ex.compute_loss(batch(ex.cfg))
    assert set(out) == {"loss", "diffusion_loss", "progress_loss", "success_loss"}
    assert torch.isfinite(out["loss"])
    out["loss"].backward()
    assert ex.net.unet.final[1].weight.grad.abs().sum() > 0
    assert ex.net.text_proj[0].weight.grad.abs().sum() > 0
    assert ex.net.goal_encoder.stem[0].weight.grad.abs().sum() > 0


def test_padded_action_targets_do_not_count_in_the_loss():
    ex = make(prediction_type="sample").eval()
    b = batch(ex.cfg)
    b[schema.ACTION_IS_PAD_KEY][:, 10:] = True
    perfect = ex.normalizer.normalize_action(b[schema.ACTION_KEY]).clone()
    perfect[:, 10:] = 100.0  # wrong only where the targets are padding
    ex.net.unet.forward = lambda x, t, c: perfect
    assert ex.compute_loss(b)["diffusion_loss"].item() == 0.0
    b[schema.ACTION_IS_PAD_KEY][:] = False
    assert ex.compute_loss(b)["diffusion_loss"].item() > 1000.0


def test_missing_pad_mask_raises():
    ex = make()
    b = batch(ex.cfg)
    del b[schema.ACTION_IS_PAD_KEY]
    with pytest.raises(DatasetSchemaError, match="action_is_pad"):
        ex.compute_loss(b)


def test_predict_chunk_shape_and_reproducible_with_generator():
    ex = make().eval()
    b = batch(ex.cfg, b=2)
    a1 = ex.predict_action_chunk(b, generator=torch.Generator().manual_seed(3))
    a2 = ex.predict_action_chunk(b, generator=torch.Generator().manual_seed(3))
    assert a1.shape == (2, 16, 7) and torch.equal(a1, a2)
    assert ex.last_progress.shape == (2,)


def test_select_action_serves_a_queue_of_n_action_steps():
    ex = make().eval()
    calls = []
    orig = ex.predict_action_chunk

    def spy(*a, **k):
        calls.append(1)
        return orig(*a, **k)

    ex.predict_action_chunk = spy
    ex.set_subgoal(subgoal())
    acts = [ex.select_action(obs(i)) for i in range(17)]
    assert len(calls) == 3  # steps 0, 8, 16
    assert all(a.shape == (7,) and a.dtype == np.float32 for a in acts)
    assert all(np.all(np.abs(a) <= 1.0) for a in acts)
    ex.set_subgoal(subgoal())  # a new subgoal drops the queue
    ex.select_action(obs(0))
    assert len(calls) == 4
    assert isinstance(ex.subgoal_done(), bool)


def test_an_episode_is_reproducible_after_reset_whatever_the_global_rng():
    ex = make().eval()

    def episode():
        ex.reset()
        ex.set_subgoal(subgoal())
        return np.stack([ex.select_action(obs(i)) for i in range(17)])

    first = episode()
    torch.manual_seed(123)  # the global RNG must not matter
    assert np.array_equal(first, episode())


def test_actions_are_clipped_to_the_controller_limits():
    ex = make().eval()
    ex.normalizer.action_half_range.fill_(100.0)  # unnormalised actions far outside [-1, 1]
    ex.set_subgoal(subgoal())
    a = ex.select_action(obs())
    assert np.all(np.abs(a) <= 1.0) and np.any(np.abs(a) == 1.0)


def test_subgoal_done_follows_the_done_head():
    ex = make(done_threshold=0.5).eval()
    ex.set_subgoal(subgoal())
    with torch.no_grad():
        ex.net.done_head[-1].bias[0] = 20.0  # progress -> 1
    ex.select_action(obs())
    assert ex.subgoal_done()
    with torch.no_grad():
        ex.net.done_head[-1].bias[0] = -20.0
    ex.set_subgoal(subgoal())
    assert not ex.subgoal_done()
    ex.select_action(obs())
    assert not ex.subgoal_done()


def test_missing_conditioning_is_a_clear_error_when_on_and_ignored_when_off():
    ex = make()
    with pytest.raises(SubgoalSchemaError, match="goal_image"):
        ex.set_subgoal(subgoal(goal=False))
    with pytest.raises(SubgoalSchemaError, match="trace"):
        ex.set_subgoal(subgoal(trace=False))
    with pytest.raises(SubgoalSchemaError, match="camera"):
        ex.set_subgoal(subgoal(camera="wrist"))
    off = make(use_goal_image=False, use_trace=False).eval()
    off.set_subgoal(subgoal(goal=False, trace=False))
    assert off.select_action(obs()).shape == (7,)


def test_goal_image_of_wrong_size_is_rejected():
    ex = make()
    sg = subgoal()
    sg.goal_image = np.zeros((S + 1, S, 3), np.uint8)
    with pytest.raises(SubgoalSchemaError, match="goal_image"):
        ex.set_subgoal(sg)


def test_bad_observations_raise_clear_errors():
    ex = make().eval()
    ex.set_subgoal(subgoal())
    with pytest.raises(ConfigError, match="wrist"):
        ex.select_action(obs(cams=("agentview", "hand")))
    with pytest.raises(ConfigError, match="expects"):
        ex.select_action(obs(size=S * 2))
    o = obs()
    o.proprio[2] = np.nan
    with pytest.raises(NonFiniteActionError, match="proprio"):
        ex.select_action(o)


def test_nan_output_raises():
    ex = make().eval()
    ex.set_subgoal(subgoal())
    ex.normalizer.action_center.fill_(float("nan"))
    with pytest.raises(NonFiniteActionError):
        ex.select_action(obs())


def test_select_action_before_set_subgoal_raises():
    with pytest.raises(SubgoalSchemaError, match="set_subgoal"):
        make().select_action(obs())


def test_flat_baseline_conditions_on_the_instruction():
    ex = make(conditioning_source="instruction", use_goal_image=False, use_trace=False).eval()
    task = TaskSpec(name="t", instruction="stack all the cubes", objects=("red",), max_steps=10)
    with pytest.raises(SubgoalSchemaError, match="instruction"):
        ex.set_subgoal(subgoal(goal=False, trace=False), None)
    ex.set_subgoal(subgoal(goal=False, trace=False), task)
    emb = ex.text_encoder.encode(["stack all the cubes"])
    assert torch.allclose(ex._subgoal_cond, ex.net.text_proj(torch.from_numpy(emb)))


def test_a_tiny_model_learns_a_conditioned_mapping():
    """Overfit: the action depends only on the text; after training the sampled chunks follow it."""
    torch.manual_seed(0)
    ex = make(use_goal_image=False, use_trace=False, augment_shift_px=0, num_inference_steps=10,
              prediction_type="sample")
    cfg = ex.cfg
    b = batch(cfg, b=8)
    texts = torch.randn(2, cfg.text_dim)
    which = torch.tensor([0, 1] * 4)
    b[TEXT_EMB_KEY] = texts[which]
    target = torch.where(which[:, None, None] == 0, torch.tensor(0.6), torch.tensor(-0.6)).expand(8, 16, 7)
    b[schema.ACTION_KEY] = target.clone()
    opt = torch.optim.AdamW(ex.parameters(), lr=3e-3)
    ex.train()
    losses = []
    for _ in range(120):
        loss = ex.compute_loss(b)["loss"]
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    ex.eval()
    pred = ex.predict_action_chunk(b, generator=torch.Generator().manual_seed(0))
    err = (pred - target).abs().mean().item()
    assert np.mean(losses[-20:]) < 0.2 * np.mean(losses[:20])
    assert err < 0.1, err


@pytest.mark.parametrize("sampler", ["DDIM", "DDPM", "DPMSolver"])
@pytest.mark.parametrize("prediction_type", ["sample", "epsilon"])
def test_every_sampler_produces_finite_chunks(sampler, prediction_type):
    ex = make(inference_scheduler=sampler, prediction_type=prediction_type, num_inference_steps=4).eval()
    assert ex.sampler.scheduler.config.prediction_type == prediction_type == ex.train_scheduler.config.prediction_type
    a = ex.predict_action_chunk(batch(ex.cfg, b=2))
    assert a.shape == (2, 16, 7) and torch.isfinite(a).all()


@pytest.mark.parametrize("sampler", ["DDIM", "DDPM", "DPMSolver"])
def test_every_chunk_of_an_episode_samples_on_fresh_scheduler_state(sampler):
    """Issue 13: DPMSolver with 3 steps raised IndexError on the second chunk (timesteps set once)."""
    ex = make(inference_scheduler=sampler, num_inference_steps=3, n_action_steps=2).eval()
    ex.set_subgoal(subgoal())
    actions = [ex.select_action(obs(i)) for i in range(6)]  # three chunks
    assert all(a.shape == (7,) and np.isfinite(a).all() for a in actions)
    b = batch(ex.cfg, b=1)
    first = ex.predict_action_chunk(b, generator=torch.Generator().manual_seed(3))
    again = ex.predict_action_chunk(b, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(first, again)
