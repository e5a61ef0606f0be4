"""``tandem-train-state``: train the learned state model (``planner=learned``, ``verifier=learned``) on one CPU core.

Examples::

    tandem-train-state dataset.root=datasets/stack_three_84                 # 30 min, 1 thread (the recipe)
    tandem-train-state dataset.root=datasets/stack_three_84 train.max_minutes=5
    tandem-train-state state_train=debug                                     # CI: a tiny synthetic problem

The dataset must have the camera's images (``observation.images.agentview``) and the ``labels.*`` features
(``tandem-collect ... 'env.image_size=[84,84]'``). The network's vocabulary is the dataset's; the objects' visual
symmetry orders come from the dataset's task (``TaskDefinition.object_symmetries``) unless ``model.symmetries``
names them. The checkpoint (``<output_dir>/checkpoint``: safetensors + JSON + the command) records the camera
calibration fitted from the labels, the predicate temperature and the confidence reference; ``summary.json`` the
held-out metrics (keypoint px and 3-D errors, predicate accuracy, ECE) and the training time.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, override

from tandem.cli.common import (
    fail,
    hydra_main,
    load_config,
    make_output_folder,
    one_dataset_source,
    prepare_runtime,
    synthetic_dataset,
    synthetic_on,
)
from tandem.core.number_fields import in_range
from tandem.runtime.config import FieldError, Schema, check_fields, deferred_checks

prepare_runtime()


@dataclass
class SyntheticSection(Schema):
    """``dataset.synthetic``: a generated dataset (:mod:`planner_vlm.learned.synthetic`): episodes (0, the default:
    none), frames per episode, ``[H, W]`` px. Set from the command line with ``dataset.synthetic.episodes=N``."""

    episodes: int = 0
    frames: int = 40
    image_size: tuple[int, int] = (48, 48)

    @override
    def check(self) -> None:
        if self.episodes < 0:
            raise FieldError("episodes", f"must be >= 0 (0: no synthetic dataset), got {self.episodes}")
        if self.frames < 2:
            raise FieldError("frames", f"must be >= 2, got {self.frames}")
        if len(self.image_size) != 2 or min(self.image_size) < 8:
            raise FieldError("image_size", f"must be [H, W] with H, W >= 8 px, got {list(self.image_size)}")


def synthetic_perception_dataset(out_dir: Path, section: SyntheticSection) -> str:
    """The state and trace CLIs' generated dataset (:mod:`planner_vlm.learned.synthetic`) under
    ``out_dir/synthetic_dataset``, written once (:func:`tandem.cli.common.synthetic_dataset`).

    Raises:
        ConfigError: ``out_dir`` already holds another synthetic dataset.
    """
    from planner_vlm.learned.synthetic import make_synthetic_dataset

    root = out_dir / "synthetic_dataset"
    return synthetic_dataset(root, section.episodes, section.image_size, lambda: make_synthetic_dataset(
        str(root), episodes=section.episodes, frames=section.frames, image_size=tuple(section.image_size)))


@dataclass
class StateDatasetSection(Schema):
    """``dataset``: where the frames come from.

    Attributes:
        root: a tandem dataset with images and labels. roots: several of one task instead (e.g. shards collected in
        parallel), read as one, the last root's episodes last. synthetic: generate one instead (CI).
        camera: the camera the model reads. frame_stride: keep every n-th frame. episodes: episode indices (null:
        all). val_episodes: the last N are held out. max_frames: cap on frames (evenly spaced).
    """

    root: str | None = None
    roots: list[str] | None = None
    synthetic: SyntheticSection | None = field(default_factory=SyntheticSection)
    camera: str = "agentview"
    frame_stride: int = 2
    episodes: list[int] | None = None
    val_episodes: int = 10
    max_frames: int | None = None

    @override
    def check(self) -> None:
        one_dataset_source({"root": self.root is not None, "roots": self.roots is not None,
                            "synthetic": synthetic_on(self.synthetic)}, "tandem dataset with images and labels")
        if self.roots is not None and not self.roots:
            raise FieldError("roots", "is empty: name one or more tandem datasets")
        if self.frame_stride < 1 or self.val_episodes < 0:
            raise FieldError("frame_stride", f"must be >= 1 (and val_episodes >= 0), got {self.frame_stride}, "
                                             f"{self.val_episodes}")


@dataclass
class StateModelSection(Schema):
    """``model``: the network (``planner_vlm.learned.state_config.StateModelConfig`` without the vocabulary, which is
    the dataset's). ``symmetries``: object -> order (null: the dataset task's ``object_symmetries``)."""

    channels: tuple[int, int, int, int] = (16, 16, 32, 48)
    head_hidden: int = 128
    use_proprio: bool = True
    heatmap_stride: int = 2
    yaw_head: bool = True
    symmetries: dict[str, int] | None = None


@dataclass
class StateTrainSection(Schema):
    """``train``: the fields of ``planner_vlm.learned.state_config.StateTrainConfig`` (validated by it)."""

    batch_size: int = 32
    lr: float = in_range(2e-3, gt=0)
    weight_decay: float = in_range(1e-4, ge=0)
    max_minutes: float = in_range(30.0, gt=0, unit="min")
    max_steps: int | None = None
    clock: str = "wall"
    eval_every: int = 500
    frame_stride: int | None = None
    val_episodes: int | None = None
    seed: int = 0
    px_weight: float = 1.0
    heatmap_weight: float = 0.5
    metric_weight: float = 0.5
    predicate_weight: float = 2.0
    yaw_weight: float = 1.0
    brightness: float = 0.15
    contrast: float = 0.15
    val_frames: int = 2000
    init_from: str | None = None
    gripper_jitter: float = in_range(0.0, ge=0, le=1)

    @override
    def check(self) -> None:
        from planner_vlm.learned.state_config import StateTrainConfig

        check_fields(StateTrainConfig, self.fields())  # numbers and their declared ranges: train.<field> named
        try:
            StateTrainConfig(**self.fields())
        except Exception as e:  # noqa: BLE001 - its ConfigError names the field
            raise FieldError("", str(e)) from e

    def fields(self) -> dict[str, Any]:
        """The StateTrainConfig fields (frame_stride / val_episodes live in ``dataset``)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("frame_stride", "val_episodes")}
        return d


@dataclass
class TrainStateRunConfig(Schema):
    """``tandem-train-state`` (``configs/train_state.yaml``): ``dataset``, ``model``, ``train``, ``output_dir``,
    ``torch_threads`` (1: one core, as the recipe)."""

    dataset: StateDatasetSection = field(default_factory=StateDatasetSection)
    model: StateModelSection = field(default_factory=StateModelSection)
    train: StateTrainSection = field(default_factory=StateTrainSection)
    output_dir: str = "outputs/train_state"
    torch_threads: int = 1

    @override
    def check(self) -> None:
        if self.torch_threads < 1:
            raise FieldError("torch_threads", f"must be >= 1, got {self.torch_threads}")


def dataset_task(root: str | Path) -> str | None:
    """The task name recorded in a tandem dataset's collector journal (its first episode's), or None."""
    p = Path(root) / "meta" / "tandem_collect.json"
    try:
        eps = json.loads(p.read_text()).get("episodes") or []
    except (OSError, ValueError):
        return None
    return str(eps[0].get("task")) if eps and eps[0].get("task") else None


def task_symmetries(root: str | Path, given: dict[str, int] | None) -> dict[str, int]:
    """``given`` if set, else the symmetry orders of the dataset's task (``TaskDefinition.object_symmetries``; none
    for a task the simulator does not know, e.g. a robot's or the synthetic one)."""
    if given is not None:
        return {str(k): int(v) for k, v in dict(given).items()}
    task = dataset_task_definition(root)
    return task.object_symmetries() if task is not None else {}


def dataset_task_definition(root: str | Path) -> Any:
    """The simulator's ``TaskDefinition`` of the task recorded in the dataset (:func:`dataset_task`), or None for a
    task the simulator does not know (a robot's, the synthetic one) or a dataset without a journal. Raises nothing."""
    task = dataset_task(root)
    from sim.tasks.registry import make_task, task_names

    return make_task(task) if task in task_names() else None


def task_workcell(root: str | Path) -> dict[str, Any]:
    """The static scene geometry of the dataset's task (``TaskDefinition.workcell``; empty for a task the simulator
    does not know)."""
    task = dataset_task_definition(root)
    return task.workcell() if task is not None else {}


def task_pick_geometry(root: str | Path) -> dict[str, Any]:
    """The static facts of the dataset task's expert pick geometry (``TaskDefinition.pick_geometry``; empty for a
    task the simulator does not know, or one without)."""
    task = dataset_task_definition(root)
    return task.pick_geometry() if task is not None else {}


def task_support_z(root: str | Path) -> float | None:
    """The surface the dataset task's objects rest on (``TaskDefinition.support_z``; None for a task the simulator
    does not know, or one that has not opted in)."""
    task = dataset_task_definition(root)
    return task.support_z() if task is not None else None


def command_line(name: str) -> str:
    """The command that is running, for checkpoints (``name`` + the Hydra overrides)."""
    return " ".join(shlex.quote(a) for a in [name, *sys.argv[1:]])


def run(cfg: Any) -> dict[str, Any]:
    """Validate ``cfg``, load the frames, train, calibrate; write the checkpoint and ``summary.json``; return the
    summary.

    Raises:
        ConfigError: bad input (named), before any data is read. DatasetSchemaError: a dataset without images or labels.
    """
    import torch

    from planner_vlm.learned.state_config import StateModelConfig, StateTrainConfig
    from planner_vlm.learned.state_data import StateDataset
    from planner_vlm.learned.state_train import train_state_model

    c = load_config(TrainStateRunConfig, cfg)
    torch.set_num_threads(int(c.torch_threads))
    out = make_output_folder(c.output_dir, "output_dir")  # removed again if the input is then refused (fail)
    d = c.dataset
    root: str | list[str] | None = list(d.roots) if d.roots is not None else d.root
    if synthetic_on(d.synthetic):
        root = synthetic_perception_dataset(out, d.synthetic)
    data = StateDataset(root, camera=d.camera, frame_stride=d.frame_stride, episodes=d.episodes,
                        val_episodes=d.val_episodes, max_frames=d.max_frames)
    m = c.model
    model_cfg = StateModelConfig(objects=data.objects, predicates=data.predicates,
                                 symmetries=task_symmetries(data.root, m.symmetries), camera=d.camera,
                                 image_size=data.image_size, channels=tuple(m.channels), head_hidden=m.head_hidden,
                                 use_proprio=m.use_proprio, heatmap_stride=m.heatmap_stride, yaw_head=m.yaw_head)
    tcfg = StateTrainConfig(**c.train.fields(), frame_stride=d.frame_stride, val_episodes=d.val_episodes)
    print(f"state model: {len(data)} frames ({len(data.train_index)} train, {len(data.val_index)} held out) of {root}, "
          f"{data.image_size[1]}x{data.image_size[0]} px, {len(data.objects)} objects, {len(data.predicates)} predicates, "
          f"symmetries {model_cfg.symmetries}", flush=True)
    _, summary = train_state_model(data, model_cfg, tcfg, out, command=command_line("tandem-train-state"),
                                   log=lambda line: print(line, flush=True), support_z=task_support_z(data.root))
    summary["dataset"] = {"root": root if isinstance(root, list) else str(root), "frames": len(data), "episodes": len(data.episodes)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    held = summary["held_out"]
    print(json.dumps({"checkpoint": summary["checkpoint"], "train_minutes": summary["train_minutes"],
                      "train_cpu_minutes": summary["train_cpu_minutes"],
                      "px_median": round(held["px_median"], 3), "m3d_median": round(held["m3d_median"], 4),
                      "yaw_error_deg_median": held["yaw_error_deg_median"],
                      "predicate_accuracy": round(held["predicate_accuracy"], 4),
                      "frame_accuracy": round(held["frame_accuracy"], 4), "ece": round(held["ece"], 4)}, indent=2))
    return summary


def _register() -> None:
    from hydra.core.config_store import ConfigStore

    with deferred_checks():
        ConfigStore.instance().store(name="train_state_schema", node=TrainStateRunConfig)


def _run(cfg: Any) -> None:
    try:
        run(cfg)
    except Exception as e:  # noqa: BLE001 - one clear line for tandem errors
        fail(e)


def main() -> None:
    """Entry point: compose ``configs/train_state.yaml`` (exit status 2 on bad input), then train."""
    _register()
    hydra_main(config_name="train_state", check=lambda cfg: load_config(TrainStateRunConfig, cfg))(_run)()


if __name__ == "__main__":
    main()
