"""Control-period jitter with a deliberately slow (2 s) planner: synchronous vs asynchronous planning, one run.

A fixed-rate control loop (default 20 Hz: a 50 ms period) drives a ``HierarchicalAgent`` and sleeps to each next
deadline. The planner takes ``--planner-delay`` seconds per plan, either sleeping (``io``: like a VLM behind an
HTTP server; the GIL is released) or burning pure-Python CPU (``cpu``: the worst case for a thread, which then
holds the GIL in 5 ms slices). Per mode it reports, over all control periods:

* ``max_jitter_ms``: the largest lateness of a period start against its deadline schedule
  (``t_k - (t_0 + k * period)``, reset after a late period so one stall counts once);
* ``max_period_ms`` / ``p99_period_ms``: the time between consecutive period starts (the resets between
  episodes left out);
* ``stalls``: periods longer than 2 control periods; ``max_act_ms``: the slowest ``agent.act`` call;
* ``hold_steps``: periods in which the asynchronous agent sent its hold action (no plan yet / after a failure).

Modes (all in the same run): ``baseline`` (a planner without delay: the loop's own jitter floor on this machine),
``sync`` (the slow planner called inside ``act``), ``async`` (``io`` planner in the worker thread), ``async_cpu``
(``cpu`` planner in the worker thread). ``max_env_step_ms`` shows how much of a late period the env step took.

Environments: ``--env fake`` (default; a 1-D toy world whose step costs ``--step-ms`` of numpy work, each subgoal
40 steps) or ``--env sim`` (robosuite stack_three, rendering off, oracle planner behind the delay, scripted
executor). Output: JSON (stdout and ``--out``).

Example (the README's numbers)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/async_planning_jitter.py --periods 400 \\
        --out outputs/benchmarks/async_planning_jitter.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from memory.task_memory import TaskMemoryV1
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec, Verdict
from tandem.runtime.agent import HierarchicalAgent
from tandem.runtime.config import AgentConfig

TOY = TaskSpec(name="toy", instruction="put a, b, c and d away", objects=("a", "b", "c", "d"), max_steps=100_000,
               skills={"pick": "held({0})", "place": "done({0})"}, goals=tuple(f"done({o})" for o in "abcd"))


class SlowPlanner:
    """Wraps a planner; every ``plan`` takes ``delay_s`` more: sleeping (``io``) or busy in Python (``cpu``)."""

    def __init__(self, inner: Any, delay_s: float, kind: str):
        self.inner, self.delay_s, self.kind = inner, delay_s, kind
        self.source = inner.source
        self.grounding = inner.grounding
        self.is_oracle = inner.is_oracle  # it hands the inner planner the observation it gets

    def reset(self, task: TaskSpec) -> None:
        self.inner.reset(task)

    def plan(self, observation: Observation, memory: Any) -> Plan:
        t_end = time.perf_counter() + self.delay_s
        if self.kind == "io":
            time.sleep(self.delay_s)
        else:
            x = 0
            while time.perf_counter() < t_end:
                x += 1
        return self.inner.plan(observation, memory)

    def read_goals(self, observation: Observation, memory: Any) -> Any:
        """The inner planner's read of the goals (no delay: only plans are slowed down)."""
        return self.inner.read_goals(observation, memory)


class ToyWorld:
    """Subgoals ``pick(o)``, ``place(o)`` for o in a..d, each achieved after ``need`` executor steps."""

    action_dim = 7

    def __init__(self, need: int, step_ms: float):
        self.need, self.step_ms = need, step_ms
        self.spec = TOY

    def reset(self, seed: int | None = None) -> tuple[Observation, dict]:
        self.t, self.achieved = 0, []
        return self._obs(), {}

    def _obs(self) -> Observation:
        return Observation(images={}, proprio=np.zeros(8, np.float32), t=self.t * 0.05, step=self.t)

    def step(self, action: np.ndarray) -> tuple[Observation, float, bool, bool, dict]:
        t_end = time.perf_counter() + self.step_ms / 1e3
        a = np.ones((64, 64))
        while time.perf_counter() < t_end:  # stand-in for physics and rendering
            a = a @ a * 1e-3
        self.t += 1
        done = len(self.achieved) == 8
        return self._obs(), 0.0, done, False, {"success": done}

    def close(self) -> None:
        pass


class ToyPlanner:
    source = "toy"
    is_oracle = False
    grounding = None

    def read_goals(self, observation, memory):  # it grounds no goals, so it reads none
        return None

    def __init__(self, world: ToyWorld):
        self.world = world

    def reset(self, task: TaskSpec) -> None:
        self.n = 0

    def plan(self, observation: Observation, memory: Any) -> Plan:
        done, rem = [], []
        for o in "abcd":
            for skill in ("pick", "place"):
                self.n += 1
                sg = Subgoal(f"sg{self.n}", skill, (o,), f"{skill} {o}")
                (done if sg.signature in self.world.achieved else rem).append(sg)
        return Plan(done=done, remaining=rem)


class ToyExecutor:
    is_oracle = False

    def __init__(self, world: ToyWorld):
        self.world = world

    def reset(self) -> None:
        self.k = 0

    def set_subgoal(self, subgoal: Subgoal, task: TaskSpec) -> None:
        self.sg, self.k = subgoal, 0

    def select_action(self, observation: Observation) -> np.ndarray:
        self.k += 1
        if self.k == self.world.need and self.sg.signature not in self.world.achieved:
            self.world.achieved.append(self.sg.signature)
        return np.full(7, 0.1, np.float32)

    def subgoal_done(self) -> bool:
        return self.k >= self.world.need


class ToyVerifier:
    is_oracle = False

    def __init__(self, world: ToyWorld):
        self.world = world

    def reset(self, task: TaskSpec, memory: Any) -> None:
        pass

    def verify(self, before: Observation, after: Observation, subgoal: Subgoal) -> Verdict:
        ok = subgoal.signature in self.world.achieved
        return Verdict(ok, 1.0, "ok" if ok else "not achieved", "oracle")


def build(env_kind: str, mode: str, args: argparse.Namespace) -> tuple[Any, HierarchicalAgent]:
    """(env, agent) for ``mode`` in ``sync``, ``async``, ``async_cpu``."""
    kind = "cpu" if mode == "async_cpu" else "io"
    config = AgentConfig(async_planning=mode.startswith("async"), max_plans=1000, subgoal_step_budget=400)
    delay = 0.0 if mode == "baseline" else args.planner_delay
    hold = np.zeros(7, np.float32)
    if env_kind == "fake":
        world = ToyWorld(args.subgoal_steps, args.step_ms)
        planner = SlowPlanner(ToyPlanner(world), delay, kind)
        agent = HierarchicalAgent(planner, ToyVerifier(world), ToyExecutor(world), TaskMemoryV1(), config=config,
                                  hold_action=hold)
        return world, agent
    from tandem.runtime.registry import build_stack

    stack = build_stack({"task": {"name": "stack_three"}, "planner": {"name": "oracle"},
                         "verifier": {"name": "oracle"}, "executor": {"name": "scripted"}, "goals": {"name": "none"},
                         "perturb": {"name": "none"}, "env": {"render": False}, "agent": {}})
    agent = HierarchicalAgent(SlowPlanner(stack.agent.planner, delay, kind), stack.agent.verifier,
                              stack.agent.executor, TaskMemoryV1(), config=config, hold_action=hold)
    return stack.env, agent


def run_mode(env_kind: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run the fixed-rate loop for ``args.periods`` control periods (new episodes as needed)."""
    env, agent = build(env_kind, mode, args)
    period = 1.0 / args.rate_hz
    starts, act_s, env_s = [], [], []
    lateness = []
    boundaries = set()  # period indices whose next period starts after an episode reset
    seed = 0
    obs, _ = env.reset(seed=seed)
    agent.reset(env.spec, obs)
    t0 = time.perf_counter()
    deadline = t0
    for _ in range(args.periods):
        now = time.perf_counter()
        starts.append(now)
        lateness.append(now - deadline)
        if now - deadline > period:  # count a stall once: the schedule restarts from here
            deadline = now
        a0 = time.perf_counter()
        action = agent.act(obs)
        act_s.append(time.perf_counter() - a0)
        if action is None:  # episode over: start the next one (not timed as a control period)
            boundaries.add(len(starts) - 1)
            seed += 1
            obs, _ = env.reset(seed=seed)
            agent.reset(env.spec, obs)
            deadline = time.perf_counter() + period
            continue
        e0 = time.perf_counter()
        obs, _r, term, trunc, _info = env.step(action)
        env_s.append(time.perf_counter() - e0)
        deadline += period
        sleep = deadline - time.perf_counter()
        if sleep > 0:
            time.sleep(sleep)
    periods = np.asarray([b - a for k, (a, b) in enumerate(zip(starts, starts[1:])) if k not in boundaries]) * 1e3
    late = np.asarray(lateness) * 1e3
    acts = np.asarray(act_s) * 1e3
    plan_lat = np.asarray(agent.status.plan_latency_s) * 1e3
    if hasattr(env, "close"):
        env.close()
    agent.close()
    return {
        "mode": mode, "planner_kind": "cpu" if mode == "async_cpu" else "io", "periods": int(args.periods),
        "planner_delay_s": 0.0 if mode == "baseline" else args.planner_delay,
        "episodes": seed + 1, "plans_last_episode": agent.status.plans,
        "max_jitter_ms": float(late.max()), "p99_jitter_ms": float(np.percentile(late, 99)),
        "max_period_ms": float(periods.max()), "p99_period_ms": float(np.percentile(periods, 99)),
        "p50_period_ms": float(np.percentile(periods, 50)),
        "stalls": int((periods > 2 * period * 1e3).sum()),
        "max_act_ms": float(acts.max()), "p50_act_ms": float(np.percentile(acts, 50)),
        "max_env_step_ms": float(np.max(env_s) * 1e3), "p50_env_step_ms": float(np.percentile(env_s, 50) * 1e3),
        "plan_latency_ms_p50": float(np.percentile(plan_lat, 50)) if plan_lat.size else None,
        "hold_steps_last_episode": agent.status.hold_steps,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", choices=("fake", "sim"), default="fake")
    p.add_argument("--modes", default="baseline,sync,async,async_cpu")
    p.add_argument("--rate-hz", type=float, default=20.0)
    p.add_argument("--planner-delay", type=float, default=2.0, help="seconds per plan")
    p.add_argument("--periods", type=int, default=400, help="control periods per mode")
    p.add_argument("--subgoal-steps", type=int, default=40, help="fake env: executor steps per subgoal")
    p.add_argument("--step-ms", type=float, default=2.0, help="fake env: compute per env step (ms)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    result = {"env": args.env, "rate_hz": args.rate_hz, "control_period_ms": 1e3 / args.rate_hz,
              "planner_delay_s": args.planner_delay, "machine": {"cpus": os.cpu_count(), "python":
              platform.python_version(), "loadavg_start": list(os.getloadavg())}, "modes": {}}
    for mode in args.modes.split(","):
        result["modes"][mode] = run_mode(args.env, mode, args)
        m = result["modes"][mode]
        print(f"{mode:>9s}: max jitter {m['max_jitter_ms']:8.1f} ms  max period {m['max_period_ms']:8.1f} ms  "
              f"p99 period {m['p99_period_ms']:6.1f} ms  stalls {m['stalls']}  max act {m['max_act_ms']:8.1f} ms  "
              f"max env step {m['max_env_step_ms']:6.1f} ms", flush=True)
    result["machine"]["loadavg_end"] = list(os.getloadavg())
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
