"""The OpenAI-compatible backend against a real HTTP server on loopback (stdlib http.server, ephemeral port).

Asserts the exact request the client sends (route, headers, messages with base64 PNG images, JSON schema,
sampling fields) and its handling of replies: success, retry with backoff, non-retryable errors,
a server without structured-output support, timeouts, refused connections and malformed replies.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from PIL import Image

from planner_vlm.clients.base import ChatMessage, ImagePart, TextPart, VLMClientError
from planner_vlm.clients.openai_client import OpenAICompatibleClient
from planner_vlm.plan_schema import plan_json_schema
from planner_vlm.vlm_planner import VLMPlanner
from tandem.core.errors import ConfigError
from tandem.core.types import Observation, TaskSpec

TASK = TaskSpec(name="stack_three", instruction="stack red on green", objects=("red", "green"), max_steps=100,
                skills={"stack": "on({0},{1})"}, skill_texts={"stack": "stack the {0} cube on the {1} cube"},
                cameras=("agentview", "wrist"), image_size=(16, 24))


def completion(content, **extra):
    return {"id": "x", "object": "chat.completion", "model": "served-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}, **extra}


class FakeServer:
    """Records every request; answers from a queue of (status, json body or bytes, delay_s)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.queue: list[tuple[int, object, float]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
                status, payload, delay = outer.queue.pop(0) if outer.queue else (200, completion("{}"), 0.0)
                if delay:
                    time.sleep(delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.closed = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def client_for(server, **kw):
    c = OpenAICompatibleClient(server.base_url, "qwen2.5-vl", api_key_env="TANDEM_TEST_KEY", **kw)
    c.sleeps = []
    c._sleep = c.sleeps.append  # record backoff instead of sleeping
    return c


def decode_data_url(url):
    assert url.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


def test_exact_request_images_schema_messages_and_key(server, monkeypatch):
    monkeypatch.setenv("TANDEM_TEST_KEY", "sk-test-123")
    img = np.random.default_rng(0).integers(0, 256, (16, 24, 3), dtype=np.uint8)
    schema = plan_json_schema(TASK, "agentview")
    server.queue.append((200, completion('{"ok": 1}'), 0.0))
    c = client_for(server, temperature=0.2, max_new_tokens=77)
    msgs = [ChatMessage.text("system", "be strict"),
            ChatMessage("user", [TextPart("plan this"), ImagePart(img, "agentview")])]
    r = c.generate(msgs, json_schema=schema, schema_name="tandem_plan")
    assert r.text == '{"ok": 1}' and r.meta["attempts"] == 1 and r.meta["schema_enforced"] is True
    assert r.meta["model"] == "served-model" and r.latency_s >= 0
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test-123"
    assert req["headers"]["Content-Type"] == "application/json"
    body = req["body"]
    assert set(body) == {"model", "messages", "temperature", "max_tokens", "stream", "response_format"}
    assert (body["model"], body["temperature"], body["max_tokens"], body["stream"]) == ("qwen2.5-vl", 0.2, 77, False)
    assert body["messages"][0] == {"role": "system", "content": "be strict"}
    user = body["messages"][1]
    assert user["role"] == "user" and user["content"][0] == {"type": "text", "text": "plan this"}
    assert user["content"][1]["type"] == "image_url"
    np.testing.assert_array_equal(decode_data_url(user["content"][1]["image_url"]["url"]), img)  # lossless
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "tandem_plan", "schema": schema, "strict": True}}


def test_no_key_no_auth_header_and_no_schema(server, monkeypatch):
    monkeypatch.delenv("TANDEM_TEST_KEY", raising=False)
    c = client_for(server)
    c.generate([ChatMessage.text("user", "hi")])
    req = server.requests[0]
    assert "Authorization" not in req["headers"] and "response_format" not in req["body"]


def test_retries_transient_errors_with_backoff(server):
    server.queue += [(503, {"error": "busy"}, 0.0), (429, {"error": "rate"}, 0.0), (200, completion("done"), 0.0)]
    c = client_for(server, max_retries=3, backoff_s=0.5)
    r = c.generate([ChatMessage.text("user", "hi")])
    assert r.text == "done" and r.meta["attempts"] == 3 and len(server.requests) == 3
    assert len(c.sleeps) == 2 and 0.5 <= c.sleeps[0] <= 0.625 and 1.0 <= c.sleeps[1] <= 1.25


def test_gives_up_after_max_retries(server):
    server.queue += [(500, {"error": "x"}, 0.0)] * 3
    c = client_for(server, max_retries=2)
    with pytest.raises(VLMClientError, match="HTTP 500.*after 3 attempts") as ei:
        c.generate([ChatMessage.text("user", "hi")])
    assert ei.value.retryable and len(server.requests) == 3


def test_non_retryable_error_raises_at_once(server):
    server.queue.append((401, {"error": {"message": "bad key"}}, 0.0))
    c = client_for(server, max_retries=3)
    with pytest.raises(VLMClientError, match="HTTP 401.*bad key"):
        c.generate([ChatMessage.text("user", "hi")])
    assert len(server.requests) == 1 and c.sleeps == []


def test_server_without_json_schema_support_falls_back_to_prompt_only(server):
    server.queue += [(400, {"error": "response_format json_schema is not supported"}, 0.0),
                     (200, completion("plain"), 0.0), (200, completion("again"), 0.0)]
    c = client_for(server)
    r = c.generate([ChatMessage.text("user", "hi")], json_schema={"type": "object"})
    assert r.text == "plain" and r.meta["schema_enforced"] is False and r.meta["schema_dropped"] is True
    assert "response_format" in server.requests[0]["body"] and "response_format" not in server.requests[1]["body"]
    c.generate([ChatMessage.text("user", "hi")], json_schema={"type": "object"})
    assert "response_format" not in server.requests[2]["body"]  # remembered


def test_timeout_is_retried_then_reported(server):
    server.queue += [(200, completion("late"), 1.0), (200, completion("late"), 1.0)]
    c = client_for(server, timeout_s=0.2, max_retries=1)
    t0 = time.perf_counter()
    with pytest.raises(VLMClientError, match="timeout|timed out") as ei:
        c.generate([ChatMessage.text("user", "hi")])
    assert ei.value.retryable and time.perf_counter() - t0 < 5 and len(c.sleeps) == 1


def test_connection_refused_and_malformed_replies(server):
    port = server.port
    server.close()
    c = OpenAICompatibleClient(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, timeout_s=2)
    c._sleep = lambda s: None
    with pytest.raises(VLMClientError, match="cannot reach|connection"):
        c.generate([ChatMessage.text("user", "hi")])


@pytest.mark.parametrize("payload, match", [
    (b"<html>oops</html>", "not JSON"),
    ({"choices": []}, "no choices"),
    ({"choices": [{"message": {"content": 5}}]}, "not a string"),
])
def test_malformed_server_replies(server, payload, match):
    server.queue.append((200, payload, 0.0))
    with pytest.raises(VLMClientError, match=match):
        client_for(server).generate([ChatMessage.text("user", "hi")])


def test_config_errors():
    for bad in ["", "ftp://x", "127.0.0.1:8000"]:
        with pytest.raises(ConfigError):
            OpenAICompatibleClient(bad, "m")
    with pytest.raises(ConfigError, match="model"):
        OpenAICompatibleClient("http://127.0.0.1:1/v1", "")


def test_planner_over_http_end_to_end(server):
    plan_json = json.dumps({"rationale": "r", "done": [],
                            "remaining": [{"skill": "stack", "args": ["red", "green"], "text": "t"}],
                            "next_trace": {"camera": "agentview", "points": [[1, 2], [23, 15]]}})
    server.queue += [(200, completion("not json at all"), 0.0), (200, completion(plan_json), 0.0)]
    planner = VLMPlanner(client_for(server), TASK)
    img = np.zeros((16, 24, 3), np.uint8)
    obs = Observation(images={"agentview": img, "wrist": img}, proprio=np.zeros(8), step=3)
    plan = planner.plan(obs, None)
    assert plan.remaining[0].signature == "stack(red,green)" and plan.remaining[0].trace.points.shape == (2, 2)
    first, repair = (r["body"] for r in server.requests)
    n_images = sum(p["type"] == "image_url" for p in first["messages"][1]["content"])
    assert n_images == 2
    assert first["response_format"]["json_schema"]["schema"] == plan_json_schema(TASK, "agentview", planner.point_frame)
    assert planner.point_frame.kind == "resized_pixels"  # the served model is a Qwen2.5-VL
    # the repair round shows the model its own reply and the error
    assert repair["messages"][2] == {"role": "assistant", "content": "not json at all"}
    assert "could not be used" in repair["messages"][3]["content"]


PLAN = json.dumps({"rationale": "r", "done": [], "remaining": [{"skill": "stack", "args": ["red", "green"], "text": "t"}],
                   "next_trace": None})


def message_reply(**message):
    return {"id": "x", "model": "served-model", "choices": [{"index": 0, "finish_reason": "stop",
                                                             "message": {"role": "assistant", **message}}]}


@pytest.mark.parametrize("message, answer_from", [
    # vLLM reasoning parsers (issue 13): content null, the whole output in reasoning_content
    ({"content": None, "reasoning_content": PLAN}, "reasoning_content:last_json"),
    ({"content": "", "reasoning_content": "red is on the table, so first stack it.\n" + PLAN}, "reasoning_content:last_json"),
    # newer vLLM / Ollama / OpenRouter call the field `reasoning`
    ({"content": None, "reasoning": "draft {\"a\": 1} then the answer " + PLAN}, "reasoning:last_json"),
    # the normal split: thinking in its field, the answer in content
    ({"content": PLAN, "reasoning_content": "I should stack red first."}, "content"),
    # content as a list of parts, thinking as a part
    ({"content": [{"type": "reasoning", "text": "hmm"}, {"type": "text", "text": PLAN}]}, "content"),
    ({"content": [{"type": "output_text", "text": PLAN}]}, "content"),
    # thinking inline before the JSON (no reasoning parser on the server)
    ({"content": "<think>red first</think>\n" + PLAN}, "content"),
    ({"content": "red goes first, it is free.</think>\n\n" + PLAN}, "content"),
])
def test_reasoning_model_replies_keep_the_plan(server, message, answer_from):
    server.queue.append((200, message_reply(**message), 0.0))
    planner = VLMPlanner(client_for(server), TASK, max_repairs=0)
    img = np.zeros((16, 24, 3), np.uint8)
    plan = planner.plan(Observation(images={"agentview": img, "wrist": img}, proprio=np.zeros(8)), None)
    assert not planner.last_fallback and plan.remaining[0].signature == "stack(red,green)"
    meta = planner.exchanges[-1]["meta"]
    assert meta["answer_from"] == answer_from
    if "reasoning_content" in message or "reasoning" in message:
        assert meta["reasoning"] and meta["reasoning_chars"] > 0


def test_empty_and_unusable_reasoning_replies_are_named(server):
    server.queue.append((200, message_reply(content=None), 0.0))
    reply = client_for(server).generate([ChatMessage.text("user", "hi")])
    assert reply.text == "" and reply.meta["answer_from"] == "none"
    server.queue.append((200, message_reply(content=None, reasoning_content="I am still thinking about"), 0.0))
    reply = client_for(server).generate([ChatMessage.text("user", "hi")])
    # no JSON in the thinking: the thinking is the reply, and the parser says what is wrong (not "empty")
    assert reply.text == "I am still thinking about" and reply.meta["answer_from"] == "reasoning_content"
