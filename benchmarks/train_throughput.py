"""Training throughput (samples/s) of tandem's executor against LeRobot's DiffusionPolicy, same run.

Each model does full training steps (forward, backward, AdamW step) on the same in-memory batch
(2 cameras at 128 x 128, To = 2, proprio 8, its own action horizon), so data loading is excluded and
only the model is compared:

* ``tandem``: default ``ExecutorConfig`` (text + goal image + raster trace conditioning; the text
  embeddings are precomputed per text as in training, the trace raster is drawn per sample);
* ``lerobot_default``: LeRobot's DiffusionPolicy default config, ``pretrained_backbone_weights=None``;
* ``lerobot_our_size``: LeRobot's DiffusionPolicy at our sizes (see ``executor_latency.py``).

``--data`` also times the tandem data pipeline (``ExecutorDataset`` over a synthetic 128 x 128
LeRobotDataset, PNG decoding included) in samples/s.

Usage::

    python benchmarks/train_throughput.py --batch-size 32 --steps 3 --out runs/throughput.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from executor_latency import CAMS, H, W, lerobot_policy, tandem_executor  # noqa: E402


def _steps(step_fn, steps: int, batch_size: int, device: str = "cpu", warmup: int = 1) -> dict[str, float]:
    """Median wall time of ``step_fn`` (a CUDA device is synchronised before each clock read)."""
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    for _ in range(warmup):
        step_fn()
    ts = []
    for _ in range(steps):
        sync()
        t = time.perf_counter()
        step_fn()
        sync()
        ts.append(time.perf_counter() - t)
    med = statistics.median(ts)
    return {"median_step_s": med, "samples_per_s": batch_size / med, "steps": steps, "batch_size": batch_size}


def _autocast(device: str, bf16: bool):
    """bf16 autocast on ``device`` when ``bf16`` (mixed precision, as ``train.mixed_precision=bf16``), else a no-op."""
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=bf16)


def bench_tandem(batch_size: int, steps: int, device: str = "cpu", bf16: bool = False,
                 size: tuple[int, int] = (H, W), **overrides) -> dict:
    """Full training steps of the default image ``DiffusionExecutor`` at ``size`` px (``overrides`` to its config)
    on ``device``."""
    from executor_vla.network import TEXT_EMB_KEY
    from tandem.core import dataset_schema as schema

    h, w = size
    ex = tandem_executor(image_size=(h, w), **overrides).train()
    cfg = ex.cfg
    g = torch.Generator().manual_seed(0)
    b = {schema.image_key(c): torch.rand(batch_size, 2, 3, h, w, generator=g) for c in CAMS}
    b[schema.STATE_KEY] = torch.randn(batch_size, 2, 8, generator=g)
    b[TEXT_EMB_KEY] = torch.randn(batch_size, cfg.text_dim, generator=g)
    b[schema.GOAL_IMAGE_KEY] = torch.rand(batch_size, 3, h, w, generator=g)
    b[schema.TRACE_KEY] = torch.rand(batch_size, 16, 2, generator=g) * h
    b[schema.TRACE_MASK_KEY] = torch.ones(batch_size, 16)
    b[schema.ACTION_KEY] = torch.rand(batch_size, cfg.horizon, 7, generator=g) * 2 - 1
    b[schema.ACTION_IS_PAD_KEY] = torch.zeros(batch_size, cfg.horizon, dtype=torch.bool)
    b[schema.PROGRESS_KEY] = torch.rand(batch_size, generator=g)
    b[schema.SUBGOAL_SUCCESS_KEY] = torch.zeros(batch_size)
    ex.to(device)
    b = {k: v.to(device) for k, v in b.items()}
    opt = torch.optim.AdamW(ex.parameters(), lr=1e-4)

    def step():
        with _autocast(device, bf16):
            loss = ex.compute_loss(b)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()

    r = _steps(step, steps, batch_size, device, warmup=1 if device == "cpu" else 3)
    r["params_M"] = sum(p.numel() for p in ex.parameters()) / 1e6
    return r


def bench_lerobot(our_size: bool, batch_size: int, steps: int, device: str = "cpu", bf16: bool = False,
                  size: tuple[int, int] = (H, W)) -> dict:
    """Full training steps of LeRobot's DiffusionPolicy (default or our sizes) at ``size`` px on ``device``."""
    h, w = size
    pol = lerobot_policy(our_size, train=True, device=device, size=size)
    hz = pol.config.horizon
    g = torch.Generator().manual_seed(0)
    b = {f"observation.images.{c}": torch.rand(batch_size, 2, 3, h, w, generator=g) for c in CAMS}
    b["observation.state"] = torch.randn(batch_size, 2, 8, generator=g)
    b["action"] = torch.rand(batch_size, hz, 7, generator=g) * 2 - 1
    b["action_is_pad"] = torch.zeros(batch_size, hz, dtype=torch.bool)
    b = {k: v.to(device) for k, v in b.items()}
    opt = torch.optim.AdamW(pol.parameters(), lr=1e-4)

    def step():
        with _autocast(device, bf16):
            loss, _ = pol.forward(b)
        opt.zero_grad()
        loss.backward()
        opt.step()

    r = _steps(step, steps, batch_size, device, warmup=1 if device == "cpu" else 3)
    r["params_M"] = sum(p.numel() for p in pol.parameters()) / 1e6
    return r


def bench_data(batch_size: int, batches: int) -> dict:
    from executor_vla.data import ExecutorDataset
    from executor_vla.synthetic import make_synthetic_dataset
    from executor_vla.text_encoder import HashTextEncoder

    with tempfile.TemporaryDirectory() as d:
        make_synthetic_dataset(f"{d}/ds", n_episodes=4, frames_per_subgoal=30, image_size=(H, W))
        cfg = tandem_executor().cfg
        ds = ExecutorDataset(f"{d}/ds", cfg, text_encoder=HashTextEncoder(cfg.text_dim))
        loader = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=0)
        it = iter(loader)
        next(it)
        t = time.perf_counter()
        n = 0
        for _ in range(batches):
            try:
                n += next(it)["action"].shape[0]
            except StopIteration:
                it = iter(loader)
        return {"samples_per_s": n / (time.perf_counter() - t), "num_workers": 0, "image_size": [H, W]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    ap.add_argument("--skip-lerobot-default", action="store_true")
    ap.add_argument("--data", action="store_true", help="also time the tandem data pipeline")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    res: dict = {"torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count()}
    res["tandem"] = bench_tandem(args.batch_size, args.steps)
    print(json.dumps({"tandem": res["tandem"]}), flush=True)
    res["lerobot_our_size"] = bench_lerobot(True, args.batch_size, args.steps)
    print(json.dumps({"lerobot_our_size": res["lerobot_our_size"]}), flush=True)
    if not args.skip_lerobot_default:
        res["lerobot_default"] = bench_lerobot(False, args.batch_size, max(1, args.steps // 2))
    res["speedup"] = {f"tandem/{k}": res["tandem"]["samples_per_s"] / res[k]["samples_per_s"]
                      for k in ("lerobot_default", "lerobot_our_size") if k in res}
    if args.data:
        res["tandem_data_pipeline"] = bench_data(args.batch_size, 5)
    print(json.dumps(res, indent=2))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
