"""Success against training wall-clock time on this machine: one core per run, snapshots at 5, 15, 30, 60 minutes.

For each executor design, ``tandem-train`` runs with ``torch_threads=1`` for the largest budget, writing a snapshot at
every smaller one (``train.snapshot_minutes``); each snapshot is then evaluated with ``tandem-eval`` on held-out seeds
(the task's suite, seeds from 1000; demonstrations are collected from seed 0). Designs (``--designs``):

* ``track_diffusion``: the track executor (proprio + 3-D trace + text), diffusion head, delta actions;
* ``track_setpoint``: the same with ``action_space=setpoint`` (OSC set-points, a P-law per control step);
* ``track_mse``: the same inputs as ``track_diffusion``, MSE chunk regression;
* ``track_2d``: the track executor given the 2-D agentview pixel trace instead of the 3-D one (LoHo-Manip's input);
* ``image``: the image executor (2 cameras, goal image, raster trace; the GPU recipe), on an image dataset;
* ``flat_image``: the flat end-to-end image policy (instruction only, whole episodes), on the image dataset;
* ``flat_state``: the flat policy with the learned high level's perception (the track network trained flat on the
  instruction, seeing every object's 3-D keypoint: the labels in training, the shipped state model
  ``checkpoints/state/<task>`` reading agentview at run time), on the low-dimensional dataset.

Hierarchical designs run under the oracle planner, verifier and traces (they measure the executor); the flat
ones run the whole task as one subgoal (``planner=instruction``, judged by the task's success). Up to ``--jobs`` runs
train side by side (the machine has 2 cores; FIELD-NOTES: two 1-thread runs beat one 2-thread run).

Image designs train on the cameras the image dataset records. With ``--clock cpu`` the budgets are one core's CPU
time (``train.clock=cpu``), which stays fair when the machine is shared.

Writes ``<out>/learning_curve.json`` (every snapshot: minutes, steps, task success with a Wilson interval, subgoal
success per skill), ``<out>/learning_curve.md`` (the table) and ``<out>/learning_curve.png`` (the plot).

Usage::

    python benchmarks/learning_curve.py --task stack_three --dataset datasets/stack_three_lowdim \\
        --image-dataset datasets/stack_three_84 --minutes 5 15 30 60 --seeds 20 --jobs 2 \\
        --out outputs/learning_curve/stack_three
    python benchmarks/learning_curve.py ... --skip-train     # re-evaluate / re-plot existing snapshots
    python benchmarks/learning_curve.py ... --minutes 30 --jobs 1 --eval-workers 2   # one snapshot, 2 processes
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

#: design -> (tandem-train overrides, dataset kind, tandem-eval variant)
DESIGNS: dict[str, tuple[list[str], str, str]] = {
    "track_diffusion": (["executor=track"], "lowdim", "oracle_track"),
    "track_setpoint": (["executor=track", "executor.action_space=setpoint"], "lowdim", "oracle_track"),
    "track_mse": (["executor=track", "executor.head=mse"], "lowdim", "oracle_track"),
    "track_2d": (["executor=track", "executor.trace_input=2d"], "lowdim", "oracle_track"),
    "image": (["executor=diffusion", "dataset.cache=true", "executor.image_size=[84,84]",
               "train.batch_size=32", "train.lr=3e-4", "train.warmup_steps=200"], "image", "oracle_diffusion"),
    "flat_image": (["executor=flat", "dataset.cache=true", "executor.image_size=[84,84]",
                    "train.batch_size=32", "train.lr=3e-4", "train.warmup_steps=200"], "image", "flat"),
    "flat_state": (["executor=track", "executor.action_space=setpoint", "executor.conditioning_source=instruction",
                    "executor.scene_input=objects_3d"], "lowdim", "flat_state"),
}
#: Training settings shared by the track designs (tuned on stack_three; see checkpoints/README.md).
TRACK_TRAIN = ["executor.hidden_dim=256", "train.batch_size=256", "train.lr=3e-4", "train.warmup_steps=200",
               "train.ema_max_decay=0.999", "dataset.val_episodes=5", "train.val_every=2000"]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a binomial rate ``k / n`` (Wilson 1927)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def dataset_cameras(root: str | Path) -> list[str]:
    """The cameras an image dataset records (its ``observation.images.<camera>`` features, read by
    :func:`executor_vla.dataset_inspect.schema_of`), in its order.

    Raises:
        SystemExit: no ``meta/info.json`` under ``root``, not a tandem dataset, or no camera image in it.
    """
    from executor_vla.dataset_inspect import schema_of
    from tandem.core.errors import DatasetSchemaError

    info = Path(root) / "meta" / "info.json"
    if not info.is_file():
        raise SystemExit(f"--image-dataset {root}: no meta/info.json (not a LeRobotDataset)")
    try:
        cams = list(schema_of(json.loads(info.read_text()))["cameras"])
    except DatasetSchemaError as e:
        raise SystemExit(f"--image-dataset {root}: {e}") from e
    if not cams:
        raise SystemExit(f"--image-dataset {root} records no camera images")
    return cams


def train(design: str, args: argparse.Namespace, out: Path) -> None:
    overrides, kind, _ = DESIGNS[design]
    dataset = args.dataset if kind == "lowdim" else args.image_dataset  # both checked in main() before any training
    minutes = sorted(args.minutes)
    if kind == "image":  # the cameras the dataset has (pick_place_bins' image datasets record agentview only)
        overrides = [*overrides, f"executor.cameras=[{','.join(dataset_cameras(dataset))}]"]
    cmd = [str(BIN / "tandem-train"), *overrides, *(TRACK_TRAIN if kind == "lowdim" else []),
           f"train.clock={args.clock}",
           f"dataset.root={dataset}", "train.steps=100000000", f"train.max_minutes={minutes[-1]}",
           f"train.snapshot_minutes=[{','.join(str(m) for m in minutes[:-1])}]", "train.save_every_minutes=null",
           "train.log_every=500", "train.num_workers=0", "train.device=cpu", "torch_threads=1",
           f"train.seed={args.train_seed}", f"output_dir={out / design / 'train'}"]
    log = out / design / "train.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"[learning_curve] training {design}: {' '.join(cmd)}", flush=True)
    with log.open("w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if rc.returncode != 0:
        raise SystemExit(f"training {design} failed (exit {rc.returncode}); see {log}")


def snapshots(design: str, out: Path) -> list[tuple[float, Path]]:
    """``(minutes, checkpoint dir)`` of a design's snapshots, the final checkpoint counted at its budget."""
    ck = out / design / "train" / "checkpoints"
    found = []
    for d in sorted(ck.glob("*")):
        cfg = d / "config.json"
        if not cfg.is_file():
            continue
        extra = json.loads(cfg.read_text()).get("extra", {})
        found.append((float(extra.get("train_minutes", 0.0)), d))
    return sorted(found)


def evaluate(design: str, minutes: float, ckpt: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    _, _, variant = DESIGNS[design]
    eval_dir = out / design / f"eval_{ckpt.name}"
    cmd = [str(BIN / "tandem-eval"), f"suite={args.task}", f"suite.seeds={args.seeds}", f"run_variants=[{variant}]",
           f"variants.{variant}.executor.checkpoint={ckpt}", f"++variants.{variant}.executor.torch_threads=1",
           *(["backend=inline"] if args.eval_workers <= 1 else ["backend=local", f"workers={args.eval_workers}"]),
           "progress=false", f"out_dir={eval_dir}"]
    if variant != "oracle_track":  # image executors render their cameras (flat_state: agentview for its state model)
        cmd.append(f"variants.{variant}.env.render=true")
    print(f"[learning_curve] evaluating {design} @ {minutes:.1f} min: {ckpt}", flush=True)
    log = eval_dir.with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    rows = [json.loads(x) for x in (eval_dir / "episodes.jsonl").read_text().splitlines() if x.strip()] \
        if (eval_dir / "episodes.jsonl").exists() else []
    broken = [r for r in rows if r.get("failure_kind") in ("build_error", "crash", "worker_crash")]
    if rc.returncode != 0 or broken or not rows:  # a stack that cannot run is not a policy that fails
        raise SystemExit(f"evaluating {design} @ {minutes:.1f} min failed (exit {rc.returncode}, {len(broken)} "
                         f"build or crash rows of {len(rows)}); see {log}")
    k, n = sum(bool(r.get("success")) for r in rows), len(rows)
    skills: dict[str, list[int]] = {}
    for r in rows:
        sr = r.get("skill_results") or {}
        sr = json.loads(sr) if isinstance(sr, str) else sr
        for s, (ok, m) in sr.items():
            acc = skills.setdefault(s, [0, 0])
            acc[0] += ok
            acc[1] += m
    cfg = json.loads((ckpt / "config.json").read_text())
    return {"design": design, "minutes": round(minutes, 2), "step": cfg.get("extra", {}).get("step"),
            "checkpoint": str(ckpt), "tasks_ok": k, "episodes": n, "task_success": k / n if n else None,
            "task_ci95": wilson(k, n), "skills": {s: {"ok": a, "attempts": b, "rate": a / b if b else None}
                                                  for s, (a, b) in sorted(skills.items())},
            "eval_dir": str(eval_dir)}


def table(results: list[dict[str, Any]], task: str) -> str:
    lines = [f"Learning curve on {task}: task success on held-out seeds (subgoal success per skill) against training "
             "minutes on one CPU core", "", "| design | minutes | steps | tasks | " + "subgoals per skill |",
             "| --- | --- | --- | --- | --- |"]
    for r in results:
        sk = ", ".join(f"{s} {v['ok']}/{v['attempts']}" for s, v in r["skills"].items())
        lo, hi = r["task_ci95"]
        lines.append(f"| {r['design']} | {r['minutes']:.0f} | {r['step']} | {r['tasks_ok']}/{r['episodes']} "
                     f"[{100 * lo:.0f}, {100 * hi:.0f}%] | {sk} |")
    return "\n".join(lines) + "\n"


def plot(results: list[dict[str, Any]], path: Path, task: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for design in dict.fromkeys(r["design"] for r in results):
        rs = [r for r in results if r["design"] == design and r["episodes"]]
        ax.plot([r["minutes"] for r in rs], [100 * r["task_success"] for r in rs], marker="o", label=design)
    ax.set_xlabel("training wall-clock time on one CPU core (min)")
    ax.set_ylabel("task success, held-out seeds (%)")
    ax.set_title(f"{task}: success against training time")
    ax.set_ylim(-3, 103)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="stack_three")
    ap.add_argument("--dataset", default=None,
                    help="low-dimensional dataset (tandem-collect env.render=false goals.goal_image=false)")
    ap.add_argument("--image-dataset", default=None, help="image dataset for the image designs")
    ap.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    ap.add_argument("--minutes", type=float, nargs="+", default=[5, 15, 30, 60])
    ap.add_argument("--seeds", type=int, default=20, help="held-out evaluation seeds per snapshot (from 1000)")
    ap.add_argument("--jobs", type=int, default=2, help="trainings (and evaluations) side by side")
    ap.add_argument("--eval-workers", type=int, default=1,
                    help="processes per evaluation (1: inline); e.g. --jobs 1 --eval-workers 2 for one snapshot whose "
                         "flat episodes each run to the step cap")
    ap.add_argument("--train-seed", type=int, default=0)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="the clock of the budgets: wall (elapsed) or cpu (one core's CPU time, fair beside other "
                         "runs)")
    ap.add_argument("--skip-train", action="store_true", help="only evaluate existing snapshots")
    ap.add_argument("--out", type=Path, default=Path("outputs/learning_curve"))
    args = ap.parse_args()
    if args.eval_workers < 1:
        ap.error(f"--eval-workers must be >= 1, got {args.eval_workers}")
    if not all(m > 0 for m in args.minutes):
        ap.error(f"--minutes must all be > 0, got {args.minutes}")
    if not args.skip_train:  # every design's data before the first of many trainings starts, not hours into them
        for design in args.designs:
            kind = DESIGNS[design][1]
            flag, root = ("--image-dataset", args.image_dataset) if kind == "image" else ("--dataset", args.dataset)
            if root is None:
                ap.error(f"design {design} needs {flag}")
            if not (Path(root) / "meta" / "info.json").is_file():
                ap.error(f"{flag} {root}: no meta/info.json (not a LeRobotDataset)")
            if kind == "image":
                dataset_cameras(root)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        if not args.skip_train:
            trainings = [pool.submit(train, d, args, out) for d in args.designs]
            try:
                for t in trainings:
                    t.result()
            except BaseException:  # a failed training (or Ctrl-C) starts no queued one
                pool.shutdown(wait=False, cancel_futures=True)
                raise
        jobs = [(d, m, c) for d in args.designs for m, c in snapshots(d, out)]
        results = list(pool.map(lambda j: evaluate(*j, args, out), jobs))
    results.sort(key=lambda r: (args.designs.index(r["design"]), r["minutes"]))
    doc = {"benchmark": "learning_curve", "task": args.task, "seeds": args.seeds, "seed_start": 1000,
           "minutes": args.minutes, "clock": args.clock, "jobs": args.jobs,
           "eval_workers": args.eval_workers, "wall_s": round(time.time() - t0),
           "results": results, "command": " ".join(sys.argv)}
    (out / "learning_curve.json").write_text(json.dumps(doc, indent=2))
    (out / "learning_curve.md").write_text(table(results, args.task))
    plot(results, out / "learning_curve.png", args.task)
    print(table(results, args.task))
    print(f"[learning_curve] wrote {out / 'learning_curve.json'}, .md and .png")


if __name__ == "__main__":
    main()
