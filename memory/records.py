"""The typed record model of task memory: one frozen record per thing that happens in an episode.

Every record has a control ``step`` (the agent's step index when it was made) and a ``kind``. Records are the
unit of persistence: :class:`memory.store.MemoryStore` commits each one atomically, the JSONL file of
:class:`memory.task_memory.TaskMemoryV1` holds one per line, and the derived state of an episode (done /
remaining, attempt counts, failures, facts) is rebuilt by applying them in order.

==================  ===================================================================================
record (``kind``)   fields
==================  ===================================================================================
EpisodeStart        ``task`` (TaskSpec fields), ``meta``; always the first record of an episode
PlanRecord          ``source`` (planner name), ``plan`` (``Plan.to_json()``)
ReplanRecord        ``reason``, ``after_failure``, ``failed`` (signature of the failed subgoal or None)
AttemptRecord       ``signature``, ``attempt`` (1-based per signature), ``subgoal``; ``step`` is the start
                    step, ``end_step`` the step of its verdict (None while running or when interrupted)
VerdictRecord       ``signature``, ``attempt``, ``success``, ``confidence`` in [0, 1], ``reason``, ``source``
FailureRecord       ``signature``, ``attempt``, ``cause`` (:class:`FailureCause`), ``detail``
ObjectFactRecord    ``object``, ``fact``, ``source``; optionally its last observed ``pixel`` ``(x, y)`` px
                    in ``camera`` (origin top-left, x right, y down) and/or ``pose`` ``(7,)``: position m
                    (world frame) + quaternion wxyz
EventRecord         any other ``kind`` (``perturbation``, ``stop``, ``agent_finished``, ``vlm_exchange``,
                    ...) with free JSON-safe ``data``
==================  ===================================================================================

JSON form (``to_json``): ``{"kind", "step", ...fields}``. The kinds ``episode_start``, ``plan``,
``attempt``, ``verdict`` and ``fact`` keep the field layout of the version-1 JSONL event log, so files
written before this model load unchanged (``verdict`` nests its four verdict fields under ``"verdict"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, override

from tandem.core.memory_view import FailureCause
from tandem.core.privileged import goals_withheld
from tandem.core.types import Plan, Subgoal, TaskSpec, Verdict, to_jsonable
from tandem.core.vocabulary import TaskVocabulary


class RecordError(ValueError):
    """A record's JSON is malformed (missing field, wrong type). The message names the kind and the field."""


def signature_of(subgoal_json: Mapping[str, Any]) -> str:
    """``skill(arg1,arg2)`` of a ``Subgoal.to_json()`` dict (same as ``Subgoal.signature``)."""
    return f"{subgoal_json['skill']}({','.join(subgoal_json['args'])})"


def task_to_json(task: TaskSpec) -> dict[str, Any]:
    """JSON-safe dict of a TaskSpec (tuples become lists). Goals withheld from the memory (the judge's: it is not an
    oracle) are written as ``"goals": null``; the vocabulary as its file form."""
    withheld = goals_withheld(task)
    if withheld:
        task = dataclasses.replace(task, goals=())
    out = to_jsonable(dataclasses.asdict(task))
    if withheld:
        out["goals"] = None
    return out


def task_from_json(d: Mapping[str, Any]) -> TaskSpec:
    """Rebuild a TaskSpec from :func:`task_to_json` output (lists back to tuples; unknown keys ignored; withheld
    goals come back empty)."""
    names = {f.name for f in dataclasses.fields(TaskSpec)}
    kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in names}
    if kwargs.get("goals") is None:
        kwargs["goals"] = ()
    if isinstance(kwargs.get("vocabulary"), Mapping):
        kwargs["vocabulary"] = TaskVocabulary.from_dict(kwargs["vocabulary"])
    return TaskSpec(**kwargs)


@dataclass(frozen=True)
class Record:
    """Base of every record: the control step it was made at. Subclasses set the class attribute ``kind``."""

    kind: ClassVar[str] = ""
    step: int

    def to_json(self) -> dict[str, Any]:
        """``{"kind", "step", ...}`` with plain JSON types."""
        body = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "step"}
        return {"kind": self.kind, "step": int(self.step), **to_jsonable(body)}


@dataclass(frozen=True)
class EpisodeStart(Record):
    """The first record of an episode: the task and free metadata (seed, config, variant)."""

    kind: ClassVar[str] = "episode_start"
    task: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def task_spec(self) -> TaskSpec:
        """The episode's task, read back from its JSON."""
        return task_from_json(self.task)


@dataclass(frozen=True)
class PlanRecord(Record):
    """A plan made by planner ``source`` (``Plan.to_json()`` in ``plan``)."""

    kind: ClassVar[str] = "plan"
    source: str = ""
    plan: dict[str, Any] = field(default_factory=dict)

    @property
    def remaining(self) -> list[str]:
        """Signatures of the plan's remaining subgoals, in order."""
        return [signature_of(s) for s in self.plan.get("remaining", [])]

    @property
    def done(self) -> list[str]:
        """Signatures of the plan's done subgoals, in order."""
        return [signature_of(s) for s in self.plan.get("done", [])]


@dataclass(frozen=True)
class ReplanRecord(Record):
    """The agent asked the planner again: after a failure (``failed`` = its signature) or a success."""

    kind: ClassVar[str] = "replan"
    reason: str = ""
    after_failure: bool = False
    failed: str | None = None


@dataclass(frozen=True)
class AttemptRecord(Record):
    """One attempt at a subgoal: starts at ``step``, ends at ``end_step`` (its verdict's step).

    As written when the attempt starts, ``end_step`` is None; readers of an episode see it filled in from the
    matching :class:`VerdictRecord` (same signature and attempt number).
    """

    kind: ClassVar[str] = "attempt"
    signature: str = ""
    attempt: int = 1
    subgoal: dict[str, Any] = field(default_factory=dict)
    end_step: int | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @override
    def to_json(self) -> dict[str, Any]:
        d = super().to_json()
        if d["end_step"] is None:  # the version-1 layout has no end_step / params
            del d["end_step"]
        if not d["params"]:
            del d["params"]
        return d


@dataclass(frozen=True)
class VerdictRecord(Record):
    """The verifier's verdict on attempt ``attempt`` at ``signature``."""

    kind: ClassVar[str] = "verdict"
    signature: str = ""
    attempt: int = 0
    subgoal: dict[str, Any] = field(default_factory=dict)
    success: bool = False
    confidence: float = 1.0
    reason: str = ""
    source: str = ""

    @property
    def verdict(self) -> Verdict:
        """The verdict the record stores."""
        return Verdict(self.success, self.confidence, self.reason, self.source)  # type: ignore[arg-type]

    @override
    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "step": int(self.step), "subgoal": to_jsonable(self.subgoal),
                "signature": self.signature, "attempt": int(self.attempt),
                "verdict": {"success": bool(self.success), "confidence": float(self.confidence),
                            "reason": self.reason, "source": self.source}}


@dataclass(frozen=True)
class FailureRecord(Record):
    """A failed attempt with its cause category (written together with the failing verdict)."""

    kind: ClassVar[str] = "failure"
    signature: str = ""
    attempt: int = 0
    cause: FailureCause = FailureCause.UNKNOWN
    detail: str = ""

    @property
    def skill(self) -> str:
        """The skill of the failed subgoal's signature (``stack`` of ``stack(red,green)``)."""
        return self.signature.partition("(")[0]


@dataclass(frozen=True)
class ObjectFactRecord(Record):
    """Something observed about an object: free text plus, optionally, where it was last seen.

    Attributes:
        object: object name, e.g. ``"red"``.
        fact: text, e.g. ``"stack(red,blue) failed at step 120: ..."``.
        source: who observed it: ``"verifier"``, ``"planner"``, ``"perception"``, ``"agent"``...
        pixel: ``(x, y)`` px in ``camera`` (origin top-left, x right, y down), or None.
        camera: camera of ``pixel``.
        pose: ``(7,)`` position m (world frame) + quaternion wxyz, or None.
    """

    kind: ClassVar[str] = "fact"
    object: str = ""
    fact: str = ""
    source: str = "agent"
    pixel: tuple[float, float] | None = None
    camera: str | None = None
    pose: tuple[float, ...] | None = None

    @override
    def to_json(self) -> dict[str, Any]:
        d = super().to_json()
        for k in ("pixel", "camera", "pose"):  # optional fields stay out of the line when unset
            if d[k] is None:
                del d[k]
        return d


@dataclass(frozen=True)
class EventRecord(Record):
    """Any other event: ``kind`` is stored per instance, ``data`` holds its JSON-safe fields."""

    event: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:  # type: ignore[override]
        """The event's kind (stored per instance, unlike the other records' class-level kinds)."""
        return self.event

    @override
    def to_json(self) -> dict[str, Any]:
        return {"kind": self.event, "step": int(self.step), **to_jsonable(self.data)}


#: Record classes with a fixed schema, by kind. Any other kind is an :class:`EventRecord`.
RECORD_TYPES: dict[str, type[Record]] = {
    c.kind: c for c in (EpisodeStart, PlanRecord, ReplanRecord, AttemptRecord, VerdictRecord, FailureRecord,
                        ObjectFactRecord)
}
#: Kinds only written through their own ``record_*`` method (``TaskMemoryV1.record_event`` refuses them).
STRUCTURED_KINDS: frozenset[str] = frozenset(RECORD_TYPES)


def _need(d: Mapping[str, Any], kind: str, key: str, types: type | tuple[type, ...]) -> Any:
    if key not in d:
        raise RecordError(f"{kind!r} record lacks {key!r}")
    v = d[key]
    if not isinstance(v, types) or (types is int and isinstance(v, bool)):
        raise RecordError(f"{kind!r} record field {key!r} has type {type(v).__name__}")
    return v


def record_from_json(d: Mapping[str, Any]) -> Record:
    """Parse one ``{"kind", "step", ...}`` dict (new or version-1 layout) into its typed record.

    Raises:
        RecordError: not a dict, no string ``kind`` / integer ``step``, or a missing / mistyped field (the
            message names the kind and the field).
    """
    if not isinstance(d, Mapping):
        raise RecordError(f"a record must be a JSON object, got {type(d).__name__}")
    kind = d.get("kind")
    if not isinstance(kind, str) or not kind:
        raise RecordError("record has no string 'kind'")
    step = d.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        raise RecordError(f"{kind!r} record has no integer 'step'")
    if kind == "episode_start":
        return EpisodeStart(step, task=dict(_need(d, kind, "task", dict)), meta=dict(d.get("meta") or {}))
    if kind == "plan":
        plan = _need(d, kind, "plan", dict)
        for key in ("done", "remaining"):
            if not isinstance(plan.get(key), list):
                raise RecordError(f"'plan' record's plan lacks a {key!r} list")
        return PlanRecord(step, source=str(_need(d, kind, "source", str)), plan=dict(plan))
    if kind == "replan":
        return ReplanRecord(step, reason=str(d.get("reason", "")), after_failure=bool(d.get("after_failure", False)),
                            failed=d.get("failed"))
    if kind == "attempt":
        sg = _need(d, kind, "subgoal", dict)
        end = d.get("end_step")
        return AttemptRecord(step, signature=str(_need(d, kind, "signature", str)),
                             attempt=int(_need(d, kind, "attempt", int)), subgoal=dict(sg),
                             end_step=None if end is None else int(end), params=dict(d.get("params") or {}))
    if kind == "verdict":
        v = _need(d, kind, "verdict", dict)
        for key in ("success", "reason"):
            if key not in v:
                raise RecordError(f"'verdict' record's verdict lacks {key!r}")
        return VerdictRecord(step, signature=str(_need(d, kind, "signature", str)),
                             attempt=int(_need(d, kind, "attempt", int)), subgoal=dict(_need(d, kind, "subgoal", dict)),
                             success=bool(v["success"]), confidence=float(v.get("confidence", 1.0)),
                             reason=str(v["reason"]), source=str(v.get("source", "")))
    if kind == "failure":
        cause = d.get("cause", "unknown")
        try:
            cause = FailureCause(cause)
        except ValueError as e:
            raise RecordError(f"'failure' record has unknown cause {cause!r}; known: "
                              f"{[c.value for c in FailureCause]}") from e
        return FailureRecord(step, signature=str(_need(d, kind, "signature", str)), attempt=int(d.get("attempt", 0)),
                             cause=cause, detail=str(d.get("detail", "")))
    if kind == "fact":
        pixel, pose = d.get("pixel"), d.get("pose")
        return ObjectFactRecord(step, object=str(_need(d, kind, "object", str)), fact=str(_need(d, kind, "fact", str)),
                                source=str(d.get("source", "agent")),
                                pixel=None if pixel is None else (float(pixel[0]), float(pixel[1])),
                                camera=d.get("camera"), pose=None if pose is None else tuple(float(v) for v in pose))
    return EventRecord(step, event=kind, data={k: v for k, v in d.items() if k not in ("kind", "step")})


def plan_record(plan: Plan, step: int, source: str) -> PlanRecord:
    """PlanRecord of ``plan`` at ``step`` from planner ``source``."""
    return PlanRecord(int(step), source=str(source), plan=to_jsonable(plan.to_json()))


def verdict_record(subgoal: Subgoal, verdict: Verdict, step: int, attempt: int) -> VerdictRecord:
    """VerdictRecord of ``verdict`` on attempt ``attempt`` at ``subgoal``."""
    return VerdictRecord(int(step), signature=subgoal.signature, attempt=int(attempt),
                         subgoal=to_jsonable(subgoal.to_json()), success=bool(verdict.success),
                         confidence=float(verdict.confidence), reason=verdict.reason, source=verdict.source)


__all__ = [
    "RECORD_TYPES", "STRUCTURED_KINDS", "AttemptRecord", "EpisodeStart", "EventRecord", "FailureCause",
    "FailureRecord", "ObjectFactRecord", "PlanRecord", "Record", "RecordError", "ReplanRecord", "VerdictRecord",
    "plan_record", "record_from_json", "signature_of", "task_from_json", "task_to_json", "verdict_record",
]
