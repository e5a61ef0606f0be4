"""Separating a reasoning model's thinking from its answer, wherever the backend put it.

Reasoning models (DeepSeek-R1, Qwen3 / QwQ, Qwen3-VL-Thinking, ...) think before they answer. Where the thinking
ends up depends on the serving stack:

* **in the message text** as ``<think>...</think>`` (or ``<thinking>...</thinking>``) before the answer, for a
  local transformers model or a server without a reasoning parser; chat templates that open the block in the
  prompt (DeepSeek-R1, Qwen3 thinking) leave only the closing ``</think>`` in the output;
* **in a separate field** of an OpenAI-compatible reply: vLLM's reasoning parsers put it in
  ``message.reasoning_content`` (the field newer vLLM, Ollama and OpenRouter call ``reasoning``) and the answer in
  ``message.content``. When the model never closes its thinking (a token limit, a parser that misses the end
  tag), the whole output is in the reasoning field and ``content`` is ``null``;
* **as content parts**: some servers return ``content`` as a list of ``{"type": "text" | "output_text", "text"}``
  parts, with the thinking in ``{"type": "reasoning" | "thinking", ...}`` parts.

:func:`split_think_blocks` handles the first case; :func:`answer_from_message` the other two, and falls back to the
last JSON object of the thinking when the answer field is empty (:func:`last_json_object`). Nothing here is
executed; texts are only split and scanned.
"""

from __future__ import annotations

import json
import re
from typing import Any

_OPEN = re.compile(r"^\s*<(think|thinking)>", re.IGNORECASE)
_CLOSE = re.compile(r"</(think|thinking)>", re.IGNORECASE)
#: OpenAI-compatible message fields that hold reasoning, in the order they are tried.
REASONING_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning", "thinking")
#: Content-part types that hold the answer text.
TEXT_PART_TYPES: tuple[str, ...] = ("text", "output_text")
#: Content-part types that hold reasoning.
REASONING_PART_TYPES: tuple[str, ...] = ("reasoning", "thinking", "reasoning_text")


class UnclosedReasoning(ValueError):
    """The text opens a ``<think>`` block that never closes: the model stopped while thinking."""


def split_think_blocks(text: str) -> tuple[str, str]:
    """``(reasoning, answer)`` of a text that may start with reasoning blocks.

    Accepted: any number of leading ``<think>...</think>`` / ``<thinking>...</thinking>`` blocks, or reasoning
    without an opening tag followed by ``</think>`` (templates that open the block in the prompt), then the answer.
    A text without any of these is all answer.

    Raises:
        UnclosedReasoning: a leading ``<think>`` block that is never closed.
    """
    reasoning: list[str] = []
    rest = text
    while True:
        opened = _OPEN.match(rest)
        if not opened:
            break
        close = _CLOSE.search(rest, opened.end())
        if close is None:
            raise UnclosedReasoning(f"the <{opened.group(1)}> block is never closed (did the model run out of tokens "
                                    "while thinking?)")
        reasoning.append(rest[opened.end():close.start()].strip())
        rest = rest[close.end():]
    if not reasoning and not rest.lstrip().startswith(("{", "```")):  # an answer that starts right away is all answer
        close = _CLOSE.search(rest)
        if close is not None and "<" + close.group(1).lower() not in rest[:close.start()].lower():
            reasoning.append(rest[:close.start()].strip())
            rest = rest[close.end():]
    return "\n\n".join(r for r in reasoning if r), rest.strip()


def last_json_object(text: str) -> str | None:
    """The last complete top-level ``{...}`` of ``text`` that decodes as a JSON object, or None.

    Used only on reasoning text whose answer field was empty: the thinking may end with the answer.
    """
    decoder = json.JSONDecoder()
    best: str | None = None
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            best = text[i:end]
            i = text.find("{", end)
        else:  # pragma: no cover - raw_decode at "{" only returns dicts
            i = text.find("{", i + 1)
    return best


def _part_texts(content: list[Any]) -> tuple[str, str]:
    answer, reasoning = [], []
    for p in content:
        if isinstance(p, str):
            answer.append(p)
        elif isinstance(p, dict):
            kind = p.get("type", "text")
            value = p.get("text", p.get("reasoning", p.get("thinking", "")))
            if not isinstance(value, str):
                continue
            if kind in REASONING_PART_TYPES:
                reasoning.append(value)
            elif kind in TEXT_PART_TYPES:
                answer.append(value)
    return "".join(answer), "\n".join(reasoning)


def answer_from_message(message: dict[str, Any]) -> tuple[str, str, str]:
    """``(answer, reasoning, source)`` of an OpenAI-compatible ``choices[i].message``.

    ``source`` says where the answer came from: ``"content"``; ``"<field>:last_json"`` when ``content`` is empty
    and the answer is the last JSON object of the reasoning field (``reasoning_content``, ``reasoning``...); or
    ``"<field>"`` when the reasoning holds no JSON object (then the whole reasoning is returned as the answer, and
    the strict parser reports what is wrong with it); ``"none"`` when there is nothing at all.

    Raises:
        TypeError: ``content`` is neither a string, a list of parts nor null.
    """
    content = message.get("content")
    reasoning_parts = ""
    if content is None:
        answer = ""
    elif isinstance(content, str):
        answer = content
    elif isinstance(content, list):
        answer, reasoning_parts = _part_texts(content)
    else:
        raise TypeError(f"message.content is {type(content).__name__}, not a string, a list of parts or null")
    field, reasoning = "", reasoning_parts
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, list):
            value = _part_texts(value)[0] or _part_texts(value)[1]
        if isinstance(value, str) and value.strip():
            field, reasoning = name, value if not reasoning else reasoning + "\n" + value
            break
    if answer.strip():
        return answer, reasoning, "content"
    if reasoning.strip():
        where = field or "content_parts"
        found = last_json_object(reasoning)
        if found is not None:
            return found, reasoning, f"{where}:last_json"
        return reasoning, reasoning, where
    return "", "", "none"
