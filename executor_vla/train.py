"""The executor's trainer: AdamW, cosine learning-rate schedule with warm-up, EMA, resume, eval hook.

Recipe from Diffusion Policy (Chi et al. 2023): AdamW (lr 1e-4, betas (0.95, 0.999), weight decay
1e-6), cosine schedule with 500 warm-up steps (``diffusers.optimization.get_cosine_schedule_with_warmup``),
an EMA of the weights with decay ``min(max_decay, 1 - (1 + step) ** -0.75)`` (diffusers ``EMAModel``
defaults); checkpoints carry the EMA weights.

Devices: CPU, ``cuda``, and multi-GPU through HF ``accelerate`` (``accelerate launch -m tandem.cli.train``)
or ``torchrun``: the trainer runs under an ``accelerate.Accelerator``, which picks up the distributed
environment those launchers set.

Resuming: each checkpoint directory also holds ``training_state/`` (raw weights, optimizer moments
as safetensors, scheduler/step as JSON; no pickle), so ``resume=<checkpoint dir>`` continues exactly
where it stopped (same step, learning rate and EMA).

In-sim evaluation: ``executor_vla`` may not import the simulator, so the wiring (``tandem.cli.train``)
passes ``eval_fn(executor) -> dict of metrics``; it is called every ``eval_every`` steps with the
EMA executor (0 disables it).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from executor_vla.checkpoint import check_weights, load_weights_strict, save_checkpoint, state_dict_for_save
from executor_vla.data import batch_to_device, cycle
from executor_vla.policy import DiffusionExecutor
from tandem.core.errors import CheckpointError, ConfigError
from tandem.core.number_fields import check_own_numbers, in_range
from tandem.core.training_output import CheckpointKeeper, progress_total
from tandem.core.types import to_jsonable

EvalFn = Callable[[DiffusionExecutor], dict]
TRAIN_STATE = "training_state"


@dataclass
class TrainConfig:
    """Trainer settings (Hydra group ``train``).

    Attributes:
        steps: total optimisation steps.
        batch_size: per-process batch size.
        lr, betas, weight_decay: AdamW.
        warmup_steps: linear warm-up before the cosine decay.
        ema_max_decay: cap of the EMA decay (0 disables EMA: checkpoints get the raw weights).
        grad_clip: max gradient norm (0 = off).
        num_workers: DataLoader workers.
        log_every, eval_every: in steps (``eval_every=0`` disables in-sim evaluation).
        save_every_minutes: a checkpoint ``checkpoints/step_N`` every this many training minutes (on ``clock``);
            None: none on a time schedule. The run's final checkpoint is always written.
        save_every: also a checkpoint every this many steps; None (the default): none on a step schedule.
        keep_checkpoints: how many of the most recent ``step_N`` checkpoints stay on disk; the best one (lowest
            validation loss when ``val_every`` is on, else lowest mean training loss since the previous save) and the
            final one are kept too, older ones are deleted (:class:`tandem.core.training_output.CheckpointKeeper`;
            ``checkpoints/kept.json`` names them). ``snapshot_minutes`` checkpoints are never deleted.
        seed: RNG seed.
        device: ``"auto"`` (cuda if available), ``"cpu"`` or ``"cuda"``.
        mixed_precision: accelerate's ``"no"``, ``"fp16"`` or ``"bf16"``.
        max_minutes: time budget (min) on ``clock``: training stops when it is spent (or at ``steps``, whichever
            comes first), and the cosine schedule is laid over the budget instead of the steps. None = steps only.
        snapshot_minutes: times (min, on ``clock``) at which an extra checkpoint ``checkpoints/min_XXX.X`` is written
            (the learning curve of ``benchmarks/learning_curve.py``: success against training time).
        clock: ``"wall"`` (elapsed time) or ``"cpu"`` (this process's CPU time: with one torch thread, the time of
            one core, whatever else shares the machine), the clock of ``max_minutes`` and ``snapshot_minutes``.
        val_every: steps between validation losses on held-out episodes (datasets with a ``val`` split; 0 = off).
    """

    steps: int = 100_000
    batch_size: int = 64
    lr: float = in_range(1e-4, gt=0)
    betas: tuple[float, float] = (0.95, 0.999)
    weight_decay: float = in_range(1e-6, ge=0)
    warmup_steps: int = 500
    ema_max_decay: float = 0.9999
    grad_clip: float = in_range(1.0, ge=0)
    num_workers: int = 2
    log_every: int = 50
    save_every: int | None = in_range(None, ge=1)
    save_every_minutes: float | None = in_range(10.0, gt=0, unit="min")
    keep_checkpoints: int = in_range(2, ge=1)
    eval_every: int = 0
    seed: int = 0
    device: str = "auto"
    mixed_precision: str = "no"
    max_minutes: float | None = in_range(None, gt=0, unit="min")
    snapshot_minutes: tuple[float, ...] = ()
    clock: str = "wall"
    val_every: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
        errs = []
        for name in ("steps", "batch_size", "log_every"):
            if getattr(self, name) < 1:
                errs.append(f"{name} must be >= 1 (got {getattr(self, name)})")
        # save_every, save_every_minutes and keep_checkpoints: their declared ranges (in_range), checked with the
        # whole config by tandem-train (full keys), and by the CheckpointKeeper that train() builds
        if self.eval_every < 0 or self.warmup_steps < 0 or self.num_workers < 0:
            errs.append("eval_every, warmup_steps and num_workers must be >= 0")
        if not 0.0 <= self.ema_max_decay < 1.0:
            errs.append(f"ema_max_decay must be in [0, 1) (got {self.ema_max_decay})")
        if self.max_minutes is not None and self.max_minutes <= 0:
            errs.append(f"max_minutes must be > 0 or null (got {self.max_minutes})")
        self.snapshot_minutes = tuple(sorted(float(m) for m in self.snapshot_minutes))
        if any(m <= 0 for m in self.snapshot_minutes):
            errs.append(f"snapshot_minutes must be > 0 (got {list(self.snapshot_minutes)})")
        if self.clock not in ("wall", "cpu"):
            errs.append(f"clock must be wall or cpu (got {self.clock!r})")
        if self.device not in ("auto", "cpu", "cuda"):
            errs.append(f"device must be auto, cpu or cuda (got {self.device!r})")
        if self.mixed_precision not in ("no", "fp16", "bf16"):
            errs.append(f"mixed_precision must be no, fp16 or bf16 (got {self.mixed_precision!r})")
        if errs:
            raise ConfigError("invalid TrainConfig: " + "; ".join(errs))
        self.betas = tuple(self.betas)  # type: ignore[assignment]


class EMA:
    """Exponential moving average of a module's parameters; buffers (e.g. the normaliser statistics) are copied.

    As diffusers' ``EMAModel``, only parameters are averaged: averaging constant buffers in float32 drifts them
    by rounding (``x * d + x * (1 - d) != x``), and the checkpoint loader then rightly finds the saved normaliser
    disagreeing with ``stats.json``.
    """

    def __init__(self, module: torch.nn.Module, max_decay: float):
        self.max_decay = max_decay
        self.shadow = {k: v.detach().clone() for k, v in module.state_dict().items()}
        self.param_names = {k for k, _ in module.named_parameters()}

    def decay(self, step: int) -> float:
        """diffusers EMAModel warm-up: ``min(max_decay, 1 - (1 + step) ** -0.75)``."""
        return 0.0 if self.max_decay == 0 else min(self.max_decay, 1.0 - (1.0 + step) ** -0.75)

    @torch.no_grad()
    def update(self, module: torch.nn.Module, step: int) -> None:
        """Move the average towards ``module``'s parameters at training step ``step`` (:meth:`decay`); copy its
        buffers."""
        d = self.decay(step)
        for k, v in module.state_dict().items():
            if k in self.param_names and v.dtype.is_floating_point:
                self.shadow[k].mul_(d).add_(v.detach(), alpha=1 - d)
            else:
                self.shadow[k].copy_(v)


def _flatten_optimizer(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = opt.state_dict()
    tensors, scalars = {}, {}
    for idx, st in sd["state"].items():
        for name, v in st.items():
            if isinstance(v, torch.Tensor):
                tensors[f"state.{idx}.{name}"] = v.detach().cpu().contiguous().clone()
            else:
                scalars[f"{idx}.{name}"] = v
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, v in tensors.items():
        _, idx, name = key.split(".", 2)
        state.setdefault(int(idx), {})[name] = v
    for key, v in meta.get("scalars", {}).items():
        idx, name = key.split(".", 1)
        state.setdefault(int(idx), {})[name] = v
    return {"state": state, "param_groups": meta["param_groups"]}


class Trainer:
    """Trains a :class:`DiffusionExecutor` on an :class:`~executor_vla.data.ExecutorDataset`.

    Args:
        executor: the model (its normaliser statistics must already be set from the dataset).
        dataset: a torch Dataset of training samples.
        cfg: :class:`TrainConfig`.
        output_dir: where ``checkpoints/`` and ``train_log.jsonl`` go.
        eval_fn: ``executor -> {metric: value}``; called every ``cfg.eval_every`` steps on the EMA model.
        command: the command line, written to every checkpoint's ``command.txt``.
        extra_meta: JSON-safe metadata stored in each checkpoint's config (e.g. the dataset path).
    """

    def __init__(self, executor: DiffusionExecutor, dataset, cfg: TrainConfig, output_dir: str | Path,
                 eval_fn: EvalFn | None = None, command: str = "", extra_meta: dict[str, Any] | None = None):
        from accelerate import Accelerator
        from diffusers.optimization import get_cosine_schedule_with_warmup

        self.cfg = cfg
        self.output_dir = Path(output_dir)
        self.eval_fn = eval_fn
        self.command = command
        self.extra_meta = extra_meta or {}
        cpu = cfg.device == "cpu" or (cfg.device == "auto" and not torch.cuda.is_available())
        if cfg.device == "cuda" and not torch.cuda.is_available():
            raise ConfigError("train.device=cuda but torch sees no CUDA device")
        self.accelerator = Accelerator(cpu=cpu, mixed_precision=cfg.mixed_precision)
        torch.manual_seed(cfg.seed + self.accelerator.process_index)
        self.model = executor
        self.optimizer = torch.optim.AdamW(executor.parameters(), lr=cfg.lr, betas=cfg.betas,
                                           weight_decay=cfg.weight_decay)
        self._t_train = 0.0  # seconds on cfg.clock spent in train() so far (resumes add to it)
        self._clock = time.process_time if cfg.clock == "cpu" else time.perf_counter
        if cfg.max_minutes:  # cosine over the wall-clock budget (or the steps, whichever runs out first)
            def lr_lambda(step: int) -> float:
                if step < cfg.warmup_steps:
                    return (step + 1) / max(1, cfg.warmup_steps)
                frac = max(step / cfg.steps, self._elapsed_s() / (60.0 * cfg.max_minutes))
                return 0.5 * (1.0 + math.cos(math.pi * min(frac, 1.0)))
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_lambda)
        else:
            self.lr_scheduler = get_cosine_schedule_with_warmup(self.optimizer, cfg.warmup_steps, cfg.steps)
        self.batch_source = getattr(dataset, "batches", None)  # an in-memory dataset that cuts its own batches
        self.val_source = None
        if self.batch_source is not None:
            self.model_ddp, self.optimizer, self.lr_scheduler = self.accelerator.prepare(
                executor, self.optimizer, self.lr_scheduler)
            self.loader = None
            if cfg.val_every and len(getattr(dataset, "val_index", ())):
                self.val_source = dataset.batches(4 * cfg.batch_size, seed=cfg.seed + 1, split="val")
        else:
            loader = torch.utils.data.DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True, drop_last=False,
                                                 num_workers=cfg.num_workers, persistent_workers=cfg.num_workers > 0,
                                                 pin_memory=not cpu)
            self.model_ddp, self.optimizer, self.loader, self.lr_scheduler = self.accelerator.prepare(
                executor, self.optimizer, loader, self.lr_scheduler)
        self.ema = EMA(self.unwrapped, cfg.ema_max_decay) if cfg.ema_max_decay > 0 else None
        self.step = 0
        self.history: list[dict[str, float]] = []
        self.last_checkpoint: Path | None = None
        self.keeper: CheckpointKeeper | None = None  # made by train(), once the time so far (resume) is known
        self._loss_sum, self._loss_n = 0.0, 0  # training loss since the last kept checkpoint (its score)

    @property
    def unwrapped(self) -> DiffusionExecutor:
        """The model without its Accelerate / DDP wrapper."""
        return self.accelerator.unwrap_model(self.model_ddp)

    # ------------------------------------------------------------------ checkpoints
    def ema_state_dict(self) -> dict[str, torch.Tensor]:
        """The weights checkpoints carry: the EMA if enabled, else the raw weights (CPU, contiguous)."""
        if self.ema is None:
            return state_dict_for_save(self.unwrapped)
        return {k: v.detach().cpu().contiguous().clone() for k, v in self.ema.shadow.items()}

    def _elapsed_s(self) -> float:
        return self._t_train + (self._clock() - self._t0 if getattr(self, "_t0", None) is not None else 0.0)

    def ema_executor(self) -> DiffusionExecutor:
        """A separate eval-mode executor holding the EMA weights (for evaluation)."""
        m = self.unwrapped
        if not isinstance(m, DiffusionExecutor):  # other families (the track executor) copy themselves
            return m.with_weights(self.ema_state_dict())
        ex = DiffusionExecutor(m.cfg, text_encoder=m._text_encoder, action_low=m.action_low, action_high=m.action_high)
        ex.load_state_dict(self.ema_state_dict())
        return ex.to(m.device).eval()

    def save(self, path: str | Path | None = None) -> Path:
        """Write a checkpoint (EMA weights + training state) to ``path`` (default ``checkpoints/step_N``).

        A checkpoint written here is the caller's: the :attr:`keeper` of :meth:`train` never deletes it."""
        path = Path(path) if path else self.default_path()
        if not self.accelerator.is_main_process:
            return path
        m = self.unwrapped
        extra = {"step": self.step, "train_minutes": round(self._elapsed_s() / 60.0, 3),
                 "train": to_jsonable(asdict(self.cfg)), **self.extra_meta}
        if isinstance(m, DiffusionExecutor):
            save_checkpoint(m, path, command=self.command, state_dict=self.ema_state_dict(), extra=extra)
        else:
            m.save(path, command=self.command, state_dict=self.ema_state_dict(), extra=extra)
        ts = path / TRAIN_STATE
        ts.mkdir(exist_ok=True)
        save_file(state_dict_for_save(m), str(ts / "raw_model.safetensors"))
        opt_tensors, opt_meta = _flatten_optimizer(self.optimizer)
        save_file(opt_tensors, str(ts / "optimizer.safetensors"))
        sched = self.lr_scheduler.state_dict()  # LambdaLR stores None for its (function) lambdas
        sched["lr_lambdas"] = [None for _ in sched.get("lr_lambdas", [])]
        (ts / "trainer_state.json").write_text(json.dumps(
            {"step": self.step, "optimizer": opt_meta, "lr_scheduler": sched, "ema": self.ema is not None,
             "train_seconds": self._elapsed_s()},
            indent=1, default=float))
        return path

    def default_path(self) -> Path:
        """The checkpoint directory of the current step: ``<output_dir>/checkpoints/step_NNNNNNN``."""
        return self.output_dir / "checkpoints" / f"step_{self.step:07d}"

    def _checkpoint_score(self, log_path: Path | None) -> float | None:
        """The score of a checkpoint written now (lower is better): the EMA model's validation loss at this step when
        validation is on (computed now unless it was at this step), else the mean training loss since the last kept
        checkpoint (None if no step ran since)."""
        if self.val_source is not None:
            row = next((r for r in reversed(self.history) if "val/loss" in r), None)
            if row is None or row["step"] != self.step:
                row = self.validate(log_path)
            return row.get("val/loss")
        return self._loss_sum / self._loss_n if self._loss_n else None

    def _keep(self, log_path: Path | None, final: bool = False) -> Path:
        """Write the checkpoint of this step through :attr:`keeper` (which deletes those no longer kept)."""
        path = self.default_path()
        if not self.accelerator.is_main_process:
            return path
        last = self.keeper.saved[-1] if self.keeper.saved else None
        if final and last is not None and last.path == path and last.step == self.step:
            self.keeper.mark_final()  # saved at this very step already
            return path
        score = self._checkpoint_score(log_path)
        self.keeper.save(path, self.save, step=self.step, now_s=self._elapsed_s(), score=score, final=final)
        self._loss_sum, self._loss_n = 0.0, 0
        return path

    def resume(self, path: str | Path) -> None:
        """Restore weights, EMA, optimizer, schedule and step from a checkpoint written by :meth:`save`.

        Raises:
            CheckpointError: a missing ``training_state``, or weights/optimizer that do not match.
        """
        path = Path(path)
        ts = path / TRAIN_STATE
        if not (ts / "trainer_state.json").is_file():
            raise CheckpointError(f"{path} has no {TRAIN_STATE}/trainer_state.json: it cannot be resumed "
                                  "(only trainer-written checkpoints can)")
        state = json.loads((ts / "trainer_state.json").read_text())
        m = self.unwrapped
        load_weights_strict(m, load_file(str(ts / "raw_model.safetensors")), str(ts / "raw_model.safetensors"))
        ema_weights = load_file(str(path / "model.safetensors"))
        if self.ema is not None:
            check_weights(m.state_dict(), ema_weights, str(path / "model.safetensors"))
            self.ema.shadow = {k: v.to(m.device) for k, v in ema_weights.items()}
        try:
            opt_sd = _unflatten_optimizer(load_file(str(ts / "optimizer.safetensors")), state["optimizer"])
            self.optimizer.load_state_dict(opt_sd)
        except (ValueError, KeyError) as e:
            raise CheckpointError(f"optimizer state in {ts} does not match the model: {e}") from e
        self.lr_scheduler.load_state_dict(state["lr_scheduler"])
        self.step = int(state["step"])
        self._t_train = float(state.get("train_seconds", 0.0))

    # ------------------------------------------------------------------ loop
    def train(self, steps: int | None = None, progress: bool = True) -> list[dict[str, float]]:
        """Run until ``self.step == steps`` (default ``cfg.steps``) or ``cfg.max_minutes`` is spent; returns the
        logged rows.

        Writes ``checkpoints/step_N`` every ``save_every_minutes`` (and every ``save_every`` steps if set) and at the
        end, keeping the last ``keep_checkpoints`` of them, the best and the final one (:attr:`keeper`);
        ``snapshot_minutes`` checkpoints are written besides and kept. Logs every ``log_every`` steps to
        ``train_log.jsonl``; calls ``eval_fn`` every ``eval_every`` steps. The progress bar counts the time budget
        in seconds when there is one (the steps in its postfix), else the steps.

        Raises:
            FloatingPointError: if the loss becomes NaN/inf (names the step).
        """
        from tqdm.auto import tqdm

        cfg = self.cfg
        total = steps or cfg.steps
        self.model_ddp.train()
        log_path = self.output_dir / "train_log.jsonl"
        self.output_dir.mkdir(parents=True, exist_ok=True)
        data = self.batch_source(cfg.batch_size, seed=cfg.seed + self.step) if self.batch_source else cycle(self.loader)
        t0, samples = time.perf_counter(), 0
        self._t0 = self._clock()
        if self.keeper is None:
            self.keeper = CheckpointKeeper(self.output_dir / "checkpoints", keep_last=cfg.keep_checkpoints,
                                           every_minutes=cfg.save_every_minutes, every_steps=cfg.save_every,
                                           start_seconds=self._elapsed_s(),
                                           score_name="val/loss" if self.val_source is not None else "loss")
        plan = progress_total(total, cfg.max_minutes)
        shown = plan.position(self.step, self._elapsed_s())
        bar = tqdm(total=plan.total, initial=shown, unit=plan.unit,
                   disable=not (progress and self.accelerator.is_main_process), desc="train", dynamic_ncols=True)
        postfix: dict[str, Any] = {"step": self.step}
        start_step, stopped_by_time = self.step, False
        snapshots = [m for m in cfg.snapshot_minutes if m * 60.0 > self._elapsed_s()]
        budget_s = 60.0 * cfg.max_minutes if cfg.max_minutes else None
        while self.step < total:
            if budget_s is not None and self._elapsed_s() >= budget_s:
                stopped_by_time = True
                break
            batch = batch_to_device(next(data), self.accelerator.device)
            with self.accelerator.accumulate(self.model_ddp):
                out = self.model_ddp(batch)
                loss = out["loss"]
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"loss is {loss.item()} at step {self.step}")
                self.accelerator.backward(loss)
                if cfg.grad_clip > 0:
                    self.accelerator.clip_grad_norm_(self.model_ddp.parameters(), cfg.grad_clip)
                self.optimizer.step()
                self.lr_scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
            self.step += 1
            self._loss_sum, self._loss_n = self._loss_sum + float(loss.detach()), self._loss_n + 1
            samples += batch["action"].shape[0] * self.accelerator.num_processes
            if self.ema is not None:
                self.ema.update(self.unwrapped, self.step)
            postfix["step"] = self.step
            now = plan.position(self.step, self._elapsed_s())
            if now > shown:
                if plan.by_time:
                    bar.set_postfix(postfix, refresh=False)
                bar.update(now - shown)
                shown = now
            if self.step % cfg.log_every == 0 or self.step == total:
                dt = time.perf_counter() - t0
                row = {"step": self.step, "lr": self.lr_scheduler.get_last_lr()[0],
                       "samples_per_s": samples / max(dt, 1e-9),
                       **{k: float(v.detach()) for k, v in out.items()}}
                t0, samples = time.perf_counter(), 0
                self.history.append(row)
                postfix.update(loss=f"{row['loss']:.4f}", lr=f"{row['lr']:.2e}")
                bar.set_postfix(postfix)
                if self.accelerator.is_main_process:
                    with log_path.open("a") as f:
                        f.write(json.dumps(row) + "\n")
            if self.eval_fn is not None and cfg.eval_every > 0 and self.step % cfg.eval_every == 0:
                self.evaluate(log_path)
            if self.val_source is not None and self.step % cfg.val_every == 0:
                self.validate(log_path)
            while snapshots and self._elapsed_s() >= snapshots[0] * 60.0:
                minute = snapshots.pop(0)
                self.save(self.output_dir / "checkpoints" / f"min_{minute:05.1f}")
            if self.step < total and self.keeper.due(self._elapsed_s(), self.step):
                self.last_checkpoint = self._keep(log_path)
        if stopped_by_time and shown < plan.total:  # the budget is spent: the bar ends full
            bar.update(plan.total - shown)
        if self.step > start_step or stopped_by_time:  # the final checkpoint, where the steps or the time ran out
            self.last_checkpoint = self._keep(log_path, final=True)
        self._t_train = self._elapsed_s()
        self._t0 = None
        bar.close()
        return self.history

    @torch.no_grad()
    def validate(self, log_path: Path | None = None) -> dict[str, float]:
        """Losses of the EMA model on one batch of held-out episodes (logged as ``val/<name>``)."""
        model = self.ema_executor()
        batch = batch_to_device(next(self.val_source), self.accelerator.device)
        row = {"step": self.step, **{f"val/{k}": float(v) for k, v in model(batch).items()}}
        self.history.append(row)
        if log_path is not None and self.accelerator.is_main_process:
            with log_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
        return row

    def evaluate(self, log_path: Path | None = None) -> dict[str, Any]:
        """Run ``eval_fn`` on the EMA executor; the metrics are logged with the step."""
        if self.eval_fn is None or not self.accelerator.is_main_process:
            return {}
        metrics = dict(self.eval_fn(self.ema_executor()))
        row = {"step": self.step, "eval": to_jsonable(metrics)}
        if log_path is not None:
            with log_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
        self.history.append({"step": self.step, **{f"eval/{k}": v for k, v in metrics.items()
                                                    if isinstance(v, int | float)}})
        return metrics


