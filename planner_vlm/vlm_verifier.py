"""``VLMVerifier``: a vision-language model judges whether a subgoal succeeded (Goal2Skill-style
outcome verification), from the camera images before and after the attempt.

The reply must be ``{"success": bool, "confidence": [0, 1], "reason": str}``
(:func:`planner_vlm.plan_parser.parse_verdict`). One repair round follows an unparseable reply;
if that fails too, or the client fails, the verdict is a recorded failure
``Verdict(success=False, confidence=0.0, reason="vlm verifier gave no usable verdict: ...")``, so
the agent retries or replans instead of crashing.

The :class:`~tandem.core.protocols.Verifier` protocol has no memory argument; call
:meth:`VLMVerifier.attach_memory` (the agent does this once per episode) to get every exchange
recorded as a ``vlm_exchange`` event, and (prompt ``verify_v2``) the memory's view in the prompt as context:
``MemoryView.to_text(memory_tokens)``, the subgoal's earlier attempts and failures and the object facts.
Exchanges are also kept in ``self.exchanges``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from planner_vlm.clients.base import ChatMessage, ImagePart, TextPart, VLMClient, VLMClientError
from planner_vlm.exchange_log import exchange_record
from planner_vlm.plan_parser import DEFAULT_MAX_CHARS, parse_verdict
from planner_vlm.plan_schema import verdict_json_schema
from planner_vlm.prompting import VERIFY_MEMORY_TOKENS, memory_block, observation_images
from planner_vlm.prompts import load_prompt
from tandem.core.errors import ConfigError, PlanParseError
from tandem.core.memory_view import MemoryView
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Subgoal, TaskSpec, Verdict


class VLMVerifier:
    """A :class:`~tandem.core.protocols.Verifier` backed by a VLM.

    Args:
        client: the model backend.
        task: gives the instruction and predicate templates; may be set later with :meth:`reset`.
        cameras: cameras whose before/after images are sent (default: all in the observation, sorted).
        prompt_version: ``planner_vlm/prompts/verify_<version>.md`` (``v2``: with the task memory; ``v1``: without).
        max_repairs: repair rounds after an unparseable reply.
        use_schema: pass the verdict JSON schema to the client.
        max_new_tokens, temperature: per-call overrides (None: client defaults).
        memory_tokens: the prompt's budget for the task memory, in tokens (``MemoryView.to_text``: whole entries
            are dropped, least important first).

    Attributes:
        source: ``"vlm"``.
        memory: where exchanges are recorded (None: only in ``self.exchanges``).
    """

    #: False: it sees camera images only, never ``Observation.privileged``.
    is_oracle: ClassVar[bool] = False
    source: ClassVar[str] = "vlm"

    def __init__(
        self,
        client: VLMClient,
        task: TaskSpec | None = None,
        *,
        cameras: list[str] | tuple[str, ...] | None = None,
        prompt_version: str = "v2",
        max_repairs: int = 1,
        use_schema: bool = True,
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        memory_tokens: int = VERIFY_MEMORY_TOKENS,
    ):
        self.client = client
        self.task = task
        self.cameras = list(cameras) if cameras else None
        self.prompt = load_prompt("verify", prompt_version)
        self.repair_prompt = load_prompt("repair", prompt_version)
        self.max_repairs = int(max_repairs)
        self.use_schema = use_schema
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.max_chars = int(max_chars)
        if memory_tokens < 1:
            raise ConfigError(f"memory_tokens must be >= 1, got {memory_tokens}")
        self.memory_tokens = int(memory_tokens)
        self.memory: TaskMemory | None = None
        self.exchanges: list[dict[str, Any]] = []

    def reset(self, task: TaskSpec, memory: TaskMemory | None = None) -> None:
        """Set the task (and optionally the memory that receives ``vlm_exchange`` events)."""
        self.task = task
        self.exchanges = []
        if memory is not None:
            self.memory = memory

    def attach_memory(self, memory: TaskMemory | None) -> None:
        """Record every later exchange in ``memory`` (``record_event("vlm_exchange", step, ...)``)."""
        self.memory = memory

    def build_messages(self, before: Observation, after: Observation, subgoal: Subgoal) -> list[ChatMessage]:
        """System + user messages: the subgoal, the attached memory's view (``MemoryView.to_text(memory_tokens)``;
        templates without ``$memory`` leave it out), then per camera its BEFORE and AFTER image.

        Raises:
            ConfigError: if a requested camera is missing from either observation.
        """
        cams = self.cameras or sorted(set(before.images) & set(after.images))
        pairs: list[ImagePart] = []
        for b, a in zip(observation_images(before, cams, " BEFORE"), observation_images(after, cams, " AFTER"),
                        strict=True):
            pairs += [b, a]
        H, W = pairs[0].image.shape[:2] if pairs else (0, 0)
        task = self.task
        try:
            predicate = task.predicate_for(subgoal.skill, subgoal.args) if task else subgoal.signature
        except (KeyError, IndexError):
            predicate = subgoal.signature
        system, user = self.prompt.render(
            instruction=task.instruction if task else "(not given)",
            subgoal_text=subgoal.text,
            signature=subgoal.signature,
            predicate=predicate,
            n_images=len(pairs),
            image_list=", ".join(p.label for p in pairs),
            width=W,
            height=H,
            memory=memory_block(self._view(), self.memory_tokens),
            schema=json.dumps(verdict_json_schema(), separators=(",", ":")),
        )
        parts: list[TextPart | ImagePart] = [TextPart(user)]
        for p in pairs:
            parts += [TextPart(f"\n{p.label}:"), p]
        return [ChatMessage.text("system", system), ChatMessage(role="user", parts=parts)]

    def _view(self) -> MemoryView:
        """The attached memory's view (an empty one without a memory)."""
        return MemoryView() if self.memory is None else MemoryView.from_dict(self.memory.view())

    def verify(self, before: Observation, after: Observation, subgoal: Subgoal) -> Verdict:
        """Judge ``subgoal`` from ``before`` / ``after`` images (``uint8 (H, W, 3)`` each).

        Returns:
            The model's verdict (``source="vlm"``), or a failed verdict with confidence 0 and the
            reason when no usable verdict came back.

        Raises:
            ConfigError: for setup errors only (a requested camera missing from an observation).
        """
        step = int(after.step)
        messages = self.build_messages(before, after, subgoal)
        schema = verdict_json_schema() if self.use_schema else None
        reason = ""
        for rnd in range(1 + max(0, self.max_repairs)):
            try:
                reply = self.client.generate(messages, json_schema=schema, schema_name="tandem_verdict",
                                             max_new_tokens=self.max_new_tokens, temperature=self.temperature)
            except VLMClientError as e:
                reason = f"VLM client error: {e}"
                self._log(step, rnd, messages, None, {"ok": False, "error": reason}, subgoal, None)
                break
            try:
                verdict = parse_verdict(reply.text, max_chars=self.max_chars)
            except PlanParseError as e:
                reason = e.reason
                self._log(step, rnd, messages, reply, {"ok": False, "error": reason}, subgoal, None)
                messages = [*messages, ChatMessage.text("assistant", reply.text[:4000]),
                            ChatMessage.text("user", self.repair_prompt.render(
                                error=reason, schema=json.dumps(verdict_json_schema()))[1])]
                continue
            self._log(step, rnd, messages, reply, {"ok": True}, subgoal, verdict)
            return verdict
        verdict = Verdict(success=False, confidence=0.0,
                          reason=f"vlm verifier gave no usable verdict: {reason}"[:500], source="vlm")
        if self.memory is not None:
            self.memory.record_event("vlm_fallback", step, component="verifier", reason=reason,
                                     subgoal=subgoal.signature)
        return verdict

    def _log(self, step: int, rnd: int, messages: list[ChatMessage], reply: Any, parse: dict[str, Any],
             subgoal: Subgoal, verdict: Verdict | None) -> None:
        row = exchange_record("verifier", self.client, self.prompt, rnd, messages, reply, parse)
        row["subgoal"] = subgoal.signature
        row["verdict"] = None if verdict is None else verdict.to_json()
        self.exchanges.append(row)
        if self.memory is not None:
            self.memory.record_event("vlm_exchange", step, **row)

