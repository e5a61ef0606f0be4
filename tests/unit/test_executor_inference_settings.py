"""Issue 13, Part 2, item 2: the executor settings of a demo/eval command are what runs, or a clear error.

The stack config is composed with Hydra exactly as ``tandem-demo`` composes it, and the executor is built by the
wiring (``tandem.assembly.build_executor``) from the shipped checkpoint (84 x 84 px, DDIM-10, 8 action steps).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from executor_vla.checkpoint import OverrideError, overrides_from_config
from tandem import assembly
from tandem.errors import ConfigError

torch.set_num_threads(1)
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SHIPPED = CONFIGS.parent / "checkpoints" / "stack_three_diffusion"


def demo_config(*overrides: str):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("demo", overrides=["executor=diffusion", *overrides])


def test_the_config_group_itself_asks_for_nothing():
    """The group's training defaults (128 px, ...) never fight a checkpoint's own network (84 px)."""
    for group in ("diffusion", "flat"):
        node = OmegaConf.load(CONFIGS / "executor" / "diffusion.yaml")
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
    ex = assembly.build_executor(cfg, env=None)
    assert (ex.cfg.inference_scheduler, ex.cfg.num_inference_steps, ex.cfg.n_action_steps) == ("DDPM", 3, 4)
    assert ex.sampler.timesteps().tolist() == [99, 66, 32]
    assert ex.cfg.image_size == (84, 84)  # the checkpoint's network, not the group's 128 px default


@pytest.mark.skipif(not (SHIPPED / "config.json").is_file(), reason="shipped checkpoint absent")
def test_the_default_command_runs_the_checkpoint_settings():
    ex = assembly.build_executor(demo_config(), env=None)
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
        assembly.build_executor(demo_config(override), env=None)
    assert isinstance(e.value, OverrideError) and named in str(e.value)
