"""The hand's evidence that a picked object is held: the opening range, the ray through the object's pixel, an object
located poorly, and the state moved to the hand."""

from __future__ import annotations

import numpy as np
import pytest

from planner_vlm.learned.hand_evidence import HELD_PROBABILITY, hand_holds, with_held
from planner_vlm.learned.scene_state import SceneState
from planner_vlm.learned.synthetic import synthetic_calibration
from tandem.core.errors import UnknownNameError

CAL = synthetic_calibration((84, 84))
OBJECTS = ("can", "milk")
PREDICATES = ("grasped(can)", "grasped(milk)")
CAN_ON_TABLE = np.array([0.0, -0.1, 0.86])


def _state(p_can: float = 0.01, confidence: float = 1.0) -> SceneState:
    kp = np.zeros((2, 2, 3))
    kp[0, 0], kp[1, 0] = CAN_ON_TABLE, [0.1, 0.1, 0.88]
    kp[:, 1] = kp[:, 0] + [0.03, 0.0, 0.0]
    return SceneState(objects=OBJECTS, predicates=PREDICATES, probabilities=np.array([p_can, 0.01]),
                      keypoints_px=CAL.project(kp.reshape(-1, 3)).reshape(2, 2, 2), keypoints_3d=kp,
                      object_confidence=np.array([confidence, 1.0]), scene_confidence=confidence,
                      heatmap_entropy=np.zeros((2, 2)))


def _on_can_ray(height: float) -> np.ndarray:
    """The point at ``height`` (m) on the camera ray through the can's pixel: where a held can would be seen."""
    return CAL.lift(CAL.project(CAN_ON_TABLE[None]), np.array([height]))[0]


def _proprio(grip: np.ndarray, opening: float) -> np.ndarray:
    return np.array([*grip, 0.0, 1.0, 0.0, 0.0, opening])


def test_a_closed_hand_held_apart_holds_the_object_whose_ray_passes_through_it():
    grip = _on_can_ray(1.0) + [0.0, 0.0, 0.02]  # the can hangs 2 cm under the grip site, seen on the same ray
    ev = hand_holds(_state(), "can", _proprio(grip, 0.049), CAL, "grasped(can)", max_ray_m=0.06, min_confidence=0.9)
    assert ev is not None and ev.obj == "can" and ev.opening_m == pytest.approx(0.049)
    assert 0.0 < ev.ray_m < 0.02 and ev.read_probability == pytest.approx(0.01)
    dist, nearest = CAL.nearest_on_ray(CAL.project(CAN_ON_TABLE[None])[0], grip)
    np.testing.assert_allclose(ev.point, nearest)
    assert dist == pytest.approx(ev.ray_m)
    assert "grasped(can) holds by the hand: the fingers are closed on something 49 mm wide" in ev.describe("grasped(can)")


@pytest.mark.parametrize("opening", [0.002, 0.0049, 0.07, 0.079])
def test_a_hand_closed_on_nothing_or_open_says_nothing(opening):
    grip = _on_can_ray(1.0)
    assert hand_holds(_state(), "can", _proprio(grip, opening), CAL, "grasped(can)", 0.06, 0.9) is None


def test_an_object_located_sharply_away_from_the_hand_is_not_held_one_located_poorly_is():
    grip = np.array([0.3, 0.2, 1.0])  # the ray through the can passes far from this hand
    assert hand_holds(_state(), "can", _proprio(grip, 0.045), CAL, "grasped(can)", 0.06, 0.9) is None
    ev = hand_holds(_state(confidence=0.6), "can", _proprio(grip, 0.045), CAL, "grasped(can)", 0.06, 0.9)
    assert ev is not None and ev.ray_m > 0.06
    np.testing.assert_allclose(ev.point, grip)  # an arm hides it: taken to be at the grip site


def test_with_held_raises_the_predicate_and_moves_both_keypoints_to_the_hand():
    grip = _on_can_ray(1.0)
    state = _state()
    ev = hand_holds(state, "can", _proprio(grip, 0.045), CAL, "grasped(can)", 0.06, 0.9)
    held = with_held(state, ev, "grasped(can)")
    assert held.probability("grasped(can)") == HELD_PROBABILITY and held.probability("grasped(milk)") == 0.01
    np.testing.assert_allclose(held.position("can"), ev.point)
    np.testing.assert_allclose(held.keypoints_3d[0, 1] - held.keypoints_3d[0, 0], [0.03, 0.0, 0.0])
    np.testing.assert_allclose(held.keypoints_3d[1], state.keypoints_3d[1])  # the milk stays
    assert state.probability("grasped(can)") == 0.01  # the input is not changed
    with pytest.raises(UnknownNameError, match="grasped\\(bread\\)"):
        with_held(state, ev, "grasped(bread)")
    with pytest.raises(UnknownNameError, match="bread"):
        hand_holds(state, "bread", _proprio(grip, 0.045), CAL, "grasped(bread)", 0.06, 0.9)


def test_the_configs_default_is_the_modules():
    from planner_vlm.learned.hand_evidence import HELD_RAY_M
    from tandem.runtime.config import LearnedPlannerConfig, LearnedVerifierConfig

    assert LearnedPlannerConfig().held_ray_m == LearnedVerifierConfig().held_ray_m == HELD_RAY_M
