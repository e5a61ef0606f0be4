"""Support-consistent object heights: an object that rests on nothing but the table stands at its rest height.

One camera cannot tell height from depth: the state model finds an object's pixel well (0.35 px median at 84 px)
and regresses its height, and the 3-D point is where the camera ray through the pixel meets that height
(:func:`planner_vlm.learned.state_net.lift_to_height`). A height that is 4 cm off moves the point along the ray by
several centimetres. In closed loop on stack_three this was the learned stack's commonest pick failure: a cube on the
table far from the camera was read as one cube up (z 0.864 m instead of 0.822 m), its 3-D position landed 5 cm
off, and the pick closed on nothing.

The predicates say what supports an object: ``grasped(x)``, ``on(x, y)``, ``in_bin(x)``, ``on_peg(x, p)`` all have
the object as first argument. When none of them holds (every probability below 0.5), nothing but the surface it
started on supports it, and in every task's demonstrations such an object's origin is at one height to within a
millimetre (stack_three 0.8219 m, nut_assembly 0.8300 m, pick_place_bins 0.843-0.895 m per object). That height is
fitted from the labels (:func:`fit_rest_heights`, the median over the frames where the object is free, kept only
when those frames agree to :data:`MAX_REST_SPREAD_M`) and stored with the checkpoint; at run time a free object's
keypoints are lifted at it (:func:`apply_rest_heights`) instead of at the regressed height. The symbolic state
thus constrains the geometry, as a scene-graph tracker does (support relations, e.g. CES and "physical scene
understanding" priors); objects that something else supports keep the regressed height.

Conventions: heights are world z (m); keypoints ``(B, K, 3)`` m world frame, ``K = 2 O`` (origin, then a point along
the object's x axis, as the collector's labels); pixels ``(x, y)`` at the calibration's image size, origin top-left.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from planner_vlm.learned.camera import CameraCalibration

#: Free frames (no predicate of the object holds) must put its origin within this spread (m, 5th to 95th
#: percentile) for a rest height to be fitted; objects that rest at several heights get none.
MAX_REST_SPREAD_M = 0.005


def first_arguments(predicates: Sequence[str]) -> list[str]:
    """The first argument of each ground predicate name: ``"on(red,green)" -> "red"``, ``"grasped(can)" -> "can"``.

    Raises:
        ValueError: a name that is not ``name(arg, ...)``.
    """
    out = []
    for p in predicates:
        if "(" not in p or not p.endswith(")"):
            raise ValueError(f"predicate {p!r} is not of the form name(arg, ...)")
        out.append(p[p.index("(") + 1:-1].split(",")[0].strip())
    return out


@lru_cache(maxsize=32)
def _support_indices(objects: tuple[str, ...], predicates: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """Per object, the indices of the predicates that take it as first argument (parsed once per vocabulary)."""
    first = np.array(first_arguments(predicates))
    return tuple(np.flatnonzero(first == o) for o in objects)


def free_mask(objects: Sequence[str], predicates: Sequence[str], probabilities: np.ndarray,
              threshold: float = 0.5) -> np.ndarray:
    """``bool (B, O)``: no predicate with the object as first argument holds (``p < threshold``).

    Args:
        objects: the ``O`` object names. predicates: the ``P`` ground predicate names.
        probabilities: ``(B, P)`` predicate probabilities (or 0/1 labels).

    An object with no predicate at all is never free (nothing is known about what supports it).

    Raises:
        ValueError: a predicate name that is not ``name(arg, ...)``.
    """
    probs = np.atleast_2d(np.asarray(probabilities, np.float64))
    out = np.zeros((len(probs), len(objects)), bool)
    for i, idx in enumerate(_support_indices(tuple(objects), tuple(predicates))):
        if len(idx):
            out[:, i] = (probs[:, idx] < threshold).all(axis=1)
    return out


def fit_rest_heights(objects: Sequence[str], predicates: Sequence[str], keypoints_3d: np.ndarray,
                     predicate_labels: np.ndarray, max_spread_m: float = MAX_REST_SPREAD_M) -> np.ndarray:
    """Each object keypoint's rest height (m, world z) from labelled frames, NaN where none can be fitted.

    Args:
        objects: the ``O`` object names, in keypoint order. predicates: the ``P`` ground predicate names.
        keypoints_3d: ``(N, 2 O, 3)`` labelled keypoints (m, world frame).
        predicate_labels: ``(N, P)`` 0/1 labels.
        max_spread_m: the largest 5th-95th percentile spread of a keypoint's free heights that still gives a rest
            height.

    Returns:
        ``float64 (O, 2)``: the median height of each keypoint over the frames where its object is free
        (:func:`free_mask`); NaN for an object with fewer than 10 free frames or a wider spread.

    Raises:
        ValueError: shapes that do not match the vocabulary.
    """
    kp = np.asarray(keypoints_3d, np.float64)
    labels = np.asarray(predicate_labels, np.float64)
    o = len(objects)
    if kp.ndim != 3 or kp.shape[1:] != (2 * o, 3) or labels.shape != (len(kp), len(predicates)):
        raise ValueError(f"fit_rest_heights: keypoints {kp.shape} and labels {labels.shape} do not match "
                         f"{o} objects and {len(predicates)} predicates (want (N, {2 * o}, 3) and (N, {len(predicates)}))")
    free = free_mask(objects, predicates, labels)
    out = np.full((o, 2), np.nan)
    for i in range(o):
        rows = free[:, i]
        if rows.sum() < 10:
            continue
        for j in range(2):
            z = kp[rows, 2 * i + j, 2]
            lo, med, hi = np.percentile(z, [5, 50, 95])
            if hi - lo <= max_spread_m:
                out[i, j] = med
    return out


def apply_rest_heights(keypoints_3d: np.ndarray, px: np.ndarray, z: np.ndarray, free: np.ndarray,
                       rest_heights: np.ndarray, calibration: CameraCalibration
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Re-lift the keypoints of free objects at their rest heights.

    Args:
        keypoints_3d: ``(B, 2 O, 3)`` m, lifted at the regressed heights. px: ``(B, 2 O, 2)`` px.
        z: ``(B, 2 O)`` the regressed heights (m).
        free: ``bool (B, O)`` from :func:`free_mask`. rest_heights: ``(O, 2)`` m, NaN where unknown.
        calibration: the camera's (at the model's image size).

    Returns:
        ``(keypoints_3d, z)`` copies; keypoints of free objects with a known rest height lie on the ray through
        their pixel at that height, the others are unchanged.
    """
    kp, zz = np.array(keypoints_3d, np.float64), np.array(z, np.float64)
    rest = np.asarray(rest_heights, np.float64)
    use = np.repeat(free, 2, axis=1) & np.isfinite(rest.reshape(-1))[None, :]  # (B, 2 O)
    if use.any():
        heights = np.broadcast_to(rest.reshape(1, -1), use.shape)[use]
        kp[use] = calibration.lift(np.asarray(px, np.float64)[use], heights)
        zz[use] = heights
    return kp, zz


def rest_heights_to_json(rest_heights: np.ndarray) -> list[list[float | None]]:
    """``(O, 2)`` m -> the checkpoint's JSON form: a list per object, None where there is no rest height (NaN)."""
    return [[float(v) if np.isfinite(v) else None for v in row] for row in np.asarray(rest_heights, np.float64)]


def rest_heights_from_json(rows: Sequence[Sequence[float | None]]) -> np.ndarray:
    """The inverse of :func:`rest_heights_to_json`: ``float64 (O, 2)`` m, NaN for None."""
    return np.array([[np.nan if v is None else v for v in row] for row in rows], np.float64)
