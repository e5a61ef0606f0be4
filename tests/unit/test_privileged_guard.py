"""Privileged state can no longer leak: a component that is not an oracle cannot read Observation.privileged, an
oracle one still can, and every result says whether its stack was privileged."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from test_agent_loop import ToyEnv, ToyExecutor, ToyPlanner, ToyVerifier

from memory.task_memory import TaskMemoryV1
from tandem.core.errors import PrivilegedAccessError
from tandem.core.privileged import RedactedPrivileged, observation_for, redact
from tandem.core.types import Observation, Plan, Subgoal
from tandem.runtime.agent import HierarchicalAgent
from tandem.runtime.rollout import run_episode


def _obs():
    return Observation(images={}, proprio=np.zeros(8), privileged={"predicates": {"grasped(a)": True}})


@pytest.mark.parametrize("read", [
    lambda p: p["predicates"], lambda p: p.get("predicates"), lambda p: "predicates" in p, lambda p: list(p),
    lambda p: len(p), lambda p: bool(p), lambda p: (p or {}).get("predicates"), lambda p: dict(p),
])
def test_every_read_of_withheld_state_raises_naming_the_component(read):
    view = redact(_obs(), "planner SneakyPlanner")
    with pytest.raises(PrivilegedAccessError, match=r"planner SneakyPlanner read Observation.privileged"):
        read(view.privileged)


def test_the_view_shares_images_and_proprio_and_survives_copies_and_logs():
    obs = _obs()
    view = redact(obs, "executor X")
    assert view.proprio is obs.proprio and view.images is obs.images and obs.privileged == {
        "predicates": {"grasped(a)": True}}  # the original is untouched
    assert "withheld from executor X" in repr(view.privileged)
    assert copy.deepcopy(view).privileged is view.privileged
    assert isinstance(pickle.loads(pickle.dumps(view)).privileged, RedactedPrivileged)
    robot = Observation(images={}, proprio=np.zeros(8))  # nothing to withhold on a robot
    assert redact(robot, "planner X") is robot


def test_observation_for_follows_is_oracle():
    class Oracle:
        is_oracle = True

    class Learned:
        is_oracle = False

    obs = _obs()
    assert observation_for(Oracle(), obs, "verifier") is obs
    with pytest.raises(PrivilegedAccessError, match="verifier Learned"):
        observation_for(Learned(), obs, "verifier").privileged["predicates"]


class SneakyPlanner(ToyPlanner):
    """Claims not to be an oracle, then reads the simulator's truth anyway."""

    is_oracle = False

    def plan(self, obs, memory):
        achieved = obs.privileged["achieved"]
        return Plan(remaining=[Subgoal(f"sg{o}", "pick", (o,), f"pick {o}") for o in ("a", "b")
                               if o not in achieved])


class SneakyExecutor(ToyExecutor):
    is_oracle = False

    def select_action(self, obs):
        (obs.privileged or {}).get("achieved")  # the silent pattern is caught too
        return super().select_action(obs)


class SneakyVerifier(ToyVerifier):
    is_oracle = False

    def verify(self, before, after, subgoal):
        if subgoal.args[0] in after.privileged["achieved"]:
            raise AssertionError("unreachable")
        return super().verify(before, after, subgoal)


class SneakyGoals:
    is_oracle = False

    def produce(self, subgoal, observation):
        observation.privileged.get("achieved")
        return subgoal


class OracleGoals:
    is_oracle = True

    def produce(self, subgoal, observation):
        assert "achieved" in observation.privileged
        return subgoal


def _run(planner=None, verifier=None, executor=None, goals=None):
    env = ToyEnv()
    agent = HierarchicalAgent(planner or ToyPlanner(env), verifier or ToyVerifier(env), executor or ToyExecutor(env),
                              TaskMemoryV1(), goal_producer=goals)
    for c in (agent.planner, agent.verifier, agent.executor):
        c.env = env
    return run_episode(env, agent, seed=0, record_video=False).summary


@pytest.mark.parametrize("role,kw", [
    ("planner SneakyPlanner", {"planner": SneakyPlanner(None)}),
    ("executor SneakyExecutor", {"executor": SneakyExecutor(None)}),
    ("verifier SneakyVerifier", {"verifier": SneakyVerifier(None)}),
    ("goal producer SneakyGoals", {"goals": SneakyGoals()}),
])
def test_a_non_oracle_component_that_touches_privileged_state_fails(role, kw):
    s = _run(**kw)
    assert s["success"] is False
    assert f"{role} read Observation.privileged (" in s["failure"]


def test_oracle_components_still_read_it_and_the_summary_says_the_stack_was_privileged(tmp_path):
    s = _run(goals=OracleGoals())
    assert s["success"] is True
    assert s["privileged"] is True and s["oracle_components"] == ["planner", "verifier", "goal producer"]


class BlindPlanner(ToyPlanner):
    """A non-oracle planner that works without the truth: a fixed plan, finished from memory's verdicts."""

    is_oracle = False

    def plan(self, obs, memory):
        done = [f["signature"] for f in memory.events() if f["kind"] == "verdict" and f["verdict"]["success"]]
        sgs = [Subgoal(f"sg{o}", "pick", (o,), f"pick {o}") for o in ("a", "b")]
        return Plan(done=[s for s in sgs if s.signature in done], remaining=[s for s in sgs if s.signature not in done])


class BlindVerifier(ToyVerifier):
    is_oracle = False


def test_a_stack_without_oracles_runs_and_is_recorded_as_not_privileged():
    s = _run(planner=BlindPlanner(None), verifier=BlindVerifier(None))
    assert s["success"] is True and s["privileged"] is False and s["oracle_components"] == []


def test_the_shipped_components_declare_what_they_are():
    from executor_vla.lerobot_executor import LeRobotPolicyExecutor
    from executor_vla.policy import DiffusionExecutor
    from planner_vlm.instruction_planner import InstructionPlanner
    from planner_vlm.oracle_planner import OraclePlanner
    from planner_vlm.oracle_task_verifier import OracleTaskSuccessVerifier
    from planner_vlm.oracle_verifier import OracleVerifier
    from planner_vlm.vlm_planner import VLMPlanner
    from planner_vlm.vlm_verifier import VLMVerifier
    from sim.experts import ScriptedExecutor
    from sim.goal_render import OracleGoalProducer
    from tandem.runtime.oracle_remote import OracleRemoteExecutor

    oracles = (OraclePlanner, OracleVerifier, OracleTaskSuccessVerifier, ScriptedExecutor, OracleGoalProducer,
               OracleRemoteExecutor)
    others = (InstructionPlanner, VLMPlanner, VLMVerifier, DiffusionExecutor, LeRobotPolicyExecutor)
    assert all(c.is_oracle is True for c in oracles) and all(c.is_oracle is False for c in others)


def test_evaluation_rows_record_whether_the_stack_was_privileged(tmp_path):
    from tandem.evaluation.runner import evaluate
    from tandem.evaluation.suite import Suite, Variant

    suite = Suite.from_config({"name": "t", "seeds": 2, "tasks": ["stack_three"]})
    fake = {"builder": "eval_fakes:build_fake_stack", "executor": {"name": "fake"}}
    out = evaluate(suite, [Variant.from_config("fake", fake)], tmp_path, backend="inline", progress=False,
                   validate=False)
    df = out.results.set_index("variant")
    assert str(out.results["privileged"].dtype) == "boolean"
    assert df.loc["fake", "privileged"].tolist() == [True, True]  # the fakes' planner and verifier are oracles
    # a stack that cannot be built is no row at all (tests/unit/test_build_errors.py)
