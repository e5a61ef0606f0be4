"""Uncertain verdicts are re-checked on later frames, never taken as success (issue 12, verifier=learned), with fakes."""

from __future__ import annotations

import numpy as np
import pytest

from memory.task_memory import TaskMemoryV1
from tandem.core.errors import ConfigError
from tandem.core.evidence import GoalRead, GoalReading
from tandem.core.grounding import Grounding
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec, Verdict
from tandem.runtime.agent import AgentConfig, HierarchicalAgent
from tandem.runtime.config import load

SPEC = TaskSpec(name="toy", instruction="pick a", objects=("a",), max_steps=300, skills={"pick": "grasped({0})"},
                goals=("grasped(a)",))


def obs(step: int) -> Observation:
    return Observation(images={}, proprio=np.zeros(8), t=step * 0.05, step=step)


class OnePlanner:
    """Plans pick(a) until a verdict said it succeeded (non-privileged fake); reads its one goal as memory says."""

    is_oracle = False
    source = "fake"
    grounding = Grounding("pick a", goals=("grasped(a)",), grounded_by="test")

    def read_goals(self, observation, memory):
        held = (memory.view().get("last_outcome") or {}).get("pick(a)") == "success"
        return GoalReading(observation.step, (GoalRead("grasped(a)", held, held, float(held)),), ("a",))

    def reset(self, task):
        self.done = False

    def plan(self, observation, memory):
        sg = Subgoal(id="sg1", skill="pick", args=("a",), text="pick a")
        done = (memory.view().get("last_outcome") or {}).get("pick(a)") == "success"
        return Plan(done=[sg], remaining=[]) if done else Plan(remaining=[sg])


class CountingExecutor:
    """Reports the subgoal done after ``need`` steps and counts every action it is asked for."""

    is_oracle = False

    def __init__(self, need: int = 3):
        self.need, self.actions, self.k = need, 0, 0

    def reset(self):
        pass

    def set_subgoal(self, subgoal, task):
        self.k = 0

    def select_action(self, observation):
        self.k += 1
        self.actions += 1
        return np.zeros(7, np.float32)

    def subgoal_done(self):
        return self.k >= self.need


class ScriptedVerifier:
    """Returns the scripted verdicts in order (the last repeats); records the step of every call."""

    is_oracle = False

    def __init__(self, verdicts: list[Verdict]):
        self.verdicts, self.steps = list(verdicts), []

    def reset(self, task, memory):
        pass

    def verify(self, before, after, subgoal):
        self.steps.append(after.step)
        return self.verdicts.pop(0) if len(self.verdicts) > 1 else self.verdicts[0]


UNSURE = Verdict(True, 0.6, "p(grasped(a)) = 0.60", "learned", uncertain=True)
SURE = Verdict(True, 0.99, "p(grasped(a)) = 0.99", "learned")


def run(verifier: ScriptedVerifier, **cfg) -> tuple[HierarchicalAgent, CountingExecutor, TaskMemoryV1]:
    ex, memory = CountingExecutor(), TaskMemoryV1()
    agent = HierarchicalAgent(OnePlanner(), verifier, ex, memory,
                              config=AgentConfig(max_attempts_per_subgoal=1, confirm_reads=1, **cfg))
    agent.reset(SPEC, obs(0))
    step = 0
    while not agent.status.finished and step < 200:
        step += 1
        agent.act(obs(step))
    return agent, ex, memory


def test_uncertain_verdict_is_rechecked_after_more_control_steps_then_accepted():
    verifier = ScriptedVerifier([UNSURE, UNSURE, SURE])
    agent, ex, memory = run(verifier, verify_rechecks=2, recheck_steps=4)
    # done after 3 actions -> verified at step 4 (uncertain), 4 more actions, again (uncertain), 4 more, then sure
    assert verifier.steps == [4, 8, 12]
    assert ex.actions == 3 + 4 + 4
    assert agent.status.claims_success and agent.status.subgoals_done == 1
    assert agent.status.uncertain_verdicts == 2
    assert len(agent.status.verdicts) == 1 and agent.status.verdicts[0]["success"] is True  # one verdict per attempt
    unsure = [e for e in memory.events() if e["kind"] == "verdict_uncertain"]
    assert [e["recheck"] for e in unsure] == [1, 2] and all(e["of"] == 2 for e in unsure)
    assert unsure[0]["verdict"]["confidence"] == pytest.approx(0.6) and unsure[0]["verdict"]["uncertain"] is True


def test_a_verdict_still_uncertain_after_the_rechecks_is_a_failure_not_a_success():
    verifier = ScriptedVerifier([UNSURE])  # p > 0.5 every time, but never confident
    agent, ex, memory = run(verifier, verify_rechecks=2, recheck_steps=3)
    assert verifier.steps == [4, 7, 10]
    final = agent.status.verdicts[0]
    assert final["success"] is False and final["uncertain"] is True
    assert "still uncertain after 2 re-check(s)" in final["reason"]
    assert not agent.status.claims_success and agent.status.subgoals_done == 0
    failures = memory.view()["failures"]
    assert failures and "still uncertain" in failures[-1]["reason"]


def test_no_rechecks_means_the_first_uncertain_verdict_fails():
    verifier = ScriptedVerifier([UNSURE, SURE])
    agent, _, memory = run(verifier, verify_rechecks=0)
    assert verifier.steps == [4]
    assert agent.status.verdicts[0]["success"] is False
    assert not [e for e in memory.events() if e["kind"] == "verdict_uncertain"]


def test_certain_verdicts_are_unchanged():
    verifier = ScriptedVerifier([SURE])
    agent, ex, _ = run(verifier)
    assert verifier.steps == [4] and ex.actions == 3 and agent.status.claims_success
    assert agent.status.uncertain_verdicts == 0


def test_uncertain_at_episode_end_is_not_deferred_and_not_a_failure():
    verifier = ScriptedVerifier([UNSURE])
    ex, memory = CountingExecutor(need=50), TaskMemoryV1()
    agent = HierarchicalAgent(OnePlanner(), verifier, ex, memory, config=AgentConfig())
    agent.reset(SPEC, obs(0))
    for step in range(1, 5):
        agent.act(obs(step))
    agent.stop("step cap", 5, obs(5))
    final = agent.status.verdicts[0]
    assert agent.status.finished and final["at_episode_end"] is True and final["cut_short"] is True
    assert agent.status.outcome == "not_confirmed" and not agent.status.claims_success
    assert not memory.failures and memory.last_outcome["pick(a)"] == "cut_short"


@pytest.mark.parametrize("key,value", [("verify_rechecks", -1), ("recheck_steps", 0)])
def test_recheck_settings_are_validated(key, value):
    with pytest.raises(ConfigError, match=key):
        load(AgentConfig, {key: value}, "agent")


def test_uncertain_verdicts_are_rechecked_under_async_planning_too():
    import time

    verifier = ScriptedVerifier([UNSURE, SURE])
    ex, memory = CountingExecutor(), TaskMemoryV1()
    agent = HierarchicalAgent(OnePlanner(), verifier, ex, memory, hold_action=np.zeros(7, np.float32),
                              config=AgentConfig(max_attempts_per_subgoal=1, confirm_reads=1, verify_rechecks=2, recheck_steps=4,
                                                 async_planning=True))
    try:
        agent.reset(SPEC, obs(0))
        step, start = 0, None
        while not agent.status.finished and step < 2000:
            step += 1
            agent.act(obs(step))
            if start is None and agent.subgoal is not None:
                start = step  # the first plan arrived; its subgoal's first action was this step's
            time.sleep(0.001)  # let the planning thread run
        assert start is not None and agent.status.claims_success
        assert verifier.steps == [start + 3, start + 3 + 4]  # done after 3 actions, re-checked 4 actions later
        assert ex.actions == 3 + 4 and agent.status.uncertain_verdicts == 1
    finally:
        agent.close()
