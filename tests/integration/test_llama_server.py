"""A real model server: llama.cpp's ``llama-server`` serving a tiny random Qwen2-VL GGUF (text model + vision
projector), driven through tandem's OpenAI-compatible client and the VLM planner over HTTP.

Needs ``scripts/build_llama_server.sh`` (the binary) and ``scripts/make_tiny_gguf.py`` (the model), both under
``.cache/llama-server/`` (``TANDEM_LLAMA_SERVER_DIR`` points elsewhere); skipped, with the missing piece named,
where either is absent. The weights are random, so the checks are on behaviour: grammar-constrained replies are
JSON that conforms to the schema (both ``response_format`` styles the server accepts), an image is accepted and
counted in the prompt, and a plan call against a real task records its outcome (a parsed plan or a recorded
parse failure and fallback) instead of raising.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from planner_vlm.clients.base import ChatMessage, ImagePart, TextPart
from planner_vlm.plan_schema import plan_json_schema
from tandem.core.types import Observation, Plan, TaskSpec

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
LLAMA_DIR = Path(os.environ.get("TANDEM_LLAMA_SERVER_DIR", ROOT / ".cache" / "llama-server"))
SERVER_BIN = LLAMA_DIR / "bin" / "llama-server"
MODEL = LLAMA_DIR / "models" / "tiny-qwen2vl-f32.gguf"
MMPROJ = LLAMA_DIR / "models" / "mmproj-tiny-qwen2vl-f32.gguf"
STARTUP_TIMEOUT_S = 120.0

#: A small schema whose every value is bounded, so even a random model finishes it within the token budget.
SCHEMA = {
    "type": "object",
    "properties": {
        "done": {"type": "boolean"},
        "camera": {"type": "string", "enum": ["agentview", "wrist"]},
        "count": {"type": "integer", "minimum": 0, "maximum": 9},
        "note": {"type": "string", "maxLength": 12},
    },
    "required": ["done", "camera", "count", "note"],
    "additionalProperties": False,
}

TASK = TaskSpec(
    name="stack_three", instruction="stack the red cube on the green cube, then the blue cube on the red cube",
    objects=("red", "green", "blue"), max_steps=600, skills={"stack": "on({0},{1})"},
    goals=("on(red,green)", "on(blue,red)"), skill_texts={"stack": "stack the {0} cube on the {1} cube"},
    cameras=("agentview", "wrist"), image_size=(32, 32),
)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _post(url: str, body: dict, timeout: float = 300.0) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The base URL (``http://127.0.0.1:PORT/v1``) of a ``llama-server`` started for this module."""
    if not SERVER_BIN.is_file():
        pytest.skip(f"llama-server not built ({SERVER_BIN} missing): run scripts/build_llama_server.sh")
    for f in (MODEL, MMPROJ):
        if not f.is_file():
            pytest.skip(f"tiny GGUF model not written ({f} missing): run scripts/build_llama_server.sh")
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    cmd = [str(SERVER_BIN), "-m", str(MODEL), "--mmproj", str(MMPROJ), "--host", "127.0.0.1", "--port", str(port),
           "-c", "8192", "-np", "1", "-t", "2", "--no-webui", "--alias", "tiny-qwen2vl"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama-server exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if _get(f"http://127.0.0.1:{port}/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-server not healthy after {STARTUP_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture()
def client(server):
    from planner_vlm.clients.openai_client import OpenAICompatibleClient

    return OpenAICompatibleClient(server, "tiny-qwen2vl", api_key_env=None, timeout_s=300.0, max_retries=0,
                                  max_new_tokens=1024)  # the grammar bounds every value and each run of whitespace


def _check(obj, schema):
    import jsonschema

    jsonschema.validate(obj, schema)


def _messages(image: np.ndarray | None = None) -> list[ChatMessage]:
    parts: list[TextPart | ImagePart] = [TextPart("Answer with one JSON object: is the task done?")]
    if image is not None:
        parts.append(ImagePart(image, label="agentview"))
    return [ChatMessage.text("system", "You are a robot planner."), ChatMessage(role="user", parts=parts)]


def test_client_json_schema_style_is_enforced(client):
    """The client's own style, OpenAI ``{"type": "json_schema", "json_schema": {...}}``: the server accepts it
    (no fallback to prompt-only) and the reply is JSON that conforms to the schema."""
    reply = client.generate(_messages(), json_schema=SCHEMA, schema_name="probe")
    assert reply.meta["schema_enforced"] and not reply.meta["schema_dropped"]
    assert reply.meta["finish_reason"] == "stop", reply.meta
    _check(json.loads(reply.text), SCHEMA)


def test_json_object_with_schema_style_is_enforced(client):
    """llama.cpp's other style, ``{"type": "json_object", "schema": {...}}``, sent as the client's request body with
    only ``response_format`` swapped."""
    body = client.build_request(_messages(), json_schema=SCHEMA)
    body["response_format"] = {"type": "json_object", "schema": SCHEMA}
    reply = _post(client.url, body)
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    _check(json.loads(choice["message"]["content"]), SCHEMA)


def test_image_is_accepted_and_counted(client):
    """An image part travels as a data URL, the vision projector encodes it (its tokens add to the prompt) and a
    reply comes back."""
    image = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    text_only = client.generate(_messages(), max_new_tokens=8)
    with_image = client.generate(_messages(image), max_new_tokens=8)
    assert isinstance(with_image.text, str)
    assert with_image.meta["usage"]["prompt_tokens"] > text_only.meta["usage"]["prompt_tokens"]
    schema_reply = client.generate(_messages(image), json_schema=SCHEMA)
    _check(json.loads(schema_reply.text), SCHEMA)


def test_vlm_planner_records_its_outcome(server):
    """One plan call of the VLM planner built by the factory (backend ``openai``) against the server: the outcome is
    a parsed plan or a recorded parse failure and fallback, every exchange is in memory, and every reply the
    server finished is JSON that conforms to the plan schema."""
    from memory.task_memory import TaskMemoryV1
    from planner_vlm.factory import make_vlm_planner

    cfg = {"backend": "openai", "base_url": server, "model": "tiny-qwen2vl", "api_key_env": None, "timeout_s": 300.0,
           "max_retries": 0, "max_new_tokens": 384, "max_repairs": 1}
    planner = make_vlm_planner(cfg, TASK)
    memory = TaskMemoryV1()
    memory.start_episode(TASK)
    rng = np.random.default_rng(0)
    obs = Observation(images={c: rng.integers(0, 255, (32, 32, 3), dtype=np.uint8) for c in TASK.cameras},
                      proprio=np.zeros(8), step=0)
    plan = planner.plan(obs, memory)
    assert isinstance(plan, Plan)
    assert planner.exchanges, "no exchange recorded"
    schema = plan_json_schema(TASK, planner.trace_camera, planner.point_frame)
    for ex in planner.exchanges:
        assert ex["raw_reply"] is not None, ex["parse"]  # the server answered every request
        assert ex["meta"]["schema_enforced"] and ex["images"] == [{"camera": "agentview", "shape": [32, 32, 3]},
                                                                  {"camera": "wrist", "shape": [32, 32, 3]}]
        if ex["meta"]["finish_reason"] == "stop":
            _check(json.loads(ex["raw_reply"]), schema)
    events = [e["kind"] for e in memory.events()]
    assert events.count("vlm_exchange") == len(planner.exchanges)
    if plan.fallback:
        assert planner.fallbacks == 1 and "vlm_fallback" in events
        assert all(not ex["parse"]["ok"] and ex["parse"]["error"] for ex in planner.exchanges)
    else:
        assert planner.exchanges[-1]["parse"] == {"ok": True} and planner.current is plan
