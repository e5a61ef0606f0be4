"""Which executor checkpoint a config means, and the env built to match what it was trained on."""

import json
from pathlib import Path

import pytest

from tandem.core.errors import ConfigError
from tandem.runtime import registry
from tandem.runtime.config import StackConfig, load


def _fake_checkpoint(root: Path, name: str, image_size=(84, 84), cameras=("agentview", "wrist"),
                     conditioning="subgoal") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"executor": {"image_size": list(image_size), "cameras": list(cameras),
                                                            "conditioning_source": conditioning}}))
    return d


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    root = tmp_path / "checkpoints"
    monkeypatch.setattr(registry, "SHIPPED_CHECKPOINTS", root)
    _fake_checkpoint(root, "stack_three_diffusion")
    _fake_checkpoint(root, "stack_three_flat", image_size=(64, 64), conditioning="instruction")
    return root


def cfg(task="stack_three", planner="oracle", checkpoint=None, executor="diffusion"):
    ex = {"name": executor, "checkpoint": checkpoint} if executor == "diffusion" else {"name": executor}
    return load(StackConfig, {"task": {"name": task}, "planner": {"name": planner}, "executor": ex,
                              "env": {"cameras": ["agentview", "wrist"], "image_size": [128, 128]}})


def resolve(c):
    return registry.resolve_checkpoint(c.executor, c.task.name, c.planner.name)


def test_no_checkpoint_means_the_shipped_one_for_the_task_and_planner(shipped):
    assert resolve(cfg()) == shipped / "stack_three_diffusion"
    assert resolve(cfg(planner="instruction")) == shipped / "stack_three_flat"


def test_a_task_without_a_shipped_checkpoint_is_a_clear_error(shipped):
    with pytest.raises(ConfigError, match=r"no shipped diffusion executor checkpoint for task 'nut_assembly' "
                                          r"\(shipped: stack_three_diffusion, stack_three_flat\)"):
        resolve(cfg(task="nut_assembly"))


def test_image_checkpoints_are_found_under_image_after_the_top_level(shipped):
    (shipped / "stack_three_flat" / "config.json").unlink()
    (shipped / "stack_three_flat").rmdir()
    image_flat = _fake_checkpoint(shipped / "image", "stack_three_flat", conditioning="instruction")
    _fake_checkpoint(shipped / "image", "stack_three_diffusion")
    assert resolve(cfg(planner="instruction")) == image_flat
    assert resolve(cfg()) == shipped / "stack_three_diffusion"  # the top level wins
    with pytest.raises(ConfigError, match=r"\(shipped: image/stack_three_diffusion, image/stack_three_flat, "
                                          r"stack_three_diffusion\)"):
        resolve(cfg(task="nut_assembly"))


def test_a_given_checkpoint_wins_and_relative_paths_fall_back_to_the_project_root(shipped, tmp_path, monkeypatch):
    mine = _fake_checkpoint(tmp_path, "mine")
    assert resolve(cfg(checkpoint=str(mine))) == mine
    monkeypatch.chdir(tmp_path / "checkpoints")  # 'checkpoints/stack_three_flat' does not exist from here
    assert resolve(cfg(checkpoint="checkpoints/stack_three_flat")) == \
        shipped / "stack_three_flat"


def test_env_follows_the_checkpoints_cameras_and_image_size(shipped):
    assert registry.executor_observation_spec(cfg()) == (("agentview", "wrist"), (84, 84))
    assert registry.executor_observation_spec(cfg(planner="instruction")) == (("agentview", "wrist"), (64, 64))
    assert registry.executor_observation_spec(cfg(executor="scripted")) is None


def test_perception_checkpoints_are_shipped_per_kind_and_task(shipped):
    state = _fake_checkpoint(shipped / "state", "stack_three")
    assert registry.resolve_perception_checkpoint(None, "stack_three", "state") == state
    with pytest.raises(ConfigError, match=r"checkpoints/trace/stack_three\).*tandem-train-trace dataset.root="):
        registry.resolve_perception_checkpoint(None, "stack_three", "trace")
    assert registry.resolve_perception_checkpoint(str(state), "nut_assembly", "trace") == state  # given wins
