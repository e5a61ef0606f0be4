"""ExecutorConfig validation and the dataset schema constants."""

import pytest

from executor_vla.config import ExecutorConfig
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError


def test_defaults_follow_diffusion_policy():
    cfg = ExecutorConfig()
    assert (cfg.n_obs_steps, cfg.horizon, cfg.n_action_steps) == (2, 16, 8)
    assert cfg.beta_schedule == "squaredcos_cap_v2" and cfg.num_train_timesteps == 100
    assert cfg.clip_sample and cfg.inference_scheduler == "DDIM"


def test_round_trip_through_dict():
    cfg = ExecutorConfig(trace_mode="points", down_dims=(32, 64), horizon=16)
    again = ExecutorConfig.from_dict(cfg.to_dict())
    assert again == cfg


@pytest.mark.parametrize("kw, msg", [
    (dict(n_action_steps=16), "must be <= horizon"),
    (dict(horizon=10), "divisible"),
    (dict(trace_mode="pixels"), "trace_mode"),
    (dict(num_inference_steps=0), "num_inference_steps"),
    (dict(cameras=("wrist",)), "trace_camera"),
    (dict(conditioning_source="instruction"), "flat baseline"),
    (dict(prediction_type="v"), "prediction_type"),
    (dict(inference_scheduler="Euler"), "inference_scheduler"),
])
def test_invalid_values_raise_config_error_naming_the_field(kw, msg):
    with pytest.raises(ConfigError, match=msg):
        ExecutorConfig(**kw)


def test_unknown_key_is_named():
    with pytest.raises(ConfigError, match="bogus"):
        ExecutorConfig.from_dict({"bogus": 1})


def test_dataset_features_follow_lerobot_conventions():
    f = schema.dataset_features()
    assert f["observation.images.agentview"]["shape"] == (128, 128, 3)
    assert f["observation.images.agentview"]["names"] == ["height", "width", "channels"]
    assert f["observation.images.wrist"]["dtype"] == "image"
    assert f["subgoal.goal_image"]["dtype"] == "image"
    assert f["observation.state"] == {"dtype": "float32", "shape": (8,), "names": list(schema.PROPRIO_LAYOUT)}
    assert f["action"]["shape"] == (7,)
    assert f["subgoal.trace"]["shape"] == (16, 2) and f["subgoal.trace_mask"]["shape"] == (16,)
    for k in ("subgoal.index", "subgoal.task_index"):
        assert f[k] == {"dtype": "int64", "shape": (1,), "names": None}
    for k in ("subgoal.progress", "subgoal.success", "task.success"):
        assert f[k]["dtype"] == "float32" and f[k]["shape"] == (1,)
    assert schema.dataset_features((64, 96), 8)["subgoal.trace"]["shape"] == (8, 2)
    with pytest.raises(ValueError):
        schema.dataset_features((0, 10))
