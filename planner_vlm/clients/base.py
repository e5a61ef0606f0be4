"""The chat message types and the ``VLMClient`` protocol every VLM backend implements.

A request is a list of :class:`ChatMessage` (OpenAI chat roles ``system`` / ``user`` /
``assistant``), each holding ordered parts: :class:`TextPart` and :class:`ImagePart`.
Images are ``uint8 (H, W, 3)`` RGB numpy arrays, upright, origin at the top-left (the
``tandem.core.types.Observation`` convention); each backend encodes them its own way (PIL for
transformers processors, base64 PNG data URLs for OpenAI-compatible servers).

The message layout follows the OpenAI chat-completions "content parts" format, which
transformers chat templates also accept (``{"type": "image"}`` / ``{"type": "text"}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from planner_vlm.point_frames import PointFrame
from tandem.core.errors import TandemError

Role = Literal["system", "user", "assistant"]


class VLMClientError(TandemError):
    """A VLM backend could not produce a reply (server unreachable, HTTP error, timeout after all
    retries, model failed to load, bad client configuration).

    Attributes:
        backend: ``"openai"``, ``"transformers"`` or ``"scripted"``.
        retryable: whether the failure was transient (timeout, 429, 5xx, connection refused).
    """

    def __init__(self, backend: str, message: str, retryable: bool = False):
        self.backend = backend
        self.retryable = retryable
        super().__init__(f"[{backend}] {message}")


@dataclass(frozen=True)
class TextPart:
    """A text part of a message."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image part of a message.

    Attributes:
        image: ``uint8 (H, W, 3)`` RGB, upright, origin top-left.
        label: what the image is, e.g. ``"agentview (before)"``; used for logs and shown to the
            model as text just before the image by the prompt builder, not by the client.

    Raises:
        ValueError: if ``image`` is not ``uint8 (H, W, 3)``.
    """

    image: np.ndarray
    label: str = ""

    def __post_init__(self) -> None:
        img = self.image
        if not (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3):
            raise ValueError(
                f"ImagePart.image must be uint8 (H, W, 3), got {getattr(img, 'dtype', type(img))} "
                f"{getattr(img, 'shape', '')}"
            )


Part = TextPart | ImagePart


@dataclass
class ChatMessage:
    """One chat message: a role and ordered content parts."""

    role: Role
    parts: list[Part] = field(default_factory=list)

    @classmethod
    def text(cls, role: Role, text: str) -> ChatMessage:
        """A message of one text part."""
        return cls(role=role, parts=[TextPart(text)])

    @property
    def images(self) -> list[ImagePart]:
        """The message's image parts, in order."""
        return [p for p in self.parts if isinstance(p, ImagePart)]

    def to_log(self) -> dict[str, Any]:
        """JSON-safe summary for logs: text verbatim, images as ``{"image": label, "shape": [H, W, 3]}``
        (never the pixels)."""
        parts: list[dict[str, Any]] = []
        for p in self.parts:
            if isinstance(p, TextPart):
                parts.append({"text": p.text})
            else:
                parts.append({"image": p.label, "shape": list(p.image.shape)})
        return {"role": self.role, "parts": parts}


@dataclass
class VLMReply:
    """What a backend returns.

    Attributes:
        text: the raw model output (never executed; parsed by ``plan_parser``).
        latency_s: wall-clock seconds of the call, including retries.
        meta: backend details for logs (model name, token counts, attempts, whether a JSON
            schema was enforced by the server).
    """

    text: str
    latency_s: float
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class VLMClient(Protocol):
    """A vision-language model behind one call.

    Attributes:
        backend: ``"transformers"``, ``"openai"`` or ``"scripted"``.
        point_frame: the frame the model writes image points in (:mod:`planner_vlm.point_frames`), declared by
            the backend for its model (e.g. Qwen2.5-VL: the processor's resized pixels).
    """

    backend: str
    point_frame: PointFrame

    def generate(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "output",
        max_new_tokens: int | None = None,
        temperature: float | None = None,
    ) -> VLMReply:
        """Generate one reply to ``messages``.

        Args:
            messages: the conversation, images inline.
            json_schema: a JSON schema the reply must follow. Backends that can enforce it
                (OpenAI-compatible ``response_format: json_schema``) do; others ignore it and rely on
                the prompt plus the strict parser.
            schema_name: name of the schema for servers that want one.
            max_new_tokens, temperature: override the client's defaults for this call.

        Raises:
            VLMClientError: if no reply could be produced.
        """
        ...


def messages_to_log(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """:meth:`ChatMessage.to_log` of each message (JSON-safe, no pixels)."""
    return [m.to_log() for m in messages]
