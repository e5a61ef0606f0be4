"""Action normalisation of the track executor: min-max to ``[-1, 1]``, optionally companded near zero.

Diffusion Policy (Chi et al., RSS 2023) scales every action dimension linearly to ``[-1, 1]`` by its dataset range.
For set-point actions (:class:`executor_vla.track_config.TrackExecutorConfig`, ``action_space="setpoint"``) that
range is the longest motion of a chunk, about 0.5 m, so one millimetre is 0.004 normalised units, and a network
whose outputs are off by 0.02 units misses by 5 mm. That is the precision an insertion lacks (a nut must come down
within about 3 mm of its peg's axis), while the chunks that need it, hovering over the align point, have set-points
a few millimetres from the grip site. Companding (the mu-law of audio coding, ITU-T G.711) spends the unit range
where the small offsets are:

    y = sign(x) * log1p(|x| / s) / log1p(M / s)

with ``s`` the companding scale (m) and ``M`` the dimension's largest ``|x|`` in the data; near zero one millimetre
is then ``1 / (s log1p(M / s))`` units per m (about 12 times the linear scaling's for s = 5 mm, M = 0.26 m), and at
``|x| = 5 cm`` the same as linear. Its inverse is ``x = sign(y) s expm1(|y| log1p(M / s))``.

All functions take torch tensors or numpy arrays alike (the module path and the numpy fast path of
:class:`executor_vla.track_policy.TrackExecutor` share them), with the action dimension last: ``(..., A)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

#: Smallest action range (controller units) that min-max scaling divides by; narrower dimensions are centred.
ACTION_SPAN_MIN = 1e-4
#: Number of leading action dimensions that companding applies to: the set-point's position (x, y, z).
COMPANDED_DIMS = 3


def standardise(x: Any, mean: Any, std: Any) -> Any:
    """``(x - mean) / std`` on torch tensors or numpy arrays alike: the feature normaliser of both inference paths."""
    return (x - mean) / std


def from_unit_range(a: Any, low: Any, span: Any) -> Any:
    """Min-max unscaling ``[-1, 1] -> [low, low + span]`` (Diffusion Policy's action normalisation), on torch
    tensors or numpy arrays alike: the action unnormaliser of both inference paths."""
    return (a + 1.0) / 2.0 * span + low


def to_unit_range(a: Any, low: Any, span: Any) -> Any:
    """Min-max scaling ``[low, low + span] -> [-1, 1]``, the inverse of :func:`from_unit_range`."""
    return (a - low) / span * 2.0 - 1.0


def _lib(a: Any) -> Any:
    return torch if isinstance(a, torch.Tensor) else np


def _floored(x: Any) -> Any:
    """``x`` floored at :data:`ACTION_SPAN_MIN` (a tensor stays a tensor, an array keeps its float32)."""
    return x.clamp_min(ACTION_SPAN_MIN) if isinstance(x, torch.Tensor) else np.maximum(x, np.float32(ACTION_SPAN_MIN))


def compand(x: Any, scale: float, bound: Any) -> Any:
    """Mu-law companding ``x -> sign(x) log1p(|x|/scale) / log1p(bound/scale)`` (see module doc).

    Args:
        x: values, ``(..., D)`` (m for set-points). scale: ``s > 0``, same unit. bound: ``(D,)`` largest ``|x|``
            per dimension (> 0); ``|x| = bound`` maps to 1.
    """
    lib = _lib(x)
    return lib.sign(x) * lib.log1p(lib.abs(x) / scale) / lib.log1p(bound / scale)


def expand(y: Any, scale: float, bound: Any) -> Any:
    """Inverse of :func:`compand`: ``y -> sign(y) scale expm1(|y| log1p(bound/scale))``."""
    lib = _lib(y)
    return lib.sign(y) * scale * lib.expm1(lib.abs(y) * lib.log1p(bound / scale))


def span_of(low: Any, high: Any) -> Any:
    """Min-max span ``high - low``, floored at :data:`ACTION_SPAN_MIN`."""
    return _floored(high - low)


def compand_bound(low: Any, high: Any) -> Any:
    """``(COMPANDED_DIMS,)`` largest ``|x|`` of the companded dimensions from the action range, floored at
    :data:`ACTION_SPAN_MIN`."""
    return _floored(_lib(low).maximum(abs(low[:COMPANDED_DIMS]), abs(high[:COMPANDED_DIMS])))


def normalise_actions(a: Any, low: Any, high: Any, compand_m: float | None) -> Any:
    """Actions in controller units ``(..., A)`` -> ``[-1, 1]``: min-max per dimension, or with ``compand_m``
    (m) the first :data:`COMPANDED_DIMS` companded (:func:`compand`) and the rest min-max.

    Args:
        a: ``(..., A)``. low, high: ``(A,)`` the dataset's action range. compand_m: companding scale, or None.
    """
    y = to_unit_range(a, low, span_of(low, high))
    if compand_m is not None:
        y[..., :COMPANDED_DIMS] = compand(a[..., :COMPANDED_DIMS], compand_m, compand_bound(low, high))
    return y


def unnormalise_actions(y: Any, low: Any, high: Any, compand_m: float | None) -> Any:
    """Inverse of :func:`normalise_actions`: ``[-1, 1]`` ``(..., A)`` -> controller units."""
    a = from_unit_range(y, low, span_of(low, high))
    if compand_m is not None:
        a[..., :COMPANDED_DIMS] = expand(y[..., :COMPANDED_DIMS], compand_m, compand_bound(low, high))
    return a


__all__ = ["ACTION_SPAN_MIN", "COMPANDED_DIMS", "compand", "compand_bound", "expand", "from_unit_range",
           "normalise_actions", "span_of", "standardise", "to_unit_range", "unnormalise_actions"]
