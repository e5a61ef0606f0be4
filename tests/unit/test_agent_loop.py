"""The closed loop with fakes: verification, retry, replanning, budgets, failure recording."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from memory.task_memory import TaskMemoryV1
from tandem.core.errors import SimUnstableError
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec, Verdict
from tandem.runtime.agent import AgentConfig, HierarchicalAgent
from tandem.runtime.rollout import run_episode

SPEC = TaskSpec(name="toy", instruction="do a then b", objects=("a", "b"), max_steps=200,
                skills={"pick": "grasped({0})"}, goals=("grasped(a)", "grasped(b)"))


class ToyEnv:
    """A 1-D world: each subgoal needs `need` steps of action +1; `flaky` makes the first attempt fail."""

    action_dim = 7
    action_low = -np.ones(7, np.float32)
    action_high = np.ones(7, np.float32)

    def __init__(self, unstable_at: int | None = None):
        self.spec = SPEC
        self.unstable_at = unstable_at

    def reset(self, seed=None):
        self.t = 0
        self.achieved: list[str] = []
        return self._obs(), {}

    def _obs(self):
        img = np.zeros((8, 8, 3), np.uint8)
        return Observation(images={"agentview": img, "wrist": img}, proprio=np.zeros(8), t=self.t * 0.05,
                           step=self.t, privileged={"achieved": list(self.achieved)})

    def step(self, action):
        self.t += 1
        if self.unstable_at is not None and self.t >= self.unstable_at:
            raise SimUnstableError("qpos exploded")
        return self._obs(), 0.0, False, False, {"success": len(self.achieved) == 2}

    def close(self):
        pass


class ToyPlanner:
    """Plans the goals not yet achieved (reads the toy env's ground truth: an 'oracle' fake)."""

    is_oracle = True
    source = "toy"
    grounding = None

    def read_goals(self, observation, memory):  # it grounds no goals, so it reads none
        return None

    def __init__(self, env):
        self.env, self.n = env, 0

    def reset(self, task):
        self.n = 0

    def plan(self, obs, memory):
        remaining = []
        for obj in ("a", "b"):
            if obj not in self.env.achieved:
                self.n += 1
                remaining.append(Subgoal(id=f"sg{self.n}", skill="pick", args=(obj,), text=f"pick {obj}"))
        done = [Subgoal(id="d", skill="pick", args=(o,), text=f"pick {o}") for o in self.env.achieved]
        return Plan(done=done, remaining=remaining)


class ToyExecutor:
    is_oracle = False

    def __init__(self, env, need=5, fail_first: set[str] | None = None):
        self.env, self.need, self.fail_first = env, need, set(fail_first or ())
        self.calls: list[str] = []

    def reset(self):
        pass

    def set_subgoal(self, subgoal, task):
        self.sg, self.k = subgoal, 0
        self.calls.append(subgoal.signature)

    def select_action(self, obs):
        self.k += 1
        if self.k == self.need:
            obj = self.sg.args[0]
            if obj in self.fail_first:
                self.fail_first.discard(obj)  # dropped it: the verifier must notice
            else:
                self.env.achieved.append(obj)
        return np.zeros(7, np.float32)

    def subgoal_done(self):
        return self.k >= self.need


class ToyVerifier:
    is_oracle = True

    def __init__(self, env):
        self.env = env

    def reset(self, task, memory):
        pass

    def verify(self, before, after, subgoal):
        ok = subgoal.args[0] in self.env.achieved
        return Verdict(ok, 1.0, "ok" if ok else f"{subgoal.args[0]} not held", "oracle")


def make(env=None, **kw):
    env = env or ToyEnv()
    ex = ToyExecutor(env, fail_first=kw.pop("fail_first", None), need=kw.pop("need", 5))
    agent = HierarchicalAgent(ToyPlanner(env), ToyVerifier(env), ex, TaskMemoryV1(), config=AgentConfig(**kw))
    return env, ex, agent


def test_runs_subgoals_in_order_to_success(tmp_path):
    env, ex, agent = make()
    res = run_episode(env, agent, seed=0, out_dir=tmp_path, record_video=False)
    assert res.summary["success"] is True
    assert ex.calls == ["pick(a)", "pick(b)"]
    assert res.summary["subgoals_done"] == 2 and res.summary["replans"] == 0
    assert json.loads((tmp_path / "summary.json").read_text())["success"] is True
    kinds = [json.loads(line).get("kind") for line in (tmp_path / "episode.jsonl").read_text().splitlines()]
    assert "verdict" in kinds and "plan" in kinds


def test_failed_subgoal_is_verified_recorded_and_retried():
    env, ex, agent = make(fail_first={"a"})
    res = run_episode(env, agent, seed=0, record_video=False)
    assert res.summary["success"] is True
    assert ex.calls == ["pick(a)", "pick(a)", "pick(b)"]
    assert res.summary["replans"] == 1 and res.summary["attempts"] == 3
    view = agent.memory.view()
    assert any("a not held" in f["reason"] for f in view["failures"])


def test_gives_up_after_max_attempts():
    env, ex, agent = make(fail_first=set(), max_attempts_per_subgoal=2, need=10**6, subgoal_step_budget=7)
    res = run_episode(env, agent, seed=0, record_video=False)
    assert res.summary["success"] is False
    assert ex.calls == ["pick(a)", "pick(a)"]
    assert "gave up" in res.summary["failure"]
    assert any("step budget" in v["reason"] for v in res.summary["verdicts"])


def test_unstable_sim_is_a_failed_episode_not_a_crash():
    env, ex, agent = make(ToyEnv(unstable_at=3))
    res = run_episode(env, agent, seed=0, record_video=False)
    assert res.summary["success"] is False
    assert "SimUnstableError" in res.summary["failure"]


class RaisingToyEnv(ToyEnv):
    """Raises ``error`` from its third step."""

    def __init__(self, error: BaseException):
        super().__init__()
        self.error = error

    def step(self, action):
        if self.t >= 2:
            raise self.error
        return super().step(action)


def test_a_crashing_step_is_a_failed_episode_but_an_interrupt_stops_the_batch():
    import ctypes

    res = run_episode(*make(RaisingToyEnv(ValueError("bad frame")))[::2], seed=0, record_video=False)
    assert res.summary["success"] is False and "crash: ValueError: bad frame" in res.summary["failure"]
    # SIGTERM during EGL rendering reaches us as ctypes' ArgumentError: found when tandem-collect went on after kill
    for interrupt in (ctypes.ArgumentError("argument 1: KeyboardInterrupt: SIGTERM"), KeyboardInterrupt("SIGINT")):
        env, _, agent = make(RaisingToyEnv(interrupt))
        with pytest.raises(KeyboardInterrupt):
            run_episode(env, agent, seed=0, record_video=False)


def test_nan_action_is_a_failed_episode():
    env, ex, agent = make()
    ex.select_action = lambda obs: np.full(7, np.nan, np.float32)
    res = run_episode(env, agent, seed=0, record_video=False)
    assert res.summary["success"] is False and "non-finite" in res.summary["failure"]


def test_act_before_reset_raises():
    _, _, agent = make()
    with pytest.raises(Exception, match="before reset"):
        agent.act(ToyEnv().reset()[0])


class PerturbedToyEnv(ToyEnv):
    """A toy episode of 40 steps whose perturbation, at step 1, undoes work worth 60 more (``added_steps``)."""

    def __init__(self):
        super().__init__()
        self.spec = dataclasses.replace(SPEC, max_steps=40)

    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        if self.t == 1:
            info["perturbation"] = {"name": "pull_from_bin", "step": 1, "detail": {}, "added_steps": 60}
        return obs, r, term, trunc, info


def test_a_perturbation_that_adds_work_extends_the_rollout_and_a_whole_episode_attempt():
    """Two subgoals of 45 steps each need 90 of the 40 + 60 steps: the rollout reads the grown limit, and an agent
    whose attempt spans the episode (subgoal_step_budget None, as the flat baselines) gets the 60 steps too."""
    env, ex, agent = make(PerturbedToyEnv(), need=45, subgoal_step_budget=None, max_attempts_per_subgoal=1)
    res = run_episode(env, agent, seed=0, record_video=False)
    assert res.summary["success"] is True and res.summary["steps"] == 90
    assert ex.calls == ["pick(a)", "pick(b)"]


def test_a_fixed_step_cap_is_not_extended_by_a_perturbation():
    env, ex, agent = make(PerturbedToyEnv(), need=45, subgoal_step_budget=None, max_attempts_per_subgoal=1)
    res = run_episode(env, agent, seed=0, record_video=False, max_steps=40)
    assert res.summary["success"] is False and res.summary["steps"] == 40


def test_extend_episode_leaves_a_per_attempt_budget_alone_and_refuses_a_negative_count():
    env, _, agent = make(subgoal_step_budget=7)
    agent.reset(env.spec, env.reset()[0])
    agent.extend_episode(100)
    assert agent._budget == 7
    with pytest.raises(Exception, match="steps must be >= 0"):
        agent.extend_episode(-1)
