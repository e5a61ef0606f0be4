"""The coordinate frame a vision-language model writes image points in, and its conversion to camera pixels.

Models answer in different frames (checked against each model's documentation and processor code):

* ``resized_pixels``: **Qwen2.5-VL** answers in absolute pixels of the image its processor actually fed it. The
  processor resizes every image so both sides are multiples of ``factor`` = patch 14 x merge 2 = 28 and the area
  lies in ``[min_pixels, max_pixels]`` (``smart_resize`` in transformers' ``image_processing_qwen2_vl.py``): a
  128 x 128 camera image becomes 140 x 140, and the point ``[135, 66]`` is camera pixel ``[123.4, 60.3]``.
* ``grid1000``: **Qwen2-VL** and **Qwen3-VL** answer on a 0-1000 grid over the image (relative coordinates).
* ``unit``: most other models, asked for normalised coordinates, answer in ``[0, 1]``.
* ``pixels``: camera pixels at the native resolution (what tandem's own traces use; scripted replies).

Every frame is ``(x, y)``, x to the right, y down, origin at the top-left corner. :func:`default_point_frame`
gives a model's frame from its name; a config may name any frame explicitly (``planner.point_frame``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from tandem.core.errors import ConfigError

#: Frame names a config may use (besides ``auto``).
FRAMES: tuple[str, ...] = ("pixels", "resized_pixels", "grid1000", "unit")
#: Qwen2.5-VL's processor settings (``preprocessor_config.json`` of the released Qwen2.5-VL-*-Instruct models).
QWEN25_FACTOR, QWEN25_MIN_PIXELS, QWEN25_MAX_PIXELS = 28, 3136, 12845056


def smart_resize(height: int, width: int, factor: int = QWEN25_FACTOR, min_pixels: int = QWEN25_MIN_PIXELS,
                 max_pixels: int = QWEN25_MAX_PIXELS) -> tuple[int, int]:
    """``(H', W')`` px that Qwen2-VL-family processors resize an ``(height, width)`` image to.

    The rule of transformers' ``Qwen2VLImageProcessor`` (``smart_resize``): both sides rounded to multiples of
    ``factor``; if the area leaves ``[min_pixels, max_pixels]``, both are scaled (keeping the aspect ratio) and
    floored / ceiled to multiples of ``factor``.

    Raises:
        ConfigError: a non-positive size or factor, or an aspect ratio above 200 (the processor refuses those).
    """
    if height <= 0 or width <= 0 or factor <= 0:
        raise ConfigError(f"smart_resize needs positive sizes and factor, got {height}x{width}, factor {factor}")
    if max(height, width) / min(height, width) > 200:
        raise ConfigError(f"aspect ratio of {height}x{width} is above 200")
    h = round(height / factor) * factor
    w = round(width / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return int(h), int(w)


@dataclass(frozen=True)
class PointFrame:
    """How a model writes image points (see the module docstring).

    Attributes:
        kind: one of :data:`FRAMES`.
        factor, min_pixels, max_pixels: the processor's resize rule, for ``resized_pixels`` only (Qwen2.5-VL's by
            default; a server started with other ``min_pixels``/``max_pixels`` needs them here).

    Raises:
        ConfigError: an unknown kind or a bad resize setting.
    """

    kind: str = "pixels"
    factor: int = QWEN25_FACTOR
    min_pixels: int = QWEN25_MIN_PIXELS
    max_pixels: int = QWEN25_MAX_PIXELS

    def __post_init__(self) -> None:
        if self.kind not in FRAMES:
            raise ConfigError(f"point_frame must be 'auto' or one of {FRAMES}, got {self.kind!r}")
        if self.factor < 1 or not 0 < self.min_pixels <= self.max_pixels:
            raise ConfigError(f"point_frame resize needs factor >= 1 and 0 < min_pixels <= max_pixels, got "
                              f"{self.factor}, {self.min_pixels}, {self.max_pixels}")

    def model_image_size(self, image_size: tuple[int, int]) -> tuple[int, int]:
        """``(H, W)`` px of the image as the model sees it (the resized image for ``resized_pixels``)."""
        h, w = int(image_size[0]), int(image_size[1])
        if self.kind == "resized_pixels":
            return smart_resize(h, w, self.factor, self.min_pixels, self.max_pixels)
        return h, w

    def extent(self, image_size: tuple[int, int]) -> tuple[float, float]:
        """``(x_max, y_max)`` of the frame over a camera image of ``image_size = (H, W)`` px."""
        if self.kind == "grid1000":
            return 1000.0, 1000.0
        if self.kind == "unit":
            return 1.0, 1.0
        h, w = self.model_image_size(image_size)
        return float(w), float(h)

    @property
    def closed(self) -> bool:
        """Whether ``x_max`` / ``y_max`` themselves are valid (relative frames: the far edge); pixel frames are
        half-open, ``[0, W)``."""
        return self.kind in ("grid1000", "unit")

    def out_of_frame(self, points: np.ndarray, image_size: tuple[int, int]) -> np.ndarray:
        """Indices of the ``(K, 2)`` points that lie outside the frame."""
        xm, ym = self.extent(image_size)
        p = np.asarray(points, np.float64)
        if self.closed:
            bad = (p[:, 0] < 0) | (p[:, 0] > xm) | (p[:, 1] < 0) | (p[:, 1] > ym)
        else:
            bad = (p[:, 0] < 0) | (p[:, 0] >= xm) | (p[:, 1] < 0) | (p[:, 1] >= ym)
        return np.flatnonzero(bad)

    def to_camera_pixels(self, points: np.ndarray, image_size: tuple[int, int]) -> np.ndarray:
        """``float32 (K, 2)`` camera pixels (native ``image_size = (H, W)``) of ``(K, 2)`` in-frame points.

        Points on the far edge of a relative frame (1000, or 1.0) land just inside ``[0, W) x [0, H)``.
        """
        h, w = int(image_size[0]), int(image_size[1])
        xm, ym = self.extent(image_size)
        p = np.asarray(points, np.float64) * np.array([w / xm, h / ym])
        hi = np.array([np.nextafter(np.float32(w), np.float32(0)), np.nextafter(np.float32(h), np.float32(0))])
        return np.clip(p, 0.0, hi).astype(np.float32)

    def describe(self, image_size: tuple[int, int]) -> str:
        """How to write points in this frame, for the prompt (and the JSON schema's description)."""
        xm, ym = self.extent(image_size)
        if self.kind == "grid1000":
            return ("[x, y] on a 0-1000 grid over the image: x from 0 (left edge) to 1000 (right edge), y from 0 "
                    "(top edge) to 1000 (bottom edge)")
        if self.kind == "unit":
            return ("[x, y] normalised to the image size: x from 0.0 (left edge) to 1.0 (right edge), y from 0.0 "
                    "(top edge) to 1.0 (bottom edge)")
        return f"[x, y] pixels of the {int(xm)} x {int(ym)} image, x in [0, {int(xm)}), y in [0, {int(ym)})"


_QWEN25 = re.compile(r"qwen25vl")
_QWEN2_OR_3 = re.compile(r"qwen(2|3)vl")


def default_point_frame(model: str | None) -> PointFrame:
    """The frame a model answers in, from its name (HF id, served name, Ollama tag or transformers ``model_type``).

    Qwen2.5-VL (``Qwen/Qwen2.5-VL-7B-Instruct``, ``qwen2.5vl:7b``, ``qwen2_5_vl``): ``resized_pixels``;
    Qwen2-VL and Qwen3-VL (``qwen2_vl``, ``Qwen/Qwen3-VL-8B-Instruct``, ``qwen3-vl:8b``): ``grid1000``; any other
    model: ``unit``.
    """
    key = re.sub(r"[^a-z0-9]", "", (model or "").lower())
    if _QWEN25.search(key):
        return PointFrame("resized_pixels")
    if _QWEN2_OR_3.search(key):
        return PointFrame("grid1000")
    return PointFrame("unit")


def point_frame_from_config(value: object, declared: PointFrame, resize: object = None) -> PointFrame:
    """The frame a config asks for: ``auto``/None -> the client's ``declared`` frame; a name of :data:`FRAMES`;
    ``resize`` (``{"factor", "min_pixels", "max_pixels"}``) replaces the resize rule of ``resized_pixels``.

    Raises:
        ConfigError: an unknown name or resize key, or bad resize values.
    """
    frame = declared if value in (None, "auto") else PointFrame(str(value))
    if resize:
        if not isinstance(resize, dict) or set(resize) - {"factor", "min_pixels", "max_pixels"}:
            raise ConfigError(f"point_frame_resize must be a mapping of factor, min_pixels, max_pixels; got {resize!r}")
        frame = PointFrame(frame.kind, **{k: int(v) for k, v in resize.items()})
    return frame
