"""VLMPlanner with a scripted client and a fake memory: prompt content, logging, repair, fallback, replanning."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memory import TaskMemoryV1
from planner_vlm.clients.base import ImagePart, TextPart
from planner_vlm.clients.scripted_client import ScriptedVLMClient
from planner_vlm.factory import make_vlm_client, make_vlm_planner
from planner_vlm.prompts import available_versions, load_prompt
from planner_vlm.vlm_planner import VLMPlanner
from tandem.core.errors import ConfigError, UnknownNameError
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec, Verdict

TASK = TaskSpec(
    name="stack_three", instruction="stack the red cube on the green cube, then the blue cube on the red cube",
    objects=("red", "green", "blue"), max_steps=600, skills={"stack": "on({0},{1})"},
    goals=("on(red,green)", "on(blue,red)"), skill_texts={"stack": "stack the {0} cube on the {1} cube"},
    cameras=("agentview", "wrist"), image_size=(32, 32),
)


class FakeMemory:
    def __init__(self, view=None):
        self._view = view or {"instruction": TASK.instruction, "done": [], "remaining": [], "current": None,
                              "failures": [], "facts": {}, "attempts": {}}
        self.events: list[dict] = []

    def view(self):
        return self._view

    def record_event(self, kind, step, **data):
        self.events.append({"kind": kind, "step": step, **data})


def obs(step=0):
    rng = np.random.default_rng(step)
    return Observation(images={c: rng.integers(0, 255, (32, 32, 3), dtype=np.uint8) for c in ("agentview", "wrist")},
                       proprio=np.zeros(8), step=step)


def plan_reply(*pairs, done=(), trace=((3, 4), (20, 30))):
    sg = lambda a, b: {"skill": "stack", "args": [a, b], "text": f"{a} on {b}"}  # noqa: E731
    return json.dumps({"rationale": "because", "done": [sg(*p) for p in done], "remaining": [sg(*p) for p in pairs],
                       "next_trace": {"camera": "agentview", "points": [list(t) for t in trace]} if pairs else None})


GOOD = plan_reply(("red", "green"), ("blue", "red"))


def test_prompt_states_task_images_memory_skills_objects_schema():
    client = ScriptedVLMClient([GOOD])
    planner = VLMPlanner(client, TASK)
    plan = planner.plan(obs(), FakeMemory())
    assert [s.signature for s in plan.remaining] == ["stack(red,green)", "stack(blue,red)"]
    req = client.requests[0]
    system, user = req["messages"]
    assert system.role == "system" and "exactly one JSON object" in system.parts[0].text
    text = "\n".join(p.text for p in user.parts if isinstance(p, TextPart))
    for needle in [TASK.instruction, "- stack(A, B): stack the A cube on the B cube; succeeds when on(A,B)",
                   "OBJECTS: red, green, blue", "agentview, wrist", "32 x 32 pixels", "Remaining: (none)",
                   '"enum":["red","green","blue"]', '"agentview" image']:
        assert needle in text, needle
    imgs = [p for p in user.parts if isinstance(p, ImagePart)]
    assert [p.label for p in imgs] == ["agentview", "wrist"]
    assert req["json_schema"]["required"] == ["rationale", "done", "remaining", "next_trace"]
    assert req["schema_name"] == "tandem_plan"


def test_every_exchange_is_logged_without_pixels():
    mem = FakeMemory()
    VLMPlanner(ScriptedVLMClient([GOOD]), TASK).plan(obs(step=7), mem)
    (ev,) = mem.events
    assert ev["kind"] == "vlm_exchange" and ev["step"] == 7 and ev["component"] == "planner"
    assert ev["raw_reply"] == GOOD and ev["parse"] == {"ok": True} and ev["latency_s"] >= 0
    assert ev["images"] == [{"camera": "agentview", "shape": [32, 32, 3]}, {"camera": "wrist", "shape": [32, 32, 3]}]
    assert ev["prompt"] == "plan_v2" and len(ev["prompt_sha256"]) == 64 and ev["backend"] == "scripted"
    assert ev["plan"]["remaining"][0]["trace"]["points"] == [[3.0, 4.0], [20.0, 30.0]]
    s = json.dumps(ev)  # JSON-safe
    assert len(s) < 20_000 and "image" in s


def test_one_repair_round_shows_the_error_to_the_model():
    client = ScriptedVLMClient(['{"rationale": "x", "done": [], "remaining": [{"skill": "fly"', GOOD])
    mem = FakeMemory()
    plan = VLMPlanner(client, TASK).plan(obs(), mem)
    assert plan.remaining and len(client.requests) == 2
    repair = client.requests[1]["messages"]
    assert repair[-2].role == "assistant" and repair[-2].parts[0].text.startswith('{"rationale"')
    assert repair[-1].role == "user" and "invalid JSON" in repair[-1].parts[0].text
    assert [e["parse"]["ok"] for e in mem.events] == [False, True] and [e["round"] for e in mem.events] == [0, 1]
    assert "invalid JSON" in mem.events[0]["parse"]["error"]


def test_fallback_keeps_current_plan_and_is_recorded():
    client = ScriptedVLMClient([GOOD, "nonsense", '{"rationale": "", "done": [], "remaining": [{"skill": "stack", '
                                '"args": ["red", "purple"], "text": ""}], "next_trace": null}'])
    planner = VLMPlanner(client, TASK)
    mem = FakeMemory()
    first = planner.plan(obs(), mem)
    second = planner.plan(obs(1), mem)
    assert [s.signature for s in second.remaining] == [s.signature for s in first.remaining]
    assert second.rationale.startswith("fallback (kept the current plan)") and "purple" in second.rationale
    kinds = [e["kind"] for e in mem.events]
    assert kinds == ["vlm_exchange", "vlm_exchange", "vlm_exchange", "vlm_fallback"]
    assert mem.events[-1]["had_plan"] is True and planner.fallbacks == 1 and planner.last_fallback


def test_fallback_at_first_call_is_an_empty_plan_never_an_exception():
    mem = FakeMemory()
    plan = VLMPlanner(ScriptedVLMClient(["", "x" * 50_000]), TASK).plan(obs(), mem)
    assert plan.remaining == [] and plan.done == [] and "fallback" in plan.rationale
    assert mem.events[-1]["kind"] == "vlm_fallback" and mem.events[-1]["had_plan"] is False


def test_client_error_falls_back_without_repair():
    client = ScriptedVLMClient([])  # exhausted at once -> VLMClientError
    mem = FakeMemory()
    plan = VLMPlanner(client, TASK).plan(obs(), mem)
    assert plan.remaining == [] and len(client.requests) == 1
    assert "script exhausted" in mem.events[0]["parse"]["error"] and mem.events[0]["raw_reply"] is None


def test_replan_prompt_carries_the_failure_and_ids_are_stable():
    client = ScriptedVLMClient([GOOD, plan_reply(("green", "blue"), ("red", "green"), ("blue", "red"))])
    planner = VLMPlanner(client, TASK)
    p1 = planner.plan(obs(), FakeMemory())
    failed = {"instruction": TASK.instruction, "done": [], "remaining": ["stack(red,green)", "stack(blue,red)"],
              "current": "stack(red,green)", "facts": {},
              "failures": [{"subgoal": "stack(red,green)", "attempt": 1, "reason": "on(red,green) is false"}]}
    p2 = planner.plan(obs(1), FakeMemory(failed))
    text = client.requests[1]["messages"][1].parts[0].text
    assert "LAST FAILURE: subgoal stack(red,green) failed on attempt 1: on(red,green) is false." in text
    ids1 = {s.signature: s.id for s in p1.remaining}
    ids2 = {s.signature: s.id for s in p2.remaining}
    assert ids2["stack(red,green)"] == ids1["stack(red,green)"] and ids2["stack(blue,red)"] == ids1["stack(blue,red)"]
    assert ids2["stack(green,blue)"] not in ids1.values()


def failed_episode(n_failures: int) -> TaskMemoryV1:
    """A real task memory with a plan, ``n_failures`` failed attempts at stacking red on green, and object facts."""
    m = TaskMemoryV1(max_failures_in_view=n_failures)
    m.start_episode(TASK)
    sgs = [Subgoal(f"sg{i}", "stack", (a, b), TASK.subgoal_text("stack", (a, b)))
           for i, (a, b) in enumerate([("red", "green"), ("blue", "red")])]
    m.record_plan(Plan(done=[], remaining=sgs, rationale="two stacks"), 0, "vlm")
    for k in range(n_failures):
        m.record_attempt(sgs[0], 10 * k)
        m.record_verdict(sgs[0], Verdict(False, 0.8, f"red fell off green, try {k}: " + "it slid " * 6, "vlm"),
                         10 * k + 9)
        m.record_fact("red", f"seen beside green, try {k}", 10 * k + 9)
    return m


def test_prompt_memory_is_the_views_text():
    """The plan prompt's memory is exactly ``MemoryView.to_text(memory_tokens)`` of the memory's view."""
    mem = failed_episode(3)
    client = ScriptedVLMClient([GOOD])
    planner = VLMPlanner(client, TASK)
    planner.plan(obs(), mem)
    text = client.requests[0]["messages"][1].parts[0].text
    view_text = mem.memory_view().to_text(planner.memory_tokens)
    assert "Last failure: stack(red,green) attempt 3 (step 29)" in view_text and "- red: seen beside green" in view_text
    assert "TASK MEMORY (" in text and f"\n{view_text}\n" in text
    assert '"failures"' not in text.split("JSON SCHEMA:")[0]  # no JSON dump of the view


def test_a_model_stand_in_reads_the_plan_outcomes_and_last_failure_back_from_the_prompt():
    from planner_vlm.prompting import memory_in_prompt
    from tandem.core.memory_view import MemoryView

    mem = failed_episode(3)
    client = ScriptedVLMClient([GOOD])
    VLMPlanner(client, TASK).plan(obs(), mem)
    read = memory_in_prompt(client.requests[0]["messages"][1].parts[0].text)
    view = mem.memory_view()
    assert (read.done, read.remaining, read.attempts, read.last_outcome) == (view.done, view.remaining,
                                                                             view.attempts, view.last_outcome)
    assert read.last_failure is not None and read.last_failure["subgoal"] == "stack(red,green)"
    assert memory_in_prompt("TASK: stack\nno memory here") == MemoryView()


def test_prompt_memory_budget_drops_whole_entries():
    mem = failed_episode(12)
    full = mem.memory_view().to_text().splitlines()
    client = ScriptedVLMClient([GOOD])
    planner = make_vlm_planner({"backend": "scripted", "memory_tokens": 120}, TASK, client=client)
    assert planner.memory_tokens == 120
    planner.plan(obs(), mem)
    text = client.requests[0]["messages"][1].parts[0].text
    block = text.split("TASK MEMORY (")[1].split("\n", 1)[1].split("\n\nLAST FAILURE")[0].splitlines()
    assert block == mem.memory_view().to_text(120).splitlines()
    *entries, note = block
    assert note.endswith("lower-priority memory entries not shown)") and len(entries) < len(full)
    assert all(e in full for e in entries)  # whole entries, none cut
    assert "truncated" not in text
    with pytest.raises(ConfigError, match="memory_tokens"):
        VLMPlanner(ScriptedVLMClient([GOOD]), TASK, memory_tokens=0)


def test_config_and_prompt_errors():
    with pytest.raises(ConfigError, match="trace_camera"):
        VLMPlanner(ScriptedVLMClient([GOOD]), TASK, trace_camera="frontview")
    with pytest.raises(ConfigError, match="reset"):
        VLMPlanner(ScriptedVLMClient([GOOD])).plan(obs(), None)
    with pytest.raises(ConfigError, match="available versions"):
        load_prompt("plan", "v999")
    assert "v1" in available_versions("plan")
    with pytest.raises(ConfigError, match="camera 'front'"):
        VLMPlanner(ScriptedVLMClient([GOOD]), TASK, cameras=["front"]).plan(obs(), None)


def test_factory_builds_from_config_dicts():
    p = make_vlm_planner({"backend": "scripted", "replies": [GOOD], "trace_camera": "wrist"}, TASK)
    assert p.trace_camera == "wrist" and p.client.backend == "scripted"
    with pytest.raises(UnknownNameError, match="VLM backend"):
        make_vlm_client({"backend": "carrier-pigeon"})
    with pytest.raises(ConfigError, match="model_path"):
        make_vlm_client({"backend": "transformers"})
    with pytest.raises(ConfigError, match="not a model directory"):
        make_vlm_client({"backend": "transformers", "model_path": "/nonexistent/dir"})
    with pytest.raises(ConfigError, match="base_url"):
        make_vlm_client({"backend": "openai", "model": "m"})
    from omegaconf import OmegaConf

    c = make_vlm_client(OmegaConf.create({"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                                          "timeout_s": 5, "max_retries": 0}))
    assert c.timeout_s == 5 and c.max_retries == 0


def test_the_vlm_gets_the_vocabulary_and_its_goals_are_checked_against_a_grounder():
    from grounding_fakes import ListedGrounder

    from sim.tasks.registry import task_vocabulary
    from tandem.core.privileged import withhold_goals

    task = withhold_goals(replace_vocab(TASK, task_vocabulary("stack_three")), "planner VLMPlanner")
    grounder = ListedGrounder(readings={TASK.instruction: ("on(blue,green)", "on(red,blue)")})
    client = ScriptedVLMClient([GOOD])
    planner = VLMPlanner(client, task, grounder=grounder)
    memory = FakeMemory()
    assert planner.grounding.grounded_by == "vlm" and planner.grounding.goals == ()
    planner.plan(obs(), memory)
    user = " ".join(p.text for p in client.requests[0]["messages"][1].parts if isinstance(p, TextPart))
    assert "red (red cube, red block" in user  # the vocabulary's words for each object
    assert planner.grounding.goals == ("on(red,green)", "on(blue,red)")
    assert planner.grounding.details == {"checked_against": "listed (test)", "agrees": False}
    [event] = [e for e in memory.events if e["kind"] == "grounding_disagreement"]
    assert event["vlm"] == ["on(red,green)", "on(blue,red)"] and event["grounder"]["goals"][0] == "on(blue,green)"


def replace_vocab(task, vocab):
    import dataclasses

    return dataclasses.replace(task, vocabulary=vocab)
