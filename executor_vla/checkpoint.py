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
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from executor_vla.config import ExecutorConfig
from executor_vla.normalizer import MinMaxNormalizer, validate_stats
from tandem.core.errors import CheckpointError, ConfigError

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
    (path / CONFIG).write_text(json.dumps(cfg_json, indent=2))
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


def load_checkpoint(path: str | Path, text_encoder=None, overrides: dict[str, Any] | None = None,
                    device: str = "cpu"):
    """Load a :class:`~executor_vla.policy.DiffusionExecutor` from a checkpoint directory.

    Args:
        text_encoder: optional encoder instance to use instead of loading ``cfg.text_encoder``.
        overrides: inference-time config fields to change (``num_inference_steps``,
            ``inference_scheduler``, ``done_threshold``, ``done_source``, ``n_action_steps``); others
            would change the network and are refused.
        device: torch device.

    Returns:
        the executor in eval mode, on ``device``, with ``.command`` set from ``command.txt``.

    Raises:
        CheckpointError: see the module docstring.
    """
    from executor_vla.policy import DiffusionExecutor

    path = Path(path)
    cfg, raw = read_config(path)
    if overrides:
        allowed = {"num_inference_steps", "inference_scheduler", "done_threshold", "done_source", "n_action_steps"}
        bad = sorted(set(overrides) - allowed)
        if bad:
            raise CheckpointError(f"cannot override {bad} when loading a checkpoint (they change the network); "
                                  f"allowed: {sorted(allowed)}")
        try:
            cfg = ExecutorConfig.from_dict({**cfg.to_dict(), **overrides})
        except ConfigError as e:
            raise CheckpointError(f"invalid override {overrides}: {e}") from e
    wfile = path / WEIGHTS
    if not wfile.is_file():
        raise CheckpointError(f"checkpoint file missing: {wfile}")
    try:
        weights = load_file(str(wfile), device="cpu")
    except Exception as e:  # safetensors raises its own error types on corrupt headers
        raise CheckpointError(f"{wfile} is not a readable safetensors file: {e}") from e
    stats_raw = _read_json(path / STATS)
    stats = validate_stats(stats_raw, {"action": cfg.action_dim, "observation.state": cfg.state_dim})
    executor = DiffusionExecutor(cfg, text_encoder=text_encoder,
                                 action_low=raw.get("action_low"), action_high=raw.get("action_high"))
    load_weights_strict(executor, weights, str(wfile))
    ref = MinMaxNormalizer(cfg.action_dim, cfg.state_dim)
    ref.set_stats(stats)
    for name, buf in ref.state_dict().items():
        saved = executor.normalizer.state_dict()[name]
        if not torch.allclose(saved, buf, rtol=1e-5, atol=1e-6):
            raise CheckpointError(f"{path / STATS} disagrees with the normaliser in {wfile} ({name}: "
                                  f"{buf.tolist()} vs {saved.tolist()}): wrong statistics for these weights")
    cmd = path / COMMAND
    executor.command = cmd.read_text().strip() if cmd.is_file() else ""
    return executor.to(device).eval()
