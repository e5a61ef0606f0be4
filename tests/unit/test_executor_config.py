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


@pytest.mark.parametrize("yaml_name, config_cls", [("track.yaml", "TrackExecutorConfig"),
                                                   ("diffusion.yaml", "ExecutorConfig")])
def test_an_executor_yaml_writes_no_default_of_its_own(yaml_name, config_cls):
    """The component's dataclass holds the only defaults: every field its ``configs/executor`` YAML sets has the
    dataclass's value, or null for an inference setting (null there means "the checkpoint's own"). A YAML that
    said ``hidden_dim: 256`` over a dataclass default of 512 made ``tandem-train`` and the LeRobot plugin build
    different networks."""
    from pathlib import Path

    import yaml

    from executor_vla import config as image_config
    from executor_vla import track_config

    cls = getattr(track_config if config_cls == "TrackExecutorConfig" else image_config, config_cls)
    written = yaml.safe_load((Path(__file__).resolve().parents[2] / "configs" / "executor" / yaml_name).read_text())
    defaults = {k: list(v) if isinstance(v, tuple) else v for k, v in cls().to_dict().items()}
    inference = getattr(cls, "INFERENCE_OVERRIDES", None) or cls.INFERENCE_FIELDS  # the family's own list
    differ = {k: (v, defaults[k]) for k, v in written.items()
              if k in defaults and v != defaults[k] and not (v is None and k in inference)}
    assert differ == {}, f"{yaml_name} repeats defaults with other values (yaml, dataclass): {differ}"
