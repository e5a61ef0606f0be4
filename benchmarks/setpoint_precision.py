"""How precisely does a set-point track executor reproduce the expert's set-points, by the offset's size?

Offline, on the dataset's validation episodes (the last ``--val-episodes``, as ``tandem-train dataset.val_episodes``
holds them out): for up to ``--windows`` random frames, each checkpoint predicts its action chunk (DDIM, fixed
noise seed) and the error of the executed steps' position set-points (the first ``n_action_steps``, m -> mm, base
frame) against the expert's is reported per bucket of the commanded offset (the distance from the grip site to the
set-point ``n_action_steps`` steps ahead): 0-5 mm is hovering over an align point, where an insertion needs
millimetres; over 50 mm is transport. Several checkpoints are measured in the same run on the same windows.

Checkpoints must be track executors with ``action_space="setpoint"`` (``executor_vla.track_config``). Method:
Diffusion Policy's chunks (Chi et al., RSS 2023); the companding ablation is ``executor.action_compand_m``.

Usage:
    python benchmarks/setpoint_precision.py --dataset datasets/nut_assembly_lowdim \\
        --checkpoints checkpoints/nut_assembly_diffusion runs/nut_cmp/checkpoints/min_006.0 \\
        --out outputs/benchmarks/setpoint_precision_nut.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

#: Buckets of the commanded offset (mm).
BUCKETS_MM: tuple[tuple[float, float], ...] = ((0.0, 5.0), (5.0, 15.0), (15.0, 50.0), (50.0, float("inf")))


def measure(checkpoint: str, dataset: str, val_episodes: int, windows: int, seed: int) -> dict:
    """Set-point errors (mm) of one checkpoint per offset bucket (see module doc).

    Raises:
        SystemExit: the checkpoint is not a set-point track executor.
    """
    from executor_vla.track_data import TrackDataset
    from executor_vla.track_policy import TrackExecutor

    pol = TrackExecutor.from_checkpoint(checkpoint).eval()
    cfg = pol.cfg
    if cfg.action_space != "setpoint":
        raise SystemExit(f"{checkpoint}: action_space is {cfg.action_space!r}; this benchmark needs 'setpoint'")
    ds = TrackDataset(dataset, cfg, val_episodes=val_episodes)
    idx = ds.val_index[np.random.default_rng(seed).permutation(len(ds.val_index))[:windows]]
    w = ds.windows(idx)
    text = None
    if cfg.use_text:
        emb = np.asarray(pol.text_encoder.encode(ds.texts), np.float32)
        text = torch.from_numpy(emb[w["text_id"]])
    with torch.no_grad():
        chunk, _ = pol.predict_action_chunk(torch.from_numpy(w["obs"]), text,
                                            generator=torch.Generator().manual_seed(seed))
    ta = cfg.n_action_steps
    err = np.linalg.norm(chunk.numpy()[:, :ta, :3] - w["action"][:, :ta, :3], axis=-1) * 1000.0
    offset = np.linalg.norm(w["action"][:, ta - 1, :3], axis=-1) * 1000.0
    rows = []
    for lo, hi in BUCKETS_MM:
        m = (offset >= lo) & (offset < hi)
        if m.any():
            rows.append({"offset_mm": [lo, None if hi == float("inf") else hi], "windows": int(m.sum()),
                         "first_step_error_mm_median": float(np.median(err[m, 0])),
                         "executed_steps_error_mm_median": float(np.median(err[m])),
                         "executed_steps_error_mm_p90": float(np.percentile(err[m], 90))})
    return {"checkpoint": checkpoint, "action_compand_m": cfg.action_compand_m, "buckets": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--checkpoints", nargs="+", required=True)
    ap.add_argument("--val-episodes", type=int, default=5)
    ap.add_argument("--windows", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="outputs/benchmarks/setpoint_precision.json")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    result = {"dataset": args.dataset, "val_episodes": args.val_episodes,
              "runs": [measure(c, args.dataset, args.val_episodes, args.windows, args.seed) for c in args.checkpoints]}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    for run in result["runs"]:
        for b in run["buckets"]:
            print(f"{run['checkpoint']}: offset {b['offset_mm']} mm, n={b['windows']}: first step "
                  f"{b['first_step_error_mm_median']:.2f} mm, executed steps {b['executed_steps_error_mm_median']:.2f} mm "
                  f"(p90 {b['executed_steps_error_mm_p90']:.2f})")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
