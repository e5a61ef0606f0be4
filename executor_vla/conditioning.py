"""Turning a subgoal's keypoint trace into network input, and the image-augmentation helper.

Two trace encodings, switchable with ``ExecutorConfig.trace_mode`` (measured against each other by
``benchmarks/trace_mode_ablation.py``):

* ``"raster"`` (LoHo-Manip): the polyline is drawn into an extra channel of the trace camera's frame,
  brightness rising from 0.25 at the start to 1.0 at the end (so the direction is visible), and the
  camera encoder sees RGB + trace. Drawn with OpenCV anti-aliased lines.
* ``"points"``: the K points, normalised to ``[-1, 1]`` and concatenated with their validity mask,
  go through an MLP (see :class:`TracePointEncoder`).

Pixels are ``(x right, y down)``, origin at the top-left, as in :class:`tandem.core.types.KeypointTrace`.
"""

from __future__ import annotations

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


def rasterize_trace(points: np.ndarray, mask: np.ndarray, image_size: tuple[int, int],
                    thickness: int = 1) -> np.ndarray:
    """Draw a keypoint trace as a one-channel image.

    Args:
        points: ``float (K, 2)`` px ``(x, y)`` in an image of ``image_size``.
        mask: ``(K,)`` 1 = valid point; segments are drawn between consecutive valid points.
        image_size: ``(H, W)`` of the output.
        thickness: line thickness in px.

    Returns:
        ``float32 (H, W)`` in ``[0, 1]``: 0 off the trace, 0.25 -> 1.0 along it (start -> end).
    """
    h, w = image_size
    canvas = np.zeros((h, w), np.uint8)
    valid = np.asarray(points, np.float32)[np.asarray(mask) > 0.5]
    n = len(valid)
    if n == 0:
        return canvas.astype(np.float32)
    shift = 4  # sub-pixel precision (1/16 px)
    fixed = np.round(valid * (1 << shift)).astype(np.int32)
    for i in range(max(n - 1, 1)):
        a, b = fixed[i], fixed[min(i + 1, n - 1)]
        val = int(round(255 * (0.25 + 0.75 * (i + 1) / max(n - 1, 1))))
        cv2.line(canvas, (int(a[0]), int(a[1])), (int(b[0]), int(b[1])), val, thickness, cv2.LINE_AA, shift)
    return canvas.astype(np.float32) / 255.0


def rasterize_batch(points: Tensor, mask: Tensor, image_size: tuple[int, int]) -> Tensor:
    """Batched :func:`rasterize_trace`: ``points (B, K, 2)``, ``mask (B, K)`` -> ``(B, 1, H, W)``."""
    pts = points.detach().cpu().numpy()
    m = mask.detach().cpu().numpy()
    out = np.stack([rasterize_trace(pts[i], m[i], image_size) for i in range(len(pts))])
    return torch.from_numpy(out).unsqueeze(1).to(points.device)


def normalize_points(points: Tensor, image_size: tuple[int, int]) -> Tensor:
    """Pixels ``(..., 2)`` ``(x, y)`` -> ``[-1, 1]`` (x over width, y over height)."""
    h, w = image_size
    scale = torch.tensor([w, h], dtype=points.dtype, device=points.device)
    return points / scale * 2.0 - 1.0


class TracePointEncoder(nn.Module):
    """MLP over normalised points and mask: ``(B, K, 2)``, ``(B, K)`` -> ``(B, out_dim)``."""

    def __init__(self, trace_len: int, out_dim: int, image_size: tuple[int, int]):
        super().__init__()
        self.image_size = image_size
        self.net = nn.Sequential(nn.Linear(3 * trace_len, 128), nn.Mish(), nn.Linear(128, out_dim))

    def forward(self, points: Tensor, mask: Tensor) -> Tensor:
        """``points (B, K, 2)`` px and ``mask (B, K)`` (1 where a point is given) -> ``(B, out_dim)``."""
        p = normalize_points(points, self.image_size) * mask.unsqueeze(-1)
        return self.net(torch.cat([p, mask.unsqueeze(-1)], -1).flatten(1))


def random_shift(x: Tensor, pad: int) -> Tensor:
    """DrQ random-shift augmentation (Kostrikov et al. 2020): replicate-pad by ``pad`` px, then crop back
    to ``(H, W)`` at a random offset per sample. ``x (B, C, H, W)`` -> same shape."""
    if pad <= 0:
        return x
    b, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    ox = torch.randint(0, 2 * pad + 1, (b,), device=x.device)
    oy = torch.randint(0, 2 * pad + 1, (b,), device=x.device)
    rows = (oy[:, None] + torch.arange(h, device=x.device)[None, :])  # (B, H)
    cols = (ox[:, None] + torch.arange(w, device=x.device)[None, :])  # (B, W)
    idx_b = torch.arange(b, device=x.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[idx_b, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()
