"""With ``best_localized_first`` the learned planner plans the best-localized object first where the goals may be met in
any order, keeps a held object and a running pick first, and keeps the instruction's order where goals depend on each
other."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from grounding_fakes import ListedGrounder

from memory import TaskMemoryV1
from planner_vlm.goal_regression import GoalRegressionPlanner
from planner_vlm.learned.learned_planner import LearnedPlanner as _LearnedPlanner
from planner_vlm.learned.scene_state import SceneState
from planner_vlm.learned.state_model import keypoint_uncertainty
from tandem.core.errors import ConfigError
from tandem.core.types import Observation, TaskSpec

OBJECTS = ("milk", "bread", "can")
PREDICATES = tuple(f"grasped({o})" for o in OBJECTS) + tuple(f"in_bin({o})" for o in OBJECTS)
BINS = TaskSpec(
    name="pick_place_bins", instruction="put the milk, the bread and the can into their bins", objects=OBJECTS,
    max_steps=2000, skills={"pick": "grasped({0})", "place": "in_bin({0})"},
    goals=("in_bin(milk)", "in_bin(bread)", "in_bin(can)"), targets=tuple(f"{o}_bin" for o in OBJECTS),
    skill_texts={"pick": "pick up the {0}", "place": "put the {0} into its bin"},
)
#: a tower: b goes onto a once a is on the base, so the order is fixed
TOWER = TaskSpec(name="tower", instruction="a on base, then b on a", objects=("a", "b", "base"), max_steps=500,
                 skills={"pick": "grasped({0})", "stack": "on({0},{1})"}, goals=("on(a,base)", "on(b,a)"))


def LearnedPlanner(*args, **kwargs):  # noqa: N802 - the planner under test, reading the tests' instructions
    kwargs.setdefault("grounder", ListedGrounder(BINS, TOWER))
    return _LearnedPlanner(*args, **kwargs)


class UncertainStateModel:
    """Reads every predicate at ``probs`` (default 0.01) and each object's heatmap uncertainty at ``uncertainty``."""

    is_oracle = False

    def __init__(self, uncertainty):
        self.cfg = SimpleNamespace(objects=OBJECTS, predicates=PREDICATES, camera="agentview")
        self.probs = dict.fromkeys(PREDICATES, 0.01)
        self.uncertainty = None if uncertainty is None else np.asarray(uncertainty, np.float64)

    def predict(self, observation: Observation, use_depth: bool = True) -> SceneState:
        kp = np.zeros((3, 2, 3))
        return SceneState(objects=OBJECTS, predicates=PREDICATES,
                          probabilities=np.array([self.probs[p] for p in PREDICATES]),
                          keypoints_px=np.zeros((3, 2, 2)), keypoints_3d=kp, object_confidence=np.ones(3),
                          scene_confidence=1.0, heatmap_entropy=np.zeros((3, 2)), object_uncertainty=self.uncertainty)


def _obs() -> Observation:
    return Observation(images={"agentview": np.zeros((84, 84, 3), np.uint8)},
                       proprio=np.array([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.08]))


def _plan(sm, **kwargs):
    planner, memory = LearnedPlanner(sm, **{"best_localized_first": True, **kwargs}), TaskMemoryV1()
    planner.reset(BINS)
    memory.start_episode(BINS)
    return planner, memory, planner.plan(_obs(), memory)


def test_the_best_localized_object_is_planned_first():
    # bread hidden behind the milk: its heatmap is diffuse; the can is the sharpest
    _, _, plan = _plan(UncertainStateModel([0.4, 3.0, -0.2]))
    assert [s.signature for s in plan.remaining] == ["pick(can)", "place(can,can_bin)", "pick(milk)",
                                                     "place(milk,milk_bin)", "pick(bread)", "place(bread,bread_bin)"]
    assert "best-localized object first (heatmap uncertainty: can -0.20, milk 0.40, bread 3.00)" in plan.rationale


def test_the_instruction_order_without_uncertainties_or_when_switched_off():
    assert LearnedPlanner(UncertainStateModel(None)).best_localized_first is False  # opt-in (README: per task)
    instruction = ["pick(milk)", "place(milk,milk_bin)", "pick(bread)", "place(bread,bread_bin)", "pick(can)",
                   "place(can,can_bin)"]
    for sm, kwargs in ((UncertainStateModel(None), {}), (UncertainStateModel([0.4, 3.0, -0.2]),
                                                          {"best_localized_first": False})):
        _, _, plan = _plan(sm, **kwargs)
        assert [s.signature for s in plan.remaining] == instruction
        assert "best-localized" not in plan.rationale


def test_a_held_object_and_a_running_pick_stay_first():
    sm = UncertainStateModel([0.4, 3.0, -0.2])
    sm.probs["grasped(bread)"] = 0.99  # held, however diffuse its heatmap (the gripper hides it)
    planner, memory, plan = _plan(sm)
    assert [s.signature for s in plan.done] == ["pick(bread)"]
    assert plan.remaining[0].signature == "place(bread,bread_bin)"
    # a pick of milk is running when the scene is read again (an asynchronous replan): milk stays first even though
    # the can now reads sharper
    sm.probs["grasped(bread)"], sm.probs["in_bin(bread)"] = 0.01, 0.99
    sm.uncertainty = np.array([0.4, 0.0, -0.2])
    assert planner.plan(_obs(), memory).remaining[0].signature == "pick(can)"
    sm.uncertainty = np.array([0.4, 0.0, 0.6])
    pick_milk = planner.plan(_obs(), memory).remaining[0]
    assert pick_milk.signature == "pick(milk)"
    memory.record_attempt(pick_milk, 0)
    sm.uncertainty = np.array([0.4, 0.0, -0.5])
    assert planner.plan(_obs(), memory).remaining[0].signature == "pick(milk)"


def test_goals_that_depend_on_each_other_keep_the_instruction_order():
    planner = GoalRegressionPlanner()
    planner.reset(TOWER)
    assert not planner.goals_order_free()
    planner.reset(BINS)
    assert planner.goals_order_free()


def test_a_goal_order_must_be_a_permutation_of_the_goals():
    planner, memory = GoalRegressionPlanner(), TaskMemoryV1()
    planner.reset(BINS)
    memory.start_episode(BINS)
    truth = dict.fromkeys(PREDICATES, False)
    with pytest.raises(ConfigError, match="not a permutation"):
        planner.plan_from_predicates(truth, memory, order=["in_bin(milk)", "in_bin(milk)", "in_bin(can)"])
    plan = planner.plan_from_predicates(truth, memory, order=["in_bin(can)", "in_bin(milk)", "in_bin(bread)"])
    assert plan.remaining[0].signature == "pick(can)"


def test_keypoint_uncertainty_is_the_entropy_in_training_spreads():
    p50, p99 = np.array([1.0, 2.0]), np.array([1.5, 2.05])  # the second spread is floored at 0.1 nats
    np.testing.assert_allclose(keypoint_uncertainty(np.array([1.5, 2.2]), p50, p99), [1.0, 2.0])
    np.testing.assert_allclose(keypoint_uncertainty(np.array([0.5, 2.0]), p50, p99), [-1.0, 0.0])
    assert np.isnan(keypoint_uncertainty(np.array([1.0]), np.zeros(1), np.full(1, np.inf))).all()


def test_an_instruction_that_states_the_order_is_followed_as_told():
    _, _, plan = _plan(UncertainStateModel([0.4, 3.0, -0.2]), grounder=ListedGrounder(BINS, ordered=True))
    assert [s.signature for s in plan.remaining][::2] == ["pick(milk)", "pick(bread)", "pick(can)"]
    assert "best-localized" not in plan.rationale
