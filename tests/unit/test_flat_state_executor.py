"""The flat baseline with the learned high level's perception: a track executor with ``scene_input="objects_3d"``.

Features (objects' keypoints relative to the grip site, in the checkpoint's object order), the dataset loader, the
run-time reader (refusals: no reader, an oracle reader, another vocabulary, a missing camera), the runtime wiring
(the state model attached by the registry, the env rendering its camera, ``{task}`` checkpoints, the eval variant)
and a tiny learning problem that only the objects' keypoints make learnable.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from test_track_executor import _down_quat

from executor_vla.object_features import OBJECT_FEATURES, OBJECT_FINE_FEATURES, object_features
from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_data import TrackDataset
from executor_vla.track_features import config_feature_dim, frame_features, track_features
from executor_vla.track_policy import TrackExecutor
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError
from tandem.core.privileged import observation_for
from tandem.core.protocols import ObjectKeypointReader
from tandem.core.types import Observation, Subgoal, TaskSpec

torch.set_num_threads(1)
REPO = Path(__file__).resolve().parents[2]
STATE_CKPT = REPO / "checkpoints" / "state" / "stack_three"
OBJECTS = ("red", "green", "blue")
TASK = TaskSpec(name="stack_three", instruction="stack the red cube on the green cube", objects=OBJECTS,
                max_steps=50)
WHOLE_TASK = Subgoal(id="task", skill="task", args=(), text=TASK.instruction)


def _keypoints(origins: np.ndarray, yaws: np.ndarray) -> np.ndarray:
    """``(O, 2, 3)``: origins ``(O, 3)`` and the point 3 cm along each yaw."""
    axis = np.stack([np.cos(yaws), np.sin(yaws), np.zeros_like(yaws)], axis=1)
    return np.stack([origins, origins + schema.KEYPOINT_OFFSET_M * axis], axis=1)


# ---------------------------------------------------------------- features
def test_object_features_are_the_keypoints_relative_to_the_grip_site_in_the_given_order():
    eef, grip_yaw = np.array([0.1, -0.2, 0.9]), 0.3
    proprio = np.array([[*eef, *_down_quat(grip_yaw), 0.04]])
    origins = np.array([[0.5, 0.0, 0.82], [0.4, 0.1, 0.82], [0.6, -0.1, 0.87]])
    yaws = np.array([0.0, 1.0, -2.0])
    orders = (4, 1, 2)
    kp = _keypoints(origins, yaws)
    f = object_features(proprio, kp, orders, fine_scale_m=0.02)
    per = OBJECT_FEATURES + OBJECT_FINE_FEATURES
    assert f.shape == (1, 3 * per) and per == 8
    for o in range(3):
        row = f[0, o * per:(o + 1) * per]
        np.testing.assert_allclose(row[0:3], origins[o] - eef, atol=1e-6)  # origin relative to the grip site
        d = orders[o] * (yaws[o] - grip_yaw)  # yaw difference, modulo the object's symmetry
        np.testing.assert_allclose(row[3:5], [math.sin(d), math.cos(d)], atol=1e-5)
        np.testing.assert_allclose(row[5:8], np.tanh((origins[o] - eef) / 0.02), atol=1e-5)
    # the order of the objects is the order given: swapping two objects swaps their blocks
    swapped = object_features(proprio, kp[[1, 0, 2]], (1, 4, 2), fine_scale_m=0.02)
    np.testing.assert_allclose(swapped[0, :per], f[0, per:2 * per])
    # a state model reads a cube's second keypoint at any of its 4 symmetric positions: the features do not change
    for turn in range(1, 4):
        turned = _keypoints(origins, yaws + np.array([turn * np.pi / 2, 0.0, (turn % 2) * np.pi]))
        np.testing.assert_allclose(object_features(proprio, turned, orders, 0.02), f, atol=1e-5)
    # ... while a turn the symmetry does not allow does
    plain = object_features(proprio, kp, orders)
    assert not np.allclose(object_features(proprio, _keypoints(origins, yaws + 0.3), orders), plain, atol=0.05)


def test_object_features_refuse_bad_shapes_and_non_finite_keypoints():
    proprio = np.array([[0, 0, 1, *_down_quat(0.0), 0.04]] * 2)
    with pytest.raises(ValueError, match=r"\(T=2, O, 2, 3\)"):
        object_features(proprio, np.zeros((3, 3)), (1,))
    with pytest.raises(ValueError, match="NaN"):
        object_features(proprio, np.full((1, 2, 3), np.nan), (1,))
    with pytest.raises(ValueError, match="one order >= 1 per object"):
        object_features(proprio, np.zeros((2, 2, 3)), (4,))
    with pytest.raises(ConfigError, match="scene_symmetries"):
        TrackExecutorConfig(scene_input="objects_3d", scene_objects=OBJECTS, scene_symmetries=(4, 4))


def test_frame_features_append_the_objects_to_the_flat_features():
    cfg = TrackExecutorConfig(conditioning_source="instruction", scene_input="objects_3d", scene_objects=OBJECTS,
                              scene_symmetries=(4, 4, 4), trace_3d_len=4)
    proprio = np.array([[0.0, 0.0, 1.0, *_down_quat(0.2), 0.04], [0.01, 0.0, 1.0, *_down_quat(0.2), 0.04]])
    rows, mask = np.zeros((4, 5)), np.zeros(4)
    kp = _keypoints(np.array([[0.5, 0, 0.8], [0.4, 0.1, 0.8], [0.6, -0.1, 0.8]]), np.zeros(3))
    f = frame_features(cfg, proprio, rows, mask, keypoints_3d=kp)
    base = track_features(proprio, rows, mask, fine_scale_m=cfg.fine_scale_m)
    assert f.shape == (2, config_feature_dim(cfg)) == (2, base.shape[1] + 3 * 8)
    np.testing.assert_array_equal(f[:, :base.shape[1]], base)
    np.testing.assert_allclose(f[:, base.shape[1]:], object_features(proprio, kp, (4, 4, 4), cfg.fine_scale_m))
    with pytest.raises(Exception, match="none were given"):
        frame_features(cfg, proprio, rows, mask)
    with pytest.raises(ValueError, match="do not hold the 3 objects"):
        frame_features(cfg, proprio, rows, mask, keypoints_3d=kp[:2])
    with pytest.raises(ConfigError, match="scene_input"):
        TrackExecutorConfig(scene_input="objects_2d")


# ---------------------------------------------------------------- dataset
@pytest.fixture(scope="module")
def labelled_root(tmp_path_factory):
    from executor_vla.synthetic import make_synthetic_dataset

    root = tmp_path_factory.mktemp("flat_state") / "ds"
    make_synthetic_dataset(root, n_episodes=16, subgoals_per_episode=1, frames_per_subgoal=12, image_size=(16, 16),
                           labels=True)
    return root


def _flat_cfg(**kw) -> TrackExecutorConfig:
    return TrackExecutorConfig(**{"conditioning_source": "instruction", "scene_input": "objects_3d", "head": "mse",
                                  "text_encoder": "hash", "text_dim": 16, "hidden_dim": 64, "cond_dim": 64,
                                  "n_layers": 2, **kw})


def test_the_dataset_features_each_frame_against_its_own_labels_in_the_label_order(labelled_root):
    from executor_vla.dataset_inspect import load_tables

    ds = TrackDataset(labelled_root, _flat_cfg())
    assert ds.scene_objects == ("obj0", "obj1", "obj2", "obj3") and ds.cfg.scene_objects == ds.scene_objects
    labels = load_tables(labelled_root).columns[schema.LABEL_KEYPOINTS_3D_KEY].reshape(-1, 4, 2, 3)
    n_base = config_feature_dim(TrackExecutorConfig(conditioning_source="instruction"))
    assert ds.cfg.scene_orders() == (1, 1, 1, 1)  # no symmetries given: the labels' keypoints as they are
    np.testing.assert_allclose(ds.features[:, n_base:], object_features(ds.state, labels, (1,) * 4, 0.02), atol=1e-6)
    # a checkpoint's own order wins: the labels are reordered by name
    order = ("obj2", "obj0")
    sub = TrackDataset(labelled_root, _flat_cfg(scene_objects=order, scene_symmetries=(4, 2)))
    np.testing.assert_allclose(sub.features[:, n_base:], object_features(ds.state, labels[:, [2, 0]], (4, 2), 0.02),
                               atol=1e-6)
    with pytest.raises(DatasetSchemaError, match=r"name \['cube'\]"):
        TrackDataset(labelled_root, _flat_cfg(scene_objects=("obj0", "cube")))


def test_a_dataset_without_object_labels_is_refused(tmp_path):
    from executor_vla.synthetic import make_synthetic_dataset

    make_synthetic_dataset(tmp_path / "plain", n_episodes=1, image_size=(16, 16))
    with pytest.raises(DatasetSchemaError, match="labels.keypoints_3d"):
        TrackDataset(tmp_path / "plain", _flat_cfg())


def test_the_flat_policy_learns_where_the_instruction_sends_it_only_with_the_objects(labelled_root):
    """A tiny learning problem: each episode goes to the object its instruction names, placed at random. The
    action loss of the policy that sees the objects falls far below its start, and far below that of the same
    policy without them (which cannot know where the object is)."""

    def train(cfg: TrackExecutorConfig) -> list[float]:
        torch.manual_seed(0)
        ds = TrackDataset(labelled_root, cfg)
        ex = TrackExecutor(ds.cfg, stats=ds.stats()).train()
        emb = torch.from_numpy(ex.text_encoder.encode(ds.texts))
        opt = torch.optim.AdamW(ex.parameters(), lr=1e-3)
        batches, losses = ds.batches(64, seed=0), []
        for _ in range(400):
            b = next(batches)
            b["text"] = emb[b["text_id"]]
            out = ex(b)
            opt.zero_grad()
            out["loss"].backward()
            opt.step()
            losses.append(float(out["action_loss"]))
        return losses

    seeing = train(_flat_cfg())
    blind = train(_flat_cfg(scene_input="none"))
    assert np.mean(seeing[-20:]) < 0.1 * np.mean(seeing[:5]), seeing[::50]
    assert np.mean(seeing[-20:]) < 0.5 * np.mean(blind[-20:]), (seeing[-5:], blind[-5:])


# ---------------------------------------------------------------- run time
class FakeReader:
    """An ObjectKeypointReader over fixed keypoints (rows in ``objects`` order) that records what it was given."""

    is_oracle = False
    camera = "agentview"

    def __init__(self, objects=OBJECTS, keypoints=None, symmetries=None):
        self.objects = tuple(objects)
        self.symmetries = dict.fromkeys(self.objects, 4) if symmetries is None else symmetries
        self.keypoints = keypoints if keypoints is not None else _keypoints(
            np.array([[0.5 + 0.1 * i, 0.05 * i, 0.82] for i in range(len(objects))]), np.zeros(len(objects)))
        self.seen: list[Observation] = []

    def object_keypoints_3d(self, observation):
        self.seen.append(observation)
        return self.keypoints


def _scene_executor(**kw) -> TrackExecutor:
    cfg = TrackExecutorConfig(**{"conditioning_source": "instruction", "scene_input": "objects_3d",
                                 "scene_objects": OBJECTS, "scene_symmetries": (4, 4, 4), "trace_3d_len": 4, "text_encoder": "hash",
                                 "text_dim": 16, "hidden_dim": 32, "cond_dim": 32, "n_layers": 1,
                                 "tasks": ("stack_three",), **kw})
    return TrackExecutor(cfg).eval()


def _obs(cameras=("agentview",), privileged=None) -> Observation:
    return Observation(images={c: np.zeros((84, 84, 3), np.uint8) for c in cameras},
                       proprio=np.array([0.5, 0.0, 1.0, *_down_quat(0.0), 0.04], np.float32), privileged=privileged)


def test_an_executor_without_a_reader_refuses_at_set_subgoal():
    ex = _scene_executor()
    with pytest.raises(ConfigError, match="no reader for them.*state_checkpoint"):
        ex.set_subgoal(WHOLE_TASK, TASK)
    with pytest.raises(ConfigError, match="takes no scene input"):
        _scene_executor(scene_input="none", scene_objects=(), scene_symmetries=()).attach_scene_reader(FakeReader())


def test_oracle_readers_and_other_vocabularies_are_refused():
    ex = _scene_executor()
    oracle = FakeReader()
    oracle.is_oracle = True
    with pytest.raises(ConfigError, match="is an oracle"):
        ex.attach_scene_reader(oracle)
    with pytest.raises(ConfigError, match=r"missing \['blue'\]"):
        ex.attach_scene_reader(FakeReader(objects=("red", "green", "yellow")))
    # features trained on exact yaws (order 1) cannot take a reader that knows a cube's yaw only modulo a quarter turn
    with pytest.raises(ConfigError, match=r"more ambiguously.*'red': \(4, 1\)"):
        _scene_executor(scene_symmetries=(1, 4, 4)).attach_scene_reader(FakeReader())
    _scene_executor(scene_symmetries=(4, 4, 4)).attach_scene_reader(FakeReader(symmetries={}))  # exact: fine

    class NoCamera:
        is_oracle, objects, symmetries = False, OBJECTS, {}

        def object_keypoints_3d(self, observation):
            return np.zeros((3, 2, 3))

    with pytest.raises(ConfigError, match="lacks camera"):
        ex.attach_scene_reader(NoCamera())


def test_a_missing_camera_is_refused_naming_the_cameras_there():
    ex = _scene_executor()
    ex.attach_scene_reader(FakeReader())
    ex.set_subgoal(WHOLE_TASK, TASK)
    with pytest.raises(ConfigError, match=r"'agentview' camera, but the observation has \['wrist'\]"):
        ex.select_action(_obs(cameras=("wrist",)))


def test_the_reader_is_called_per_chunk_its_objects_reordered_and_privileged_state_never_read():
    ex = _scene_executor(n_action_steps=4)
    reordered = ("blue", "red", "green", "yellow")  # the reader's own order, with an object the executor ignores
    kp_checkpoint_order = _keypoints(np.array([[0.5, 0.0, 0.82], [0.6, 0.1, 0.82], [0.4, -0.1, 0.87]]),
                                     np.array([0.1, 0.2, 0.3]))
    reader_kp = np.concatenate([kp_checkpoint_order[[2, 0, 1]], np.zeros((1, 2, 3))])
    reader = FakeReader(objects=reordered, keypoints=reader_kp)
    ex.attach_scene_reader(reader)
    assert isinstance(reader, ObjectKeypointReader) and ex.scene_reader is reader
    ex.set_subgoal(WHOLE_TASK, TASK)
    seen_features: list[np.ndarray] = []
    orig = ex.features
    ex.features = lambda proprio, kp=None: (seen_features.append(kp), orig(proprio, kp))[1]
    # what the agent hands a non-oracle executor: privileged state withheld (any read raises)
    guarded = observation_for(ex, _obs(privileged={"objects": "the simulator's truth"}), "executor")
    actions = [ex.select_action(guarded) for _ in range(8)]
    assert all(a.shape == (7,) and np.all(np.isfinite(a)) for a in actions)
    assert len(reader.seen) == 2  # one reading per chunk of 4 actions
    np.testing.assert_allclose(seen_features[0], kp_checkpoint_order, atol=1e-6)


def test_a_scene_checkpoint_round_trips_and_old_checkpoints_load_without_scene_input(tmp_path):
    ex = _scene_executor()
    again = TrackExecutor.from_checkpoint(ex.save(tmp_path / "ck", command="test"))
    assert again.cfg.scene_input == "objects_3d" and again.cfg.scene_objects == OBJECTS
    assert again.cfg.scene_symmetries == (4, 4, 4)
    assert again.scene_reader is None  # a reader is wired at run time, never saved
    shipped = TrackExecutor.from_checkpoint(REPO / "checkpoints" / "stack_three_diffusion")
    assert shipped.cfg.scene_input == "none" and shipped.cfg.scene_objects == () == shipped.cfg.scene_symmetries


# ---------------------------------------------------------------- the learned state model as the reader
def test_the_state_model_is_an_object_keypoint_reader_that_never_reads_privileged_state():
    from planner_vlm.learned.state_model import StateModel

    model = StateModel.from_checkpoint(STATE_CKPT)
    assert isinstance(model, ObjectKeypointReader) and not model.is_oracle
    assert model.camera == "agentview" and model.objects == OBJECTS and model.symmetries == dict.fromkeys(OBJECTS, 4)
    rng = np.random.default_rng(0)
    obs = Observation(images={"agentview": rng.integers(0, 255, (84, 84, 3), dtype=np.uint8)},
                      proprio=np.array([0.5, 0.0, 1.0, *_down_quat(0.0), 0.04], np.float32),
                      privileged={"objects": "the simulator's truth"})
    kp = model.object_keypoints_3d(observation_for(model, obs, "executor's scene reader"))
    assert kp.shape == (3, 2, 3) and np.all(np.isfinite(kp))
    np.testing.assert_allclose(kp, model.predict(obs).keypoints_3d)
    with pytest.raises(ConfigError, match="agentview"):
        model.object_keypoints_3d(Observation(images={}, proprio=obs.proprio))


# ---------------------------------------------------------------- runtime wiring
class RobotLikeEnv:
    action_low = -np.ones(7, np.float32)
    action_high = np.ones(7, np.float32)


def _ctx(planner="instruction", task="stack_three"):
    from tandem.runtime.registry import BuildContext

    return BuildContext(env=RobotLikeEnv(), simulated=False, task=task, planner=planner)


@pytest.fixture(scope="module")
def scene_ckpt(tmp_path_factory):
    root = tmp_path_factory.mktemp("scene_ck")
    return _scene_executor().save(root / "stack_three", command="test")


def test_the_registry_attaches_the_learned_state_model_to_a_scene_checkpoint(scene_ckpt):
    from planner_vlm.learned.state_model import StateModel
    from tandem.runtime import registry

    spec = {"name": "diffusion", "checkpoint": str(scene_ckpt.parent / "{task}"), "state_checkpoint": str(STATE_CKPT)}
    ex = registry.EXECUTORS.build(spec, _ctx())
    assert isinstance(ex.scene_reader, StateModel) and ex.scene_reader.objects == OBJECTS
    ex.set_subgoal(WHOLE_TASK, TASK)
    assert ex.select_action(_obs()).shape == (7,)
    # a state model of other objects is refused, naming both vocabularies
    other = json.loads((STATE_CKPT / "config.json").read_text())
    other_dir = scene_ckpt.parent / "other_state"
    other_dir.mkdir()
    other["model"]["objects"] = ["milk", "bread", "cereal"]
    other["model"]["symmetries"] = {"milk": 1, "bread": 2, "cereal": 2}
    (other_dir / "config.json").write_text(json.dumps(other))
    (other_dir / "model.safetensors").write_bytes((STATE_CKPT / "model.safetensors").read_bytes())
    with pytest.raises(ConfigError, match=r"trained on the keypoints of \['red', 'green', 'blue'\].*milk"):
        registry.EXECUTORS.build({**spec, "state_checkpoint": str(other_dir)}, _ctx())
    # a missing state checkpoint is named
    with pytest.raises(Exception, match="state model checkpoint file missing"):
        registry.EXECUTORS.build({**spec, "state_checkpoint": str(scene_ckpt.parent / "nowhere")}, _ctx())
    # executors without scene input get no state model
    plain = registry.EXECUTORS.build({"name": "diffusion", "checkpoint": str(REPO / "checkpoints" /
                                                                             "stack_three_diffusion")}, _ctx("oracle"))
    assert plain.scene_reader is None


def test_the_env_renders_the_state_model_camera_for_a_scene_checkpoint(scene_ckpt):
    from tandem.runtime.config import StackConfig, load
    from tandem.runtime.registry import perception_camera, resolve_checkpoint

    def stack(checkpoint: str) -> StackConfig:
        return load(StackConfig, {"task": {"name": "stack_three"}, "planner": {"name": "instruction"},
                                  "verifier": {"name": "oracle_task"}, "goals": {"name": "none"},
                                  "executor": {"name": "diffusion", "checkpoint": checkpoint}})

    cfg = stack(str(scene_ckpt.parent / "{task}"))
    assert resolve_checkpoint(cfg.executor, "stack_three", "instruction") == scene_ckpt
    assert perception_camera(cfg) == ("agentview", (84, 84))
    assert perception_camera(stack(str(REPO / "checkpoints" / "stack_three_diffusion"))) is None


def test_the_perception_camera_comes_from_the_first_readable_state_checkpoint(tmp_path):
    from tandem.runtime.config import StackConfig, load
    from tandem.runtime.registry import perception_camera

    good = tmp_path / "state_48"
    good.mkdir()
    (good / "config.json").write_text(json.dumps({"model": {"camera": "frontview", "image_size": [48, 48]}}))

    def stack(planner_ckpt: str, verifier_ckpt: str) -> StackConfig:
        return load(StackConfig, {"task": {"name": "stack_three"}, "goals": {"name": "none"},
                                  "planner": {"name": "learned", "state_checkpoint": planner_ckpt},
                                  "verifier": {"name": "learned", "state_checkpoint": verifier_ckpt},
                                  "executor": {"name": "scripted"}})

    # an unreadable planner checkpoint does not hide the verifier's camera (it used to return None at once)
    assert perception_camera(stack(str(tmp_path / "nowhere"), str(good))) == ("frontview", (48, 48))
    assert perception_camera(stack(str(tmp_path / "nowhere"), str(tmp_path / "nowhere_either"))) is None


def test_the_flat_state_eval_variant_validates():
    from tandem.evaluation.suite import Variant

    variants = OmegaConf.to_container(OmegaConf.load(REPO / "configs" / "eval.yaml")["variants"])
    v = Variant.from_config("flat_state", variants["flat_state"])
    assert (v.planner["name"], v.verifier["name"], v.executor["name"], v.goals["name"]) == (
        "instruction", "oracle_task", "diffusion", "none")
    assert v.executor["checkpoint"] == "checkpoints/flat_state/{task}"
    assert v.agent == variants["flat"]["agent"]
    v.validate()
    # the shipped stack_three checkpoint is the one the variant finds, and it is flat with scene input
    from tandem.runtime.config import StackConfig, load
    from tandem.runtime.registry import checkpoint_conditioning, checkpoint_scene_input, resolve_checkpoint

    cfg = load(StackConfig, {"task": {"name": "stack_three"}, **{k: getattr(v, k) for k in (
        "planner", "verifier", "executor", "goals")}})
    path = resolve_checkpoint(cfg.executor, "stack_three", "instruction")
    assert path.resolve() == (REPO / "checkpoints" / "flat_state" / "stack_three").resolve()
    assert checkpoint_conditioning(path) == "instruction" and checkpoint_scene_input(path) == "objects_3d"
