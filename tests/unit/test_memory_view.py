"""MemoryView: bounded whatever the episode length (1,000-event episode), token budget, features, failure causes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memory.failures import classify_failure
from memory.records import FailureCause
from memory.task_memory import TaskMemoryV1
from tandem.core.memory_view import FEATURE_NAMES, MAX_PLAN_ITEMS, MAX_TEXT, MemoryView, approx_tokens
from tandem.core.types import KeypointTrace, Plan, Subgoal, TaskSpec, Verdict

OBJECTS = tuple(f"obj{i}" for i in range(30))
SPEC = TaskSpec(name="clutter", instruction="put every object into the bin", objects=OBJECTS, max_steps=100000,
                skills={"pick": "grasped({0})", "place": "in_bin({0})"}, goals=tuple(f"in_bin({o})" for o in OBJECTS),
                skill_texts={"pick": "pick up the {0}", "place": "put the {0} into the bin"})


def sg(skill: str, obj: str, k: int = 0) -> Subgoal:
    return Subgoal(f"sg{k}", skill, (obj,), SPEC.subgoal_text(skill, (obj,)))


def long_episode(n_events: int) -> TaskMemoryV1:
    """An episode of ``n_events`` records: plans of 60 subgoals, failing and succeeding attempts, facts about
    every object, chatty model exchanges."""
    m = TaskMemoryV1()
    m.start_episode(SPEC)
    step, k = 0, 0
    while len(m.records()) < n_events:
        obj = OBJECTS[k % len(OBJECTS)]
        plan = [sg(s, o, i) for i, (s, o) in enumerate((s, o) for o in OBJECTS for s in ("pick", "place"))]
        m.record_plan(Plan(done=plan[: k % 50], remaining=plan[k % 50:], rationale="r" * 500), step, "vlm")
        pick = sg("pick", obj, k)
        m.record_attempt(pick, step)
        step += 7
        ok = k % 3 == 0
        reason = "grasped ok" if ok else f"grasped({obj}) is false: {obj} moved 0.20 m during the attempt " + "x" * 400
        m.record_verdict(pick, Verdict(ok, 0.9, reason, "vlm"), step)
        m.record_fact(obj, f"seen near the bin edge, round {k} " + "y" * 300, step, source="perception",
                      pixel=(10.0 + k, 20.0), camera="agentview")
        m.record_event("vlm_exchange", step, prompt="p" * 2000, reply="{}")
        k += 1
    return m


def test_view_size_is_bounded_for_a_1000_event_episode():
    short, long_ = long_episode(100), long_episode(1000)
    assert len(long_.events()) >= 1000
    v_short, v_long = short.view(), long_.view()
    size_short, size_long = len(json.dumps(v_short)), len(json.dumps(v_long))
    # a fixed bound independent of the number of events: 8 + 8 plan texts, 5 failures, 3 facts for <= 16
    # relevant objects, all strings clipped, counters only for the shown signatures
    bound = (2 * MAX_PLAN_ITEMS + 5 + 3 * 2 * MAX_PLAN_ITEMS + 4 + 4) * (MAX_TEXT + 120)
    assert size_long < bound and size_short < bound
    assert size_long < 2 * size_short  # it does not grow with the episode
    assert len(v_long["done"]) <= MAX_PLAN_ITEMS and len(v_long["remaining"]) <= MAX_PLAN_ITEMS
    assert len(v_long["failures"]) == 5 and all(len(f["reason"]) <= MAX_TEXT for f in v_long["failures"])
    assert len(v_long["facts"]) <= 2 * MAX_PLAN_ITEMS and all(len(fs) <= 3 for fs in v_long["facts"].values())
    assert len(v_long["attempts"]) <= 2 * MAX_PLAN_ITEMS + 1
    mv = long_.memory_view()
    assert mv.n_remaining + mv.n_done == 60 and mv.total_failures > 90


def test_prompt_text_fits_the_token_budget_and_keeps_what_matters():
    m = long_episode(1000)
    mv = m.memory_view()
    full = mv.to_text()
    assert approx_tokens(full) > 400
    for budget in (60, 150, 400):
        text = mv.to_text(max_tokens=budget)
        assert approx_tokens(text) + text.count("\n") + 1 <= budget
        assert text.startswith("Instruction: put every object into the bin")
    text = mv.to_text(max_tokens=150)
    assert "Last failure:" in text and "cause object_moved" in text  # the last failure outranks facts and history
    assert "Earlier failures:" not in text
    tiny = mv.to_text(max_tokens=3)
    assert approx_tokens(tiny) <= 2 and tiny  # even the first line is cut to the budget
    with pytest.raises(ValueError, match="max_tokens"):
        mv.to_text(max_tokens=0)
    # a custom tokenizer (e.g. the model's) is used for the budget
    chars = mv.to_text(max_tokens=300, count_tokens=len)
    assert sum(len(ln) + 1 for ln in chars.splitlines()) <= 300


def test_features_have_a_fixed_size_and_encode_the_last_cause():
    m = TaskMemoryV1()
    m.start_episode(SPEC)
    assert m.memory_view().features().shape == (len(FEATURE_NAMES),)
    long_f = long_episode(1000).memory_view().features()
    assert long_f.shape == (len(FEATURE_NAMES),) and long_f.dtype == np.float32
    named = dict(zip(FEATURE_NAMES, long_f.tolist(), strict=True))
    assert named["last_cause_object_moved"] == 1.0 and named["has_last_failure"] == 1.0
    assert sum(v for k, v in named.items() if k.startswith("last_cause_")) == 1.0


def test_current_attempt_and_last_failure_with_cause():
    m = TaskMemoryV1()
    m.start_episode(SPEC)
    pick = sg("pick", "obj1")
    m.record_plan(Plan(remaining=[pick, sg("place", "obj1")]), 0, "oracle")
    m.record_attempt(pick, 0)
    m.record_verdict(pick, Verdict(False, 1.0, "grasped(obj1) is false: obj1 is at (0.1, 0.0, 0.8), did not move "
                                               "during the attempt", "oracle"), 40)
    m.record_attempt(pick, 40)
    v = m.view()
    assert v["current"] == "pick up the obj1" and v["current_attempt"] == 2
    assert v["last_failure"]["cause"] == "grasp_slipped" and v["last_failure"]["attempt"] == 1
    text = MemoryView.from_dict(v).to_text()
    assert "obj1: grasp_slipped" not in text
    assert "Last failure: pick(obj1) attempt 1 (step 40), cause grasp_slipped:" in text
    assert m.memory_view().features()[FEATURE_NAMES.index("current_attempt")] == 2


def test_trace_end_is_recorded_as_where_the_object_was_seen():
    m = TaskMemoryV1()
    m.start_episode(SPEC)
    trace = KeypointTrace("agentview", np.array([[5.0, 6.0], [40.0, 70.0]]), (128, 128))
    m.record_attempt(Subgoal("sg1", "pick", ("obj3",), "pick", trace=trace), 12)
    (fact,) = m.facts["obj3"]
    assert fact["pixel"] == (40.0, 70.0) and fact["camera"] == "agentview" and fact["source"] == "trace"


@pytest.mark.parametrize("signature, reason, cause", [
    ("pick(a)", "step budget of 400 spent; grasped(a) is false", FailureCause.TIMEOUT),
    ("pick(a)", "grasped(a) is false: a is at (0.1, 0.2, 0.8), moved 0.12 m during the attempt", FailureCause.OBJECT_MOVED),
    ("pick(a)", "grasped(a) is false: a is at (0.1, 0.2, 0.8), moved 0.01 m during the attempt", FailureCause.GRASP_SLIPPED),
    ("pick(a)", "grasped(a) is false: a is at (0.1, 0.2, 0.8), did not move during the attempt", FailureCause.GRASP_SLIPPED),
    ("stack(a,b)", "on(a,b) is false: a is at (0.1, 0.2, 0.8), 0.20 m from b (horizontal 0.2 m, height +0.0 m), "
                   "0.31 m from the gripper, moved 0.15 m during the attempt", FailureCause.GRASP_SLIPPED),
    ("stack(a,b)", "on(a,b) is false: a is at (0.1, 0.2, 0.9), 0.02 m from the gripper, moved 0.2 m during the "
                   "attempt, a is still grasped (not released)", FailureCause.UNKNOWN),
    ("place(a,bin)", "the target is out of reach of the arm", FailureCause.UNREACHABLE),
    ("pick(a)", "the robot grasped the wrong object", FailureCause.WRONG_OBJECT),
    ("place(a,bin)", "the milk was knocked over", FailureCause.OBJECT_MOVED),
    ("place(a,bin)", "it dropped the carton", FailureCause.GRASP_SLIPPED),
    ("place(a,bin)", "no idea", FailureCause.UNKNOWN),
])
def test_failure_causes(signature, reason, cause):
    assert classify_failure(signature, reason)[0] is cause


def test_the_json_view_reads_back_as_the_same_view():
    mv = long_episode(300).memory_view()
    back = MemoryView.from_dict(json.loads(json.dumps(mv.to_dict())))
    assert back == mv
    assert back.to_text(max_tokens=200) == mv.to_text(max_tokens=200)
    assert np.array_equal(back.features(), mv.features())


def test_a_partial_view_of_another_memory_reads_with_defaults():
    mv = MemoryView.from_dict({"done": ["pick up the obj1"], "failures": [{"subgoal": "pick(obj2)", "reason": "slipped"}],
                               "facts": {"obj2": "on the floor"}, "attempts": {"pick(obj2)": 2}})
    assert mv.n_done == 1 and mv.total_attempts == 2 and mv.total_failures == 1
    assert mv.last_failure == {"subgoal": "pick(obj2)", "attempt": "?", "step": "?", "cause": "unknown",
                               "reason": "slipped"}
    assert mv.facts == {"obj2": ("on the floor",)}
    assert "Last failure: pick(obj2) attempt ? (step ?), cause unknown: slipped" in mv.to_text()
    assert MemoryView.from_dict(None) == MemoryView()
    with pytest.raises(TypeError, match="TaskMemory.view"):
        MemoryView.from_dict(["done"])  # type: ignore[arg-type]


@pytest.mark.parametrize("budget", [40, 90, 150, 260, 400])
def test_truncation_drops_whole_entries_and_says_how_many(budget):
    mv = long_episode(1000).memory_view()
    full = mv.to_text().splitlines()
    text = mv.to_text(max_tokens=budget)
    assert approx_tokens(text) + text.count("\n") + 1 <= budget
    lines = text.splitlines()
    note = lines.pop()
    n_left = int(note.split(" ")[0].lstrip("("))
    assert note == f"({n_left} lower-priority memory entries not shown)"
    # every kept line is a whole entry of the full text, in the full text's order; none is cut
    positions = [full.index(ln) for ln in lines]
    assert positions == sorted(positions)
    headers = {"Lessons from earlier episodes:", "Object facts:", "Earlier failures:"}
    assert n_left == sum(ln not in headers for ln in full) - sum(ln not in headers for ln in lines) > 0
    # a dropped entry is never more important than a kept one: the last failure and the plan come first
    assert lines[0].startswith("Instruction:")
    if budget >= 150:
        assert any(ln.startswith("Last failure:") for ln in lines[:3])
    if any(ln.startswith("- obj") for ln in lines):  # facts only once the plan and the done list are in
        assert any(ln.startswith("Done:") for ln in lines)


def test_the_prompt_text_reads_back_the_plan_outcomes_and_last_failure():
    mv = long_episode(1000).memory_view()
    back = MemoryView.from_text(mv.to_text())
    assert (back.instruction, back.done, back.remaining, back.current) == (mv.instruction, mv.done, mv.remaining,
                                                                           mv.current)
    assert back.attempts == mv.attempts and back.last_outcome == {s: o for s, o in mv.last_outcome.items()}
    assert back.last_failure is not None and back.last_failure["subgoal"] == mv.last_failure["subgoal"]
    assert back.last_failure["cause"] == mv.last_failure["cause"]
    # a text cut to a budget reads too (lines it lost are empty), and so does nothing at all
    cut = MemoryView.from_text(mv.to_text(max_tokens=60))
    assert cut.instruction == mv.instruction and cut.attempts == {}
    assert MemoryView.from_text("") == MemoryView()
