"""The learned planner's presence check: at the first plan an instruction object the presence model reads absent is
refused and recorded; its probabilities are kept in memory; bad wiring is named; the registry finds the checkpoint
and renders its cameras."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from grounding_fakes import ListedGrounder

from memory import TaskMemoryV1
from planner_vlm.learned.learned_planner import LearnedPlanner as _LearnedPlanner
from planner_vlm.learned.presence_model import PresenceModel, PresenceModelConfig
from planner_vlm.learned.scene_state import SceneState
from planner_vlm.learned.synthetic import synthetic_calibration
from tandem.core.errors import ConfigError
from tandem.core.types import Observation, TaskSpec
from tandem.runtime.config import LearnedPlannerConfig
from tandem.runtime.registry import presence_checkpoint

OBJECTS = ("milk", "can", "bread")
PREDICATES = tuple(f"{p}({o})" for o in OBJECTS for p in ("grasped", "in_bin"))
BINS = TaskSpec(name="pick_place_bins", instruction="put the milk, the can and the bread into their bins",
                objects=OBJECTS, max_steps=1150, skills={"pick": "grasped({0})", "place": "in_bin({0})"},
                goals=tuple(f"in_bin({o})" for o in OBJECTS),
                skill_texts={"pick": "pick up the {0}", "place": "place the {0} into its bin"})


def LearnedPlanner(*args, **kwargs):  # noqa: N802 - the planner under test, reading the tests' instructions
    kwargs.setdefault("grounder", ListedGrounder(BINS))
    return _LearnedPlanner(*args, **kwargs)


@dataclass(frozen=True)
class _Cfg:
    objects: tuple[str, ...] = OBJECTS
    predicates: tuple[str, ...] = PREDICATES
    camera: str = "agentview"


class SureStateModel:
    """Finds every object sharply, nothing held, no goal met."""

    def __init__(self) -> None:
        self.cfg = _Cfg()
        self.calibration = synthetic_calibration((32, 32))

    def predict(self, observation: Observation, use_depth: bool = True) -> SceneState:
        kp = np.zeros((3, 2, 3))
        for i in range(3):
            kp[i, 0] = [0.0, -0.1 + 0.1 * i, 0.83]
            kp[i, 1] = kp[i, 0] + [0.03, 0.0, 0.0]
        return SceneState(objects=OBJECTS, predicates=PREDICATES, probabilities=np.full(len(PREDICATES), 0.01),
                          keypoints_px=self.calibration.project(kp.reshape(-1, 3)).reshape(3, 2, 2), keypoints_3d=kp,
                          object_confidence=np.ones(3), scene_confidence=1.0, heatmap_entropy=np.zeros((3, 2)))


def _presence(**below: float) -> PresenceModel:
    """An untrained presence model over agentview and wrist at 32 px whose thresholds say who reads absent: a
    threshold of 0.9999 is above any read of an untrained net, 1e-6 below it."""
    cfg = PresenceModelConfig(objects=("milk", "can", "bread"), cameras=("agentview", "wrist"), image_size=(32, 32),
                              channels=(4, 4, 4, 4), hidden=4)
    return PresenceModel(cfg, absent_below={o: below.get(o, 1e-6) for o in cfg.objects})


def _obs(cameras=("agentview", "wrist"), step: int = 0) -> Observation:
    return Observation(images={c: np.zeros((32, 32, 3), np.uint8) for c in cameras},
                       proprio=np.array([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08]), step=step)


def _plan(presence: PresenceModel | None, observation: Observation, **kw):
    planner, memory = LearnedPlanner(SureStateModel(), presence_model=presence, **kw), TaskMemoryV1()
    planner.reset(BINS)
    memory.start_episode(BINS)
    return planner, memory, planner.plan(observation, memory)


def test_an_object_the_presence_model_reads_absent_is_refused_and_recorded() -> None:
    planner, memory, plan = _plan(_presence(can=0.9999), _obs())
    assert plan.remaining == [] and plan.rationale.startswith("refused")
    refused = [e for e in memory.events() if e["kind"] == "refused"]
    assert refused[0]["objects"] == ["can"] and "presence" in refused[0]["reason"]
    assert any("absent" in f for f in memory.view()["facts"]["can"])
    presence = [e for e in memory.events() if e["kind"] == "presence"]
    assert set(presence[0]["probabilities"]) == {"milk", "can", "bread"}
    assert set(planner.last_presence) == {"milk", "can", "bread"}


def test_objects_read_present_are_planned_and_the_check_runs_at_the_first_plan_only() -> None:
    planner, memory, plan = _plan(_presence(), _obs())
    assert plan.remaining and not [e for e in memory.events() if e["kind"] == "refused"]
    planner.presence_model = _presence(milk=0.9999, can=0.9999, bread=0.9999)
    assert planner.plan(_obs(step=50), memory).remaining  # later plans never refuse on presence
    assert len([e for e in memory.events() if e["kind"] == "presence"]) == 1


def test_the_check_is_off_with_the_absent_thresholds() -> None:
    _, memory, plan = _plan(_presence(can=0.9999), _obs(), use_absent_thresholds=False)
    assert plan.remaining and not [e for e in memory.events() if e["kind"] in ("refused", "presence")]


def test_an_observation_without_the_presence_camera_is_a_named_config_error() -> None:
    with pytest.raises(ConfigError, match="no 'wrist' image"):
        _plan(_presence(), _obs(cameras=("agentview",)))


def test_the_registry_finds_the_shipped_presence_checkpoint_and_honours_the_switches(tmp_path) -> None:
    assert presence_checkpoint(LearnedPlannerConfig(), "stack_three") is None  # none shipped there
    shipped = presence_checkpoint(LearnedPlannerConfig(), "pick_place_bins")
    assert shipped is not None and (shipped / "config.json").is_file()
    assert PresenceModel.from_checkpoint(shipped).cfg.cameras == ("workcell", "wrist")
    assert presence_checkpoint(LearnedPlannerConfig(use_presence=False), "pick_place_bins") is None
    assert presence_checkpoint(LearnedPlannerConfig(use_absent_thresholds=False), "pick_place_bins") is None
    with pytest.raises(ConfigError, match="presence_checkpoint"):
        presence_checkpoint(LearnedPlannerConfig(presence_checkpoint=str(tmp_path / "nowhere")), "pick_place_bins")
    for off in ({"use_presence": False}, {"use_absent_thresholds": False}):  # a checkpoint given but unused
        with pytest.raises(ConfigError, match=f"{next(iter(off))} is false"):
            presence_checkpoint(LearnedPlannerConfig(presence_checkpoint=str(shipped), **off), "pick_place_bins")


def test_the_presence_model_replaces_the_depth_check_and_its_cameras_are_rendered() -> None:
    from tandem.runtime.config import StackConfig, load
    from tandem.runtime.registry import perception_depth, presence_cameras

    def stack(**planner):
        return load(StackConfig, {"task": {"name": "pick_place_bins"}, "goals": {"name": "none"},
                                  "planner": {"name": "learned", **planner}, "verifier": {"name": "oracle"},
                                  "executor": {"name": "scripted"}})

    assert presence_cameras(stack()) == ("workcell", "wrist")
    assert not perception_depth(stack())  # the shipped presence model supersedes the depth absent check
    assert perception_depth(stack(use_presence=False))  # without it, the state checkpoint's support_z_m asks depth
    assert presence_cameras(stack(use_presence=False)) == ()


def test_a_presence_checkpoint_of_another_task_is_named_before_the_env_is_built() -> None:
    from tandem.runtime.config import StackConfig, load
    from tandem.runtime.registry import SHIPPED_CHECKPOINTS, presence_cameras

    cfg = load(StackConfig, {"task": {"name": "stack_three"}, "goals": {"name": "none"},
                             "planner": {"name": "learned",
                                         "presence_checkpoint": str(SHIPPED_CHECKPOINTS / "presence/pick_place_bins")},
                             "verifier": {"name": "oracle"}, "executor": {"name": "scripted"}})
    with pytest.raises(ConfigError, match="trained for another task"):  # was: "unknown camera 'workcell'"
        presence_cameras(cfg)


@pytest.mark.parametrize("planner, verifier, executor", [
    ("instruction", "oracle_task", {"name": "diffusion", "checkpoint": "checkpoints/flat_state/stack_three"}),
    ("oracle", "learned", {"name": "scripted"}),
])
def test_stacks_without_a_learned_planner_have_no_presence_cameras(planner, verifier, executor) -> None:
    from tandem.runtime.config import StackConfig, load
    from tandem.runtime.registry import perception_camera, presence_cameras

    cfg = load(StackConfig, {"task": {"name": "stack_three"}, "goals": {"name": "none"}, "planner": {"name": planner},
                             "verifier": {"name": verifier}, "executor": executor})
    assert perception_camera(cfg) is not None  # the env builder asks for presence cameras of such stacks too
    assert presence_cameras(cfg) == ()


def test_without_a_support_surface_the_depth_check_stays_off_even_with_depth() -> None:
    obs = _obs()
    obs = Observation(images=obs.images, proprio=obs.proprio, step=0,
                      depth={"agentview": np.full((32, 32), 0.5, np.float32)})  # a floor right under the camera
    _, memory, plan = _plan(None, obs)  # SureStateModel records no support_z
    assert plan.remaining and not [e for e in memory.events() if e["kind"] == "refused"]


def test_a_presence_model_of_another_task_is_a_named_config_error() -> None:
    cfg = PresenceModelConfig(objects=("red", "green"), cameras=("agentview",), image_size=(32, 32),
                              channels=(4, 4, 4, 4), hidden=4)
    with pytest.raises(ConfigError, match="another task"):
        _plan(PresenceModel(cfg), _obs())
