"""Load any tandem executor checkpoint: the family recorded in its ``config.json`` picks the class.

Families:

* ``"track"``: :class:`executor_vla.track_policy.TrackExecutor` (proprio + 3-D trace; CPU-trainable, the default);
* ``"image"`` (checkpoints without a ``family`` key): :class:`executor_vla.policy.DiffusionExecutor` (cameras, goal
  image, trace raster; the GPU recipe).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from tandem.core.errors import CheckpointError, ConfigError

FAMILIES: tuple[str, ...] = ("track", "image")


def read_checkpoint_config(path: str | Path) -> dict[str, Any]:
    """The raw ``config.json`` of a checkpoint directory.

    Raises:
        CheckpointError: the directory or file is missing, or the file is not JSON.
    """
    path = Path(path)
    f = path / "config.json"
    if not f.is_file():
        raise CheckpointError(f"{path} is not an executor checkpoint: {f} is missing "
                              "(pass a directory written by tandem-train)")
    try:
        raw = json.loads(f.read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{f} is not valid JSON: {e}") from e
    if not isinstance(raw, dict):
        raise CheckpointError(f"{f} does not hold a JSON object")
    return raw


def checkpoint_family(path: str | Path) -> str:
    """``"track"`` or ``"image"``.

    Raises:
        CheckpointError: unreadable config, or an unknown family (named, with the known ones).
    """
    family = read_checkpoint_config(path).get("family", "image")
    if family not in FAMILIES:
        raise CheckpointError(f"{path}: unknown executor family {family!r}; known: {list(FAMILIES)}")
    return family


def check_device(device: str) -> None:
    """Refuse a torch device this machine cannot use, before anything is loaded onto it.

    Args:
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.

    Raises:
        ConfigError: naming ``executor.device``: not a torch device, CUDA (or GPU ``N``) that torch does not see, or
            MPS off Apple silicon.
    """
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ConfigError(f"executor.device={device!r} is not a torch device ({e})") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"executor.device={device} but torch sees no CUDA device here (use executor.device=cpu)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ConfigError(f"executor.device={device} but torch sees {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"executor.device={device} but torch sees no MPS device here (use executor.device=cpu)")


def load_executor(path: str | Path, device: str = "cpu", overrides: dict[str, Any] | None = None) -> Any:
    """The executor stored in checkpoint directory ``path``, in eval mode on ``device``.

    Args:
        overrides: inference settings to change at load (each family names the ones it allows).

    Raises:
        CheckpointError: missing, corrupt or mismatched checkpoint.
        ConfigError: an override the family does not allow, or a ``device`` torch cannot use here (named).
    """
    check_device(device)
    if checkpoint_family(path) == "track":
        from executor_vla.track_policy import TrackExecutor

        return TrackExecutor.from_checkpoint(path, device=device, overrides=overrides)
    from executor_vla.policy import DiffusionExecutor

    return DiffusionExecutor.from_checkpoint(path, device=device, overrides=overrides)


def overrides_for(checkpoint: str | Path, node: Any) -> dict[str, Any]:
    """The inference overrides a stack config's ``executor`` node asks of ``checkpoint``'s family.

    * image family: :func:`executor_vla.checkpoint.overrides_from_config` (network settings that differ from the
      checkpoint's are refused when applied);
    * track family: the node's non-null values of ``TrackExecutorConfig.INFERENCE_OVERRIDES``; any other setting
      that differs both from ``TrackExecutorConfig``'s default and from the checkpoint's own value is refused (so
      ``executor=track executor.checkpoint=<dir>`` runs with ``track.yaml``'s training defaults left in place).

    Raises:
        CheckpointError: unreadable checkpoint config.
        ConfigError: a setting the track family cannot change at load time (named, with the allowed ones).
    """
    from executor_vla.checkpoint import WIRING_KEYS, overrides_from_config, plain_config_value

    if checkpoint_family(checkpoint) == "image":
        return overrides_from_config(node)
    from executor_vla.track_config import TrackExecutorConfig

    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        node = dataclasses.asdict(node)
    node = {} if node is None else {k: plain_config_value(v) for k, v in dict(node).items()}
    if node.get("name") == "track":
        defaults = TrackExecutorConfig().to_dict()
        own = read_checkpoint_config(checkpoint).get("executor") or {}
        asked = {k: v for k, v in node.items() if k not in WIRING_KEYS and v is not None
                 and (k in TrackExecutorConfig.INFERENCE_OVERRIDES
                      or (v != defaults.get(k, object()) and v != own.get(k, object())))}
    else:
        asked = overrides_from_config(node)
    bad = sorted(k for k in asked if k not in TrackExecutorConfig.INFERENCE_OVERRIDES)
    if bad:
        raise ConfigError(f"executor settings {bad} cannot be changed for the track executor checkpoint {checkpoint} "
                          f"(they are fixed by its weights, or do not apply to it); allowed: "
                          f"{list(TrackExecutorConfig.INFERENCE_OVERRIDES)}")
    return asked
