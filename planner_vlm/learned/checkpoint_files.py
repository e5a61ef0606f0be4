"""Reading the learned perception models' checkpoint directories (``config.json`` + ``model.safetensors``, as
LeRobot's pretrained-model folders hold a config and safetensors weights): the checks every model shares, each
failure a :class:`~tandem.core.errors.CheckpointError` naming the file and what is wrong. Loading never unpickles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from safetensors.torch import load_file
from torch import nn

from tandem.core.errors import CheckpointError


def read_checkpoint_config(path: Path, config: str, weights: str, fmt: str, kind: str) -> dict[str, Any]:
    """The parsed ``path/config`` of a ``kind`` checkpoint (e.g. ``"presence model"``) in format ``fmt``.

    Raises:
        CheckpointError: ``config`` or ``weights`` missing, invalid JSON, not an object, or another ``format``.
    """
    for p in (path / config, path / weights):
        if not p.is_file():
            raise CheckpointError(f"{kind} checkpoint file missing: {p}")
    try:
        raw = json.loads((path / config).read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path / config} is not valid JSON: {e}") from e
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        got = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
        raise CheckpointError(f"{path / config}: format {got!r}, expected {fmt!r}")
    return raw


def load_matching_weights(net: nn.Module, weights_path: Path, kind: str) -> None:
    """Load ``weights_path`` (safetensors) into ``net``, whose config the checkpoint's ``config.json`` gave.

    Raises:
        CheckpointError: keys missing or extra, or tensors of other shapes (the first 10 named).
    """
    try:
        weights = load_file(str(weights_path))
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types on a truncated or corrupt file
        raise CheckpointError(f"{weights_path} is not a readable safetensors file: {e}") from e
    expected = net.state_dict()
    bad = sorted(set(expected) ^ set(weights)) + sorted(
        k for k in set(expected) & set(weights) if tuple(expected[k].shape) != tuple(weights[k].shape))
    if bad:
        raise CheckpointError(f"{weights_path} does not match the {kind} config: keys {bad[:10]}")
    net.load_state_dict(weights)
