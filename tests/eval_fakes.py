"""Fake stacks for the evaluation-harness tests (``variant.builder: "eval_fakes:build_fake_stack"``).

A 1-D toy world with the real HierarchicalAgent and TaskMemoryV1: the task has goals ``done(a)``, ``done(b)``; the
reference plan is ``pick(a), place(a), pick(b), place(b)``; each subgoal takes ``need`` steps. Behaviour per seed is
set in the executor config (``cfg["executor"]``):

* ``fail_seeds``: the executor never achieves ``place(b)`` -> the agent gives up after 3 attempts (progress 3/4);
* ``unstable_seeds``: the env raises SimUnstableError at step 3 (a NaN simulation);
* ``exit_seeds``: the env calls ``os._exit(13)`` at step 2 (a crashed worker, outside run_episode's guard);
* ``sleep_s``: seconds slept per env step (to make an interrupt land mid-run).

``build_broken_stack`` raises at build time (a variant that cannot be built).
"""

from __future__ import annotations

import os
import time

import numpy as np

from memory.task_memory import TaskMemoryV1
from tandem.core.errors import SimUnstableError
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec, Verdict
from tandem.runtime.agent import AgentConfig, HierarchicalAgent
from tandem.runtime.registry import Stack

REFERENCE = [("pick", ("a",)), ("place", ("a",)), ("pick", ("b",)), ("place", ("b",))]
SPEC = TaskSpec(name="toy", instruction="put a then b away", objects=("a", "b"), max_steps=100,
                skills={"pick": "held({0})", "place": "done({0})"}, goals=("done(a)", "done(b)"))


class FakeEnv:
    action_dim = 7
    action_low = -np.ones(7, np.float32)
    action_high = np.ones(7, np.float32)

    def __init__(self, opts: dict):
        self.spec = SPEC
        self.opts = opts
        self.seed = None

    def reset(self, seed=None):
        self.seed, self.t, self.achieved = int(seed), 0, []
        return self._obs(), {}

    def _obs(self):
        return Observation(images={}, proprio=np.zeros(8), t=self.t * 0.05, step=self.t)

    def step(self, action):
        self.t += 1
        time.sleep(float(self.opts.get("sleep_s", 0.0)))
        if self.seed in self.opts.get("exit_seeds", []) and self.t >= 2:
            os._exit(13)
        if self.seed in self.opts.get("unstable_seeds", []) and self.t >= 3:
            raise SimUnstableError("qpos is NaN")
        done = all(f"place({o})" in self.achieved for o in ("a", "b"))
        return self._obs(), float(done), done, False, {"success": done}

    def close(self):
        pass


class FakePlanner:
    is_oracle = True
    source = "oracle"
    grounding = None

    def read_goals(self, observation, memory):  # it grounds no goals, so it reads none
        return None

    def __init__(self, env):
        self.env, self.n = env, 0

    def reset(self, task):
        self.n = 0

    def plan(self, obs, memory):
        rem, done = [], []
        for skill, args in REFERENCE:
            sig = f"{skill}({','.join(args)})"
            if sig not in self.env.achieved:
                self.n += 1
                rem.append(Subgoal(id=f"sg{self.n}", skill=skill, args=args, text=sig))
            else:
                done.append(Subgoal(id=f"done_{sig}", skill=skill, args=args, text=sig))
        return Plan(done=done, remaining=rem)


class FakeExecutor:
    is_oracle = False

    def __init__(self, env, need: int):
        self.env, self.need = env, need

    def reset(self):
        self.k = 0

    def set_subgoal(self, subgoal, task):
        self.sg, self.k = subgoal, 0

    def select_action(self, obs):
        self.k += 1
        if self.k == self.need:
            blocked = self.env.seed in self.env.opts.get("fail_seeds", []) and self.sg.signature == "place(b)"
            if not blocked:
                self.env.achieved.append(self.sg.signature)
        return np.zeros(7, np.float32)

    def subgoal_done(self):
        return self.k >= self.need


class FakeVerifier:
    is_oracle = True

    def __init__(self, env):
        self.env = env

    def reset(self, task, memory):
        pass

    def verify(self, before, after, subgoal):
        ok = subgoal.signature in self.env.achieved
        return Verdict(ok, 1.0, "ok" if ok else f"{subgoal.signature} not achieved", "oracle")


def build_fake_stack(cfg) -> Stack:
    opts = dict(cfg["executor"])
    env = FakeEnv(opts)
    agent = HierarchicalAgent(FakePlanner(env), FakeVerifier(env), FakeExecutor(env, int(opts.get("need", 3))),
                              TaskMemoryV1(), config=AgentConfig(max_attempts_per_subgoal=3, subgoal_step_budget=20))
    return Stack(env=env, agent=agent)


def build_broken_stack(cfg) -> Stack:
    raise RuntimeError("this variant's checkpoint is corrupt")
