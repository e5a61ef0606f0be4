"""Fit a state checkpoint's depth offsets: how far behind the surface its depth pixel sees each object's origin lies.

For the depth check of :mod:`planner_vlm.learned.depth_heights`. Renders the task's scenes at reset for ``--seeds``
seeds from ``--seed-start`` (demonstration seeds: this is calibration, as fitting rest heights from the labels is),
reads the depth image of the state model's camera at its image size, and for every object compares the range to its
true origin (the simulator's label) with the depth's range along the ray through the origin's pixel. An object's
offset is the median difference; objects whose differences spread by more than the depth tolerance get none (the
depth does not tell their height). Writes ``depth_offsets_m`` into the checkpoint's ``config.json`` with ``--write``
(weights untouched), and prints the fit either way.

Usage::

    python scripts/fit_depth_offsets.py --checkpoint checkpoints/state/stack_three --task stack_three --write
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="a state model checkpoint directory")
    p.add_argument("--task", required=True)
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--seed-start", type=int, default=0)
    p.add_argument("--write", action="store_true", help="write depth_offsets_m into the checkpoint's config.json")
    args = p.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    from planner_vlm.learned.camera import CameraCalibration
    from planner_vlm.learned.depth_heights import fit_depth_offsets, surface_range
    from sim.robosuite_env import RobosuiteEnv

    cfg_path = Path(args.checkpoint) / "config.json"
    raw = json.loads(cfg_path.read_text())
    model = raw["model"]
    camera, size = str(model.get("camera", "agentview")), tuple(int(v) for v in model["image_size"])
    objects = list(model["objects"])
    env = RobosuiteEnv(args.task, cameras=(camera,), image_size=size, depth_cameras=(camera,), lazy_images=False)
    true_r, surf_r = [], []
    try:
        for seed in range(args.seed_start, args.seed_start + args.seeds):
            obs, _ = env.reset(seed=seed)
            cal = CameraCalibration.from_json(env.camera_calibration(camera, size))
            poses = obs.privileged["objects"]
            depth = np.asarray(obs.depth[camera], np.float64)
            row_t, row_s = [], []
            for name in objects:
                pos = np.asarray(poses[name]["pos"], np.float64) if name in poses else np.full(3, np.nan)
                px = cal.project(pos[None])[0]
                row_t.append(float(np.linalg.norm(pos - cal.position)))
                row_s.append(surface_range(cal, depth, px) if np.all(np.isfinite(px)) else float("nan"))
            true_r.append(row_t)
            surf_r.append(row_s)
    finally:
        env.close()
    t, s = np.array(true_r), np.array(surf_r)
    offsets = fit_depth_offsets(t, s)
    d = t - s
    report = {o: {"offset_m": None if not np.isfinite(offsets[i]) else round(float(offsets[i]), 5),
                  "p5_m": round(float(np.nanpercentile(d[:, i], 5)), 5),
                  "p95_m": round(float(np.nanpercentile(d[:, i], 95)), 5)} for i, o in enumerate(objects)}
    print(json.dumps({"task": args.task, "seeds": [args.seed_start, args.seed_start + args.seeds - 1],
                      "objects": report}, indent=2))
    if args.write:
        raw["depth_offsets_m"] = [None if not np.isfinite(v) else round(float(v), 5) for v in offsets]
        raw.setdefault("extra", {})["depth_offsets_fit"] = {"task": args.task, "seed_start": args.seed_start,
                                                            "seeds": args.seeds}
        cfg_path.write_text(json.dumps(raw, indent=2))
        print(f"wrote depth_offsets_m into {cfg_path}")


if __name__ == "__main__":
    main()
