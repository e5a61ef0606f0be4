"""Do lessons across episodes help? Success and attempts in episodes 1-10 against 41-50, per retry-policy arm.

Each arm runs the same sequence of seeds (0, 1, ..., N-1, in order) with the oracle planner and verifier and the
scripted executor, rendering off, every episode written to the arm's own memory store (``<out>/<arm>/memory.sqlite``):

* ``none``: no retry policy (tandem's default);
* ``escalation``: within an episode, the third attempt at a subgoal that slipped twice runs at half speed
  (``memory.slip_escalation=2``);
* ``lessons``: the same, plus lessons learned from the arm's earlier episodes (``memory.lessons=store``): a skill
  whose objects slipped in 2 earlier episodes and whose half-speed attempts succeeded more often than its
  full-speed ones runs at half speed from its first attempt.

The comparison that isolates the lessons is ``lessons`` against ``escalation`` in the late window (41-50): both
have the same seeds and the same in-episode rule; only the lessons differ. Episodes are deterministic given the
seed and the policy, so the numbers are exact for this machine's MuJoCo build, not samples of timing noise.

Example (the README's numbers)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/lessons_effect.py --task stack_three --perturb slip_fast \\
        --episodes 50 --out outputs/benchmarks/lessons_effect
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

ARMS: dict[str, dict[str, Any]] = {
    "none": {"slip_escalation": None, "lessons": None},
    "escalation": {"slip_escalation": 2, "lessons": None},
    "lessons": {"slip_escalation": 2, "lessons": "store"},
}


def window(rows: list[dict[str, Any]], first: int, last: int) -> dict[str, Any]:
    """Summary of episodes ``first..last`` (1-based, inclusive) of ``rows``."""
    sel = rows[first - 1: last]
    n = len(sel)
    if not n:
        return {"episodes": f"{first}-{last}", "n": 0}
    return {"episodes": f"{first}-{last}", "n": n, "successes": sum(r["success"] for r in sel),
            "mean_attempts": sum(r["attempts"] for r in sel) / n, "mean_steps": sum(r["steps"] for r in sel) / n,
            "mean_slips": sum(r["slips"] for r in sel) / n,
            "mean_slow_attempts": sum(r["slow_attempts"] for r in sel) / n}


def run_arm(name: str, args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """Run the arm's episodes in seed order; returns one row per episode."""
    from tandem.runtime.registry import build_stack
    from tandem.runtime.rollout import run_episode

    arm_dir = out / name
    arm_dir.mkdir(parents=True, exist_ok=True)
    db = arm_dir / "memory.sqlite"
    if db.exists():
        raise SystemExit(f"{db} exists: use a new --out (lessons would read the old episodes)")
    cfg = {"task": {"name": args.task}, "planner": {"name": "oracle"}, "verifier": {"name": "oracle"},
           "executor": {"name": "scripted"}, "goals": {"name": "none"}, "perturb": {"name": args.perturb},
           "env": {"render": False}, "agent": {}, "memory": ARMS[name]}
    stack = build_stack(cfg)
    rows = []
    try:
        for k, seed in enumerate(range(args.seed_start, args.seed_start + args.episodes), 1):
            res = run_episode(stack.env, stack.agent, seed=seed, record_video=False, memory_db=db,
                              meta={"config": cfg, "arm": name})
            s = res.summary
            slow = sum(1 for r in stack.agent.memory.attempt_records if r.params.get("speed_scale", 1.0) < 1.0)
            rows.append({"episode": k, "seed": seed, "success": bool(s["success"]), "attempts": s["attempts"],
                         "steps": s["steps"], "failure": s["failure"], "slips": len(s["perturbations"]),
                         "slow_attempts": slow})
            print(f"{name:>10s} ep {k:2d} seed {seed:3d}  success {int(s['success'])}  attempts {s['attempts']:2d}  "
                  f"steps {s['steps']:4d}  slips {len(s['perturbations'])}  slow {slow}", flush=True)
    finally:
        stack.close()
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="stack_three")
    p.add_argument("--perturb", default="slip_fast")
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--seed-start", type=int, default=0)
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated subset of {list(ARMS)}")
    p.add_argument("--out", default="outputs/benchmarks/lessons_effect")
    args = p.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    out = Path(args.out)
    result: dict[str, Any] = {"task": args.task, "perturb": args.perturb, "episodes": args.episodes,
                              "seed_start": args.seed_start, "arms": {}}
    t0 = time.time()
    for name in args.arms.split(","):
        if name not in ARMS:
            raise SystemExit(f"unknown arm {name!r}; known: {list(ARMS)}")
        rows = run_arm(name, args, out)
        last = args.episodes
        result["arms"][name] = {"memory": ARMS[name], "early": window(rows, 1, min(10, last)),
                                "late": window(rows, max(last - 9, 1), last), "all": window(rows, 1, last),
                                "rows": rows}
    result["wall_time_s"] = round(time.time() - t0, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2))
    for name, arm in result["arms"].items():
        for w in ("early", "late"):
            s = arm[w]
            print(f"{name:>10s} episodes {s['episodes']:>5s}: success {s['successes']}/{s['n']}  attempts "
                  f"{s['mean_attempts']:.2f}  steps {s['mean_steps']:.0f}  slips {s['mean_slips']:.2f}")
    print(f"wrote {out / 'result.json'}")


if __name__ == "__main__":
    main()
