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

    Each episode runs the :class:`tandem.runtime.agent.HierarchicalAgent` with the oracle planner, the oracle
    verifier and the oracle goal producer around the executor being trained.
    """
    ev = cfg.eval
    if not ev.every:
        return None

    from omegaconf import OmegaConf

    from tandem.runtime.agent import AgentConfig, HierarchicalAgent
    from tandem.runtime.registry import (
        build_env,
        build_goal_producer,
        build_memory,
        build_planner,
        build_verifier,
    )
    from tandem.runtime.rollout import run_episode

    ex = cfg.executor

    def eval_fn(executor) -> dict[str, float]:
        metrics: dict[str, float] = {}
        wins = total = 0
        for task in ev.tasks:
            stack_cfg = {
                "task": to_container(OmegaConf.load(Path(CONFIG_DIR) / "task" / f"{task}.yaml")),
                "planner": {"name": "oracle"}, "verifier": {"name": "oracle"},
                "goals": {"name": "oracle", "camera": ex.trace_camera}, "perturb": {"name": "none"},
                "env": {"cameras": list(ex.cameras), "image_size": list(ex.image_size), "control_freq": 20},
            }
            env = build_env(stack_cfg)
            try:
                agent = HierarchicalAgent(planner=build_planner(stack_cfg, env), verifier=build_verifier(stack_cfg, env),
                                          executor=executor, memory=build_memory(stack_cfg),
                                          goal_producer=build_goal_producer(stack_cfg, env), config=AgentConfig())
                ok = 0
                for seed in range(int(ev.seeds)):
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
    from tandem.core.errors import ConfigError

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
