"""Success rate of the privileged scripted expert (``sim.experts.ScriptedExecutor``) on a task.

For each seed the expert executes the task's reference subgoal sequence (``TaskDefinition.reference_subgoals``:
e.g. pick/stack in goal order), without cameras. A subgoal counts as successful when its predicate
(``TaskSpec.predicate_for``) holds when the expert reports it done; the episode when every goal predicate holds
at the end. Writes JSON.

Usage:
    MUJOCO_GL=egl python benchmarks/expert_success.py --task stack_three --seeds 50 --out outputs/expert_stack_three.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")


def run(task: str, seeds: list[int], subgoal_budget: int, skills: set[str] | None = None) -> dict[str, Any]:
    from sim.experts import ScriptedExecutor
    from sim.robosuite_env import RobosuiteEnv
    from tandem.core.errors import TandemError
    from tandem.core.types import Subgoal

    env = RobosuiteEnv(task, render=False)
    ex = ScriptedExecutor(env)
    per_skill: dict[str, dict[str, int]] = {}
    episodes = []
    total_steps = 0
    t0 = time.perf_counter()
    for seed in seeds:
        row: dict[str, Any] = {"seed": seed, "subgoals": [], "steps": 0, "success": False, "error": None}
        try:
            obs, _ = env.reset(seed)
            row["instruction"] = env.spec.instruction
            info: dict[str, Any] = {"success": False}
            for i, (skill, args) in enumerate(env.task_def.reference_subgoals(env.episode)):
                if skills is not None and skill not in skills:  # not executed; whether its goal holds anyway
                    holds = bool(obs.privileged["predicates"].get(env.spec.predicate_for(skill, args), False))
                    row["subgoals"].append({"subgoal": f"{skill}{tuple(args)}", "skipped": True, "holds": holds})
                    continue
                sg = Subgoal(id=f"sg{i}", skill=skill, args=args, text=env.spec.subgoal_text(skill, args))
                ex.set_subgoal(sg, env.spec)
                n = 0
                while not ex.subgoal_done() and n < subgoal_budget:
                    obs, _, _, _, info = env.step(ex.select_action(obs))
                    n += 1
                ok = bool(obs.privileged["predicates"].get(env.spec.predicate_for(skill, args), False))
                row["subgoals"].append({"subgoal": sg.signature, "ok": ok, "steps": n})
                stats = per_skill.setdefault(skill, {"attempts": 0, "successes": 0})
                stats["attempts"] += 1
                stats["successes"] += int(ok)
                row["steps"] += n
            row["success"] = bool(obs.privileged["success"])
        except TandemError as e:  # unstable sim, placement failure: a failed episode, not a crash
            row["error"] = f"{type(e).__name__}: {e}"
        total_steps += row["steps"]
        episodes.append(row)
        print(f"seed {seed}: success={row['success']} steps={row['steps']}"
              + (f" error={row['error']}" if row["error"] else ""), file=sys.stderr, flush=True)
    wall = time.perf_counter() - t0
    env.close()
    steps = [e["steps"] for e in episodes if e["success"]]
    return {
        "benchmark": "expert_success",
        "task": task,
        "n_seeds": len(seeds),
        "seeds": seeds,
        "success_rate": sum(e["success"] for e in episodes) / max(len(episodes), 1),
        "per_skill": {k: {**v, "rate": v["successes"] / max(v["attempts"], 1)} for k, v in per_skill.items()},
        "steps_successful": {
            "mean": statistics.fmean(steps) if steps else None,
            "median": statistics.median(steps) if steps else None,
            "max": max(steps) if steps else None,
        },
        "failed_seeds": [e["seed"] for e in episodes if not e["success"]],
        "wall_s": round(wall, 2),
        "env_steps_per_s": round(total_steps / wall, 1) if wall > 0 else None,
        "episodes": episodes,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="stack_three")
    p.add_argument("--seeds", type=int, default=50, help="number of seeds")
    p.add_argument("--seed-start", type=int, default=0)
    p.add_argument("--subgoal-budget", type=int, default=400, help="max control steps per subgoal")
    p.add_argument("--skills", default=None,
                   help="comma-separated skills to execute (e.g. pick,put_in,put_on); the other reference subgoals "
                        "are skipped, recording whether their goal holds anyway")
    p.add_argument("--out", type=Path, default=None, help="JSON output path (stdout if omitted)")
    a = p.parse_args(argv)
    skills = set(a.skills.split(",")) if a.skills else None
    result = run(a.task, list(range(a.seed_start, a.seed_start + a.seeds)), a.subgoal_budget, skills)
    text = json.dumps(result, indent=2)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text)
    summary = {k: result[k] for k in ("task", "n_seeds", "success_rate", "per_skill", "steps_successful", "failed_seeds",
                                      "wall_s", "env_steps_per_s")}
    print(json.dumps(summary, indent=2) if a.out else text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
