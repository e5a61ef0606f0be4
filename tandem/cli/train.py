"""``tandem-train``: train the conditioned diffusion executor (or the flat baseline) on a tandem dataset.

Examples::

    tandem-train executor=track dataset.root=data/stack_three_lowdim # the track executor (CPU, minutes)
    tandem-train executor=track train=debug_track                    # CI: a tiny problem, learned in seconds
    tandem-train dataset.root=data/stack_three                       # subgoal-conditioned image executor
    tandem-train executor=flat dataset.root=data/stack_three         # flat baseline (instruction only)
    tandem-train executor=track executor.conditioning_source=instruction executor.scene_input=objects_3d \
        dataset.root=data/stack_three_lowdim   # flat baseline with the learned high level's object keypoints
    tandem-train dataset.root=... executor.trace_mode=points         # ablation: trace as points
    tandem-train dataset.root=... resume=outputs/train/X/checkpoints/step_0005000
    tandem-train dataset.root=... eval.every=5000 eval.tasks=[stack_three] eval.seeds=10
    tandem-train train=debug                                         # CI: seconds, synthetic data
    accelerate launch -m tandem.cli.train dataset.root=... train.device=cuda   # multi-GPU

Config groups: ``executor`` (``configs/executor/{track,diffusion,flat}.yaml``) and ``train``
(``configs/train/{default,debug}.yaml``). Checkpoints go to ``<output_dir>/checkpoints/step_N/``: one every
``train.save_every_minutes`` (and every ``train.save_every`` steps, if set) and one at the end, of which the last
``train.keep_checkpoints``, the best (by validation loss, else training loss) and the final one stay on disk;
``checkpoints/kept.json`` and ``summary.json`` name the final (``checkpoint``) and the best (``best_checkpoint``).

The whole config is typed (``TrainRunConfig``: ``train`` is ``executor_vla.train.TrainConfig``, the network
fields of ``executor`` are validated by ``ExecutorConfig``) and checked before any data is read.

In-sim evaluation (``eval.every > 0``) is wired here, not in ``executor_vla`` (which may not import the
simulator): :func:`build_eval_fn` runs the trained executor over ``eval.tasks`` x ``eval.seeds`` under the stack
of the matching ``configs/eval.yaml`` variant (``flat`` for a flat executor, ``oracle_diffusion`` otherwise), built
by :mod:`tandem.runtime.registry`, and reports success rates.
"""

from __future__ import annotations

import functools
import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, override

from tandem.cli.common import (
    CONFIG_DIR,
    fail,
    hydra_main,
    load_config,
    make_output_folder,
    one_dataset_source,
    prepare_runtime,
    synthetic_dataset,
    synthetic_on,
    to_container,
)
from tandem.core.errors import ConfigError
from tandem.runtime.config import FieldError, Schema, component, deferred_checks

prepare_runtime()

#: The variants of ``configs/eval.yaml`` that the in-sim evaluation runs the executor in training under: the flat
#: baseline's stack for a flat executor (``conditioning_source="instruction"``), the oracle stack otherwise.
EVAL_VARIANTS: dict[str, str] = {"instruction": "flat", "subgoal": "oracle_diffusion"}


@dataclass
class SyntheticDatasetConfig(Schema):
    """``dataset.synthetic``: a tiny generated dataset (CI): ``episodes`` (0, the default: none, train on
    ``dataset.root``), ``image_size`` [H, W] px (None: the executor's ``image_size``; 32 x 32 for one without).
    Set from the command line with ``dataset.synthetic.episodes=N``."""

    episodes: int = 0
    image_size: tuple[int, int] | None = None

    @override
    def check(self) -> None:
        if self.episodes < 0:
            raise FieldError("episodes", f"must be >= 0 (0: no synthetic dataset), got {self.episodes}")
        if self.image_size is not None and (len(self.image_size) != 2 or min(self.image_size) < 8):
            raise FieldError("image_size", f"must be [H, W] with H, W >= 8 px, got {list(self.image_size)}")


@dataclass
class TrainDatasetConfig(Schema):
    """``dataset``: what to train on.

    Attributes:
        root: a LeRobotDataset v3 in the :mod:`tandem.core.dataset_schema` layout (tandem-collect output).
        repo_id: its LeRobot repo id (never fetched). episodes: optional list of episode indices.
        synthetic: generate a tiny synthetic dataset instead (CI; ``synthetic.episodes`` > 0). cache: decode all
        frames into RAM once.
        val_episodes: ``executor=track``: hold out the last N episodes for the validation loss.
    """

    root: str | None = None
    repo_id: str = "tandem/dataset"
    episodes: list[int] | None = None
    synthetic: SyntheticDatasetConfig | None = field(default_factory=SyntheticDatasetConfig)
    cache: bool = False
    val_episodes: int = 0

    @override
    def check(self) -> None:
        if self.val_episodes < 0:
            raise FieldError("val_episodes", f"must be >= 0, got {self.val_episodes}")
        one_dataset_source({"root": self.root is not None, "synthetic": synthetic_on(self.synthetic)},
                           "LeRobotDataset dir")


@dataclass
class TrainEvalConfig(Schema):
    """``eval``: in-sim evaluation during training.

    Attributes:
        every: every N steps (0 = off). tasks: the tasks. seeds: episodes per task, >= 1.
        seed_start: the first seed (held out: demonstrations are collected from seed 0).
        max_steps: control-step cap per episode (None: the task's).
    """

    every: int = 0
    tasks: list[str] = field(default_factory=lambda: ["stack_three"])
    seeds: int = 5
    seed_start: int = 1000
    max_steps: int | None = None

    @override
    def check(self) -> None:
        if self.every < 0:
            raise FieldError("every", f"must be >= 0, got {self.every}")
        if self.seeds < 1:
            raise FieldError("seeds", f"must be >= 1, got {self.seeds}")


@functools.cache
def _train_run_config() -> type:
    """The ``tandem-train`` schema; ``train`` is ``executor_vla.train.TrainConfig`` itself (it imports torch, so
    this schema is built only by this entry point)."""
    from executor_vla.train import TrainConfig

    @dataclass
    class TrainRunConfig(Schema):
        """``tandem-train``: ``executor`` (the network, :class:`~tandem.runtime.config.DiffusionExecutorConfig`),
        ``train`` (``executor_vla.train.TrainConfig``), ``dataset``, ``eval``, ``resume`` (a checkpoint directory to
        continue from), ``debug_roundtrip``, ``torch_threads`` and ``output_dir``."""

        executor: Any = component("executor", "diffusion")
        train: TrainConfig = field(default_factory=TrainConfig)
        dataset: TrainDatasetConfig = field(default_factory=TrainDatasetConfig)
        eval: TrainEvalConfig = field(default_factory=TrainEvalConfig)
        resume: str | None = None
        debug_roundtrip: bool = False
        torch_threads: int | None = None
        output_dir: str = "outputs/train"

        def check(self) -> None:
            if self.executor.name not in ("diffusion", "track"):
                raise FieldError("executor", f"must be a diffusion or track executor config, got "
                                             f"{self.executor.name!r}")
            if self.torch_threads is not None and self.torch_threads < 1:
                raise FieldError("torch_threads", f"must be >= 1 or null, got {self.torch_threads}")

    TrainRunConfig.__annotations__["train"] = TrainConfig  # a local class: give OmegaConf the type, not its name
    return TrainRunConfig


def _register_primary_config() -> None:
    from hydra.core.config_store import ConfigStore

    from tandem.runtime.config import register_configs

    register_configs()
    cs = ConfigStore.instance()
    with deferred_checks():
        cs.store(name="train_schema", node=_train_run_config())
    cs.store(name="tandem_train", node={
        "defaults": ["train_schema", {"executor": "diffusion"}, {"train": "default"}, "_self_"],
        # Hydra writes nothing itself: make_output_folder makes output_dir once the input is validated and writes
        # Hydra's record there (configs/demo.yaml says the same)
        "hydra": {"run": {"dir": "."}, "job": {"chdir": False}, "output_subdir": None,
                  "job_logging": {"handlers": {"file": {"delay": True}}, "root": {"handlers": ["console"]}}},
    })


def load_train_config(cfg: Any) -> Any:
    """``cfg`` as a checked ``TrainRunConfig`` (every key typed; the network fields validated by ExecutorConfig).

    Raises:
        ConfigError: a bad key or value, named.
    """
    if type(cfg).__name__ == "TrainRunConfig":
        return cfg
    c = load_config(_train_run_config(), cfg)
    ex = executor_config(c)
    if c.executor.name == "track" and ex.scene_input != "none" and c.eval.every:
        raise FieldError("eval.every", f"must be 0 for executor.scene_input={ex.scene_input}: the in-training "
                                       "evaluation has no state model to read the objects' keypoints with; evaluate "
                                       "the checkpoints with tandem-eval 'run_variants=[flat_state]'")
    return c


def executor_config(cfg: Any):
    """The network config of ``cfg.executor``: ``TrackExecutorConfig`` (``executor=track``) or ``ExecutorConfig``.

    Raises:
        ConfigError: an invalid network configuration (the config class's own validation).
    """
    if cfg.executor.name == "track":
        from executor_vla.track_config import TrackExecutorConfig

        return TrackExecutorConfig.from_dict(cfg.executor.network_fields())
    from executor_vla.config import ExecutorConfig

    return ExecutorConfig.from_dict(cfg.executor.network_fields())


def eval_stack(cfg: Any, task: str, conditioning: str) -> Any:
    """The stack the in-sim evaluation runs the executor in training under, for ``task``: the ``configs/eval.yaml``
    variant :data:`EVAL_VARIANTS` names for the executor's ``conditioning`` (planner, verifier, goals, agent), with
    the env of the executor's cameras and image size; goal images and traces in its ``trace_camera``."""
    from omegaconf import OmegaConf

    from tandem.runtime.config import StackConfig, load

    track = cfg.executor.name == "track"
    name = EVAL_VARIANTS[conditioning] if not (track and conditioning == "subgoal") else "oracle_track"
    variant = to_container(OmegaConf.load(Path(CONFIG_DIR) / "eval.yaml").variants[name])
    ex = executor_config(cfg)
    goals = dict(variant.get("goals") or {"name": "none"})
    if goals.get("name") == "oracle" and not track:
        goals["camera"] = ex.trace_camera
    env = ({"render": False, "control_freq": 20} if track else
           {"cameras": list(ex.cameras), "image_size": list(ex.image_size), "control_freq": 20})
    return load(StackConfig, {
        "task": {"name": task}, "planner": variant["planner"], "verifier": variant["verifier"], "goals": goals,
        "executor": {"name": "diffusion"}, "perturb": {"name": "none"}, "agent": variant.get("agent") or {},
        "env": env,
    })


def build_eval_fn(cfg: Any):
    """``executor -> {"success_rate/<task>": ..., "success_rate": ...}`` running the sim, or None if ``eval.every == 0``.

    Each episode runs the :class:`tandem.runtime.agent.HierarchicalAgent` around the executor being trained, under
    the stack of :func:`eval_stack`: the flat baseline's (``planner=instruction``, ``verifier=oracle_task``, the
    whole episode as one subgoal) for a flat executor, the oracle planner, verifier and goal producer otherwise.
    """
    cfg = load_train_config(cfg)
    ev = cfg.eval
    if not ev.every:
        return None

    from tandem.runtime.registry import build_stack
    from tandem.runtime.rollout import run_episode

    conditioning = executor_config(cfg).conditioning_source

    def eval_fn(executor) -> dict[str, float]:
        metrics: dict[str, float] = {}
        wins = total = 0
        for task in ev.tasks:
            stack = build_stack(eval_stack(cfg, task, conditioning), executor=executor)
            try:
                ok = 0
                for seed in range(ev.seed_start, ev.seed_start + ev.seeds):
                    res = run_episode(stack.env, stack.agent, seed=seed, out_dir=None, record_video=False,
                                      max_steps=ev.max_steps)
                    ok += int(bool(res.summary.get("success")))
            finally:
                stack.close()
            metrics[f"success_rate/{task}"] = ok / ev.seeds
            wins, total = wins + ok, total + ev.seeds
        metrics["success_rate"] = wins / max(total, 1)
        return metrics

    return eval_fn


def _dataset(cfg: Any, ex_cfg, out_dir: Path):
    from executor_vla.data import ExecutorDataset

    root = _dataset_root(cfg, out_dir, ex_cfg.trace_len)
    episodes = list(cfg.dataset.episodes) if cfg.dataset.episodes else None
    return ExecutorDataset(root, ex_cfg, repo_id=cfg.dataset.repo_id, episodes=episodes, cache=cfg.dataset.cache), root


def _dataset_root(cfg: Any, out_dir: Path, trace_len: int = 16, labels: bool = False) -> str:
    """``dataset.root``, or a synthetic dataset written under ``out_dir`` (``dataset.synthetic``; with the
    ``labels.*`` features when ``labels``).

    Raises:
        ConfigError: ``dataset.root`` is not a directory; ``out_dir`` holds another synthetic dataset.
    """
    from executor_vla.synthetic import make_synthetic_dataset

    d = cfg.dataset
    if synthetic_on(d.synthetic):
        root = out_dir / "synthetic_dataset"
        size = tuple(d.synthetic.image_size or getattr(cfg.executor, "image_size", None) or (32, 32))
        return synthetic_dataset(root, d.synthetic.episodes, size, lambda: make_synthetic_dataset(
            root, n_episodes=int(d.synthetic.episodes), image_size=size, trace_len=trace_len, labels=labels))
    if not Path(d.root).is_dir():
        raise ConfigError(f"dataset.root={d.root!r} is not a directory (a LeRobotDataset written by tandem-collect)")
    return str(d.root)


def run_track(cfg: Any, out_dir: Path, command: str) -> dict[str, Any]:
    """``executor=track``: train :class:`executor_vla.track_policy.TrackExecutor` on an in-memory dataset.

    The wall-clock budget (``train.max_minutes``) and snapshots (``train.snapshot_minutes``) make the learning
    curve of ``benchmarks/learning_curve.py``; ``dataset.val_episodes`` holds episodes out for the validation loss.
    """
    import dataclasses

    from executor_vla.dataset_writer import episode_seeds
    from executor_vla.track_config import TrackExecutorConfig
    from executor_vla.track_data import TrackDataset
    from executor_vla.track_policy import TrackExecutor
    from executor_vla.train import Trainer

    if cfg.resume:
        raw = json.loads((Path(cfg.resume) / "config.json").read_text())
        ex_cfg = TrackExecutorConfig.from_dict(raw["executor"])
    else:
        ex_cfg = executor_config(cfg)
    root = _dataset_root(cfg, out_dir, ex_cfg.trace_len, labels=ex_cfg.scene_input != "none")
    if ex_cfg.scene_input != "none" and not ex_cfg.scene_symmetries:
        ex_cfg = scene_vocabulary(ex_cfg, root)
    episodes = list(cfg.dataset.episodes) if cfg.dataset.episodes else None
    dataset = TrackDataset(root, ex_cfg, episodes=episodes, val_episodes=cfg.dataset.val_episodes)
    if not ex_cfg.tasks and not ex_cfg.objects:
        ex_cfg = dataclasses.replace(ex_cfg, tasks=dataset.tasks, objects=dataset.objects)
    if ex_cfg.scene_input != "none" and not ex_cfg.scene_objects:  # the order of the dataset's keypoint features
        ex_cfg = dataclasses.replace(ex_cfg, scene_objects=dataset.scene_objects)
    executor = TrackExecutor(ex_cfg, stats=dataset.stats())
    if ex_cfg.use_text:
        dataset.attach_text_embeddings(executor.text_encoder.encode(dataset.texts))
    tcfg = cfg.train
    meta = {"dataset": {"root": root, "episodes": len(dataset.episodes), "frames": dataset.num_frames,
                        "train_frames": len(dataset.train_index), "val_frames": len(dataset.val_index),
                        "seeds": episode_seeds(root, dataset.episodes)}}
    trainer = Trainer(executor, dataset, tcfg, out_dir, eval_fn=build_eval_fn(cfg), command=command, extra_meta=meta)
    if cfg.resume:
        trainer.resume(cfg.resume)
    history = trainer.train()
    ckpt = trainer.last_checkpoint or trainer.save()
    losses = [r["loss"] for r in history if "loss" in r]
    summary: dict[str, Any] = {"checkpoint": str(ckpt), **best_checkpoint(trainer), "step": trainer.step,
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


def scene_vocabulary(ex_cfg: Any, root: str | Path) -> Any:
    """``ex_cfg`` (a ``TrackExecutorConfig`` with ``scene_input``) with its ``scene_objects`` (the dataset's label
    objects, unless given) and their ``scene_symmetries``: the orders of the dataset task's
    ``TaskDefinition.object_symmetries`` (the state model's too, ``tandem-train-state``), 1 for objects it does not
    name or a task the simulator does not know.

    Raises:
        DatasetSchemaError: not a dataset, or one without object labels.
    """
    import dataclasses

    from executor_vla.dataset_writer import read_info
    from tandem.cli.train_state import task_symmetries
    from tandem.core import dataset_schema as schema
    from tandem.core.errors import DatasetSchemaError

    info = read_info(root)
    vocab = schema.label_vocabulary_of(info.get("features", {}))
    if vocab is None:
        raise DatasetSchemaError(f"{root}: executor.scene_input={ex_cfg.scene_input} trains on the objects' keypoints "
                                 f"({schema.LABEL_KEYPOINTS_3D_KEY}), which this dataset lacks; collect it with "
                                 "tandem-collect (dataset.labels=true)")
    objects = tuple(ex_cfg.scene_objects) or vocab[0]
    orders = task_symmetries(root, None)
    return dataclasses.replace(ex_cfg, scene_objects=objects, scene_symmetries=tuple(orders.get(o, 1) for o in objects))


def best_checkpoint(trainer: Any) -> dict[str, Any]:
    """``{"best_checkpoint": path, "best_score": {"val/loss" or "loss": value}}`` of the trainer's kept checkpoints
    (:class:`tandem.core.training_output.CheckpointKeeper`); empty when none was scored."""
    best = trainer.keeper.best if trainer.keeper is not None else None
    if best is None:
        return {}
    return {"best_checkpoint": str(best.path), "best_score": {trainer.keeper.score_name: best.score}}


def torch_isfinite(x: Any) -> bool:
    """Whether every entry of a torch tensor is finite."""
    import torch

    return bool(torch.isfinite(x).all())


def run(cfg: Any) -> dict[str, Any]:
    """Validate ``cfg``, then train as configured; returns a JSON-safe summary (last losses, checkpoint path, debug
    round-trip).

    Raises:
        ConfigError: bad input (named), before any data is read. OutputFolderError: ``output_dir`` cannot be
            written (before any work). A folder this run made is removed again when its input is refused.
    """
    import numpy as np
    import torch

    from executor_vla.checkpoint import read_config
    from executor_vla.dataset_writer import episode_seeds
    from executor_vla.policy import DiffusionExecutor
    from executor_vla.train import Trainer

    cfg = load_train_config(cfg)
    if cfg.torch_threads:
        torch.set_num_threads(int(cfg.torch_threads))
    out_dir = make_output_folder(cfg.output_dir, "output_dir")  # removed again if the input is then refused (fail)
    command = " ".join(shlex.quote(a) for a in ["tandem-train", *sys.argv[1:]])
    if cfg.executor.name == "track":
        return run_track(cfg, out_dir, command)
    ex_cfg = executor_config(cfg)
    if cfg.resume:
        ex_cfg, _ = read_config(cfg.resume)  # the network must match the checkpoint being resumed
    dataset, root = _dataset(cfg, ex_cfg, out_dir)
    executor = DiffusionExecutor(ex_cfg)
    executor.set_stats(dataset.stats)
    tcfg = cfg.train
    meta = {"dataset": {"root": root, "repo_id": cfg.dataset.repo_id, "episodes": len(dataset.meta.episodes),
                        "frames": len(dataset),
                        "seeds": episode_seeds(root, list(cfg.dataset.episodes) if cfg.dataset.episodes else None)}}
    trainer = Trainer(executor, dataset, tcfg, out_dir, eval_fn=build_eval_fn(cfg), command=command, extra_meta=meta)
    if cfg.resume:
        trainer.resume(cfg.resume)
    history = trainer.train()
    ckpt = trainer.last_checkpoint or trainer.save()
    summary: dict[str, Any] = {"checkpoint": str(ckpt), **best_checkpoint(trainer), "step": trainer.step,
                               "last": history[-1] if history else None}
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


def _run(cfg) -> None:
    try:
        run(cfg)
    except Exception as e:  # noqa: BLE001 - one clear line for tandem errors
        fail(e)


def main() -> None:
    """Entry point: compose ``tandem_train`` (exit status 2 on a command line Hydra cannot compose), then train."""
    _register_primary_config()
    hydra_main(config_name="tandem_train", check=lambda cfg: executor_config(load_train_config(cfg)))(_run)()


if __name__ == "__main__":
    main()
