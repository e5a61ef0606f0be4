"""Executor checkpoints: safetensors + JSON, never pickle.

A checkpoint is a directory::

    model.safetensors   # network weights (EMA weights for trained models) and the normaliser buffers
    config.json         # {"format": "tandem-executor/1", "executor": ExecutorConfig.to_dict(), "text_encoder": {...}, ...}
    stats.json          # {"action": {"min", "max"}, "observation.state": {"min", "max"}}
    command.txt         # the command line that produced it

Loading reads JSON and safetensors only (``safetensors.torch.load_file``; no ``torch.load``). It
checks, and raises :class:`tandem.core.errors.CheckpointError` naming the problem, when: a file is
missing; the format is unknown; the config is invalid; weights are missing, unexpected or of the
wrong shape; ``stats.json`` is malformed or disagrees with the normaliser saved in the weights.

This module reads and writes the files; it never builds an executor (so it imports nothing of
:mod:`executor_vla.policy`): ``DiffusionExecutor.from_checkpoint`` does, with :func:`read_checkpoint`.

Inference-time overrides (:func:`apply_overrides`): the fields of ``ExecutorConfig.INFERENCE_FIELDS``
(sampler, steps, executed actions, done head) may differ from the checkpoint's; every other field is fixed by
the weights, and asking for another value is an :class:`OverrideError` naming the key.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from executor_vla.checkpoint_json import config_text
from executor_vla.config import ExecutorConfig
from executor_vla.normalizer import MinMaxNormalizer, validate_stats
from tandem.core.errors import CheckpointError, ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

FORMAT = "tandem-executor/1"
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
STATS = "stats.json"
COMMAND = "command.txt"


def state_dict_for_save(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Contiguous CPU copies of a module's state dict (safetensors needs unshared, contiguous tensors)."""
    return {k: v.detach().to("cpu").contiguous().clone() for k, v in module.state_dict().items()}


def save_checkpoint(executor, path: str | Path, command: str = "", extra: dict[str, Any] | None = None,
                    state_dict: dict[str, torch.Tensor] | None = None) -> Path:
    """Write ``executor`` (a :class:`~executor_vla.policy.DiffusionExecutor`) to directory ``path``.

    Args:
        command: the command line that produced the weights (written to ``command.txt``).
        extra: JSON-safe metadata added to ``config.json`` under ``"extra"`` (e.g. training step, dataset).
        state_dict: weights to write instead of ``executor.state_dict()`` (e.g. the EMA weights).

    Returns:
        ``path``.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    sd = state_dict if state_dict is not None else state_dict_for_save(executor)
    save_file(sd, str(path / WEIGHTS), metadata={"format": FORMAT})
    text = {"name": executor.cfg.text_encoder, "dim": executor.cfg.text_dim} if executor.cfg.use_text else None
    cfg_json = {"format": FORMAT, "executor": executor.cfg.to_dict(), "text_encoder": text,
                "action_low": np.asarray(executor.action_low).tolist(),
                "action_high": np.asarray(executor.action_high).tolist(), "extra": extra or {}}
    (path / CONFIG).write_text(config_text(cfg_json))
    (path / STATS).write_text(json.dumps(executor.normalizer.stats(), indent=2))
    (path / COMMAND).write_text((command or "(unknown)").strip() + "\n")
    return path


def _read_json(p: Path) -> dict[str, Any]:
    if not p.is_file():
        raise CheckpointError(f"checkpoint file missing: {p}")
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{p} is not valid JSON: {e}") from e


def read_config(path: str | Path) -> tuple[ExecutorConfig, dict[str, Any]]:
    """``(ExecutorConfig, raw config.json)`` of a checkpoint directory.

    Raises:
        CheckpointError: missing file, unknown format or invalid config.
    """
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"checkpoint directory {path} does not exist")
    raw = _read_json(path / CONFIG)
    if raw.get("format") != FORMAT:
        raise CheckpointError(f"{path / CONFIG}: format {raw.get('format')!r}, expected {FORMAT!r}")
    try:
        cfg = ExecutorConfig.from_dict(raw["executor"])
    except (ConfigError, KeyError, TypeError) as e:
        raise CheckpointError(f"{path / CONFIG}: invalid executor config: {e}") from e
    return cfg, raw


def load_weights_strict(module: torch.nn.Module, weights: dict[str, torch.Tensor], what: str) -> None:
    """``module.load_state_dict(weights)`` that reports every missing, unexpected or mis-shaped key.

    Raises:
        CheckpointError: listing the offending keys (first 10 of each kind) and their shapes.
    """
    check_weights(module.state_dict(), weights, what)
    module.load_state_dict(weights, strict=True)


def check_weights(expected: dict[str, torch.Tensor], weights: dict[str, torch.Tensor], what: str) -> None:
    """Raise :class:`CheckpointError` naming missing, unexpected and mis-shaped keys of ``weights``."""
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected))
    shape = sorted(k for k in set(expected) & set(weights) if tuple(expected[k].shape) != tuple(weights[k].shape))
    if missing or unexpected or shape:
        parts = []
        if missing:
            parts.append(f"missing keys ({len(missing)}): {missing[:10]}")
        if unexpected:
            parts.append(f"unexpected keys ({len(unexpected)}): {unexpected[:10]}")
        if shape:
            parts.append("shape mismatch: " + ", ".join(
                f"{k} {tuple(weights[k].shape)} vs expected {tuple(expected[k].shape)}" for k in shape[:10]))
        raise CheckpointError(f"{what} does not match the model: " + "; ".join(parts))


class OverrideError(CheckpointError, ConfigError):
    """A config value that a checkpoint cannot be loaded with (it would change the network, or is invalid)."""


#: Keys of a stack's ``executor`` config node that are wiring, never ``ExecutorConfig`` fields (those of
#: ``tandem.runtime.config.TandemCheckpointWiring``; the state model's are used by scene-input track checkpoints).
WIRING_KEYS: tuple[str, ...] = ("name", "checkpoint", "device", "torch_threads", "state_checkpoint",
                                "camera_calibration")


def apply_overrides(cfg: ExecutorConfig, overrides: Mapping[str, Any] | None, where: str = "the checkpoint"
                    ) -> ExecutorConfig:
    """``cfg`` (a checkpoint's config) with ``overrides`` applied, every key checked.

    Args:
        cfg: the config the weights were trained with.
        overrides: ``ExecutorConfig`` field -> value. ``None`` values are ignored (keep the checkpoint's). Fields of
            ``ExecutorConfig.INFERENCE_FIELDS`` are applied (``n_action_steps`` within ``To - 1 + Ta <= Tp``,
            ``num_inference_steps`` in ``[1, num_train_timesteps]``...); any other field must equal the checkpoint's.
        where: names the checkpoint in messages.

    Returns:
        the config to build the executor with.

    Raises:
        OverrideError: an unknown key, a network field different from the checkpoint's (key, both values), or an
            invalid inference value (key and reason).
    """
    given = {k: v for k, v in dict(overrides or {}).items() if v is not None}
    if not given:
        return cfg
    current = cfg.to_dict()
    unknown = sorted(k for k in given if k not in current)
    if unknown:
        raise OverrideError(f"unknown executor setting(s) {unknown} for {where}; settings a checkpoint can be "
                            f"loaded with: {list(ExecutorConfig.INFERENCE_FIELDS)}")
    fixed = _fixed_changes(current, given)
    if fixed:
        detail = "; ".join(f"{k}={given[k]!r} (the checkpoint has {current[k]!r})" for k in fixed)
        raise OverrideError(f"cannot load {where} with {detail}: these settings are fixed by the trained network; "
                            f"only {list(ExecutorConfig.INFERENCE_FIELDS)} may differ (retrain to change the others)")
    try:
        new = ExecutorConfig.from_dict({**current, **given})
    except ConfigError as e:
        keys = ", ".join(f"{k}={given[k]!r}" for k in given if k in ExecutorConfig.INFERENCE_FIELDS)
        raise OverrideError(f"invalid executor setting for {where} ({keys}): {e}") from e
    return new


def _fixed_changes(current: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """Fields of ``given`` outside ``INFERENCE_FIELDS`` whose value differs from ``current`` (JSON-compared)."""
    out = []
    for k, v in given.items():
        if k in ExecutorConfig.INFERENCE_FIELDS:
            continue
        if plain_config_value(v) != current[k]:
            out.append(k)
    return sorted(out)


def overrides_from_config(node: Mapping[str, Any] | None) -> dict[str, Any]:
    """The overrides a stack config's ``executor`` node asks for, for :func:`apply_overrides`.

    The ``executor`` config group (``configs/executor/diffusion.yaml``) also holds the network settings that
    ``tandem-train`` reads; when a checkpoint is loaded its own network wins. So: the wiring keys
    (:data:`WIRING_KEYS`) and ``None`` values are dropped, and network fields left at ``ExecutorConfig``'s
    defaults (the group's training defaults) are dropped; every other value is returned, and
    :func:`apply_overrides` applies it (inference fields) or refuses it unless it equals the checkpoint's.

    Args:
        node: the ``executor`` node: a mapping (plain or OmegaConf), a dataclass instance, or None.
    """
    if node is None:
        return {}
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        node = dataclasses.asdict(node)
    defaults = ExecutorConfig().to_dict()
    out: dict[str, Any] = {}
    for k, v in dict(node).items():
        if k in WIRING_KEYS or v is None:
            continue
        v = plain_config_value(v)
        if k in defaults and k not in ExecutorConfig.INFERENCE_FIELDS and v == defaults[k]:
            continue
        out[k] = v
    return out


def plain_config_value(value: Any) -> Any:
    """JSON-safe copy of a config value (tuples and OmegaConf lists become lists, mappings dicts)."""

    def default(x: Any) -> Any:
        return dict(x) if hasattr(x, "keys") else list(x)

    return json.loads(json.dumps(value, default=default))


@dataclasses.dataclass
class CheckpointFiles:
    """A checkpoint directory read and checked, before an executor is built from it.

    Attributes:
        cfg: the config to build with (overrides applied).
        raw: ``config.json`` as a dict (``action_low`` / ``action_high``, ``text_encoder``, ``extra``).
        weights: the safetensors state dict (CPU tensors).
        stats: the validated normalisation statistics of ``stats.json``.
        command: the command line of ``command.txt`` (``""`` when absent).
    """

    cfg: ExecutorConfig
    raw: dict[str, Any]
    weights: dict[str, torch.Tensor]
    stats: dict[str, Any]
    command: str


def read_checkpoint(path: str | Path, overrides: Mapping[str, Any] | None = None) -> CheckpointFiles:
    """Read and check every file of a checkpoint directory (no unpickling), applying ``overrides``.

    Raises:
        CheckpointError: a missing or unreadable file, an unknown format, an invalid config, malformed statistics.
        OverrideError: see :func:`apply_overrides`.
    """
    path = Path(path)
    cfg, raw = read_config(path)
    cfg = apply_overrides(cfg, overrides, where=f"checkpoint {path}")
    wfile = path / WEIGHTS
    if not wfile.is_file():
        raise CheckpointError(f"checkpoint file missing: {wfile}")
    try:
        weights = load_file(str(wfile), device="cpu")
    except Exception as e:  # safetensors raises its own error types on corrupt headers
        raise CheckpointError(f"{wfile} is not a readable safetensors file: {e}") from e
    stats = validate_stats(_read_json(path / STATS), {"action": cfg.action_dim, "observation.state": cfg.state_dim})
    cmd = path / COMMAND
    return CheckpointFiles(cfg=cfg, raw=raw, weights=weights, stats=stats,
                           command=cmd.read_text().strip() if cmd.is_file() else "")


def check_normalizer(normalizer: MinMaxNormalizer, stats: dict[str, Any], where: str) -> None:
    """Raise :class:`CheckpointError` if the normaliser buffers loaded from the weights disagree with ``stats``."""
    ref = MinMaxNormalizer(normalizer.action_center.numel(), normalizer.state_center.numel())
    ref.set_stats(stats)
    saved_state = normalizer.state_dict()
    for name, buf in ref.state_dict().items():
        saved = saved_state[name].to("cpu")
        if not torch.allclose(saved, buf, rtol=1e-5, atol=1e-6):
            raise CheckpointError(f"{where}: {STATS} disagrees with the normaliser in {WEIGHTS} ({name}: "
                                  f"{buf.tolist()} vs {saved.tolist()}): wrong statistics for these weights")
