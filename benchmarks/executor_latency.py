"""Chunk latency of tandem's executors against LeRobot's DiffusionPolicy, same inputs, same run.

Track executor (the CPU design: proprio + 3-D trace + text; ``--track-checkpoint`` or random weights), median wall
time of one new chunk through ``select_action`` (features, normalisation, sampling, clipping included):

* ``track_ddim10`` / ``track_ddim5``: diffusion head, DDIM with 10 / 5 steps, through the fused DDIM loop the
  loaded executor uses (:mod:`executor_vla.fused_mlp_ddim`); ``track_ddim10_module_path``: the same chunk module by
  module (as in training mode), the fused loop's peer; ``track_mse``: one forward pass;
* ``lerobot_lowdim``: LeRobot's DiffusionPolicy on the same low-dimensional inputs (``observation.state`` and the
  trace features as ``observation.environment_state``, as LeRobot's Push-T keypoint policies), at our horizon
  16 and U-Net (64, 128, 256), DDIM-10: the peer, measured in the same run.

Image executor (the GPU recipe), median wall time of ``predict_action_chunk`` at batch 1, 2 cameras at 128 x 128,
To = 2:

* ``tandem``: ``DiffusionExecutor`` with the default ``ExecutorConfig`` (text + goal image + raster trace,
  DDIM-10), timed through ``select_action`` (numpy -> torch conversion, obs stacking, clipping included);
* ``lerobot_default``: ``lerobot.policies.diffusion`` at its default config (ResNet18 per camera,
  U-Net (512, 1024, 2048), horizon 64) with ``pretrained_backbone_weights=None`` and DDIM-10;
* ``lerobot_our_size``: LeRobot's DiffusionPolicy at our sizes (horizon 16, 8 action steps,
  U-Net (64, 128, 256), GroupNorm, DDIM-10; its backbone is still ResNet18, the smallest it supports).

Weights are random: latency does not depend on them. The ratios ``lerobot_*/tandem`` are printed.
``--closed-loop`` also runs an executor in the robosuite env (stack_three) and reports the env step time
(rendering included where the stack consumes cameras) against the policy's time per step, from one run:

* ``--track-checkpoint``: the track executor under the oracle planner's 3-D traces. It consumes no camera, so the
  env renders nothing (``env.render=false``); the ratio policy / env is the issue's "adds <= 5 %" figure
  (``policy_over_env``, wall time; ``policy_over_env_cpu`` is the same ratio of this thread's CPU time, which a
  machine shared with other jobs disturbs less);
* ``--checkpoint``: an image executor at the cameras and image size it was trained on (or random weights at
  128 x 128).

Usage::

    python benchmarks/executor_latency.py --threads 1 --repeats 50 --closed-loop \
        --track-checkpoint checkpoints/stack_three_diffusion --out outputs/benchmarks/latency.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

H = W = 128
CAMS = ("agentview", "wrist")


def _timeit(fn, repeats: int, warmup: int = 1, sync=None) -> dict[str, float]:
    """Median and min wall time of ``fn`` (ms), and the median CPU time of this thread (``median_cpu_ms``: on a
    machine shared with other jobs it leaves out the time the thread waited for a core). ``sync`` (e.g.
    ``torch.cuda.synchronize``) runs before the timing and after each call, so asynchronous device work is counted."""
    sync = sync or (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    ts, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.thread_time()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    return {"median_ms": 1e3 * statistics.median(ts), "min_ms": 1e3 * min(ts),
            "median_cpu_ms": 1e3 * statistics.median(cpu), "repeats": repeats}


def _obs(rng):
    from tandem.core.types import Observation

    return Observation(images={c: rng.integers(0, 255, (H, W, 3), dtype=np.uint8) for c in CAMS},
                       proprio=rng.standard_normal(8).astype(np.float32))


def _subgoal(rng):
    from tandem.core.types import KeypointTrace, Subgoal

    return Subgoal("sg0", "pick", ("red",), "pick up the red cube",
                   goal_image=rng.integers(0, 255, (H, W, 3), dtype=np.uint8),
                   trace=KeypointTrace("agentview", np.linspace([20, 100], [90, 30], 16).astype(np.float32)))


def tandem_executor(num_inference_steps: int = 10, **overrides):
    from executor_vla.config import ExecutorConfig
    from executor_vla.policy import DiffusionExecutor

    ex = DiffusionExecutor(ExecutorConfig(num_inference_steps=num_inference_steps, **overrides)).eval()
    ex.set_stats({"action": {"min": [-1] * 7, "max": [1] * 7}, "observation.state": {"min": [-1] * 8, "max": [1] * 8}})
    return ex


def bench_tandem(repeats: int, num_inference_steps: int = 10) -> dict:
    rng = np.random.default_rng(0)
    ex = tandem_executor(num_inference_steps)
    ex.set_subgoal(_subgoal(rng))
    obs = _obs(rng)

    def chunk():
        ex._queue.clear()  # force a new chunk on this call
        ex.select_action(obs)

    def subgoal():
        ex.set_subgoal(_subgoal(rng))

    res = _timeit(chunk, repeats)
    res["set_subgoal_ms"] = _timeit(subgoal, max(3, repeats // 2))["median_ms"]
    res["params_M"] = sum(p.numel() for p in ex.parameters()) / 1e6
    res["config"] = {"num_inference_steps": num_inference_steps, "scheduler": ex.cfg.inference_scheduler,
                     "horizon": ex.cfg.horizon, "n_action_steps": ex.cfg.n_action_steps}
    return res


def lerobot_policy(our_size: bool, train: bool = False, device: str = "cpu", size: tuple[int, int] = (H, W)):
    """LeRobot's DiffusionPolicy on 2 cameras of ``size`` px + proprio 8, DDIM-10: its defaults or our sizes."""
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

    inputs = {f"observation.images.{c}": PolicyFeature(type=FeatureType.VISUAL, shape=(3, *size)) for c in CAMS}
    inputs["observation.state"] = PolicyFeature(type=FeatureType.STATE, shape=(8,))
    outputs = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(7,))}
    kw = dict(input_features=inputs, output_features=outputs, pretrained_backbone_weights=None,
              noise_scheduler_type="DDIM", num_inference_steps=10, device=device, push_to_hub=False)
    if our_size:
        kw.update(horizon=16, n_action_steps=8, drop_n_last_frames=7, down_dims=(64, 128, 256),
                  diffusion_step_embed_dim=64, use_group_norm=True, spatial_softmax_num_keypoints=32)
    cfg = DiffusionConfig(**kw)
    pol = DiffusionPolicy(cfg).to(device)
    return pol.train() if train else pol.eval()


def bench_lerobot(our_size: bool, repeats: int) -> dict:
    pol = lerobot_policy(our_size)
    g = torch.Generator().manual_seed(0)
    batch = {f"observation.images.{c}": torch.rand(1, 2, 3, H, W, generator=g) for c in CAMS}
    batch["observation.state"] = torch.randn(1, 2, 8, generator=g)

    def chunk():
        pol.reset()
        pol.predict_action_chunk(batch)

    res = _timeit(chunk, repeats)
    res["params_M"] = sum(p.numel() for p in pol.parameters()) / 1e6
    res["config"] = {"horizon": pol.config.horizon, "n_action_steps": pol.config.n_action_steps,
                     "down_dims": list(pol.config.down_dims), "scheduler": "DDIM", "num_inference_steps": 10}
    return res


def track_executor(checkpoint: str | None, **overrides):
    """A trained track executor (inference ``overrides`` applied), or random weights at the default size."""
    from executor_vla.track_config import TrackExecutorConfig
    from executor_vla.track_policy import TrackExecutor

    if checkpoint:
        return TrackExecutor.from_checkpoint(checkpoint, overrides=overrides or None)
    cfg = TrackExecutorConfig(hidden_dim=256, **overrides)
    return TrackExecutor(cfg).eval()


def _track_subgoal():
    from tandem.core.types import Subgoal, Trace3D

    pts = np.array([[0.0, 0.0, 1.0], [0.05, 0.1, 0.92], [0.05, 0.1, 0.82], [0.05, 0.1, 0.82], [0.05, 0.1, 0.94]])
    return Subgoal("sg0", "pick", ("red",), "pick up the red cube",
                   trace_3d=Trace3D(points=pts, yaw=np.full(5, 0.4), gripper=np.array([-1, -1, -1, 1, 1.0])))


def bench_track(repeats: int, checkpoint: str | None, fused: bool = True, **overrides) -> dict:
    ex = track_executor(checkpoint, **overrides)
    if fused:
        ex.optimize_for_inference()
    else:
        ex._fused = None  # the module-by-module path (nn.Module dispatch per layer), as in training mode
    ex.cfg = type(ex.cfg).from_dict({**ex.cfg.to_dict(), "tasks": [], "objects": []})  # any subgoal is fine here
    ex.set_subgoal(_track_subgoal())
    obs = Observation_from(np.array([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08], np.float32))

    def chunk():
        ex._queue.clear()  # force a new chunk on this call
        ex.select_action(obs)

    res = _timeit(chunk, repeats, warmup=5)
    res["params_M"] = sum(p.numel() for p in ex.parameters()) / 1e6
    res["config"] = {"head": ex.cfg.head, "num_inference_steps": ex.cfg.num_inference_steps,
                     "fused_ddim": ex._fused is not None,
                     "horizon": ex.cfg.horizon, "n_action_steps": ex.cfg.n_action_steps, "hidden_dim": ex.cfg.hidden_dim}
    res["amortised_ms_per_step"] = res["median_ms"] / ex.cfg.n_action_steps
    return res


def Observation_from(proprio: np.ndarray):  # noqa: N802 - a tiny factory named after what it returns
    from tandem.core.types import Observation

    return Observation(images={}, proprio=proprio)


def lerobot_lowdim_policy(env_dim: int, device: str = "cpu"):
    """LeRobot's DiffusionPolicy on low-dimensional inputs only (``observation.state`` 8 + ``environment_state``
    ``env_dim``), our sizes, DDIM-10, in eval mode on ``device``."""
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

    inputs = {"observation.state": PolicyFeature(type=FeatureType.STATE, shape=(8,)),
              "observation.environment_state": PolicyFeature(type=FeatureType.ENV, shape=(env_dim,))}
    outputs = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(7,))}
    cfg = DiffusionConfig(input_features=inputs, output_features=outputs, noise_scheduler_type="DDIM",
                          num_inference_steps=10, device=device, push_to_hub=False, horizon=16, n_action_steps=8,
                          drop_n_last_frames=7, down_dims=(64, 128, 256), diffusion_step_embed_dim=64)
    return DiffusionPolicy(cfg).to(device).eval()


def bench_lerobot_lowdim(repeats: int, env_dim: int) -> dict:
    """LeRobot's DiffusionPolicy on low-dimensional inputs only (state + environment_state), our sizes, DDIM-10."""
    pol = lerobot_lowdim_policy(env_dim)
    g = torch.Generator().manual_seed(0)
    batch = {"observation.state": torch.randn(1, 2, 8, generator=g),
             "observation.environment_state": torch.randn(1, 2, env_dim, generator=g)}

    def chunk():
        pol.reset()
        with torch.no_grad():
            pol.predict_action_chunk(batch)

    res = _timeit(chunk, repeats, warmup=3)
    res["params_M"] = sum(p.numel() for p in pol.parameters()) / 1e6
    res["config"] = {"horizon": 16, "n_action_steps": 8, "down_dims": [64, 128, 256], "scheduler": "DDIM",
                     "num_inference_steps": 10, "environment_state_dim": env_dim}
    return res


def bench_closed_loop_track(steps: int, checkpoint: str, task: str = "stack_three", seed: int = 1000) -> dict:
    """Env step time without rendering (the track stack consumes no camera) against the track executor's time per
    step, following the oracle planner's 3-D traces on ``task`` from ``seed`` (default stack_three, seed 1000, a
    held-out scene; a libero_10 task needs the LIBERO extra)."""
    from planner_vlm.oracle_planner import OraclePlanner
    from tandem.core.types import Subgoal
    from tandem.runtime.config import EnvConfig, TaskConfig
    from tandem.runtime.registry import build_sim_env

    env = build_sim_env(TaskConfig(name=task), EnvConfig(render=False))
    try:
        from sim.goal_render import OracleGoalProducer

        ex = track_executor(checkpoint)
        ex.action_low, ex.action_high = env.action_low, env.action_high
        goals = OracleGoalProducer(env, goal_image=False, trace_points=False)
        obs, _ = env.reset(seed=seed)
        planner = OraclePlanner()
        planner.reset(env.spec)
        t_env = t_pol = c_env = c_pol = 0.0  # wall and this thread's CPU time (s)
        n = 0
        while n < steps:
            from memory.task_memory import TaskMemoryV1

            mem = TaskMemoryV1()
            mem.start_episode(env.spec)
            plan = planner.plan(obs, mem)
            nxt = plan.next
            if nxt is None:
                obs, _ = env.reset(seed=seed + n)
                continue
            ex.set_subgoal(goals.produce(Subgoal(nxt.id, nxt.skill, nxt.args, nxt.text), obs), env.spec)
            for _ in range(150):
                t, c = time.perf_counter(), time.thread_time()
                a = ex.select_action(obs)
                t_pol += time.perf_counter() - t
                c_pol += time.thread_time() - c
                t, c = time.perf_counter(), time.thread_time()
                obs, *_ = env.step(a)
                t_env += time.perf_counter() - t
                c_env += time.thread_time() - c
                n += 1
                if ex.subgoal_done() or n >= steps:
                    break
        return {"steps": n, "hz": n / (t_env + t_pol), "policy_ms_per_step": 1e3 * t_pol / n,
                "env_ms_per_step": 1e3 * t_env / n, "policy_over_env": t_pol / t_env,
                "policy_cpu_ms_per_step": 1e3 * c_pol / n, "env_cpu_ms_per_step": 1e3 * c_env / n,
                "policy_over_env_cpu": c_pol / c_env, "rendering": "none",
                "task": task, "seed": seed, "checkpoint": checkpoint}
    finally:
        env.close()


def bench_closed_loop(steps: int, checkpoint: str | None = None) -> dict:
    """Control steps/s of the executor in the robosuite env with rendering: random weights at 128 x 128, or
    a trained ``checkpoint`` (rendering at the cameras and image size it was trained on)."""
    from tandem.runtime.config import EnvConfig, TaskConfig
    from tandem.runtime.registry import build_sim_env

    cams, size = list(CAMS), [H, W]
    if checkpoint:
        from executor_vla.policy import DiffusionExecutor

        ex = DiffusionExecutor.from_checkpoint(checkpoint)
        cams, size = list(ex.cfg.cameras), list(ex.cfg.image_size)
    env = build_sim_env(TaskConfig(name="stack_three"), EnvConfig(cameras=tuple(cams), image_size=tuple(size)))
    try:
        rng = np.random.default_rng(0)
        if not checkpoint:
            ex = tandem_executor()
        obs, _ = env.reset(seed=0)
        sg = _subgoal(rng)
        sg.goal_image = obs.images["agentview"].copy()
        ex.set_subgoal(sg)
        t_env = t_pol = 0.0
        for _ in range(steps):
            t = time.perf_counter()
            a = ex.select_action(obs)
            t_pol += time.perf_counter() - t
            t = time.perf_counter()
            obs, *_ = env.step(a * 0.1)
            t_env += time.perf_counter() - t
        total = t_env + t_pol
        return {"steps": steps, "hz": steps / total, "policy_ms_per_step": 1e3 * t_pol / steps,
                "env_and_render_ms_per_step": 1e3 * t_env / steps, "task": "stack_three",
                "checkpoint": checkpoint, "cameras": cams, "image_size": size}
    finally:
        env.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch.set_num_threads values to measure")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--lerobot-repeats", type=int, default=3, help="repeats for LeRobot's default (slow)")
    ap.add_argument("--closed-loop", action="store_true", help="also run the executor in the robosuite env")
    ap.add_argument("--closed-loop-steps", type=int, default=80)
    ap.add_argument("--closed-loop-task", default="stack_three", help="the task of --closed-loop's track run")
    ap.add_argument("--closed-loop-seed", type=int, default=1000, help="the first seed of --closed-loop's track run")
    ap.add_argument("--checkpoint", default=None, help="closed loop with this trained checkpoint (its image size)")
    ap.add_argument("--skip-lerobot-default", action="store_true")
    ap.add_argument("--track-checkpoint", default=None, help="a trained track executor (default: random weights)")
    ap.add_argument("--skip-image", action="store_true", help="measure the track executor and its peer only")
    ap.add_argument("--out", default=None, help="write the JSON result here too")
    args = ap.parse_args()
    result: dict = {"inputs": {"batch": 1, "cameras": list(CAMS), "image_size": [H, W], "n_obs_steps": 2},
                    "cpu_count": os.cpu_count(), "torch": torch.__version__, "by_threads": {}}
    for th in args.threads:
        torch.set_num_threads(th)
        tr: dict = {"track_ddim10": bench_track(args.repeats, args.track_checkpoint, num_inference_steps=10),
                    "track_ddim10_module_path": bench_track(args.repeats, args.track_checkpoint, fused=False,
                                                            num_inference_steps=10),
                    "track_ddim5": bench_track(args.repeats, args.track_checkpoint, num_inference_steps=5)}
        if args.track_checkpoint is None:
            tr["track_mse"] = bench_track(args.repeats, None, head="mse")
        env_dim = 2 * (track_executor(args.track_checkpoint).obs_dim - 10)  # the trace features of To = 2 frames
        tr["lerobot_lowdim"] = bench_lerobot_lowdim(args.repeats, env_dim // 2)
        tr["ratios"] = {"lerobot_lowdim/track_ddim10": tr["lerobot_lowdim"]["median_ms"] / tr["track_ddim10"]["median_ms"],
                        "module_path/fused": (tr["track_ddim10_module_path"]["median_ms"]
                                              / tr["track_ddim10"]["median_ms"])}
        result.setdefault("track_by_threads", {})[str(th)] = tr
        print(json.dumps({th: {k: (v["median_ms"] if isinstance(v, dict) and "median_ms" in v else v)
                               for k, v in tr.items()}}), flush=True)
        if args.skip_image:
            continue
        r: dict = {"tandem": bench_tandem(args.repeats),
                   "tandem_ddim5": bench_tandem(args.repeats, num_inference_steps=5),
                   "lerobot_our_size": bench_lerobot(True, args.repeats)}
        if not args.skip_lerobot_default:
            r["lerobot_default"] = bench_lerobot(False, args.lerobot_repeats)
        base = r["tandem"]["median_ms"]
        r["ratios"] = {f"{k}/tandem": r[k]["median_ms"] / base for k in ("lerobot_default", "lerobot_our_size") if k in r}
        r["tandem_amortised_ms_per_step"] = base / 8
        result["by_threads"][str(th)] = r
        print(json.dumps({th: {k: (v["median_ms"] if isinstance(v, dict) and "median_ms" in v else v)
                               for k, v in r.items()}}), flush=True)
    if args.closed_loop:
        torch.set_num_threads(min(args.threads))
        runs = {"closed_loop_track": (lambda: bench_closed_loop_track(args.closed_loop_steps, args.track_checkpoint,
                                                                      args.closed_loop_task, args.closed_loop_seed))}
        if args.track_checkpoint is None:
            runs.pop("closed_loop_track")
        if not args.skip_image:
            runs["closed_loop"] = lambda: bench_closed_loop(args.closed_loop_steps, args.checkpoint)
        for key, fn in runs.items():
            try:
                result[key] = fn()
                result[key]["torch_threads"] = min(args.threads)
            except Exception as e:  # noqa: BLE001 - report, do not hide, a sim that cannot start here
                result[key] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(result, indent=2))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
