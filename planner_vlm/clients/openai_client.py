"""Client for any OpenAI-compatible chat-completions server (vLLM, Ollama, SGLang, LM Studio, OpenAI).

Protocol: ``POST {base_url}/chat/completions`` as in the OpenAI API reference
(https://platform.openai.com/docs/api-reference/chat). Images travel as base64 PNG data URLs in
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`` content parts, which
vLLM, Ollama (``/v1``) and SGLang accept. Structured output uses
``response_format = {"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``
(vLLM/SGLang guided decoding, Ollama >= 0.5 ``format``, OpenAI structured outputs). If a server
rejects ``response_format`` with HTTP 400, the client drops it for the rest of its life and relies on
the prompt plus the strict parser (recorded in ``VLMReply.meta["schema_enforced"]``).

Only the standard library is used (``urllib``), so there is no extra dependency. The API key is
read from the environment variable named by ``api_key_env`` (never from a config file); servers
that need no key (vLLM, Ollama by default) work with the variable unset.
"""

from __future__ import annotations

import base64
import io
import json
import os
import random
import time
import urllib.error
import urllib.request
from typing import Any

import numpy as np
from PIL import Image

from planner_vlm.clients.base import ChatMessage, ImagePart, TextPart, VLMClientError, VLMReply
from planner_vlm.point_frames import PointFrame, default_point_frame
from planner_vlm.reasoning import answer_from_message
from tandem.core.errors import ConfigError

#: Characters of a reply's reasoning kept in ``VLMReply.meta["reasoning"]`` (the episode log).
REASONING_LOG_CHARS = 4000
#: HTTP status codes worth retrying (rate limit, server busy/overloaded).
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


def image_to_data_url(image: np.ndarray) -> str:
    """Encode a ``uint8 (H, W, 3)`` RGB image as a ``data:image/png;base64,...`` URL (lossless PNG)."""
    buf = io.BytesIO()
    Image.fromarray(image, mode="RGB").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def messages_to_openai(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Convert :class:`ChatMessage` s to OpenAI ``messages``.

    A message that is a single text part becomes ``{"role", "content": str}``; otherwise content is a
    list of ``{"type": "text", "text"}`` and ``{"type": "image_url", "image_url": {"url": data URL}}``.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if len(m.parts) == 1 and isinstance(m.parts[0], TextPart):
            out.append({"role": m.role, "content": m.parts[0].text})
            continue
        content: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, ImagePart):
                content.append({"type": "image_url", "image_url": {"url": image_to_data_url(p.image)}})
            else:
                content.append({"type": "text", "text": p.text})
        out.append({"role": m.role, "content": content})
    return out


class OpenAICompatibleClient:
    """A :class:`~planner_vlm.clients.base.VLMClient` for an OpenAI-compatible HTTP server.

    Args:
        base_url: e.g. ``"http://127.0.0.1:8000/v1"`` (vLLM) or ``"http://127.0.0.1:11434/v1"`` (Ollama).
        model: the served model name, e.g. ``"Qwen/Qwen2.5-VL-7B-Instruct"`` or ``"qwen2.5vl:7b"``.
        api_key_env: name of the environment variable holding the API key; unset -> no
            ``Authorization`` header.
        timeout_s: per-request socket timeout (s).
        max_retries: extra attempts after the first on timeouts, connection errors, 408/409/425/429/5xx.
        backoff_s: first backoff (s); doubles per retry, with up to 25 % jitter, capped at 30 s.
        temperature, max_new_tokens: defaults per call (``max_tokens`` in the request).
        use_json_schema: send ``response_format: json_schema`` when a schema is given.
        extra_body: extra top-level request fields (e.g. ``{"top_p": 0.9}``).
        point_frame: the frame the served model writes image points in; default: from the model name
            (:func:`planner_vlm.point_frames.default_point_frame`).

    Raises:
        ConfigError: on an empty or non-http ``base_url``, an empty ``model`` or bad numbers.
    """

    backend = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        temperature: float = 0.0,
        max_new_tokens: int = 1024,
        use_json_schema: bool = True,
        extra_body: dict[str, Any] | None = None,
        point_frame: PointFrame | None = None,
    ):
        if not base_url or not isinstance(base_url, str):
            raise ConfigError("planner.base_url is required for backend=openai, e.g. http://127.0.0.1:8000/v1")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"planner.base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ConfigError("planner.model is required for backend=openai (the name the server serves)")
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0:
            raise ConfigError(f"need timeout_s > 0, max_retries >= 0, backoff_s >= 0; got {timeout_s}, {max_retries}, {backoff_s}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.use_json_schema = bool(use_json_schema)
        self.extra_body = dict(extra_body or {})
        self.point_frame = point_frame or default_point_frame(model)
        self._schema_supported = True  # set False once a server rejects response_format
        self._sleep = time.sleep  # replaceable in tests

    @property
    def url(self) -> str:
        """The server's chat-completions endpoint."""
        return self.base_url + "/chat/completions"

    def build_request(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "output",
        max_new_tokens: int | None = None,
        temperature: float | None = None,
    ) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions`` (exposed for tests and logs)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages_to_openai(messages),
            "temperature": self.temperature if temperature is None else float(temperature),
            "max_tokens": self.max_new_tokens if max_new_tokens is None else int(max_new_tokens),
            "stream": False,
        }
        if json_schema is not None and self.use_json_schema and self._schema_supported:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": json_schema, "strict": True},
            }
        body.update(self.extra_body)
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """One HTTP POST. Raises VLMClientError (retryable or not) or a _SchemaRejected."""
        data = json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url, data=data, headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:2000].decode("utf-8", "replace") if e.fp is not None else ""
            if e.code == 400 and "response_format" in body and _mentions_schema(detail):
                raise _SchemaRejected(detail) from e
            raise VLMClientError(
                "openai", f"HTTP {e.code} from {self.url}: {detail}", retryable=e.code in RETRYABLE_STATUS
            ) from e
        except TimeoutError as e:
            raise VLMClientError("openai", f"timeout after {self.timeout_s} s from {self.url}", retryable=True) from e
        except urllib.error.URLError as e:
            retry = isinstance(e.reason, OSError)  # refused, reset, timed out, DNS
            raise VLMClientError("openai", f"cannot reach {self.url}: {e.reason}", retryable=retry) from e
        except (ConnectionError, OSError) as e:
            raise VLMClientError("openai", f"connection error to {self.url}: {e}", retryable=True) from e
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise VLMClientError("openai", f"server reply is not JSON: {raw[:500]!r}") from e

    def generate(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "output",
        max_new_tokens: int | None = None,
        temperature: float | None = None,
    ) -> VLMReply:
        """POST the conversation and return the first choice's answer.

        The answer is ``message.content`` (text, or the text of its content parts). A reasoning model's thinking
        (``reasoning_content`` / ``reasoning`` fields, reasoning parts) goes to ``meta["reasoning"]``; when
        ``content`` is empty the answer is the last JSON object of the reasoning
        (:func:`planner_vlm.reasoning.answer_from_message`; ``meta["answer_from"]`` says which).
        Retries transient failures ``max_retries`` times with exponential backoff.

        Raises:
            VLMClientError: on a non-retryable HTTP error, after the last retry, or on a reply
                without ``choices[0].message``.
        """
        t0 = time.perf_counter()
        attempt = 0
        schema_dropped = False
        while True:
            body = self.build_request(
                messages, json_schema=json_schema, schema_name=schema_name,
                max_new_tokens=max_new_tokens, temperature=temperature,
            )
            attempt += 1
            try:
                reply = self._post(body)
                break
            except _SchemaRejected:
                # The server does not implement json_schema response_format: fall back to prompt-only.
                self._schema_supported = False
                schema_dropped = True
                continue
            except VLMClientError as e:
                if not e.retryable or attempt > self.max_retries:
                    if attempt > 1:
                        raise VLMClientError("openai", f"{e} (after {attempt} attempts)", e.retryable) from e
                    raise
                delay = min(30.0, self.backoff_s * 2 ** (attempt - 1)) * (1 + 0.25 * random.random())
                self._sleep(delay)
        text, reasoning, source = _answer_of(reply)
        return VLMReply(
            text=text,
            latency_s=time.perf_counter() - t0,
            meta={
                "backend": "openai",
                "model": reply.get("model", self.model),
                "attempts": attempt,
                "schema_enforced": "response_format" in body,
                "schema_dropped": schema_dropped,
                "usage": reply.get("usage"),
                "finish_reason": _finish_reason(reply),
                "answer_from": source,
                "reasoning": reasoning[:REASONING_LOG_CHARS] if reasoning else None,
                "reasoning_chars": len(reasoning),
            },
        )


class _SchemaRejected(Exception):
    """Internal: the server answered 400 to ``response_format``."""


def _mentions_schema(detail: str) -> bool:
    d = detail.lower()
    return any(k in d for k in ("response_format", "json_schema", "structured", "guided"))


def _answer_of(reply: Any) -> tuple[str, str, str]:
    """``(answer, reasoning, source)`` of the first choice (:func:`planner_vlm.reasoning.answer_from_message`).

    Raises:
        VLMClientError: no ``choices[0].message``, or a ``content`` that is neither text, parts nor null.
    """
    try:
        message = reply["choices"][0]["message"]
    except (KeyError, IndexError, TypeError) as e:
        raise VLMClientError("openai", f"reply has no choices[0].message: {str(reply)[:500]}") from e
    if not isinstance(message, dict):
        raise VLMClientError("openai", f"choices[0].message is {type(message).__name__}, not an object")
    try:
        return answer_from_message(message)
    except TypeError as e:
        raise VLMClientError("openai", f"choices[0].{e}") from e


def _finish_reason(reply: Any) -> str | None:
    try:
        return reply["choices"][0].get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
