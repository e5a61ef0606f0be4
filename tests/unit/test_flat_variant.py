"""The flat baseline as a stack variant: instruction planner, oracle task-success verifier, whole-episode budget,
flat-checkpoint conditioning checks, and the new builder names of tandem.runtime.registry / tandem.evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from test_executor_policy import make

from memory.task_memory import TaskMemoryV1
from planner_vlm.instruction_planner import TASK_SKILL, InstructionPlanner
from planner_vlm.oracle_task_verifier import OracleTaskSuccessVerifier
from tandem.core.errors import ConfigError
from tandem.core.protocols import Planner, Verifier
from tandem.core.types import Observation, Subgoal, TaskSpec, Verdict
from tandem.evaluation.suite import Variant
from tandem.runtime import registry
from tandem.runtime.agent import AgentConfig, HierarchicalAgent
from tandem.runtime.config import StackConfig, load
from tandem.runtime.rollout import run_episode

torch.set_num_threads(1)
REPO = Path(__file__).resolve().parents[2]
S = 32
SPEC = TaskSpec(name="stack_three", instruction="stack red on green, then blue on red",
                objects=("red", "green", "blue"), max_steps=30,
                skills={"pick": "grasped({0})", "stack": "on({0},{1})"}, goals=("on(red,green)", "on(blue,red)"))


def priv(*held: str, success: bool | None = None) -> dict:
    preds = {g: g in held for g in SPEC.goals}
    return {"predicates": preds, "goals": list(SPEC.goals),
            "success": all(preds.values()) if success is None else success}


def obs(p: dict | None = None, step: int = 0) -> Observation:
    rng = np.random.default_rng(step)
    return Observation(images={c: rng.integers(0, 255, (S, S, 3), dtype=np.uint8) for c in ("agentview", "wrist")},
                       proprio=np.zeros(8, np.float32), privileged=p, step=step)


# ------------------------------------------------------------------ instruction planner
def test_instruction_planner_is_one_whole_task_subgoal():
    planner, mem = InstructionPlanner(), TaskMemoryV1()
    assert isinstance(planner, Planner)
    mem.start_episode(SPEC)
    planner.reset(SPEC)
    plan = planner.plan(obs(), mem)
    assert plan.done == [] and len(plan.remaining) == 1
    sg = plan.remaining[0]
    assert (sg.skill, sg.args, sg.text, sg.id) == (TASK_SKILL, (), SPEC.instruction, "task1")
    assert sg.goal_image is None and sg.trace is None

    mem.record_attempt(sg, 0)  # running: a replan keeps the id
    assert planner.plan(obs(), mem).remaining[0].id == "task1"
    mem.record_verdict(sg, Verdict(False, 1.0, "task not achieved", "oracle"), 5)
    again = planner.plan(obs(), mem)  # after a failure: the same single subgoal, as attempt 2
    assert [(s.signature, s.text, s.id) for s in again.remaining] == [("task()", SPEC.instruction, "task2")]
    assert "1 earlier attempt(s), last failure" in again.rationale

    sg2 = again.remaining[0]
    mem.record_attempt(sg2, 6)
    mem.record_verdict(sg2, Verdict(True, 1.0, "task success", "oracle"), 9)
    done = planner.plan(obs(), mem)
    assert done.remaining == [] and [s.signature for s in done.done] == ["task()"]


def test_instruction_planner_errors():
    with pytest.raises(ConfigError, match="before reset"):
        InstructionPlanner().plan(obs(), TaskMemoryV1())
    with pytest.raises(ConfigError, match="empty instruction"):
        InstructionPlanner().reset(TaskSpec(name="x", instruction=" ", objects=(), max_steps=5))


# ------------------------------------------------------------------ oracle task verifier
def test_oracle_task_verifier_uses_the_task_success_flag():
    v = OracleTaskSuccessVerifier(SPEC)
    assert isinstance(v, Verifier)
    sg = Subgoal("task1", TASK_SKILL, (), SPEC.instruction)
    ok = v.verify(obs(priv()), obs(priv("on(red,green)", "on(blue,red)")), sg)
    assert ok.success and ok.source == "oracle" and ok.confidence == 1.0
    assert ok.reason == "task success: on(red,green), on(blue,red) hold"
    bad = v.verify(obs(priv()), obs(priv("on(red,green)")), sg)
    assert not bad.success and bad.reason == "task not achieved: on(blue,red) is false (1 of 2 goals hold)"
    # the flag decides, not the predicates; goals come from privileged when no task was given
    assert OracleTaskSuccessVerifier().verify(obs(priv()), obs(priv(success=True)), sg).success


def test_oracle_task_verifier_needs_the_simulator():
    sg = Subgoal("task1", TASK_SKILL, (), SPEC.instruction)
    with pytest.raises(ConfigError, match=r"privileged\['success'\] is missing"):
        OracleTaskSuccessVerifier().verify(obs(), obs(), sg)
    with pytest.raises(ConfigError, match="missing"):
        OracleTaskSuccessVerifier().verify(obs(), obs({"predicates": {}}), sg)


# ------------------------------------------------------------------ builders and validation
def _ctx(planner: str, env=None) -> registry.BuildContext:
    return registry.BuildContext(env=env, simulated=True, task="stack_three", planner=planner)


def test_builders_know_the_new_names(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "SHIPPED_CHECKPOINTS", tmp_path)  # nothing shipped
    ctx = _ctx("instruction")
    assert isinstance(registry.PLANNERS.build({"name": "instruction"}, ctx), InstructionPlanner)
    assert isinstance(registry.VERIFIERS.build({"name": "oracle_task"}, ctx), OracleTaskSuccessVerifier)
    assert {"instruction"} <= set(registry.PLANNERS.names()) and {"oracle_task"} <= set(registry.VERIFIERS.names())
    assert "lerobot" in registry.EXECUTORS.names()
    with pytest.raises(ConfigError, match="no shipped state model checkpoint for task 'stack_three'.*tandem-train-state"):
        registry.PLANNERS.build({"name": "learned", "state_checkpoint": None}, ctx)
    Variant.from_config("l", {"verifier": "learned"}).validate()
    with pytest.raises(ConfigError, match="executor=lerobot needs executor.checkpoint"):
        registry.EXECUTORS.build({"name": "lerobot"}, ctx)
    with pytest.raises(ConfigError, match="checkpoint"):
        Variant.from_config("lr", {"executor": {"name": "lerobot"}}).validate()


def test_agent_config_null_budget_means_the_task_max_steps():
    cfg = load(StackConfig, {"agent": {"max_attempts_per_subgoal": 1, "subgoal_step_budget": None}}).agent
    assert cfg.subgoal_step_budget is None and cfg.step_budget(SPEC) == SPEC.max_steps
    assert load(StackConfig, {}).agent.step_budget(SPEC) == 400
    with pytest.raises(ConfigError):
        AgentConfig(subgoal_step_budget=0)


def _save(tmp_path: Path, name: str, conditioning: str) -> Path:
    kw = {"conditioning_source": conditioning}
    if conditioning == "instruction":
        kw.update(use_goal_image=False, use_trace=False)
    ex = make(**kw).eval()
    with torch.no_grad():
        ex.net.done_head[-1].bias.fill_(-20.0)  # progress ~ 0: the done head never ends the subgoal early
    return ex.save(tmp_path / name)


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("ck")
    return {"flat": _save(root, "flat", "instruction"), "sub": _save(root, "sub", "subgoal")}


def test_eval_yaml_variants_validate(ckpts):
    variants = OmegaConf.to_container(OmegaConf.load(REPO / "configs" / "eval.yaml")["variants"])
    flat = Variant.from_config("flat", variants["flat"])
    assert (flat.planner["name"], flat.verifier["name"], flat.executor["name"], flat.goals["name"]) == (
        "instruction", "oracle_task", "diffusion", "none")
    assert flat.agent == {"max_attempts_per_subgoal": 1, "subgoal_step_budget": None}
    flat.validate()  # no checkpoint: the shipped checkpoints/<task>_flat, resolved per task when built
    Variant.from_config("flat", {**variants["flat"], "executor": {"name": "diffusion",
                                                                  "checkpoint": str(ckpts["flat"])}}).validate()
    with pytest.raises(ConfigError, match="variant 'flat': planner=instruction .* subgoal-conditioned"):
        Variant.from_config("flat", {**variants["flat"], "executor": {"name": "diffusion",
                                                                      "checkpoint": str(ckpts["sub"])}}).validate()
    with pytest.raises(ConfigError, match="variant 'hierarchical': .* is the flat baseline"):
        Variant.from_config("hierarchical", {**variants["hierarchical"], "executor": {
            "name": "diffusion", "checkpoint": str(ckpts["flat"])}}).validate()
    lr = variants["lerobot"]
    assert (lr["planner"]["name"], lr["verifier"]["name"], lr["executor"]["name"]) == (
        "instruction", "oracle_task", "lerobot")
    Variant.from_config("lerobot", {**lr, "executor": {**lr["executor"], "checkpoint": "somewhere"}}).validate()
    learned = Variant.from_config("learned_track", variants["learned_track"])
    assert (learned.planner["name"], learned.verifier["name"], learned.goals["name"]) == ("learned", "learned", "none")
    learned.validate()


def test_build_executor_refuses_mismatched_conditioning(ckpts):
    with pytest.raises(ConfigError, match="is the flat baseline"):
        registry.EXECUTORS.build({"name": "diffusion", "checkpoint": str(ckpts["flat"])}, _ctx("oracle"))
    with pytest.raises(ConfigError, match="subgoal-conditioned"):
        registry.EXECUTORS.build({"name": "diffusion", "checkpoint": str(ckpts["sub"])}, _ctx("instruction"))
    conf = json.loads((ckpts["flat"] / "config.json").read_text())
    assert conf["executor"]["conditioning_source"] == "instruction"


class FlatEnv:
    """Stacks succeed at ``success_at`` steps (or never); the task budget is SPEC.max_steps = 30 steps."""

    action_dim = 7
    action_low = -np.ones(7, np.float32)
    action_high = np.ones(7, np.float32)

    def __init__(self, success_at: int | None = None):
        self.spec, self.success_at = SPEC, success_at

    def reset(self, seed=None):
        self.t = 0
        return obs(priv(), 0), {}

    def step(self, action):
        self.t += 1
        done = self.success_at is not None and self.t >= self.success_at
        o = obs(priv(*SPEC.goals) if done else priv(), self.t)
        return o, float(done), done, self.t >= SPEC.max_steps, {"success": done}

    def close(self):
        pass


def _flat_agent(ckpt: Path, env, budget: int | None = None) -> HierarchicalAgent:
    cfg = load(StackConfig, {
        "planner": {"name": "instruction"}, "verifier": {"name": "oracle_task"},
        "executor": {"name": "diffusion", "checkpoint": str(ckpt)}, "goals": {"name": "none"},
        "agent": {"max_attempts_per_subgoal": 1, "subgoal_step_budget": budget}})
    return registry.build_agent(cfg, _ctx("instruction", env))


def test_flat_episode_runs_the_whole_task_as_one_subgoal(ckpts):
    env = FlatEnv(success_at=None)
    agent = _flat_agent(ckpts["flat"], env)
    texts: list[str] = []
    enc = agent.executor.text_encoder
    orig = enc.encode
    enc.encode = lambda t: (texts.extend(t), orig(t))[1]
    s = run_episode(env, agent, seed=0, out_dir=None, record_video=False).summary
    assert texts == [SPEC.instruction]  # conditioned on the instruction, once
    # one attempt at the one subgoal ran until the env's own step limit (SPEC.max_steps)
    assert s["steps"] == SPEC.max_steps and s["attempts"] == 1 and s["plans"] == 1 and not s["success"]
    assert s["agent_end_reason"] == "env step limit reached"

    # with a per-subgoal budget smaller than the task's, the single attempt is cut, verified and given up
    env = FlatEnv(success_at=None)
    s = run_episode(env, _flat_agent(ckpts["flat"], env, budget=10), seed=0, out_dir=None,
                    record_video=False).summary
    assert s["steps"] == 10 and s["attempts"] == 1 and s["agent_end_reason"] == "gave up: task() failed 1 times"
    (verdict,) = s["verdicts"]
    assert verdict["subgoal"] == "task()" and verdict["source"] == "oracle" and not verdict["success"]
    assert verdict["reason"] == ("step budget of 10 spent; task not achieved: on(red,green), on(blue,red) are false "
                                 "(0 of 2 goals hold)")


def test_flat_episode_success_is_verified_by_task_success(ckpts):
    env = FlatEnv(success_at=12)
    res = run_episode(env, _flat_agent(ckpts["flat"], env), seed=0, out_dir=None, record_video=False)
    s = res.summary
    assert s["success"] and s["steps"] == 12 and s["subgoals_done"] == 1
    assert s["verdicts"][-1]["reason"] == "task success: on(red,green), on(blue,red) hold"
