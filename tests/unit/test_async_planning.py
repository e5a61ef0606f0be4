"""Asynchronous planning: the control loop never waits on the planner (fakes, no wall-clock assertions).

The planner is gated on a semaphore: it blocks in ``plan`` until the test releases it. Every assertion that the
loop "did not wait" is a count of ``act`` calls that returned while the planner was provably still blocked, so the
tests do not depend on the speed of the machine. Real timing is in ``benchmarks/async_planning_jitter.py``.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memory.task_memory import TaskMemoryV1
from tandem.core.errors import ConfigError, PlanParseError
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec, Verdict
from tandem.runtime.agent import HierarchicalAgent
from tandem.runtime.config import AgentConfig
from tandem.runtime.planning_worker import BufferedMemory, PlanningWorker

SPEC = TaskSpec(name="toy", instruction="put a then b away", objects=("a", "b"), max_steps=10_000,
                skills={"pick": "held({0})", "place": "done({0})"}, goals=("done(a)", "done(b)"))
REFERENCE = [("pick", "a"), ("place", "a"), ("pick", "b"), ("place", "b")]
HOLD = np.zeros(7, np.float32)


class World:
    """Each subgoal is achieved after ``need`` executor steps (unless listed in ``fail_once``, first attempt)."""

    def __init__(self, need=3, fail_once=()):
        self.need, self.fail_once, self.achieved, self.t, self.tried = need, set(fail_once), [], 0, set()

    def obs(self):
        return Observation(images={}, proprio=np.zeros(8), t=self.t * 0.05, step=self.t)

    def step(self):
        self.t += 1
        return self.obs()


class GatedPlanner:
    """Plans the reference order (or ``order``) of what is not achieved; blocks in ``plan`` until released."""

    source = "gated"
    grounding = None

    def read_goals(self, observation, memory):  # it grounds no goals, so it reads none
        return None
    is_oracle = False

    def __init__(self, world, gated=True):
        self.world, self.gated = world, gated
        self.permits = threading.Semaphore(0)
        self.entered: list[int] = []  # observation step of each call, when it entered / returned
        self.returned: list[int] = []
        self.cv = threading.Condition()
        self.threads: list[str] = []
        self.order = list(REFERENCE)
        self.error: Exception | None = None

    def reset(self, task):
        self.n = 0

    def plan(self, obs, memory):
        self.threads.append(threading.current_thread().name)
        with self.cv:
            self.entered.append(obs.step)
            self.cv.notify_all()
        if self.gated:
            assert self.permits.acquire(timeout=30), "the test never released the planner"
        if self.error is not None:
            raise self.error
        memory.record_event("planner_note", obs.step, n=len(self.threads))
        done, rem = [], []
        for skill, obj in self.order:
            self.n += 1
            sg = Subgoal(f"sg{self.n}", skill, (obj,), f"{skill} {obj}")
            (done if sg.signature in self.world.achieved else rem).append(sg)
        self.returned.append(obs.step)
        return Plan(done=done, remaining=rem)

    def blocked(self) -> bool:
        """Entered ``plan`` and not returned from it."""
        return len(self.entered) > len(self.returned)

    def wait_entered(self, n: int) -> list[int]:
        """Wait (test thread) until ``plan`` was entered ``n`` times; returns the steps it was called at."""
        with self.cv:
            assert self.cv.wait_for(lambda: len(self.entered) >= n, timeout=30)
            return list(self.entered)


class Executor:
    is_oracle = False

    def __init__(self, world):
        self.world, self.started = world, []

    def reset(self):
        self.k, self.sg = 0, None

    def set_subgoal(self, subgoal, task):
        self.sg, self.k = subgoal, 0
        self.started.append((subgoal.signature, self.world.t))

    def select_action(self, obs):
        self.k += 1
        sig = self.sg.signature
        if self.k == self.world.need:
            if sig in self.world.fail_once and sig not in self.world.tried:
                self.world.tried.add(sig)
            elif sig not in self.world.achieved:
                self.world.achieved.append(sig)
        return np.full(7, 0.5, np.float32)

    def subgoal_done(self):
        return self.k >= self.world.need


class Verifier:
    is_oracle = False

    def __init__(self, world):
        self.world = world

    def reset(self, task, memory):
        pass

    def verify(self, before, after, subgoal):
        ok = subgoal.signature in self.world.achieved
        return Verdict(ok, 1.0, "ok" if ok else f"{subgoal.signature} not achieved", "oracle")


def make(world=None, gated=True, **cfg):
    world = world or World()
    planner = GatedPlanner(world, gated)
    ex = Executor(world)
    agent = HierarchicalAgent(planner, Verifier(world), ex, TaskMemoryV1(),
                              config=AgentConfig(async_planning=True, **cfg), hold_action=HOLD)
    return world, planner, ex, agent


def release(agent, planner):
    """Let the blocked planner return and wait (test thread only) until its result is ready to be polled."""
    planner.permits.release()
    assert agent._worker.wait_done(timeout_s=30)


def is_hold(a) -> bool:
    return a is not None and np.array_equal(a, HOLD)


def test_hold_action_until_the_first_plan_and_the_loop_never_waits():
    world, planner, ex, agent = make()
    agent.reset(SPEC, world.obs())
    assert planner.wait_entered(1) == [0]  # the planner runs, in the background
    actions = []
    for _ in range(200):  # 200 control periods while the planner is blocked: act returns every time
        actions.append(agent.act(world.obs()))
        world.step()
    assert planner.blocked() and all(is_hold(a) for a in actions)
    assert agent.status.hold_steps == 200 and agent.status.plans == 0 and agent.subgoal is None
    release(agent, planner)
    a = agent.act(world.obs())
    assert not is_hold(a) and agent.subgoal.signature == "pick(a)" and agent.status.plans == 1
    assert planner.threads[0].startswith("tandem-planner") and threading.current_thread().name not in planner.threads
    assert [e["kind"] for e in agent.memory.events()].count("planner_note") == 1  # its write reached memory


def test_after_a_success_the_executor_goes_on_while_the_planner_works():
    world, planner, ex, agent = make(World(need=5))
    agent.reset(SPEC, world.obs())
    release(agent, planner)
    for _ in range(5):  # pick(a): 5 steps
        agent.act(world.obs())
        world.step()
    a = agent.act(world.obs())  # verdict on pick(a): success -> new request, and place(a) from the current plan
    world.step()
    assert len(planner.wait_entered(2)) == 2 and planner.blocked()
    assert not is_hold(a) and agent.subgoal.signature == "place(a)"
    n_started = len(ex.started)
    for _ in range(2):
        assert not is_hold(agent.act(world.obs()))
        world.step()
    release(agent, planner)
    assert not is_hold(agent.act(world.obs()))
    assert agent.status.plans == 2 and len(ex.started) == n_started  # the new plan agrees: no restart


def test_after_a_failure_the_agent_holds_until_the_new_plan():
    world, planner, ex, agent = make(World(need=2, fail_once={"pick(a)"}))
    agent.reset(SPEC, world.obs())
    release(agent, planner)
    for _ in range(2):
        agent.act(world.obs())
        world.step()
    holds = [agent.act(world.obs()) for _ in range(50)]  # failure verdict, then the planner is blocked
    planner.wait_entered(2)
    assert all(is_hold(a) for a in holds) and planner.blocked() and agent.subgoal is None
    assert agent.status.verdicts[-1]["success"] is False
    release(agent, planner)
    assert not is_hold(agent.act(world.obs())) and agent.subgoal.signature == "pick(a)"
    assert agent.status.replans == 1 and agent.memory.attempts("pick(a)") == 2


def test_a_plan_made_before_a_later_verdict_is_discarded():
    world, planner, ex, agent = make(World(need=2))
    agent.reset(SPEC, world.obs())
    release(agent, planner)
    for _ in range(5):  # pick(a) done (request 2 blocked), place(a) done locally (request 3 queued)
        agent.act(world.obs())
        world.step()
    assert world.achieved == ["pick(a)", "place(a)"] and agent.subgoal.signature == "pick(b)"
    release(agent, planner)  # request 2 returns: made before the place(a) verdict
    agent.act(world.obs())
    assert agent.status.plans_discarded == 1 and agent.status.plans == 1
    assert any(e["kind"] == "plan_discarded" for e in agent.memory.events())
    assert planner.wait_entered(3) == [0, 2, 4]  # request 3 started from the queue, with the later state
    release(agent, planner)
    agent.act(world.obs())
    assert agent.status.plans == 2


def test_a_different_plan_takes_effect_at_the_next_chunk_boundary():
    world, planner, ex, agent = make(World(need=10), plan_switch_steps=4)
    agent.reset(SPEC, world.obs())
    release(agent, planner)
    agent.act(world.obs())  # pick(a) step 1
    world.step()
    planner.order = [("pick", "b"), ("place", "b"), ("pick", "a"), ("place", "a")]
    agent._request_plan(world.obs())  # e.g. a periodic replan: the planner now wants b first
    release(agent, planner)
    for _ in range(2):  # steps 2 and 3 of pick(a): the new plan waits for the chunk boundary
        assert agent.act(world.obs()) is not None and agent.subgoal.signature == "pick(a)"
        world.step()
    agent.act(world.obs())  # the 4th action of pick(a) completes the chunk
    assert agent.subgoal.signature == "pick(a)" and ex.k == 4
    agent.act(world.obs())  # at the boundary (4 % 4 == 0) the pending plan takes over before acting
    assert agent.subgoal.signature == "pick(b)" and ex.started[-1][0] == "pick(b)"
    interrupted = agent.status.verdicts[-1]
    assert interrupted["subgoal"] == "pick(a)" and interrupted["reason"].startswith("interrupted by a new plan")


def test_planner_error_ends_the_episode_like_the_synchronous_loop():
    world, planner, ex, agent = make(gated=False)
    planner.error = PlanParseError("no JSON object in the reply", "blah")
    agent.reset(SPEC, world.obs())
    assert agent._worker.wait_done(timeout_s=30)
    assert agent.act(world.obs()) is None
    assert agent.status.finished and agent.status.end_reason.startswith("planner failed")


def test_async_needs_a_hold_action():
    world = World()
    with pytest.raises(ConfigError, match="hold_action"):
        HierarchicalAgent(GatedPlanner(world), Verifier(world), Executor(world), TaskMemoryV1(),
                          config=AgentConfig(async_planning=True))


def test_buffered_memory_reads_a_snapshot_and_replays_writes_on_the_control_thread():
    mem = TaskMemoryV1()
    mem.start_episode(SPEC)
    buf = BufferedMemory(mem.snapshot())
    mem.record_attempt(Subgoal("x", "pick", ("a",), "pick a"), 1)  # later than the snapshot
    assert buf.attempts(Subgoal("y", "pick", ("a",), "pick a")) == 0 and mem.attempts("pick(a)") == 1
    buf.record_event("vlm_fallback", 2, reason="r")
    buf.record_fact("a", "looks wet", 2)
    assert [e["kind"] for e in mem.events()][-1] == "attempt"
    buf.replay_onto(mem)
    assert [e["kind"] for e in mem.events()][-2:] == ["vlm_fallback", "fact"] and buf.writes == []
    with pytest.raises(ConfigError, match="record_event / record_fact"):
        buf.record_plan(Plan(), 0, "x")


def test_worker_keeps_only_the_latest_queued_request():
    world = World()
    planner = GatedPlanner(world)
    worker = PlanningWorker(planner)
    mem = TaskMemoryV1()
    mem.start_episode(SPEC)
    planner.reset(SPEC)
    ids = [worker.submit(world.step(), mem.snapshot(), tag=i) for i in range(4)]
    assert worker.poll() is None and worker.busy and worker.dropped == 2
    planner.permits.release()
    assert worker.wait_done(30)
    first = worker.poll()
    assert first.request_id == ids[0] and first.tag == 0 and first.plan is not None
    planner.permits.release()
    assert worker.wait_done(30)
    assert worker.poll().tag == 3 and not worker.busy
    worker.close()
