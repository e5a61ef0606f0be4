"""Chunk latency and training throughput on a CUDA GPU: tandem's executors against LeRobot's DiffusionPolicy, same run.

The figures only a GPU gives (run it on a machine with one; it exits with status 2 where torch sees none). Weights
are random except the shipped track executors': latency does not depend on them. The track executors' text encoder
is replaced by the hash encoder of the same size (the MiniLM package is not needed: a subgoal's text is encoded once
per subgoal, outside the chunk).

Latency, batch 1, median wall time of one new chunk (the GPU synchronised before each clock read; host work as a
user's control loop sees it):

* ``track_<task>``: the shipped track executor ``checkpoints/<task>_diffusion`` (DDIM-10, 1 M parameters) through
  ``select_action``: ``cpu_fused`` (this machine's CPU, one thread, the numpy fused loop the CPU stack uses),
  ``cuda_eager`` (module by module) and ``cuda_graph`` (``optimize_for_inference`` on CUDA: the whole chunk replayed
  as one CUDA graph, :mod:`executor_vla.cuda_graph`);
* ``image_<px>``: the image executor at its default config (text + goal image + raster trace, 2 cameras, DDIM-10;
  84 px is the shipped image checkpoints' size, 128 px the CPU benchmark's) through ``select_action``:
  ``cuda_eager`` and ``cuda_graph``;
* ``lerobot_default_<px>``, ``lerobot_our_size_<px>``, ``lerobot_lowdim``: LeRobot's DiffusionPolicy
  (``benchmarks/executor_latency.py`` has the configs), ``predict_action_chunk``: ``cuda_eager``, and
  ``cuda_graph``: its ``generate_actions`` captured the same way (recorded as an error where capture fails).

Every graph's chunk is checked against its eager twin from the same noise (``max_abs_diff``, controller units).

Training throughput, samples/s of full steps (forward, backward, AdamW) on one in-memory batch (data loading
excluded, as ``benchmarks/train_throughput.py`` on the CPU): the image executor at 84 px against LeRobot's
DiffusionPolicy at our sizes and at its defaults (84 px), float32 and bf16 autocast, at ``--batch-sizes``. (On the
H200 of 2026-12-04 the latency part took about 3 minutes; the training part, then at batches 64 and 256 and 20 steps,
did not finish within that run's 200-s limit: docs/gpu.md.)

Usage::

    python benchmarks/executor_cuda.py --out outputs/benchmarks/cuda.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from executor_latency import (  # noqa: E402
    CAMS,
    Observation_from,
    _timeit,
    _track_subgoal,
    lerobot_lowdim_policy,
    lerobot_policy,
    tandem_executor,
)
from train_throughput import bench_lerobot, bench_tandem  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("stack_three", "nut_assembly", "pick_place_bins")


def _timed(fn, repeats: int, warmup: int, device: str) -> dict[str, float]:
    """:func:`executor_latency._timeit`, the GPU synchronised around each call on a CUDA ``device``."""
    return _timeit(fn, repeats, warmup, sync=torch.cuda.synchronize if device.startswith("cuda") else None)


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float().cpu() - b.float().cpu()).abs().max())


# ---------------------------------------------------------------- track executor
def _track(checkpoint: Path, device: str, graph: bool):
    from executor_vla.text_encoder import load_text_encoder
    from executor_vla.track_policy import TrackExecutor

    dim = json.loads((checkpoint / "config.json").read_text())["executor"]["text_dim"]
    ex = TrackExecutor.from_checkpoint(checkpoint, device=device, text_encoder=load_text_encoder("hash", dim))
    if not graph:
        ex._graphs = None  # the module path on CUDA
    ex.cfg = type(ex.cfg).from_dict({**ex.cfg.to_dict(), "tasks": [], "objects": []})  # any subgoal is fine here
    ex.set_subgoal(_track_subgoal())
    return ex


def bench_track(checkpoint: Path, repeats: int) -> dict:
    obs = Observation_from(np.array([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08], np.float32))
    out: dict = {"checkpoint": str(checkpoint.relative_to(ROOT))}
    models = {}
    for name, device, graph in (("cpu_fused", "cpu", False), ("cuda_eager", "cuda", False),
                                ("cuda_graph", "cuda", True)):
        ex = models[name] = _track(checkpoint, device, graph)

        def chunk(ex=ex):
            ex._queue.clear()  # force a new chunk on this call
            ex.select_action(obs)

        out[name] = _timed(chunk, repeats, warmup=5, device=device)
    feats = torch.from_numpy(models["cuda_eager"].features(np.stack([obs.proprio] * 2))[None])
    text = models["cuda_eager"]._text
    want = models["cuda_eager"].predict_action_chunk(feats.cuda(), text, torch.Generator().manual_seed(1))[0]
    got = models["cuda_graph"].predict_action_chunk(feats.cuda(), text, torch.Generator().manual_seed(1))[0]
    out["cuda_graph"]["max_abs_diff"] = _max_diff(got, want)
    out["params_M"] = sum(p.numel() for p in models["cuda_eager"].parameters()) / 1e6
    return out


# ---------------------------------------------------------------- image executor
def _image_obs(rng, px: int):
    from tandem.core.types import Observation

    return Observation(images={c: rng.integers(0, 255, (px, px, 3), dtype=np.uint8) for c in CAMS},
                       proprio=rng.standard_normal(8).astype(np.float32))


def _image_subgoal(rng, px: int):
    from tandem.core.types import KeypointTrace, Subgoal

    return Subgoal("sg0", "pick", ("red",), "pick up the red cube",
                   goal_image=rng.integers(0, 255, (px, px, 3), dtype=np.uint8),
                   trace=KeypointTrace("agentview", np.linspace([5, px - 10], [px - 20, 8], 16).astype(np.float32),
                                       (px, px)))


def bench_image(px: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    sub, obs = _image_subgoal(rng, px), _image_obs(rng, px)
    out: dict = {}
    models = {}
    for name, graph in (("cuda_eager", False), ("cuda_graph", True)):
        torch.manual_seed(0)
        ex = tandem_executor(text_encoder="hash", image_size=(px, px)).cuda()
        if graph:
            ex.optimize_for_inference()
        ex.set_subgoal(sub)
        models[name] = ex

        def chunk(ex=ex):
            ex._queue.clear()
            ex.select_action(obs)

        out[name] = _timed(chunk, repeats, warmup=5, device="cuda")
    eager, graphed = models["cuda_eager"], models["cuda_graph"]
    batch = eager._obs_batch() | eager._subgoal_batch
    want = eager.predict_action_chunk(batch, eager._subgoal_cond, torch.Generator().manual_seed(1))
    got = graphed.predict_action_chunk(batch, graphed._subgoal_cond, torch.Generator().manual_seed(1))
    out["cuda_graph"]["max_abs_diff"] = _max_diff(got, want)
    out["params_M"] = sum(p.numel() for p in eager.parameters()) / 1e6
    out["config"] = {"image_size": [px, px], "horizon": eager.cfg.horizon, "num_inference_steps": 10,
                     "down_dims": list(eager.cfg.down_dims)}
    return out


# ---------------------------------------------------------------- LeRobot
def bench_lerobot_chunk(pol, batch: dict[str, torch.Tensor], repeats: int) -> dict:
    """LeRobot's ``predict_action_chunk`` eager, and its ``generate_actions`` as one CUDA graph (noise as input)."""
    from executor_vla.cuda_graph import GraphedChunk

    def eager():
        pol.reset()
        with torch.no_grad():
            return pol.predict_action_chunk(batch)

    out: dict = {"cuda_eager": _timed(eager, repeats, warmup=3, device="cuda")}
    prepared = dict(batch)
    if pol.config.image_features:
        prepared["observation.images"] = torch.stack([batch[k] for k in pol.config.image_features], dim=-4)
    shape = (1, pol.config.horizon, pol.config.action_feature.shape[0])
    noise = torch.randn(shape, generator=torch.Generator().manual_seed(1)).cuda()
    try:
        graph = GraphedChunk(lambda **kw: (pol.diffusion.generate_actions(kw, noise=kw["noise"]),),
                             {**prepared, "noise": noise})
    except Exception as e:  # noqa: BLE001 - a capture failure is a result to record, not a crash
        out["cuda_graph"] = {"error": f"{type(e).__name__}: {e}"[:300]}
        return out
    inputs = {**prepared, "noise": noise}
    out["cuda_graph"] = _timed(lambda: graph(inputs), repeats, warmup=3, device="cuda")
    with torch.no_grad():
        want = pol.diffusion.generate_actions(prepared, noise=noise)
    out["cuda_graph"]["max_abs_diff"] = _max_diff(graph(inputs)[0], want)
    return out


def bench_lerobot_image(our_size: bool, px: int, repeats: int) -> dict:
    torch.manual_seed(0)
    pol = lerobot_policy(our_size, device="cuda", size=(px, px))
    g = torch.Generator().manual_seed(0)
    batch = {f"observation.images.{c}": torch.rand(1, 2, 3, px, px, generator=g).cuda() for c in CAMS}
    batch["observation.state"] = torch.randn(1, 2, 8, generator=g).cuda()
    out = bench_lerobot_chunk(pol, batch, repeats)
    out["params_M"] = sum(p.numel() for p in pol.parameters()) / 1e6
    out["config"] = {"image_size": [px, px], "horizon": pol.config.horizon, "down_dims": list(pol.config.down_dims),
                     "num_inference_steps": 10}
    return out


def bench_lerobot_lowdim(env_dim: int, repeats: int) -> dict:
    torch.manual_seed(0)
    pol = lerobot_lowdim_policy(env_dim, device="cuda")
    g = torch.Generator().manual_seed(0)
    batch = {"observation.state": torch.randn(1, 2, 8, generator=g).cuda(),
             "observation.environment_state": torch.randn(1, 2, env_dim, generator=g).cuda()}
    out = bench_lerobot_chunk(pol, batch, repeats)
    out["params_M"] = sum(p.numel() for p in pol.parameters()) / 1e6
    return out


# ---------------------------------------------------------------- training
def _train_step_rate(model: str, batch_size: int, steps: int, bf16: bool) -> float:
    if model == "tandem_image_84":
        return bench_tandem(batch_size, steps, "cuda", bf16, (84, 84), text_encoder="hash")["samples_per_s"]
    return bench_lerobot(model == "lerobot_our_size_84", batch_size, steps, "cuda", bf16, (84, 84))["samples_per_s"]


def bench_training(batch_sizes: list[int], steps: int, on_row=None) -> dict:
    """Samples/s per model (rows) at each batch size in float32 and bf16 autocast (columns); an error (out of
    memory at a large batch, say) is recorded by its type. ``on_row(result so far)`` after each model's row."""
    cols = [f"b{b}_{p}" for b in batch_sizes for p in ("fp32", "bf16")]
    rows: dict[str, list] = {}
    for model in ("tandem_image_84", "lerobot_our_size_84", "lerobot_default_84"):
        rows[model] = []
        for b in batch_sizes:
            for bf16 in (False, True):
                try:
                    rows[model].append(_train_step_rate(model, b, steps, bf16))
                except Exception as e:  # noqa: BLE001 - a result to record, not a crash of the run
                    rows[model].append(type(e).__name__)
                torch.cuda.empty_cache()
        if on_row is not None:
            on_row({"columns": cols, "rows": rows})
    return {"columns": cols, "rows": rows}


# ---------------------------------------------------------------- main
def _table(res: dict) -> str:
    rows = ["| model | " + " | ".join(("cpu_fused", "cuda_eager", "cuda_graph")) + " | graph max diff |",
            "| --- | --- | --- | --- | --- |"]
    for name, r in res["latency_ms"].items():
        cells = []
        for k in ("cpu_fused", "cuda_eager", "cuda_graph"):
            v = r.get(k)
            cells.append("" if v is None else (f"{v['median_ms']:.2f}" if "median_ms" in v else "capture failed"))
        diff = r.get("cuda_graph", {}).get("max_abs_diff")
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {'' if diff is None else f'{diff:.1e}'} |")
    rows.append("")
    rows.append("| training (samples/s) | " + " | ".join(res["train_samples_per_s"]["columns"]) + " |")
    rows.append("| --- |" + " --- |" * len(res["train_samples_per_s"]["columns"]))
    for name, vals in res["train_samples_per_s"]["rows"].items():
        rows.append(f"| {name} | " + " | ".join(f"{v:.0f}" if isinstance(v, float) else str(v) for v in vals) + " |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=100, help="timed chunks per variant")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[64], help="training batch sizes")
    ap.add_argument("--train-steps", type=int, default=10, help="timed training steps per setting")
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--skip-latency", action="store_true", help="the training throughput only")
    ap.add_argument("--out", default=None, help="write the JSON result here too (after every measurement)")
    args = ap.parse_args()
    if args.repeats < 1 or args.train_steps < 1 or min(args.batch_sizes) < 1:
        ap.error("--repeats, --train-steps and --batch-sizes must be >= 1")
    if not torch.cuda.is_available():
        print("executor_cuda.py needs a CUDA device; torch sees none", file=sys.stderr)
        return 2
    torch.set_num_threads(1)  # the CPU reference runs on one thread, as the CPU stack does
    torch.backends.cudnn.benchmark = True
    res: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                 "cuda": torch.version.cuda, "latency_ms": {}, "train_samples_per_s": {"columns": [], "rows": {}}}
    out = Path(args.out) if args.out else None

    def record(section: dict, key: str, value: dict) -> None:
        """Keep, print and (``--out``) write each result as soon as it is measured: a run stopped at its time
        limit keeps what it measured."""
        section[key] = value
        print(json.dumps({key: value}), flush=True)
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(res, indent=1))

    lat = res["latency_ms"]
    if not args.skip_latency:
        for task in TASKS:
            ckpt = ROOT / "checkpoints" / f"{task}_diffusion"
            if (ckpt / "config.json").is_file():
                record(lat, f"track_{task}", bench_track(ckpt, args.repeats))
        for px in (84, 128):
            record(lat, f"image_{px}", bench_image(px, args.repeats))
        env_dim = _track(ROOT / "checkpoints" / "stack_three_diffusion", "cpu", False).obs_dim - 10  # as the CPU bench
        record(lat, "lerobot_lowdim", bench_lerobot_lowdim(env_dim, args.repeats))
        for px in (84, 128):
            for our in (True, False):
                record(lat, f"lerobot_{'our_size' if our else 'default'}_{px}",
                       bench_lerobot_image(our, px, args.repeats if our else max(10, args.repeats // 4)))
    if not args.skip_train:
        record(res, "train_samples_per_s", bench_training(
            args.batch_sizes, args.train_steps, on_row=lambda part: record(res, "train_samples_per_s", part)))
    print(_table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
