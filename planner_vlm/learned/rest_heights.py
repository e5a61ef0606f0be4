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
fitted from the labels (:func:`fit_rest_heights`) and stored with the checkpoint; at run time a free object's
keypoints are lifted at it (:func:`apply_rest_heights`) instead of at the regressed height. The symbolic state
thus constrains the geometry, as a scene-graph tracker does (support relations, e.g. CES and "physical scene
understanding" priors); objects that something else supports keep the regressed height.

An object can rest in more than one way. A milk or cereal box knocked over lies on its side, its origin 4-5 cm
lower than upright (pick_place_bins: milk 0.881 m upright, 0.840 m lying); lifted at the upright height, its point
lands centimetres off along the ray, and a re-pick of it closes on nothing. So an
object has up to :data:`MAX_REST_MODES` *resting modes*, each a height that at least :data:`MIN_MODE_FRACTION` of its
free frames share to :data:`MAX_REST_SPREAD_M`, and the modes together must hold 90% of its free frames (else it
gets none: it rests anywhere). A free object is lifted at the mode nearest its regressed origin height; with one
mode, at that mode whatever the regression says (the single-height rule, which corrects the regression's errors).

Conventions: heights are world z (m); keypoints ``(B, K, 3)`` m world frame, ``K = 2 O`` (origin, then a point along
the object's x axis, as the collector's labels); pixels ``(x, y)`` at the calibration's image size, origin top-left;
rest heights ``(O, M, 2)`` m: object, mode (sorted by origin height), keypoint; NaN where there is none.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from planner_vlm.learned.camera import CameraCalibration

#: A resting mode's frames share its height to this width (m); its second keypoint gets a height only when the
#: 5th-95th percentile spread of that keypoint's heights in the mode is within it too.
MAX_REST_SPREAD_M = 0.005
#: At most this many resting modes per object.
MAX_REST_MODES = 3
#: A resting mode holds at least this fraction of the object's free frames (and at least 10 frames).
MIN_MODE_FRACTION = 0.02
#: The modes together hold at least this fraction of the object's free frames, or the object gets none.
MIN_MODE_COVERAGE = 0.9


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


def _densest_window(z: np.ndarray, width: float) -> tuple[float, int]:
    """``(start, count)``: the window ``[start, start + width]`` holding the most of the sorted heights ``z``."""
    ends = np.searchsorted(z, z + width, side="right")
    j = int(np.argmax(ends - np.arange(len(z))))
    return float(z[j]), int(ends[j] - j)


def fit_rest_heights(objects: Sequence[str], predicates: Sequence[str], keypoints_3d: np.ndarray,
                     predicate_labels: np.ndarray, max_spread_m: float = MAX_REST_SPREAD_M,
                     max_modes: int = MAX_REST_MODES) -> np.ndarray:
    """Each object's resting modes (m, world z per keypoint) from labelled frames (module doc).

    Args:
        objects: the ``O`` object names, in keypoint order. predicates: the ``P`` ground predicate names.
        keypoints_3d: ``(N, 2 O, 3)`` labelled keypoints (m, world frame).
        predicate_labels: ``(N, P)`` 0/1 labels.
        max_spread_m: the width (m) of heights that one resting mode's frames share.
        max_modes: at most this many modes per object.

    Returns:
        ``float64 (O, max_modes, 2)``: per object, its modes sorted by origin height, each the median height of
        each keypoint over the mode's free frames (:func:`free_mask`); NaN rows pad, and an object with fewer than
        10 free frames, or whose modes hold under :data:`MIN_MODE_COVERAGE` of them, has none. A mode's second
        keypoint is NaN when its heights in the mode spread wider than ``max_spread_m``.

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
    out = np.full((o, max_modes, 2), np.nan)
    for i in range(o):
        heights = kp[free[:, i]][:, 2 * i:2 * i + 2, 2]  # (F, 2): origin, second keypoint
        n_free = len(heights)
        if n_free < 10:
            continue
        left = np.ones(n_free, bool)
        modes: list[np.ndarray] = []
        while len(modes) < max_modes and left.any():
            start, count = _densest_window(np.sort(heights[left, 0]), max_spread_m)
            if count < max(10, MIN_MODE_FRACTION * n_free):
                break
            inside = left & (heights[:, 0] >= start) & (heights[:, 0] <= start + max_spread_m)
            mode = np.median(heights[inside], axis=0)
            lo, hi = np.percentile(heights[inside, 1], [5, 95])
            if hi - lo > max_spread_m:
                mode[1] = np.nan
            modes.append(mode)
            # the next mode is another way of resting: leave out this one's neighbourhood
            left &= np.abs(heights[:, 0] - mode[0]) > 2 * max_spread_m
        if not modes:
            continue
        held = np.abs(heights[:, None, 0] - np.array([m[0] for m in modes])[None, :]) <= max_spread_m
        if held.any(axis=1).mean() < MIN_MODE_COVERAGE:
            continue
        modes.sort(key=lambda m: m[0])
        out[i, :len(modes)] = modes
    return out


def as_rest_modes(rest_heights: np.ndarray, n_objects: int) -> np.ndarray:
    """``float64 (O, M, 2)`` m: resting modes from ``(O, M, 2)``, or from the one-height-per-object ``(O, 2)`` (a
    view of the input where it is already float64, not a copy).

    Raises:
        ValueError: neither shape, for ``n_objects`` objects.
    """
    rest = np.asarray(rest_heights, np.float64)
    if rest.ndim == 2 and rest.shape == (n_objects, 2):
        return rest[:, None, :]
    if rest.ndim == 3 and rest.shape[0] == n_objects and rest.shape[2] == 2 and rest.shape[1] >= 1:
        return rest
    raise ValueError(f"rest heights must be (objects={n_objects}, 2) or ({n_objects}, modes, 2) m, got {rest.shape}")


def apply_rest_heights(keypoints_3d: np.ndarray, px: np.ndarray, z: np.ndarray, free: np.ndarray,
                       rest_heights: np.ndarray, calibration: CameraCalibration
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Re-lift the keypoints of free objects at a resting mode's heights.

    Args:
        keypoints_3d: ``(B, 2 O, 3)`` m, lifted at the regressed heights. px: ``(B, 2 O, 2)`` px.
        z: ``(B, 2 O)`` the regressed heights (m).
        free: ``bool (B, O)`` from :func:`free_mask`.
        rest_heights: ``(O, M, 2)`` m resting modes (or ``(O, 2)``: one each), NaN where unknown.
        calibration: the camera's (at the model's image size).

    Returns:
        ``(keypoints_3d, z)`` copies. Each free object with a resting mode takes the mode nearest its regressed
        origin height (its only one, whatever the regression says); its keypoints with a height in that mode lie
        on the ray through their pixel at it. The others are unchanged.

    Raises:
        ValueError: ``rest_heights`` of another shape.
    """
    kp, zz = np.array(keypoints_3d, np.float64), np.array(z, np.float64)
    o = kp.shape[1] // 2
    rest = as_rest_modes(rest_heights, o)
    known = np.isfinite(rest[:, :, 0])  # (O, M)
    if not known.any():
        return kp, zz
    origin_z = zz[:, 0::2]  # (B, O)
    gap = np.where(known[None], np.abs(origin_z[:, :, None] - np.nan_to_num(rest[None, :, :, 0])), np.inf)
    chosen = rest[np.arange(o)[None, :], np.argmin(gap, axis=2)]  # (B, O, 2)
    heights = chosen.reshape(len(kp), 2 * o)
    use = np.repeat(free & known.any(axis=1)[None, :], 2, axis=1) & np.isfinite(heights)  # (B, 2 O)
    if use.any():
        kp[use] = calibration.lift(np.asarray(px, np.float64)[use], heights[use])
        zz[use] = heights[use]
    return kp, zz


def rest_heights_to_json(rest_heights: np.ndarray) -> list[list[list[float | None]]]:
    """``(O, M, 2)`` m -> the checkpoint's JSON form: per object, its modes as ``[z_origin, z_second]`` (None for
    NaN); padding modes are left out."""
    rest = np.asarray(rest_heights, np.float64)
    rest = rest[:, None, :] if rest.ndim == 2 else rest
    return [[[float(v) if np.isfinite(v) else None for v in mode] for mode in modes if np.isfinite(mode[0])]
            for modes in rest]


def rest_heights_from_json(rows: Sequence[Any]) -> np.ndarray:
    """The inverse of :func:`rest_heights_to_json`: ``float64 (O, M, 2)`` m, NaN for None and padding. An object's
    entry is its list of modes ``[[z_origin, z_second], ...]``, or None / ``[]`` for none; the one-height-per-object
    form ``[z_origin, z_second]`` of checkpoints from before resting modes is read as one mode.

    Raises:
        ValueError: ``rows`` not a list, or an entry that is neither form (naming the object's index).
    """
    def number(v: Any) -> bool:
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))

    if not isinstance(rows, (list, tuple)):
        raise ValueError(f"rest heights must be a list with one entry per object, got {rows!r}")
    modes: list[list[list[float]]] = []
    for i, row in enumerate(rows):
        if row is None:
            row = []
        if not isinstance(row, (list, tuple)):
            raise ValueError(f"rest heights of object {i}: a list of [z_origin, z_second] modes, got {row!r}")
        if len(row) == 2 and all(number(v) for v in row):
            row = [row]  # the one-height form
        obj = []
        for mode in row:
            if not isinstance(mode, (list, tuple)) or len(mode) != 2 or not all(number(v) for v in mode):
                raise ValueError(f"rest heights of object {i}: a resting mode must be [z_origin, z_second] (m or "
                                 f"null), got {mode!r}")
            obj.append([np.nan if v is None else float(v) for v in mode])
        modes.append(obj)
    m = max([len(x) for x in modes] + [1])
    out = np.full((len(modes), m, 2), np.nan)
    for i, obj in enumerate(modes):
        if obj:
            out[i, :len(obj)] = obj
    return out
