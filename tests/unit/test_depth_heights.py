"""The depth check of the state model's 3-D reads: an RGB-D camera's range decides a height one image cannot."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner_vlm.learned.depth_heights import (
    depth_at,
    depth_checked_keypoints,
    fit_depth_offsets,
    surface_point,
    surface_range,
)
from planner_vlm.learned.scene_state import SceneState
from planner_vlm.learned.state_config import StateModelConfig
from planner_vlm.learned.state_model import StateModel
from planner_vlm.learned.synthetic import synthetic_calibration
from tandem.core.errors import ConfigError
from tandem.core.lazy_images import LazyImages, materialize_images
from tandem.core.types import Observation, check_depth

SIZE = (84, 84)
OFFSET = 0.027  # m: a cube's origin behind the surface its depth pixel sees
REST = np.array([[[0.822, 0.822]], [[0.822, 0.822]]])  # (O, M, 2): both objects rest at 0.822 m


def _scene(true_z: float, read_z: float, cal):
    """One object whose origin truly is at ``true_z`` (its depth image says so) and is read at ``read_z`` on the same
    ray; a second one read right. Returns (keypoints_3d, pixels, depth)."""
    true = np.array([[0.05, 0.02, true_z], [-0.1, -0.05, 0.822]])
    px = cal.project(true)
    rays = cal.rays(px)
    along = rays @ cal.rotation[:, 2]
    ranges = np.linalg.norm(true - cal.position, axis=1) - OFFSET
    depth = np.full(SIZE, 5.0, np.float32)  # the far background
    for (x, y), r, a in zip(px, ranges, along):
        depth[int(round(y)) - 1: int(round(y)) + 2, int(round(x)) - 1: int(round(x)) + 2] = r * a
    read = cal.lift(px, np.array([read_z, 0.822]))
    kp = np.stack([read, read + np.array([0.03, 0.0, 0.0])], axis=1)  # (O, 2, 3): origin, second keypoint
    pix = np.stack([px, cal.project(kp[:, 1])], axis=1)
    return kp, pix, depth


def _check(kp, pix, depth, cal, grasped=(0.0, 0.0), uncertainty=None, offsets=(OFFSET, OFFSET)):
    return depth_checked_keypoints(kp, pix, np.array(grasped), uncertainty, depth, cal, np.array(offsets), REST)


def test_a_stacked_cube_read_at_table_height_is_lifted_to_the_depths_height():
    cal = synthetic_calibration(SIZE)
    kp, pix, depth = _scene(true_z=0.866, read_z=0.822, cal=cal)
    out, moved = _check(kp, pix, depth, cal)
    assert moved.tolist() == [True, False]
    assert out[0, 0, 2] == pytest.approx(0.866, abs=0.004)
    # moved along its ray: its pixel stays, and the second keypoint moves with it
    np.testing.assert_allclose(cal.project(out[0, :1])[0], pix[0, 0], atol=1e-6)
    np.testing.assert_allclose(out[0, 1] - out[0, 0], kp[0, 1] - kp[0, 0], atol=1e-9)
    np.testing.assert_array_equal(out[1], kp[1])


def test_a_cube_on_the_table_read_one_cube_up_goes_to_its_resting_height_exactly():
    cal = synthetic_calibration(SIZE)
    kp, pix, depth = _scene(true_z=0.822, read_z=0.866, cal=cal)
    out, moved = _check(kp, pix, depth, cal)
    assert moved[0] and out[0, 0, 2] == pytest.approx(0.822, abs=1e-9)  # snapped to the resting mode


def test_reads_the_depth_agrees_with_or_cannot_judge_are_left_alone():
    cal = synthetic_calibration(SIZE)
    kp, pix, depth = _scene(true_z=0.866, read_z=0.860, cal=cal)
    assert not _check(kp, pix, depth, cal)[1].any()  # within the tolerance: the model's read stands
    kp, pix, depth = _scene(true_z=0.866, read_z=0.822, cal=cal)
    assert not _check(kp, pix, depth, cal, grasped=(0.9, 0.0))[1].any()  # held: the hand is in front of it
    assert not _check(kp, pix, depth, cal, uncertainty=np.array([0.9, 0.0]))[1].any()  # hidden
    assert not _check(kp, pix, depth, cal, offsets=(np.nan, np.nan))[1].any()  # no offset fitted
    # something far in front of it (the arm): the depth's height is implausible for the object
    x, y = (int(round(v)) for v in pix[0, 0])
    depth[y - 1: y + 2, x - 1: x + 2] = 0.3
    out, moved = _check(kp, pix, depth, cal)
    assert not moved.any()
    np.testing.assert_array_equal(out, kp)
    # no return at the pixel: nothing to judge
    depth[y - 1: y + 2, x - 1: x + 2] = np.nan
    assert not _check(kp, pix, depth, cal)[1].any()


def test_depth_sampling_and_bad_shapes():
    d = np.full((4, 4), np.nan, np.float32)
    d[1, 2] = 0.7
    assert depth_at(d, np.array([2.0, 1.0])) == pytest.approx(0.7)
    assert np.isnan(depth_at(d, np.array([9.0, 1.0])))  # outside the image
    assert np.isnan(depth_at(d, np.array([np.nan, 1.0])))
    cal = synthetic_calibration(SIZE)
    assert np.isnan(surface_range(cal, np.full(SIZE, np.nan, np.float32), np.array([40.0, 40.0])))
    kp, pix, depth = _scene(true_z=0.866, read_z=0.822, cal=cal)
    with pytest.raises(ValueError, match="keypoints_3d"):
        _check(kp[:, 0], pix, depth, cal)
    with pytest.raises(ValueError, match="depth image"):
        _check(kp, pix, depth[None], cal)


def test_surface_point_scales_the_pixel_to_any_depth_size_and_is_nan_where_it_cannot_read():
    cal = synthetic_calibration(SIZE)
    pixel = np.array([40.0, 30.0])
    flat = np.full(SIZE, 1.5, np.float32)  # every pixel 1.5 m along the optical axis
    point = surface_point(cal, flat, pixel)
    ray = cal.rays(pixel.reshape(1, 2))[0]
    assert np.allclose(point, cal.position + 1.5 / float(ray @ cal.rotation[:, 2]) * ray)
    # a depth image of another size than the calibration's: the pixel is scaled to it, the same point comes back
    assert np.allclose(surface_point(cal, np.full((2 * SIZE[0], 3 * SIZE[1]), 1.5, np.float32), pixel), point)
    # a pixel outside the image, a NaN pixel, or no return there: a NaN point, never an error
    for bad in ([-5.0, 30.0], [40.0, 1e6], [np.nan, 30.0], [np.nan, np.nan]):
        assert np.isnan(surface_point(cal, flat, np.array(bad))).all()
    assert np.isnan(surface_point(cal, np.full(SIZE, np.nan, np.float32), pixel)).all()
    with pytest.raises(ValueError, match="depth image"):
        surface_point(cal, flat[0], pixel)


def test_predict_looks_the_depth_up_only_where_it_uses_it(tmp_path):
    class Recording(dict):
        """A depth mapping that records each look-up (a lazy one renders at its first)."""

        def __init__(self, *a):
            super().__init__(*a)
            self.looked_up = 0

        def get(self, key, default=None):
            self.looked_up += 1
            return super().get(key, default)

    proprio = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.04])
    depth = _scene(true_z=0.866, read_z=0.822, cal=synthetic_calibration(SIZE))[2]
    for model, use_depth, looked_up in ((_model(tmp_path, offsets=[OFFSET, None]), False, 0),
                                        (_model(tmp_path), True, 0),  # no offsets: the model reads no depth
                                        (_model(tmp_path, offsets=[OFFSET, None]), True, 1)):
        obs = Observation(images={"agentview": np.zeros((*SIZE, 3), np.uint8)}, proprio=proprio)
        obs.depth = Recording({"agentview": depth})
        model.predict(obs, use_depth=use_depth)
        assert obs.depth.looked_up == looked_up


def test_offsets_are_fitted_where_they_agree_and_refused_where_they_scatter():
    rng = np.random.default_rng(0)
    true = rng.uniform(0.6, 0.8, (40, 2))
    surface = true - np.stack([0.027 + rng.normal(0, 0.001, 40), rng.uniform(-0.05, 0.05, 40)], axis=1)
    offsets = fit_depth_offsets(true, surface)
    assert offsets[0] == pytest.approx(0.027, abs=0.001) and np.isnan(offsets[1])
    with pytest.raises(ValueError, match="ranges"):
        fit_depth_offsets(true, surface[:, :1])


def _model(tmp_path, offsets=None):
    cfg = StateModelConfig(objects=("red", "green"), predicates=("grasped(red)", "grasped(green)", "on(red,green)"),
                           image_size=SIZE)
    return StateModel(cfg, synthetic_calibration(SIZE), rest_heights=REST, depth_offsets=offsets)


def test_state_model_checks_depth_only_with_offsets_and_a_depth_image(tmp_path):
    model = _model(tmp_path, offsets=[OFFSET, None])
    assert model.reads_depth and np.isnan(model.depth_offsets[1])
    path = model.save(tmp_path / "ckpt")
    assert json.loads((path / "config.json").read_text())["depth_offsets_m"] == [OFFSET, None]
    assert np.array_equal(StateModel.from_checkpoint(path).depth_offsets, model.depth_offsets, equal_nan=True)
    assert not _model(tmp_path).reads_depth
    with pytest.raises(ConfigError, match="one per object"):
        _model(tmp_path, offsets=[OFFSET])
    cal = model.calibration
    kp, pix, depth = _scene(true_z=0.866, read_z=0.822, cal=cal)
    state = SceneState(objects=("red", "green"), predicates=model.cfg.predicates, probabilities=np.zeros(3),
                       keypoints_px=pix, keypoints_3d=kp, object_confidence=np.ones(2), scene_confidence=1.0,
                       heatmap_entropy=np.zeros((2, 2)))
    checked = model.depth_checked(state, depth)
    assert checked.depth_moved.tolist() == [True, False]
    assert checked.keypoints_3d[0, 0, 2] == pytest.approx(0.866, abs=0.004)
    assert checked.to_json()["objects"]["red"]["depth_moved"] is True
    assert "depth_moved" not in checked.to_json()["objects"]["green"]
    # the image and proprio alone (no depth, or use_depth=False) read as before
    proprio = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.04])  # pointing down (wxyz), fingers 4 cm apart
    obs = Observation(images={"agentview": np.zeros((*SIZE, 3), np.uint8)}, proprio=proprio)
    assert model.predict(obs).depth_moved is None
    obs.depth = {"agentview": depth}
    assert model.predict(obs, use_depth=False).depth_moved is None
    assert model.predict(obs).depth_moved is not None


def test_observation_depth_is_validated_and_materialized():
    img = {"agentview": np.zeros((4, 4, 3), np.uint8)}
    Observation(images=img, proprio=np.zeros(8), depth={"agentview": np.ones((4, 4), np.float32)})
    with pytest.raises(ValueError, match=r"depth\['agentview'\] must be float32"):
        Observation(images=img, proprio=np.zeros(8), depth={"agentview": np.ones((4, 4))})
    with pytest.raises(ValueError, match="<= 0"):
        check_depth("agentview", np.zeros((4, 4), np.float32))
    check_depth("agentview", np.full((4, 4), np.nan, np.float32))  # no return anywhere is allowed
    renders = []
    lazy = LazyImages(["agentview"], lambda c: renders.append(c) or np.ones((4, 4), np.float32), lambda: True,
                      check=check_depth)
    obs = Observation(images=img, proprio=np.zeros(8), depth=lazy)
    assert renders == []
    materialize_images(obs)
    assert renders == ["agentview"] and lazy.rendered == ("agentview",)
    bad = LazyImages(["agentview"], lambda c: np.ones((4, 4, 3), np.uint8), lambda: True, check=check_depth)
    with pytest.raises(ValueError, match="float32"):
        bad["agentview"]


def test_the_env_renders_depth_for_a_learned_stack_whose_state_checkpoint_has_offsets(tmp_path):
    from tandem.runtime.config import StackConfig, load
    from tandem.runtime.registry import perception_depth

    with_offsets, without = tmp_path / "with", tmp_path / "without"
    for path, offsets in ((with_offsets, [OFFSET, None]), (without, [None, None])):
        path.mkdir()
        (path / "config.json").write_text(json.dumps({"model": {"camera": "agentview", "image_size": [84, 84]},
                                                      "depth_offsets_m": offsets}))

    def stack(ckpt, use_depth=True, verifier="oracle"):
        return load(StackConfig, {"task": {"name": "stack_three"}, "goals": {"name": "none"},
                                  "planner": {"name": "learned", "state_checkpoint": str(ckpt), "use_depth": use_depth},
                                  "verifier": {"name": verifier}, "executor": {"name": "scripted"}})

    assert perception_depth(stack(with_offsets))
    assert not perception_depth(stack(with_offsets, use_depth=False))
    assert not perception_depth(stack(without))
    assert not perception_depth(stack(tmp_path / "nowhere"))
    # a checkpoint that records the support surface: the first plan's absent check reads the depth, unless it is off
    support = tmp_path / "support"
    support.mkdir()
    (support / "config.json").write_text(json.dumps({"model": {"camera": "agentview", "image_size": [84, 84]},
                                                     "depth_offsets_m": [None, None], "support_z_m": 0.82}))
    assert perception_depth(stack(support)) and perception_depth(stack(support, use_depth=False))
    off = load(StackConfig, {"task": {"name": "stack_three"}, "goals": {"name": "none"},
                             "planner": {"name": "learned", "state_checkpoint": str(support),
                                         "use_absent_thresholds": False},
                             "verifier": {"name": "oracle"}, "executor": {"name": "scripted"}})
    assert not perception_depth(off)
