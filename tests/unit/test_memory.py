"""TaskMemoryV1: attempts, failures (with causes), facts, plan progress, replans, view, JSONL round trip,
malformed files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memory import MemoryFileError, MemoryView, TaskMemoryV1
from tandem.core.errors import ConfigError
from tandem.core.protocols import TaskMemory
from tandem.core.types import Plan, Subgoal, TaskSpec, Verdict

SPEC = TaskSpec(
    name="stack_three", instruction="stack red on green, then blue on red", objects=("red", "green", "blue"),
    max_steps=900, skills={"pick": "grasped({0})", "stack": "on({0},{1})"}, goals=("on(red,green)", "on(blue,red)"),
    skill_texts={"pick": "pick up the {0} cube", "stack": "stack the {0} cube on the {1} cube"},
)


def sg(id_: str, skill: str, *args: str) -> Subgoal:
    return Subgoal(id=id_, skill=skill, args=args, text=SPEC.subgoal_text(skill, args))


PICK_R, STACK_RG = sg("sg1", "pick", "red"), sg("sg2", "stack", "red", "green")
PICK_B, STACK_BR = sg("sg3", "pick", "blue"), sg("sg4", "stack", "blue", "red")


def fail(reason: str) -> Verdict:
    return Verdict(False, 1.0, reason, "oracle")


OK = Verdict(True, 1.0, "holds", "oracle")


def episode() -> TaskMemoryV1:
    """pick red ok; stack fails (dropped), retried ok; red knocked off later; replanned."""
    m = TaskMemoryV1(max_failures_in_view=2)
    m.start_episode(SPEC, meta={"seed": 3, "arr": np.arange(2)})
    m.record_plan(Plan(done=[], remaining=[PICK_R, STACK_RG, PICK_B, STACK_BR], rationale="initial"), 0, "oracle")
    assert m.record_attempt(PICK_R, 0) == 1
    m.record_verdict(PICK_R, OK, 80)
    assert m.record_attempt(STACK_RG, 80) == 1
    m.record_verdict(STACK_RG, fail("on(red,green) is false: red is at (0.12, -0.05, 0.83)"), 150)
    m.record_plan(Plan(done=[PICK_R], remaining=[sg("sg5", "stack", "red", "green"), PICK_B, STACK_BR]), 150, "oracle")
    assert m.record_attempt(STACK_RG, 150) == 2
    m.record_verdict(STACK_RG, OK, 230)
    m.record_event("perturbation", 312, name="knock", obj="red", delta=np.array([0.1, 0.0, 0.0], np.float32))
    m.record_fact("red", "knocked off green", 312)
    return m


def test_implements_protocol():
    assert isinstance(TaskMemoryV1(), TaskMemory)


def test_attempts_are_counted_per_signature():
    m = episode()
    assert m.attempts(STACK_RG) == 2
    assert m.attempts(sg("other-id", "stack", "red", "green")) == 2  # by signature, not by id
    assert m.attempts("pick(red)") == 1 and m.attempts(PICK_B) == 0


def test_failures_keep_reason_step_and_attempt():
    m = episode()
    assert m.failures == [{"subgoal": "stack(red,green)", "text": "stack the red cube on the green cube", "attempt": 1,
                           "step": 150, "reason": "on(red,green) is false: red is at (0.12, -0.05, 0.83)",
                           "cause": "unknown"}]
    assert m.last_outcome == {"pick(red)": "success", "stack(red,green)": "success"}


def test_view_contents():
    m = episode()
    v = m.view()
    json.dumps(v)  # JSON-safe
    assert v["instruction"] == SPEC.instruction and v["task"] == "stack_three" and v["plan_source"] == "oracle"
    # the success verdict moved stack(red,green) from remaining to done without a replan
    assert v["done"] == ["pick up the red cube", "stack the red cube on the green cube"]
    assert v["remaining"] == ["pick up the blue cube", "stack the blue cube on the red cube"]
    assert v["current"] is None
    assert v["failures"] == [{"subgoal": "stack(red,green)", "attempt": 1, "step": 150, "cause": "unknown",
                              "reason": "on(red,green) is false: red is at (0.12, -0.05, 0.83)"}]
    assert v["last_failure"] == v["failures"][-1] and v["current_attempt"] == 0 and v["hints"] == []
    assert v["facts"] == {"red": ["knocked off green at step 312"]}
    assert v["attempts"] == {"pick(red)": 1, "stack(red,green)": 2}


def test_current_is_the_running_attempt():
    m = episode()
    m.record_attempt(PICK_B, 240)
    assert m.view()["current"] == "pick up the blue cube"
    assert m.view()["last_outcome"]["pick(blue)"] == "running"


def test_view_shows_only_the_last_failures():
    m = episode()
    for k in range(3):
        m.record_attempt(PICK_B, 300 + k)
        m.record_verdict(PICK_B, fail(f"miss {k}"), 301 + k)
    v = m.view()
    assert [f["reason"] for f in v["failures"]] == ["miss 1", "miss 2"]  # max_failures_in_view=2
    assert len(m.failures) == 4 and v["attempts"]["pick(blue)"] == 3
    assert [f["attempt"] for f in v["failures"]] == [2, 3]


def test_event_log_is_append_only_and_complete():
    m = episode()
    kinds = [e["kind"] for e in m.events()]
    assert kinds == ["episode_start", "plan", "attempt", "verdict", "attempt", "verdict", "failure", "replan", "plan",
                     "attempt", "verdict", "perturbation", "fact"]
    assert all(isinstance(e["step"], int) for e in m.events())
    replan = m.events()[7]
    assert replan["after_failure"] and replan["failed"] == "stack(red,green)"
    assert replan["reason"] == "after the failure of stack(red,green) (attempt 1)"
    pert = m.events()[11]
    assert pert["delta"] == pytest.approx([0.1, 0.0, 0.0]) and pert["obj"] == "red"
    assert m.plan_history[1]["remaining"] == ["stack(red,green)", "pick(blue)", "stack(blue,red)"]
    assert m.plan_history[1]["done"] == ["pick(red)"]


def test_jsonl_round_trip(tmp_path):
    m = episode()
    path = m.save(tmp_path / "sub" / "memory.jsonl")
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "tandem.task_memory" and len(lines) == 1 + len(m.events())
    m2 = TaskMemoryV1.load(path)
    assert m2.view() == m.view()
    assert m2.events() == m.events()
    assert m2.plan_history == m.plan_history and m2.task == SPEC and m2.meta == {"seed": 3, "arr": [0, 1]}
    # the loaded memory keeps working
    assert m2.record_attempt(STACK_BR, 400) == 1


def test_malformed_file_names_file_and_line(tmp_path):
    path = episode().save(tmp_path / "m.jsonl")
    lines = path.read_text().splitlines()
    lines[4] = lines[4][:20]  # a cut-off line in the middle
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MemoryFileError, match=r"m\.jsonl:5: not JSON .*after 3 valid event lines") as ei:
        TaskMemoryV1.load(path)
    assert ei.value.line == 5 and isinstance(ei.value, ValueError)


def test_non_strict_load_keeps_valid_lines_and_reports_skipped(tmp_path):
    m = episode()
    path = m.save(tmp_path / "m.jsonl")
    with path.open("a") as f:
        f.write('{"kind": "attempt", "step": 500, "subgoal": {"id": "x"}}\n')  # lacks signature/attempt
        f.write('{"kind": "fact", "step": 501, "object": "blue", "fact": "fell"}\n')
        f.write('{"kind": "verdict", "step": 5')  # cut off by a crash
    with pytest.raises(MemoryFileError, match=r":15: 'attempt' event lacks \['signature', 'attempt'\]"):
        TaskMemoryV1.load(path)
    with pytest.warns(UserWarning, match="skipped"):
        m2 = TaskMemoryV1.load(path, strict=False)
    assert [ln for ln, _ in m2.skipped_lines] == [15, 17]
    assert m2.events()[:-1] == m.events() and m2.view()["facts"]["blue"] == ["fell at step 501"]


def test_semantically_bad_event_is_rejected_without_corrupting_state(tmp_path):
    m = episode()
    path = m.save(tmp_path / "m.jsonl")
    with path.open("a") as f:
        f.write('{"kind": "plan", "step": 9, "source": "x", "plan": {"done": [{"id": "a"}], "remaining": []}}\n')
    with pytest.raises(MemoryFileError, match=r":15: malformed 'plan' event \(KeyError"):
        TaskMemoryV1.load(path)
    with pytest.warns(UserWarning):
        m2 = TaskMemoryV1.load(path, strict=False)
    assert m2.view() == m.view() and m2.events() == m.events()


@pytest.mark.parametrize("content, match", [
    ("", "empty file"),
    ('{"format": "something_else"}\n', "not a task-memory header"),
    ('{"format": "tandem.task_memory", "version": 99}\n', "unsupported version 99"),
    ('{"format": "tandem.task_memory", "version": 1}\n{"kind": "fact", "step": 1, "object": "a", "fact": "b"}\n',
     ":2: 'fact' event before 'episode_start'"),
    ('{"format": "tandem.task_memory", "version": 1}\n[1, 2]\n', ":2: event must be a JSON object"),
])
def test_bad_files_raise_clear_errors(tmp_path, content, match):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(MemoryFileError, match=match):
        TaskMemoryV1.load(path)


def test_missing_file_raises(tmp_path):
    with pytest.raises(MemoryFileError, match="no such file"):
        TaskMemoryV1.load(tmp_path / "nope.jsonl")


def test_misuse_raises_config_errors():
    m = TaskMemoryV1()
    with pytest.raises(ConfigError, match="before start_episode"):
        m.record_attempt(PICK_R, 0)
    m.start_episode(SPEC)
    with pytest.raises(ConfigError, match="reserved"):
        m.record_event("plan", 0, x=1)
    with pytest.raises(ConfigError, match=">= 1"):
        TaskMemoryV1(max_failures_in_view=0)


def test_start_episode_forgets_the_previous_episode():
    m = episode()
    m.start_episode(SPEC)
    v = m.view()
    assert v["done"] == [] and v["failures"] == [] and v["attempts"] == {} and len(m.events()) == 1


def test_prompt_text_is_compact_and_complete():
    text = episode().memory_view().to_text()
    assert text.splitlines()[0] == f"Instruction: {SPEC.instruction}"
    assert "Done: 1. pick up the red cube; 2. stack the red cube on the green cube" in text
    assert "Last failure: stack(red,green) attempt 1 (step 150), cause " in text
    assert "- red: knocked off green at step 312" in text
    assert "Verified outcomes: pick(red): success (1 attempt); stack(red,green): success (2 attempts)" in text
    assert "Current:" not in text
    assert MemoryView.from_dict({}).to_text() == "Remaining: (none)\nDone: (none)"
