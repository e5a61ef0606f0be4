"""OraclePlanner: symbolic plans from hand-made privileged predicates (no simulator)."""

from __future__ import annotations

import numpy as np
import pytest

from memory import TaskMemoryV1
from planner_vlm.oracle_planner import OraclePlanner
from tandem.core.errors import ConfigError, UnknownNameError
from tandem.core.protocols import Planner
from tandem.core.types import Observation, Plan, TaskSpec, Verdict

PREDS = {"pick": "grasped({0})", "place": "in_bin({0})", "stack": "on({0},{1})", "insert": "on_peg({0},{1})"}

STACK = TaskSpec(
    name="stack_three", instruction="stack red on green, then blue on red", objects=("red", "green", "blue"),
    max_steps=900, skills={k: PREDS[k] for k in ("pick", "stack")}, goals=("on(red,green)", "on(blue,red)"),
    skill_texts={"pick": "pick up the {0} cube", "stack": "stack the {0} cube on the {1} cube"},
)
BINS = TaskSpec(
    name="pick_place_bins", instruction="put the milk and the can in their bins", objects=("milk", "can"),
    max_steps=900, skills={k: PREDS[k] for k in ("pick", "place")}, goals=("in_bin(milk)", "in_bin(can)"),
    targets=("milk_bin", "bread_bin", "cereal_bin", "can_bin"),
    skill_texts={"pick": "pick up the {0}", "place": "place the {0} in its bin"},  # text names no bin
)
NUTS = TaskSpec(
    name="nut_assembly", instruction="square nut on the square peg, round nut on the round peg",
    objects=("square_nut", "round_nut"), max_steps=900, skills={k: PREDS[k] for k in ("pick", "insert")},
    goals=("on_peg(square_nut,square_peg)", "on_peg(round_nut,round_peg)"), targets=("square_peg", "round_peg"),
    skill_texts={"pick": "pick up the {0}", "insert": "put the {0} on the {1}"},
)


def obs(task: TaskSpec, true: tuple[str, ...] = (), extra: dict | None = None) -> Observation:
    """Observation whose predicates are the task's goals and grasped(obj), all False except ``true``."""
    preds = {g: False for g in task.goals} | {f"grasped({o})": False for o in task.objects} | (extra or {})
    for k in true:
        assert k in preds, k
        preds[k] = True
    return Observation(images={}, proprio=np.zeros(8), privileged={"predicates": preds, "objects": {}})


def sigs(subgoals) -> list[str]:
    return [s.signature for s in subgoals]


def setup(task: TaskSpec) -> tuple[OraclePlanner, TaskMemoryV1]:
    p, m = OraclePlanner(), TaskMemoryV1()
    p.reset(task)
    m.start_episode(task)
    return p, m


def test_implements_protocol():
    assert isinstance(OraclePlanner(), Planner)


def test_initial_plan_stack():
    p, m = setup(STACK)
    plan = p.plan(obs(STACK), m)
    assert plan.done == []
    assert sigs(plan.remaining) == ["pick(red)", "stack(red,green)", "pick(blue)", "stack(blue,red)"]
    assert [s.text for s in plan.remaining[:2]] == ["pick up the red cube", "stack the red cube on the green cube"]
    assert [s.id for s in plan.remaining] == ["sg1", "sg2", "sg3", "sg4"]
    assert "on(red,green) does not hold -> stack(red,green)" in plan.rationale


def test_initial_plan_bins_fills_the_bin_from_targets():
    p, m = setup(BINS)
    plan = p.plan(obs(BINS), m)
    assert sigs(plan.remaining) == ["pick(milk)", "place(milk,milk_bin)", "pick(can)", "place(can,can_bin)"]
    assert BINS.predicate_for("place", plan.remaining[1].args) == "in_bin(milk)"


def test_initial_plan_nuts():
    p, m = setup(NUTS)
    plan = p.plan(obs(NUTS), m)
    assert sigs(plan.remaining) == ["pick(square_nut)", "insert(square_nut,square_peg)", "pick(round_nut)",
                                    "insert(round_nut,round_peg)"]
    assert plan.remaining[1].text == "put the square_nut on the square_peg"


def test_partial_progress_moves_held_goals_to_done():
    p, m = setup(BINS)
    plan = p.plan(obs(BINS, true=("in_bin(milk)",)), m)
    assert sigs(plan.done) == ["pick(milk)", "place(milk,milk_bin)"]
    assert sigs(plan.remaining) == ["pick(can)", "place(can,can_bin)"]
    assert "in_bin(milk) holds" in plan.rationale


def test_all_goals_hold_means_nothing_remaining():
    p, m = setup(NUTS)
    plan = p.plan(obs(NUTS, true=NUTS.goals), m)
    assert plan.remaining == [] and plan.next is None and len(plan.done) == 4
    assert "all 2 goals hold" in plan.rationale


def test_grasped_object_skips_pick():
    p, m = setup(STACK)
    plan = p.plan(obs(STACK, true=("grasped(red)",)), m)
    assert sigs(plan.done) == ["pick(red)"]
    assert sigs(plan.remaining) == ["stack(red,green)", "pick(blue)", "stack(blue,red)"]
    assert "grasped(red) holds -> no pick needed" in plan.rationale


def test_grasped_object_of_a_later_goal_does_not_skip_its_pick():
    p, m = setup(STACK)
    plan = p.plan(obs(STACK, true=("grasped(blue)",)), m)
    assert sigs(plan.remaining) == ["pick(red)", "stack(red,green)", "pick(blue)", "stack(blue,red)"]


def run(p: OraclePlanner, m: TaskMemoryV1, o: Observation, outcome: bool, step: int) -> Plan:
    """Plan, record it, attempt the next subgoal and record a verdict (what the agent loop does)."""
    plan = p.plan(o, m)
    m.record_plan(plan, step, "oracle")
    m.record_attempt(plan.next, step)
    m.record_verdict(plan.next, Verdict(outcome, 1.0, "ok" if outcome else "red slipped", "oracle"), step + 50)
    return plan


def test_ids_are_stable_per_attempt_and_new_after_failure():
    p, m = setup(STACK)
    first = run(p, m, obs(STACK), outcome=False, step=0)  # pick(red) fails
    again = p.plan(obs(STACK), m)
    assert first.remaining[0].id == "sg1" and again.remaining[0].id == "sg5"  # retry: new id
    assert [s.id for s in again.remaining[1:]] == ["sg2", "sg3", "sg4"]  # untouched subgoals keep theirs
    assert "pick(red): 1 earlier attempt(s), last failed: red slipped" in again.rationale
    # replanning while the retry is running keeps its id
    m.record_plan(again, 60, "oracle")
    m.record_attempt(again.remaining[0], 60)
    assert p.plan(obs(STACK), m).remaining[0].id == "sg5"
    # a success keeps the id it was achieved under, in done
    m.record_verdict(again.remaining[0], Verdict(True, 1.0, "ok", "oracle"), 100)
    after = p.plan(obs(STACK, true=("grasped(red)",)), m)
    assert after.done[0].id == "sg5" and after.remaining[0].id == "sg2"


def test_knocked_cube_regression_reappears_in_remaining_with_new_ids():
    p, m = setup(STACK)
    run(p, m, obs(STACK), True, 0)  # pick(red)
    run(p, m, obs(STACK, true=("grasped(red)",)), True, 100)  # stack(red,green)
    placed = p.plan(obs(STACK, true=("on(red,green)",)), m)
    assert sigs(placed.done) == ["pick(red)", "stack(red,green)"] and placed.next.signature == "pick(blue)"
    old_ids = {s.signature: s.id for s in placed.done}
    # a perturbation knocks red off green
    m.record_event("perturbation", 312, name="knock", obj="red")
    m.record_fact("red", "knocked off green", 312)
    knocked = p.plan(obs(STACK), m)
    assert sigs(knocked.remaining) == ["pick(red)", "stack(red,green)", "pick(blue)", "stack(blue,red)"]
    assert "on(red,green) no longer holds (was done) -> redo" in knocked.rationale
    assert knocked.remaining[0].id != old_ids["pick(red)"] and knocked.remaining[1].id != old_ids["stack(red,green)"]
    assert knocked.done == []
    assert "stack(red,green): 1 earlier attempt(s), last succeeded (since undone)" in knocked.rationale


def test_regression_is_noticed_from_the_planners_own_previous_plan():
    p, m = setup(BINS)  # the goal held from the start: no attempt in memory
    start = p.plan(obs(BINS, true=("in_bin(milk)",)), m)
    later = p.plan(obs(BINS), m)
    assert "in_bin(milk) no longer holds (was done) -> redo" in later.rationale
    assert later.remaining[1].id != start.done[1].id


def test_later_goal_holding_before_an_earlier_one_is_reported_and_earlier_goal_planned():
    p, m = setup(STACK)
    plan = p.plan(obs(STACK, true=("on(blue,red)",)), m)
    assert sigs(plan.remaining) == ["pick(red)", "stack(red,green)"]
    assert sigs(plan.done) == ["pick(blue)", "stack(blue,red)"]
    assert "on(blue,red) holds but earlier goal on(red,green) does not" in plan.rationale
    assert "unstacking is out of scope" in plan.rationale


def test_missing_privileged_raises():
    p, m = setup(STACK)
    with pytest.raises(ConfigError, match="the oracle planner needs simulator ground truth"):
        p.plan(Observation(images={}, proprio=np.zeros(8)), m)
    with pytest.raises(ConfigError, match="no 'predicates'"):
        p.plan(Observation(images={}, proprio=np.zeros(8), privileged={"objects": {}}), m)


def test_missing_goal_predicate_raises_naming_it():
    p, m = setup(STACK)
    o = Observation(images={}, proprio=np.zeros(8), privileged={"predicates": {"on(red,green)": False}})
    with pytest.raises(UnknownNameError, match=r"unknown predicate 'grasped\(red\)'; known predicates: on\(red,green\)"):
        p.plan(o, m)


def test_plan_before_reset_raises():
    with pytest.raises(ConfigError, match="before reset"):
        OraclePlanner().plan(obs(STACK), TaskMemoryV1())


def test_goal_matching_no_skill_raises_at_reset():
    bad = TaskSpec(name="t", instruction="i", objects=("a",), max_steps=10, skills={"pick": "grasped({0})"},
                   goals=("under(a,b)",))
    with pytest.raises(ConfigError, match=r"goal 'under\(a,b\)' of task 't' matches no skill"):
        OraclePlanner().reset(bad)


def test_place_without_a_matching_target_raises_at_reset():
    bad = TaskSpec(name="t", instruction="i", objects=("milk",), max_steps=10, skills={k: PREDS[k] for k in ("pick", "place")},
                   goals=("in_bin(milk)",), targets=("bin_a", "bin_b"))
    with pytest.raises(ConfigError, match="cannot tell where place"):
        OraclePlanner().reset(bad)


DRAWER = TaskSpec(
    name="libero_like", instruction="put the bowl in the drawer and close it", objects=("bowl_1", "bottle_1"),
    max_steps=520, skills={"pick": "grasped({0})", "put_in": "in({0},{1})", "close": "close({0})"},
    goals=("in(bowl_1,drawer_region)", "close(drawer_region)"), targets=("drawer_region",),
    skill_texts={"pick": "pick up the {0}", "put_in": "put the {0} in the {1}", "close": "close the {0}"},
)


def test_a_fixture_goal_is_one_subgoal_without_a_pick():
    """Closing a drawer (its arg is a place, not one of the task's objects) needs no grasp of the drawer."""
    planner = OraclePlanner()
    planner.reset(DRAWER)
    plan = planner.plan(obs(DRAWER), TaskMemoryV1())
    assert [sg.signature for sg in plan.remaining] == ["pick(bowl_1)", "put_in(bowl_1,drawer_region)",
                                                      "close(drawer_region)"]
    plan = planner.plan(obs(DRAWER, ("in(bowl_1,drawer_region)",)), TaskMemoryV1())
    assert [sg.signature for sg in plan.remaining] == ["close(drawer_region)"]
