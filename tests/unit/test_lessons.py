"""Lessons across episodes change the retry policy in a scripted failure scenario (fakes, real agent + memory)."""

from __future__ import annotations

import numpy as np
import pytest

from memory.lessons import LessonBook, RetryRules, learn_lessons, retry_policy
from memory.records import FailureCause
from memory.store import MemoryStore
from memory.task_memory import TaskMemoryV1
from tandem.core.types import Observation, Plan, RetryPolicy, Subgoal, TaskSpec, Verdict
from tandem.runtime.agent import HierarchicalAgent
from tandem.runtime.config import AgentConfig
from tandem.runtime.rollout import run_episode

SPEC = TaskSpec(name="toy_slip", instruction="pick a and place it", objects=("a",), max_steps=400,
                skills={"pick": "grasped({0})", "place": "done({0})"}, goals=("done(a)",))
#: A carried object slips when an action component exceeds this (the executor commands 1.0: full speed).
SLIP_ACTION = 0.6


class SlipWorld:
    """1-D toy env: placing ``a`` takes 5 steps; if any of them moves faster than SLIP_ACTION, ``a`` slips."""

    action_dim = 7
    action_low, action_high = -np.ones(7, np.float32), np.ones(7, np.float32)

    def __init__(self):
        self.spec = SPEC
        self.skill = None

    def reset(self, seed=None):
        self.t, self.held, self.done, self.slipped = 0, False, False, False
        return self._obs(), {}

    def _obs(self):
        return Observation(images={}, proprio=np.zeros(8), t=self.t * 0.05, step=self.t)

    def step(self, action):
        self.t += 1
        if self.skill == "pick":
            self.held = True
        elif self.skill == "place" and self.held and np.max(np.abs(action[:6])) > SLIP_ACTION:
            self.held, self.slipped = False, True
        return self._obs(), 0.0, False, False, {"success": self.done}


class Planner:
    source = "oracle"
    grounding = None

    def read_goals(self, observation, memory):  # it grounds no goals, so it reads none
        return None
    is_oracle = False

    def __init__(self, world):
        self.world = world

    def reset(self, task):
        self.n = 0

    def plan(self, obs, memory):
        self.n += 1
        pick, place = Subgoal(f"p{self.n}", "pick", ("a",), "pick a"), Subgoal(f"q{self.n}", "place", ("a",), "place a")
        if self.world.done:
            return Plan(done=[pick, place])
        return Plan(done=[pick], remaining=[place]) if self.world.held else Plan(remaining=[pick, place])


class Executor:
    is_oracle = False

    def __init__(self, world):
        self.world = world

    def reset(self):
        self.k = 0

    def set_subgoal(self, subgoal, task):
        self.world.skill, self.world.slipped, self.k = subgoal.skill, False, 0

    def select_action(self, obs):
        self.k += 1
        if self.k == 5 and self.world.skill == "place" and self.world.held:
            self.world.done = True
        a = np.ones(7, np.float32)
        a[6] = 1.0  # gripper closed: never scaled
        return a

    def subgoal_done(self):
        return self.k >= 5


class Verifier:
    is_oracle = False

    def __init__(self, world):
        self.world = world

    def reset(self, task, memory):
        pass

    def verify(self, before, after, subgoal):
        if subgoal.skill == "pick":
            return Verdict(self.world.held, 1.0, "grasped(a) holds" if self.world.held else "grasped(a) is false", "oracle")
        if self.world.done:
            return Verdict(True, 1.0, "done(a) holds", "oracle")
        return Verdict(False, 1.0, "done(a) is false: a is at (0.10, 0.00, 0.82), 0.30 m from the gripper, moved "
                                   "0.20 m during the attempt", "oracle")


def run_sequence(tmp_path, lessons, n=4, escalation=2):
    world = SlipWorld()
    memory = TaskMemoryV1(lessons=lessons, rules=RetryRules(slip_escalation=escalation))
    agent = HierarchicalAgent(Planner(world), Verifier(world), Executor(world), memory,
                              config=AgentConfig(max_attempts_per_subgoal=4, subgoal_step_budget=20))
    out = []
    for seed in range(n):
        res = run_episode(world, agent, seed=seed, memory_db=tmp_path / "memory.sqlite", stop_on_success=False)
        places = [a for a in memory.attempt_records if a.signature == "place(a)"]
        out.append({"success": res.summary["success"], "place_speeds":
                    [a.params.get("speed_scale", 1.0) for a in places],
                    "reasons": [a.params.get("reason", "") for a in places], "hints": memory.view()["hints"]})
    return out


def test_lessons_make_the_learned_recovery_the_first_attempt(tmp_path):
    eps = run_sequence(tmp_path, lessons="store")
    assert all(e["success"] for e in eps)
    # episodes 1 and 2: two slips at full speed, then the in-episode rule slows the third attempt down
    assert eps[0]["place_speeds"] == eps[1]["place_speeds"] == [1.0, 1.0, 0.5]
    assert eps[0]["reasons"][2] == "2 slips of place(a) in this episode"
    # episode 3 on: two earlier episodes with slips; after a slip, slowed-down retries 2/2, plain ones 0/2
    assert eps[2]["place_speeds"] == eps[3]["place_speeds"] == [0.5]
    assert eps[2]["reasons"][0] == ("lesson: place slipped in 2 of 2 earlier episodes; after a slip, slowed-down "
                                    "retries succeeded 2/2, plain retries 0/2")
    assert any("it now runs at 0.5x speed from the first attempt" in h for h in eps[2]["hints"])
    store = MemoryStore(tmp_path / "memory.sqlite")
    assert [e.status for e in store.episodes()] == ["finished"] * 4


def test_without_lessons_every_episode_pays_for_the_slips_again(tmp_path):
    eps = run_sequence(tmp_path, lessons=None)
    assert [e["place_speeds"] for e in eps] == [[1.0, 1.0, 0.5]] * 4
    assert all(e["hints"] == [] for e in eps)


def test_without_the_in_episode_rule_there_is_nothing_to_learn(tmp_path):
    eps = run_sequence(tmp_path, lessons="store", escalation=None, n=3)
    assert [e["place_speeds"] for e in eps] == [[1.0] * 4] * 3 and not any(e["success"] for e in eps)


def test_lessons_from_a_frozen_store_path(tmp_path):
    run_sequence(tmp_path / "train", lessons="store", n=2)
    # a new run reading lessons from the finished one: slow from the first episode, train store untouched
    eps = run_sequence(tmp_path / "test", lessons=tmp_path / "train" / "memory.sqlite", n=1)
    assert eps[0]["place_speeds"] == [0.5]
    assert len(MemoryStore(tmp_path / "train" / "memory.sqlite").episodes()) == 2


def test_speed_scale_applies_to_motion_but_not_to_the_gripper():
    world = SlipWorld()
    memory = TaskMemoryV1()
    agent = HierarchicalAgent(Planner(world), Verifier(world), Executor(world), memory)
    memory.retry_policy = lambda sg: RetryPolicy(0.25, "test")  # type: ignore[method-assign]
    obs, _ = world.reset()
    agent.reset(SPEC, obs)
    a = agent.act(obs)
    assert a[:6] == pytest.approx([0.25] * 6) and a[6] == 1.0


def test_learn_lessons_counts_and_recoveries(tmp_path):
    run_sequence(tmp_path, lessons=None, n=3)
    store = MemoryStore(tmp_path / "memory.sqlite")
    lessons = LessonBook(store).for_task("toy_slip")
    assert lessons.n_episodes == 3
    place = lessons.skills["place"]
    assert (place.attempts.n, place.attempts.successes) == (9, 3)
    assert (place.full.n, place.full.successes, place.slow.n, place.slow.successes) == (6, 0, 3, 3)
    assert dict(place.failures) == {"grasp_slipped": 6} and place.slip_episodes == 3
    rec = place.recoveries["grasp_slipped"]
    assert (rec["retry"].n, rec["retry"].successes, rec["slow_retry"].n, rec["slow_retry"].successes) == (3, 0, 3, 3)
    assert "pick" in lessons.skills and not lessons.skills["pick"].failures
    again = learn_lessons("toy_slip", [store.records(e.id) for e in store.episodes()])
    assert again.to_json() == lessons.to_json()
    rules = RetryRules(slip_escalation=2)
    assert retry_policy("place(a)", [], lessons, rules).speed_scale == 0.5
    assert retry_policy("pick(a)", [], lessons, rules) == RetryPolicy()
    assert retry_policy("pick(a)", [("pick(a)", FailureCause.GRASP_SLIPPED)] * 2, None, rules).speed_scale == 0.5


def test_a_plain_retry_that_works_is_kept(tmp_path):
    """A one-off slip (e.g. the object was knocked out once) is recovered by a plain retry: no slowing down."""
    from memory.lessons import Lessons, Rate, SkillStats

    st = SkillStats("place", episodes=5, slip_episodes=5)
    st.recoveries["grasp_slipped"] = {"retry": Rate(5, 4), "slow_retry": Rate(2, 2)}
    lessons = Lessons("t", 5, {"place": st})
    assert retry_policy("place(a)", [], lessons, RetryRules(slip_escalation=2)) == RetryPolicy()
    st.recoveries["grasp_slipped"]["retry"] = Rate(5, 1)
    assert retry_policy("place(a)", [], lessons, RetryRules(slip_escalation=2)).speed_scale == 0.5


def test_bad_rules_are_refused():
    with pytest.raises(ValueError, match="slow_scale"):
        RetryRules(slow_scale=1.5)
    with pytest.raises(ValueError, match=">= 1"):
        RetryRules(slip_escalation=0)
