"""The closed loop with the VLM planner on the real stack_three simulation: a scripted VLM client's wrong
plan is caught by the (oracle) verifier, the failure reaches the VLM's next prompt, and the replanned
subgoal is executed. Everything the planner exchanged with the "model" is in episode.jsonl.

The scripted client (``ScriptedVLMClient``) stands in for a VLM: it answers from the prompt it is
given (memory view + failure note), so the test exercises the real prompt, parser, planner, agent,
memory, executor (privileged scripted expert) and verifier.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from planner_vlm.clients.scripted_client import ScriptedVLMClient
from planner_vlm.prompting import memory_in_prompt
from planner_vlm.vlm_planner import VLMPlanner

pytestmark = [pytest.mark.sim, pytest.mark.slow]

SEED = 0


class NoEarlyTermination:
    """Delegates to the env but never reports ``terminated``: the wrong step lowers the top cube onto the
    bottom cube's place, where the middle cube sits, so the tower happens to be right and robosuite would end
    the episode before the agent verifies that step. The test wants the loop to verify it, replan and finish
    on its own (the agent ends the episode once the planner reports nothing remaining and two reads confirm it)."""

    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        return getattr(self._env, name)

    def step(self, action):
        obs, reward, _terminated, truncated, info = self._env.step(action)
        return obs, reward, False, truncated, info


def _prompt_text(messages) -> str:
    return messages[1].parts[0].text




def make_scripted_vlm(spec):
    """Answers like a VLM that names the wrong target for the second step (the bottom cube instead of the
    middle one) until the verifier's failure is in its prompt."""
    (mid, bottom) = re.match(r"on\((\w+),(\w+)\)", spec.goals[0]).groups()
    (top, _) = re.match(r"on\((\w+),(\w+)\)", spec.goals[1]).groups()
    H, W = spec.image_size

    def sg(a, b):
        return {"skill": "stack", "args": [a, b], "text": f"put {a} on {b}"}

    def reply(messages, schema):
        prompt = _prompt_text(messages)
        done_texts = memory_in_prompt(prompt).done
        trace = {"camera": "agentview", "points": [[W / 2, H / 2], [W / 3, H / 3]]}
        if spec.subgoal_text("stack", (top, mid)) in done_texts:
            plan = {"done": [sg(mid, bottom), sg(top, mid)], "remaining": [], "next_trace": None}
        elif "LAST FAILURE" in prompt:  # the verifier's reason is in the prompt: fix the target
            plan = {"done": [sg(mid, bottom)], "remaining": [sg(top, mid)], "next_trace": trace}
        elif spec.subgoal_text("stack", (mid, bottom)) in done_texts:
            plan = {"done": [sg(mid, bottom)], "remaining": [sg(top, bottom)], "next_trace": trace}  # wrong
        else:
            plan = {"done": [], "remaining": [sg(mid, bottom), sg(top, bottom)], "next_trace": trace}  # wrong
        return json.dumps({"rationale": "scripted", **plan})

    return reply, (mid, bottom, top)


def test_wrong_vlm_plan_is_caught_by_the_verifier_and_replanned(tmp_path):
    from memory.task_memory import TaskMemoryV1
    from planner_vlm.oracle_verifier import OracleVerifier
    from sim.experts import ScriptedExecutor
    from sim.robosuite_env import RobosuiteEnv
    from tandem.runtime.agent import AgentConfig, HierarchicalAgent
    from tandem.runtime.rollout import run_episode

    env = RobosuiteEnv("stack_three", image_size=(64, 64))
    try:
        env.reset(seed=SEED)
        reply, (mid, bottom, top) = make_scripted_vlm(env.spec)
        client = ScriptedVLMClient([reply], repeat_last=True)
        agent = HierarchicalAgent(
            planner=VLMPlanner(client, trace_camera="agentview"),
            verifier=OracleVerifier(),
            executor=ScriptedExecutor(env),
            memory=TaskMemoryV1(),
            config=AgentConfig(max_attempts_per_subgoal=2, subgoal_step_budget=300, max_plans=8),
            hold_action=np.zeros(env.action_dim, np.float32),  # held still between the reads that confirm success
        )
        result = run_episode(NoEarlyTermination(env), agent, seed=SEED, out_dir=tmp_path, record_video=False,
                             stop_on_success=False)
    finally:
        env.close()

    events = [json.loads(line) for line in (tmp_path / "episode.jsonl").read_text().splitlines()]
    events = [e for e in events if e.get("type") == "event"]
    wrong, right = f"stack({top},{bottom})", f"stack({top},{mid})"
    verdicts = [e for e in events if e["kind"] == "verdict"]
    # 1. the wrong subgoal was executed and the verifier caught it
    caught = [v for v in verdicts if v["signature"] == wrong]
    assert caught and caught[0]["verdict"]["success"] is False and caught[0]["verdict"]["source"] == "oracle"
    # 2. the next planner call saw the failure and its reason
    exchanges = [e for e in events if e["kind"] == "vlm_exchange"]
    after = [x for x in exchanges if x["step"] >= caught[0]["step"]]
    prompt = after[0]["messages"][1]["parts"][0]["text"]
    assert f"LAST FAILURE: subgoal {wrong} failed on attempt 1" in prompt
    assert caught[0]["verdict"]["reason"] in prompt
    # 3. the replanned subgoal ran next
    starts = [e["subgoal"]["args"] for e in events if e["kind"] == "subgoal_start" and e["step"] >= caught[0]["step"]]
    assert starts and starts[0] == [top, mid]
    # 4. every planner call is one logged, parsed exchange; no fallback
    assert all(x["parse"]["ok"] for x in exchanges) and not [e for e in events if e["kind"] == "vlm_fallback"]
    reads = [e for e in events if e["kind"] == "goal_read"]  # each confirmation read asks the model once more
    assert len(exchanges) == len(client.requests) == result.summary["plans"] + len(reads)
    assert all(x["images"] == [{"camera": "agentview", "shape": [64, 64, 3]}, {"camera": "wrist", "shape": [64, 64, 3]}]
               for x in exchanges)
    assert result.summary["replans"] >= 1
    # 5. the replanned subgoal succeeded, the planner then reported nothing remaining, two reads some steps apart
    # confirmed it, and the task is done
    assert [(v["signature"], v["verdict"]["success"]) for v in verdicts][-1] == (right, True)
    assert [r["confirms"] for r in reads] == [True, True]
    assert result.summary["agent_outcome"] == "success" and result.summary["agent_claims_success"] is True
    assert result.summary["success"] is True
