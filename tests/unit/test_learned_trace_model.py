"""The learned trace model learns the synthetic scene's subgoal traces; its checkpoint round-trips; bad input is named."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from planner_vlm.learned.synthetic import make_synthetic_dataset
from planner_vlm.learned.trace_config import TraceModelConfig, TraceTrainConfig
from planner_vlm.learned.trace_data import TraceDataset, parse_signature
from planner_vlm.learned.trace_model import (
    TraceEnsembleNet,
    TraceModel,
    TraceNet,
    coherent_turns,
    decode_rows,
    event_row,
    event_slots,
    reorder_slots,
    rows_from_event_slots,
    trace_inputs,
)
from planner_vlm.learned.trace_train import start_jitter, train_trace_model
from tandem.core.errors import (
    CheckpointError,
    ConfigError,
    DatasetSchemaError,
    UnknownNameError,
    UnknownSkillError,
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    root = make_synthetic_dataset(tmp_path_factory.mktemp("syn") / "ds", episodes=80, frames=2, image_size=(16, 16))
    data = TraceDataset(root, val_episodes=16)
    cfg = TraceModelConfig(objects=data.objects, skills=data.skills, arg_names=data.arg_names,
                           symmetries={"red": 4, "blue": 4}, hidden=64, layers=2)
    tcfg = TraceTrainConfig(batch_size=32, steps=400, max_minutes=3, eval_every=200, keypoint_noise_m=0.002,
                            val_episodes=16)
    out = tmp_path_factory.mktemp("out")
    model, summary = train_trace_model(data, cfg, tcfg, out, command="pytest", log=lambda _: None)
    return data, model, summary, out


def test_the_dataset_reads_one_sample_per_attempt(trained):
    data = trained[0]
    assert len(data) == 160 and data.skills == ("pick", "stack") and data.arg_names == ("blue", "red")
    assert data.keypoints_3d.shape == (160, 2, 2, 3) and data.rows.shape == (160, 16, 5)
    assert len(data.val_index) == 32 and set(data.episode[data.val_index]) == set(range(64, 80))
    assert data.mask[:, :5].all() and not data.mask[:, 5:].any()  # five real points per synthetic trace


def test_traces_are_learned(trained):
    data, _, summary, _ = trained
    v = data.val_index
    stay = np.linalg.norm(data.rows[v][..., :3] - data.proprio[v][:, None, :3], axis=-1)[data.mask[v] > 0] * 100
    held = summary["held_out"]
    assert np.median(stay) > 8.0  # a trace that stays at the gripper is off by about 16 cm
    assert held["point_error_cm"]["median"] < 2.0
    assert held["yaw_error_deg"]["median"] < 5.0  # the grasp yaw modulo the cube's quarter turn
    assert held["gripper_accuracy"] >= 0.95 and held["length_accuracy"] >= 0.9
    assert summary["held_out_noisy_keypoints"]["point_error_cm"]["median"] < 3.0
    assert summary["last_loss"] < 0.5 * summary["first_loss"]


def test_checkpoint_round_trip_and_prediction(trained, tmp_path):
    data, model, _, out = trained
    ckpt = out / "checkpoint"
    assert json.loads((ckpt / "config.json").read_text())["format"] == "tandem-trace-model/1"
    loaded = TraceModel.from_checkpoint(ckpt)
    i = int(data.val_index[0])
    skill, args = parse_signature(data.signature[i])
    a = model.predict(data.keypoints_3d[i], data.proprio[i], skill, args)
    b = loaded.predict(data.keypoints_3d[i], data.proprio[i], skill, args)
    np.testing.assert_allclose(a.points, b.points, atol=1e-6)
    np.testing.assert_allclose(a.points[0], data.proprio[i, :3], atol=0.02)  # a trace starts at the gripper
    n = int(data.mask[i].sum())
    assert len(a.points) == n and set(np.unique(a.gripper)) <= {-1.0, 1.0}
    with pytest.raises(UnknownSkillError):
        model.predict(data.keypoints_3d[i], data.proprio[i], "insert", args)
    with pytest.raises(UnknownNameError, match="purple"):
        model.predict(data.keypoints_3d[i], data.proprio[i], "pick", ("purple",))
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.full_like(data.keypoints_3d[i], np.nan), data.proprio[i], skill, args)
    with pytest.raises(CheckpointError, match="missing"):
        TraceModel.from_checkpoint(tmp_path)


def test_bad_configs_and_datasets_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="arg_names"):
        TraceModelConfig(objects=("red",), skills=("pick",), arg_names=("blue",))
    with pytest.raises(ConfigError, match="skill"):
        TraceModelConfig(objects=("red",), skills=(), arg_names=("red",))
    with pytest.raises(DatasetSchemaError, match="skill"):
        parse_signature("pick red")
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "info.json").write_text(json.dumps({"features": {}}))
    with pytest.raises(DatasetSchemaError, match="subgoal.trace_3d"):
        TraceDataset(tmp_path)


def test_without_the_gripper_opening_the_inputs_do_not_depend_on_it():
    cfg = TraceModelConfig(objects=("red", "blue"), skills=("pick", "stack"), arg_names=("blue", "red"),
                           use_gripper_opening=False)
    kp = np.zeros((1, 2, 2, 3))
    kp[0, :, 1, 0] = 0.03  # second keypoints 3 cm along x
    proprio = np.array([[0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08]])
    closed = proprio.copy()
    closed[0, 7] = 0.001  # closed on nothing, after a failed grasp
    skill, args = np.array([0]), np.array([[1, -1]])
    open_in = trace_inputs(cfg, kp, proprio, skill, args)
    closed_in = trace_inputs(cfg, kp, closed, skill, args)
    np.testing.assert_array_equal(open_in["features"], closed_in["features"])
    with_opening = dataclasses.replace(cfg, use_gripper_opening=True)  # the default, and older checkpoints'
    assert not np.array_equal(trace_inputs(with_opening, kp, proprio, skill, args)["features"],
                              trace_inputs(with_opening, kp, closed, skill, args)["features"])
    assert TraceModelConfig.from_dict({**cfg.to_dict(), "use_gripper_opening": False}) == cfg


def test_end_slots_hold_the_closing_points_of_traces_of_any_length():
    rows = np.zeros((2, 6, 5))
    rows[..., 0] = np.arange(6)  # x = row index
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]], np.float32)
    slots = reorder_slots(rows, mask)
    assert slots[0, :, 0].tolist() == [0, 4, 3, 2, 1, 5]  # the gripper first, then the last point, ..., padding kept
    assert slots[1, :, 0].tolist() == [0, 2, 1, 3, 4, 5]
    np.testing.assert_array_equal(reorder_slots(slots, mask), rows)  # its own inverse
    with pytest.raises(ConfigError, match="slot_order"):
        TraceModelConfig(objects=("red",), skills=("pick",), arg_names=("red",), slot_order="middle")


def test_coherent_turns_make_one_turn_of_the_wrist_without_changing_a_grasp():
    mask = np.ones((4, 5), np.float32)
    mask[3, 3:] = 0
    yaw = np.array([[1.6, 3.13, 0.05, 0.05, 0.05],  # a half turn out and back: seen closed loop
                    [1.086, 1.903, 2.721 - np.pi, 3.538, 3.538],  # the expert's stepwise turn, one step flipped
                    [0.702, 1.317, 1.317, 1.317 + np.pi, 1.317 + np.pi],  # a half turn at the grasp: seen too
                    [0.3, 0.3 + np.pi, 0.3, 9.0, 9.0]])  # the padding is left alone
    out = coherent_turns(yaw, mask)
    np.testing.assert_allclose(out[0], [1.6, 3.13 - np.pi, 0.05, 0.05, 0.05])
    np.testing.assert_allclose(out[1], [1.086, 1.903, 2.721, 3.538, 3.538])
    np.testing.assert_allclose(out[2], [0.702, 1.317, 1.317, 1.317, 1.317])  # a tie: the smaller turn
    np.testing.assert_allclose(out[3], [0.3, 0.3, 0.3, 9.0, 9.0])
    half_turns = (out - yaw) / np.pi
    np.testing.assert_allclose(half_turns, np.round(half_turns), atol=1e-9)  # the same grasp modulo a half turn


def test_an_intermediate_point_of_another_quarter_turn_grasp_is_clipped_into_the_turn():
    # pick_place_bins' bread (symmetric under a quarter turn) from a start 10 cm lower, as the shipped model decoded
    # it before: 1.56 -> 0.42 -> 2.12 rad, out by 1.1 rad and back by 1.7 rad; the wrist now waits, then turns once
    yaw = np.array([[1.56, 0.42, 2.12, 2.12, 2.12]])
    out = coherent_turns(yaw, np.ones((1, 5), np.float32))
    np.testing.assert_allclose(out[0], [1.56, 1.56, 2.12, 2.12, 2.12])
    assert np.all(np.diff(out[0]) >= 0)  # one direction


def test_a_held_nut_keeps_the_networks_turn_after_the_close():
    # a nut pick: turn to the handle (open), close at row 3, lift, then turn the nut by 3 rad to face the robot
    yaw = np.array([[0.0, 1.5, 1.5, 1.5, 1.5, 2.5, 3.5, 4.5]] * 2)
    grip = np.array([[-1, -1, -1, 1, 1, 1, 1, 1]] * 2, np.float64)
    mask = np.ones((2, 8), np.float32)
    whole = coherent_turns(yaw, mask)  # the gripper's symmetry over the whole trace: the nut ends the other way round
    assert abs(whole[0, -1] - 4.5) > 3.0
    out = coherent_turns(yaw, mask, grip, np.array([True, False]))
    np.testing.assert_allclose(out[0], yaw[0])  # a nut: the turn after the close is kept
    np.testing.assert_allclose(out[1], whole[1])  # a box that a half turn maps onto itself: as before
    flipped = yaw.copy()
    flipped[0, 2:] += np.pi  # the grasp decided a half turn away: the nut's turn after it still holds, from there
    flipped[0, 6] -= np.pi  # and one step of the turn a half turn off: put back on the way, not out and back
    out = coherent_turns(flipped, mask, grip, np.array([True, False]))
    np.testing.assert_allclose(out[0, 4:] - out[0, 3], yaw[0, 4:] - yaw[0, 3])


def test_start_jitter_moves_what_is_tied_to_the_gripper_and_nothing_else():
    cfg = TraceModelConfig(objects=("red", "blue"), skills=("pick", "stack"), arg_names=("blue", "red"))
    kp = np.zeros((2, 2, 2, 3))
    kp[:, 1, :, 2] = 0.90  # red (object 0) on the table, blue (object 1) at 0.90 m
    proprio = np.tile([0.1, 0.2, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08], (2, 1))
    rows = np.zeros((2, 5, 5))
    # sample 0, a pick of red from above it: rise at the start, a point above red, the grasp, close
    rows[0, :4, :3] = [[0.1, 0.2, 1.0], [0.1, 0.2, 1.0], [0.3, 0.0, 0.92], [0.3, 0.0, 0.82]]
    rows[0, :, 4] = [-1, -1, -1, 1, 0]
    # sample 1, stacking blue (held, closed) on red: two points over red, then open
    rows[1, :4, :3] = [[0.1, 0.2, 1.0], [0.3, 0.0, 0.95], [0.3, 0.0, 0.87], [0.3, 0.0, 0.87]]
    rows[1, :, 4] = [1, 1, 1, -1, 0]
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 0]], np.float32)
    args = np.array([[1, -1], [0, 1]])  # pick(red); stack(blue, red)
    rng = np.random.default_rng(0)
    kp2, p2, r2 = start_jitter(cfg, kp, proprio, rows, mask, args,
                               TraceTrainConfig(carry_height_jitter_m=0.04, start_jitter_m=0.1), rng)
    d_pick, d_carry = p2[0, :3] - proprio[0, :3], p2[1, :3] - proprio[1, :3]
    assert np.abs(d_pick).max() > 0 and np.abs(d_pick).max() <= 0.1
    np.testing.assert_allclose(r2[0, :2, :3], rows[0, :2, :3] + d_pick)  # the start and the rise above it
    np.testing.assert_array_equal(r2[0, 2:], rows[0, 2:])  # the points at red stay
    np.testing.assert_array_equal(kp2[0], kp[0])  # a pick moves no object
    assert d_carry[:2].tolist() == [0.0, 0.0] and 0 < abs(d_carry[2]) <= 0.04
    np.testing.assert_allclose(kp2[1, 1, :, 2], kp[1, 1, :, 2] + d_carry[2])  # blue rides with the gripper
    np.testing.assert_array_equal(kp2[1, 0], kp[1, 0])
    np.testing.assert_allclose(r2[1, 0, :3], rows[1, 0, :3] + d_carry)
    np.testing.assert_array_equal(r2[1, 1:], rows[1, 1:])  # the release points stay
    with pytest.raises(ConfigError, match="start_jitter_m"):
        TraceTrainConfig(start_jitter_m=-0.1)


def test_a_repick_start_is_right_above_the_grasp_and_keeps_the_points_at_the_object():
    cfg = TraceModelConfig(objects=("red", "blue"), skills=("pick", "stack"), arg_names=("blue", "red"))
    kp = np.zeros((3, 2, 2, 3))
    proprio = np.tile([0.1, 0.2, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08], (3, 1))
    rows = np.zeros((3, 5, 5))
    # picks of red from high above another bin: a wrist turn at the start, above red, the grasp, close
    rows[:, :4, :3] = [[0.1, 0.2, 1.0], [0.1, 0.2, 1.0], [0.3, 0.0, 0.92], [0.3, 0.0, 0.82]]
    rows[:, :, 4] = [-1, -1, -1, 1, 0]
    rows[2, :, 4] = [-1, -1, -1, -1, 0]  # no closed row: no grasp to start above
    mask = np.array([[1, 1, 1, 1, 0]] * 3, np.float32)
    args = np.array([[1, -1]] * 3)
    kp2, p2, r2 = start_jitter(cfg, kp, proprio, rows, mask, args,
                               TraceTrainConfig(repick_fraction=1.0, repick_radius_m=0.05, repick_height_m=0.15),
                               np.random.default_rng(0))
    for b in (0, 1):
        off = p2[b, :3] - rows[b, 3, :3]  # from the grasp point
        assert np.abs(off[:2]).max() <= 0.05 and 0.0 <= off[2] <= 0.15
        np.testing.assert_allclose(r2[b, 0, :3], p2[b, :3])
        np.testing.assert_allclose(r2[b, 1, :2], p2[b, :2])  # the turn follows the start in xy ...
        assert r2[b, 1, 2] == rows[b, 1, 2]  # ... at the height the expert turns at
        np.testing.assert_array_equal(r2[b, 2:], rows[b, 2:])  # above, grasp and close stay at red
    np.testing.assert_array_equal(p2[2], proprio[2])  # without a grasp (and no plain jitter) nothing moves
    np.testing.assert_array_equal(kp2, kp)
    with pytest.raises(ConfigError, match="repick_fraction"):
        TraceTrainConfig(repick_fraction=1.5)


def test_a_carried_object_turned_or_shifted_in_the_fingers_moves_the_release_against_it():
    cfg = TraceModelConfig(objects=("red", "blue"), skills=("pick", "stack"), arg_names=("blue", "red"))
    kp = np.zeros((2, 2, 2, 3))
    kp[:, 0, 0] = [0.16, 0.2, 0.95]  # red, held: its origin 6 cm behind the gripper in x ...
    kp[:, 0, 1] = [0.19, 0.2, 0.95]  # ... its second keypoint 3 cm towards it
    kp[:, 1, :, :] = [0.5, 0.0, 0.82]
    proprio = np.tile([0.22, 0.2, 0.95, 0.0, 1.0, 0.0, 0.0, 0.0], (2, 1))
    rows = np.zeros((2, 5, 5))
    # stack red on blue: rise at the start, then over blue with red's origin on blue's, then open
    over = np.array([0.5 + 0.06, 0.0])  # the gripper 6 cm ahead of red's origin
    rows[:, :4, :3] = [[0.22, 0.2, 0.95], [0.22, 0.2, 1.0], [*over, 1.0], [*over, 0.87]]
    rows[:, :, 4] = [1, 1, 1, -1, 0]
    mask = np.array([[1, 1, 1, 1, 0]] * 2, np.float32)
    args = np.array([[1, 0]] * 2)  # stack(red, blue)
    kp2, p2, r2 = start_jitter(cfg, kp, proprio, rows, mask, args, TraceTrainConfig(carry_flip_fraction=1.0),
                               np.random.default_rng(0))
    np.testing.assert_allclose(kp2[:, 0, 0, :2], [[0.28, 0.2]] * 2)  # red turned about the gripper: now ahead
    np.testing.assert_allclose(kp2[:, 0, 1, :2], [[0.25, 0.2]] * 2)
    np.testing.assert_array_equal(p2, proprio)
    np.testing.assert_array_equal(r2[:, :2], rows[:, :2])  # the start and the rise above it stay
    np.testing.assert_allclose(r2[:, 2:4, :2], [[[0.5 - 0.06, 0.0]] * 2] * 2)  # red's origin still lands on blue
    np.testing.assert_array_equal(kp2[:, 1], kp[:, 1])
    kp3, _, r3 = start_jitter(cfg, kp, proprio, rows, mask, args, TraceTrainConfig(carry_offset_jitter_m=0.01),
                              np.random.default_rng(1))
    delta = kp3[:, 0, 0, :2] - kp[:, 0, 0, :2]
    assert 0 < np.abs(delta).max() <= 0.01
    np.testing.assert_allclose(kp3[:, 0, 1, :2] - kp[:, 0, 1, :2], delta)  # both keypoints move together
    np.testing.assert_allclose(r3[:, 2:4, :2], rows[:, 2:4, :2] - delta[:, None])
    with pytest.raises(ConfigError, match="carry_flip_fraction"):
        TraceTrainConfig(carry_flip_fraction=-0.1)


@pytest.mark.parametrize("slot_order", ["end", "event"])
def test_a_model_with_reordered_slots_learns_and_decodes_in_trace_order(trained, tmp_path, slot_order):
    data = trained[0]
    cfg = TraceModelConfig(objects=data.objects, skills=data.skills, arg_names=data.arg_names,
                           symmetries={"red": 4, "blue": 4}, hidden=64, layers=2, slot_order=slot_order)
    tcfg = TraceTrainConfig(batch_size=32, steps=400, max_minutes=3, eval_every=200, keypoint_noise_m=0.002,
                            val_episodes=16)
    model, summary = train_trace_model(data, cfg, tcfg, tmp_path, command="pytest", log=lambda _: None)
    assert summary["held_out"]["point_error_cm"]["median"] < 2.0  # compared with the rows in the trace's order
    assert summary["held_out"]["length_accuracy"] >= 0.9
    loaded = TraceModel.from_checkpoint(tmp_path / "checkpoint")
    assert loaded.cfg.slot_order == slot_order
    j = int(data.val_index[0])
    tr = loaded.predict(data.keypoints_3d[j], data.proprio[j], data.skills[data.skill[j]],
                        tuple(data.arg_names[a] for a in data.args[j] if a >= 0))
    n = int(data.mask[j].sum())
    assert len(tr.points) == n and np.linalg.norm(tr.points[-1] - data.rows[j, n - 1, :3]) < 0.03


def test_an_ensemble_learns_averages_its_members_and_round_trips(trained, tmp_path):
    data = trained[0]
    cfg = TraceModelConfig(objects=data.objects, skills=data.skills, arg_names=data.arg_names,
                           symmetries={"red": 4, "blue": 4}, hidden=64, layers=2, ensemble=2)
    tcfg = TraceTrainConfig(batch_size=32, steps=300, max_minutes=3, eval_every=150, keypoint_noise_m=0.002,
                            val_episodes=16)
    model, summary = train_trace_model(data, cfg, tcfg, tmp_path, command="pytest", log=lambda _: None)
    assert isinstance(model.net, TraceEnsembleNet) and len(model.net.members) == 2
    assert [m["seed"] for m in summary["members"]] == [0, 1] and summary["steps"] == 600
    assert summary["held_out"]["point_error_cm"]["median"] < 2.0
    a, b = model.net.members
    assert not torch.equal(a.out.weight, b.out.weight)  # independently initialised and trained
    x = trace_inputs(cfg, data.keypoints_3d[:4], data.proprio[:4], data.skill[:4], data.args[:4])
    inputs = [torch.from_numpy(x[k]) for k in ("features", "anchors", "refs")]
    with torch.no_grad():
        whole, one, two = model.net(*inputs), a(*inputs), b(*inputs)
    for key in ("rel", "yaw_logits", "turn_logits", "gripper_logit", "mask_logit"):
        torch.testing.assert_close(whole[key], (one[key] + two[key]) / 2)
    loaded = TraceModel.from_checkpoint(tmp_path / "checkpoint")
    assert loaded.cfg.ensemble == 2 and isinstance(loaded.net, TraceEnsembleNet)
    j = int(data.val_index[0])
    args = tuple(data.arg_names[i] for i in data.args[j] if i >= 0)
    np.testing.assert_allclose(loaded.predict(data.keypoints_3d[j], data.proprio[j], data.skills[data.skill[j]], args).points,
                               model.predict(data.keypoints_3d[j], data.proprio[j], data.skills[data.skill[j]], args).points,
                               atol=1e-6)
    one_member = dataclasses.replace(cfg, ensemble=1)
    TraceModel(one_member).save(tmp_path / "single")
    (tmp_path / "single" / "config.json").write_text(
        (tmp_path / "single" / "config.json").read_text().replace('"ensemble": 1', '"ensemble": 2'))
    with pytest.raises(CheckpointError, match="does not match the trace model config"):
        TraceModel.from_checkpoint(tmp_path / "single")
    with pytest.raises(ConfigError, match="ensemble must be >= 1"):
        dataclasses.replace(cfg, ensemble=0)


def test_the_workcell_rides_in_the_checkpoint_and_changes_no_weight(trained, tmp_path):
    data, model, _, _ = trained
    cell = {"containers": [{"inner_lo": [-0.1, -0.4], "inner_hi": [0.3, 0.0], "rim_z": 0.9}],
            "extents": {"red": [[-0.02, -0.02, -0.02], [0.02, 0.02, 0.02]]}}
    with_cell = TraceModel(dataclasses.replace(model.cfg, workcell=cell), model.net)
    loaded = TraceModel.from_checkpoint(with_cell.save(tmp_path / "ckpt"))
    assert loaded.cfg.workcell == cell
    j = int(data.val_index[0])
    args = tuple(data.arg_names[a] for a in data.args[j] if a >= 0)
    a = model.predict(data.keypoints_3d[j], data.proprio[j], data.skills[data.skill[j]], args)
    b = loaded.predict(data.keypoints_3d[j], data.proprio[j], data.skills[data.skill[j]], args)
    np.testing.assert_array_equal(a.points, b.points)
    np.testing.assert_array_equal(a.yaw, b.yaw)
    raw = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    raw["model"]["workcell"]["extents"]["red"] = [[0, 0], [1, 1]]
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match=r"ckpt: invalid trace model config: workcell extents\['red'\] lo"):
        TraceModel.from_checkpoint(tmp_path / "ckpt")


def test_event_slots_put_every_trace_s_gripper_change_in_the_middle_slot_and_round_trip():
    k = 8
    rows = np.zeros((3, k, 5))
    rows[..., 0] = np.arange(k)  # x = the row's index in the trace
    rows[0, :, 4] = [-1, -1, -1, 1, 1, 1, 0, 0]  # a pick: two points before the close (row 3), two after
    rows[1, :, 4] = [1, 1, -1, -1, 0, 0, 0, 0]  # a place: the release at row 2
    rows[2, :, 4] = [-1, -1, -1, 0, 0, 0, 0, 0]  # no change: the last row is the event
    mask = np.zeros((3, k), np.float32)
    mask[0, :6], mask[1, :4], mask[2, :3] = 1, 1, 1
    assert [event_row(rows[b], int(mask[b].sum())) for b in range(3)] == [3, 2, 2]
    slots, slot_mask = event_slots(rows, mask)
    assert (slots[:, k // 2, 0] == [3, 2, 2]).all()  # the event row sits in slot K // 2
    np.testing.assert_array_equal(slot_mask[0], [1, 0, 1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(slots[0, 2:7, 0], [1, 2, 3, 4, 5])
    back, back_mask = rows_from_event_slots(slots, slot_mask > 0)
    np.testing.assert_array_equal(back_mask, mask)
    for b in range(3):
        n = int(mask[b].sum())
        np.testing.assert_array_equal(back[b, :n], rows[b, :n])
    # decoded validity need not be contiguous: only the run around the event slot counts
    valid = slot_mask > 0
    valid[0, 1] = True  # next to the run (slots 2-6): it extends it
    valid[1, 7] = True  # after a gap (slot 6 is not valid): dropped
    _, m2 = rows_from_event_slots(slots, valid)
    assert m2[0].sum() == 7 and m2[1].sum() == 4
    valid[2, k // 2] = False  # no event slot: the trace is row 0 alone
    _, m3 = rows_from_event_slots(slots, valid)
    assert m3[2].sum() == 1
    with pytest.raises(ConfigError, match="slot_order"):
        TraceModelConfig(objects=("red",), skills=("pick",), arg_names=("red",), slot_order="grasp")



def test_without_a_yaw_correction_every_yaw_is_a_candidate_exactly():
    torch.manual_seed(0)
    cfg = TraceModelConfig(objects=("red", "blue"), skills=("pick", "stack"), arg_names=("blue", "red"),
                           yaw_correction_deg=0.0)
    net = TraceNet(cfg)
    torch.nn.init.normal_(net.out.weight, std=1.0)  # large outputs: a free correction would be far from 0
    kp = np.random.default_rng(0).normal(size=(4, 2, 2, 3)) * 0.1
    proprio = np.tile([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08], (4, 1))
    x = trace_inputs(cfg, kp, proprio, np.zeros(4, np.int64), np.tile([1, -1], (4, 1)))
    with torch.no_grad():
        out = net(*(torch.from_numpy(x[k]) for k in ("features", "anchors", "refs")))
    assert float(out["yaw_corrections"].abs().max()) == 0.0
    rows, _ = decode_rows(out, x["eef"], x["yaw"])
    cands = out["yaw_candidates"].detach().double().numpy()  # (B, 6) rad, relative to the gripper's yaw
    d = rows[..., 3] - x["yaw"][:, None]
    off = np.abs(((d[..., None] - cands[:, None]) + np.pi / 2) % np.pi - np.pi / 2).min(-1)  # modulo a half turn
    assert off.max() < 1e-5
    with pytest.raises(ConfigError, match="yaw_correction_deg"):
        TraceModelConfig(objects=("red",), skills=("pick",), arg_names=("red",), yaw_correction_deg=120.0)
