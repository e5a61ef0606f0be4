"""tandem-train's in-sim evaluation runs a flat executor under the flat baseline's stack, not the oracle planner."""

from __future__ import annotations

import pytest

from tandem.cli.train import eval_stack, load_train_config
from tandem.core.errors import ConfigError


def _cfg(**executor):
    return load_train_config({"dataset": {"root": "unused"}, "eval": {"every": 1},
                              "executor": {"image_size": [84, 84], **executor}})


def test_a_flat_executor_is_evaluated_like_the_flat_variant():
    cfg = _cfg(conditioning_source="instruction", use_goal_image=False, use_trace=False)
    s = eval_stack(cfg, "stack_three", "instruction")
    assert (s.planner.name, s.verifier.name, s.goals.name) == ("instruction", "oracle_task", "none")
    assert s.agent.max_attempts_per_subgoal == 1 and s.agent.subgoal_step_budget is None
    assert tuple(s.env.image_size) == (84, 84) and s.task.name == "stack_three"


def test_a_subgoal_executor_is_evaluated_under_the_oracle_stack():
    s = eval_stack(_cfg(trace_camera="agentview"), "nut_assembly", "subgoal")
    assert (s.planner.name, s.verifier.name, s.goals.name, s.goals.camera) == ("oracle", "oracle", "oracle",
                                                                              "agentview")
    assert s.agent.subgoal_step_budget == 400


def test_the_train_config_is_validated_first():
    with pytest.raises(ConfigError, match="dataset.root is not set"):
        load_train_config({})
    with pytest.raises(ConfigError, match="unknown config key executor.num_infernce_steps"):
        load_train_config({"dataset": {"root": "x"}, "executor": {"num_infernce_steps": 3}})
    with pytest.raises(ConfigError, match="invalid ExecutorConfig: n_action_steps must be >= 1"):
        load_train_config({"dataset": {"root": "x"}, "executor": {"n_action_steps": 0}})
