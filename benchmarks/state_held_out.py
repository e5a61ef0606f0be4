"""Several learned state models read the same held-out episodes: keypoints, 3-D positions, yaw and predicates.

A state checkpoint records the metrics of its own held-out episodes, and two checkpoints trained on different data
hold out different episodes, so their records do not compare. This benchmark reads one dataset's last
``--val-episodes`` episodes (the split ``tandem-train-state`` holds out of the same roots: the last root's last
episodes) with every checkpoint, through the trainer's own metrics
(:func:`planner_vlm.learned.state_train.evaluate`): keypoint px error (all keypoints, origins), 3-D error (m),
yaw error (deg, modulo each object's symmetry), predicate accuracy per entry and per frame, F1, ECE, and how often a
gripper closed on nothing is read as holding nothing. No simulator runs: the truth is the dataset's labels.

Usage::

    python benchmarks/state_held_out.py --roots datasets/ppb_agentview84_s0 datasets/ppb_agentview84_s300 \\
        --checkpoints /tmp/state_ppb_60 checkpoints/state/pick_place_bins --out outputs/benchmarks/state_held_out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--roots", nargs="+", required=True, help="tandem datasets with agentview images and labels")
    ap.add_argument("--checkpoints", nargs="+", required=True, type=Path, help="state model checkpoint dirs")
    ap.add_argument("--val-episodes", type=int, default=10, help="the last this-many episodes (the recipe's held out)")
    ap.add_argument("--frame-stride", type=int, default=2, help="every n-th frame (the recipe's)")
    ap.add_argument("--out", type=Path, default=Path("outputs/benchmarks/state_held_out.json"))
    args = ap.parse_args()

    import torch

    from planner_vlm.learned.state_data import StateDataset
    from planner_vlm.learned.state_model import StateModel
    from planner_vlm.learned.state_train import evaluate

    torch.set_num_threads(1)
    t0 = time.time()
    data = StateDataset(args.roots, frame_stride=args.frame_stride, val_episodes=args.val_episodes)
    index = np.asarray(data.val_index)
    results = []
    for ckpt in args.checkpoints:
        model = StateModel.from_checkpoint(ckpt)
        metrics = evaluate(model, data, index)
        results.append({"checkpoint": str(ckpt), **{k: v for k, v in metrics.items() if not isinstance(v, (list, dict))}})
    doc = {"benchmark": "state_held_out", "roots": args.roots, "val_episodes": args.val_episodes,
           "seeds": data.seeds(index), "frames": int(len(index)), "wall_s": round(time.time() - t0, 1),
           "command": " ".join(sys.argv), "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2))
    for r in results:
        print(f"{r['checkpoint']}: px {r['px_median']:.3f} (p90 {r['px_p90']:.2f}), 3-D {1000 * r['m3d_median']:.1f} mm, "
              f"yaw {r['yaw_error_deg_median']:.1f} deg (p90 {r['yaw_error_deg_p90']:.1f}), predicates "
              f"{100 * r['predicate_accuracy']:.2f}% (frames {100 * r['frame_accuracy']:.1f}%), closed on nothing "
              f"{100 * r['empty_closed_accuracy']:.1f}%")
    print(f"held-out seeds {doc['seeds']}, {doc['frames']} frames; wrote {args.out}")


if __name__ == "__main__":
    main()
