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
