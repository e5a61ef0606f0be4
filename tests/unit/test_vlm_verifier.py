"""VLMVerifier with a scripted client: before/after images, verdict parsing, repair, fallback, logging."""

from __future__ import annotations

import json

import numpy as np

from memory import TaskMemoryV1
from planner_vlm.clients.base import ImagePart, TextPart
from planner_vlm.clients.scripted_client import ScriptedVLMClient
from planner_vlm.factory import make_vlm_verifier
from planner_vlm.vlm_verifier import VLMVerifier
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec, Verdict

TASK = TaskSpec(name="stack_three", instruction="stack red on green", objects=("red", "green"), max_steps=100,
                skills={"stack": "on({0},{1})"}, cameras=("agentview", "wrist"), image_size=(8, 8))
SG = Subgoal(id="vlm0", skill="stack", args=("red", "green"), text="stack the red cube on the green cube")


class FakeMemory:
    def __init__(self):
        self.events = []

    def view(self):
        return {}

    def record_event(self, kind, step, **data):
        self.events.append({"kind": kind, "step": step, **data})


def obs(v, step):
    img = np.full((8, 8, 3), v, np.uint8)
    return Observation(images={"agentview": img, "wrist": img + 1}, proprio=np.zeros(8), step=step)


def test_verdict_from_before_and_after_images():
    client = ScriptedVLMClient(['{"success": true, "confidence": 0.9, "reason": "red is on green"}'])
    mem = FakeMemory()
    ver = VLMVerifier(client, TASK)
    ver.attach_memory(mem)
    v = ver.verify(obs(0, 10), obs(100, 42), SG)
    assert (v.success, v.confidence, v.reason, v.source) == (True, 0.9, "red is on green", "vlm")
    user = client.requests[0]["messages"][1]
    imgs = [p for p in user.parts if isinstance(p, ImagePart)]
    assert [p.label for p in imgs] == ["agentview BEFORE", "agentview AFTER", "wrist BEFORE", "wrist AFTER"]
    assert imgs[0].image[0, 0, 0] == 0 and imgs[1].image[0, 0, 0] == 100
    text = user.parts[0].text
    assert isinstance(user.parts[0], TextPart) and "SUBGOAL: stack the red cube on the green cube" in text
    assert "on(red,green)" in text and client.requests[0]["schema_name"] == "tandem_verdict"
    (ev,) = mem.events
    assert ev["kind"] == "vlm_exchange" and ev["step"] == 42 and ev["component"] == "verifier"
    assert ev["verdict"]["success"] is True and ev["subgoal"] == "stack(red,green)"
    json.dumps(ev)


def test_repair_then_fallback_to_a_failed_verdict():
    client = ScriptedVLMClient(['{"success": "yes"}', "I think it worked"])
    mem = FakeMemory()
    ver = make_vlm_verifier({"backend": "scripted", "replies": ["x"]}, TASK, client=client)
    ver.reset(TASK, mem)
    v = ver.verify(obs(0, 1), obs(1, 2), SG)
    assert v.success is False and v.confidence == 0.0 and v.source == "vlm"
    assert "no usable verdict" in v.reason
    assert [e["kind"] for e in mem.events] == ["vlm_exchange", "vlm_exchange", "vlm_fallback"]
    assert "could not be used" in client.requests[1]["messages"][-1].parts[0].text


def test_repair_succeeds_and_cameras_can_be_chosen():
    client = ScriptedVLMClient(["```json\n{\"success\": false}\n```",
                                '{"success": false, "confidence": 0.6, "reason": "green is bare"}'])
    v = VLMVerifier(client, TASK, cameras=["wrist"]).verify(obs(0, 1), obs(1, 2), SG)
    assert v.success is False and v.confidence == 0.6
    labels = [p.label for p in client.requests[0]["messages"][1].parts if isinstance(p, ImagePart)]
    assert labels == ["wrist BEFORE", "wrist AFTER"]


def test_prompt_carries_the_memory_view_within_its_budget():
    mem = TaskMemoryV1()
    mem.start_episode(TASK)
    mem.record_plan(Plan(remaining=[SG]), 0, "vlm")
    mem.record_attempt(SG, 0)
    mem.record_verdict(SG, Verdict(False, 0.9, "red slid off green", "vlm"), 30)
    mem.record_fact("green", "pushed 3 cm left", 30)
    mem.record_attempt(SG, 31)
    client = ScriptedVLMClient(['{"success": true, "confidence": 0.9, "reason": "ok"}'] * 3)
    ver = VLMVerifier(client, TASK)
    ver.reset(TASK, mem)
    ver.verify(obs(0, 31), obs(100, 60), SG)
    text = client.requests[0]["messages"][1].parts[0].text
    view_text = mem.memory_view().to_text(ver.memory_tokens)
    assert "Current: stack the red cube on the green cube (attempt 2)" in view_text
    assert "cause" in view_text and "red slid off green" in view_text and "- green: pushed 3 cm left" in view_text
    assert f"TASK MEMORY (earlier attempts, verified failures and object facts; for context only):\n{view_text}\n" in text
    # a small budget keeps whole entries and says how many were left out
    small = VLMVerifier(client, TASK, memory_tokens=25)
    small.reset(TASK, mem)
    small.verify(obs(0, 31), obs(100, 60), SG)
    block = client.requests[1]["messages"][1].parts[0].text.split("for context only):\n")[1].split("\n\nIMAGES")[0]
    assert block == mem.memory_view().to_text(25) and block.endswith("memory entries not shown)")
    assert all(line in view_text for line in block.splitlines()[:-1])
    # prompt v1 has no memory; without a memory, v2 says nothing was recorded
    v1 = VLMVerifier(client, TASK, prompt_version="v1")
    v1.reset(TASK, mem)
    v1.verify(obs(0, 31), obs(100, 60), SG)
    assert "TASK MEMORY" not in client.requests[2]["messages"][1].parts[0].text
    bare = VLMVerifier(ScriptedVLMClient(['{"success": true, "confidence": 0.9, "reason": "ok"}']), TASK)
    assert "for context only):\n(nothing recorded yet)" in bare.build_messages(obs(0, 1), obs(1, 2), SG)[1].parts[0].text
