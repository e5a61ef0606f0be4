"""The state model's network: a small CNN with spatial soft-argmax keypoints, per-keypoint heights and predicates.

Input: one RGB image ``(B, 3, H, W)`` in ``[0, 1]`` (agentview, 84 x 84 px by default) and the proprio features
``(B, 10)`` (:func:`planner_vlm.learned.proprio.proprio_features`). Output, per image:

* ``heatmap`` logits ``(B, K, h, w)`` for K = 2 O keypoints at stride ``heatmap_stride`` (42 x 42 at 84 px) and their
  spatial soft-argmax ``px`` ``(B, K, 2)`` in input pixels ``(x, y)``, sub-pixel (the expected location under the
  heatmap's softmax: the spatial softmax of Levine, Finn et al., JMLR 2016 "End-to-end training of deep visuomotor
  policies", and the differentiable soft-argmax of DSNT, Nibali et al. 2018);
* ``z`` ``(B, K)`` m: the height of each keypoint in the world frame, regressed from the features pooled under its
  heatmap, its pixel and the proprio; the 3-D point is the camera ray through ``px`` at that height
  (:func:`lift_to_height`, with the calibration the caller passes);
* ``predicate_logits`` ``(B, P)``: one logit per ground predicate of the vocabulary, from every keypoint's pixel,
  height and pooled features, the objects' lifted 3-D origins relative to the gripper and to each other (what
  ``on(x,y)`` and ``grasped(x)`` are about), a global image feature and the proprio;
* ``entropy`` ``(B, K)`` nats of each keypoint's heatmap softmax: a sharp peak in the training scenes, a diffuse
  one on images unlike them (the confidence signal of :mod:`planner_vlm.learned.state_model`);
* with ``cfg.yaw_head``, ``yaw_vec`` ``(B, O, 2)``: each object's ``(cos m yaw, sin m yaw)`` (unnormalised) for its
  symmetry order ``m``, regressed by a small CNN from a :data:`YAW_PATCH_PX` px patch of the image centred on the
  object's predicted origin (a second, local stage as in top-down pose estimators; PoseCNN regresses rotations
  next to its keypoints, Xiang et al. RSS 2018), plus the patch centre, the gripper's yaw and the object's offset
  from the gripper (a held object turns with it). The patch CNN sees no image coordinates, so it cannot memorise
  the training scenes' layouts, which the whole-image features did (measured: 4x the training error held out).

About 0.1 M parameters (under 0.5 MB) and 25 M multiply-adds per 84 px image; the encoder runs at strides 2 to 8, with CoordConv channels (Liu et al. 2018)
so that the heads know where a feature is.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from planner_vlm.learned.proprio import PROPRIO_FEATURES
from planner_vlm.learned.state_config import StateModelConfig

#: Per-keypoint pooled features passed to the predicate head (after a linear projection).
PREDICATE_KEYPOINT_FEATURES = 16
#: Side (input px) of the image patch the yaw head reads around each object's origin.
YAW_PATCH_PX = 20
#: Training jitter (px, uniform) of the yaw patch centre: the origin is predicted to about a pixel.
YAW_PATCH_JITTER_PX = 1.5


def image_patches(image: Tensor, centres: Tensor, size: int) -> Tensor:
    """``(B, O, 3, size, size)`` patches of ``image (B, 3, H, W)`` centred on ``centres (B, O, 2)`` px ``(x, y)``
    (pixel centres at integer coordinates), one sample per pixel, bilinear, zeros outside the image."""
    b, _, h, w = image.shape
    o = centres.shape[1]
    offs = torch.arange(size, dtype=image.dtype, device=image.device) - (size - 1) / 2.0
    gy, gx = torch.meshgrid(offs, offs, indexing="ij")
    x = centres[..., 0, None, None] + gx  # (B, O, size, size) px
    y = centres[..., 1, None, None] + gy
    grid = torch.stack([(2 * x + 1) / w - 1, (2 * y + 1) / h - 1], dim=-1)  # align_corners=False
    src = image[:, None].expand(b, o, *image.shape[1:]).reshape(b * o, *image.shape[1:])
    out = F.grid_sample(src, grid.reshape(b * o, size, size, 2), mode="bilinear", padding_mode="zeros",
                        align_corners=False)
    return out.reshape(b, o, image.shape[1], size, size)


def _groups(c: int) -> int:
    for g in (8, 4, 2):
        if c % g == 0 and c // g >= 2:
            return g
    return 1


def conv_block(c_in: int, c_out: int, k: int, stride: int = 1) -> nn.Sequential:
    """Conv ``k x k`` (padding ``k // 2``) -> GroupNorm -> SiLU."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2, bias=False),
                         nn.GroupNorm(_groups(c_out), c_out), nn.SiLU())


def coord_channels(b: int, h: int, w: int, device: torch.device, dtype: torch.dtype) -> Tensor:
    """``(B, 2, H, W)``: x and y of each pixel scaled to ``[-1, 1]`` (CoordConv)."""
    ys = torch.linspace(-1.0, 1.0, h, device=device, dtype=dtype)
    xs = torch.linspace(-1.0, 1.0, w, device=device, dtype=dtype)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack([gx, gy])[None].expand(b, 2, h, w)


def lift_to_height(px: Tensor, z: Tensor, k_inv: Tensor, rot: Tensor, pos: Tensor) -> Tensor:
    """3-D points ``(..., 3)`` m where the camera rays through pixels ``px (..., 2)`` meet the planes ``z (...)``.

    Args:
        px: pixels ``(x, y)`` at the calibration's image size.
        z: heights (m, world frame).
        k_inv: ``(3, 3)`` inverse intrinsics. rot: ``(3, 3)`` world-from-camera rotation (OpenCV axes).
        pos: ``(3,)`` camera centre (m, world).

    The same maths as :meth:`planner_vlm.learned.camera.CameraCalibration.lift`, differentiable.
    """
    hom = torch.cat([px, torch.ones_like(px[..., :1])], dim=-1)
    d = hom @ k_inv.T @ rot.T  # (..., 3) ray directions in the world
    dz = d[..., 2]
    dz = torch.where(dz.abs() < 1e-6, torch.full_like(dz, -1e-6), dz)
    s = (z - pos[2]) / dz
    return pos + s[..., None] * d


class StateNet(nn.Module):
    """See the module docstring.

    Args:
        cfg: the model config (vocabulary sizes, widths, image size).

    Buffers ``z_mean``, ``z_std`` (m) normalise the height regression; the trainer sets them from the data.
    """

    def __init__(self, cfg: StateModelConfig):
        super().__init__()
        self.cfg = cfg
        c0, c1, c2, c3 = cfg.channels
        k, p = cfg.num_keypoints, len(cfg.predicates)
        self.k, self.p = k, p
        self.enc0 = conv_block(3 + 2, c0, 5, stride=2)
        self.enc1 = conv_block(c0, c1, 3)
        self.enc2 = nn.Sequential(conv_block(c1, c2, 3, stride=2), conv_block(c2, c2, 3))
        self.enc3 = nn.Sequential(conv_block(c2, c3, 3, stride=2), conv_block(c3, c3, 3))
        self.up3 = nn.Sequential(conv_block(c3 + c2, c2, 1), conv_block(c2, c2, 3))
        self.fuse = conv_block(c2 + c1, c1, 1)
        self.heat = nn.Conv2d(c1, max(k, 1), 3, padding=1)
        self.log_beta = nn.Parameter(torch.zeros(max(k, 1)))  # per-keypoint softmax sharpness (learned)
        pooled = c1 + c2
        prop = PROPRIO_FEATURES if cfg.use_proprio else 0
        hid = cfg.head_hidden
        self.kp_embed = nn.Parameter(torch.zeros(max(k, 1), 8))
        nn.init.normal_(self.kp_embed, std=0.5)
        self.z_head = nn.Sequential(nn.Linear(pooled + 2 + prop + 8, hid), nn.SiLU(), nn.Linear(hid, hid), nn.SiLU(),
                                    nn.Linear(hid, 1))
        self.kp_proj = nn.Linear(pooled, PREDICATE_KEYPOINT_FEATURES)
        o = len(cfg.objects)
        pred_in = k * (PREDICATE_KEYPOINT_FEATURES + 3) + c3 + prop + 3 * o + 3 * (o * (o - 1) // 2)
        self.pred_head = nn.Sequential(nn.Linear(pred_in, hid), nn.SiLU(), nn.Linear(hid, hid), nn.SiLU(),
                                       nn.Linear(hid, max(p, 1)))
        self.yaw_cnn = (nn.Sequential(conv_block(3, 16, 3), conv_block(16, 32, 3, stride=2),
                                      conv_block(32, 32, 3), conv_block(32, 48, 3, stride=2),
                                      conv_block(48, 48, 3, stride=2), nn.AdaptiveAvgPool2d(1), nn.Flatten())
                        if cfg.yaw_head else None)
        self.yaw_head = (nn.Sequential(nn.Linear(48 + 2 + 2 + 3 + 8, hid), nn.SiLU(), nn.Linear(hid, hid), nn.SiLU(),
                                       nn.Linear(hid, 2)) if cfg.yaw_head else None)
        sym = [cfg.symmetry(ob) for ob in cfg.objects]
        self.register_buffer("symmetry_orders", torch.tensor(sym or [1], dtype=torch.float32))
        self.register_buffer("z_mean", torch.tensor(0.9))
        self.register_buffer("z_std", torch.tensor(0.1))
        self.register_buffer("proprio_mean", torch.zeros(PROPRIO_FEATURES))
        self.register_buffer("proprio_std", torch.ones(PROPRIO_FEATURES))

    def forward(self, image: Tensor, proprio: Tensor, geometry: tuple[Tensor, Tensor, Tensor]) -> dict[str, Tensor]:
        """Run the network.

        Args:
            image: ``float32 (B, 3, H, W)`` RGB in ``[0, 1]`` at ``cfg.image_size``.
            proprio: ``float32 (B, 10)`` proprio features (unnormalised; normalised here with the stored stats).
            geometry: ``(k_inv (3, 3), rot (3, 3), pos (3,))`` of the camera calibration at ``cfg.image_size``
                (:func:`lift_to_height`).

        Returns:
            ``{"heatmap": (B, K, h, w) logits, "px": (B, K, 2) px, "z": (B, K) m, "keypoints_3d": (B, K, 3) m,
            "predicate_logits": (B, P), "entropy": (B, K) nats}``, and ``"yaw_vec": (B, O, 2)`` with
            ``cfg.yaw_head``.
        """
        b, _, h, w = image.shape
        x = (image - 0.5) / 0.25
        x = torch.cat([x, coord_channels(b, h, w, x.device, x.dtype)], dim=1)
        f1 = self.enc1(self.enc0(x))  # stride 2
        f2 = self.enc2(f1)  # stride 4
        f3 = self.enc3(f2)  # stride 8
        u2 = self.up3(torch.cat([F.interpolate(f3, size=f2.shape[-2:], mode="bilinear", align_corners=False), f2], 1))
        u2_up = F.interpolate(u2, size=f1.shape[-2:], mode="bilinear", align_corners=False)
        feat = torch.cat([u2_up, f1], dim=1)  # (B, c2 + c1, h1, w1) at stride 2
        fused = self.fuse(feat)
        stride = self.cfg.heatmap_stride
        if stride != 2:
            size = (h // stride, w // stride)
            fused = F.interpolate(fused, size=size, mode="bilinear", align_corners=False)
            feat = F.interpolate(feat, size=size, mode="bilinear", align_corners=False)
        logits = self.heat(fused) * self.log_beta.exp()[None, :, None, None]  # (B, K, hh, ww)
        kk, hh, ww = logits.shape[1:]
        prob = logits.flatten(2).softmax(-1)  # (B, K, hh*ww)
        # cell centres in input pixels: cell j covers pixels [j*s, j*s + s - 1]
        sx, sy = w / ww, h / hh
        xs = (torch.arange(ww, device=x.device, dtype=x.dtype) + 0.5) * sx - 0.5
        ys = (torch.arange(hh, device=x.device, dtype=x.dtype) + 0.5) * sy - 0.5
        gy, gx = torch.meshgrid(ys, xs, indexing="ij")
        px = torch.stack([(prob * gx.reshape(-1)).sum(-1), (prob * gy.reshape(-1)).sum(-1)], dim=-1)  # (B, K, 2)
        entropy = -(prob * prob.clamp_min(1e-12).log()).sum(-1)
        pooled = torch.einsum("bkn,bcn->bkc", prob, feat.flatten(2))  # (B, K, c2 + c1)
        px_norm = torch.stack([px[..., 0] / (w - 1), px[..., 1] / (h - 1)], dim=-1) * 2.0 - 1.0
        parts = [pooled, px_norm]
        prop = None
        if self.cfg.use_proprio:
            prop = (proprio - self.proprio_mean) / self.proprio_std
            parts.append(prop[:, None, :].expand(b, kk, prop.shape[-1]))
        parts.append(self.kp_embed[None].expand(b, kk, self.kp_embed.shape[-1]))
        z_norm = self.z_head(torch.cat(parts, dim=-1))[..., 0]  # (B, K)
        z = self.z_mean + self.z_std * z_norm
        p3d = lift_to_height(px, z, *geometry)  # (B, K, 3)
        origins = p3d[:, 0::2].detach()  # (B, O, 3): the predicate head reads the geometry, it does not move it
        eef = proprio[:, None, :3]
        o = origins.shape[1]
        pairs = [origins[:, i] - origins[:, j] for i in range(o) for j in range(i + 1, o)]
        per_kp = torch.cat([self.kp_proj(pooled), px_norm, z_norm[..., None]], dim=-1).flatten(1)
        glob = [per_kp, f3.mean(dim=(2, 3)), ((origins - eef) * 10.0).flatten(1), *[d * 10.0 for d in pairs]]
        if prop is not None:
            glob.append(prop)
        pred_logits = self.pred_head(torch.cat(glob, dim=-1))[:, : self.p]
        out = {"heatmap": logits, "px": px, "z": z, "keypoints_3d": p3d, "predicate_logits": pred_logits,
               "entropy": entropy}
        if self.yaw_head is not None:
            centres = px[:, 0::2].detach()
            if self.training:
                centres = centres + (torch.rand_like(centres) * 2 - 1) * YAW_PATCH_JITTER_PX
            patches = image_patches(x[:, :3], centres, YAW_PATCH_PX)  # (B, O, 3, P, P), normalised image
            feats = self.yaw_cnn(patches.flatten(0, 1)).view(b, o, -1)
            grip_yaw = torch.atan2(proprio[:, 4], proprio[:, 3])[:, None] * self.symmetry_orders[:o]  # (B, O)
            yaw_in = torch.cat([feats, px_norm[:, 0::2].detach(), torch.cos(grip_yaw)[..., None],
                                torch.sin(grip_yaw)[..., None], (origins - eef) * 10.0,
                                self.kp_embed[None, 0::2].expand(b, o, self.kp_embed.shape[-1])], dim=-1)
            out["yaw_vec"] = self.yaw_head(yaw_in)  # (B, O, 2)
        return out
