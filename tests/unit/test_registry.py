"""The ONE builder registry and the typed stack config: every entry point builds and validates the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tandem.core.errors import ConfigError, UnknownNameError
from tandem.runtime import registry
from tandem.runtime.config import (
    COMPONENT_KINDS,
    AgentConfig,
    BridgeRunConfig,
    CollectConfig,
    DemoConfig,
    StackConfig,
    VLMPlannerConfig,
    component_names,
    load,
)

pytest.importorskip("cyclonedds", reason="the bridge's message types need the cyclonedds package (tandem[ros])")


def bridge_section(**over) -> dict:
    """A loopback robot on the in-process transport, with the sim-only oracle channel (nothing needs to answer to
    build the stack)."""
    d = {"transport": "inprocess", "rate_hz": 20.0, "base_frame": "world", "image_size": [8, 8],
         "oracle_side_channel": True,
         "topics": {"cameras": {"agentview": {"image": "/a/image"}}, "joint_states": "/joint_states",
                    "eef_pose": "/eef", "twist_cmd": "/twist", "gripper_cmd": "/gripper",
                    "oracle_privileged": "/tandem/oracle/privileged"},
         "action": {"gripper_joints": ["f1", "f2"]},
         "task": {"name": "robot_task", "instruction": "stack the red cube on the green cube",
                  "objects": ["red", "green"], "max_steps": 321}}
    d.update(over)
    return d


def transport():
    from bridge.transport import InProcessBus, InProcessTransport

    return InProcessTransport(InProcessBus())


def test_every_component_name_has_one_schema_and_one_builder():
    for kind, reg in registry.REGISTRIES.items():
        assert kind in COMPONENT_KINDS
        assert reg.names() == component_names(kind), kind


def test_the_bridge_accepts_a_null_step_budget():
    """agent.subgoal_step_budget: null used to crash the bridge's own builder with a TypeError (int(None))."""
    cfg = {"planner": {"name": "oracle"}, "verifier": {"name": "oracle"}, "executor": {"name": "oracle_remote"},
           "agent": {"max_attempts_per_subgoal": 1, "subgoal_step_budget": None}, "bridge": bridge_section()}
    stack = registry.build_bridge_stack(cfg, transport())
    try:
        assert stack.agent.config == AgentConfig(max_attempts_per_subgoal=1, subgoal_step_budget=None, max_plans=40)
        assert stack.agent.config.step_budget(stack.env.spec) == 321  # the robot task's whole max_steps
    finally:
        stack.close()


def _flat_checkpoint(tmp_path: Path) -> Path:
    d = tmp_path / "flat_ckpt"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"executor": {"conditioning_source": "instruction",
                                                            "cameras": ["agentview"], "image_size": [8, 8]}}))
    return d


def test_the_bridge_refuses_a_flat_checkpoint_under_a_decomposing_planner(tmp_path):
    """The bridge skipped the check that demo and eval make; it now builds through the same registry."""
    cfg = {"planner": {"name": "oracle"}, "verifier": {"name": "oracle"},
           "executor": {"name": "diffusion", "checkpoint": str(_flat_checkpoint(tmp_path))},
           "bridge": bridge_section()}
    with pytest.raises(ConfigError, match=r"is the flat baseline .* under planner=oracle"):
        registry.build_bridge_stack(cfg, transport())


def test_privileged_builders_refuse_a_robot():
    cfg = {"executor": {"name": "scripted"}, "bridge": bridge_section()}
    with pytest.raises(ConfigError, match="executor=scripted reads the live simulator"):
        registry.build_bridge_stack(cfg, transport())


@pytest.mark.parametrize("data,message", [
    ({"seed": -1}, "seed must be >= 0, got -1"),
    ({"env": {"image_size": [84, 84, 3]}}, r"env.image_size must be \[H, W\] with H, W >= 1, got \[84, 84, 3\]"),
    ({"env": {"imagesize": [84, 84]}}, "unknown config key env.imagesize; known keys of env: cameras, control_freq"),
    ({"agent": {"max_plans": "many"}}, "config key agent.max_plans: Value 'many' of type 'str' could not be"),
    ({"agent": {"subgoal_step_budget": 0}}, "agent.subgoal_step_budget must be >= 1 or null"),
    ({"planner": {"name": "vlm", "max_retries": -1}}, "planner.max_retries must be >= 0, got -1"),
    ({"planner": {"name": "vlm", "modle": "x"}}, "unknown config key planner.modle"),
    ({"planner": {"name": "learned", "max_close_offset_m": 0}}, "planner.max_close_offset_m must be a finite length > 0"),
    ({"planner": {"name": "learned", "held_ray_m": -0.01}}, "planner.held_ray_m must be a finite length > 0 m, or null "
                                                            r"\(off\), got -0.01"),
    ({"verifier": {"name": "learned", "held_ray_m": 0}}, "verifier.held_ray_m must be a finite length > 0 m, or null"),
    ({"planner": {"name": "learned", "grasp_prior_m": float("inf")}}, "planner.grasp_prior_m must be a finite number"),
    ({"planner": {"name": "learned", "grasp_prior_deg": 91}}, r"planner.grasp_prior_deg must be in \(0, 90\] deg"),
    ({"planner": {"name": "learned", "wrist_limit_rad": 0}}, "planner.wrist_limit_rad must be > 0 rad or null, got 0"),
    ({"planner": {"name": "learned", "wrist_limit_rad": float("nan")}}, "planner.wrist_limit_rad must be a finite number"),
    ({"planner": {"name": "learned", "hidden_uncertainty": -1}}, "planner.hidden_uncertainty must be > 0 or null"),
    ({"env": {"cameras": ["agentview"], "depth_cameras": ["wrist"]}}, r"env.depth_cameras \['wrist'\] are not among"),
    ({"executor": {"name": "diffusion", "num_infernce_steps": 3}}, "unknown config key executor.num_infernce_steps"),
])
def test_a_bad_demo_config_is_refused_naming_the_key(data, message):
    with pytest.raises(ConfigError, match=message):
        load(DemoConfig, data)


def test_unknown_component_names():
    with pytest.raises(UnknownNameError, match="unknown planner 'nope'; known planners: instruction, learned, oracle, vlm"):
        load(StackConfig, {"planner": "nope"})
    assert load(StackConfig, {"verifier": {"name": "learned"}}).verifier.confidence_threshold == 0.9


def test_component_sections_are_typed_by_their_name_with_defaults():
    cfg = load(DemoConfig, {"planner": {"name": "vlm", "model": "m"}, "env": {"image_size": [84, 84]}})
    assert isinstance(cfg.planner, VLMPlannerConfig) and cfg.planner.model == "m" and cfg.planner.max_retries == 3
    assert tuple(cfg.env.image_size) == (84, 84) and cfg.agent == AgentConfig()
    assert (cfg.verifier.name, cfg.executor.name, cfg.goals.name) == ("oracle", "scripted", "none")


def test_collect_and_bridge_configs_validate_their_own_keys():
    with pytest.raises(ConfigError, match="out must name the dataset directory"):
        load(CollectConfig, {})
    with pytest.raises(ConfigError, match="perturb_fraction must be in"):
        load(CollectConfig, {"out": "x", "perturb_fraction": 2.0})
    with pytest.raises(ConfigError, match=r"bridge\."):
        load(BridgeRunConfig, {"bridge": {"rate_hz": -1}})


def test_demo_yaml_composes_to_a_valid_config():
    from tandem.cli.common import compose_config, load_config

    cfg = load_config(DemoConfig, compose_config("demo", ["planner=vlm", "agent.subgoal_step_budget=null"]))
    assert isinstance(cfg.planner, VLMPlannerConfig) and cfg.agent.subgoal_step_budget is None
    assert cfg.agent.max_attempts_per_subgoal == AgentConfig().max_attempts_per_subgoal


def test_the_default_demo_is_the_non_privileged_stack_on_a_held_out_seed():
    """`make demo` / `tandem-demo` with no arguments runs the real system (issue 50): learned planner and verifier over
    the shipped track executor, no oracle goals, on a seed no shipped executor trained on; the oracle stack is one
    option away."""
    from tandem.cli.common import compose_config, load_config
    from tandem.evaluation.held_out import training_seeds
    from tandem.runtime.registry import resolve_checkpoint

    cfg = load_config(DemoConfig, compose_config("demo", []))
    assert (cfg.planner.name, cfg.verifier.name, cfg.executor.name, cfg.goals.name) == (
        "learned", "learned", "diffusion", "none")
    assert cfg.executor.checkpoint is None and cfg.instruction is None and cfg.perturb.name == "none"
    assert cfg.seed >= 2000 and cfg.seed == DemoConfig().seed
    for task in ("stack_three", "pick_place_bins", "nut_assembly"):
        ck = resolve_checkpoint(cfg.executor, task, cfg.planner.name)
        assert cfg.seed not in training_seeds(ck).get(task, frozenset()), (ck, task)
    oracle = load_config(DemoConfig, compose_config(
        "demo", ["planner=oracle", "verifier=oracle", "executor=scripted", "goals=oracle"]))
    assert (oracle.planner.name, oracle.verifier.name, oracle.executor.name, oracle.goals.name) == (
        "oracle", "oracle", "scripted", "oracle")


def test_a_family_task_falls_back_to_the_familys_multi_task_checkpoint(tmp_path, monkeypatch):
    """``libero_10/<name>`` with no checkpoint of its own finds ``checkpoints/libero_10_diffusion`` (one executor for
    the suite's scenes); a task's own checkpoint wins; none at all is one line naming what is shipped."""
    import tandem.runtime.registry as registry
    from tandem.runtime.config import DiffusionExecutorConfig

    monkeypatch.setattr(registry, "SHIPPED_CHECKPOINTS", tmp_path)
    spec = DiffusionExecutorConfig()
    with pytest.raises(ConfigError, match="no shipped diffusion executor checkpoint for task 'libero_10/A'"):
        registry.resolve_checkpoint(spec, "libero_10/A", "oracle")
    (tmp_path / "libero_10_diffusion").mkdir()
    (tmp_path / "libero_10_diffusion" / "config.json").write_text("{}")
    assert registry.resolve_checkpoint(spec, "libero_10/A", "oracle") == tmp_path / "libero_10_diffusion"
    own = tmp_path / "libero_10" / "A_diffusion"
    own.mkdir(parents=True)
    (own / "config.json").write_text("{}")
    assert registry.resolve_checkpoint(spec, "libero_10/A", "oracle") == own
    with pytest.raises(ConfigError):
        registry.resolve_checkpoint(spec, "stack_three_missing", "oracle")
