"""Training and scoring of the presence model (:mod:`planner_vlm.learned.presence_model`) on one CPU core.

Binary cross-entropy per object over rendered first frames (``scripts/render_presence_scenes.py``), Adam, random
shifts of up to :data:`MAX_SHIFT_PX` px and brightness jitter as augmentation, stopped by a wall-clock budget.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch import nn

from planner_vlm.learned.presence_model import PresenceModelConfig, PresenceNet, images_to_tensor

#: Augmentation: each training image is shifted by up to this many pixels in x and y (edges repeated).
MAX_SHIFT_PX = 3
#: Augmentation: each training image's brightness is scaled by a factor in [1 - j, 1 + j].
BRIGHTNESS_JITTER = 0.15


def _augment(views: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random per-image shifts (replicate padding) and brightness of a normalised ``(B, V, 3, H, W)`` batch."""
    x = views.flatten(0, 1)
    b, _, h, w = x.shape
    s = MAX_SHIFT_PX
    padded = nn.functional.pad(x, (s, s, s, s), mode="replicate")
    dy = torch.randint(0, 2 * s + 1, (b,), generator=gen)
    dx = torch.randint(0, 2 * s + 1, (b,), generator=gen)
    out = torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(b)])
    scale = 1.0 + (torch.rand(b, 1, 1, 1, generator=gen) * 2 - 1) * BRIGHTNESS_JITTER
    return (out * scale).view(views.shape)


def train_presence(images: np.ndarray, present: np.ndarray, cfg: PresenceModelConfig, max_minutes: float,
                   max_steps: int | None = None, batch_size: int = 64, lr: float = 1e-3,
                   seed: int = 0) -> tuple[PresenceNet, dict[str, Any]]:
    """Train a :class:`PresenceNet` from scratch.

    Args:
        images: ``uint8 (N, V, H, W, 3)`` RGB views of ``cfg.cameras``, at ``cfg.image_size``. present: ``bool (N, O)``
            in ``cfg.objects`` order.
        cfg: the network. max_minutes: > 0, wall clock. max_steps: optional cap on optimiser steps.
        batch_size: >= 1. lr: Adam's learning rate. seed: the torch generator's seed (data order, augmentation).

    Returns:
        ``(net in eval mode, log)``: the log has ``steps``, ``seconds``, ``samples_per_s``, ``loss_first`` (the mean
        of the first 20 steps) and ``loss_last`` (the last 20).

    Raises:
        ValueError: mismatched shapes, an image size other than ``cfg.image_size``, or bad budgets.
    """
    images = np.asarray(images)
    present = np.asarray(present, bool)
    if images.ndim != 5 or images.shape[1:] != (len(cfg.cameras), *cfg.image_size, 3):
        raise ValueError(f"images must be (N, {len(cfg.cameras)}, {cfg.image_size[0]}, {cfg.image_size[1]}, 3), "
                         f"got {images.shape}")
    if present.shape != (len(images), len(cfg.objects)):
        raise ValueError(f"present must be (N={len(images)}, O={len(cfg.objects)}), got {present.shape}")
    if not max_minutes > 0 or batch_size < 1 or (max_steps is not None and max_steps < 1):
        raise ValueError(f"need max_minutes > 0, batch_size >= 1, max_steps >= 1 or None; got {max_minutes}, "
                         f"{batch_size}, {max_steps}")
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = PresenceNet(cfg).train()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    x_all = images_to_tensor(images)
    y_all = torch.from_numpy(present.astype(np.float32))
    losses: list[float] = []
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < 60.0 * max_minutes and (max_steps is None or steps < max_steps):
        idx = torch.randint(0, len(images), (batch_size,), generator=gen)
        loss = nn.functional.binary_cross_entropy_with_logits(net(_augment(x_all[idx], gen)), y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        steps += 1
    seconds = time.perf_counter() - t0
    log = {"steps": steps, "seconds": round(seconds, 1), "samples_per_s": round(steps * batch_size / seconds, 1),
           "loss_first": round(float(np.mean(losses[:20])), 4), "loss_last": round(float(np.mean(losses[-20:])), 4)}
    return net.eval(), log


def presence_logits(net: PresenceNet, images: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """``float64 (N, O)`` logits of ``uint8 (N, V, H, W, 3)`` views, in batches, without gradients."""
    out = []
    with torch.no_grad():
        for i in range(0, len(images), batch_size):
            out.append(net(images_to_tensor(images[i:i + batch_size])).double().numpy())
    return np.concatenate(out) if out else np.zeros((0, net.head[-1].out_features))


def presence_accuracy(logits: np.ndarray, present: np.ndarray, objects: tuple[str, ...]) -> dict[str, Any]:
    """Accuracy at p = 0.5, overall and per object, of ``(N, O)`` logits against ``bool (N, O)`` labels."""
    right = (logits > 0) == np.asarray(present, bool)
    return {"accuracy": round(float(right.mean()), 4),
            "per_object": {o: round(float(right[:, i].mean()), 4) for i, o in enumerate(objects)}}
