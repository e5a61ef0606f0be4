"""Strict parsing of VLM output into a :class:`~tandem.core.types.Plan` or :class:`~tandem.core.types.Verdict`.

Nothing the model says is executed: the text is only ever decoded as JSON data. Every failure
raises :class:`tandem.core.errors.PlanParseError` (with the offending text); no other exception escapes
:func:`parse_plan` / :func:`parse_verdict` for any ``str`` input.

Steps:

1. size limit (``max_chars``), then accept either the bare JSON object or exactly one fenced
   block (`````json ... `````), optionally after leading reasoning (``<think>...</think>`` blocks, or
   reasoning closed by ``</think>`` alone: :func:`planner_vlm.reasoning.split_think_blocks`); any other
   prose around the JSON is rejected;
2. ``json.loads`` with ``NaN``/``Infinity`` rejected, nesting depth and huge numbers caught;
3. structural validation with the strict pydantic models of :mod:`planner_vlm.plan_schema`;
4. task checks: skills exist in ``task.skills``; each arg is one of ``task.objects + task.targets``;
   the number of args matches the skill's predicate template; args of one subgoal are distinct;
   free text has no control or format characters (bidi overrides, zero-width); the trace camera is
   a task camera (or the required one) and every point lies inside the model's point frame
   (:class:`planner_vlm.point_frames.PointFrame`: camera pixels, the processor's resized pixels, a 0-1000
   grid or 0-1), and is converted to camera pixels of ``task.image_size``; a trace needs a remaining subgoal.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import ValidationError

from planner_vlm.plan_schema import PlanOut, SubgoalOut, VerdictOut
from planner_vlm.point_frames import PointFrame
from planner_vlm.reasoning import UnclosedReasoning, split_think_blocks
from tandem.core.errors import PlanParseError
from tandem.core.types import KeypointTrace, Plan, Subgoal, TaskSpec, Verdict

#: Default longest model output accepted (characters).
DEFAULT_MAX_CHARS = 20_000

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*[ \t]*\n(.*?)\n?```$", re.DOTALL)

IdFn = Callable[[str, tuple[str, ...], str, int], str]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not valid JSON")


def extract_json_object(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """Decode the model output as one JSON object (see the module docstring for what is accepted).

    Raises:
        PlanParseError: if the text is not a string, too long, not (fenced) JSON, or not an object.
    """
    if not isinstance(text, str):
        raise PlanParseError(f"model output must be a string, got {type(text).__name__}", repr(text)[:4000])
    if len(text) > max_chars:
        raise PlanParseError(f"model output too long: {len(text)} characters > {max_chars}", text)
    try:
        _, body = split_think_blocks(text)
    except UnclosedReasoning as e:
        raise PlanParseError(f"no answer after the reasoning: {e}", text) from None
    if body.startswith("```"):
        m = _FENCE.match(body)
        if not m:
            raise PlanParseError("a ``` code fence is not closed, or text follows it", text)
        body = m.group(1).strip()
    if not body:
        raise PlanParseError("model output is empty", text)
    if not body.startswith("{"):
        raise PlanParseError("expected a JSON object starting with '{' (no prose around it)", text)
    try:
        obj = json.loads(body, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise PlanParseError(f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}", text) from None
    except RecursionError:
        raise PlanParseError("JSON nested too deeply", text) from None
    except ValueError as e:  # NaN/Infinity, or an integer with too many digits
        raise PlanParseError(f"invalid JSON value: {e}", text) from None
    if not isinstance(obj, dict):
        raise PlanParseError(f"expected a JSON object, got {type(obj).__name__}", text)
    return obj


def _validation_reason(e: ValidationError, limit: int = 5) -> str:
    parts = []
    for err in e.errors()[:limit]:
        loc = ".".join(str(x) for x in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = e.error_count() - limit
    return "schema violation: " + "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _check_text(value: str, field: str, text: str, allow_newlines: bool = False) -> None:
    for ch in value:
        if allow_newlines and ch in "\n\t":
            continue
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co"):
            raise PlanParseError(f"{field} contains a control or format character U+{ord(ch):04X}", text)


def skill_arity(task: TaskSpec, skill: str) -> int:
    """Number of args of ``skill``: the highest ``{i}`` index + 1 in its predicate and text templates."""
    n = 0
    for template in (task.skills.get(skill, ""), task.skill_texts.get(skill, "")):
        for _, field, _, _ in string.Formatter().parse(template):
            if field is not None and field.isdigit():
                n = max(n, int(field) + 1)
    return n


def _check_subgoal(sg: SubgoalOut, where: str, task: TaskSpec, names: set[str], text: str) -> None:
    if sg.skill not in task.skills:
        raise PlanParseError(f"{where}.skill {sg.skill!r} is not a skill of task {task.name!r} "
                             f"(known: {', '.join(sorted(task.skills))})", text)
    for i, a in enumerate(sg.args):
        if a not in names:
            raise PlanParseError(f"{where}.args[{i}] {a!r} is not an object or target of task {task.name!r} "
                                 f"(known: {', '.join(sorted(names))})", text)
    n = skill_arity(task, sg.skill)
    if len(sg.args) != n:
        raise PlanParseError(f"{where}: skill {sg.skill!r} takes {n} args, got {len(sg.args)}", text)
    if len(set(sg.args)) != len(sg.args):
        raise PlanParseError(f"{where}: args must be distinct, got {sg.args}", text)
    _check_text(sg.text, f"{where}.text", text)


def parse_plan(
    text: str,
    task: TaskSpec,
    *,
    trace_camera: str | None = None,
    canonical_text: bool = True,
    id_fn: IdFn | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    point_frame: PointFrame | None = None,
) -> Plan:
    """Turn a model reply into a :class:`~tandem.core.types.Plan` for ``task``, or raise.

    Args:
        text: the raw model output.
        task: the task whose skills, objects/targets, cameras and image size constrain the plan.
        trace_camera: if given, ``next_trace.camera`` must be this camera.
        canonical_text: replace each subgoal's text by ``task.subgoal_text(skill, args)`` (the
            wording the executor was trained on); the model's own text is still checked.
        id_fn: ``(skill, args, "done"|"remaining", index) -> id``; default ``"done0"``, ``"rem0"``...
        max_chars: longest accepted output.
        point_frame: the frame the model writes ``next_trace.points`` in (default: camera pixels).

    Returns:
        The plan; ``remaining[0].trace`` is a :class:`~tandem.core.types.KeypointTrace` (``(K, 2)`` camera px,
        ``image_size = task.image_size``, converted from ``point_frame``) when the model gave one.

    Raises:
        PlanParseError: for any output that is not a valid plan of this task; ``.text`` holds the output.
    """
    obj = extract_json_object(text, max_chars)
    try:
        out = PlanOut.model_validate(obj)
    except ValidationError as e:
        raise PlanParseError(_validation_reason(e), text) from None
    except (RecursionError, ValueError, TypeError) as e:
        raise PlanParseError(f"schema validation failed: {type(e).__name__}", text) from None
    names = set(task.objects) | set(task.targets)
    _check_text(out.rationale, "rationale", text, allow_newlines=True)
    for field in ("done", "remaining"):
        for i, sg in enumerate(getattr(out, field)):
            _check_subgoal(sg, f"{field}[{i}]", task, names, text)

    trace: KeypointTrace | None = None
    if out.next_trace is not None:
        if not out.remaining:
            raise PlanParseError("next_trace is given but remaining is empty", text)
        cam = out.next_trace.camera
        allowed = [trace_camera] if trace_camera else list(task.cameras)
        if cam not in allowed:
            raise PlanParseError(f"next_trace.camera {cam!r} must be one of {allowed}", text)
        with np.errstate(over="ignore"):  # values beyond float32 become inf and are rejected below
            pts = np.asarray(out.next_trace.points, dtype=np.float64).astype(np.float32)  # checked as stored
        H, W = task.image_size
        if not np.all(np.isfinite(pts)):
            raise PlanParseError("next_trace.points contains a non-finite number", text)
        frame = point_frame or PointFrame("pixels")
        bad = frame.out_of_frame(pts, (H, W))
        if bad.size:
            i = int(bad[0])
            raise PlanParseError(f"next_trace.points[{i}] = {pts[i].tolist()} lies outside the {frame.kind} frame: "
                                 f"{frame.describe((H, W))}", text)
        trace = KeypointTrace(camera=cam, points=frame.to_camera_pixels(pts, (H, W)), image_size=(int(H), int(W)))

    def make(sg: SubgoalOut, field: str, i: int) -> Subgoal:
        args = tuple(sg.args)
        sid = id_fn(sg.skill, args, field, i) if id_fn else f"{'done' if field == 'done' else 'rem'}{i}"
        words = task.subgoal_text(sg.skill, args) if canonical_text or not sg.text.strip() else sg.text.strip()
        return Subgoal(id=sid, skill=sg.skill, args=args, text=words)

    done = [make(sg, "done", i) for i, sg in enumerate(out.done)]
    remaining = [make(sg, "remaining", i) for i, sg in enumerate(out.remaining)]
    if trace is not None:
        remaining[0].trace = trace
    return Plan(done=done, remaining=remaining, rationale=out.rationale)


def parse_verdict(text: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> Verdict:
    """Turn a verifier reply into a :class:`~tandem.core.types.Verdict` with ``source="vlm"``, or raise.

    Raises:
        PlanParseError: for any output that is not ``{"success": bool, "confidence": [0, 1], "reason": str}``.
    """
    obj = extract_json_object(text, max_chars)
    try:
        out = VerdictOut.model_validate(obj)
    except ValidationError as e:
        raise PlanParseError(_validation_reason(e), text) from None
    except (RecursionError, ValueError, TypeError) as e:
        raise PlanParseError(f"schema validation failed: {type(e).__name__}", text) from None
    _check_text(out.reason, "reason", text, allow_newlines=True)
    return Verdict(success=out.success, confidence=float(out.confidence), reason=out.reason, source="vlm")
