"""A deterministic VLM client that replays given replies: for tests and demos, never a real model.

It records every request (messages, schema) so tests can assert what the planner sent, and can
answer with a function of the request so a test can script a plan that depends on memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from planner_vlm.clients.base import ChatMessage, VLMClientError, VLMReply
from planner_vlm.point_frames import PointFrame

ReplyFn = Callable[[list[ChatMessage], "dict[str, Any] | None"], str]


class ScriptedVLMClient:
    """Replays scripted replies in order (a :class:`~planner_vlm.clients.base.VLMClient`).

    Args:
        replies: strings returned in order, or callables ``(messages, json_schema) -> str``
            evaluated at call time.
        repeat_last: once the script is used up, keep returning the last entry (else raise).
        point_frame: the frame the scripted replies write points in (default: camera pixels).

    Attributes:
        requests: one ``{"messages", "json_schema", "schema_name", "max_new_tokens", "temperature"}``
            per call, in order.

    Raises (from :meth:`generate`):
        VLMClientError: when the script is exhausted and ``repeat_last`` is False.
    """

    backend = "scripted"

    def __init__(self, replies: Sequence[str | ReplyFn], repeat_last: bool = False,
                 point_frame: PointFrame | None = None):
        self.replies = list(replies)
        self.point_frame = point_frame or PointFrame("pixels")
        self.repeat_last = repeat_last
        self.requests: list[dict[str, Any]] = []
        self._i = 0

    def generate(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "output",
        max_new_tokens: int | None = None,
        temperature: float | None = None,
    ) -> VLMReply:
        """The next scripted reply (the last one again once they run out, where ``repeat_last``); every request is
        kept in :attr:`requests`.

        Raises:
            VLMClientError: the script is exhausted (and ``repeat_last`` is off).
        """
        t0 = time.perf_counter()
        self.requests.append({"messages": messages, "json_schema": json_schema, "schema_name": schema_name,
                              "max_new_tokens": max_new_tokens, "temperature": temperature})
        if self._i >= len(self.replies):
            if not (self.repeat_last and self.replies):
                raise VLMClientError("scripted", f"script exhausted after {len(self.replies)} replies")
            entry = self.replies[-1]
        else:
            entry = self.replies[self._i]
        self._i += 1
        text = entry(messages, json_schema) if callable(entry) else entry
        return VLMReply(text=text, latency_s=time.perf_counter() - t0,
                        meta={"backend": "scripted", "call": self._i, "schema_enforced": False})
