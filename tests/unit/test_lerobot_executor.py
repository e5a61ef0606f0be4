"""LeRobotPolicyExecutor with a fake LeRobot policy: Observation -> LeRobot batch mapping, task text, clipping and
clear errors. (tests/integration/test_lerobot_executor.py drives a real lerobot-train checkpoint.)"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from lerobot.configs.types import FeatureType, PolicyFeature

from executor_vla.lerobot_executor import LeRobotPolicyExecutor
from tandem.core.errors import CheckpointError, ConfigError, NonFiniteActionError, SubgoalSchemaError
from tandem.core.protocols import Executor
from tandem.core.types import Observation, Subgoal, TaskSpec

H, W = 6, 8
TASK = TaskSpec(name="t", instruction="stack red on green, then blue on red", objects=("red",), max_steps=9)
SG = Subgoal("sg1", "pick", ("red",), "pick up the red cube")


class FakePolicy:
    """Records each batch; returns ``action`` ``(1, 7)``."""

    def __init__(self, inputs: dict | None = None, action=None):
        feats = inputs if inputs is not None else {
            "observation.images.agentview": PolicyFeature(FeatureType.VISUAL, (3, H, W)),
            "observation.images.wrist": PolicyFeature(FeatureType.VISUAL, (3, H, W)),
            "observation.state": PolicyFeature(FeatureType.STATE, (8,))}
        self.config = SimpleNamespace(input_features=feats, device="cpu",
                                      output_features={"action": PolicyFeature(FeatureType.ACTION, (7,))})
        self.action = torch.tensor([[0.1, -0.2, 5.0, -5.0, 0.0, 0.3, 1.0]]) if action is None else action
        self.batches: list[dict] = []
        self.resets = 0

    def reset(self):
        self.resets += 1

    def select_action(self, batch):
        self.batches.append(batch)
        return self.action


def identity(x):
    return x


def make(policy=None, **kw) -> LeRobotPolicyExecutor:
    return LeRobotPolicyExecutor(policy or FakePolicy(), identity, identity, **kw)


def obs(cams=("agentview", "wrist"), size=(H, W), proprio=None) -> Observation:
    rng = np.random.default_rng(0)
    return Observation(images={c: rng.integers(0, 255, (*size, 3), dtype=np.uint8) for c in cams},
                       proprio=np.arange(8, dtype=np.float32) if proprio is None else proprio)


def test_maps_observation_to_lerobot_batch_and_clips():
    ex = make()
    assert isinstance(ex, Executor)
    ex.set_subgoal(SG, TASK)
    o = obs()
    a = ex.select_action(o)
    assert a.dtype == np.float32 and a.shape == (7,)
    np.testing.assert_allclose(a, [0.1, -0.2, 1.0, -1.0, 0.0, 0.3, 1.0], atol=1e-6)
    (b,) = ex.policy.batches
    img = b["observation.images.agentview"]
    assert img.shape == (1, 3, H, W) and img.dtype == torch.float32
    # channel-first, [0, 1], origin top-left kept: pixel (row 0, col 1) of the Observation
    np.testing.assert_allclose(img[0, :, 0, 1].numpy(), o.images["agentview"][0, 1] / 255.0, atol=1e-6)
    np.testing.assert_allclose(b["observation.state"].numpy(), o.proprio[None])
    assert b["task"] == SG.text
    assert not ex.subgoal_done()


def test_instruction_text_limits_and_reset():
    pol = FakePolicy()
    ex = make(pol, task_text="instruction", action_low=np.full(7, -0.5), action_high=np.full(7, 0.5))
    n = pol.resets
    ex.set_subgoal(SG, TASK)
    assert pol.resets == n + 1  # a new subgoal drops the policy's queue
    assert ex.select_action(obs()).max() <= 0.5 and pol.batches[-1]["task"] == TASK.instruction
    with pytest.raises(SubgoalSchemaError, match="pass the TaskSpec"):
        ex.set_subgoal(SG, None)
    with pytest.raises(ConfigError, match="task_text"):
        make(task_text="plan")
    with pytest.raises(ConfigError, match="controller limits"):
        make(action_low=np.zeros(6))


def test_camera_map_and_lerobot_single_image_key():
    pol = FakePolicy({"observation.image": PolicyFeature(FeatureType.VISUAL, (3, H, W)),
                      "observation.images.front": PolicyFeature(FeatureType.VISUAL, (3, H, W))})
    ex = make(pol, camera_map={"observation.image": "wrist", "front": "agentview"})
    ex.set_subgoal(SG, TASK)
    o = obs()
    ex.select_action(o)
    b = pol.batches[-1]
    np.testing.assert_allclose(b["observation.image"][0, :, 0, 0].numpy(), o.images["wrist"][0, 0] / 255.0, atol=1e-6)
    np.testing.assert_allclose(b["observation.images.front"][0, :, 0, 0].numpy(), o.images["agentview"][0, 0] / 255.0,
                               atol=1e-6)
    assert "observation.state" not in b


def test_bad_input_raises_tandem_errors():
    ex = make()
    with pytest.raises(SubgoalSchemaError, match="before set_subgoal"):
        ex.select_action(obs())
    ex.set_subgoal(SG, TASK)
    with pytest.raises(ConfigError, match="camera 'wrist'"):
        ex.select_action(obs(cams=("agentview",)))
    with pytest.raises(ConfigError, match=r"expects \(6, 8, 3\); set env.image_size=\[6,8\]"):
        ex.select_action(obs(size=(8, 8)))
    with pytest.raises(ConfigError, match="proprio"):
        ex.select_action(obs(proprio=np.zeros(7, np.float32)))
    with pytest.raises(NonFiniteActionError, match="proprio"):
        ex.select_action(obs(proprio=np.full(8, np.nan, np.float32)))
    nan = make(FakePolicy(action=torch.full((1, 7), float("nan"))))
    nan.set_subgoal(SG, TASK)
    with pytest.raises(NonFiniteActionError, match="NaN"):
        nan.select_action(obs())


def test_inputs_an_observation_cannot_give_are_refused():
    goal = FakePolicy({"observation.images.agentview": PolicyFeature(FeatureType.VISUAL, (3, H, W)),
                       "subgoal.goal_image": PolicyFeature(FeatureType.VISUAL, (3, H, W))})
    with pytest.raises(ConfigError, match="subgoal.goal_image .*--policy.input_features"):
        make(goal)
    env_state = FakePolicy({"observation.environment_state": PolicyFeature(FeatureType.ENV, (10,))})
    with pytest.raises(ConfigError, match="observation.environment_state"):
        make(env_state)


def test_from_pretrained_checks_the_directory(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        LeRobotPolicyExecutor.from_pretrained(tmp_path / "nope")
    (tmp_path / "config.json").write_text('{"type": "no_such_policy"}')
    with pytest.raises(CheckpointError, match="missing .*model.safetensors"):
        LeRobotPolicyExecutor.from_pretrained(tmp_path)
    for f in ("model.safetensors", "policy_preprocessor.json", "policy_postprocessor.json"):
        (tmp_path / f).write_text("{}")
    with pytest.raises(CheckpointError, match="'no_such_policy' is not registered; known types: .*diffusion"):
        LeRobotPolicyExecutor.from_pretrained(tmp_path)


@pytest.fixture(scope="module")
def tandem_pretrained(tmp_path_factory):
    """A ``tandem_diffusion`` pretrained_model directory, as lerobot-train writes it (make_policy + processors)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDatasetMetadata
    from lerobot.policies.factory import make_policy, make_pre_post_processors

    from executor_vla.lerobot_plugin import TandemDiffusionConfig
    from executor_vla.synthetic import make_synthetic_dataset

    torch.set_num_threads(1)
    base = tmp_path_factory.mktemp("tandem_plugin")
    make_synthetic_dataset(base / "ds", n_episodes=1, subgoals_per_episode=1, frames_per_subgoal=6, image_size=(32, 32))
    cfg = TandemDiffusionConfig(vision_channels=(8, 8, 16), down_dims=(16, 32), spatial_softmax_keypoints=8,
                                cond_dim=16, diffusion_step_embed_dim=16, text_encoder="hash", text_dim=32,
                                num_inference_steps=2, n_action_steps=4, device="cpu")
    meta = LeRobotDatasetMetadata("tandem/synthetic", root=base / "ds")
    torch.manual_seed(0)
    policy = make_policy(cfg, ds_meta=meta)
    pre, post = make_pre_post_processors(cfg, dataset_stats=meta.stats)
    out = base / "pretrained_model"
    for thing in (policy, pre, post):
        thing.save_pretrained(out)
    return out, policy


def test_tandem_diffusion_policies_run_through_executor_lerobot(tandem_pretrained):
    """Issue 13 (Part 2, item 12): a tandem_diffusion pretrained_model, whose inputs include subgoal.goal_image,
    was refused by executor=lerobot; it now runs with its whole subgoal conditioning and its done head."""
    from tandem.core.types import KeypointTrace
    from tandem.runtime.registry import EXECUTORS, BuildContext

    path, trained = tandem_pretrained
    spec = {"name": "lerobot", "checkpoint": str(path), "device": "cpu", "task_text": "subgoal"}

    class Limits:
        action_low = np.full(7, -0.5, np.float32)
        action_high = np.full(7, 0.5, np.float32)

    ex = EXECUTORS.build(spec, BuildContext(env=Limits(), simulated=False, task="toy", planner="oracle"))
    assert isinstance(ex, LeRobotPolicyExecutor) and isinstance(ex, Executor) and ex.tandem is not None
    sg = Subgoal("sg1", "move", ("obj0",), "move to the obj0", goal_image=np.zeros((32, 32, 3), np.uint8),
                 trace=KeypointTrace("agentview", np.array([[1.0, 2.0], [30.0, 20.0]], np.float32), (32, 32)))
    observations = [obs(size=(32, 32), proprio=np.full(8, 0.1 * i, np.float32)) for i in range(6)]
    ex.reset()
    ex.set_subgoal(sg, TASK)
    got = np.stack([ex.select_action(o) for o in observations])  # two chunks of 4 actions
    assert got.shape == (6, 7) and np.all(np.abs(got) <= 0.5) and isinstance(ex.subgoal_done(), bool)
    # the same weights, driven as tandem's own executor, give the same actions
    ref = trained.executor
    ref.action_low, ref.action_high = Limits.action_low, Limits.action_high
    ref.reset()
    ref.set_subgoal(sg, TASK)
    np.testing.assert_allclose(got, np.stack([ref.select_action(o) for o in observations]), atol=1e-6)
    with pytest.raises(SubgoalSchemaError, match="goal_image"):
        ex.set_subgoal(Subgoal("sg2", "move", ("obj0",), "move to the obj0"), TASK)


def test_tandem_diffusion_task_text_must_match_its_conditioning(tandem_pretrained):
    path, _ = tandem_pretrained
    with pytest.raises(ConfigError, match="conditioning_source='subgoal'.*task_text='instruction'"):
        LeRobotPolicyExecutor.from_pretrained(path, task_text="instruction")
