"""Learned traces against the oracle's, pick by pick, in the closed loop: where do the learned picks go wrong?

Runs the non-privileged planner (``planner=learned``: state model and trace model) over the shipped track executor
with the simulator's verdicts (``verifier=oracle``, so that each subgoal's outcome is the truth), as the
``learned_track_oracle_verifier`` ablation of ``tandem-eval`` does. At the start of every subgoal it also asks the
oracle trace producer (:class:`sim.goal_render.OracleGoalProducer`, the simulator's true poses, the expert's
waypoints) for the trace of the same subgoal from the same state, and records both traces' first close of the
gripper. This is a measurement, outside the stack: the oracle trace is never handed to the executor.

Per attempt it writes (``<out>/attempts.jsonl``): seed, subgoal, the truth verdict, the close point of each trace
(a place's: its release point; m, world frame), their difference (xy and z, m), the yaw there of each (rad, the
finger axis about world +z) and their difference modulo the object's symmetry (rad), the wrist angle at the start
(rad, Panda joint 7) and the one each turn would lead to (:func:`tandem.core.wrist.predicted_wrist`), and the state
model's last read of the subgoal's object against the simulator's (xy and z error, m; its confidence and heatmap
uncertainty), and where the learned trace came from (``trace_source``: ``geometry``, ``network`` or ``oracle``,
:func:`trace_source`). ``<out>/summary.json`` splits the pick differences by outcome (median and 90th percentile).

Usage::

    python benchmarks/trace_vs_oracle.py --task stack_three --seed-start 540 --seeds 40 \\
        --out outputs/benchmarks/trace_vs_oracle_st3

Seeds: use validation seeds (no demonstration's, not the held-out 1000..), as for every choice made from it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

CLOSING_SKILLS = ("pick",)


def _close_row(trace: Any) -> int | None:
    """Index of ``trace``'s first close of an open gripper (the learned planner's
    :func:`~planner_vlm.learned.learned_planner.close_rows`), or None."""
    from planner_vlm.learned.learned_planner import close_rows

    rows = close_rows(trace)
    return int(rows[0]) if len(rows) else None


def _release_row(gripper: np.ndarray) -> int | None:
    """Index of the first row where a closed gripper (> 0) is commanded open (<= 0), or None."""
    rows = np.flatnonzero((gripper[1:] <= 0) & (gripper[:-1] > 0)) + 1
    return int(rows[0]) if len(rows) else None


def _yaw_gap(a: float, b: float, order: int) -> float:
    """|a - b| modulo a turn of 2*pi/order (rad, in [0, pi/order])."""
    period = 2.0 * math.pi / max(order, 1)
    d = (a - b) % period
    return float(min(d, period - d))


def compare(learned: Any, oracle: Any, order: int, wrist: float | None) -> dict[str, Any]:
    """Both traces' first close (a place's first release where neither closes): points (m), yaws (rad), their
    gaps, and the wrist each turn leads to (rad)."""
    from tandem.core.wrist import predicted_wrist

    row: dict[str, Any] = {}
    i, j = _close_row(learned), _close_row(oracle)
    if i is None and j is None:
        i, j = _release_row(np.asarray(learned.gripper)), _release_row(np.asarray(oracle.gripper))
        row["event"] = "release"
    row["learned_closes"], row["oracle_closes"] = i is not None, j is not None
    if i is None or j is None:
        return row
    lp, op = np.asarray(learned.points[i], float), np.asarray(oracle.points[j], float)
    ly, oy = float(learned.yaw[i]), float(oracle.yaw[j])
    row.update(learned_close=lp.round(4).tolist(), oracle_close=op.round(4).tolist(),
               xy_gap_m=round(float(np.linalg.norm(lp[:2] - op[:2])), 4), z_gap_m=round(float(lp[2] - op[2]), 4),
               learned_yaw=round(ly, 3), oracle_yaw=round(oy, 3), yaw_gap_rad=round(_yaw_gap(ly, oy, order), 3),
               turn_learned_rad=round(ly - float(learned.yaw[0]), 3), turn_oracle_rad=round(oy - float(oracle.yaw[0]), 3))
    if wrist is not None:
        row["wrist_rad"] = round(wrist, 3)
        row["wrist_after_learned"] = round(predicted_wrist(wrist, ly, float(learned.yaw[0])), 3)
        row["wrist_after_oracle"] = round(predicted_wrist(wrist, oy, float(oracle.yaw[0])), 3)
    return row


def perception_gap(events: list[dict[str, Any]], truth: dict[str, Any], target: str) -> dict[str, Any]:
    """The state model's last read of ``target``'s origin against the simulator's (m, world frame): its error,
    xy and z, and its object confidence; empty without a read."""
    reads = [e for e in events if e.get("kind") == "scene_state" and target in e.get("objects", {})]
    if not reads or target not in truth:
        return {}
    read = reads[-1]["objects"][target]
    pose = truth[target]
    true_pos = np.asarray(pose["pos"], float)
    err = np.asarray(read["pos"], float) - true_pos
    return {"read_xy_err_m": round(float(np.linalg.norm(err[:2])), 4), "read_z_err_m": round(float(err[2]), 4),
            "read_confidence": read.get("confidence"), "read_uncertainty": read.get("uncertainty")}


def trace_source(events: list[dict[str, Any]], subgoal_text: str, hand_oracle: bool) -> str:
    """Where the learned trace of ``subgoal_text`` came from: ``"geometry"`` (the expert's pick geometry over the
    object as read: the planner's latest ``geometric_pick`` event for it), ``"network"`` (the trace model, also
    after a ``geometric_pick_skipped`` event) or, with ``hand_oracle``, ``"oracle"`` (handed to the executor)."""
    if hand_oracle:
        return "oracle"
    mine = [e for e in events if e.get("kind") in ("geometric_pick", "geometric_pick_skipped")
            and e.get("subgoal") == subgoal_text]
    return "geometry" if mine and mine[-1]["kind"] == "geometric_pick" else "network"


def start_view_gap(planner: Any, subgoal: Any, oracle: Any, proprio: np.ndarray) -> dict[str, Any]:
    """The trace model asked for ``subgoal`` from the gripper as the episode started (turned to its yaw now), the
    learned planner's re-anchoring query: its close against the oracle's (m); empty where it does not apply."""
    start, state = planner.start_pose_proprio(proprio), planner.last_state
    if start is None or state is None or subgoal.skill != "pick":
        return {}
    again = planner.trace_model.predict(state.keypoints_3d, start, subgoal.skill, subgoal.args)
    i, j = _close_row(again), _close_row(oracle)
    if i is None or j is None:
        return {}
    d = np.asarray(again.points[i], float) - np.asarray(oracle.points[j], float)
    return {"start_xy_gap_m": round(float(np.linalg.norm(d[:2])), 4), "start_z_gap_m": round(float(d[2]), 4)}


def run_seed(stack: Any, producer: Any, seed: int, symmetries: dict[str, int], hand_oracle: bool = False
             ) -> list[dict[str, Any]]:
    """One episode; returns one row per attempt (its traces compared, its truth verdict). ``hand_oracle``: the
    executor is handed the oracle's trace instead of the learned one (the counterfactual: would the oracle trace have
    done from the same state?)."""
    from tandem.runtime.rollout import run_episode

    agent, env = stack.agent, stack.env
    rows: list[dict[str, Any]] = []
    set_subgoal = agent.executor.set_subgoal

    def watched(subgoal: Any, task: Any = None) -> Any:
        oracle = producer.trace_3d(subgoal)
        row = {"seed": seed, "subgoal": subgoal.signature, "skill": subgoal.skill}
        target = subgoal.args[0] if subgoal.args else ""
        if subgoal.trace_3d is not None:
            row["traces"] = {name: np.column_stack([t.points, t.yaw, t.gripper]).round(4).tolist()
                             for name, t in (("learned", subgoal.trace_3d), ("oracle", oracle))}
            row.update(compare(subgoal.trace_3d, oracle, int(symmetries.get(target, 1)), env.wrist_angle()))
        now = env.observe()  # the simulator's truth: this tool measures, the stack never sees it
        row.update(perception_gap(agent.memory.events(), now.privileged["objects"], target))
        row.update(start_view_gap(agent.planner, subgoal, oracle, now.proprio))
        row["trace_source"] = trace_source(agent.memory.events(), subgoal.text, hand_oracle)
        rows.append(row)
        if hand_oracle:
            subgoal.trace_3d = oracle
        return set_subgoal(subgoal, task)

    agent.executor.set_subgoal = watched
    try:
        res = run_episode(env, agent, seed=seed, record_video=False)
    finally:
        agent.executor.set_subgoal = set_subgoal
    verdicts = [r for r in agent.memory.records() if type(r).__name__ == "VerdictRecord"]
    for row, v in zip(rows, verdicts, strict=False):
        row["success"] = bool(v.success)
    for row in rows:
        row["task_success"] = bool(res.summary["success"])
    return rows


def split(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and 90th percentile of each gap, for successful and failed attempts."""
    out: dict[str, Any] = {}
    for outcome in (True, False):
        sel = [r for r in rows if r.get("success") is outcome and "xy_gap_m" in r]
        stats: dict[str, Any] = {"n": len(sel)}
        for key in ("xy_gap_m", "z_gap_m", "yaw_gap_rad"):
            xs = np.abs([r[key] for r in sel]) if sel else np.zeros(0)
            if len(xs):
                stats[key] = {"median": round(float(np.median(xs)), 4), "p90": round(float(np.percentile(xs, 90)), 4)}
        out["success" if outcome else "failure"] = stats
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="stack_three")
    p.add_argument("--seed-start", type=int, default=540)
    p.add_argument("--seeds", type=int, default=40)
    p.add_argument("--seed-list", type=int, nargs="*", help="these seeds instead of --seed-start/--seeds")
    p.add_argument("--out", default="outputs/benchmarks/trace_vs_oracle")
    p.add_argument("--hand-oracle-trace", action="store_true",
                   help="hand the executor the oracle's trace (a counterfactual; the stack is then privileged)")
    p.add_argument("overrides", nargs="*", help="demo-config overrides, e.g. planner.wrist_limit_rad=null")
    args = p.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    import torch

    torch.set_num_threads(1)
    from hydra.errors import ConfigCompositionException

    from sim.goal_render import OracleGoalProducer
    from tandem.cli.common import compose_config, fail, load_config
    from tandem.core.errors import TandemError
    from tandem.runtime.config import DemoConfig
    from tandem.runtime.registry import build_stack

    overrides = [f"task={args.task}", "planner=learned", "verifier=oracle", "executor=diffusion", "goals=none",
                 "executor.torch_threads=1", *args.overrides]
    try:  # bad overrides or a bad checkpoint: one line naming the problem, exit 2, as tandem-demo does
        cfg = load_config(DemoConfig, compose_config("demo", overrides))
        stack = build_stack(cfg)
    except TandemError as e:
        fail(e)
    except ConfigCompositionException as e:
        print(f"error: {e}" + (f": {e.__cause__}" if e.__cause__ else ""), file=sys.stderr)
        sys.exit(2)
    producer = OracleGoalProducer(stack.env, goal_image=False, trace_points=False, trace_3d=True)
    symmetries = dict(stack.agent.planner.trace_model.cfg.symmetries)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    t0 = time.time()
    try:
        with open(out / "attempts.jsonl", "w") as f:
            for seed in args.seed_list or range(args.seed_start, args.seed_start + args.seeds):
                got = run_seed(stack, producer, seed, symmetries, args.hand_oracle_trace)
                for r in got:
                    f.write(json.dumps(r) + "\n")
                f.flush()
                rows += got
                picks = [r for r in got if r["skill"] in CLOSING_SKILLS]
                print(f"seed {seed}: task {int(got[0]['task_success']) if got else 0}  picks "
                      + " ".join(f"{int(r.get('success', 0))}(xy {r.get('xy_gap_m', float('nan')) * 1000:.0f}mm "
                                 f"z {r.get('z_gap_m', float('nan')) * 1000:.0f}mm "
                                 f"yaw {math.degrees(r.get('yaw_gap_rad', float('nan'))):.0f}deg)" for r in picks),
                      flush=True)
    finally:
        stack.close()
    picks = [r for r in rows if r["skill"] in CLOSING_SKILLS]
    summary = {"task": args.task, "seed_start": args.seed_start, "seeds": args.seeds, "overrides": args.overrides,
               "hand_oracle_trace": args.hand_oracle_trace,
               "picks": len(picks), "pick_success": sum(bool(r.get("success")) for r in picks),
               "by_outcome": split(picks), "wall_time_s": round(time.time() - t0, 1)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
