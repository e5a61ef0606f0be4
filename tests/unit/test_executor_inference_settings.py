"""Issue 13, Part 2, item 2: the executor settings of a demo/eval command are what runs, or a clear error.

The stack config is composed with Hydra exactly as ``tandem-demo`` composes it, and the executor is built by the
one builder registry (``tandem.runtime.registry.EXECUTORS``) from an image-family checkpoint (84 x 84 px, DDIM-10,
8 action steps: the previous shipped image executor, kept as the GPU recipe's checkpoint).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from executor_vla.checkpoint import OverrideError, overrides_from_config
from tandem.core.errors import ConfigError
from tandem.runtime.config import DemoConfig, load
from tandem.runtime.registry import EXECUTORS, BuildContext

torch.set_num_threads(1)
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SHIPPED = CONFIGS.parent / "checkpoints" / "image" / "stack_three_diffusion"


class _Env:
    action_low, action_high = -torch.ones(7).numpy(), torch.ones(7).numpy()


def demo_config(*overrides: str):
    from hydra import compose, initialize_config_dir

    from tandem.runtime.config import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("demo", overrides=["executor=diffusion", f"executor.checkpoint={SHIPPED}", *overrides])


def build_executor(composed):
    cfg = load(DemoConfig, composed)
    return EXECUTORS.build(cfg.executor, BuildContext(env=_Env(), simulated=False, task="stack_three",
                                                      planner="oracle"))


def test_the_config_group_itself_asks_for_nothing():
    """The group's training defaults (128 px, ...) never fight a checkpoint's own network (84 px)."""
    for group in ("diffusion", "flat"):
        node = OmegaConf.load(CONFIGS / "executor" / "diffusion.yaml")
        node = OmegaConf.create({k: v for k, v in node.items() if k != "defaults"})
        if group == "flat":
            node = OmegaConf.merge(node, {k: v for k, v in OmegaConf.load(CONFIGS / "executor" / "flat.yaml").items()
                                          if k != "defaults"})
        want = {"conditioning_source": "instruction", "use_goal_image": False, "use_trace": False} \
            if group == "flat" else {}
        assert overrides_from_config(node) == want


@pytest.mark.skipif(not (SHIPPED / "config.json").is_file(), reason="shipped checkpoint absent")
def test_the_issue_command_runs_ddpm_3_with_4_action_steps():
    cfg = demo_config("executor.num_inference_steps=3", "executor.inference_scheduler=DDPM",
                      "executor.n_action_steps=4")
    ex = build_executor(cfg)
    assert (ex.cfg.inference_scheduler, ex.cfg.num_inference_steps, ex.cfg.n_action_steps) == ("DDPM", 3, 4)
    assert ex.sampler.timesteps().tolist() == [99, 66, 32]
    assert ex.cfg.image_size == (84, 84)  # the checkpoint's network, not the group's 128 px default


@pytest.mark.skipif(not (SHIPPED / "config.json").is_file(), reason="shipped checkpoint absent")
def test_the_default_command_runs_the_checkpoint_settings():
    ex = build_executor(demo_config())
    assert (ex.cfg.inference_scheduler, ex.cfg.num_inference_steps, ex.cfg.n_action_steps) == ("DDIM", 10, 8)
    assert ex.sampler.timesteps().tolist()[:2] == [99, 89]


@pytest.mark.skipif(not (SHIPPED / "config.json").is_file(), reason="shipped checkpoint absent")
@pytest.mark.parametrize("override, named", [
    ("executor.num_inference_steps=0", "num_inference_steps"),
    ("executor.n_action_steps=16", "n_action_steps"),
    ("executor.inference_scheduler=PNDM", "inference_scheduler"),
    ("executor.horizon=32", "horizon=32"),
    ("executor.image_size=[96,96]", "image_size=[96, 96]"),
    ("+executor.num_inferance_steps=3", "num_inferance_steps"),
])
def test_refused_settings_fail_at_start_naming_the_key(override, named):
    with pytest.raises(ConfigError) as e:
        build_executor(demo_config(override))
    assert named in str(e.value)  # an OverrideError at load, or the typed config's unknown-key error at start
    assert isinstance(e.value, OverrideError) or "unknown config key" in str(e.value)
