"""Is each object of a task's vocabulary in the camera's view? A small trained presence classifier.

The state model (:mod:`planner_vlm.learned.state_model`) was never shown a scene without one of its objects, so it
cannot say "absent": it finds a removed object somewhere, often with a sharp but false peak on another object, and
its heatmap's spread tells a hidden object from an absent one only on some tasks
(:mod:`planner_vlm.learned.absence`). The presence model is trained for exactly that question, on first frames
rendered with and without each object (``scripts/render_presence_scenes.py``, the simulator's labels saying which):
per camera a small CNN, four stride-2 convolutions, then global max and mean pooling (is the object anywhere, as
multiple-instance detectors pool; Oquab et al. CVPR 2015 pool class evidence over an image the same way), the views'
features concatenated, and one logit per object (binary cross-entropy, one independent "present" probability each).
Two views: the state model's camera, and the wrist camera at the episode's start pose, looking down on the objects:
from one camera a small object can stand wholly hidden behind a tall box (pick_place_bins' bread or can behind the
cereal box), which no single view can tell from an absent one.

At an episode's first plan the learned planner refuses an instruction object whose presence probability is below
its entry of the checkpoint's ``absent_below`` (per object, fitted on validation scenes by :func:`fit_absent_below`),
and records the read.

Checkpoint (a directory): ``config.json`` (``format`` :data:`FORMAT`, ``model``: :class:`PresenceModelConfig`,
``absent_below``, ``metrics``) and ``model.safetensors``; ``command.txt`` holds the command that trained it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

from planner_vlm.learned.checkpoint_files import load_matching_weights, read_checkpoint_config
from planner_vlm.learned.state_model import resize_image
from tandem.core.errors import CheckpointError, ConfigError
from tandem.core.number_fields import check_own_numbers

FORMAT = "tandem-presence-model/1"
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
COMMAND = "command.txt"
#: Pixel normalisation of the RGB input (x / 255 - MEAN) / STD.
PIXEL_MEAN, PIXEL_STD = 0.5, 0.25
#: The fitted threshold's logit lies at least this far (nats) below the lowest logit of any present object in the
#: fit's scenes: a false refusal ends an episode that could have succeeded, so it keeps a margin.
LOGIT_MARGIN = 1.0


@dataclass(frozen=True)
class PresenceModelConfig:
    """The presence network and its vocabulary (fixed by the weights).

    Attributes:
        objects: object names (O), the order of the logits.
        cameras: the cameras the model reads (V >= 1), e.g. ``("workcell", "wrist")``: the state model's, and the
            wrist's at the start pose.
        image_size: ``(H, W)`` px of every view; an image of another size is resized to it.
        channels: widths of the four stride-2 convolution stages.
        hidden: width of the hidden layer before the logits.
    """

    objects: tuple[str, ...] = ()
    cameras: tuple[str, ...] = ("agentview",)
    image_size: tuple[int, int] = (84, 84)
    channels: tuple[int, int, int, int] = (16, 32, 48, 64)
    hidden: int = 64

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
        object.__setattr__(self, "objects", tuple(str(o) for o in self.objects))
        object.__setattr__(self, "cameras", tuple(str(c) for c in self.cameras))
        object.__setattr__(self, "image_size", tuple(int(v) for v in self.image_size))
        object.__setattr__(self, "channels", tuple(int(v) for v in self.channels))
        if not self.objects or len(set(self.objects)) != len(self.objects):
            raise ConfigError(f"presence model objects must be unique and not empty, got {list(self.objects)}")
        if not self.cameras or len(set(self.cameras)) != len(self.cameras):
            raise ConfigError(f"presence model cameras must be unique and not empty, got {list(self.cameras)}")
        if len(self.image_size) != 2 or min(self.image_size) < 16:
            raise ConfigError(f"presence model image_size must be (H, W) >= 16 px, got {list(self.image_size)}")
        if len(self.channels) != 4 or min(self.channels) < 1 or self.hidden < 1:
            raise ConfigError(f"presence model channels must be 4 widths >= 1 and hidden >= 1, got "
                              f"{list(self.channels)}, {self.hidden}")

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PresenceModelConfig:
        """Build from a ``config.json`` section. Raises ConfigError: unknown keys or bad values, named."""
        if not isinstance(raw, Mapping):
            raise ConfigError(f"presence model config must be a mapping, got {type(raw).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ConfigError(f"unknown presence model config keys {unknown} (known: {sorted(known)})")
        try:
            return cls(**dict(raw))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"bad presence model config: {e}") from e

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``config.json`` ``model`` section."""
        return {"objects": list(self.objects), "cameras": list(self.cameras), "image_size": list(self.image_size),
                "channels": list(self.channels), "hidden": self.hidden}


def _encoder(channels: tuple[int, ...]) -> nn.Sequential:
    """Four 3x3 stride-2 convolutions with GroupNorm and ReLU: ``(B, 3, H, W)`` -> ``(B, C, H/16, W/16)``."""
    layers: list[nn.Module] = []
    width = 3
    for c in channels:
        layers += [nn.Conv2d(width, c, 3, stride=2, padding=1), nn.GroupNorm(min(8, c), c), nn.ReLU()]
        width = c
    return nn.Sequential(*layers)


class PresenceNet(nn.Module):
    """``(B, V, 3, H, W)`` normalised RGB views -> ``(B, O)`` presence logits: one encoder per view
    (:func:`_encoder`), global max and mean pooling, the views' features concatenated, an MLP."""

    def __init__(self, cfg: PresenceModelConfig) -> None:
        super().__init__()
        self.encoders = nn.ModuleList(_encoder(cfg.channels) for _ in cfg.cameras)
        self.head = nn.Sequential(nn.Linear(2 * cfg.channels[-1] * len(cfg.cameras), cfg.hidden), nn.ReLU(),
                                  nn.Linear(cfg.hidden, len(cfg.objects)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Views ``(B, V, 3, H, W)`` normalised -> presence logits ``(B, O)``."""
        feats = []
        for v, encoder in enumerate(self.encoders):
            f = encoder(x[:, v])
            feats += [f.amax(dim=(2, 3)), f.mean(dim=(2, 3))]
        return self.head(torch.cat(feats, dim=1))


def images_to_tensor(images: np.ndarray) -> torch.Tensor:
    """``uint8 (B, V, H, W, 3)`` RGB views -> ``float32 (B, V, 3, H, W)`` normalised.

    Raises:
        ValueError: not ``(B, V, H, W, 3)``.
    """
    arr = np.asarray(images)
    if arr.ndim != 5 or arr.shape[-1] != 3:
        raise ValueError(f"presence model needs RGB views (B, V, H, W, 3), got shape {np.shape(images)}")
    x = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32)).permute(0, 1, 4, 2, 3)
    return (x / 255.0 - PIXEL_MEAN) / PIXEL_STD


def fit_absent_below(present_logits: Sequence[float], absent_logits: Sequence[float],
                     margin: float = LOGIT_MARGIN) -> tuple[float, dict[str, Any]]:
    """The presence probability under which an object is refused as absent, from validation reads.

    The threshold's logit is ``min(present) - margin`` (no present read of the fit is refused, with a margin) or,
    where every absent read lies below every present one, the middle of the gap if that is lower.

    Args:
        present_logits: logits of objects that were in the scene. absent_logits: of objects that were not.
        margin: > 0 nats.

    Returns:
        ``(absent_below, report)``: the probability threshold in (0, 1) and the fit's counts (present and absent
        reads, the share of absent reads below the threshold, the lowest present and highest absent logit).

    Raises:
        ValueError: no present reads, non-finite logits, or ``margin <= 0``.
    """
    p = np.asarray(present_logits, np.float64)
    a = np.asarray(absent_logits, np.float64)
    if not margin > 0:
        raise ValueError(f"margin must be > 0 nats, got {margin}")
    if not len(p):
        raise ValueError("fit_absent_below needs present reads")
    if not (np.isfinite(p).all() and np.isfinite(a).all()):
        raise ValueError("fit_absent_below got non-finite logits")
    t = float(p.min()) - margin
    if len(a) and float(a.max()) < float(p.min()):
        t = min(t, 0.5 * (float(a.max()) + float(p.min())))
    report = {"present_reads": int(len(p)), "absent_reads": int(len(a)), "present_min_logit": round(float(p.min()), 3),
              "absent_max_logit": round(float(a.max()), 3) if len(a) else None, "threshold_logit": round(t, 3),
              "absent_caught": round(float(np.mean(a < t)), 4) if len(a) else None,
              "present_refused": int(np.sum(p < t))}
    return 1.0 / (1.0 + math.exp(-t)), report


class PresenceModel:
    """A trained presence classifier with its refusal threshold (see the module docstring).

    Attributes:
        cfg: the network and vocabulary. absent_below: object -> probability in (0, 1); an object read with a lower
            presence probability is absent.
        metrics: the figures recorded at training. command: the training command (``""`` if not recorded).
    """

    def __init__(self, cfg: PresenceModelConfig, net: PresenceNet | None = None,
                 absent_below: Mapping[str, float] | None = None, metrics: Mapping[str, Any] | None = None) -> None:
        below = {o: 0.05 for o in cfg.objects} if absent_below is None else dict(absent_below)
        if not isinstance(absent_below, Mapping | None) or set(below) != set(cfg.objects):
            raise ConfigError(f"presence model absent_below must map each object {list(cfg.objects)} to a "
                              f"probability, got {absent_below!r}")
        bad = {o: v for o, v in below.items()
               if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < float(v) < 1.0}
        if bad:
            raise ConfigError(f"presence model absent_below values must be numbers in (0, 1), got {bad}")
        self.cfg = cfg
        self.net = (net or PresenceNet(cfg)).eval()
        self.absent_below = {o: float(v) for o, v in below.items()}
        self.metrics = dict(metrics or {})
        self.command = ""

    @property
    def objects(self) -> tuple[str, ...]:
        """The object names, in the order of the logits."""
        return self.cfg.objects

    def predict(self, images: Mapping[str, np.ndarray]) -> np.ndarray:
        """Presence probabilities ``float64 (O,)`` in ``objects``' order.

        Args:
            images: camera -> ``uint8 (H, W, 3)`` RGB (upright, origin top-left), at least the model's ``cameras``
                (an ``Observation.images``; only those are read, so a lazy mapping renders only them); an image of
                another size is resized to ``image_size`` (area interpolation, as the state model does).

        Raises:
            ValueError: a camera of the model missing from ``images``, or an image that is not ``(H, W, 3)``.
        """
        views = []
        for camera in self.cfg.cameras:
            if camera not in images:
                raise ValueError(f"the presence model reads cameras {list(self.cfg.cameras)}; the observation has no "
                                 f"{camera!r} image (it has {sorted(images)})")
            arr = np.asarray(images[camera])
            if arr.ndim != 3 or arr.shape[-1] != 3 or min(arr.shape[:2]) < 1:
                raise ValueError(f"presence model reads {camera} RGB images (H, W, 3), got shape {arr.shape}")
            views.append(resize_image(np.ascontiguousarray(arr, dtype=np.uint8), self.cfg.image_size))
        with torch.no_grad():
            return torch.sigmoid(self.net(images_to_tensor(np.stack(views)[None]))[0]).double().numpy()

    def absent(self, probabilities: np.ndarray, names: Sequence[str]) -> list[tuple[str, str]]:
        """The objects of ``names`` that ``probabilities`` (``(O,)``, a :meth:`predict`) read absent:
        ``[(name, reason), ...]`` in ``names``' order, the reason naming the probability, e.g.
        ``"presence 0.003 < 0.02"``.

        Raises:
            ValueError: a name outside the model's vocabulary, or ``probabilities`` of another length than it.
        """
        unknown = [n for n in names if n not in self.cfg.objects]
        if unknown:
            raise ValueError(f"{unknown} are not objects of the presence model ({list(self.cfg.objects)})")
        probs = np.asarray(probabilities, np.float64)
        if probs.shape != (len(self.cfg.objects),):
            raise ValueError(f"probabilities must be ({len(self.cfg.objects)},), got {probs.shape}")
        out = []
        for name in names:
            p, limit = float(probs[self.cfg.objects.index(name)]), self.absent_below[name]
            if p < limit:
                out.append((name, f"presence {p:.3g} < {limit:.3g}"))
        return out

    def save(self, path: str | Path, command: str = "") -> Path:
        """Write the checkpoint directory (created). Returns it."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in self.net.state_dict().items()}, str(path / WEIGHTS))
        (path / CONFIG).write_text(json.dumps({"format": FORMAT, "model": self.cfg.to_dict(),
                                               "absent_below": self.absent_below, "metrics": self.metrics}, indent=2))
        if command:
            (path / COMMAND).write_text(command + "\n")
        return path

    @classmethod
    def from_checkpoint(cls, path: str | Path) -> PresenceModel:
        """Load a checkpoint directory.

        Raises:
            CheckpointError: a missing file, another format, an invalid config, or weights that do not match.
        """
        path = Path(path)
        raw = read_checkpoint_config(path, CONFIG, WEIGHTS, FORMAT, "presence model")
        try:
            cfg = PresenceModelConfig.from_dict(raw["model"])
            net = PresenceNet(cfg)
            load_matching_weights(net, path / WEIGHTS, "presence model")
            model = cls(cfg, net, absent_below=raw["absent_below"], metrics=raw.get("metrics"))
        except (ConfigError, KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"{path}: invalid presence model checkpoint: {e}") from e
        model.command = (path / COMMAND).read_text().strip() if (path / COMMAND).is_file() else ""
        return model
