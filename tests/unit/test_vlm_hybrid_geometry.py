"""``planner=vlm planner.geometry=learned``: the VLM decides the subgoals, the learned state and trace models (here
tiny fakes behind the real :class:`LearnedGeometry`) give the next one its 3-D trace, as ``planner=learned`` does;
``geometry=image`` keeps the model's 2-D trace; a bad ``geometry`` is refused naming the key."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from grounding_fakes import ListedGrounder

from memory import TaskMemoryV1
from planner_vlm.clients.scripted_client import ScriptedVLMClient
from planner_vlm.factory import make_vlm_planner
from planner_vlm.learned.geometry import LearnedGeometry
from planner_vlm.learned.learned_planner import LearnedPlanner
from planner_vlm.learned.scene_state import SceneState
from planner_vlm.learned.synthetic import synthetic_calibration
from planner_vlm.vlm_planner import GEOMETRIES, VLMPlanner
from tandem.core.errors import ConfigError, PrivilegedAccessError
from tandem.core.privileged import observation_for
from tandem.core.types import Observation, Subgoal, TaskSpec, Trace3D
from tandem.runtime import registry
from tandem.runtime.config import VLM_GEOMETRIES, DemoConfig, VLMPlannerConfig, load

OBJECTS = ("red", "green", "blue")
PREDICATES = tuple(f"grasped({o})" for o in OBJECTS) + tuple(f"on({x},{y})" for x in OBJECTS for y in OBJECTS
                                                             if x != y)
TASK = TaskSpec(
    name="stack_three", instruction="stack red on green, then blue on red", objects=OBJECTS, max_steps=900,
    skills={"pick": "grasped({0})", "stack": "on({0},{1})"}, goals=("on(red,green)", "on(blue,red)"),
    skill_texts={"pick": "pick up the {0} cube", "stack": "stack the {0} cube on the {1} cube"},
    cameras=("agentview",), image_size=(84, 84),
)
#: Where the fake state model reads each object's origin (m, world frame).
ORIGINS = {"red": [0.0, -0.1, 0.83], "green": [0.0, 0.0, 0.83], "blue": [0.0, 0.1, 0.83]}


@dataclass(frozen=True)
class _StateCfg:
    objects: tuple[str, ...] = OBJECTS
    predicates: tuple[str, ...] = PREDICATES
    camera: str = "agentview"


class FakeStateModel:
    """Reads every object at :data:`ORIGINS` (keypoints ``(3, 2, 3)`` m), nothing grasped, and keeps what it saw."""

    def __init__(self):
        self.cfg = _StateCfg()
        self.calibration = synthetic_calibration((84, 84))
        self.seen: list[Observation] = []

    def predict(self, observation: Observation, use_depth: bool = True) -> SceneState:
        self.seen.append(observation)
        kp = np.array([[ORIGINS[o], np.add(ORIGINS[o], [0.03, 0.0, 0.0])] for o in OBJECTS])
        return SceneState(objects=OBJECTS, predicates=PREDICATES, probabilities=np.full(len(PREDICATES), 0.01),
                          keypoints_px=self.calibration.project(kp.reshape(-1, 3)).reshape(3, 2, 2),
                          keypoints_3d=kp, object_confidence=np.ones(3), scene_confidence=1.0,
                          heatmap_entropy=np.zeros((3, 2)), object_uncertainty=np.zeros(3))


@dataclass(frozen=True)
class _TraceCfg:
    skills: tuple[str, ...] = ("pick", "stack")
    arg_names: tuple[str, ...] = OBJECTS
    symmetries: dict = field(default_factory=lambda: dict.fromkeys(OBJECTS, 4))


class FakeTraceModel:
    """From the gripper to 10 cm above the last argument's origin, then onto it (3 rows); a pick closes there."""

    def __init__(self, cfg: _TraceCfg | None = None):
        self.cfg = cfg or _TraceCfg()
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def predict(self, keypoints_3d, proprio, skill, args):
        self.calls.append((skill, tuple(args)))
        target = keypoints_3d[OBJECTS.index(args[-1]), 0]
        grip = [-1.0, -1.0, 1.0] if skill == "pick" else [1.0, 1.0, -1.0]
        return Trace3D(points=np.stack([proprio[:3], target + [0, 0, 0.1], target]), yaw=np.zeros(3), gripper=grip)


def obs(step: int = 0, eef=(0.0, 0.0, 1.0)) -> Observation:
    proprio = np.array([*eef, 0.0, 1.0, 0.0, 0.0, 0.08])
    return Observation(images={"agentview": np.zeros((84, 84, 3), np.uint8)}, proprio=proprio, step=step,
                       privileged={"objects": {"red": {"pos": [9.0, 9.0, 9.0]}}})


def sg(skill: str, *args: str) -> dict:
    return {"skill": skill, "args": list(args), "text": f"{skill} {' '.join(args)}"}


def reply(done=(), remaining=(), trace=((5, 6), (40, 50))) -> str:
    return json.dumps({"rationale": "scripted", "done": [sg(*s) for s in done],
                       "remaining": [sg(*s) for s in remaining],
                       "next_trace": {"camera": "agentview", "points": [list(p) for p in trace]} if remaining
                       else None})


PLAN = [("pick", "red"), ("stack", "red", "green"), ("pick", "blue"), ("stack", "blue", "red")]


def hybrid(*replies: str) -> tuple[VLMPlanner, FakeStateModel, FakeTraceModel, ScriptedVLMClient]:
    sm, tm = FakeStateModel(), FakeTraceModel()
    client = ScriptedVLMClient(list(replies))
    planner = make_vlm_planner({"geometry": "learned", "check_grounding": False}, client=client,
                               geometry=LearnedGeometry(sm, tm))
    planner.reset(TASK)
    return planner, sm, tm, client


def test_the_vlm_decides_and_the_learned_models_give_the_next_subgoal_its_3d_trace():
    planner, sm, tm, _ = hybrid(reply(remaining=PLAN))
    memory = TaskMemoryV1()
    memory.start_episode(TASK)
    plan = planner.plan(observation_for(planner, obs(), "planner"), memory)
    assert [s.signature for s in plan.remaining] == ["pick(red)", "stack(red,green)", "pick(blue)", "stack(blue,red)"]
    first = plan.remaining[0]
    assert tm.calls == [("pick", ("red",))]  # the VLM's subgoal, traced; only the next one (receding horizon)
    assert plan.remaining[1].trace_3d is None
    # the executor's input: (K, 3) m in the world frame, with yaw (K,) and gripper (K,), ending on red as read
    assert first.trace_3d.frame == "world" and first.trace_3d.points.shape == (3, 3)
    assert first.trace_3d.yaw.shape == first.trace_3d.gripper.shape == (3,)
    np.testing.assert_allclose(first.trace_3d.points[0], [0.0, 0.0, 1.0])  # from the gripper now
    np.testing.assert_allclose(first.trace_3d.points[-1], ORIGINS["red"], atol=1e-6)
    # the model's own 2-D trace is replaced by the 3-D one projected into the state model's camera
    assert first.trace.camera == "agentview" and first.trace.image_size == (84, 84)
    np.testing.assert_allclose(first.trace.points, sm.calibration.project(first.trace_3d.points), atol=1e-3)
    assert planner.source == "vlm+learned_geometry" and planner.is_oracle is False
    # the simulator's truth never reached the learned models
    with pytest.raises(PrivilegedAccessError):
        sm.seen[0].privileged.get("objects")


def test_each_replan_and_fallback_traces_the_next_subgoal_from_the_observation_now():
    planner, _, tm, _ = hybrid(reply(remaining=PLAN), reply(done=PLAN[:2], remaining=PLAN[2:]), "not json")
    memory = TaskMemoryV1()
    memory.start_episode(TASK)
    planner.plan(obs(0), memory)
    later = planner.plan(obs(90, eef=(0.1, 0.0, 1.1)), memory)
    assert later.remaining[0].signature == "pick(blue)" and tm.calls[-1] == ("pick", ("blue",))
    np.testing.assert_allclose(later.remaining[0].trace_3d.points[[0, -1]], [[0.1, 0.0, 1.1], ORIGINS["blue"]],
                               atol=1e-6)
    kept = planner.plan(obs(120, eef=(0.2, 0.0, 1.2)), memory)  # unparseable twice (reply + repair): the fallback
    assert kept.fallback and kept.remaining[0].signature == "pick(blue)"
    np.testing.assert_allclose(kept.remaining[0].trace_3d.points[0], [0.2, 0.0, 1.2], atol=1e-6)


def test_the_same_subgoal_gets_the_same_trace_as_the_learned_planner_gives_it():
    planner, _, _, _ = hybrid(reply(remaining=PLAN))
    vlm = planner.plan(obs(), None).remaining[0]
    learned = LearnedPlanner(FakeStateModel(), FakeTraceModel(), grounder=ListedGrounder(TASK))
    learned.reset(TASK)
    memory = TaskMemoryV1()
    memory.start_episode(TASK)
    mine = learned.plan(obs(), memory).remaining[0]
    assert mine.signature == vlm.signature == "pick(red)"
    np.testing.assert_array_equal(mine.trace_3d.points, vlm.trace_3d.points)
    np.testing.assert_array_equal(mine.trace_3d.gripper, vlm.trace_3d.gripper)


def test_geometry_image_keeps_the_models_2d_trace_and_no_3d_one():
    planner = make_vlm_planner({"check_grounding": False}, client=ScriptedVLMClient([reply(remaining=PLAN)]))
    planner.reset(TASK)
    first = planner.plan(obs(), None).remaining[0]
    assert planner.geometry is None and planner.source == "vlm"
    assert first.trace_3d is None and first.trace.points.tolist() == [[5.0, 6.0], [40.0, 50.0]]
    assert VLMPlannerConfig().geometry == "image"


def test_a_bad_geometry_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match="planner.geometry must be image or learned or pointing, got 'depth'"):
        load(DemoConfig, {"planner": {"name": "vlm", "geometry": "depth"}})
    with pytest.raises(ConfigError, match="planner.geometry must be image or learned or pointing, got 'depth'"):
        make_vlm_planner({"geometry": "depth"}, client=ScriptedVLMClient(["{}"]))
    with pytest.raises(ConfigError, match="planner.geometry=learned needs the learned state and trace models"):
        make_vlm_planner({"geometry": "learned"}, client=ScriptedVLMClient(["{}"]))
    assert VLM_GEOMETRIES == GEOMETRIES


def test_a_trace_model_of_another_task_is_refused_at_reset():
    geometry = LearnedGeometry(FakeStateModel(), FakeTraceModel(_TraceCfg(skills=("pick", "place"))))
    planner = make_vlm_planner({"geometry": "learned"}, client=ScriptedVLMClient(["{}"]), geometry=geometry)
    with pytest.raises(ConfigError, match=r"does not know \['stack'\] of task 'stack_three'"):
        planner.reset(TASK)


def test_the_env_renders_what_the_hybrids_state_model_reads():
    hybrid_cfg = load(DemoConfig, {"planner": {"name": "vlm", "geometry": "learned"}, "verifier": {"name": "oracle"},
                                   "executor": {"name": "scripted"}})
    image_cfg = load(DemoConfig, {"planner": {"name": "vlm"}, "verifier": {"name": "oracle"},
                                  "executor": {"name": "scripted"}})
    assert registry.state_model_sections(hybrid_cfg) == [hybrid_cfg.planner]
    assert registry.state_model_sections(image_cfg) == []
    shipped = json.loads((registry.SHIPPED_CHECKPOINTS / "state" / "stack_three" / "config.json").read_text())["model"]
    assert registry.perception_camera(hybrid_cfg) == (shipped["camera"], tuple(shipped["image_size"]))
    assert registry.perception_camera(image_cfg) is None


def test_a_place_named_by_its_object_only_is_traced_with_its_own_place():
    """The VLM's place(can) (the parser's arity follows the words, "put the can into its bin") is asked of the trace
    model as place(can, can_bin), the subgoal the demonstrations were labelled with."""
    from sim.tasks.registry import make_task

    bins = make_task("pick_place_bins").sample_spec(np.random.default_rng(500)).spec
    names = tuple(sorted([*bins.objects, *(f"{o}_bin" for o in bins.objects)]))
    geometry = LearnedGeometry(FakeStateModel(), FakeTraceModel(_TraceCfg(skills=("pick", "place"), arg_names=names)))
    geometry.check_task(bins)
    obj = bins.objects[0]
    assert geometry.trace_args(Subgoal(id="p", skill="place", args=(obj,), text="")) == (obj, f"{obj}_bin")
    assert geometry.trace_args(Subgoal(id="g", skill="pick", args=(obj,), text="")) == (obj,)
    assert geometry.trace_args(Subgoal(id="q", skill="place", args=(obj, f"{obj}_bin"), text="")) == (
        obj, f"{obj}_bin")


class PointsOnlyGeometry:
    """Traces a subgoal only from the model's fresh points (as the pointing mode does)."""

    is_oracle = False
    source = "pointing"

    def reset(self):
        pass

    def check_task(self, task):
        pass

    def fill(self, subgoal, observation, memory=None):
        if subgoal.trace is None:
            return replace(subgoal, trace_3d=None)
        p = np.zeros((2, 3))
        return replace(subgoal, trace_3d=Trace3D(points=p, yaw=np.zeros(2), gripper=np.array([-1.0, 1.0])))


class ViewMemory:
    """A memory whose view the test sets; it keeps the events."""

    def __init__(self):
        self.v, self.events = {}, []

    def view(self):
        return self.v

    def record_event(self, kind, step, **data):
        self.events.append((kind, data))


def test_a_fallback_after_a_success_moves_on_and_asks_again_for_points():
    good = reply(remaining=PLAN)
    client = ScriptedVLMClient([good, "no", "no", "no", "no", reply(done=PLAN[:1], remaining=PLAN[1:])])
    planner = make_vlm_planner({"geometry": "pointing", "check_grounding": False}, client=client,
                               geometry=PointsOnlyGeometry())
    planner.reset(TASK)
    memory = ViewMemory()
    assert planner.plan(obs(0), memory).remaining[0].trace_3d is not None
    memory.v = {"attempts": {"pick(red)": 1}, "last_outcome": {"pick(red)": "success"}}
    plan = planner.plan(obs(65), memory)  # 2 bad replies: kept plan, advanced past pick(red), no fresh points ...
    fallbacks = [d for k, d in memory.events if k == "vlm_fallback"]
    assert fallbacks[0]["advanced"] == ["pick(red)"]
    # ... so the model is asked again: 2 more bad replies, then the third round answers
    assert len(fallbacks) == 2 and not plan.fallback and plan.remaining[0].signature == "stack(red,green)"
    assert plan.remaining[0].trace_3d is not None and planner.source == "vlm+pointing"
