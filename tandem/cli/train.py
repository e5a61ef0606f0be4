"""``tandem-train``: train the conditioned diffusion executor (or the flat baseline) on a tandem dataset.

Examples::

    tandem-train dataset.root=data/stack_three                       # subgoal-conditioned executor
    tandem-train executor=flat dataset.root=data/stack_three         # flat baseline (instruction only)
    tandem-train dataset.root=... executor.trace_mode=points         # ablation: trace as points
    tandem-train dataset.root=... resume=outputs/train/X/checkpoints/step_0005000
    tandem-train dataset.root=... eval.every=5000 eval.tasks=[stack_three] eval.seeds=10
    tandem-train train=debug                                         # CI: seconds, synthetic data
    accelerate launch -m tandem.cli.train dataset.root=... train.device=cuda   # multi-GPU

Config groups: ``executor`` (``configs/executor/{diffusion,flat}.yaml``) and ``train``
(``configs/train/{default,debug}.yaml``). Checkpoints go to ``<output_dir>/checkpoints/step_N/``.

In-sim evaluation (``eval.every > 0``) is wired here, not in ``executor_vla`` (which may not import the
simulator): :func:`build_eval_fn` runs the oracle planner, verifier and goal producer over
``eval.tasks`` x ``eval.seeds`` with the trained executor and reports success rates.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from tandem.cli.common import CONFIG_DIR, fail, prepare_runtime, to_container

prepare_runtime()

#: keys of ``cfg.executor`` that are wiring, not network configuration.
_WIRING_KEYS = ("name", "checkpoint", "device", "torch_threads")


def _register_primary_config() -> None:
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="tandem_train", node={
        "defaults": [{"executor": "diffusion"}, {"train": "default"}, "_self_"],
        "hydra": {"run": {"dir": "${output_dir}"}, "job": {"chdir": False}, "output_subdir": ".hydra"},
    })


def executor_config(cfg: Any):
    """``ExecutorConfig`` from ``cfg.executor`` (wiring keys dropped)."""
    from executor_vla.config import ExecutorConfig

    d = {k: v for k, v in to_container(cfg.executor).items() if k not in _WIRING_KEYS}
    return ExecutorConfig.from_dict(d)


def build_eval_fn(cfg: Any):
    """``executor -> {"success_rate/<task>": ..., "success_rate": ...}`` running the sim, or None if ``eval.every == 0``.

    Each episode runs the :class:`tandem.agent.HierarchicalAgent` with the oracle planner, the oracle
    verifier and the oracle goal producer around the executor being trained.
    """
    ev = cfg.eval
    if not ev.every:
        return None

    from omegaconf import OmegaConf

    from tandem.agent import HierarchicalAgent
    from tandem.assembly import (
        build_agent_config,
        build_env,
        build_goal_producer,
        build_memory,
        build_planner,
        build_verifier,
    )
    from tandem.rollout import run_episode

    ex = cfg.executor
    flat = ex.get("conditioning_source", "subgoal") == "instruction"
    track = ex.get("name") == "track"

    def eval_fn(executor) -> dict[str, float]:
        metrics: dict[str, float] = {}
        wins = total = 0
        for task in ev.tasks:
            stack_cfg = {
                "task": to_container(OmegaConf.load(Path(CONFIG_DIR) / "task" / f"{task}.yaml")),
                # a flat executor runs the whole task as one subgoal, judged by the task's success
                "planner": {"name": "instruction" if flat else "oracle"},
                "verifier": {"name": "oracle_task" if flat else "oracle"},
                "goals": ({"name": "oracle", "goal_image": False, "trace": False, "trace_3d": True} if track
                          else {"name": "oracle", "camera": ex.trace_camera}),
                "perturb": {"name": "none"},
                "env": ({"render": False, "control_freq": 20} if track else
                        {"cameras": list(ex.cameras), "image_size": list(ex.image_size), "control_freq": 20}),
                "agent": {"subgoal_step_budget": None} if flat else {},
            }
            env = build_env(stack_cfg)
            try:
                agent = HierarchicalAgent(planner=build_planner(stack_cfg, env), verifier=build_verifier(stack_cfg, env),
                                          executor=executor, memory=build_memory(stack_cfg),
                                          goal_producer=build_goal_producer(stack_cfg, env),
                                          config=build_agent_config(stack_cfg))
                ok = 0
                start = int(ev.get("seed_start", 1000))
                for seed in range(start, start + int(ev.seeds)):
                    res = run_episode(env, agent, seed=seed, out_dir=None, record_video=False,
                                      max_steps=ev.max_steps)
                    ok += int(bool(res.summary.get("success")))
            finally:
                env.close()
            metrics[f"success_rate/{task}"] = ok / max(int(ev.seeds), 1)
            wins, total = wins + ok, total + int(ev.seeds)
        metrics["success_rate"] = wins / max(total, 1)
        return metrics

    return eval_fn


def _dataset(cfg: Any, ex_cfg, out_dir: Path):
    from executor_vla.data import ExecutorDataset
    from executor_vla.synthetic import make_synthetic_dataset
    from tandem.errors import ConfigError

    d = cfg.dataset
    root = d.root
    if d.synthetic:
        root = out_dir / "synthetic_dataset"
        if not root.exists():
            make_synthetic_dataset(root, n_episodes=int(d.synthetic.episodes),
                                   image_size=tuple(d.synthetic.image_size), trace_len=ex_cfg.trace_len)
    if root is None:
        raise ConfigError("dataset.root is not set: pass dataset.root=<LeRobotDataset dir> (or use train=debug)")
    episodes = list(d.episodes) if d.episodes else None
    cache = bool(d.get("cache", False))
    return ExecutorDataset(root, ex_cfg, repo_id=d.repo_id, episodes=episodes, cache=cache), str(root)


def _dataset_root(cfg: Any, out_dir: Path, trace_len: int = 16) -> str:
    """``dataset.root``, or a synthetic dataset written under ``out_dir`` (``dataset.synthetic``).

    Raises:
        ConfigError: neither is set.
    """
    from executor_vla.synthetic import make_synthetic_dataset
    from tandem.errors import ConfigError

    d = cfg.dataset
    if d.synthetic:
        root = out_dir / "synthetic_dataset"
        if not root.exists():
            make_synthetic_dataset(root, n_episodes=int(d.synthetic.episodes),
                                   image_size=tuple(d.synthetic.image_size), trace_len=trace_len)
        return str(root)
    if d.root is None:
        raise ConfigError("dataset.root is not set: pass dataset.root=<LeRobotDataset dir> (or use train=debug)")
    return str(d.root)


def run_track(cfg: Any, out_dir: Path, command: str) -> dict[str, Any]:
    """``executor=track``: train :class:`executor_vla.track_policy.TrackExecutor` on an in-memory dataset.

    The wall-clock budget (``train.max_minutes``) and snapshots (``train.snapshot_minutes``) make the learning
    curve of ``benchmarks/learning_curve.py``; ``dataset.val_episodes`` holds episodes out for the validation loss.
    """
    import dataclasses

    from executor_vla.track_config import TrackExecutorConfig
    from executor_vla.track_data import TrackDataset
    from executor_vla.track_policy import TrackExecutor
    from executor_vla.train import TrainConfig, Trainer

    if cfg.resume:
        raw = json.loads((Path(cfg.resume) / "config.json").read_text())
        ex_cfg = TrackExecutorConfig.from_dict(raw["executor"])
    else:
        ex_cfg = TrackExecutorConfig.from_dict(
            {k: v for k, v in to_container(cfg.executor).items() if k not in _WIRING_KEYS})
    root = _dataset_root(cfg, out_dir, ex_cfg.trace_len)
    episodes = list(cfg.dataset.episodes) if cfg.dataset.episodes else None
    dataset = TrackDataset(root, ex_cfg, episodes=episodes, val_episodes=int(cfg.dataset.get("val_episodes", 0) or 0))
    if not ex_cfg.tasks and not ex_cfg.objects:
        ex_cfg = dataclasses.replace(ex_cfg, tasks=dataset.tasks, objects=dataset.objects)
    executor = TrackExecutor(ex_cfg, stats=dataset.stats())
    if ex_cfg.use_text:
        dataset.attach_text_embeddings(executor.text_encoder.encode(dataset.texts))
    tcfg = TrainConfig(**to_container(cfg.train))
    meta = {"dataset": {"root": root, "episodes": len(dataset.episodes), "frames": dataset.num_frames,
                        "train_frames": len(dataset.train_index), "val_frames": len(dataset.val_index)}}
    trainer = Trainer(executor, dataset, tcfg, out_dir, eval_fn=build_eval_fn(cfg), command=command, extra_meta=meta)
    if cfg.resume:
        trainer.resume(cfg.resume)
    history = trainer.train()
    ckpt = trainer.last_checkpoint or trainer.save()
    losses = [r["loss"] for r in history if "loss" in r]
    summary: dict[str, Any] = {"checkpoint": str(ckpt), "step": trainer.step,
                               "train_minutes": round(trainer._elapsed_s() / 60.0, 2),
                               "first_loss": losses[0] if losses else None, "last": history[-1] if history else None}
    if cfg.debug_roundtrip:
        loaded = TrackExecutor.from_checkpoint(ckpt)
        batch = next(dataset.batches(2, seed=0))
        chunk, _ = loaded.predict_action_chunk(batch["obs"], batch.get("text"))
        summary["debug_roundtrip"] = {"checkpoint": str(ckpt), "chunk_shape": list(chunk.shape),
                                      "chunk_finite": bool(torch_isfinite(chunk))}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(json.dumps(summary, indent=2, default=str))
    return summary


def torch_isfinite(x: Any) -> bool:
    """Whether every entry of a torch tensor is finite."""
    import torch

    return bool(torch.isfinite(x).all())


def run(cfg: Any) -> dict[str, Any]:
    """Train as configured; returns a JSON-safe summary (last losses, checkpoint path, debug round-trip)."""
    import numpy as np
    import torch

    from executor_vla.checkpoint import read_config
    from executor_vla.policy import DiffusionExecutor
    from executor_vla.train import TrainConfig, Trainer

    if cfg.torch_threads:
        torch.set_num_threads(int(cfg.torch_threads))
    out_dir = Path(cfg.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    command = " ".join(shlex.quote(a) for a in ["tandem-train", *sys.argv[1:]])
    if cfg.executor.get("name") == "track":
        return run_track(cfg, out_dir, command)
    ex_cfg = executor_config(cfg)
    if cfg.resume:
        ex_cfg, _ = read_config(cfg.resume)  # the network must match the checkpoint being resumed
    dataset, root = _dataset(cfg, ex_cfg, out_dir)
    executor = DiffusionExecutor(ex_cfg)
    executor.set_stats(dataset.stats)
    tcfg = TrainConfig(**to_container(cfg.train))
    meta = {"dataset": {"root": root, "repo_id": cfg.dataset.repo_id, "episodes": len(dataset.meta.episodes),
                        "frames": len(dataset)}}
    trainer = Trainer(executor, dataset, tcfg, out_dir, eval_fn=build_eval_fn(cfg), command=command, extra_meta=meta)
    if cfg.resume:
        trainer.resume(cfg.resume)
    history = trainer.train()
    ckpt = trainer.last_checkpoint or trainer.save()
    summary: dict[str, Any] = {"checkpoint": str(ckpt), "step": trainer.step, "last": history[-1] if history else None}
    if cfg.debug_roundtrip:
        # resume from the checkpoint for one more step, then reload the final checkpoint and sample.
        ex2 = DiffusionExecutor(ex_cfg)
        ex2.set_stats(dataset.stats)
        t2 = Trainer(ex2, dataset, tcfg, out_dir, command=command + " (debug resume)", extra_meta=meta)
        t2.resume(ckpt)
        resumed_from = t2.step
        t2.train(steps=resumed_from + 1, progress=False)
        ckpt2 = t2.last_checkpoint or t2.save()
        loaded = DiffusionExecutor.from_checkpoint(ckpt2)
        item = dataset[0]
        batch = {k: v[None] for k, v in item.items() if isinstance(v, torch.Tensor)}
        chunk = loaded.predict_action_chunk(batch, generator=torch.Generator().manual_seed(0))
        summary["debug_roundtrip"] = {"resumed_from": resumed_from, "resumed_to": t2.step, "checkpoint": str(ckpt2),
                                      "chunk_shape": list(chunk.shape),
                                      "chunk_finite": bool(np.isfinite(chunk.numpy()).all())}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(json.dumps(summary, indent=2, default=str))
    return summary


def main() -> None:
    import hydra

    _register_primary_config()

    @hydra.main(config_path=CONFIG_DIR, config_name="tandem_train", version_base="1.3")
    def _main(cfg) -> None:
        try:
            run(cfg)
        except Exception as e:  # noqa: BLE001 - one clear line for tandem errors
            fail(e)

    _main()


if __name__ == "__main__":
    main()
