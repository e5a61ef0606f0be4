"""The first plan's absent-object check (planner_vlm.learned.absence): both signals, the fitted per-object
thresholds and their home in the state checkpoint (the learned planner's refusals: test_learned_planner_verifier)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner_vlm.learned.absence import (
    ABSENT_MARGIN,
    MIN_ABSENT_UNCERTAINTY,
    SUPPORT_CLEARANCE_M,
    absent_by_depth,
    absent_objects,
    fit_absent_uncertainty,
)
from planner_vlm.learned.learned_planner import HIDDEN_UNCERTAINTY
from planner_vlm.learned.scene_state import SceneState
from planner_vlm.learned.state_config import StateModelConfig
from planner_vlm.learned.state_model import StateModel
from planner_vlm.learned.synthetic import synthetic_calibration
from tandem.core.errors import CheckpointError, ConfigError

OBJECTS = ("red", "green", "blue")


def _state(confidence, uncertainty) -> SceneState:
    return SceneState(objects=OBJECTS, predicates=("grasped(red)",), probabilities=np.array([0.0]),
                      keypoints_px=np.zeros((3, 2, 2)), keypoints_3d=np.zeros((3, 2, 3)),
                      object_confidence=np.asarray(confidence, float), scene_confidence=float(np.min(confidence)),
                      heatmap_entropy=np.zeros((3, 2)),
                      object_uncertainty=None if uncertainty is None else np.asarray(uncertainty, float))


def test_either_signal_makes_an_object_absent_and_says_which():
    state = _state([1.0, 0.01, 1.0], [0.1, 9.0, 1.9])
    limits = np.array([0.5, 0.5, 1.5])
    got = absent_objects(state, ["red", "green", "blue"], 0.05, limits)
    assert [o for o, _ in got] == ["green", "blue"]
    assert "confidence 0.01 < 0.05" in got[0][1] and "uncertainty 1.90 > 1.50" in got[1][1]
    # only the names asked about; no thresholds (or NaN, or a state without uncertainties): confidence alone
    assert absent_objects(state, ["red", "blue"], 0.05, limits) == [("blue", "uncertainty 1.90 > 1.50")]
    assert [o for o, _ in absent_objects(state, OBJECTS, 0.05, None)] == ["green"]
    assert [o for o, _ in absent_objects(state, OBJECTS, 0.05, np.array([0.5, 0.5, np.nan]))] == ["green"]
    assert [o for o, _ in absent_objects(_state([1, 1, 1], None), OBJECTS, 0.05, limits)] == []


def test_bad_input_to_the_check_is_named():
    state = _state([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="purple"):
        absent_objects(state, ["purple"], 0.05)
    with pytest.raises(ValueError, match="2 entries for 3 objects"):
        absent_objects(state, ["red"], 0.05, np.array([1.0, 1.0]))


def test_fit_keeps_a_margin_above_every_present_read():
    present = {"red": [0.0, 0.1, 0.3], "green": [0.9, 1.2], "blue": []}
    absent = {"red": [0.2, 0.8, 2.0], "green": [1.4, 3.0]}
    thr, report = fit_absent_uncertainty(present, absent, OBJECTS)
    assert thr[0] == pytest.approx(MIN_ABSENT_UNCERTAINTY)          # 1.25 x 0.3 is below the floor (sets overlap)
    assert thr[1] == pytest.approx(ABSENT_MARGIN * 1.2)             # 1.5: above sqrt(1.2 x 1.4), the gap's middle
    assert np.isnan(thr[2]) and "blue" not in report                # never seen present: no threshold
    assert report["red"]["absent_caught"] == pytest.approx(2 / 3, abs=1e-4)  # 0.8 and 2.0 above 0.5
    assert report["red"]["absent_min"] == 0.2 and json.dumps(report)  # JSON-safe
    assert report["green"]["absent_caught"] == pytest.approx(0.5)   # 3.0 above 1.5, 1.4 not
    for i, o in enumerate(("red", "green")):                        # no present read would be refused
        assert max(present[o]) < thr[i]
    with pytest.raises(ValueError, match="margin"):
        fit_absent_uncertainty(present, absent, OBJECTS, margin=1.0)
    with pytest.raises(ValueError, match="non-finite"):
        fit_absent_uncertainty({"red": [float("nan")]}, {}, OBJECTS)


def test_the_floor_is_the_hidden_object_rule_s_default():
    assert MIN_ABSENT_UNCERTAINTY == HIDDEN_UNCERTAINTY  # a read sharp enough to plan from is never "absent"


def test_fit_puts_a_wide_gap_s_threshold_in_its_middle_on_a_log_scale():
    # nut_assembly's case: present at most 0.47, absent from 14.6; 1.25 x 0.47 would sit at the gap's bottom edge
    thr, report = fit_absent_uncertainty({"red": [0.1, 0.47]}, {"red": [14.6, 20.0]}, OBJECTS)
    assert thr[0] == pytest.approx(np.sqrt(0.47 * 14.6))  # 2.62
    assert report["red"]["absent_caught"] == 1.0
    # present reads at or below 0 use the smallest bound instead of a log of nothing
    thr, _ = fit_absent_uncertainty({"red": [-0.2, -0.1]}, {"red": [20.0]}, OBJECTS)
    assert thr[0] == pytest.approx(1.0)  # sqrt(0.05 x 20)


def _model(**kw) -> StateModel:
    cfg = StateModelConfig(objects=OBJECTS, predicates=("grasped(red)",), camera="agentview", image_size=(32, 32),
                           channels=(4, 4, 4, 4), head_hidden=8)
    return StateModel(cfg, synthetic_calibration((32, 32)), **kw)


def test_thresholds_live_in_the_state_checkpoint(tmp_path):
    model = _model(absent_uncertainty=[0.5, None, 2.25])
    path = model.save(tmp_path / "ckpt")
    raw = json.loads((path / "config.json").read_text())
    assert raw["absent_uncertainty"] == [0.5, None, 2.25]
    back = StateModel.from_checkpoint(path)
    np.testing.assert_array_equal(back.absent_uncertainty, [0.5, np.nan, 2.25])
    raw["absent_uncertainty"] = [0.5, 1.0]
    (path / "config.json").write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match="absent_uncertainty must be a list"):
        StateModel.from_checkpoint(path)
    with pytest.raises(ConfigError, match="> 0"):
        _model(absent_uncertainty=[0.5, -1.0, 1.0])
    # what a hand-edited config.json may hold: each refused, naming the field
    for bad in ({"red": 0.5}, float("nan"), [[0.5, 0.5, 0.5]], [True, 0.5, 0.5], ["abc", 0.5, 0.5], [0.5, 0.5]):
        with pytest.raises(ConfigError, match="absent_uncertainty"):
            _model(absent_uncertainty=bad)
    assert np.isnan(_model().absent_uncertainty).all()  # a checkpoint without them: the signal is off


SUPPORT_Z = 0.82  # m: the surface the objects rest on


def _floor_depth(cal, size, tops: dict[tuple[int, int], float]) -> np.ndarray:
    """The depth image (m along the optical axis) of a bare floor at SUPPORT_Z, with a surface at height ``tops[(x,
    y)]`` (m) over a 5 x 5 px square around each pixel given (an object standing there)."""
    h, w = size
    xs, ys = np.meshgrid(np.arange(w) + 0.0, np.arange(h) + 0.0)
    px = np.stack([xs.ravel(), ys.ravel()], axis=1)
    rays = cal.rays(px)
    along = rays @ cal.rotation[:, 2]
    z = np.full(len(px), SUPPORT_Z)
    for (x, y), top in tops.items():
        near = (np.abs(px[:, 0] - x) <= 2) & (np.abs(px[:, 1] - y) <= 2)
        z[near] = top
    t = (z - cal.position[2]) / rays[:, 2]  # range to that height along each ray
    return (t * along).reshape(h, w).astype(np.float32)


def test_depth_showing_the_bare_support_where_an_object_is_read_makes_it_absent():
    size = (64, 64)
    cal = synthetic_calibration(size)
    state = _state([1.0, 1.0, 1.0], [0.1, 0.1, 0.1])
    state.keypoints_px[:, 0] = [[20.0, 40.0], [32.0, 40.0], [44.0, 40.0]]  # where each object is read
    # red stands at its pixel (a 4 cm top); green's read pixel shows the bare floor (absent: a false peak); blue's
    # shows a taller object in front of it (hidden, not absent)
    depth = _floor_depth(cal, size, {(20, 40): SUPPORT_Z + 0.04, (44, 40): SUPPORT_Z + 0.15})
    out = absent_by_depth(state, OBJECTS, depth, cal, SUPPORT_Z)
    assert [o for o, _ in out] == ["green"]
    assert out[0][1].startswith("the depth at its read pixel is the bare support surface (0.0 cm")
    # a held object is not judged (the hand is in front of it), nor a pixel without a depth return: of a bare floor
    # now, with red held and no return at green's pixel, only blue is absent
    state.probabilities[:] = 0.9  # grasped(red)
    depth[:, :] = _floor_depth(cal, size, {})
    depth[38:43, 30:35] = np.nan
    assert [o for o, _ in absent_by_depth(state, OBJECTS, depth, cal, SUPPORT_Z)] == ["blue"]
    assert pytest.approx(0.01) == SUPPORT_CLEARANCE_M
    with pytest.raises(ValueError, match="depth image"):
        absent_by_depth(state, OBJECTS, depth[0], cal, SUPPORT_Z)
    with pytest.raises(ValueError, match="not an object"):
        absent_by_depth(state, ["purple"], depth, cal, SUPPORT_Z)
    with pytest.raises(ValueError, match="clearance_m"):
        absent_by_depth(state, OBJECTS, depth, cal, SUPPORT_Z, clearance_m=0.0)


def test_the_depth_check_reads_any_depth_size_skips_pixels_it_cannot_read_and_names_bad_numbers():
    size = (32, 64)
    cal = synthetic_calibration(size)
    state = _state([1.0, 1.0, 1.0], [0.1, 0.1, 0.1])
    state.keypoints_px[:, 0] = [[16.0, 20.0], [32.0, 20.0], [48.0, 20.0]]
    # a depth image at twice the calibration's size: the read pixels are scaled to it (green's shows the bare floor)
    big = _floor_depth(synthetic_calibration((64, 128)), (64, 128), {(32, 40): SUPPORT_Z + 0.04,
                                                                     (96, 40): SUPPORT_Z + 0.15})
    assert [o for o, _ in absent_by_depth(state, OBJECTS, big, cal, SUPPORT_Z)] == ["green"]
    # a read pixel outside the image, or a NaN one, has no depth return: not judged, no crash
    state.keypoints_px[1, 0] = [500.0, -3.0]
    state.keypoints_px[2, 0] = [np.nan, np.nan]
    assert absent_by_depth(state, OBJECTS, big, cal, SUPPORT_Z) == []
    for bad in (float("nan"), float("inf"), "0.82", None):
        with pytest.raises(ValueError, match="support_z"):
            absent_by_depth(state, OBJECTS, big, cal, bad)
    with pytest.raises(ValueError, match="clearance_m"):
        absent_by_depth(state, OBJECTS, big, cal, SUPPORT_Z, clearance_m=float("nan"))


def test_perception_depth_reads_a_malformed_config_as_no_depth(tmp_path):
    from tandem.runtime.config import StackConfig, load
    from tandem.runtime.registry import perception_depth

    for i, raw in enumerate(([1, 2], {"model": {}, "depth_offsets_m": 0.01, "support_z_m": None})):
        path = tmp_path / f"c{i}"
        path.mkdir()
        (path / "config.json").write_text(json.dumps(raw))
        cfg = load(StackConfig, {"task": {"name": "stack_three"}, "goals": {"name": "none"},
                                 "planner": {"name": "learned", "state_checkpoint": str(path)},
                                 "verifier": {"name": "oracle"}, "executor": {"name": "scripted"}})
        assert perception_depth(cfg) is False


def test_the_support_surface_lives_in_the_state_checkpoint(tmp_path):
    path = _model(support_z=0.82).save(tmp_path / "ckpt")
    raw = json.loads((path / "config.json").read_text())
    assert raw["support_z_m"] == 0.82 and StateModel.from_checkpoint(path).support_z == 0.82
    assert _model().support_z is None
    for bad in ("0.82", float("nan"), True, [0.82]):
        with pytest.raises(ConfigError, match="support_z_m"):
            _model(support_z=bad)
