"""LearnedPlanner and LearnedVerifier over a scripted state model: plans from predicted predicates, learned traces,
facts with confidence, refusals of absent objects, calibrated and uncertain verdicts; privileged state never read."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from grounding_fakes import ListedGrounder

from memory import TaskMemoryV1
from planner_vlm.learned.learned_planner import HIDDEN_UNCERTAINTY
from planner_vlm.learned.learned_planner import LearnedPlanner as _LearnedPlanner
from planner_vlm.learned.learned_verifier import LearnedVerifier
from planner_vlm.learned.proprio import gripper_yaw
from planner_vlm.learned.scene_state import SceneState
from planner_vlm.learned.synthetic import synthetic_calibration
from sim.tasks.registry import read_pick_geometry
from tandem.core.errors import ConfigError, PrivilegedAccessError, UnknownNameError
from tandem.core.geometry import quat_yaw_mul
from tandem.core.privileged import observation_for
from tandem.core.protocols import Planner, Verifier
from tandem.core.types import Observation, Subgoal, TaskSpec, Trace3D, Verdict
from tandem.runtime.config import LearnedPlannerConfig

OBJECTS = ("red", "green", "blue")
PREDICATES = tuple(f"grasped({o})" for o in OBJECTS) + tuple(f"on({x},{y})" for x in OBJECTS for y in OBJECTS
                                                             if x != y)
STACK = TaskSpec(
    name="stack_three", instruction="stack red on green, then blue on red", objects=OBJECTS, max_steps=900,
    skills={"pick": "grasped({0})", "stack": "on({0},{1})"}, goals=("on(red,green)", "on(blue,red)"),
    skill_texts={"pick": "pick up the {0} cube", "stack": "stack the {0} cube on the {1} cube"},
)


def LearnedPlanner(*args, **kwargs):  # noqa: N802 - the planner under test, reading the tests' instructions
    kwargs.setdefault("grounder", ListedGrounder(STACK, readings={"stack purple on green": ("on(purple,green)",)}))
    kwargs.setdefault("pick_geometry_reader", read_pick_geometry)  # as the runtime hands it
    return _LearnedPlanner(*args, **kwargs)


@dataclass(frozen=True)
class _Cfg:
    objects: tuple[str, ...] = OBJECTS
    predicates: tuple[str, ...] = PREDICATES
    camera: str = "agentview"


class ScriptedStateModel:
    """Returns the scene state it is told to (probabilities per predicate, object confidences)."""

    is_oracle = False

    def __init__(self):
        self.cfg = _Cfg()
        self.calibration = synthetic_calibration((84, 84))
        self.probs = dict.fromkeys(PREDICATES, 0.01)
        self.object_confidence = np.ones(len(OBJECTS))
        self.scene_confidence = 1.0
        self.uncertainty: np.ndarray | None = None
        self.shift = np.zeros((len(OBJECTS), 3))  # m, added to each object's keypoints
        self.seen: list[Observation] = []

    def predict(self, observation: Observation, use_depth: bool = True) -> SceneState:
        self.seen.append(observation)
        kp = np.zeros((3, 2, 3))
        for i in range(3):
            kp[i, 0] = [0.0, -0.1 + 0.1 * i, 0.83]
            kp[i, 1] = kp[i, 0] + [0.03, 0.0, 0.0]
        kp += self.shift[:, None]
        return SceneState(objects=OBJECTS, predicates=PREDICATES,
                          probabilities=np.array([self.probs[p] for p in PREDICATES]),
                          keypoints_px=self.calibration.project(kp.reshape(-1, 3)).reshape(3, 2, 2), keypoints_3d=kp,
                          object_confidence=self.object_confidence.copy(), scene_confidence=self.scene_confidence,
                          heatmap_entropy=np.zeros((3, 2)),
                          object_uncertainty=None if self.uncertainty is None else self.uncertainty.copy())


@dataclass(frozen=True)
class _TraceCfg:
    skills: tuple[str, ...] = ("pick", "stack")
    arg_names: tuple[str, ...] = OBJECTS
    symmetries: dict = field(default_factory=lambda: dict.fromkeys(OBJECTS, 4))
    workcell: dict = field(default_factory=dict)
    grasp_prior: dict = field(default_factory=dict)
    pick_geometry: dict = field(default_factory=dict)


class StraightDownTraceModel:
    """A trace from the gripper to 10 cm above the first argument's origin, then onto it."""

    cfg = _TraceCfg()

    def __init__(self):
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def predict(self, keypoints_3d, proprio, skill, args):
        self.calls.append((skill, tuple(args)))
        target = keypoints_3d[OBJECTS.index(args[0]), 0]
        pts = np.stack([proprio[:3], target + [0, 0, 0.1], target])
        return Trace3D(points=pts, yaw=np.zeros(3), gripper=np.array([-1.0, -1.0, 1.0]))


def _obs(step: int = 0) -> Observation:
    proprio = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08])
    return Observation(images={"agentview": np.zeros((84, 84, 3), np.uint8)}, proprio=proprio, step=step,
                       privileged={"predicates": {"on(red,green)": True}, "objects": {}})


def _setup(trace: bool = True):
    sm = ScriptedStateModel()
    tm = StraightDownTraceModel() if trace else None
    planner = LearnedPlanner(sm, tm)
    memory = TaskMemoryV1()
    planner.reset(STACK)
    memory.start_episode(STACK)
    return sm, tm, planner, memory


def test_protocols_and_not_an_oracle():
    sm, _, planner, _ = _setup()
    assert isinstance(planner, Planner) and planner.is_oracle is False
    verifier = LearnedVerifier(sm)
    assert isinstance(verifier, Verifier) and verifier.is_oracle is False


def test_plans_from_the_predicted_predicates_with_a_learned_trace():
    sm, tm, planner, memory = _setup()
    plan = planner.plan(observation_for(planner, _obs(), "planner"), memory)
    assert [s.signature for s in plan.remaining] == ["pick(red)", "stack(red,green)", "pick(blue)",
                                                     "stack(blue,red)"]
    first = plan.remaining[0]
    assert tm.calls == [("pick", ("red",))]  # only the next subgoal gets a trace (receding horizon)
    assert first.trace_3d is not None and plan.remaining[1].trace_3d is None
    np.testing.assert_allclose(first.trace_3d.points[-1], [0.0, -0.1, 0.83])
    # the 2-D trace is the 3-D one projected into the state model's camera at the image's size
    assert first.trace.camera == "agentview" and first.trace.image_size == (84, 84)
    np.testing.assert_allclose(first.trace.points[-1], sm.calibration.project(first.trace_3d.points[-1:])[0], atol=1e-3)
    assert "p(on(red,green))=0.01" in plan.rationale
    # the privileged predicates (on(red,green) true) were never read: the model's say it is false
    with pytest.raises(PrivilegedAccessError):
        sm.seen[0].privileged.get("predicates")

    # the model now sees red on green: that goal moves to done
    sm.probs["on(red,green)"] = 0.97
    plan = planner.plan(_obs(40), memory)
    assert [s.signature for s in plan.done] == ["pick(red)", "stack(red,green)"]
    assert [s.signature for s in plan.remaining] == ["pick(blue)", "stack(blue,red)"]
    assert tm.calls[-1] == ("pick", ("blue",))


def test_a_pick_close_yaw_is_resolved_against_the_wrist_as_the_experts_do():
    # the trace model asks for a turn to -1.4 rad (-80 deg); with the wrist (joint 7) at 1.5 rad that turn would take
    # it to 2.9 rad, past the Panda's 2.8973 limit: the same grasp is reached turning to pi - 1.4 rad (+100 deg)
    sm, tm = ScriptedStateModel(), StraightDownTraceModel()
    tm.predict = lambda kp, proprio, skill, args: Trace3D(
        points=np.stack([proprio[:3], kp[0, 0] + [0, 0, 0.1], kp[0, 0]]), yaw=np.array([0.0, -0.8, -1.4]),
        gripper=[-1.0, -1.0, 1.0])
    planner, memory = LearnedPlanner(sm, tm), TaskMemoryV1()
    planner.reset(STACK)
    memory.start_episode(STACK)

    def first_yaw(wrist: float | None) -> np.ndarray:
        obs = _obs()
        if wrist is not None:
            obs = Observation(images=obs.images, proprio=obs.proprio, step=0, joints=[0, 0, 0, -2, 0, 2, wrist])
        planner.reset(STACK)
        return planner.plan(obs, memory).remaining[0].trace_3d.yaw

    yaw = first_yaw(1.5)
    np.testing.assert_allclose(yaw, [0.0, -0.8 + math.pi * 0.8 / 1.4, math.pi - 1.4], atol=1e-6)  # rows before the close turn in proportion
    event = [e for e in memory.events() if e["kind"] == "grasp_wrist_resolved"]
    assert len(event) == 1 and event[0]["yaw_from"] == pytest.approx(-1.4, abs=1e-3)
    assert event[0]["yaw_to"] == pytest.approx(math.pi - 1.4, abs=1e-3) and event[0]["wrist_rad"] == 1.5
    # with room for it (wrist at 0), or without the arm's joints (a robot that does not report them): as asked
    np.testing.assert_allclose(first_yaw(0.0), [0.0, -0.8, -1.4], atol=1e-6)
    # a long turn that fits (2.4 rad with the wrist at -0.1: joint 7 to -2.5) is left as the model asked: the
    # pick_place_bins expert turns the long way on purpose, for the arm's swing to the bin
    long = np.array([0.0, 1.2, 2.4])
    tm.predict = lambda kp, proprio, skill, args: Trace3D(
        points=np.stack([proprio[:3], kp[0, 0] + [0, 0, 0.1], kp[0, 0]]), yaw=long, gripper=[-1.0, -1.0, 1.0])
    np.testing.assert_allclose(first_yaw(-0.1), long, atol=1e-6)
    # ... and turned the short way where it would not fit (the wrist at -0.5 would reach -2.9 rad, past the limit)
    np.testing.assert_allclose(first_yaw(-0.5)[2], 2.4 - math.pi, atol=1e-6)
    tm.predict = lambda kp, proprio, skill, args: Trace3D(
        points=np.stack([proprio[:3], kp[0, 0] + [0, 0, 0.1], kp[0, 0]]), yaw=np.array([0.0, -0.8, -1.4]),
        gripper=[-1.0, -1.0, 1.0])
    np.testing.assert_allclose(first_yaw(None), [0.0, -0.8, -1.4], atol=1e-6)
    # an object that a half turn does not map onto itself (a nut, symmetry order 1): the model's turn stands
    tm.cfg = _TraceCfg(symmetries={"red": 1})
    np.testing.assert_allclose(first_yaw(1.5), [0.0, -0.8, -1.4], atol=1e-6)
    # off
    tm.cfg = _TraceCfg()
    planner = LearnedPlanner(sm, tm, wrist_limit_rad=None)
    np.testing.assert_allclose(first_yaw(1.5), [0.0, -0.8, -1.4], atol=1e-6)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ConfigError, match="wrist_limit_rad"):
            LearnedPlanner(sm, tm, wrist_limit_rad=bad)
    with pytest.raises(ValueError, match="Observation.joints"):
        Observation(images={}, proprio=np.zeros(8), joints=[0.0, float("nan")])


def test_a_pick_whose_hand_would_meet_a_wall_is_turned_and_the_turn_recorded():
    # the workcell's +x wall 6 cm from red: the trace model's yaw 0 (closing along x) puts the hand into it
    cell = {"containers": [{"inner_lo": [-0.3, -0.4], "inner_hi": [0.06, 0.4], "rim_z": 0.95}],
            "extents": {o: [[-0.02, -0.02, -0.02], [0.02, 0.02, 0.02]] for o in OBJECTS}}
    sm, tm = ScriptedStateModel(), StraightDownTraceModel()
    tm.cfg = _TraceCfg(workcell=cell)
    planner, memory = LearnedPlanner(sm, tm), TaskMemoryV1()
    planner.reset(STACK)
    memory.start_episode(STACK)
    first = planner.plan(_obs(), memory).remaining[0]
    np.testing.assert_allclose(np.abs(first.trace_3d.yaw[1:]), math.pi / 2, atol=1e-6)  # turned a quarter
    assert first.trace_3d.yaw[0] == 0.0  # row 0 is the gripper now
    turned = [e for e in memory.events() if e["kind"] == "grasp_turned"]
    assert len(turned) == 1 and turned[0]["clearance_from_m"] < 0 < turned[0]["clearance_to_m"]
    # a re-pick after a grasp on nothing starts closed, opens and closes: its close is checked the same way
    tm.predict = lambda kp, proprio, skill, args: Trace3D(
        points=np.stack([proprio[:3], kp[0, 0] + [0, 0, 0.1], kp[0, 0]]), yaw=np.zeros(3), gripper=[1.0, -1.0, 1.0])
    planner.reset(STACK)
    assert abs(planner.plan(_obs(), memory).remaining[0].trace_3d.yaw[2]) == pytest.approx(math.pi / 2)
    # a model that closes a half turn away (the same grasp for the fingers): the turned grasp is reached by the
    # shorter turn of the wrist from the gripper's yaw now, never by more than a quarter turn (a 163 deg turn drove the
    # Panda's wrist into its joint limits, validation seed 709)
    tm.predict = lambda kp, proprio, skill, args: Trace3D(
        points=np.stack([proprio[:3], kp[0, 0] + [0, 0, 0.1], kp[0, 0]]), yaw=np.array([0.0, 3.6, 3.6]),
        gripper=[-1.0, -1.0, 1.0])
    planner.reset(STACK)
    yaw = planner.plan(_obs(), memory).remaining[0].trace_3d.yaw
    assert yaw[0] == 0.0 and 0.0 < abs(yaw[2]) <= math.pi / 2 and np.all(np.abs(yaw) <= math.pi / 2 + 1e-6)
    assert [e for e in memory.events() if e["kind"] == "grasp_turned"][-1]["yaw_to"] == pytest.approx(yaw[2], abs=1e-3)
    # far from the wall (green at y = 0 is clear of it turned or not: the wall is the only obstacle above the hand)
    tm, tm.cfg = StraightDownTraceModel(), _TraceCfg(workcell={**cell, "containers": []})
    planner = LearnedPlanner(sm, tm)
    planner.reset(STACK)
    assert np.all(planner.plan(_obs(), memory).remaining[0].trace_3d.yaw == 0.0)
    # a workcell of another task (no extents for a goal object) is refused at reset, not skipped in silence
    tm.cfg = _TraceCfg(workcell={"extents": {"red": cell["extents"]["red"]}})
    with pytest.raises(ConfigError, match=r"no extents for \['blue', 'green'\]"):
        LearnedPlanner(sm, tm).reset(STACK)


class OffTargetFarAwayTraceModel(StraightDownTraceModel):
    """Closes right below the gripper (off every object) unless asked from where the episode started (0, 0, 1)."""

    def __init__(self):
        super().__init__()
        self.proprios: list[np.ndarray] = []

    def predict(self, keypoints_3d, proprio, skill, args):
        self.calls.append((skill, tuple(args), tuple(np.round(proprio[:3], 3))))
        self.proprios.append(np.array(proprio, float))
        start = np.asarray(proprio[:3], float)
        target = keypoints_3d[OBJECTS.index(args[0]), 0]
        if np.linalg.norm(start - [0.0, 0.0, 1.0]) > 1e-6:
            target = np.array([start[0], start[1], 0.9])  # the failure seen in closed loop: a close in the air
        pts = np.stack([start, target + [0, 0, 0.1], target])
        return Trace3D(points=pts, yaw=np.zeros(3), gripper=np.array([-1.0, -1.0, 1.0]))


_CUBES_ONLY = {"containers": [], "extents": {o: [[-0.02, -0.02, -0.02], [0.02, 0.02, 0.02]] for o in OBJECTS}}


def test_a_pick_that_closes_away_from_its_object_is_asked_again_from_the_episode_start():
    sm, tm = ScriptedStateModel(), OffTargetFarAwayTraceModel()
    tm.cfg = _TraceCfg(workcell=_CUBES_ONLY)  # the objects' extents: grasped over their body
    planner, memory = LearnedPlanner(sm, tm), TaskMemoryV1()
    planner.reset(STACK)
    memory.start_episode(STACK)
    first = planner.plan(_obs(), memory).remaining[0]  # from the start: on target, asked once
    np.testing.assert_allclose(first.trace_3d.points[-1], [0.0, -0.1, 0.83])
    assert len(tm.calls) == 1
    later = _obs(300)
    later.proprio[:3] = [0.3, 0.2, 1.1]  # a retry from far away: the model closes 36 cm off red
    tilted = np.array([0.05, 0.9, 0.4, 0.1])
    later.proprio[3:7] = tilted / np.linalg.norm(tilted)  # and a hand tilted by a timeout
    trace = planner.plan(later, memory).remaining[0].trace_3d
    assert tm.calls[-1][2] == (0.0, 0.0, 1.0)  # asked again from where the episode started
    # ... with the hand level as it started, turned to its yaw now
    again = tm.proprios[-1]
    expected = quat_yaw_mul(float(gripper_yaw(later.proprio) - gripper_yaw(_obs().proprio)), _obs().proprio[3:7])
    np.testing.assert_allclose(again[3:7], expected, atol=1e-9)
    assert abs(float(gripper_yaw(again)) - float(gripper_yaw(later.proprio))) < 1e-9
    np.testing.assert_allclose(trace.points[0], [0.3, 0.2, 1.1])  # row 0 is still the gripper now
    np.testing.assert_allclose(trace.points[-1], [0.0, -0.1, 0.83])  # the close is over red
    event = [e for e in memory.events() if e["kind"] == "pick_reanchored"]
    assert len(event) == 1 and event[0]["offset_from_m"] > 0.3 and event[0]["offset_to_m"] == 0.0
    # off, or no workcell to say the objects are grasped over their body (a nut is held by its handle, 5-7 cm from
    # its origin): the trace as the model gave it
    for workcell, max_close_offset_m in ((_CUBES_ONLY, None), ({}, 0.03)):
        off_tm = OffTargetFarAwayTraceModel()
        off_tm.cfg = _TraceCfg(workcell=workcell)
        off = LearnedPlanner(sm, off_tm, max_close_offset_m=max_close_offset_m)
        off.reset(STACK)
        off.plan(_obs(), memory)
        np.testing.assert_allclose(off.plan(later, memory).remaining[0].trace_3d.points[-1], [0.3, 0.2, 0.9])
    with pytest.raises(ConfigError, match="max_close_offset_m"):
        LearnedPlanner(sm, tm, max_close_offset_m=0.0)


def test_a_gripper_closed_on_nothing_holds_nothing_whatever_the_model_reads():
    sm, _, planner, memory = _setup()
    sm.probs["grasped(red)"] = 0.95  # the model reads red as held
    obs = _obs()
    obs.proprio[7] = 0.04  # fingers 4 cm apart: it may be
    assert planner.plan(obs, memory).remaining[0].signature == "stack(red,green)"
    obs.proprio[7] = 0.002  # closed on nothing: it is not
    plan = planner.plan(obs, memory)
    assert plan.remaining[0].signature == "pick(red)"
    assert "closed on nothing (opening 2.0 mm): grasped(red) read as false" in plan.rationale
    off = LearnedPlanner(sm, None, empty_grip_m=None)
    off.reset(STACK)
    assert off.plan(obs, memory).remaining[0].signature == "stack(red,green)"


def test_memory_records_predicted_facts_with_their_probability():
    sm, _, planner, memory = _setup()
    sm.probs["grasped(red)"] = 0.88
    planner.plan(_obs(7), memory)
    facts = memory.view()["facts"]
    assert any("grasped(red) holds (p=0.88" in f for f in facts["red"])
    assert any("on(red,green) does not hold (p=0.01" in f for f in facts["red"])
    scene = [e for e in memory.events() if e["kind"] == "scene_state"]
    assert len(scene) == 1 and scene[0]["step"] == 7
    assert scene[0]["objects"]["blue"]["pos"] == [0.0, 0.1, 0.83]


def test_a_held_object_skips_its_pick():
    sm, _, planner, memory = _setup()
    sm.probs["grasped(red)"] = 0.9
    plan = planner.plan(_obs(), memory)
    assert [s.signature for s in plan.done] == ["pick(red)"]
    assert plan.remaining[0].signature == "stack(red,green)"


def test_an_object_the_model_cannot_find_is_refused_and_recorded():
    sm, tm, planner, memory = _setup()
    sm.object_confidence = np.array([1.0, 0.01, 1.0])  # green not found at the first plan
    plan = planner.plan(_obs(), memory)
    assert plan.remaining == [] and plan.done == [] and plan.rationale.startswith("refused")
    assert "green" in plan.rationale and tm.calls == []
    events = [e for e in memory.events() if e["kind"] == "refused"]
    assert len(events) == 1 and events[0]["objects"] == ["green"]
    assert any("absent" in f for f in memory.view()["facts"]["green"])
    # it stays refused for the episode, recorded once
    assert planner.plan(_obs(5), memory).remaining == []
    assert len([e for e in memory.events() if e["kind"] == "refused"]) == 1


def test_the_planner_refuses_an_object_whose_read_pixel_shows_the_bare_support_in_depth():
    sm, tm, planner, memory = _setup()
    sm.support_z = 0.81  # the objects rest on a surface at 0.81 m (their origins read at 0.83)
    cal = sm.calibration
    px = cal.project(np.array([[0.0, -0.1 + 0.1 * i, 0.83] for i in range(3)]))  # where red, green, blue are read
    h, w = 84, 84
    xs, ys = np.meshgrid(np.arange(w) + 0.0, np.arange(h) + 0.0)
    grid = np.stack([xs.ravel(), ys.ravel()], axis=1)
    rays = cal.rays(grid)
    z = np.full(len(grid), 0.81)
    for x, y in px[1:]:  # green and blue stand where they are read; red's pixel shows the bare surface
        z[(np.abs(grid[:, 0] - x) <= 3) & (np.abs(grid[:, 1] - y) <= 3)] = 0.85
    depth = (((z - cal.position[2]) / rays[:, 2]) * (rays @ cal.rotation[:, 2])).reshape(h, w).astype(np.float32)
    obs = _obs()
    obs = Observation(images=obs.images, proprio=obs.proprio, step=0, depth={"agentview": depth})
    plan = planner.plan(obs, memory)
    assert plan.remaining == [] and "red" in plan.rationale and "bare support surface" in plan.rationale
    assert [e["objects"] for e in memory.events() if e["kind"] == "refused"] == [["red"]]
    # the check off, or no depth image: planned as before
    for kwargs, observation in (({"use_absent_thresholds": False}, obs), ({}, _obs())):
        other, fresh = LearnedPlanner(sm, tm, **kwargs), TaskMemoryV1()
        other.reset(STACK)
        fresh.start_episode(STACK)
        assert other.plan(observation, fresh).remaining


def test_the_planner_refuses_on_a_fitted_threshold_and_records_why():
    sm, tm, planner, memory = _setup()
    sm.uncertainty = np.array([0.1, 2.4, 0.2])  # green's heatmap spread far beyond its threshold
    sm.absent_uncertainty = np.array([0.5, 0.9, 0.5])
    plan = planner.plan(_obs(), memory)
    assert plan.remaining == [] and "green" in plan.rationale and "uncertainty 2.40 > 0.90" in plan.rationale
    assert tm.calls == []
    events = [e for e in memory.events() if e["kind"] == "refused"]
    assert events[0]["objects"] == ["green"]
    # the same scene with the thresholds off plans as before
    sm2, _, planner2, memory2 = _setup()
    sm2.uncertainty, sm2.absent_uncertainty = sm.uncertainty, sm.absent_uncertainty
    planner2.use_absent_thresholds = False
    assert planner2.plan(_obs(), memory2).remaining


def test_a_diffuse_read_after_the_first_plan_is_not_a_refusal():
    sm, _, planner, memory = _setup()
    sm.uncertainty = np.array([0.1, 0.1, 0.1])
    sm.absent_uncertainty = np.array([0.5, 0.5, 0.5])
    assert planner.plan(_obs(), memory).remaining
    sm.uncertainty = np.array([0.1, 3.0, 0.1])  # green hidden behind the arm later on: not absent
    assert planner.plan(_obs(40), memory).remaining
    assert not [e for e in memory.events() if e["kind"] == "refused"]


def test_an_object_outside_the_vocabulary_is_refused():
    sm = ScriptedStateModel()
    planner, memory = LearnedPlanner(sm), TaskMemoryV1()
    task = TaskSpec(name="stack_three", instruction="stack purple on green", objects=("purple", "green"),
                    max_steps=900, skills=dict(STACK.skills), goals=("on(purple,green)",),
                    skill_texts=dict(STACK.skill_texts))
    planner.reset(task)
    memory.start_episode(task)
    plan = planner.plan(_obs(), memory)
    assert plan.remaining == [] and "purple" in plan.rationale
    assert sm.seen == []  # not even looked at


def test_low_scene_confidence_is_recorded_not_hidden():
    sm, _, planner, memory = _setup()
    sm.scene_confidence = 0.2
    plan = planner.plan(_obs(), memory)
    assert "LOW SCENE CONFIDENCE 0.20" in plan.rationale
    assert [e["scene_confidence"] for e in memory.events() if e["kind"] == "low_scene_confidence"] == [0.2]


def test_completion_needs_every_goal_confident_else_the_unconfirmed_goal_is_planned_again():
    sm, tm, planner, memory = _setup()
    sm.probs["on(red,green)"] = 0.99
    sm.probs["on(blue,red)"] = 0.67  # reads true (>= 0.5), but not confidently: seed 1044's false completion
    plan = planner.plan(_obs(120), memory)
    assert [s.signature for s in plan.done] == ["pick(red)", "stack(red,green)"]
    assert [s.signature for s in plan.remaining] == ["pick(blue)", "stack(blue,red)"]
    assert not plan.claims_complete
    assert "on(blue,red) below completion confidence 0.90" in plan.rationale
    [event] = [e for e in memory.events() if e["kind"] == "unconfirmed_goals"]
    assert event["goals"] == ["on(blue,red)"] and event["probabilities"] == [0.67] and event["step"] == 120
    # confident: the task is reported complete, nothing recorded
    sm.probs["on(blue,red)"] = 0.95
    plan = planner.plan(_obs(130), memory)
    assert plan.claims_complete and len(plan.done) == 4
    assert len([e for e in memory.events() if e["kind"] == "unconfirmed_goals"]) == 1
    # an unconfident goal while another goal is unmet changes nothing (only the completion claim is guarded)
    sm.probs["on(red,green)"], sm.probs["on(blue,red)"] = 0.6, 0.01
    plan = planner.plan(_obs(140), memory)
    assert [s.signature for s in plan.remaining] == ["pick(blue)", "stack(blue,red)"]
    assert len([e for e in memory.events() if e["kind"] == "unconfirmed_goals"]) == 1


def test_a_trace_model_of_another_task_is_refused():
    sm = ScriptedStateModel()
    tm = StraightDownTraceModel()
    tm.cfg = _TraceCfg(skills=("pick", "place"))
    with pytest.raises(ConfigError, match="stack"):
        LearnedPlanner(sm, tm).reset(STACK)
    with pytest.raises(ConfigError, match="threshold"):
        LearnedPlanner(sm, threshold=1.0)
    with pytest.raises(ConfigError, match="completion_confidence"):
        LearnedPlanner(sm, threshold=0.6, completion_confidence=0.5)


def _stack_sg() -> Subgoal:
    return Subgoal(id="sg2", skill="stack", args=("red", "green"), text="stack the red cube on the green cube")


def test_verifier_calibrated_verdicts_and_uncertainty():
    sm = ScriptedStateModel()
    v = LearnedVerifier(sm, confidence_threshold=0.9)
    v.reset(STACK)
    sm.probs["on(red,green)"] = 0.97
    verdict = v.verify(_obs(), _obs(), _stack_sg())
    assert verdict.success and not verdict.uncertain and verdict.source == "learned"
    assert verdict.confidence == pytest.approx(0.97)
    assert "red at (0.00, -0.10, 0.83)" in verdict.reason and "0.10 m from green" in verdict.reason
    sm.probs["on(red,green)"] = 0.02
    verdict = v.verify(_obs(), _obs(), _stack_sg())
    assert not verdict.success and not verdict.uncertain and verdict.confidence == pytest.approx(0.98)
    # an undecided probability is uncertain, whatever its side
    sm.probs["on(red,green)"] = 0.7
    verdict = v.verify(_obs(), _obs(), _stack_sg())
    assert verdict.success and verdict.uncertain and "UNCERTAIN" in verdict.reason
    # a confident probability on a scene unlike the training scenes (every object poorly located) is uncertain too
    sm.probs["on(red,green)"] = 0.99
    sm.object_confidence, sm.scene_confidence = np.full(3, 0.5), 0.5
    verdict = v.verify(_obs(), _obs(), _stack_sg())
    assert verdict.uncertain and verdict.confidence == pytest.approx(0.495)
    # only the objects the subgoal names count: blue, hidden behind the arm, does not make stack(red,green) uncertain
    sm.object_confidence, sm.scene_confidence = np.array([1.0, 0.95, 0.3]), 0.3
    verdict = v.verify(_obs(), _obs(), _stack_sg())
    assert not verdict.uncertain and verdict.confidence == pytest.approx(0.99 * 0.95)
    assert "red/green located with confidence 0.95" in verdict.reason
    sm.object_confidence = np.array([1.0, 0.5, 1.0])  # green, which it names, poorly located: uncertain
    assert v.verify(_obs(), _obs(), _stack_sg()).confidence == pytest.approx(0.495)
    # still held after a stack: said in the reason
    sm.object_confidence, sm.scene_confidence, sm.probs["grasped(red)"] = np.ones(3), 1.0, 0.9
    assert "still held (p=0.90)" in v.verify(_obs(), _obs(), _stack_sg()).reason


def test_verifier_bad_input():
    sm = ScriptedStateModel()
    v = LearnedVerifier(sm)
    with pytest.raises(ConfigError, match="before reset"):
        v.verify(_obs(), _obs(), _stack_sg())
    with pytest.raises(ConfigError, match="confidence_threshold"):
        LearnedVerifier(sm, confidence_threshold=0.5)
    task = TaskSpec(name="t", instruction="x", objects=("red", "green"), max_steps=10,
                    skills={"pick": "grasped({0})", "stack": "on({0},{1})", "place": "in_bin({0})"},
                    goals=("in_bin(red)",), skill_texts={"place": "place {0}"})
    v.reset(task)
    with pytest.raises(UnknownNameError, match="in_bin"):
        v.verify(_obs(), _obs(), Subgoal(id="a", skill="place", args=("red",), text="place red"))


def _hand_on_red(opening: float, step: int = 100) -> Observation:
    """The gripper 15 cm up the camera ray through red's pixel, its fingers ``opening`` m apart: where a held red cube
    is seen."""
    cal = ScriptedStateModel().calibration
    red = np.array([[0.0, -0.1, 0.83]])
    obs = _obs(step)
    obs.proprio[:3] = cal.lift(cal.project(red), np.array([0.98]))[0]
    obs.proprio[7] = opening
    return obs


def _pick_red() -> Subgoal:
    return Subgoal(id="sg1", skill="pick", args=("red",), text="pick up the red cube")


def test_verifier_a_pick_the_image_misses_but_the_hand_holds_is_a_success():
    sm = ScriptedStateModel()  # reads grasped(red) at p = 0.01, red on the table
    v = LearnedVerifier(sm)
    v.reset(STACK)
    verdict = v.verify(_obs(), _hand_on_red(0.045), _pick_red())
    assert verdict.success and not verdict.uncertain and verdict.confidence == pytest.approx(0.95)
    assert verdict.reason.startswith("grasped(red) holds by the hand: the fingers are closed on something 45 mm wide")
    assert "the image alone: grasped(red) is false: p=0.01" in verdict.reason
    # closed on nothing, or open: the image's verdict stands
    for opening in (0.002, 0.079):
        assert not v.verify(_obs(), _hand_on_red(opening), _pick_red()).success
    # an uncertain reading (red poorly located: the arm hides it) is settled by the hand too
    sm.object_confidence = np.array([0.6, 1.0, 1.0])
    far = _hand_on_red(0.045)
    far.proprio[:3] = [0.3, 0.3, 1.0]
    assert v.verify(_obs(), far, _pick_red()).success
    # ... but red located sharply elsewhere is not in this hand
    sm.object_confidence = np.ones(3)
    assert not v.verify(_obs(), far, _pick_red()).success
    # other skills are judged by the image only; and the rule can be turned off
    assert not v.verify(_obs(), _hand_on_red(0.045), _stack_sg()).success
    off = LearnedVerifier(sm, held_ray_m=None)
    off.reset(STACK)
    assert not off.verify(_obs(), _hand_on_red(0.045), _pick_red()).success
    with pytest.raises(ConfigError, match="held_ray_m"):
        LearnedVerifier(sm, held_ray_m=0.0)


def test_planner_after_a_verified_pick_the_hand_holds_its_object_whatever_the_image_reads():
    sm, _, planner, memory = _setup()
    first = planner.plan(_obs(0), memory)
    assert first.remaining[0].signature == "pick(red)"
    memory.record_plan(first, 0, "learned")
    memory.record_attempt(first.remaining[0], 0)
    # the pick is verified (by the hand, above); the image still reads red as not held, on the table
    memory.record_verdict(first.remaining[0], Verdict(success=True, confidence=0.95, reason="by the hand",
                                                      source="learned"), 90)
    plan = planner.plan(_hand_on_red(0.045, step=90), memory)
    assert plan.remaining[0].signature == "stack(red,green)"  # not the same pick again
    assert "grasped(red) holds by the hand" in plan.rationale
    assert planner.last_state.probability("grasped(red)") == pytest.approx(0.95)
    np.testing.assert_allclose(planner.last_state.position("red")[2], 0.98, atol=0.03)  # moved to the hand
    event = [e for e in memory.events() if e["kind"] == "hand_holds"]
    assert len(event) == 1 and event[0]["object"] == "red" and event[0]["opening_m"] == 0.045
    # a pick that failed its verdict is not overruled by the planner: it is asked again
    sm2, _, planner2, memory2 = _setup()
    plan2 = planner2.plan(_obs(0), memory2)
    sg = plan2.remaining[0]
    memory2.record_plan(plan2, 0, "learned")
    memory2.record_attempt(sg, 0)
    memory2.record_verdict(sg, Verdict(success=False, confidence=0.99, reason="no", source="learned"), 90)
    assert planner2.plan(_hand_on_red(0.045, step=90), memory2).remaining[0].signature == "pick(red)"
    with pytest.raises(ConfigError, match="held_ray_m"):
        LearnedPlanner(sm, None, held_ray_m=-1.0)


@pytest.mark.parametrize("rule", [0.5, None])
def test_a_pick_of_a_hidden_object_is_planned_from_its_last_sharp_read(rule):
    sm, tm, _, memory = _setup()
    planner = LearnedPlanner(sm, tm, hidden_uncertainty=rule)
    planner.reset(STACK)
    sm.uncertainty = np.zeros(3)
    sharp = planner.plan(_obs(0), memory).remaining[0]  # red read sharply where it is
    assert sharp.signature == "pick(red)"
    sm.uncertainty = np.array([0.9, 0.0, 0.0])  # red hidden now: its read lands 9 cm away
    sm.shift[0] = [0.09, 0.0, 0.0]
    again = planner.plan(_obs(50), memory).remaining[0]
    events = [e for e in memory.events() if e["kind"] == "hidden_target_remembered"]
    if rule is None:
        np.testing.assert_allclose(again.trace_3d.points[-1], sharp.trace_3d.points[-1] + [0.09, 0.0, 0.0])
        assert not events
    else:
        np.testing.assert_allclose(again.trace_3d.points[-1], sharp.trace_3d.points[-1])
        assert events[0]["object"] == "red" and events[0]["read_step"] == 0 and events[0]["shift_m"] == 0.09
    # a hidden object never read sharply keeps its read; a bad setting is refused
    sm2, tm2, _, memory2 = _setup()
    fresh = LearnedPlanner(sm2, tm2, hidden_uncertainty=0.5)
    fresh.reset(STACK)
    sm2.uncertainty, sm2.shift[0] = np.array([0.9, 0.0, 0.0]), [0.09, 0.0, 0.0]
    assert fresh.plan(_obs(0), memory2).remaining[0].trace_3d.points[-1][0] == pytest.approx(0.09)
    with pytest.raises(ConfigError, match="hidden_uncertainty"):
        LearnedPlanner(sm, tm, hidden_uncertainty=0.0)
    assert LearnedPlanner(sm, tm).hidden_uncertainty == HIDDEN_UNCERTAINTY == LearnedPlannerConfig().hidden_uncertainty


def test_a_remembered_read_whose_pick_failed_gives_way_to_the_current_read():
    """#47 item 3: the red cube was moved while hidden; the pick planned from its last sharp read fails, so the next
    pick is planned from the current read (9 cm away), not the same grasp again."""
    sm, tm, _, memory = _setup()
    planner = LearnedPlanner(sm, tm, hidden_uncertainty=0.5)
    planner.reset(STACK)
    memory.start_episode(STACK)
    sm.uncertainty = np.zeros(3)
    sharp = planner.plan(_obs(0), memory).remaining[0]
    sm.uncertainty, sm.shift[0] = np.array([0.9, 0.0, 0.0]), [0.09, 0.0, 0.0]
    plan = planner.plan(_obs(50), memory)
    first = plan.remaining[0]
    np.testing.assert_allclose(first.trace_3d.points[-1], sharp.trace_3d.points[-1])  # from memory
    again = planner.plan(_obs(60), memory).remaining[0]  # planned again before any attempt: memory still holds
    np.testing.assert_allclose(again.trace_3d.points[-1], sharp.trace_3d.points[-1])
    memory.record_plan(plan, 60, "learned")
    memory.record_attempt(first, 60)
    memory.record_verdict(first, Verdict(success=False, confidence=0.99, reason="nothing held", source="learned"), 120)
    after = planner.plan(_obs(121), memory).remaining[0]
    assert after.signature == "pick(red)"
    np.testing.assert_allclose(after.trace_3d.points[-1], sharp.trace_3d.points[-1] + [0.09, 0.0, 0.0])
    dropped = [e for e in memory.events() if e["kind"] == "remembered_read_dropped"]
    assert len(dropped) == 1 and dropped[0]["object"] == "red" and dropped[0]["read_step"] == 0
    # a new sharp read is remembered again
    sm.uncertainty = np.zeros(3)
    planner.plan(_obs(130), memory)
    sm.uncertainty = np.array([0.9, 0.0, 0.0])
    sm.shift[0] = [0.0, 0.05, 0.0]
    later = planner.plan(_obs(140), memory).remaining[0]
    np.testing.assert_allclose(later.trace_3d.points[-1], sharp.trace_3d.points[-1] + [0.09, 0.0, 0.0])


def test_a_pick_close_that_misses_its_objects_demonstrated_grasp_is_moved_onto_it():
    # red is always grasped 5 cm along its local x (its keypoints put x along world +x), fingers across: a handle
    prior = {"objects": {"red": {"offset_m": [0.05, 0.0, 0.0], "yaw_offset_rad": math.pi / 2,
                                 "period_rad": math.pi}}}
    sm, tm = ScriptedStateModel(), StraightDownTraceModel()  # closes on red's origin at yaw 0: 5 cm and 90 deg off
    tm.cfg = _TraceCfg(grasp_prior=prior)
    planner, memory = LearnedPlanner(sm, tm), TaskMemoryV1()
    planner.reset(STACK)
    memory.start_episode(STACK)
    trace = planner.plan(_obs(), memory).remaining[0].trace_3d
    np.testing.assert_allclose(trace.points[0], [0.0, 0.0, 1.0])  # row 0 stays the gripper now
    np.testing.assert_allclose(trace.points[2], [0.05, -0.1, 0.83], atol=1e-6)  # the close on the handle
    np.testing.assert_allclose(trace.points[1], [0.05, -0.1, 0.93], atol=1e-6)  # the hover above it
    assert abs(abs(float(trace.yaw[2])) - math.pi / 2) < 1e-6
    event = [e for e in memory.events() if e["kind"] == "grasp_prior_snapped"]
    assert len(event) == 1 and event[0]["object"] == "red" and event[0]["miss_m"] == pytest.approx(0.05)
    assert event[0]["miss_deg"] == pytest.approx(90.0)
    # off, or an object the prior does not know (blue), or a close already on the grasp: the model's trace
    near_red = {"objects": {"red": {"offset_m": [0.005, 0.0, 0.0], "yaw_offset_rad": 0.1, "period_rad": math.pi}}}
    for cell, grasp_prior_m in ((prior, None), ({"objects": {"blue": prior["objects"]["red"]}}, 0.01),
                                (near_red, 0.01)):
        tm.cfg = _TraceCfg(grasp_prior=cell)
        unchanged, fresh = LearnedPlanner(sm, tm, grasp_prior_m=grasp_prior_m), TaskMemoryV1()
        unchanged.reset(STACK)
        fresh.start_episode(STACK)
        np.testing.assert_allclose(unchanged.plan(_obs(), fresh).remaining[0].trace_3d.points[2], [0.0, -0.1, 0.83])
        assert not [e for e in fresh.events() if e["kind"] == "grasp_prior_snapped"]
    with pytest.raises(ConfigError, match="grasp_prior_m"):
        LearnedPlanner(sm, tm, grasp_prior_m=-0.01)
    with pytest.raises(ConfigError, match="grasp_prior_deg"):
        LearnedPlanner(sm, tm, grasp_prior_deg=0.0)


def test_a_pick_whose_expert_geometry_the_checkpoint_records_gets_it_over_the_object_as_read():
    # red read at (0, -0.1, 0.83) with its handle along world +y: the expert's grasp is 6 cm along it, the trace
    # closes there at a yaw across the handle, lifts and turns it, and the trace model is not asked
    geometry = {"base_pos": [-0.56, 0.0, 0.912],
                "nuts": {"red": {"grasp_offset_m": 0.06, "square_to_peg": True, "peg_pos": [0.23, 0.1, 0.85]}}}
    sm, tm = ScriptedStateModel(), StraightDownTraceModel()
    sm.shift[0] = [0.0, 0.0, 0.0]
    tm.cfg = _TraceCfg(pick_geometry=geometry)
    obs = _obs()
    obs = Observation(images=obs.images, proprio=obs.proprio, step=0, joints=np.zeros(7, np.float32))

    def handle_along_y(observation, use_depth=True):
        state = ScriptedStateModel.predict(sm, observation, use_depth)
        state.keypoints_3d[0, 1] = state.keypoints_3d[0, 0] + [0.0, 0.03, 0.0]
        return state

    sm.predict = handle_along_y
    planner, memory = LearnedPlanner(sm, tm), TaskMemoryV1()
    planner.reset(STACK)
    memory.start_episode(STACK)
    trace = planner.plan(obs, memory).remaining[0].trace_3d
    assert tm.calls == []  # the trace model was not asked for this pick
    np.testing.assert_allclose(trace.points[0], obs.proprio[:3])  # row 0: the grip site now
    close = int(np.flatnonzero(trace.gripper > 0)[0])
    np.testing.assert_allclose(trace.points[close], [0.0, -0.04, 0.83], atol=1e-9)  # 6 cm along the handle
    assert abs(math.cos(float(trace.yaw[close]) - math.pi / 2)) < 1e-6  # fingers across the handle (along x)
    assert trace.points[-1][2] == pytest.approx(0.93)  # lifted 10 cm
    event = [e for e in memory.events() if e["kind"] == "geometric_pick"]
    assert len(event) == 1 and event[0]["object"] == "red" and event[0]["grasp"] == [0.0, -0.04, 0.83]
    # off, without the arm's joints, or an object the geometry does not know: the trace model's trace
    for kwargs, observation, target in (({"geometric_picks": False}, obs, "red"), ({}, _obs(), "red")):
        other, fresh = LearnedPlanner(sm, tm, **kwargs), TaskMemoryV1()
        other.reset(STACK)
        fresh.start_episode(STACK)
        before = len(tm.calls)
        other.plan(observation, fresh)
        assert tm.calls[before:] == [("pick", (target,))]
        assert not [e for e in fresh.events() if e["kind"] == "geometric_pick"]
        skipped = [e for e in fresh.events() if e["kind"] == "geometric_pick_skipped"]
        assert [e["reason"] for e in skipped] == ([] if kwargs else ["the observation carries no arm joints"])
    assert LearnedPlanner(sm, tm).geometric_picks is LearnedPlannerConfig().geometric_picks is True
    with pytest.raises(ConfigError, match="pick_geometry"):
        LearnedPlanner(sm, type("T", (), {"cfg": _TraceCfg(pick_geometry={"base_pos": [0, 0], "nuts": {}})})())


def test_a_bin_pick_gets_the_experts_geometry_over_the_object_as_read_unless_it_reads_lying():
    # pick_place_bins' geometry: red read upright at (0, -0.1, 0.83) (its rest height on a floor at 0.81 m), a box
    # grasped only across its 3 cm side; its x keypoint along world +x, so its yaw (body y) is world +y
    box = [[-0.05, -0.015, -0.02], [0.05, 0.015, 0.02]]
    geometry = {"base_pos": [-0.5, -0.1, 0.912],
                "source_bin": {"inner_lo": [-0.3, -0.4], "inner_hi": [0.3, 0.4], "rim_z": 0.9}, "floor_z": 0.81,
                "objects": {o: {"grasp_dz": 0.0, "yaw_sym": math.pi, "yaw_offset": 0.0, "narrow_side": False,
                                "extents": box, "place_xy": [0.0, 0.4]} for o in OBJECTS}}
    sm, tm = ScriptedStateModel(), StraightDownTraceModel()
    tm.cfg = _TraceCfg(pick_geometry=geometry)
    obs = _obs()
    obs = Observation(images=obs.images, proprio=obs.proprio, step=0, joints=np.zeros(7, np.float32))
    planner, memory = LearnedPlanner(sm, tm), TaskMemoryV1()
    planner.reset(STACK)
    memory.start_episode(STACK)
    trace = planner.plan(obs, memory).remaining[0].trace_3d
    assert tm.calls == []
    close = int(np.flatnonzero(trace.gripper > 0)[0])
    np.testing.assert_allclose(trace.points[close], [0.0, -0.1, 0.83])  # at its centre (top 0.85, the palm clear)
    assert abs(math.cos(float(trace.yaw[close]))) < 1e-6  # across the 3 cm side: along world y
    assert trace.points[-1][2] == pytest.approx(0.83 + 0.12)  # lifted 12 cm
    event = [e for e in memory.events() if e["kind"] == "geometric_pick"]
    assert len(event) == 1 and event[0]["grasp"] == [0.0, -0.1, 0.83]
    # read 3 cm below its upright rest height: lying on its side, which the geometry does not plan; said, and the
    # trace model's trace is taken
    sm.shift[0] = [0.0, 0.0, -0.03]
    planner, memory = LearnedPlanner(sm, tm), TaskMemoryV1()
    planner.reset(STACK)
    memory.start_episode(STACK)
    planner.plan(obs, memory)
    assert tm.calls == [("pick", ("red",))]
    skipped = [e for e in memory.events() if e["kind"] == "geometric_pick_skipped"]
    assert len(skipped) == 1 and skipped[0]["reason"].startswith("the object reads as lying on its side (3.0 cm")
    # a record naming neither nuts nor objects is refused, naming what it must hold
    with pytest.raises(ConfigError, match="naming nuts .* or objects"):
        LearnedPlanner(sm, type("T", (), {"cfg": _TraceCfg(pick_geometry={"base_pos": [0, 0, 0]})})())


def test_the_planner_pursues_the_goals_its_grounder_reads_from_the_words_not_the_judges():
    from sim.tasks.registry import task_vocabulary
    from tandem.core.privileged import withhold_goals

    vocab = task_vocabulary("stack_three")
    task = withhold_goals(replace(STACK, vocabulary=vocab), "planner LearnedPlanner")  # as the runtime hands it
    words = ListedGrounder(readings={STACK.instruction: ("on(blue,green)",)}, vocabulary=vocab)
    planner = _LearnedPlanner(ScriptedStateModel(), StraightDownTraceModel(), grounder=words)
    planner.reset(task)
    assert [g for g, _, _, _ in planner.goal_steps()] == ["on(blue,green)"]
    assert planner.grounding.goals == ("on(blue,green)",) and planner.grounding.grounded_by == "listed (test)"


def test_a_grounder_of_another_vocabulary_is_refused_at_reset():
    from sim.tasks.registry import task_vocabulary

    class OtherGrounder(ListedGrounder):
        vocabulary = task_vocabulary("nut_assembly")

    planner = _LearnedPlanner(ScriptedStateModel(), StraightDownTraceModel(), grounder=OtherGrounder(STACK))
    with pytest.raises(ConfigError, match="trained for the vocabulary of 'nut_assembly'"):
        planner.reset(replace(STACK, vocabulary=task_vocabulary("stack_three")))


def test_a_planner_without_a_grounder_is_a_build_error():
    with pytest.raises(ConfigError, match="no instruction grounder"):
        _LearnedPlanner(ScriptedStateModel(), StraightDownTraceModel()).reset(STACK)
