"""The track-conditioned executor: features, windows, set_subgoal errors, checkpoints, and that it learns."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_features import feature_dim, track_features
from executor_vla.track_policy import TrackExecutor
from tandem.core import dataset_schema as schema
from tandem.core.errors import CheckpointError, ConfigError, SubgoalSchemaError
from tandem.core.geometry import quats_to_mats, rotation_6d, yaws_of_mats
from tandem.core.types import Observation, Subgoal, TaskSpec, Trace3D

TASK = TaskSpec(name="toy", instruction="visit the targets", objects=("obj0", "obj1"), max_steps=100)


def _down_quat(yaw: float, tilt: float = 0.0) -> np.ndarray:
    """wxyz quaternion of a gripper pointing down (R = Rz(yaw) @ diag(1, -1, -1)), tilted by ``tilt`` about x."""
    # Rx(pi) has quaternion (0, 1, 0, 0); Rz(yaw) is (cos(yaw/2), 0, 0, sin(yaw/2)); small tilt about world x.
    def mul(a, b):
        w1, x1, y1, z1 = a
        w2, x2, y2, z2 = b
        return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                         w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])
    q = mul(np.array([math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)]), np.array([0.0, 1.0, 0.0, 0.0]))
    return mul(np.array([math.cos(tilt / 2), math.sin(tilt / 2), 0, 0]), q)


def _trace(points, yaw=None, grip=None) -> Trace3D:
    pts = np.asarray(points, np.float32)
    k = len(pts)
    return Trace3D(points=pts, yaw=np.zeros(k) if yaw is None else yaw,
                   gripper=-np.ones(k) if grip is None else grip)


# ---------------------------------------------------------------- features
def test_rotation_6d_is_blind_to_the_quaternion_sign_and_continuous_near_w0():
    q = _down_quat(0.3)
    assert abs(q[0]) < 1e-6  # pointing down: w ~ 0, where forcing w >= 0 flips the quaternion
    r1, r2 = rotation_6d(quats_to_mats(q)), rotation_6d(quats_to_mats(-q))
    np.testing.assert_allclose(r1, r2, atol=1e-12)
    tilted = _down_quat(0.3, tilt=math.radians(0.5))
    tilted = tilted if tilted[0] >= 0 else -tilted  # the env's canonical sign flips the whole quaternion here
    assert np.linalg.norm(rotation_6d(quats_to_mats(tilted)) - r1) < 0.02
    assert yaws_of_mats(quats_to_mats(q)) == pytest.approx(0.3)


def test_track_features_are_the_trace_relative_to_the_gripper():
    proprio = np.array([[0.1, 0.2, 0.9, *_down_quat(0.5), 0.08]], np.float32)
    rows, mask = schema.pad_trace_3d(_trace([[0.1, 0.2, 0.9], [0.3, 0.1, 0.85]], yaw=[0.5, 0.5 + math.pi / 4],
                                            grip=[-1.0, 1.0]), 4)
    f = track_features(proprio, rows, mask)
    assert f.shape == (1, feature_dim(4))
    np.testing.assert_allclose(f[0, :3], [0.1, 0.2, 0.9], atol=1e-6)
    assert f[0, 9] == pytest.approx(0.08)
    p1 = f[0, 10 + 7: 10 + 14]  # second trace point
    np.testing.assert_allclose(p1[:3], [0.2, -0.1, -0.05], atol=1e-6)
    assert p1[3] == pytest.approx(math.sin(math.pi / 4), abs=1e-5) and p1[4] == pytest.approx(math.cos(math.pi / 4), abs=1e-5)
    assert p1[5] == 1.0 and p1[6] == 1.0
    padded = f[0, 10 + 7 * 3: 10 + 7 * 4]  # a padded row repeats the last point, mask 0
    np.testing.assert_allclose(padded[:6], p1[:6], atol=1e-6)
    assert padded[6] == 0.0


def test_pad_trace_3d_refuses_a_trace_longer_than_the_rows():
    with pytest.raises(SubgoalSchemaError, match="does not fit"):
        schema.pad_trace_3d(_trace(np.zeros((5, 3))), 4)
    rows, mask = schema.pad_trace_3d(None, 3)
    assert not rows.any() and not mask.any()


def test_trace3d_rejects_nan_and_bad_gripper_values():
    with pytest.raises(ValueError, match="NaN"):
        _trace([[0.0, np.nan, 0.0]])
    with pytest.raises(ValueError, match="gripper"):
        _trace([[0.0, 0.0, 0.0]], grip=[2.0])
    with pytest.raises(ValueError, match=r"\(K, 3\)"):
        Trace3D(points=np.zeros((2, 2)), yaw=np.zeros(2), gripper=np.zeros(2))


# ---------------------------------------------------------------- executor protocol
def _executor(**kw) -> TrackExecutor:
    cfg = TrackExecutorConfig(**{"trace_3d_len": 4, "text_encoder": "hash", "text_dim": 16, "hidden_dim": 32,
                                 "cond_dim": 32, "n_layers": 1, "tasks": ("toy",), "objects": ("obj0", "obj1"), **kw})
    return TrackExecutor(cfg).eval()


def _subgoal(name="obj0", trace=True) -> Subgoal:
    return Subgoal(id="sg0", skill="pick", args=(name,), text=f"pick up the {name}",
                   trace_3d=_trace([[0.0, 0.0, 1.0], [0.1, 0.0, 0.9]]) if trace else None)


def _obs() -> Observation:
    return Observation(images={}, proprio=np.array([0, 0, 1, *_down_quat(0.0), 0.08], np.float32))


def test_select_action_returns_clipped_finite_actions_and_chunks_every_ta_steps():
    ex = _executor(n_action_steps=4)
    ex.set_subgoal(_subgoal(), TASK)
    acts = [ex.select_action(_obs()) for _ in range(9)]
    assert all(a.shape == (7,) and np.all(np.abs(a) <= 1.0) for a in acts)
    assert ex.last_progress is not None and 0.0 <= ex.last_progress <= 1.0


def test_set_subgoal_without_a_3d_trace_is_refused_and_drops_the_previous_chunk():
    ex = _executor()
    ex.set_subgoal(_subgoal(), TASK)
    ex.select_action(_obs())
    with pytest.raises(SubgoalSchemaError, match="no trace_3d"):
        ex.set_subgoal(_subgoal(trace=False), TASK)
    with pytest.raises(SubgoalSchemaError, match="before set_subgoal"):  # subgoal A's queued actions are gone
        ex.select_action(_obs())


def test_a_checkpoint_for_another_task_or_object_vocabulary_is_refused():
    ex = _executor()
    with pytest.raises(SubgoalSchemaError, match="trained on task"):
        ex.set_subgoal(_subgoal(), TaskSpec(name="nut_assembly", instruction="x", objects=(), max_steps=1))
    with pytest.raises(SubgoalSchemaError, match="never saw"):
        ex.set_subgoal(_subgoal("square_nut"), TASK)


def test_checkpoint_round_trip_and_inference_overrides(tmp_path):
    ex = _executor()
    seeds = {"dataset": {"seeds": {"toy": list(range(300))}}}
    path = ex.save(tmp_path / "ck", command="test", extra=seeds)
    text = (path / "config.json").read_text()
    assert json.loads(text)["extra"] == seeds
    assert f'"toy": {list(range(300))}' in text  # the training seeds on one line, not 300
    again = TrackExecutor.from_checkpoint(path)
    for e in (ex, again):
        e.reset()
        e.set_subgoal(_subgoal(), TASK)
    # the loaded one samples with the fused DDIM loop: the same chunk to float rounding
    np.testing.assert_allclose(ex.select_action(_obs()), again.select_action(_obs()), atol=1e-5)
    fast = TrackExecutor.from_checkpoint(path, overrides={"num_inference_steps": 3, "n_action_steps": 2})
    assert fast.cfg.num_inference_steps == 3 and fast.cfg.n_action_steps == 2 and len(fast._chunk_sampler.timesteps()) == 3
    with pytest.raises(ConfigError, match="hidden_dim"):
        TrackExecutor.from_checkpoint(path, overrides={"hidden_dim": 8})
    with pytest.raises(ConfigError, match="num_inference_steps"):
        TrackExecutor.from_checkpoint(path, overrides={"num_inference_steps": 0})
    (path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="missing"):
        TrackExecutor.from_checkpoint(path)


# ---------------------------------------------------------------- data and learning
@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    from executor_vla.synthetic import make_synthetic_dataset

    root = tmp_path_factory.mktemp("track") / "ds"
    make_synthetic_dataset(root, n_episodes=6, subgoals_per_episode=2, frames_per_subgoal=12, image_size=(16, 16))
    return root


def test_windows_pad_observations_at_the_segment_start_and_mask_actions_past_its_end(synthetic_root):
    from executor_vla.track_data import TrackDataset

    cfg = TrackExecutorConfig(n_obs_steps=2, horizon=16, trace_3d_len=schema.TRACE_3D_LEN, hold_after_end=False)
    ds = TrackDataset(synthetic_root, cfg)
    first_of_second_segment = 12
    w = ds.windows(np.array([first_of_second_segment, first_of_second_segment + 5]))
    np.testing.assert_array_equal(w["obs"][0, 0], w["obs"][0, 1])  # padded with the segment's own first frame
    assert w["action_is_pad"][0].sum() == 16 - 12 and not w["action_is_pad"][0, :12].any()
    np.testing.assert_array_equal(w["action"][0, 12:], np.repeat(w["action"][0, 11:12], 4, axis=0))
    # hold_after_end: past the segment's end the target is "stay put, keep the gripper", trained on (not masked)
    held = TrackDataset(synthetic_root, TrackExecutorConfig(n_obs_steps=2, horizon=16)).windows(
        np.array([first_of_second_segment]))
    assert not held["action_is_pad"].any()
    assert not held["action"][0, 12:, :6].any() and np.all(held["action"][0, 12:, 6] == w["action"][0, 11, 6])
    # the features of a frame are those the executor computes at run time for the same subgoal
    ex = TrackExecutor(cfg)
    rows, mask = ds.segment_trace(first_of_second_segment)
    ex._trace = (rows, mask)
    state = ds.state[first_of_second_segment:first_of_second_segment + 1]
    np.testing.assert_allclose(ex.features(state), ds.features[first_of_second_segment:first_of_second_segment + 1])


def test_the_track_executor_learns_the_synthetic_motion(synthetic_root):
    """A training test that checks something is learned: the action loss falls far below its start."""
    from executor_vla.track_data import TrackDataset

    torch.manual_seed(0)
    cfg = TrackExecutorConfig(head="mse", text_encoder="hash", text_dim=16, hidden_dim=64, cond_dim=64, n_layers=2)
    ds = TrackDataset(synthetic_root, cfg)
    ex = TrackExecutor(cfg, stats=ds.stats()).train()
    emb = torch.from_numpy(ex.text_encoder.encode(ds.texts))
    opt = torch.optim.AdamW(ex.parameters(), lr=1e-3)
    batches = ds.batches(64, seed=0)
    losses = []
    for _ in range(300):
        b = next(batches)
        b["text"] = emb[b["text_id"]]
        loss = ex(b)["action_loss"]
        opt.zero_grad()
        ex(b)["loss"].backward()
        opt.step()
        losses.append(float(loss))
    assert np.mean(losses[-20:]) < 0.1 * np.mean(losses[:5])


@pytest.mark.parametrize("prediction_type", ["sample", "epsilon"])
@pytest.mark.parametrize("steps", [1, 5, 10, 29])
def test_the_fused_ddim_loop_samples_the_same_chunk_as_the_module_path(tmp_path, prediction_type, steps):
    torch.manual_seed(0)
    ex = _executor(prediction_type=prediction_type, num_inference_steps=steps, n_layers=2)
    path = ex.save(tmp_path / "ck")
    module_path = TrackExecutor.from_checkpoint(path)
    module_path._fused = None
    fused = TrackExecutor.from_checkpoint(path)
    assert fused._fused is not None
    obs, text = torch.randn(3, 2, fused.obs_dim), torch.randn(3, 16)
    a, pa = module_path.predict_action_chunk(obs, text, torch.Generator().manual_seed(3))
    b, pb = fused.predict_action_chunk(obs, text, torch.Generator().manual_seed(3))
    # the split input layer sums in another order; with epsilon prediction DDIM's x0 = (x - ...) / sqrt(alpha_bar)
    # multiplies that rounding by up to ~300 at t = T - 1 (squaredcos schedule)
    tol = 1e-5 if prediction_type == "sample" else 1e-3
    torch.testing.assert_close(a, b, atol=tol, rtol=tol)
    torch.testing.assert_close(pa, pb)


def test_the_fused_loop_follows_the_weights_while_training_and_the_module_path_is_used_in_training(tmp_path):
    ex = TrackExecutor.from_checkpoint(_executor().save(tmp_path / "ck"))
    obs, text = torch.randn(1, 2, ex.obs_dim), torch.randn(1, 16)
    with torch.no_grad():
        for p in ex.net.denoiser.parameters():  # an in-place update, as an optimiser step
            p.add_(0.05 * torch.randn_like(p))
    fused, _ = ex.predict_action_chunk(obs, text, torch.Generator().manual_seed(1))
    ex._fused, kept = None, ex._fused
    module, _ = ex.predict_action_chunk(obs, text, torch.Generator().manual_seed(1))
    torch.testing.assert_close(fused, module, atol=1e-5, rtol=1e-5)  # the step table was rebuilt
    ex._fused = kept
    ex.train()
    kept.sample = None  # training mode must not reach the fused loop
    ex.predict_action_chunk(obs, text, torch.Generator().manual_seed(1))


def test_the_fused_loop_is_not_used_where_it_does_not_apply(tmp_path):
    for overrides in ({"inference_scheduler": "DDPM"}, {"head": "mse"}):
        ex = TrackExecutor.from_checkpoint(_executor(**overrides).save(tmp_path / str(overrides)))
        assert ex._fused is None


# ---------------------------------------------------------------- set-point actions
def test_setpoint_windows_convert_back_to_the_recorded_actions_at_the_recorded_states(synthetic_root):
    """action_space="setpoint": the P-law (set-point - grip site) / scale, applied at the states the demonstration
    visited, gives back exactly the delta actions it recorded; past the segment's end the set-point is its last
    grip site (stay put)."""
    from executor_vla.track_data import TrackDataset

    scale = 0.05
    cfg = TrackExecutorConfig(n_obs_steps=2, horizon=16, action_space="setpoint", position_scale_m=scale)
    ds, delta = TrackDataset(synthetic_root, cfg), TrackDataset(synthetic_root, TrackExecutorConfig())
    t = 14  # frame 2 of the second segment (frames 12..23): steps 0..9 lie inside it, 10..15 past its end
    w, d = ds.windows(np.array([t]))["action"][0], delta.windows(np.array([t]))["action"][0]
    origin = ds.state[t, :3]
    for j in range(10):
        np.testing.assert_allclose((origin + w[j, :3] - ds.state[t + j, :3]) / scale, d[j, :3], atol=1e-5)
    np.testing.assert_allclose(w[10:, :3], np.broadcast_to(ds.state[23, :3] - origin, (6, 3)), atol=1e-6)
    np.testing.assert_array_equal(w[:, 3:], d[:, 3:])  # rotation and gripper stay as recorded
    st = ds.stats()  # min/max over the windows' steps, so every training target lies in [-1, 1] once normalised
    allw = ds.windows(ds.train_index)["action"].reshape(-1, 7)
    np.testing.assert_allclose(st.action_min, allw.min(0), atol=1e-6)
    np.testing.assert_allclose(st.action_max, allw.max(0), atol=1e-6)


def test_setpoint_executor_servoes_each_step_to_its_setpoint():
    """Inside a chunk the position action follows the grip site: the same chunk gives a different action when the
    arm lagged, pointing at the same set-point."""
    ex = _executor(head="mse", action_space="setpoint", n_action_steps=4, gripper_hysteresis=None)
    ex.set_subgoal(_subgoal(), TASK)
    p = _obs().proprio
    ex.select_action(_obs())
    target = ex._chunk_origin + ex._queue[0][:3]
    lagged = p.copy()
    lagged[0] -= 0.01  # the arm is 1 cm behind where the chunk assumed
    a = ex.select_action(Observation(images={}, proprio=lagged))
    np.testing.assert_allclose(a[:3], np.clip((target - lagged[:3]) / 0.05, -1, 1), atol=1e-6)


def test_trace_servo_aligns_xy_over_the_contact_point_and_holds_the_descent_until_aligned():
    """trace_servo_m: the pick's contact point is its first closed-gripper point (0.1, 0, 0.9). Within the radius and
    height, x/y become the P-law to its xy and z may not go down while the xy error exceeds the gate; outside, or once
    the gripper has closed, the network's action is untouched."""
    trace = _trace([[0.0, 0.0, 1.0], [0.1, 0.0, 0.95], [0.1, 0.0, 0.9], [0.1, 0.0, 1.0]], grip=[-1, -1, 1, 1])
    sg = Subgoal(id="sg0", skill="pick", args=("obj0",), text="pick up the obj0", trace_3d=trace)
    kw = {"head": "mse", "action_space": "setpoint", "n_action_steps": 8, "gripper_hysteresis": 0.99}
    plain, servo = _executor(**kw), _executor(**kw, trace_servo_m=0.03)
    servo.load_state_dict(plain.state_dict())

    def act(ex, xyz, grip=0.08):
        ex.reset()
        ex.set_subgoal(sg, TASK)
        ex._gripper = -1.0  # open, as at the end of the previous subgoal
        return ex.select_action(Observation(images={}, proprio=np.array([*xyz, *_down_quat(0.0), grip], np.float32)))

    near = (0.09, 0.005, 0.93)  # 11 mm off in xy, 3 cm above the contact point (height limit 0.15 m)
    a_plain, a_servo = act(plain, near), act(servo, near)
    np.testing.assert_allclose(a_servo[:2], [0.01 / 0.05, -0.005 / 0.05], atol=1e-6)
    assert a_servo[2] == pytest.approx(max(float(a_plain[2]), 0.0))
    np.testing.assert_allclose(a_servo[3:], a_plain[3:])
    far = (0.05, 0.0, 0.93)  # 5 cm off: outside the radius
    np.testing.assert_allclose(act(servo, far), act(plain, far))
    high = (0.095, 0.0, 1.06)  # 16 cm above it
    np.testing.assert_allclose(act(servo, high), act(plain, high))
    obs = Observation(images={}, proprio=np.array([*near, *_down_quat(0.0), 0.08], np.float32))
    for ex in (servo, plain):
        ex.reset()
        ex.set_subgoal(sg, TASK)
        ex._gripper = 1.0  # the gripper has closed: the contact is made, the servo is off
        ex.cfg = dataclasses.replace(ex.cfg, gripper_hysteresis=0.99)  # and stays closed whatever the net says
    np.testing.assert_allclose(servo.select_action(obs), plain.select_action(obs))
    with pytest.raises(ConfigError, match="trace_servo_m must be > 0"):
        TrackExecutorConfig(trace_servo_m=0.03)  # delta actions: no set-points to servo


def test_action_space_is_validated():
    with pytest.raises(ConfigError, match="action_space must be one of"):
        TrackExecutorConfig(action_space="velocity")
    with pytest.raises(ConfigError, match="position_scale_m must be > 0"):
        TrackExecutorConfig(position_scale_m=0.0)


def test_executor_track_runs_a_checkpoint_with_track_yaml_training_defaults_left_in_place():
    """``executor=track executor.checkpoint=<dir>``: settings equal to the dataclass default or to the checkpoint's
    own value are not requests; inference settings apply; a network setting that differs from both is refused."""
    from pathlib import Path

    from executor_vla.loading import overrides_for

    shipped = Path(__file__).resolve().parents[2] / "checkpoints" / "stack_three_diffusion"  # hidden_dim 256, setpoint
    node = {"name": "track", "checkpoint": str(shipped), "hidden_dim": 256, "action_space": "delta",
            "trace_servo_m": 0.03, "done_threshold": None}
    assert overrides_for(shipped, node) == {"trace_servo_m": 0.03}
    with pytest.raises(ConfigError, match=r"\['hidden_dim'\] cannot be changed"):
        overrides_for(shipped, {**node, "hidden_dim": 128})


def test_a_retried_pick_is_not_done_at_its_first_step_with_the_gripper_closed_on_nothing():
    """done_at_trace_end_m: a retried pick's trace starts and ends above the object; with the gripper still closed
    from the failed grasp, the grip site is already at the trace's end in the end's gripper state. It is done only
    after the subgoal commanded the change (open, then close); a trace without a change is done on arrival."""
    retry = _trace([[0.0, 0.0, 0.93], [0.0, 0.0, 0.86], [0.0, 0.0, 0.83], [0.0, 0.0, 0.93]], grip=[-1, -1, 1, 1])
    sg = Subgoal(id="sg1", skill="pick", args=("obj0",), text="pick up the obj0", trace_3d=retry)
    ex = _executor(head="mse", action_space="setpoint", gripper_hysteresis=0.0)
    at_end = Observation(images={}, proprio=np.array([0.0, 0.0, 0.93, *_down_quat(0.0), 0.001], np.float32))
    ex.reset()
    ex._gripper, ex._last_grip = 1.0, 1.0  # closed on nothing at the end of the failed attempt
    ex.set_subgoal(sg, TASK)
    ex._chunk_origin = at_end.proprio[:3].copy()
    seen = []
    for grip in (1.0, -1.0, -1.0, 1.0):  # what the network commands: still closed, then open, then close again
        ex._queue.clear()
        ex._queue.extend(np.array([[0, 0, 0, 0, 0, 0, grip]] * 8, np.float32))
        ex.select_action(at_end)
        seen.append(ex._done or ex._at_trace_end(at_end.proprio))
    assert seen == [False, False, False, True]
    hold = _trace([[0.0, 0.0, 0.93], [0.0, 0.0, 0.95]], grip=[1, 1])  # no gripper change along the trace
    ex.set_subgoal(Subgoal(id="sg2", skill="pick", args=("obj0",), text="pick up the obj0", trace_3d=hold), TASK)
    assert ex._at_trace_end(np.array([0.0, 0.0, 0.95, *_down_quat(0.0), 0.001], np.float32))


def test_a_pick_that_turns_the_lifted_object_is_done_only_after_the_turn():
    """done_at_trace_end_rad: nut_assembly's pick lifts the nut and then turns it in place, so the trace's last point
    is where the lift ends. At that point with the grasp yaw the pick is not done; within the tolerance of the last
    yaw (modulo a half turn: the gripper is symmetric) it is; with the option off, position alone decides."""
    turn = _trace([[0.0, 0.0, 0.95], [0.0, 0.0, 0.83], [0.0, 0.0, 0.93], [0.0, 0.0, 0.93]],
                  yaw=np.array([0.3, 0.3, 0.3, 1.8]), grip=[-1, 1, 1, 1])
    sg = Subgoal(id="sg1", skill="pick", args=("obj0",), text="pick up the obj0", trace_3d=turn)

    def done_at(ex, yaw):
        ex.reset()
        ex.set_subgoal(sg, TASK)
        ex._gripper, ex._end_armed = 1.0, True  # closed, as the trace's end asks, after the subgoal closed it
        return ex._at_trace_end(np.array([0.0, 0.0, 0.93, *_down_quat(yaw), 0.01], np.float32))

    ex = _executor(head="mse", action_space="setpoint")
    assert ex.cfg.done_at_trace_end_rad == pytest.approx(0.1)
    assert not done_at(ex, 0.3)  # lifted, not turned yet
    assert done_at(ex, 1.75) and done_at(ex, 1.8 - math.pi)  # turned (the half turn is the same grasp)
    assert done_at(_executor(head="mse", action_space="setpoint", done_at_trace_end_rad=None), 0.3)
    with pytest.raises(ConfigError, match="done_at_trace_end_rad"):
        TrackExecutorConfig(done_at_trace_end_rad=0.0)


def test_a_carry_whose_hand_empties_is_done_and_a_repick_closed_on_nothing_is_not():
    """empty_grip_m: a place starts holding the object (trace starts closed, fingers 4 cm apart); pulled out of the
    hand, the closed fingers shut to 2 mm, and after EMPTY_HAND_STEPS such steps the subgoal is done (the agent then
    verifies and replans). A re-pick that starts closed on nothing never held anything: it is not ended by it."""
    place = _trace([[0.0, 0.0, 0.95], [0.2, 0.0, 0.95], [0.2, 0.0, 0.95]], grip=[1, 1, -1])
    sg = Subgoal(id="sg1", skill="place", args=("obj0", "obj1"), text="put the obj0 on the obj1", trace_3d=place)

    def run(ex, subgoal, openings):
        ex.reset()
        ex._gripper, ex._last_grip = 1.0, 1.0  # closed, as at the end of a pick
        ex.set_subgoal(subgoal, TASK)
        ex._chunk_origin = np.array([0.0, 0.0, 0.95], np.float32)
        seen = []
        for w in openings:
            ex._queue.clear()
            ex._queue.extend(np.array([[0, 0, 0, 0, 0, 0, 1.0]] * 8, np.float32))  # the network keeps it closed
            ex.select_action(Observation(images={}, proprio=np.array([0, 0, 0.95, *_down_quat(0.0), w], np.float32)))
            seen.append(ex.subgoal_done())
        return seen

    ex = _executor(head="mse", action_space="setpoint", done_at_trace_end_m=None)
    assert ex.cfg.empty_grip_m == pytest.approx(0.005)
    assert run(ex, sg, [0.04, 0.035, 0.002, 0.002, 0.002]) == [False, False, False, False, True]
    assert ex.emptied_hand
    assert run(ex, sg, [0.04, 0.002, 0.04, 0.002, 0.002]) == [False] * 5  # a glitch is not three steps running
    assert run(ex, sg, [0.04] + [0.0094] * 4) == [False] * 5  # a bread pinched by its edge (validation seed 702)
    repick = _trace([[0.0, 0.0, 0.9], [0.0, 0.0, 0.95], [0.0, 0.0, 0.85]], grip=[1, -1, 1])
    sg2 = Subgoal(id="sg2", skill="pick", args=("obj0",), text="pick up the obj0", trace_3d=repick)
    assert run(ex, sg2, [0.002] * 5) == [False] * 5 and not ex.emptied_hand
    off = _executor(head="mse", action_space="setpoint", done_at_trace_end_m=None, empty_grip_m=None)
    assert run(off, sg, [0.04, 0.002, 0.002, 0.002, 0.002]) == [False] * 5
    with pytest.raises(ConfigError, match="empty_grip_m"):
        TrackExecutorConfig(empty_grip_m=0.0)
    with pytest.raises(ConfigError, match="empty_grip_m must be a number or null, got 'abc'"):  # from the CLI
        TrackExecutorConfig(empty_grip_m="abc")
    with pytest.raises(ConfigError, match="trace_servo_m must be a number or null"):
        TrackExecutorConfig(trace_servo_m="x")


def test_a_held_object_whose_descent_stalls_near_the_release_point_is_let_go():
    """stall_release_steps: a put_in trace carries the held object (closed) down to its release point (0, 0, 0.52) and
    opens there. The network keeps the gripper closed while the descent is blocked 2.5 cm above (a can on a basket's
    floor, LIBERO validation seed 500); after ``stall_release_steps`` steps without motion near the point the gripper
    opens and stays open. A stall far from the point, a moving grip site, or the option off: no release."""
    put_in = _trace([[0.2, 0.0, 0.70], [0.0, 0.0, 0.52], [0.0, 0.0, 0.52], [0.0, 0.0, 0.62]], grip=[1, 1, -1, -1])
    sg = Subgoal(id="sg1", skill="place", args=("obj0", "obj1"), text="put the obj0 on the obj1", trace_3d=put_in)

    def grips(ex, positions):
        ex.reset()
        ex._gripper, ex._last_grip = 1.0, 1.0  # closed, as at the end of a pick
        ex.set_subgoal(sg, TASK)
        out = []
        for pos in positions:
            ex._chunk_origin = np.asarray(pos, np.float32)
            ex._queue.clear()
            ex._queue.extend(np.array([[0, 0, -0.3, 0, 0, 0, 1.0]] * 8, np.float32))  # presses on, closed
            obs = Observation(images={}, proprio=np.array([*pos, *_down_quat(0.0), 0.064], np.float32))
            out.append(float(ex.select_action(obs)[-1]))
        return out

    ex = _executor(head="mse", action_space="setpoint", stall_release_steps=5)
    blocked = [[0.0, 0.0, 0.545 - 0.0002 * min(k, 3)] for k in range(8)]  # settles 2.5 cm above the point
    assert grips(ex, blocked) == [1.0] * 4 + [-1.0] * 4 and ex.stall_released
    assert grips(ex, [[0.0, 0.0, 0.545]] * 3 + [[0.0, 0.0, 0.62]] * 3) == [1.0] * 6  # 3 still steps, then lifted
    assert grips(ex, [[0.15, 0.0, 0.70]] * 8) == [1.0] * 8 and not ex.stall_released  # stalled far from the point
    assert grips(ex, [[0.0, 0.0, 0.56 - 0.001 * k] for k in range(8)]) == [1.0] * 8  # still descending
    off = _executor(head="mse", action_space="setpoint")
    assert off.cfg.stall_release_steps is None and grips(off, blocked) == [1.0] * 8
    with pytest.raises(ConfigError, match="stall_release_steps"):
        TrackExecutorConfig(stall_release_steps=1)
