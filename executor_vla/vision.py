"""Small ResNet-style image encoder with GroupNorm and a spatial-softmax head, trained from scratch.

Diffusion Policy (Chi et al. 2023) replaces ResNet18's BatchNorm with GroupNorm and its global pooling
with a spatial softmax (Levine et al. 2016, "End-to-end training of deep visuomotor policies"); it
needs no ImageNet weights. Here the ResNet is shrunk to 4 stride-2 stages
(default 32-32-64-128 channels; a 128 x 128 input gives an 8 x 8 feature map), about 50 M MACs
per image instead of ResNet18's 1.8 G, so that several views encode in a few ms on a CPU.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class BasicBlock(nn.Module):
    """ResNet basic block (He et al. 2016) with GroupNorm: ``(B, C_in, H, W) -> (B, C_out, H/s, W/s)``."""

    def __init__(self, c_in: int, c_out: int, stride: int, groups: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.gn1 = nn.GroupNorm(groups, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.gn2 = nn.GroupNorm(groups, c_out)
        self.skip = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.GroupNorm(groups, c_out))
                     if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x: Tensor) -> Tensor:
        """``(B, C_in, H, W) -> (B, C_out, H / stride, W / stride)``."""
        h = F.relu(self.gn1(self.conv1(x)))
        h = self.gn2(self.conv2(h))
        return F.relu(h + self.skip(x))


class SpatialSoftmax(nn.Module):
    """Spatial soft-argmax: ``(B, C, H, W) -> (B, 2 * K)`` expected (x, y) of K learned keypoint maps.

    Coordinates are in ``[-1, 1]`` (x right, y down). A 1x1 conv maps C channels to K keypoint maps.
    """

    def __init__(self, c_in: int, num_kp: int, h: int, w: int):
        super().__init__()
        self.kp = nn.Conv2d(c_in, num_kp, 1)
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
        self.register_buffer("pos", torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        """Feature maps ``(B, C, H, W)`` -> keypoints ``(B, 2 * K)``: per map the expected (x, y) in ``[-1, 1]``."""
        b = x.shape[0]
        logits = self.kp(x).flatten(2)  # (B, K, HW)
        attn = logits.softmax(-1)
        return (attn @ self.pos).reshape(b, -1)  # (B, K * 2)


class ImageEncoder(nn.Module):
    """Image ``(B, C_in, H, W)`` in ``[-1, 1]`` -> feature ``(B, out_dim)``.

    Args:
        in_channels: 3 for RGB, 4 for RGB + a rasterised trace channel.
        channels: per-stage channels; each stage halves the resolution (stem included).
        num_kp: spatial-softmax keypoints; ``out_dim = 2 * num_kp``.
        image_size: ``(H, W)`` input size.
        groups: GroupNorm groups.
    """

    def __init__(self, in_channels: int, channels: tuple[int, ...], num_kp: int, image_size: tuple[int, int],
                 groups: int = 8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, channels[0], 3, 2, 1, bias=False),
                                  nn.GroupNorm(groups, channels[0]), nn.ReLU())
        blocks = [BasicBlock(ci, co, 2, groups) for ci, co in zip(channels[:-1], channels[1:])]
        self.blocks = nn.Sequential(*blocks)
        h, w = image_size
        for _ in range(len(channels)):
            h, w = (h + 1) // 2, (w + 1) // 2
        self.pool = SpatialSoftmax(channels[-1], num_kp, h, w)
        self.out_dim = 2 * num_kp
        self.proj = nn.Sequential(nn.Linear(self.out_dim, self.out_dim), nn.ReLU())

    def forward(self, x: Tensor) -> Tensor:
        """Images ``(B, C_in, H, W)`` in ``[-1, 1]`` -> features ``(B, out_dim)``."""
        return self.proj(self.pool(self.blocks(self.stem(x))))
