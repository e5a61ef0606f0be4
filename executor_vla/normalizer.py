"""Min-max normalisation of actions and proprio to ``[-1, 1]``, with the statistics kept as buffers.

Diffusion Policy min-max scales actions to ``[-1, 1]``; that is what makes diffusers'
``clip_sample=True`` (clamping the predicted x0 to ``[-1, 1]``) correct rather than a silent truncation
(see FIELD-NOTES). The statistics are buffers, so they are saved inside ``model.safetensors`` and
cross-checked against ``stats.json`` when a checkpoint loads.

Dimensions whose range is below ``eps`` (e.g. an action component that is always 0) are centred
instead of scaled: ``x -> x - (min + max) / 2``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import Tensor, nn

from tandem.core.errors import CheckpointError

#: Statistics this module needs: dataset key -> ``{"min", "max"}``.
STAT_KEYS: tuple[str, ...] = ("action", "observation.state")


def validate_stats(stats: Mapping[str, Mapping[str, object]], dims: Mapping[str, int]) -> dict[str, dict[str, np.ndarray]]:
    """Check and convert ``{"action": {"min", "max"}, "observation.state": {"min", "max"}}``.

    Args:
        stats: e.g. ``LeRobotDataset.meta.stats`` or a loaded ``stats.json``.
        dims: key -> expected length (7 for the action, 8 for the state).

    Returns:
        key -> ``{"min": float32 (D,), "max": float32 (D,)}``.

    Raises:
        CheckpointError: a missing key/field, a wrong length, a non-finite value or ``min > max``
            (the message names the key and field).
    """
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, d in dims.items():
        if key not in stats:
            raise CheckpointError(f"statistics lack {key!r}; have {sorted(stats)}")
        entry = {}
        for field in ("min", "max"):
            if field not in stats[key]:
                raise CheckpointError(f"statistics[{key!r}] lacks {field!r}")
            v = np.asarray(stats[key][field], dtype=np.float32).reshape(-1)
            if v.shape != (d,):
                raise CheckpointError(f"statistics[{key!r}][{field!r}] has shape {v.shape}, expected ({d},)")
            if not np.all(np.isfinite(v)):
                raise CheckpointError(f"statistics[{key!r}][{field!r}] contains NaN/inf")
            entry[field] = v
        if np.any(entry["min"] > entry["max"]):
            raise CheckpointError(f"statistics[{key!r}] has min > max at dims {np.nonzero(entry['min'] > entry['max'])[0].tolist()}")
        out[key] = entry
    return out


class MinMaxNormalizer(nn.Module):
    """Maps ``x (..., D)`` to ``[-1, 1]`` per dimension and back.

    Buffers: ``<name>_center``, ``<name>_half_range`` for ``name`` in ``action``, ``state``.
    """

    def __init__(self, action_dim: int, state_dim: int, eps: float = 1e-4):
        super().__init__()
        self.eps = eps
        self.register_buffer("action_center", torch.zeros(action_dim))
        self.register_buffer("action_half_range", torch.ones(action_dim))
        self.register_buffer("state_center", torch.zeros(state_dim))
        self.register_buffer("state_half_range", torch.ones(state_dim))

    def set_stats(self, stats: Mapping[str, Mapping[str, object]]) -> None:
        """Set buffers from ``{"action": {"min", "max"}, "observation.state": {"min", "max"}}``.

        Raises:
            CheckpointError: see :func:`validate_stats`.
        """
        s = validate_stats(stats, {"action": self.action_center.numel(), "observation.state": self.state_center.numel()})
        for name, key in (("action", "action"), ("state", "observation.state")):
            lo, hi = torch.from_numpy(s[key]["min"]), torch.from_numpy(s[key]["max"])
            half = (hi - lo) / 2
            half = torch.where(half < self.eps, torch.ones_like(half), half)
            getattr(self, f"{name}_center").copy_((hi + lo) / 2)
            getattr(self, f"{name}_half_range").copy_(half)

    def stats(self) -> dict[str, dict[str, list[float]]]:
        """The ``{"min", "max"}`` the buffers encode (degenerate dims come back as ``center +/- 1``)."""
        out = {}
        for name, key in (("action", "action"), ("state", "observation.state")):
            c, h = getattr(self, f"{name}_center"), getattr(self, f"{name}_half_range")
            out[key] = {"min": (c - h).tolist(), "max": (c + h).tolist()}
        return out

    def normalize_action(self, a: Tensor) -> Tensor:
        """Actions ``(..., A)`` -> ``[-1, 1]`` by the dataset's per-dimension min and max."""
        return (a - self.action_center) / self.action_half_range

    def unnormalize_action(self, a: Tensor) -> Tensor:
        """Inverse of :meth:`normalize_action`: ``[-1, 1]`` -> actions in controller units."""
        return a * self.action_half_range + self.action_center

    def normalize_state(self, s: Tensor) -> Tensor:
        """Proprio states ``(..., D)`` -> ``[-1, 1]`` by the dataset's per-dimension min and max."""
        return (s - self.state_center) / self.state_half_range
