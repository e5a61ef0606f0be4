"""A closed hand held apart by something: proprioceptive evidence that a picked object is held.

The learned state model reads ``grasped(x)`` off the agentview image. Right after a pick it sometimes reads a held
object as not held (or uncertain, with the object hidden by the arm). It then lifts the object to 3-D at its resting
height on the table, along the camera ray through its keypoint, 10-20 cm from the gripper, and the planner asks for
the same pick again while the object hangs in the fingers. The fingers say otherwise: closed on nothing they are 1.5-2.5 mm apart,
open 78-80 mm, and held apart by a demonstrated object 31-60 mm (pick_place_bins' 113 demonstrations; stack_three's
and nut_assembly's hold 30 mm or more). Grasp success from the fingers' opening after the close is the classic test
of learned grasping (Levine et al. 2016; Kalashnikov et al. 2018, QT-Opt).

The rule: after a pick of ``x``, a hand whose opening lies in ``[empty, held_max)`` holds ``x`` unless the state model
locates ``x`` confidently away from the hand, i.e. unless ``x`` is sharply located (object confidence at least
``min_confidence``) and the camera ray through its origin keypoint passes farther than ``max_ray_m`` from the grip
site. One camera cannot tell height from depth along a ray, so a held object's pixel lies on a ray through the hand
(3-5 cm from the grip site for boxes grasped near their top, under 1 cm for a can grasped at its middle); an object
on the table elsewhere does not. An object the model cannot locate sharply (an arm hides it) is not evidence against
the hand.

numpy only. Conventions: positions in m, world frame; the proprio as :data:`tandem.core.types.PROPRIO_LAYOUT`
(``proprio[:3]`` the grip site, ``proprio[7]`` the fingers' opening in m); pixels of the state model's camera.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planner_vlm.learned.camera import CameraCalibration
from planner_vlm.learned.scene_state import SceneState
from tandem.core.grasp_clearance import PANDA_EMPTY_OPENING_M, PANDA_HELD_MAX_OPENING_M

#: Default ``max_ray_m`` (m): held boxes grasped near their top put the ray through their origin 3-5 cm from the grip
#: site, a can grasped at its middle under 1 cm (validation verdicts on held objects: median 2.1 cm, 90th percentile
#: 4.4 cm; the 3 beyond 6 cm were a can the arm hid, located with confidence 0.67).
HELD_RAY_M = 0.06
#: Default ``min_confidence``: an object located less sharply than this (the verifier's default confidence threshold)
#: is not evidence against the hand.
SHARP_CONFIDENCE = 0.9
#: The probability given to ``grasped(x)`` when the hand's evidence overrules the image (above the planner's
#: ``completion_confidence`` and the verifier's ``confidence_threshold`` defaults, 0.9, so it is acted on).
HELD_PROBABILITY = 0.95


@dataclass(frozen=True)
class HandEvidence:
    """Why the hand is taken to hold an object.

    Attributes:
        obj: the object.
        opening_m: the fingers' opening (m).
        ray_m: distance (m) from the grip site to the camera ray through the object's origin keypoint.
        point: ``float64 (3,)`` m, world frame: where the object's origin is taken to be (the point of that ray
            nearest the grip site when the ray passes within ``max_ray_m``, else the grip site).
        read_probability: what the state model read for the object's grasp predicate.
    """

    obj: str
    opening_m: float
    ray_m: float
    point: np.ndarray
    read_probability: float

    def describe(self, predicate: str) -> str:
        """One line for a verdict's reason or a plan's rationale."""
        return (f"{predicate} holds by the hand: the fingers are closed on something {self.opening_m * 1000:.0f} mm "
                f"wide and the ray through {self.obj} passes {self.ray_m * 100:.1f} cm from the grip site (the state "
                f"model read p={self.read_probability:.2f})")


def hand_holds(state: SceneState, obj: str, proprio: np.ndarray, calibration: CameraCalibration,
               predicate: str, max_ray_m: float, min_confidence: float,
               empty_grip_m: float = PANDA_EMPTY_OPENING_M,
               held_max_m: float = PANDA_HELD_MAX_OPENING_M) -> HandEvidence | None:
    """The hand's evidence that it holds ``obj`` after a pick of it (see the module docstring), or None.

    Args:
        state: the state model's reading of the observation. obj: the picked object (one of ``state.objects``).
        proprio: ``(8,)`` the observation's proprio. calibration: the state model's camera (at its image size).
        predicate: ``obj``'s grasp predicate (``grasped(obj)``), for the read probability.
        max_ray_m: a sharply located object whose ray passes farther than this from the grip site is elsewhere.
        min_confidence: an object located less sharply than this (object confidence, [0, 1]) is not evidence
            against the hand.
        empty_grip_m, held_max_m: the opening range (m) of a hand holding something.

    Returns:
        None when the opening is outside ``[empty_grip_m, held_max_m)``, the proprio has no opening, or ``obj`` is
        sharply located away from the hand.

    Raises:
        UnknownNameError: ``obj`` or ``predicate`` outside the state model's vocabulary.
    """
    p = np.asarray(proprio, np.float64)
    if p.shape[0] < 8 or not empty_grip_m <= p[7] < held_max_m:
        return None
    i = state.object_index(obj)
    grip = p[:3]
    ray_m, nearest = calibration.nearest_on_ray(state.keypoints_px[i, 0], grip)
    near = ray_m <= max_ray_m
    if not near and float(state.object_confidence[i]) >= min_confidence:
        return None
    return HandEvidence(obj=obj, opening_m=float(p[7]), ray_m=ray_m, point=nearest if near else grip.copy(),
                        read_probability=state.probability(predicate))


def with_held(state: SceneState, evidence: HandEvidence, predicate: str) -> SceneState:
    """A copy of ``state`` in which ``evidence.obj`` is held: its grasp ``predicate`` at least
    :data:`HELD_PROBABILITY`, its two keypoints moved together so that its origin is at ``evidence.point``.

    Raises:
        UnknownNameError: an object or predicate outside the state model's vocabulary.
    """
    i = state.object_index(evidence.obj)
    read = state.probability(predicate)  # raises UnknownNameError naming the vocabulary
    probabilities = state.probabilities.copy()
    probabilities[state.predicates.index(predicate)] = max(read, HELD_PROBABILITY)
    keypoints = state.keypoints_3d.copy()
    keypoints[i] += evidence.point - keypoints[i, 0]
    return replace(state, probabilities=probabilities, keypoints_3d=keypoints)
