"""``tandem-train-trace``: train the learned trace model of ``planner=learned`` (one CPU core, a minute or two).

Examples::

    tandem-train-trace dataset.root=datasets/stack_three_lowdim             # the recipe
    tandem-train-trace trace_train=debug                                     # CI: a tiny synthetic problem

Any tandem dataset with ``labels.*`` and ``subgoal.trace_3d`` works, low-dimensional ones included (no images are
read). One sample per subgoal attempt: keypoints and proprio at its first frame -> its trace. The vocabulary (objects,
skills, argument names) is the dataset's; symmetry orders come from its task unless ``model.symmetries`` names them.
Writes ``<output_dir>/checkpoint`` (safetensors + JSON + the command) and ``summary.json`` (held-out point and yaw
errors, with clean and with noisy keypoints).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, override

from tandem.cli.common import (
    fail,
    hydra_main,
    load_config,
    make_output_folder,
    one_dataset_source,
    prepare_runtime,
    synthetic_on,
)
from tandem.cli.train_state import (
    SyntheticSection,
    command_line,
    synthetic_perception_dataset,
    task_pick_geometry,
    task_symmetries,
    task_workcell,
)
from tandem.core.number_fields import in_range
from tandem.runtime.config import FieldError, Schema, check_fields, deferred_checks

prepare_runtime()


@dataclass
class TraceDatasetSection(Schema):
    """``dataset``: ``root`` (a tandem dataset with labels and 3-D traces) or ``synthetic``; ``episodes`` (null: all);
    ``val_episodes`` held out; ``only_successful``: train on the attempts that succeeded only."""

    root: str | None = None
    synthetic: SyntheticSection | None = field(default_factory=SyntheticSection)
    episodes: list[int] | None = None
    val_episodes: int = 20
    only_successful: bool = False

    @override
    def check(self) -> None:
        one_dataset_source({"root": self.root is not None, "synthetic": synthetic_on(self.synthetic)},
                           "tandem dataset with labels and 3-D traces")
        if self.val_episodes < 0:
            raise FieldError("val_episodes", f"must be >= 0, got {self.val_episodes}")


@dataclass
class TraceModelSection(Schema):
    """``model``: hidden width, layers, K3 rows, and ``symmetries`` (null: the dataset task's); ``grasp_check``:
    record the dataset task's workcell for the learned planner's grasp check (``TraceModelConfig.workcell``);
    ``ensemble``: members whose outputs are averaged (``TraceModelConfig.ensemble``); ``grasp_prior``: record the
    training episodes' demonstrated grasps (``TraceModelConfig.grasp_prior``)."""

    hidden: int = 256
    layers: int = 3
    use_gripper_opening: bool = True
    yaw_correction_deg: float = 45.0
    slot_order: str = "start"
    coherent_turns: bool = False
    grasp_check: bool = False
    grasp_prior: bool = False
    ensemble: int = 1
    trace_len: int = 16
    symmetries: dict[str, int] | None = None


@dataclass
class TraceTrainSection(Schema):
    """``train``: the fields of ``planner_vlm.learned.trace_config.TraceTrainConfig`` (validated by it)."""

    batch_size: int = 128
    lr: float = in_range(1e-3, gt=0)
    weight_decay: float = in_range(1e-4, ge=0)
    steps: int = 6000
    max_minutes: float = in_range(10.0, gt=0, unit="min")
    keypoint_noise_m: float = 0.004
    carry_height_jitter_m: float = 0.0
    carry_offset_jitter_m: float = 0.0
    carry_flip_fraction: float = in_range(0.0, ge=0, le=1)
    start_jitter_m: float = 0.0
    repick_fraction: float = in_range(0.0, ge=0, le=1)
    repick_radius_m: float = 0.05
    repick_height_m: float = 0.15
    seed: int = 0
    eval_every: int = 500

    @override
    def check(self) -> None:
        from planner_vlm.learned.trace_config import TraceTrainConfig

        check_fields(TraceTrainConfig, self.fields())  # numbers and their declared ranges: train.<field> named
        try:
            TraceTrainConfig(**self.fields())
        except Exception as e:  # noqa: BLE001 - its ConfigError names the field
            raise FieldError("", str(e)) from e

    def fields(self) -> dict[str, Any]:
        """The section's fields as a dict, as ``TraceTrainConfig`` takes them."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class TrainTraceRunConfig(Schema):
    """``tandem-train-trace`` (``configs/train_trace.yaml``)."""

    dataset: TraceDatasetSection = field(default_factory=TraceDatasetSection)
    model: TraceModelSection = field(default_factory=TraceModelSection)
    train: TraceTrainSection = field(default_factory=TraceTrainSection)
    output_dir: str = "outputs/train_trace"
    torch_threads: int = 1

    @override
    def check(self) -> None:
        if self.torch_threads < 1:
            raise FieldError("torch_threads", f"must be >= 1, got {self.torch_threads}")


def run(cfg: Any) -> dict[str, Any]:
    """Validate ``cfg``, read the subgoal starts, train; write the checkpoint and ``summary.json``; return the summary.

    Raises:
        ConfigError: bad input (named), before any data is read. DatasetSchemaError: a dataset without labels, traces
            or journal.
    """
    import torch

    from planner_vlm.learned.trace_config import TraceModelConfig, TraceTrainConfig
    from planner_vlm.learned.trace_data import TraceDataset, dataset_grasp_prior
    from planner_vlm.learned.trace_train import train_trace_model

    c = load_config(TrainTraceRunConfig, cfg)
    torch.set_num_threads(int(c.torch_threads))
    out = make_output_folder(c.output_dir, "output_dir")  # removed again if the input is then refused (fail)
    d = c.dataset
    root = d.root
    if synthetic_on(d.synthetic):
        root = synthetic_perception_dataset(out, d.synthetic)
    data = TraceDataset(root, episodes=d.episodes, val_episodes=d.val_episodes, only_successful=d.only_successful)
    m = c.model
    symmetries = task_symmetries(root, m.symmetries)
    train_episodes = sorted({int(e) for e in data.episode[data.train_index]})
    prior = dataset_grasp_prior(root, symmetries, episodes=train_episodes).to_dict() if m.grasp_prior else {}
    model_cfg = TraceModelConfig(objects=data.objects, skills=data.skills, arg_names=data.arg_names,
                                 symmetries=symmetries, trace_len=m.trace_len,
                                 hidden=m.hidden, layers=m.layers, use_gripper_opening=m.use_gripper_opening,
                                 yaw_correction_deg=m.yaw_correction_deg, slot_order=m.slot_order,
                                 coherent_turns=m.coherent_turns, ensemble=m.ensemble,
                                 workcell=task_workcell(root) if m.grasp_check else {}, grasp_prior=prior,
                                 pick_geometry=task_pick_geometry(root))
    print(f"trace model: {len(data)} subgoal starts ({len(data.train_index)} train, {len(data.val_index)} held out) of "
          f"{root}; skills {list(data.skills)}, arguments {list(data.arg_names)}, symmetries {model_cfg.symmetries}",
          flush=True)
    _, summary = train_trace_model(data, model_cfg, TraceTrainConfig(**c.train.fields(), val_episodes=d.val_episodes),
                                   out, command=command_line("tandem-train-trace"),
                                   log=lambda line: print(line, flush=True))
    summary["dataset"] = {"root": str(root), "samples": len(data)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    held = summary["held_out"]
    print(json.dumps({"checkpoint": summary["checkpoint"], "train_minutes": summary["train_minutes"],
                      "point_error_cm": held.get("point_error_cm"), "yaw_error_deg": held.get("yaw_error_deg"),
                      "noisy_point_error_cm": summary["held_out_noisy_keypoints"].get("point_error_cm")}, indent=2))
    return summary


def _register() -> None:
    from hydra.core.config_store import ConfigStore

    with deferred_checks():
        ConfigStore.instance().store(name="train_trace_schema", node=TrainTraceRunConfig)


def _run(cfg: Any) -> None:
    try:
        run(cfg)
    except Exception as e:  # noqa: BLE001 - one clear line for tandem errors
        fail(e)


def main() -> None:
    """Entry point: compose ``configs/train_trace.yaml`` (exit status 2 on bad input), then train."""
    _register()
    hydra_main(config_name="train_trace", check=lambda cfg: load_config(TrainTraceRunConfig, cfg))(_run)()


if __name__ == "__main__":
    main()
