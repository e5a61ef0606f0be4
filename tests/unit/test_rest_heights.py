"""Rest heights: resting modes fitted from the labels of free objects, applied by lifting free objects' pixels at the
nearest mode."""

from __future__ import annotations

import numpy as np
import pytest

from planner_vlm.learned.rest_heights import (
    apply_rest_heights,
    first_arguments,
    fit_rest_heights,
    free_mask,
    rest_heights_from_json,
    rest_heights_to_json,
)
from planner_vlm.learned.state_config import StateModelConfig
from planner_vlm.learned.state_model import StateModel
from planner_vlm.learned.synthetic import synthetic_calibration
from tandem.core.errors import ConfigError

OBJECTS = ("red", "green")
PREDICATES = ("grasped(red)", "grasped(green)", "on(red,green)", "on(green,red)")


def test_first_arguments_and_free_objects():
    assert first_arguments(PREDICATES) == ["red", "green", "red", "green"]
    with pytest.raises(ValueError, match="not of the form"):
        first_arguments(["grasped"])
    probs = np.array([[0.1, 0.2, 0.9, 0.0],    # red on green: red supported, green free
                      [0.6, 0.0, 0.0, 0.4]])   # red grasped, green free (0.4 < 0.5)
    np.testing.assert_array_equal(free_mask(OBJECTS, PREDICATES, probs), [[False, True], [False, True]])
    # an object no predicate names is never free
    assert not free_mask(("red", "cup"), PREDICATES, probs)[:, 1].any()


def _labels(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    kp = rng.uniform(-0.2, 0.2, (n, 4, 3))
    labels = np.zeros((n, 4))
    labels[: n // 2, 2] = 1.0  # first half: red on green (red up high, anywhere)
    kp[:, 2:, 2] = 0.82 + rng.normal(0, 0.0003, (n, 2))  # green always free, on the table
    kp[n // 2:, :2, 2] = 0.83 + rng.normal(0, 0.0003, (n - n // 2, 2))  # red free in the second half
    kp[: n // 2, :2, 2] = 0.87
    return kp, labels


def test_fit_takes_the_median_height_of_free_frames_only():
    kp, labels = _labels(200, np.random.default_rng(0))
    rest = fit_rest_heights(OBJECTS, PREDICATES, kp, labels)
    assert rest.shape == (2, 3, 2)
    np.testing.assert_allclose(rest[:, 0], [[0.83, 0.83], [0.82, 0.82]], atol=2e-4)  # red's 0.87: not free
    assert np.isnan(rest[:, 1:]).all()  # one resting mode each


def test_fit_gives_none_for_spread_or_rare_free_heights():
    rng = np.random.default_rng(1)
    kp, labels = _labels(200, rng)
    kp[100:, 0, 2] = rng.uniform(0.80, 0.90, 100)  # red's origin rests anywhere: no rest height
    rest = fit_rest_heights(OBJECTS, PREDICATES, kp, labels)
    assert np.isnan(rest[0]).all() and np.isfinite(rest[1, 0]).all()
    labels[:, 2] = 1.0
    labels[:5, 2] = 0.0  # red free in 5 frames only
    assert np.isnan(fit_rest_heights(OBJECTS, PREDICATES, kp, labels)[0]).all()
    with pytest.raises(ValueError, match="do not match"):
        fit_rest_heights(OBJECTS, PREDICATES, kp[:, :3], labels)


def test_fit_finds_an_upright_and_a_lying_mode():
    """A box that free frames show upright (origin 0.881 m) and lying on its side (0.840 m) gets both modes; its
    second keypoint, which spreads when lying, gets no height there. A few frames mid-fall change nothing."""
    rng = np.random.default_rng(2)
    kp, labels = _labels(400, rng)
    free_red = np.arange(200, 400)
    kp[free_red[:120], :2, 2] = 0.881 + rng.normal(0, 0.0005, (120, 2))
    kp[free_red[120:190], 0, 2] = 0.840 + rng.normal(0, 0.0005, 70)
    kp[free_red[120:190], 1, 2] = 0.840 + rng.uniform(-0.05, 0.05, 70)  # the x-axis point: up or down
    kp[free_red[190:], :2, 2] = rng.uniform(0.845, 0.875, (10, 2))  # falling
    rest = fit_rest_heights(OBJECTS, PREDICATES, kp, labels)
    np.testing.assert_allclose(rest[0, 0, 0], 0.840, atol=5e-4)
    assert np.isnan(rest[0, 0, 1])
    np.testing.assert_allclose(rest[0, 1], [0.881, 0.881], atol=5e-4)
    assert np.isnan(rest[0, 2]).all()
    kp[free_red[190:], :2, 2] = rng.uniform(0.70, 0.80, (10, 2))
    kp[free_red[100:190], :2, 2] = rng.uniform(0.70, 0.80, (90, 2))  # rests anywhere in half its frames: none
    assert np.isnan(fit_rest_heights(OBJECTS, PREDICATES, kp, labels)[0]).all()


def test_apply_lifts_at_the_mode_nearest_the_regressed_height():
    cal = synthetic_calibration((48, 48))
    lying = np.array([[[0.05, 0.02, 0.840], [0.08, 0.02, 0.840], [-0.05, 0.0, 0.82], [-0.02, 0.0, 0.82]]])
    px = cal.project(lying.reshape(-1, 3)).reshape(1, 4, 2)
    regressed = lying[..., 2] + np.array([[0.012, 0.012, 0.0, 0.0]])  # nearer lying than upright
    lifted = cal.lift(px.reshape(-1, 2), regressed.reshape(-1)).reshape(1, 4, 3)
    rest = np.full((2, 2, 2), np.nan)
    rest[0] = [[0.840, np.nan], [0.881, 0.881]]  # red: lying (no second-keypoint height), upright
    rest[1, 0] = [0.82, 0.82]
    kp, z = apply_rest_heights(lifted, px, regressed, np.array([[True, True]]), rest, cal)
    np.testing.assert_allclose(kp[0, 0], lying[0, 0], atol=1e-9)  # the lying mode
    np.testing.assert_allclose(kp[0, 1], lifted[0, 1])  # no height for its second keypoint there: unchanged
    np.testing.assert_allclose(z[0], [0.840, regressed[0, 1], 0.82, 0.82])
    kp_up, _ = apply_rest_heights(lifted, px, lying[..., 2] + 0.035, np.array([[True, True]]), rest, cal)
    np.testing.assert_allclose(kp_up[0, :2, 2], [0.881, 0.881])  # regressed near upright: the upright mode


def test_rest_heights_json_round_trip_and_the_one_height_form():
    rest = np.full((2, 2, 2), np.nan)
    rest[0] = [[0.840, np.nan], [0.881, 0.881]]
    rest[1, 0] = [0.82, 0.82]
    raw = rest_heights_to_json(rest)
    assert raw == [[[0.84, None], [0.881, 0.881]], [[0.82, 0.82]]]
    np.testing.assert_array_equal(rest_heights_from_json(raw), rest)
    old = rest_heights_from_json([[0.82, 0.83], [None, None]])  # a checkpoint from before resting modes
    assert old.shape == (2, 1, 2)
    np.testing.assert_array_equal(old[0, 0], [0.82, 0.83])
    assert np.isnan(old[1]).all()
    assert np.isnan(rest_heights_from_json([None, []])).all()  # objects without a mode
    for bad, match in (([[[0.8, 0.8, 0.8]]], "object 0: a resting mode"), ([[0.8, 0.8], ["a", 0.8]], "object 1"),
                       ([{"x": 1}], "object 0"), ("abc", "one entry per object"), ([[[True, 0.8]]], "object 0")):
        with pytest.raises(ValueError, match=match):
            rest_heights_from_json(bad)


def test_apply_moves_free_objects_onto_the_ray_at_their_rest_height():
    cal = synthetic_calibration((48, 48))
    truth = np.array([[[0.05, 0.02, 0.82], [0.08, 0.02, 0.82], [-0.05, 0.0, 0.82], [-0.02, 0.0, 0.82]]])
    px = cal.project(truth.reshape(-1, 3)).reshape(1, 4, 2)
    wrong_z = truth[..., 2] + 0.04  # one cube too high: the regressed height of the failure
    lifted = cal.lift(px.reshape(-1, 2), wrong_z.reshape(-1)).reshape(1, 4, 3)
    assert np.linalg.norm(lifted - truth, axis=-1).min() > 0.02  # several cm off along the ray
    rest = np.array([[0.82, 0.82], [0.82, 0.82]])
    kp, z = apply_rest_heights(lifted, px, wrong_z, np.array([[True, False]]), rest, cal)
    np.testing.assert_allclose(kp[0, :2], truth[0, :2], atol=1e-9)  # red is free: back on the table
    np.testing.assert_allclose(kp[0, 2:], lifted[0, 2:])  # green is supported: unchanged
    np.testing.assert_allclose(z[0], [0.82, 0.82, 0.86, 0.86])
    # no rest height (NaN): unchanged
    kp2, _ = apply_rest_heights(lifted, px, wrong_z, np.array([[True, True]]), np.full((2, 2), np.nan), cal)
    np.testing.assert_allclose(kp2, lifted)


def test_state_model_stores_rest_heights_with_its_checkpoint(tmp_path):
    cfg = StateModelConfig(objects=OBJECTS, predicates=PREDICATES, image_size=(48, 48), channels=(8, 8, 16, 16),
                           head_hidden=16)
    model = StateModel(cfg, synthetic_calibration((48, 48)))
    assert np.isnan(model.rest_heights).all()
    with pytest.raises(ConfigError, match="rest heights"):
        model.set_rest_heights(np.zeros(3))
    model.set_rest_heights(np.array([[0.82, np.nan], [0.83, 0.83]]))  # one mode each
    assert model.rest_heights.shape == (2, 1, 2)
    loaded = StateModel.from_checkpoint(model.save(tmp_path / "ck"))
    np.testing.assert_array_equal(loaded.rest_heights, model.rest_heights)
    images = np.zeros((2, 48, 48, 3), np.uint8)
    proprio = np.tile(np.array([0, 0, 1.0, 0, 1, 0, 0, 0.04], np.float32), (2, 1))  # pointing down, open
    a, b = model.predict_arrays(images, proprio), loaded.predict_arrays(images, proprio)
    np.testing.assert_allclose(a["keypoints_3d"], b["keypoints_3d"])
    model.set_rest_heights(np.array([[[0.84, np.nan], [0.88, 0.88]], [[0.83, 0.83], [np.nan, np.nan]]]))
    np.testing.assert_array_equal(StateModel.from_checkpoint(model.save(tmp_path / "ck2")).rest_heights,
                                  model.rest_heights)
