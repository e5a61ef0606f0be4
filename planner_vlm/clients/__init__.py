"""VLM clients: one protocol (:class:`VLMClient`), three backends.

* ``transformers``: :class:`~planner_vlm.clients.transformers_client.TransformersVLMClient`
  (any local image-text-to-text model, loaded by path);
* ``openai``: :class:`~planner_vlm.clients.openai_client.OpenAICompatibleClient`
  (vLLM, Ollama, SGLang, or any OpenAI-compatible chat-completions server);
* ``scripted``: :class:`~planner_vlm.clients.scripted_client.ScriptedVLMClient`
  (replays given replies; for tests and demos, never a real model).

Backends are imported lazily (torch/transformers only when the transformers backend is used).
"""

from planner_vlm.clients.base import (
    ChatMessage,
    ImagePart,
    TextPart,
    VLMClient,
    VLMClientError,
    VLMReply,
)

__all__ = ["ChatMessage", "ImagePart", "TextPart", "VLMClient", "VLMClientError", "VLMReply"]
