"""The structured output the VLM must produce: pydantic models (validation) and JSON schemas (for the
prompt and for servers that enforce ``response_format: json_schema``).

Plan output (one JSON object)::

    {"rationale": "short reason",
     "done":      [{"skill": "stack", "args": ["red", "green"], "text": "stack the red cube on the green cube"}],
     "remaining": [{"skill": "stack", "args": ["blue", "red"],  "text": "stack the blue cube on the red cube"}],
     "next_trace": {"camera": "agentview", "points": [[64.0, 80.5], [70.0, 60.0]]}}

``next_trace`` is the 2-D path of the gripper for ``remaining[0]``, in pixels (x right, y down, origin
top-left) of the named camera at its native resolution, or ``null``.

Verdict output::

    {"success": true, "confidence": 0.8, "reason": "the red cube rests on the green cube"}

The pydantic models check structure and types strictly (no coercion of ``"true"`` to ``True``, no
unknown keys, bounded lengths). Task-specific checks (skills, objects, arity, pixel bounds) are in
:mod:`planner_vlm.plan_parser`. The task-specific JSON schema from :func:`plan_json_schema` narrows
``skill``, ``args`` and ``camera`` to enums, following the OpenAI "strict" subset (every property
required, ``additionalProperties: false``), which vLLM, SGLang and Ollama also accept.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from planner_vlm.point_frames import PointFrame
from tandem.core.types import TaskSpec

#: Bounds shared by the pydantic models and the JSON schemas.
MAX_SUBGOALS = 32
MAX_ARGS = 3
MAX_NAME_CHARS = 64
MAX_TEXT_CHARS = 300
MAX_RATIONALE_CHARS = 2000
MAX_REASON_CHARS = 500
MAX_TRACE_POINTS = 32

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
Point = Annotated[list[float], Field(min_length=2, max_length=2)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SubgoalOut(_Strict):
    """One subgoal as the model writes it."""

    skill: Name
    args: Annotated[list[Name], Field(max_length=MAX_ARGS)]
    text: Annotated[str, Field(max_length=MAX_TEXT_CHARS)]


class TraceOut(_Strict):
    """The keypoint trace of the next subgoal: ``points`` is ``(K, 2)`` pixels ``(x, y)``."""

    camera: Name
    points: Annotated[list[Point], Field(min_length=1, max_length=MAX_TRACE_POINTS)]


class PlanOut(_Strict):
    """The whole plan reply."""

    rationale: Annotated[str, Field(max_length=MAX_RATIONALE_CHARS)]
    done: Annotated[list[SubgoalOut], Field(max_length=MAX_SUBGOALS)]
    remaining: Annotated[list[SubgoalOut], Field(max_length=MAX_SUBGOALS)]
    next_trace: TraceOut | None


class VerdictOut(_Strict):
    """The verifier reply."""

    success: bool
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS)]


def _subgoal_schema(skills: list[str], names: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "skill": {"type": "string", "enum": skills},
            "args": {"type": "array", "items": {"type": "string", "enum": names}, "maxItems": MAX_ARGS},
            "text": {"type": "string", "maxLength": MAX_TEXT_CHARS},
        },
        "required": ["skill", "args", "text"],
        "additionalProperties": False,
    }


def plan_json_schema(task: TaskSpec, trace_camera: str | None = None,
                     point_frame: PointFrame | None = None) -> dict[str, Any]:
    """JSON schema of a plan reply for ``task``.

    Args:
        task: gives the skill enum (``task.skills``), the name enum (``task.objects + task.targets``)
            and the camera enum (``task.cameras``).
        trace_camera: if given, ``next_trace.camera`` must be exactly this camera.
        point_frame: the frame the model writes trace points in (its description; default camera pixels).

    Returns:
        A JSON-schema dict (draft 2020-12 subset used by OpenAI structured outputs).
    """
    skills = sorted(task.skills) or ["none"]
    names = list(dict.fromkeys([*task.objects, *task.targets])) or ["none"]
    cameras = [trace_camera] if trace_camera else list(task.cameras)
    sub = _subgoal_schema(skills, names)
    H, W = task.image_size
    trace = {
        "type": "object",
        "properties": {
            "camera": {"type": "string", "enum": cameras},
            "points": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_TRACE_POINTS,
                "description": (point_frame or PointFrame("pixels")).describe((H, W)) + ", origin top-left",
                "items": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
            },
        },
        "required": ["camera", "points"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "maxLength": MAX_RATIONALE_CHARS},
            "done": {"type": "array", "items": sub, "maxItems": MAX_SUBGOALS},
            "remaining": {"type": "array", "items": sub, "maxItems": MAX_SUBGOALS},
            "next_trace": {"anyOf": [trace, {"type": "null"}]},
        },
        "required": ["rationale", "done", "remaining", "next_trace"],
        "additionalProperties": False,
    }


def verdict_json_schema() -> dict[str, Any]:
    """JSON schema of a verifier reply."""
    return {
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "confidence": {"type": "number", "minimum": 0.0, "maximum": 1.0},
            "reason": {"type": "string", "maxLength": MAX_REASON_CHARS},
        },
        "required": ["success", "confidence", "reason"],
        "additionalProperties": False,
    }
