"""The JSON-safe record of one VLM exchange, as written to the episode log (``vlm_exchange`` events)."""

from __future__ import annotations

from typing import Any

from planner_vlm.clients.base import ChatMessage, messages_to_log


def exchange_record(component: str, client: Any, prompt: Any, rnd: int, messages: list[ChatMessage],
                    reply: Any, parse: dict[str, Any]) -> dict[str, Any]:
    """One ``vlm_exchange`` event payload (no pixels).

    Returns:
        ``{"component", "round", "backend", "prompt", "prompt_sha256", "messages", "images",
        "raw_reply", "latency_s" (s), "meta", "parse": {"ok", "error"?}}``; images as
        ``{"camera": label, "shape": [H, W, 3]}``.
    """
    return {
        "component": component,
        "round": rnd,
        "backend": getattr(client, "backend", type(client).__name__),
        "prompt": f"{prompt.name}_{prompt.version}",
        "prompt_sha256": prompt.sha256,
        "messages": messages_to_log(messages),
        "images": [{"camera": p.label, "shape": list(p.image.shape)} for m in messages for p in m.images],
        "raw_reply": None if reply is None else reply.text,
        "latency_s": None if reply is None else round(float(reply.latency_s), 4),
        "meta": None if reply is None else reply.meta,
        "parse": parse,
    }
