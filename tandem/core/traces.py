"""Keypoint traces as fixed-size arrays: the ONE resampling used by dataset labelling and by inference.

A :class:`~tandem.core.types.KeypointTrace` is a polyline of any length in the pixels of one camera. Networks take
``K`` points. The collector stores the resampled points as the dataset's ``subgoal.trace`` labels and the executor
resamples the trace it is given at run time; both call :func:`resample_trace`, so a trace means the same thing in
training and at run time.

Out-of-image points (a projected expert path that leaves the camera's view, a VLM point past the border) are
**clipped** to the image, ``[0, W - 1] x [0, H - 1]``, after resampling: ``x = -5`` becomes ``0`` in the dataset
and at inference alike. Clipping (rather than masking the points out) keeps every trace K points long with the
direction of travel towards the border; it is what the shipped checkpoints were trained on.

Pixels are ``(x right, y down)``, origin at the top-left of the camera image, as in ``KeypointTrace``.
"""

from __future__ import annotations

import numpy as np

from tandem.core.errors import SubgoalSchemaError
from tandem.core.types import KeypointTrace


def resample_polyline(points: np.ndarray, k: int) -> np.ndarray:
    """``k`` points equally spaced by arc length along a polyline; no clipping.

    Args:
        points: ``float (N, 2)`` px ``(x, y)``, N >= 1, all finite.
        k: number of output points, >= 1.

    Returns:
        ``float64 (k, 2)``. The first and last points are the polyline's own first and last points. A single point,
        or a polyline of zero length, is repeated.

    Raises:
        SubgoalSchemaError: points that are not a finite ``(N, 2)`` array with N >= 1, or ``k < 1``.
    """
    p = np.asarray(points, np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or len(p) == 0 or not np.all(np.isfinite(p)):
        raise SubgoalSchemaError(f"trace points must be finite (N, 2) with N >= 1, got shape {p.shape}")
    if k < 1:
        raise SubgoalSchemaError(f"a trace is resampled to k >= 1 points, got k={k}")
    seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    if len(p) == 1 or cum[-1] <= 1e-9:
        return np.repeat(p[:1], k, axis=0)
    s = np.linspace(0.0, cum[-1], k)
    out = np.stack([np.interp(s, cum, p[:, 0]), np.interp(s, cum, p[:, 1])], axis=1)
    out[0], out[-1] = p[0], p[-1]
    return out


def resample_trace(trace: KeypointTrace | None, k: int,
                   image_size: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A keypoint trace as network input: ``K`` points by arc length, scaled to ``image_size`` and clipped to it.

    Args:
        trace: the trace (points in px of ``trace.image_size``), or None.
        k: K, output points.
        image_size: ``(H, W)`` px of the image the points are for; the points are scaled from
            ``trace.image_size`` (x by ``W / W_trace``, y by ``H / H_trace``). None: the trace's own size.

    Returns:
        ``(points float32 (K, 2), mask float32 (K,))``: with a trace, the resampled points clipped into
        ``[0, W - 1] x [0, H - 1]`` and a mask of ones; with ``trace=None``, zeros and a mask of zeros (no trace).

    Raises:
        SubgoalSchemaError: non-finite or malformed points, ``k < 1``, or a non-positive image size.
    """
    if trace is None:
        return np.zeros((k, 2), np.float32), np.zeros(k, np.float32)
    h, w = (int(v) for v in (trace.image_size if image_size is None else image_size))
    th, tw = (int(v) for v in trace.image_size)
    if min(h, w, th, tw) <= 0:
        raise SubgoalSchemaError(f"image sizes must be positive, got trace {trace.image_size} -> {(h, w)}")
    out = resample_polyline(trace.points, k) * np.array([w / tw, h / th])
    out[:, 0] = np.clip(out[:, 0], 0, w - 1)
    out[:, 1] = np.clip(out[:, 1], 0, h - 1)
    return out.astype(np.float32), np.ones(k, np.float32)


__all__ = ["resample_polyline", "resample_trace"]
