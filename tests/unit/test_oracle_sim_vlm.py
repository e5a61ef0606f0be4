"""The oracle-sim VLM server (tandem.runtime.oracle_sim_vlm): it answers tandem's real OpenAI client, planner and
verifier from posted truth, and each degradation knob does what it says, measured over many requests."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from itertools import permutations

import numpy as np
import pytest

from planner_vlm.clients.openai_client import OpenAICompatibleClient
from planner_vlm.learned.camera import CameraCalibration
from planner_vlm.vlm_planner import VLMPlanner
from planner_vlm.vlm_verifier import VLMVerifier
from tandem.core.errors import ConfigError
from tandem.core.privileged import withhold_goals
from tandem.core.types import Observation, Subgoal
from tandem.runtime.oracle_sim_vlm import (
    MODEL_NAME,
    OracleSimVLM,
    SimVLMKnobs,
    TruthConflict,
    as_vlm_subgoal,
    start_in_thread,
    subgoal_points,
    swapped_order,
)

COLORS = ("red", "green", "blue")
POSES = {"red": [0.0, -0.1, 0.83], "green": [0.05, 0.1, 0.83], "blue": [-0.08, 0.0, 0.83]}
#: A camera 1 m above the table looking straight down (OpenCV axes: x right, y down, z forward).
CALIBRATION = {"camera": "agentview", "image_size": [128, 128],
               "intrinsics": [[150.0, 0.0, 64.0], [0.0, 150.0, 64.0], [0.0, 0.0, 1.0]],
               "world_from_camera": [[1.0, 0.0, 0.0, 0.0], [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, -1.0, 1.85],
                                     [0.0, 0.0, 0.0, 1.0]]}


@pytest.fixture(scope="module")
def task():
    from sim.tasks.registry import make_task

    return make_task("stack_three").sample_spec(np.random.default_rng(500)).spec


def truth(task, step=0, episode="e1", grasped=None, on=()):
    preds = {f"grasped({c})": c == grasped for c in COLORS}
    preds.update({f"on({a},{b})": (a, b) in on for a, b in permutations(COLORS, 2)})
    return {"episode": episode, "step": step, "task": task.name, "instruction": task.instruction,
            "goals": list(task.goals), "calibration": {"agentview": CALIBRATION},
            "privileged": {"predicates": preds,
                           "objects": {c: {"pos": p, "quat": [1.0, 0.0, 0.0, 0.0]} for c, p in POSES.items()}}}


def observation(step=0):
    img = np.zeros((128, 128, 3), np.uint8)
    return Observation(images={"agentview": img, "wrist": img}, proprio=np.zeros(8, np.float32), step=step)


def plan_body(text="TASK: stack\nTASK MEMORY (JSON):\n{}\n", model=MODEL_NAME):
    return {"model": model, "messages": [{"role": "user", "content": text}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "tandem_plan", "schema": {}}}}


def verdict_body(pred="on(red,green)"):
    return {"model": MODEL_NAME, "messages": [{"role": "user", "content": f"SKILL: stack(red,green) (achieved when "
                                                                           f"{pred} holds)\n"}]}


@pytest.fixture
def served(task):
    servers = []

    def start(**knobs):
        sim = OracleSimVLM(SimVLMKnobs(**knobs))
        server, url = start_in_thread(sim)
        servers.append(server)
        return sim, url

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def test_server_answers_the_real_client_planner_and_verifier(task, served):
    sim, url = served()
    sim.post_truth(truth(task))
    client = OpenAICompatibleClient(base_url=url, model=MODEL_NAME, max_retries=0)
    planner = VLMPlanner(client, withhold_goals(task, "planner"))
    plan = planner.plan(observation(), None)
    assert not planner.last_fallback
    assert [(s.skill, s.args) for s in plan.remaining] == [
        ("pick", ("red",)), ("stack", ("red", "green")), ("pick", ("blue",)), ("stack", ("blue", "red"))]
    row = planner.exchanges[-1]
    assert MODEL_NAME in row["meta"]["model"] and row["meta"]["schema_enforced"]
    # the points: red's top centre and a point toward its +x side, in the unit frame -> camera pixels
    expected = subgoal_points(["red"], truth(task)["privileged"]["objects"], CALIBRATION, 0.022)
    assert plan.remaining[0].trace is not None
    assert np.allclose(plan.remaining[0].trace.points, expected, atol=0.05)
    verifier = VLMVerifier(client, withhold_goals(task, "verifier"))
    sg = Subgoal(id="s", skill="stack", args=("red", "green"), text="stack the red cube on the green cube")
    sim.post_truth(truth(task, step=5, on={("red", "green")}))
    assert verifier.verify(observation(0), observation(5), sg).success
    sim.post_truth(truth(task, step=6))
    assert not verifier.verify(observation(0), observation(6), sg).success


def test_plan_follows_the_truth_and_the_memory(task, served):
    sim, _ = served()
    sim.post_truth(truth(task, grasped="red"))
    status, out = sim.chat(plan_body())
    reply = json.loads(out["choices"][0]["message"]["content"])
    assert status == 200 and [s["skill"] for s in reply["done"]] == ["pick"]
    assert reply["remaining"][0] == {"skill": "stack", "args": ["red", "green"],
                                     "text": "stack the red cube on the green cube"}
    assert len(reply["next_trace"]["points"]) == 4  # red's two points, then green's


def test_no_truth_and_wrong_model_are_refused_and_recorded(task, served):
    sim, url = served()
    planner = VLMPlanner(OpenAICompatibleClient(base_url=url, model=MODEL_NAME, max_retries=0),
                         withhold_goals(task, "planner"))
    plan = planner.plan(observation(), None)  # no truth posted: HTTP 409, a recorded fallback, no crash
    assert planner.last_fallback and plan.fallback and "no simulator truth" in planner.exchanges[-1]["parse"]["error"]
    sim.post_truth(truth(task))
    status, out = sim.chat(plan_body(model="qwen2.5-vl"))
    assert status == 400 and MODEL_NAME in out["error"]["message"]


def test_bad_truth_and_a_second_stack_are_refused(task):
    sim = OracleSimVLM()
    with pytest.raises(ConfigError, match="privileged"):
        sim.post_truth({k: v for k, v in truth(task).items() if k != "privileged"})
    sim.post_truth(truth(task, episode="a"))
    sim.post_truth(truth(task, episode="b"))
    with pytest.raises(TruthConflict, match="another stack"):
        sim.post_truth(truth(task, episode="a", step=1))


def test_oracle_subgoals_take_the_parsers_arity():
    from sim.tasks.registry import make_task

    bins = make_task("pick_place_bins").sample_spec(np.random.default_rng(500)).spec
    obj = bins.objects[0]
    assert as_vlm_subgoal(bins, "place", [obj, f"{obj}_bin"]) == {
        "skill": "place", "args": [obj], "text": bins.subgoal_text("place", [obj])}


def test_replies_are_deterministic_per_request(task):
    sim = OracleSimVLM(SimVLMKnobs(point_sigma_px=4, wrong_object_rate=0.5, malformed_rate=0.3, seed=7))
    sim.post_truth(truth(task, step=3))
    a = [sim.chat(plan_body(f"TASK MEMORY (JSON):\n{{}}\nrequest {i}"))[1]["choices"][0]["message"]["content"]
         for i in range(20)]
    b = [sim.chat(plan_body(f"TASK MEMORY (JSON):\n{{}}\nrequest {i}"))[1]["choices"][0]["message"]["content"]
         for i in range(20)]
    assert a == b and len(set(a)) > 1


def _contents(sim, task, bodies):
    out = []
    for i, body in enumerate(bodies):
        sim.post_truth(truth(task, step=i))
        out.append(sim.chat(body)[1]["choices"][0]["message"]["content"])
    return out


N = 400


@pytest.mark.parametrize("knob", ["refusal_rate", "malformed_rate"])
def test_refusal_and_malformed_rates(task, knob):
    sim = OracleSimVLM(SimVLMKnobs(**{knob: 0.3}, seed=1))
    bad = 0
    for text in _contents(sim, task, [plan_body()] * N):
        try:
            reply = json.loads(text)
            ok = set(reply) == {"rationale", "done", "remaining", "next_trace"} and all(
                s["skill"] in ("pick", "stack") for s in reply["remaining"])
        except json.JSONDecodeError:
            ok = False
        bad += not ok
    assert 0.24 < bad / N < 0.36


def test_wrong_object_and_wrong_order_rates(task):
    sim = OracleSimVLM(SimVLMKnobs(wrong_object_rate=0.3, seed=2))
    firsts = [json.loads(t)["remaining"][0]["args"][0] for t in _contents(sim, task, [plan_body()] * N)]
    assert 0.24 < np.mean([a != "red" for a in firsts]) < 0.36
    sim = OracleSimVLM(SimVLMKnobs(wrong_order_rate=0.3, seed=3))
    firsts = [json.loads(t)["remaining"][0]["args"][0] for t in _contents(sim, task, [plan_body()] * N)]
    assert 0.24 < np.mean([a == "blue" for a in firsts]) < 0.36  # the blue chunk moved first
    assert swapped_order([{"args": ["a"]}, {"args": ["a", "b"]}, {"args": ["c"]}, {"args": ["c", "a"]}]) == [
        {"args": ["c"]}, {"args": ["c", "a"]}, {"args": ["a"]}, {"args": ["a", "b"]}]


def test_verdict_flip_rate(task):
    sim = OracleSimVLM(SimVLMKnobs(verdict_flip_rate=0.1, seed=4))
    verdicts = []
    for i in range(N):
        sim.post_truth(truth(task, step=i, on={("red", "green")}))
        verdicts.append(json.loads(sim.chat(verdict_body())[1]["choices"][0]["message"]["content"])["success"])
    assert 0.06 < 1 - np.mean(verdicts) < 0.14


def test_point_sigma_is_the_pixel_noise(task):
    sim = OracleSimVLM(SimVLMKnobs(point_sigma_px=3.0, point_frame="pixels", seed=5))
    clean = subgoal_points(["red"], truth(task)["privileged"]["objects"], CALIBRATION, 0.022)
    pts = np.array([json.loads(t)["next_trace"]["points"] for t in _contents(sim, task, [plan_body()] * N)])
    err = pts - clean[None]
    assert abs(err.mean()) < 0.3 and 2.7 < err.std() < 3.3


def test_latency_and_malformed_replies_through_the_client(task, served):
    sim, url = served(latency_s=0.3, malformed_rate=1.0)
    sim.post_truth(truth(task))
    planner = VLMPlanner(OpenAICompatibleClient(base_url=url, model=MODEL_NAME, max_retries=0),
                         withhold_goals(task, "planner"), max_repairs=1)
    plan = planner.plan(observation(), None)  # every reply broken: repaired once, then a recorded fallback
    assert plan.fallback and len(planner.exchanges) == 2
    assert all(not r["parse"]["ok"] and r["latency_s"] >= 0.3 for r in planner.exchanges)


def test_points_lift_back_onto_the_object(task):
    """The points are what the camera sees: lifting them onto the top face's height gives the object's top."""
    px = subgoal_points(["green"], truth(task)["privileged"]["objects"], CALIBRATION, 0.022)
    top = CameraCalibration.from_json(CALIBRATION).lift(px[:1], np.array([0.83 + 0.022]))[0]
    assert np.allclose(top, np.array(POSES["green"]) + [0, 0, 0.022], atol=1e-6)


def test_knobs_refuse_bad_values():
    with pytest.raises(ConfigError, match="wrong_object_rate"):
        SimVLMKnobs(wrong_object_rate=1.5)
    with pytest.raises(ConfigError, match="latency_s"):
        SimVLMKnobs.from_pairs({"latency_s": "-1"})
    with pytest.raises(ConfigError, match="bogus"):
        SimVLMKnobs.from_pairs({"bogus": "1"})


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tandem.cli.oracle_sim_vlm", "point_sigma_px=-3"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "point_sigma_px" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_models_endpoint(served):
    _, url = served()
    with urllib.request.urlopen(f"{url}/models", timeout=5) as resp:
        assert json.loads(resp.read())["data"][0]["id"] == MODEL_NAME
