"""The ``tandem_track`` LeRobot policy type (issue 11, item 1): the track executor behind LeRobot's PreTrainedPolicy.

Built from a tiny synthetic dataset with LeRobot's own factory (``make_policy``, ``make_pre_post_processors``), as
``lerobot-train`` builds it: statistics from the dataset, training windows identical to tandem-train's, a
forward/backward pass, ``save_pretrained`` / ``from_pretrained``, and the saved directory driving the same
TrackExecutor through ``executor=lerobot``. (tests/integration/test_lerobot_plugin.py runs lerobot-train itself.)
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from executor_vla.lerobot_executor import LeRobotPolicyExecutor
from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_data import TrackDataset
from executor_vla.track_features import track_features
from executor_vla.track_policy import TrackExecutor
from tandem.core import dataset_schema as schema
from tandem.core.errors import CheckpointError, ConfigError, DatasetSchemaError, SubgoalSchemaError
from tandem.core.protocols import Executor
from tandem.core.types import Observation, Subgoal, TaskSpec, Trace3D

torch.set_num_threads(1)
TINY = dict(text_encoder="hash", text_dim=16, cond_dim=32, hidden_dim=32, n_layers=1, num_inference_steps=2,
            n_action_steps=4, device="cpu")
TASK = TaskSpec(name="toy", instruction="visit obj0 then obj1", objects=("obj0", "obj1"), max_steps=50)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(root, meta, policy, pre, post)``: a tandem_track policy made by LeRobot's factory on a synthetic dataset
    (2 episodes x 2 subgoals x 12 frames: every 16-step action window runs past its subgoal's end)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDatasetMetadata
    from lerobot.policies.factory import make_policy, make_pre_post_processors

    from executor_vla.lerobot_plugin import TandemTrackConfig
    from executor_vla.synthetic import make_synthetic_dataset

    root = tmp_path_factory.mktemp("track_plugin") / "ds"
    make_synthetic_dataset(root, n_episodes=2, subgoals_per_episode=2, frames_per_subgoal=12, image_size=(16, 16))
    meta = LeRobotDatasetMetadata("tandem/synthetic", root=root)
    torch.manual_seed(0)
    cfg = TandemTrackConfig(**TINY)
    policy = make_policy(cfg, ds_meta=meta)
    pre, post = make_pre_post_processors(cfg, dataset_stats=meta.stats)
    return root, meta, policy, pre, post


@pytest.fixture(scope="module")
def all_frames(built) -> dict:
    """Every frame of the dataset as one LeRobot batch, cut with the policy's delta indices (as lerobot-train
    cuts them) and passed through its pre-processor."""
    from lerobot.datasets.factory import resolve_delta_timestamps
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root, meta, policy, pre, _ = built
    ds = LeRobotDataset("tandem/synthetic", root=root, delta_timestamps=resolve_delta_timestamps(policy.config, meta),
                        video_backend="pyav")
    loader = torch.utils.data.DataLoader(ds, batch_size=len(ds), shuffle=False, num_workers=0)
    return pre(next(iter(loader)))


def first(batch: dict, n: int) -> dict:
    """The first ``n`` frames of a batch (tensors and lists sliced, other values kept)."""
    return {k: v[:n] if isinstance(v, torch.Tensor | list) else v for k, v in batch.items()}


# ---------------------------------------------------------------- config
def test_config_mirrors_the_track_executor_config():
    from executor_vla.lerobot_plugin import TandemTrackConfig
    from executor_vla.lerobot_plugin.configuration_tandem_track import UNMIRRORED_FIELDS

    own = {f.name: f for f in dataclasses.fields(TandemTrackConfig)}
    plain = TandemTrackConfig()
    for f in dataclasses.fields(TrackExecutorConfig):
        if f.name in UNMIRRORED_FIELDS:
            continue
        assert f.name in own, f"TandemTrackConfig lacks TrackExecutorConfig.{f.name}"
        assert getattr(plain, f.name) == getattr(TrackExecutorConfig(), f.name), f.name
    assert plain.executor_config() == TrackExecutorConfig()
    assert plain.action_delta_indices == list(range(16)) and plain.observation_delta_indices == [-1, 0]
    with pytest.raises(ConfigError, match=r"n_action_steps \(9\) must be <= horizon \(8\)"):
        TandemTrackConfig(horizon=8, n_action_steps=9)


def test_registered_as_a_lerobot_policy_type():
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import get_policy_class

    import executor_vla.lerobot_plugin  # noqa: F401  (registers the types)

    assert {"tandem_track", "tandem_diffusion"} <= set(PreTrainedConfig.get_known_choices())
    assert get_policy_class("tandem_track").__name__ == "TandemTrackPolicy"


# ---------------------------------------------------------------- statistics and windows
def test_statistics_come_from_the_dataset(built):
    root, meta, policy, _, _ = built
    ex = policy.executor
    ref = TrackDataset(root, ex.cfg).stats()  # what tandem-train executor=track computes
    np.testing.assert_allclose(ex.feature_mean.numpy(), ref.feature_mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ex.feature_std.numpy(), ref.feature_std, rtol=1e-6, atol=1e-6)
    # the actions' min/max are LeRobot's dataset statistics (equal to tandem-train's here)
    np.testing.assert_allclose(ex.action_min.numpy(), np.asarray(meta.stats["action"]["min"]), atol=1e-6)
    np.testing.assert_allclose(ex.action_max.numpy(), np.asarray(meta.stats["action"]["max"]), atol=1e-6)
    np.testing.assert_allclose(ex.action_max.numpy(), ref.action_max, atol=1e-6)
    assert not np.allclose(ex.feature_std.numpy(), 1.0)  # not the identity normaliser


@pytest.mark.parametrize("variant", [{}, {"hold_after_end": False}, {"conditioning_source": "instruction"},
                                     {"trace_input": "2d", "image_size": (16, 16)}],
                         ids=["default", "pad_after_end", "flat", "trace_2d"])
def test_training_windows_equal_tandem_trains(built, all_frames, variant):
    """Every frame's LeRobot window, cut at its subgoal attempt's bounds, equals TrackDataset.windows: the same
    features (track_features), actions (hold action past the attempt's end, or masked), progress and text."""
    from executor_vla.lerobot_plugin.batch_text import batch_texts
    from executor_vla.lerobot_plugin.track_batch import SegmentTable, training_batch

    root, _, policy, _, _ = built
    cfg = dataclasses.replace(policy.executor.cfg, **variant)
    data = TrackDataset(root, cfg)
    batch = all_frames
    got = training_batch(cfg, batch, SegmentTable.of(data))
    rows = np.argsort(data.dataset_index)[batch["index"].numpy()]
    want = data.windows(rows)
    np.testing.assert_allclose(got["obs"].numpy(), want["obs"], atol=1e-5)
    np.testing.assert_array_equal(got["action"].numpy(), want["action"])
    np.testing.assert_array_equal(got["action_is_pad"].numpy(), want["action_is_pad"])
    np.testing.assert_allclose(got["progress"].numpy(), want["progress"], atol=1e-6)
    flat = cfg.conditioning_source == "instruction"
    texts = batch_texts(batch, "task_index" if flat else schema.SUBGOAL_TASK_INDEX_KEY, policy.texts)
    assert texts == [data.texts[i] for i in want["text_id"]]
    if variant == {"hold_after_end": False}:
        assert want["action_is_pad"].any()  # the masked case is exercised
    if variant == {}:
        assert (want["action"][..., :-1] == 0).all(axis=-1).any()  # and the hold action


def test_forward_backward(built, all_frames):
    _, _, policy, _, _ = built
    batch = first(all_frames, 8)
    policy.train()
    policy.zero_grad()
    loss, parts = policy.forward(batch)
    assert torch.isfinite(loss) and set(parts) == {"action_loss", "progress_loss"}
    loss.backward()
    grads = [p.grad for p in policy.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)
    assert sum(float(g.abs().sum()) for g in grads) > 0
    policy.eval()
    with pytest.raises(DatasetSchemaError, match="'index'"):
        policy.forward({k: v for k, v in batch.items() if k != "index"})


# ---------------------------------------------------------------- save, load, run in the loop
@pytest.fixture(scope="module")
def saved(built, tmp_path_factory):
    _, _, policy, pre, post = built
    out = tmp_path_factory.mktemp("track_pretrained") / "pretrained_model"
    for thing in (policy, pre, post):
        thing.save_pretrained(out)
    return out


def test_saved_policy_predicts_the_wrapped_executors_actions(built, saved, all_frames):
    from executor_vla.lerobot_plugin.modeling_tandem_track import TandemTrackPolicy

    _, _, policy, _, _ = built
    assert json.loads((saved / "config.json").read_text())["type"] == "tandem_track"
    loaded = TandemTrackPolicy.from_pretrained(saved)
    for k, v in policy.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[k], v, rtol=0, atol=0)
    batch = first(all_frames, 3)
    texts = [policy.texts[int(i)] for i in batch[schema.SUBGOAL_TASK_INDEX_KEY].reshape(-1)]
    # a loaded policy has no tasks table (no dataset): the batch carries the texts themselves
    chunk = loaded.predict_action_chunk({**batch, "subgoal.text": texts}, generator=torch.Generator().manual_seed(7))
    assert chunk.shape == (3, 16, 7)
    # the wrapped executor, fed features computed here with track_features on the same inputs
    ex = policy.executor
    fine = ex.cfg.fine_scale_m
    obs = torch.from_numpy(np.stack([track_features(s, r, m, fine_scale_m=fine) for s, r, m in zip(
        batch["observation.state"].numpy(), batch[schema.TRACE_3D_KEY].numpy(), batch[schema.TRACE_3D_MASK_KEY].numpy())]))
    text = torch.from_numpy(ex.text_encoder.encode(texts))
    ref, _ = ex.predict_action_chunk(obs, text, generator=torch.Generator().manual_seed(7))
    torch.testing.assert_close(chunk, ref, rtol=0, atol=1e-6)


def _subgoal(sid: str, trace: bool = True) -> Subgoal:
    return Subgoal(sid, "move", ("obj0",), "move to the obj0", trace_3d=Trace3D(
        points=np.array([[0.3, 0.4, 0.0], [0.7, 0.6, 0.0]]), yaw=np.zeros(2), gripper=-np.ones(2)) if trace else None)


def test_saved_directory_runs_through_executor_lerobot(built, saved):
    """``tandem-demo executor=lerobot executor.checkpoint=<dir>`` builds this; it drives the same TrackExecutor."""
    from tandem.runtime.registry import EXECUTORS, BuildContext

    _, _, policy, _, _ = built

    class Limits:  # arm deltas clipped to 0.5; the gripper command is binarised to -1/+1 by the executor
        action_low = np.array([-0.5] * 6 + [-1.0], np.float32)
        action_high = -action_low

    spec = {"name": "lerobot", "checkpoint": str(saved), "device": "cpu", "task_text": "subgoal"}
    ex = EXECUTORS.build(spec, BuildContext(env=Limits(), simulated=False, task="toy", planner="oracle"))
    assert isinstance(ex, LeRobotPolicyExecutor) and isinstance(ex, Executor) and isinstance(ex.tandem, TrackExecutor)
    rng = np.random.default_rng(0)
    observations = []
    for i in range(10):  # no images: the track policy reads proprio only
        p = np.zeros(8, np.float32)
        p[:3] = rng.uniform(0.2, 0.8, 3) * [1, 1, 0]
        p[3], p[7] = 1.0, 0.04
        observations.append(Observation(images={}, proprio=p, t=0.05 * i))
    ex.reset()
    ex.set_subgoal(_subgoal("sg1"), TASK)
    got = np.stack([ex.select_action(o) for o in observations])  # three chunks of 4 actions
    assert got.shape == (10, 7) and np.all(np.abs(got[:, :6]) <= 0.5) and isinstance(ex.subgoal_done(), bool)
    assert set(np.unique(got[:, 6])) <= {-1.0, 1.0}
    ref = policy.executor  # the in-memory policy's executor, driven as tandem's own
    ref.eval()
    ref.action_low, ref.action_high = Limits.action_low, Limits.action_high
    ref.reset()
    ref.set_subgoal(_subgoal("sg1"), TASK)
    np.testing.assert_allclose(got, np.stack([ref.select_action(o) for o in observations]), atol=1e-5)
    assert ex.subgoal_done() == ref.subgoal_done()
    with pytest.raises(SubgoalSchemaError, match="no trace_3d"):
        ex.set_subgoal(_subgoal("sg2", trace=False), TASK)
    with pytest.raises(SubgoalSchemaError, match="before set_subgoal"):
        ex.select_action(observations[0])  # the failed set_subgoal left nothing running
    with pytest.raises(ConfigError, match="tandem_track policy conditions on the subgoal text"):
        LeRobotPolicyExecutor.from_pretrained(saved, task_text="instruction")


# ---------------------------------------------------------------- bad input
def test_a_policy_without_its_dataset_cannot_train(saved, all_frames):
    from executor_vla.lerobot_plugin.modeling_tandem_track import TandemTrackPolicy

    loaded = TandemTrackPolicy.from_pretrained(saved)
    with pytest.raises(DatasetSchemaError, match="built without its dataset"):
        loaded.forward(first(all_frames, 2))


def test_a_trace_length_other_than_the_datasets_is_refused(built):
    from lerobot.policies.factory import make_policy

    from executor_vla.lerobot_plugin import TandemTrackConfig

    _, meta, _, _, _ = built
    with pytest.raises(ConfigError, match=r"--policy.trace_3d_len=16"):
        make_policy(TandemTrackConfig(**{**TINY, "trace_3d_len": 8}), ds_meta=meta)


def test_weights_that_do_not_match_are_refused(saved, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    broken = tmp_path / "pretrained_model"
    shutil.copytree(saved, broken)
    sd = load_file(str(broken / "model.safetensors"))
    del sd["executor.feature_std"]  # LeRobot's default non-strict load would keep the identity normaliser
    save_file(sd, str(broken / "model.safetensors"))
    with pytest.raises(CheckpointError, match="feature_std"):
        LeRobotPolicyExecutor.from_pretrained(broken)


def test_lerobot_select_action_keeps_history_and_queue(built, all_frames):
    """LeRobot's own control loop feeds one frame at a time: the policy pads its history with the first frame,
    executes ``n_action_steps`` actions of a chunk, then predicts from the last ``To`` frames."""
    _, _, policy, _, _ = built
    policy.eval()
    frames = first(all_frames, 6)
    states = frames["observation.state"][:, -1]  # (6, 8): one frame per step
    keep = {k: frames[k][:1] for k in (schema.TRACE_3D_KEY, schema.TRACE_3D_MASK_KEY)}
    keep["subgoal.text"] = ["move to the obj0"]

    def step_batch(i):
        return {**keep, "observation.state": states[i:i + 1]}

    policy.reset()
    torch.manual_seed(3)
    got = torch.cat([policy.select_action(step_batch(i)) for i in range(6)])
    torch.manual_seed(3)
    c0 = policy.predict_action_chunk({**keep, "observation.state": states[[0, 0]][None]})
    c1 = policy.predict_action_chunk({**keep, "observation.state": states[[3, 4]][None]})
    want = torch.cat([c0[0, :4], c1[0, :2]]).clamp(-1, 1)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
