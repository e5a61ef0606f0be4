"""Which trace encoding works better: ``raster`` (drawn into the agentview frame) or ``points`` (MLP)?

Trains one executor per variant with the same seed, data and step budget, then measures on held-out
episodes the error of sampled action chunks against the recorded actions (mean absolute error over
the executed ``n_action_steps``, in controller units) and the done-head progress error. Variants:
``raster``, ``points`` and ``none`` (trace off: how much the trace helps at all). In-sim success is the
final arbiter; this offline measure is the cheap first cut.

Usage::

    python benchmarks/trace_mode_ablation.py --dataset data/stack_three --steps 3000 --out runs/trace_ablation.json
    python benchmarks/trace_mode_ablation.py --steps 300            # synthetic data (smoke run)
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from executor_vla.config import ExecutorConfig  # noqa: E402
from executor_vla.data import ExecutorDataset, batch_to_device  # noqa: E402
from executor_vla.policy import DiffusionExecutor  # noqa: E402
from executor_vla.train import TrainConfig, Trainer  # noqa: E402
from tandem.core import dataset_schema as schema  # noqa: E402

VARIANTS = {"raster": dict(use_trace=True, trace_mode="raster"), "points": dict(use_trace=True, trace_mode="points"),
            "none": dict(use_trace=False)}


def evaluate(ex: DiffusionExecutor, ds: ExecutorDataset, batches: int, batch_size: int) -> dict[str, float]:
    """Held-out action MAE over the executed steps and progress MAE."""
    ex.eval()
    loader = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=0,
                                         generator=torch.Generator().manual_seed(0))
    s, e = ex.cfg.n_obs_steps - 1, ex.cfg.n_obs_steps - 1 + ex.cfg.n_action_steps
    err = prog = n = 0.0
    for i, b in enumerate(loader):
        if i >= batches:
            break
        b = batch_to_device(b, ex.device)
        pred = ex.predict_action_chunk(b, generator=torch.Generator().manual_seed(i))
        valid = (~b[schema.ACTION_IS_PAD_KEY][:, s:e]).unsqueeze(-1).float()
        err += float(((pred[:, s:e] - b[schema.ACTION_KEY][:, s:e]).abs() * valid).sum() / (valid.sum() * 7).clamp_min(1))
        prog += float((ex.last_progress - b[schema.PROGRESS_KEY]).abs().mean())
        n += 1
    return {"action_mae": err / max(n, 1), "progress_mae": prog / max(n, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=None, help="LeRobotDataset root (default: a synthetic one)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--val-fraction", type=float, default=0.2)
    ap.add_argument("--eval-batches", type=int, default=4)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--small", action="store_true", help="tiny network at 32 x 32 (smoke runs)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    tmp = tempfile.TemporaryDirectory()
    root = args.dataset
    base: dict = {}
    if args.small:
        base = dict(image_size=(32, 32), vision_channels=(16, 16, 32), spatial_softmax_keypoints=16,
                    down_dims=(32, 64), cond_dim=32, text_encoder="hash", text_dim=64)
    if root is None:
        from executor_vla.synthetic import make_synthetic_dataset

        root = f"{tmp.name}/ds"
        size = base.get("image_size", (128, 128))
        make_synthetic_dataset(root, n_episodes=10, subgoals_per_episode=2, frames_per_subgoal=20, image_size=size)
    from lerobot.datasets.lerobot_dataset import LeRobotDatasetMetadata

    n_eps = LeRobotDatasetMetadata("tandem/dataset", root=root).total_episodes
    n_val = max(1, int(round(n_eps * args.val_fraction)))
    train_eps, val_eps = list(range(n_eps - n_val)), list(range(n_eps - n_val, n_eps))
    results: dict = {"dataset": str(root) if args.dataset else "synthetic", "steps": args.steps,
                     "train_episodes": len(train_eps), "val_episodes": len(val_eps), "variants": {}}
    for name in args.variants:
        cfg = ExecutorConfig(**{**base, **VARIANTS[name]})
        train_ds = ExecutorDataset(root, cfg, episodes=train_eps)
        val_ds = ExecutorDataset(root, cfg, episodes=val_eps)
        torch.manual_seed(0)
        ex = DiffusionExecutor(cfg)
        ex.set_stats(train_ds.stats)
        tcfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, num_workers=0, log_every=max(1, args.steps // 10),
                           save_every=10 ** 9, warmup_steps=min(500, args.steps // 10), device="auto", seed=0)
        t = time.perf_counter()
        trainer = Trainer(ex, train_ds, tcfg, f"{tmp.name}/{name}")
        hist = trainer.train(progress=False)
        r = evaluate(trainer.ema_executor(), val_ds, args.eval_batches, args.batch_size)
        r.update(train_s=time.perf_counter() - t, final_loss=hist[-1]["loss"])
        results["variants"][name] = r
        print(json.dumps({name: r}), flush=True)
    print(json.dumps(results, indent=2))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
