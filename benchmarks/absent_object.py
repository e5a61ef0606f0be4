"""Bad input: is an instruction naming an object absent from the scene refused, with the shipped models?

The wholly non-privileged stack (``planner=learned verifier=learned executor=diffusion goals=none``, the shipped
checkpoints) runs each held-out seed twice or more through the real agent loop (``tandem.runtime.rollout``):

* ``present``: the scene as drawn, the control (a refusal here is a false refusal);
* ``absent:<object>``: right after ``reset`` the object is moved 3 m off the table (``RobosuiteEnv.teleport``; the
  evaluation's own hand, privileged by design), so the camera cannot see it while the instruction still names it.

The learned planner sees only the camera and proprioception (its observations have ``privileged`` withheld by the
agent). At its first plan an instruction object counts as absent when the state model finds it with less confidence
than ``planner.min_object_confidence`` or, where the state checkpoint records them and
``planner.use_absent_thresholds`` is on, with a heatmap uncertainty above the object's absent threshold
(:mod:`planner_vlm.learned.absence`), or where a presence model is configured (pick_place_bins ships one) with a
presence probability below its threshold (:mod:`planner_vlm.learned.presence_model`): the plan is refused, memory records a ``refused`` event and an ``absent`` fact,
and the episode ends failed ("planner gave no usable plan"), with no subgoal started. Each episode runs one control
step: the first plan decides. The JSON gives, per condition, the episodes, how many were refused and whether the
refusal named the removed object; each row adds the object confidences and uncertainties as the first plan read them,
which ``scripts/fit_absent_uncertainty.py`` fits thresholds from (run it on validation seeds, 700..; measure on the
held-out ones, 1000..). It also records the state checkpoint that ran (its directory and a hash of its weights). A
seed whose episode fails to run is recorded as an ``error`` row, and the JSON is rewritten after every seed.

Usage:
    MUJOCO_GL=egl python benchmarks/absent_object.py --task stack_three --seeds 1000 1001 1002 \\
        --out outputs/benchmarks/absent_object_st3.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

#: Where a removed object goes: 3 m off the table along +x, on the floor's level (m, world frame).
OFF_TABLE_SHIFT_M = np.array([3.0, 0.0, 0.0])


class ObjectRemovingEnv:
    """Wraps a simulator env: after every ``reset`` it moves ``removed`` 3 m off the table (pose kept, wxyz).

    Everything else is delegated unchanged, so the agent and the rollout see the same env otherwise.

    Raises:
        UnknownObjectError: at reset, ``removed`` is not an object of the episode (from ``RobosuiteEnv.teleport``).
    """

    def __init__(self, env: Any, removed: str | None) -> None:
        self._env = env
        self.removed = removed

    def reset(self, seed: int | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self._env.reset(seed)
        if self.removed is None:
            return obs, info
        pose = obs.privileged["objects"][self.removed]  # the evaluation's hand: privileged, by design
        self._env.teleport({self.removed: (np.asarray(pose["pos"]) + OFF_TABLE_SHIFT_M, np.asarray(pose["quat"]))})
        return self._env.observe(), info

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


def weights_digest(checkpoint: Path) -> str:
    """The first 16 hex digits of the SHA-256 of a checkpoint directory's ``model.safetensors`` (its identity)."""
    return hashlib.sha256((Path(checkpoint) / "model.safetensors").read_bytes()).hexdigest()[:16]


def run(task: str, seeds: list[int], overrides: list[str],
        on_row: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Per seed, the scene as drawn and with each instruction object removed; returns the JSON summary.

    Args:
        task: the task's name. seeds: episode seeds (>= 0). overrides: demo-config overrides (not ``task=``).
        on_row: called with the summary so far after every seed (the CLI rewrites its JSON there).

    Raises:
        ValueError: a negative seed, no seeds, or a ``task=`` override (``task`` says which task runs).
        TandemError: a bad config (named), from building the stack.
    """
    import torch

    from tandem.cli.common import compose_config, load_config
    from tandem.core.errors import TandemError
    from tandem.runtime.config import DemoConfig
    from tandem.runtime.registry import build_stack, presence_checkpoint, resolve_perception_checkpoint
    from tandem.runtime.rollout import run_episode

    if not seeds:
        raise ValueError("no seeds given")
    if any(s < 0 for s in seeds):
        raise ValueError(f"seeds must be >= 0, got {[s for s in seeds if s < 0]}")
    if any(o.split("=", 1)[0].lstrip("+~") == "task" for o in overrides):
        raise ValueError("give the task with --task, not as a task= override")
    torch.set_num_threads(1)
    cfg = load_config(DemoConfig, compose_config("demo", [
        f"task={task}", "planner=learned", "verifier=learned", "executor=diffusion", "goals=none",
        "executor.torch_threads=1", *overrides]))
    state_ckpt = resolve_perception_checkpoint(cfg.planner.state_checkpoint, cfg.task.name, "state")
    presence_ckpt = presence_checkpoint(cfg.planner, cfg.task.name)
    stack = build_stack(cfg)
    agent = stack.agent
    if agent.privileged:
        raise ValueError("the stack under test reads simulator truth; this benchmark measures the non-privileged one")
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def summary() -> dict[str, Any]:
        def summ(sel: list[dict[str, Any]]) -> dict[str, Any]:
            return {"episodes": len(sel), "refused": sum(r["refused"] for r in sel),
                    "refusal_named_the_removed_object": sum(r["named_removed"] for r in sel),
                    "subgoals_started": sum(r["subgoals_started"] for r in sel)}

        ran = [r for r in rows if "error" not in r]
        return {"task": cfg.task.name, "seeds": seeds, "overrides": overrides,
                "state_checkpoint": str(state_ckpt), "state_weights_sha256": weights_digest(state_ckpt),
                "use_absent_thresholds": bool(cfg.planner.use_absent_thresholds),
                "presence_checkpoint": None if presence_ckpt is None else str(presence_ckpt),
                "presence_weights_sha256": None if presence_ckpt is None else weights_digest(presence_ckpt),
                "present": summ([r for r in ran if r["condition"] == "present"]),
                "absent": summ([r for r in ran if r["condition"] != "present"]),
                "errors": len(rows) - len(ran),
                "all_rows_non_privileged": all(r["privileged"] is False for r in ran),
                "rows": rows, "seconds": round(time.perf_counter() - t0, 1)}

    try:
        for seed in seeds:
            try:
                stack.env.reset(seed)
                conditions = [None, *stack.env.spec.objects]  # the objects the episode's instruction names
            except TandemError as e:
                rows.append({"seed": seed, "condition": "reset", "error": f"{type(e).__name__}: {e}"})
                print(json.dumps(rows[-1]), flush=True)
                continue
            for removed in conditions:
                env = ObjectRemovingEnv(stack.env, removed)
                res = run_episode(env, agent, seed=seed, record_video=False, max_steps=1)  # the first plan decides
                if agent.planner.last_state is None:  # the episode failed before the first plan read the scene
                    rows.append({"seed": seed, "condition": "present" if removed is None else f"absent:{removed}",
                                 "error": str(res.summary.get("failure"))})
                    print(json.dumps(rows[-1]), flush=True)
                    continue
                events = agent.memory.events()
                refused = [e for e in events if e["kind"] == "refused"]
                state = agent.planner.last_state  # what the first plan read
                rows.append({
                    "seed": seed, "condition": "present" if removed is None else f"absent:{removed}",
                    "refused": bool(refused),
                    "refused_objects": refused[0]["objects"] if refused else [],
                    "named_removed": bool(refused) and removed in refused[0]["objects"],
                    "subgoals_started": sum(1 for e in events if e["kind"] == "subgoal_start"),
                    "object_confidence": {o: round(float(c), 4) for o, c in zip(state.objects, state.object_confidence)},
                    "object_pos": {o: [round(float(x), 4) for x in state.keypoints_3d[i, 0]]
                                   for i, o in enumerate(state.objects)},
                    "presence": None if agent.planner.last_presence is None else
                    {o: round(p, 5) for o, p in agent.planner.last_presence.items()},
                    "object_uncertainty": None if state.object_uncertainty is None else
                    {o: round(float(u), 3) for o, u in zip(state.objects, state.object_uncertainty)},
                    "failure": res.summary.get("failure"),
                    "privileged": res.summary.get("privileged"),
                })
                print(json.dumps(rows[-1]), flush=True)
            if on_row is not None:
                on_row(summary())
    finally:
        stack.close()
    return summary()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="stack_three")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1000, 1001, 1002])
    ap.add_argument("--out", default="outputs/benchmarks/absent_object.json")
    ap.add_argument("overrides", nargs="*", help="demo-config overrides, e.g. planner.min_object_confidence=0.1")
    a = ap.parse_args(argv)
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from tandem.core.errors import TandemError

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        r = run(a.task, a.seeds, a.overrides, on_row=lambda s: out.write_text(json.dumps(s, indent=2)))
    except (ValueError, TandemError, HydraException, OmegaConfBaseException) as e:
        print(f"absent_object: {type(e).__name__}: {e}", file=sys.stderr)  # bad input: named, nothing ran
        return 2
    out.write_text(json.dumps(r, indent=2))
    print(json.dumps({k: v for k, v in r.items() if k != "rows"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
