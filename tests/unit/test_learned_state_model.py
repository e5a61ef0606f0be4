"""The learned state model learns a tiny synthetic scene; its checkpoint round-trips; bad input is named."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from planner_vlm.learned.camera import CameraCalibration
from planner_vlm.learned.state_config import StateModelConfig, StateTrainConfig
from planner_vlm.learned.state_data import StateDataset
from planner_vlm.learned.state_model import StateModel
from planner_vlm.learned.state_train import (
    closed_on_nothing_range,
    evaluate,
    grasp_columns,
    jitter_gripper_opening,
    train_state_model,
)
from planner_vlm.learned.synthetic import make_synthetic_dataset, synthetic_calibration
from tandem.core.errors import CheckpointError, ConfigError, DatasetSchemaError, PrivilegedAccessError
from tandem.core.privileged import observation_for
from tandem.core.types import Observation


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    root = make_synthetic_dataset(tmp_path_factory.mktemp("syn") / "ds", episodes=5, frames=30, image_size=(48, 48))
    data = StateDataset(root, val_episodes=1)
    cfg = StateModelConfig(objects=data.objects, predicates=data.predicates, symmetries={"red": 4, "blue": 4},
                           image_size=(48, 48), channels=(8, 8, 16, 16), head_hidden=32)
    tcfg = StateTrainConfig(batch_size=16, max_minutes=3, max_steps=110, eval_every=55, val_frames=30)
    out = tmp_path_factory.mktemp("out")
    model, summary = train_state_model(data, cfg, tcfg, out, command="pytest", log=lambda _: None)
    return data, model, summary, out


def test_the_calibration_is_fitted_from_the_labels(trained):
    data = trained[0]
    assert data.calibration_rms_px < 1e-3
    np.testing.assert_allclose(data.calibration.intrinsics, synthetic_calibration((48, 48)).intrinsics, atol=1e-4)
    assert data.images.dtype == np.uint8 and data.images.shape[1:] == (48, 48, 3)
    assert data.keypoints_px.shape == (len(data), 4, 2) and data.predicate_labels.shape == (len(data), 4)


def test_something_is_learned(trained):
    data, model, summary, _ = trained
    assert summary["last_loss"] < 0.5 * summary["first_loss"]
    held = summary["held_out"]
    chance_px = np.median(np.linalg.norm(data.keypoints_px[data.val_index] - data.keypoints_px[data.val_index][::-1],
                                         axis=-1))
    assert chance_px > 8.0
    assert held["px_median"] < 3.0 < chance_px  # sub-3 px on a 48 px image after ~100 steps
    assert held["m3d_median"] < 0.05
    majority = max(float(np.mean(data.predicate_labels[data.val_index] < 0.5)), 0.5)
    assert held["predicate_accuracy"] >= majority
    assert 0.05 < model.temperature < 20 and np.all(np.isfinite(model.entropy_p99))


def test_checkpoint_round_trip_and_calibration_override(trained):
    data, model, _, out = trained
    ckpt = out / "checkpoint"
    assert json.loads((ckpt / "config.json").read_text())["format"] == "tandem-state-model/1"
    assert (ckpt / "command.txt").read_text().strip() == "pytest"
    loaded = StateModel.from_checkpoint(ckpt)
    idx = data.val_index[:4]
    a, b = model.predict_arrays(data.images[idx], data.proprio[idx]), loaded.predict_arrays(data.images[idx],
                                                                                            data.proprio[idx])
    for k in a:
        np.testing.assert_allclose(a[k], b[k], atol=1e-6)
    assert loaded.temperature == model.temperature
    # a robot's calibration overrides the stored one: the origins' pixels stay, the 3-D points follow the new camera
    # (and the second keypoints, placed in 3-D from the yaw, are projected through it)
    cal = synthetic_calibration((48, 48))
    pose = cal.world_from_camera.copy()
    pose[:3, 3] += [0.0, 0.0, 0.1]
    moved = StateModel.from_checkpoint(ckpt, CameraCalibration(cal.intrinsics, pose, (48, 48)))
    c = moved.predict_arrays(data.images[idx], data.proprio[idx])
    np.testing.assert_allclose(c["px"][:, 0::2], a["px"][:, 0::2], atol=1e-6)
    assert not np.allclose(c["keypoints_3d"], a["keypoints_3d"], atol=1e-3)
    metrics = evaluate(loaded, data, data.val_index)
    assert metrics["frames"] == len(data.val_index) and 0 <= metrics["ece"] <= 1


def test_bad_checkpoints_are_refused_by_name(trained, tmp_path):
    _, model, _, out = trained
    with pytest.raises(CheckpointError, match="missing"):
        StateModel.from_checkpoint(tmp_path)
    bad = model.save(tmp_path / "bad")
    raw = json.loads((bad / "config.json").read_text())
    raw["model"]["objects"] = ["red", "blue", "green"]  # another vocabulary than the weights
    (bad / "config.json").write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match="does not match"):
        StateModel.from_checkpoint(bad)
    raw["format"] = "tandem-executor/1"
    (bad / "config.json").write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match="format"):
        StateModel.from_checkpoint(bad)


def test_predict_reads_the_image_and_proprio_only(trained):
    data, model, _, _ = trained
    i = int(data.val_index[0])
    obs = Observation(images={"agentview": data.images[i]}, proprio=data.proprio[i], privileged={"predicates": {}})
    state = model.predict(observation_for(model, obs, "state model"))  # privileged withheld: reading it would raise
    assert state.keypoints_3d.shape == (2, 2, 3) and 0.0 <= state.scene_confidence <= 1.0
    assert set(state.truth()) == set(data.predicates)
    with pytest.raises(PrivilegedAccessError):
        observation_for(model, obs, "state model").privileged.get("predicates")
    with pytest.raises(ConfigError, match="agentview"):
        model.predict(Observation(images={"wrist": data.images[i]}, proprio=data.proprio[i]))
    big = Observation(images={"agentview": np.repeat(np.repeat(data.images[i], 2, 0), 2, 1)}, proprio=data.proprio[i])
    np.testing.assert_allclose(model.predict(big).keypoints_px, state.keypoints_px, atol=1.5)  # resized to 48 px


def test_a_dataset_without_images_or_labels_is_refused(tmp_path):
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "info.json").write_text(json.dumps({"features": {"observation.state": {}}}))
    with pytest.raises(DatasetSchemaError, match="observation.images.agentview"):
        StateDataset(tmp_path)


def test_labels_in_another_cameras_pixels_are_refused(tmp_path):
    """A dataset whose keypoint labels are in another camera's pixels cannot train a model of this camera: the
    calibration fitted from them would be that camera's."""
    root = make_synthetic_dataset(tmp_path / "ds", episodes=2, frames=4, image_size=(32, 32))
    info_path = tmp_path / "ds" / "meta" / "info.json"
    info = json.loads(info_path.read_text())
    info["features"]["labels.keypoints_px"]["info"] = {"camera": "workcell"}
    info_path.write_text(json.dumps(info))
    with pytest.raises(DatasetSchemaError, match="'workcell' pixels, not the 'agentview' camera's"):
        StateDataset(root)


def test_the_yaw_head_places_the_second_keypoint(trained):
    data, model, summary, _ = trained
    idx = data.val_index[:5]
    out = model.predict_arrays(data.images[idx], data.proprio[idx])
    k = out["keypoints_3d"]
    offset = k[:, 1::2] - k[:, 0::2]
    np.testing.assert_allclose(np.linalg.norm(offset, axis=-1), 0.03, atol=1e-9)  # KEYPOINT_OFFSET_M, horizontal
    np.testing.assert_allclose(offset[..., 2], 0.0, atol=1e-12)
    np.testing.assert_allclose(np.arctan2(offset[..., 1], offset[..., 0]), out["yaw"], atol=1e-9)
    proj = model.calibration.project(k[:, 1::2].reshape(-1, 3)).reshape(len(idx), -1, 2)
    np.testing.assert_allclose(out["px"][:, 1::2], proj, atol=1e-9)
    assert 0.0 <= summary["held_out"]["yaw_error_deg_median"] <= 45.0  # modulo the cubes' quarter turn


def test_yaw_targets_and_errors_respect_the_symmetry():
    from planner_vlm.learned.state_train import yaw_errors, yaw_targets

    cfg = StateModelConfig(objects=("cube", "mug"), predicates=("grasped(cube)",), symmetries={"cube": 4})
    yaw = np.radians([100.0, 100.0])
    kp = np.zeros((1, 4, 3))
    kp[0, 1, :2] = 0.03 * np.array([np.cos(yaw[0]), np.sin(yaw[0])])
    kp[0, 3, :2] = 0.03 * np.array([np.cos(yaw[1]), np.sin(yaw[1])])
    vec, mask = yaw_targets(cfg, kp)
    np.testing.assert_allclose(vec[0, 0], [np.cos(4 * yaw[0]), np.sin(4 * yaw[0])], atol=1e-12)
    np.testing.assert_allclose(vec[0, 1], [np.cos(yaw[1]), np.sin(yaw[1])], atol=1e-12)
    assert mask.all()
    err = np.degrees(yaw_errors(cfg, np.radians([[10.0, 10.0]]), kp))
    np.testing.assert_allclose(err, [[0.0, 90.0]], atol=1e-9)  # a cube turned a quarter turn looks the same
    kp[0, 1] = [0.0, 0.0, 0.03]  # a tipped cube: its keypoint pair is vertical, its yaw undefined
    assert not yaw_targets(cfg, kp)[1][0, 0] and np.isnan(yaw_errors(cfg, np.zeros((1, 2)), kp)[0, 0])


def test_fine_tuning_starts_from_the_checkpoint_and_a_different_network_is_refused(trained, tmp_path):
    data, model, summary, out = trained
    cfg = model.cfg
    one_step = StateTrainConfig(batch_size=16, max_minutes=3, max_steps=1, eval_every=1, val_frames=30,
                                init_from=str(out / "checkpoint"))
    _, tuned = train_state_model(data, cfg, one_step, tmp_path / "tuned", log=lambda _: None)
    scratch = StateTrainConfig(batch_size=16, max_minutes=3, max_steps=1, eval_every=1, val_frames=30)
    _, fresh = train_state_model(data, cfg, scratch, tmp_path / "fresh", log=lambda _: None)
    # one step from the trained weights is still the trained model; one step from scratch is not
    assert tuned["first_loss"] < 0.5 * fresh["first_loss"]
    assert tuned["first_loss"] <= 1.5 * summary["last_loss"]
    other = StateModelConfig.from_dict({**cfg.to_dict(), "head_hidden": 16})
    with pytest.raises(ConfigError, match="head_hidden"):
        train_state_model(data, other, one_step, tmp_path / "other", log=lambda _: None)


def test_gripper_jitter_redraws_the_opening_of_frames_holding_nothing_only():
    predicates = ("grasped(red)", "grasped(blue)", "on(red,blue)", "on(blue,red)")
    cols = grasp_columns(predicates)
    assert cols.tolist() == [0, 1]
    n = 4000
    labels = np.zeros((n, 4), np.float32)
    labels[: n // 2, 1] = 1.0  # the first half holds blue
    labels[:, 2] = 1.0
    feats = torch.zeros(n, 10)
    feats[:, 9] = 0.044  # the opening around a held cube, m
    out = jitter_gripper_opening(feats, labels, cols, (0.001, 0.08), 0.5, torch.Generator().manual_seed(0))
    assert torch.equal(out[: n // 2], feats[: n // 2])  # holding: untouched
    changed = out[n // 2:, 9] != 0.044
    assert 0.45 < float(changed.float().mean()) < 0.55  # the probability
    assert float(out[n // 2:, 9][changed].min()) >= 0.001 and float(out[n // 2:, 9][changed].max()) <= 0.08
    assert torch.equal(out[:, :9], feats[:, :9]) and torch.equal(feats[:, 9], torch.full((n,), 0.044))  # a copy
    assert jitter_gripper_opening(feats, labels, cols, (0.0, 0.08), 0.0, torch.Generator()) is feats
    with pytest.raises(ConfigError, match="gripper_jitter"):
        StateTrainConfig(gripper_jitter=1.5)


def test_the_closed_on_nothing_range_is_fitted_below_the_held_objects_width():
    opening = np.concatenate([np.full(200, 0.044), np.full(300, 0.08), [0.001, 0.015]])
    holding = np.concatenate([np.ones(200, bool), np.zeros(300, bool), [False, True]])
    low, high = closed_on_nothing_range(opening, holding)
    assert low == pytest.approx(0.001) and high == pytest.approx(0.022)  # half the held cube's 44 mm
    with pytest.raises(ValueError, match="hold an object"):
        closed_on_nothing_range(opening, np.zeros(len(opening), bool))


def test_the_held_out_metrics_include_the_gripper_closed_on_nothing(trained):
    data, model, summary, _ = trained
    acc = summary["held_out"]["empty_closed_accuracy"]
    assert acc is not None and 0.0 <= acc <= 1.0


def test_several_roots_read_as_one_dataset(tmp_path):
    a = make_synthetic_dataset(tmp_path / "a", episodes=3, frames=6, image_size=(32, 32), seed=0)
    b = make_synthetic_dataset(tmp_path / "b", episodes=2, frames=6, image_size=(32, 32), seed=1)
    one_a, one_b = StateDataset(a), StateDataset(b)
    both = StateDataset([a, b], val_episodes=2)
    assert len(both) == len(one_a) + len(one_b)
    assert both.episodes == [0, 1, 2, 3, 4]  # b's episodes 0, 1 follow a's three
    np.testing.assert_array_equal(both.images[: len(one_a)], one_a.images)
    np.testing.assert_array_equal(both.images[len(one_a):], one_b.images)
    np.testing.assert_array_equal(both.keypoints_px[len(one_a):], one_b.keypoints_px)
    assert set(both.episode[both.val_index]) == {3, 4}  # the held-out episodes are the last root's
    for root, seeds in ((a, [10, 11, 12]), (b, [20, 21])):  # the collector's journal names each episode's seed
        (root / "meta" / "tandem_collect.json").write_text(json.dumps(
            {"episodes": [{"episode_index": i, "seed": s} for i, s in enumerate(seeds)]}))
    both = StateDataset([a, b], val_episodes=2)
    assert both.seeds(both.train_index) == [10, 11, 12] and both.seeds(both.val_index) == [20, 21]
    assert StateDataset([a, b], episodes=[1, 3]).episodes == [1, 3]


def test_roots_of_different_image_sizes_are_refused(tmp_path):
    a = make_synthetic_dataset(tmp_path / "a", episodes=2, frames=4, image_size=(32, 32))
    b = make_synthetic_dataset(tmp_path / "b", episodes=2, frames=4, image_size=(48, 48))
    with pytest.raises(DatasetSchemaError, match=r"b: its image_size \(48, 48\) differ"):
        StateDataset([a, b])
