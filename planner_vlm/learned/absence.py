"""Is an object the instruction names absent from the image? The learned planner's check at an episode's first plan.

The state model was never shown a scene without one of its objects, so it does not say "absent": it spreads that
object's heatmap, or finds it somewhere with a sharp but false peak. Two signals of the state model
(:class:`~planner_vlm.learned.scene_state.SceneState`) are used:

* ``object_confidence`` below ``min_confidence``: a heatmap far more diffuse than any training frame's (the
  planner's ``min_object_confidence``, 0.05; the original rule);
* ``object_uncertainty`` above the object's **absent threshold** (unitless: ``(H - H50) / (H99 - H50)`` of its origin
  heatmap's entropy against the training frames), fitted per object by :func:`fit_absent_uncertainty` on scenes
  rendered with and without that object (``benchmarks/absent_object.py`` then ``scripts/fit_absent_uncertainty.py``)
  and recorded in the state checkpoint as ``absent_uncertainty``.

At an episode's first plan the arm is at its start pose, so an object hidden behind the arm is not the cause; an
object hidden behind another one still can be, and it is what bounds the threshold from below (measured per task in
docs/results/non-privileged-high-level.md).

A third signal needs the camera's depth (an RGB-D camera) and the surface the objects rest on, where the state
checkpoint records it (``support_z_m``; pick_place_bins' bin floors): :func:`absent_by_depth`. An object's read
pixel that shows the bare support surface has nothing standing on it, so the peak there is a false one. A hidden
object's pixel shows its occluder instead, so this check tells hidden from absent where the heatmap's spread cannot,
but not a present object that the model reads on the bare floor far from where it is.

``benchmarks/absent_object.py`` measures the three signals (each instruction object removed in turn; the figures:
docs/results/non-privileged-high-level.md). pick_place_bins ships no thresholds (its objects hide behind each other
at the start), and a trained presence model (:mod:`planner_vlm.learned.presence_model`) replaces the depth check where
one is shipped (the depth check also refuses a present object read on the bare floor).

The first two are an out-of-distribution check over a heatmap's spread (in the spirit of maximum-softmax-probability baselines,
Hendrycks and Gimpel 2017), not a trained presence detector: an absent object whose heatmap stays sharp on some other
image feature is missed, and the measured miss rate is reported with the thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from planner_vlm.learned.camera import CameraCalibration
from planner_vlm.learned.depth_heights import surface_point
from planner_vlm.learned.scene_state import SceneState
from tandem.core.number_fields import finite_number

#: With the camera's depth, an object whose read origin pixel shows a surface at most this far (m) above the surface
#: the objects rest on (or below it) is absent: an object standing (or lying) there would hide that surface along the
#: ray. Chosen on validation seeds with ``benchmarks/absent_depth_signal.py`` (the workcell camera): almost no present
#: object's pixel shows a surface this close to the floor, about half of the removed objects' do.
SUPPORT_CLEARANCE_M = 0.01
#: The fitted threshold is this many times the largest uncertainty of the object seen present in the fit's scenes:
#: a false refusal ends an episode that could have succeeded, so the threshold keeps a margin above every present
#: read rather than splitting the two sets.
ABSENT_MARGIN = 1.25
#: The smallest present bound used in the geometric mean (unitless): present reads can be 0 or negative.
MIN_PRESENT_FOR_MEAN = 0.05
#: The threshold never falls below this (unitless), the default of the learned planner's ``hidden_uncertainty``
#: (``planner_vlm.learned.learned_planner.HIDDEN_UNCERTAINTY``): a read at most this diffuse is sharp enough to plan
#: a pick from, so it is never taken for an absent object.
MIN_ABSENT_UNCERTAINTY = 0.5


def absent_objects(state: SceneState, names: Sequence[str], min_confidence: float,
                   absent_uncertainty: np.ndarray | None = None) -> list[tuple[str, str]]:
    """The objects of ``names`` that ``state`` does not find: ``[(name, reason), ...]`` in ``names``' order.

    Args:
        state: the state model's reading of the first frame.
        names: objects the instruction names, each in ``state.objects``.
        min_confidence: an object whose ``object_confidence`` is below this is absent, in [0, 1).
        absent_uncertainty: ``(O,)`` per object of ``state.objects`` (the model's vocabulary order), unitless; an
            object whose ``object_uncertainty`` is above its entry is absent; NaN entries, None, or a state without
            uncertainties: this signal is off.

    Returns:
        The absent objects with a reason naming the signal and its value, e.g. ``"uncertainty 1.84 > 0.41"``.

    Raises:
        ValueError: a name not in ``state.objects``; ``absent_uncertainty`` of the wrong length.
    """
    if absent_uncertainty is not None and len(absent_uncertainty) != len(state.objects):
        raise ValueError(f"absent_uncertainty has {len(absent_uncertainty)} entries for {len(state.objects)} objects "
                         f"{list(state.objects)}")
    out: list[tuple[str, str]] = []
    for name in names:
        if name not in state.objects:
            raise ValueError(f"{name!r} is not an object of the state model ({list(state.objects)})")
        i = state.object_index(name)
        conf = float(state.object_confidence[i])
        if conf < min_confidence:
            out.append((name, f"confidence {conf:.2f} < {min_confidence}"))
            continue
        if absent_uncertainty is None or state.object_uncertainty is None:
            continue
        limit, u = float(absent_uncertainty[i]), float(state.object_uncertainty[i])
        if math.isfinite(limit) and u > limit:
            out.append((name, f"uncertainty {u:.2f} > {limit:.2f}"))
    return out


def absent_by_depth(state: SceneState, names: Sequence[str], depth: np.ndarray, calibration: CameraCalibration,
                    support_z: float, clearance_m: float = SUPPORT_CLEARANCE_M) -> list[tuple[str, str]]:
    """The objects of ``names`` whose read origin pixel shows, in the camera's depth image, the bare surface the
    objects rest on: ``[(name, reason), ...]`` in ``names``' order.

    The camera looks down on the objects, so the ray through an object's origin pixel meets that object (or something
    in front of it) before the surface under it: a present object's pixel shows a surface above its own lowest point.
    Where the depth at a read pixel shows a surface at most ``clearance_m`` above ``support_z`` (or below it),
    nothing stands there, and the state
    model's peak for the object is a false one: the object is absent. Unlike the heatmap's spread
    (:func:`absent_objects`) this tells an object hidden behind another (its pixel shows the occluder, higher up)
    from one that is not there. An object read as held (``grasped(name)`` at p >= 0.5) or whose pixel has no depth
    return is not judged.

    Args:
        state: the state model's reading of the first frame.
        names: objects the instruction names, each in ``state.objects``.
        depth: ``float32 (H, W)`` m along the camera's optical axis (NaN: no return), the state model camera's.
        calibration: that camera's calibration (pixels of ``state.keypoints_px``).
        support_z: world z (m) of the surface the objects rest on (a checkpoint's ``support_z_m``), finite.
        clearance_m: finite, > 0 (:data:`SUPPORT_CLEARANCE_M`).

    Returns:
        The absent objects, each with a reason naming the surface's height, e.g. ``"the depth at its read pixel is the
        bare support surface (0.2 cm above it)"``.

    Raises:
        ValueError: a name not in ``state.objects``, a depth image that is not 2-D, a support height that is not a
            finite number, or a clearance that is not a finite number > 0.
    """
    depth = np.asarray(depth, np.float64)
    if depth.ndim != 2:
        raise ValueError(f"absent_by_depth needs a depth image (H, W) m, got shape {depth.shape}")
    support_z = finite_number(support_z, "support_z")
    if not finite_number(clearance_m, "clearance_m") > 0:
        raise ValueError(f"clearance_m must be > 0 m, got {clearance_m}")
    out: list[tuple[str, str]] = []
    for name in names:
        if name not in state.objects:
            raise ValueError(f"{name!r} is not an object of the state model ({list(state.objects)})")
        held = f"grasped({name})"
        if held in state.predicates and state.probability(held) >= 0.5:
            continue
        point = surface_point(calibration, depth, state.keypoints_px[state.object_index(name), 0])
        if np.isfinite(point[2]) and point[2] - support_z <= clearance_m:
            out.append((name, f"the depth at its read pixel is the bare support surface "
                              f"({100 * (point[2] - support_z):.1f} cm above it)"))
    return out


def fit_absent_uncertainty(present: Mapping[str, Sequence[float]], absent: Mapping[str, Sequence[float]],
                           objects: Sequence[str], margin: float = ABSENT_MARGIN,
                           floor: float = MIN_ABSENT_UNCERTAINTY) -> tuple[np.ndarray, dict[str, dict[str, Any]]]:
    """Per-object absent thresholds from first-frame uncertainties of scenes with and without each object.

    An object's threshold is at least ``max(floor, margin * max(present))``: above every uncertainty it showed while
    present, with a margin (see :data:`ABSENT_MARGIN`). Where every absent read lies above every present one, it is
    the geometric mean of the two sets' bounds, ``sqrt(max(present) * min(absent))`` (``max(present)`` taken as at
    least :data:`MIN_PRESENT_FOR_MEAN`), when that is higher: the middle of the gap on a log scale, since the
    spreads differ by orders of magnitude (nut_assembly's round nut on validation seeds: present at most 0.47,
    absent from 13.9). An object never seen present gets none (NaN).

    Args:
        present: object -> its ``object_uncertainty`` in scenes that hold it (unitless).
        absent: object -> the uncertainty read for it in scenes without it.
        objects: the state model's vocabulary order (O).
        margin: > 1. floor: > 0.

    Returns:
        ``(thresholds (O,) float64, report)``: per object (seen present) the threshold, how many present and absent
        reads the fit saw, the largest present read, the smallest absent one (None without absent reads) and the
        share of absent reads above the threshold (``absent_caught``; None without absent reads). No present read
        is above its threshold, by construction.

    Raises:
        ValueError: ``margin`` <= 1 or ``floor`` <= 0; non-finite uncertainties.
    """
    if not margin > 1.0:
        raise ValueError(f"margin must be > 1, got {margin}")
    if not floor > 0.0:
        raise ValueError(f"floor must be > 0, got {floor}")
    thresholds = np.full(len(objects), np.nan)
    report: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(objects):
        p = np.asarray(present.get(name, ()), np.float64)
        a = np.asarray(absent.get(name, ()), np.float64)
        if not (np.isfinite(p).all() and np.isfinite(a).all()):
            raise ValueError(f"non-finite uncertainty for {name!r}")
        if not len(p):
            continue
        thresholds[i] = max(floor, margin * float(p.max()))
        if len(a) and float(a.min()) > float(p.max()):
            thresholds[i] = max(thresholds[i], math.sqrt(max(float(p.max()), MIN_PRESENT_FOR_MEAN) * float(a.min())))
        report[name] = {"threshold": round(float(thresholds[i]), 4), "present_reads": len(p),
                        "present_max": round(float(p.max()), 4), "absent_reads": len(a),
                        "absent_min": round(float(a.min()), 4) if len(a) else None,
                        "absent_caught": round(float(np.mean(a > thresholds[i])), 4) if len(a) else None}
    return thresholds, report
