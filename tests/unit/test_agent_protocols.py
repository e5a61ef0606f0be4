"""The agent uses only what the protocols declare: a fallback is part of the plan, verifier.reset gets the memory,
a component lacking a member is refused, and the env's step limit still yields the last verdict."""

from __future__ import annotations

import numpy as np
import pytest
from test_agent_loop import SPEC, ToyEnv, ToyExecutor, ToyPlanner, ToyVerifier

from memory.task_memory import TaskMemoryV1
from tandem.core.errors import ConfigError
from tandem.core.types import Plan, Subgoal, Verdict
from tandem.runtime.agent import AgentConfig, HierarchicalAgent
from tandem.runtime.rollout import run_episode


class EmptyFallbackPlanner:
    """A new planner whose model failed: it falls back to an empty plan (the case that used to claim success)."""

    is_oracle, source = False, "new"
    grounding = None

    def read_goals(self, observation, memory):  # it grounds no goals, so it reads none
        return None

    def __init__(self, flag: bool):
        self.flag = flag

    def reset(self, task):
        pass

    def plan(self, observation, memory):
        return Plan(rationale="model output unusable", fallback=self.flag)


def _agent(planner, env=None, **kw):
    env = env or ToyEnv()
    return env, HierarchicalAgent(planner, ToyVerifier(env), ToyExecutor(env), TaskMemoryV1(),
                                  config=AgentConfig(**kw))


@pytest.mark.parametrize("flag", [True, False])
def test_an_empty_fallback_plan_never_ends_the_episode_as_a_claimed_success(flag):
    env, agent = _agent(EmptyFallbackPlanner(flag))
    s = run_episode(env, agent, seed=0, record_video=False).summary
    assert s["agent_claims_success"] is False and s["success"] is False
    assert s["agent_end_reason"] == ("planner gave no usable plan (a fallback plan with nothing remaining): model "
                                     "output unusable" if flag else
                                     "planner gave no usable plan (an empty plan): model output unusable")
    assert s["attempts"] == 0 and s["plans"] == 1


def test_a_fallback_that_keeps_a_finished_plan_is_not_a_success_either():
    done = [Subgoal("d", "pick", ("a",), "pick a")]
    assert Plan(done=done).claims_complete and not Plan(done=done, fallback=True).claims_complete
    assert not Plan().claims_complete
    assert Plan.from_json(Plan(done=done, fallback=True).to_json()).fallback is True


def test_a_complete_plan_of_a_planner_that_reads_no_goals_is_never_a_claimed_success():
    env = ToyEnv()
    env.reset()
    env.achieved[:] = ["a", "b"]
    planner = ToyPlanner(env)  # grounds no goals: nothing to confirm the claim with
    _, agent = _agent(planner, env)
    agent.reset(SPEC, env._obs())
    assert agent.status.finished and not agent.status.claims_success
    assert agent.status.outcome == "not_confirmed"
    assert agent.status.end_reason.startswith("success not confirmed after 3 claim(s): the planner reads no goals")


class RecordingVerifier(ToyVerifier):
    def reset(self, task, memory):
        self.reset_with = (task, memory)


def test_the_verifier_is_reset_with_the_task_and_the_memory():
    env = ToyEnv()
    verifier = RecordingVerifier(env)
    memory = TaskMemoryV1()
    agent = HierarchicalAgent(ToyPlanner(env), verifier, ToyExecutor(env), memory)
    obs, _ = env.reset()
    agent.reset(SPEC, obs)
    assert verifier.reset_with == (SPEC, memory)


class NoOracleFlagExecutor:
    def reset(self):
        pass

    def set_subgoal(self, subgoal, task):
        pass

    def select_action(self, observation):
        return np.zeros(7, np.float32)

    def subgoal_done(self):
        return False


class NoResetVerifier:
    is_oracle = False

    def verify(self, before, after, subgoal):
        return Verdict(True, 1.0, "ok", "learned")


def test_a_component_lacking_a_protocol_member_is_refused_naming_it():
    env = ToyEnv()
    with pytest.raises(ConfigError, match=r"NoOracleFlagExecutor cannot be the executor: it lacks is_oracle"):
        HierarchicalAgent(ToyPlanner(env), ToyVerifier(env), NoOracleFlagExecutor(), TaskMemoryV1())
    with pytest.raises(ConfigError, match=r"NoResetVerifier cannot be the verifier: it lacks reset"):
        HierarchicalAgent(ToyPlanner(env), NoResetVerifier(), ToyExecutor(env), TaskMemoryV1())


class TruncatingEnv(ToyEnv):
    """Reports truncated (the env's own step limit) at step ``limit``, while a subgoal is still active."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def step(self, action):
        obs, r, term, _, info = super().step(action)
        return obs, r, term, self.t >= self.limit, info


def test_the_env_step_limit_still_verifies_the_active_subgoal():
    """rollout used to stop the agent without the last observation: the last subgoal got no verdict."""
    env = TruncatingEnv(limit=7)
    ex = ToyExecutor(env, need=5)
    agent = HierarchicalAgent(ToyPlanner(env), ToyVerifier(env), ex, TaskMemoryV1())
    s = run_episode(env, agent, seed=0, record_video=False).summary
    assert s["steps"] == 7 and s["agent_end_reason"] == "env step limit reached"
    # pick(a) succeeded at step 5; pick(b) ran steps 6-7 and is verified on the observation after step 7
    assert [(v["step"], v["subgoal"], v["success"]) for v in s["verdicts"]] == [(5, "pick(a)", True),
                                                                                 (7, "pick(b)", False)]


class RecordingTruthSink:
    """An oracle-sim VLM's truth channel, recording what the agent posts."""

    is_oracle = True
    role = "truth channel (oracle-sim VLM)"

    def __init__(self):
        self.tasks, self.steps = [], []

    def reset(self, task):
        self.tasks.append(task)

    def publish(self, observation):
        self.steps.append(observation.step)


def test_a_truth_sink_gets_every_full_observation_and_makes_the_stack_privileged():
    env = ToyEnv()
    sink = RecordingTruthSink()
    agent = HierarchicalAgent(ToyPlanner(env), ToyVerifier(env), ToyExecutor(env), TaskMemoryV1(), truth_sink=sink)
    s = run_episode(env, agent, seed=0, record_video=False).summary
    assert sink.tasks[0].goals == SPEC.goals  # the judge's goals: the sink is an oracle
    assert sink.steps[0] == 0 and len(sink.steps) == s["steps"] + 1  # the reset's observation, then every step's
    assert s["privileged"] and s["oracle_components"][-1] == sink.role  # (the toy components are oracles too)
    sink.is_oracle = False
    with pytest.raises(ConfigError, match="truth sink"):
        HierarchicalAgent(ToyPlanner(env), ToyVerifier(env), ToyExecutor(env), TaskMemoryV1(), truth_sink=sink)
