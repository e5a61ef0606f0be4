"""Structured task memory of one episode at a time: typed records, derived state, views, lessons, persistence.

``TaskMemoryV1`` implements :class:`tandem.core.protocols.TaskMemory`. It is event-sourced: every ``record_*`` call
builds typed records (:mod:`memory.records`), applies them to the derived state (plan progress, attempts,
failures with their causes, object facts) and appends them to the episode's log. The same code replays a saved
log, so a loaded memory equals the saved one by construction (same ``view()``, same ``events()``).

Persistence, two forms:

* **SQLite** (:meth:`TaskMemoryV1.open_store`): every record is committed to a :class:`memory.store.MemoryStore`
  as it is made (one transaction per call), control steps with :meth:`record_step`, goal images per attempt;
  :meth:`finish_episode` marks the episode finished. A killed process leaves the episode ``interrupted`` with
  every committed record intact. Lessons (:mod:`memory.lessons`) are learned from the ended episodes of a store.
* **JSONL** (:meth:`save` / :meth:`load`), the version-1 format: a header line ``{"format":
  "tandem.task_memory", "version": 1, "max_failures_in_view": N, "max_facts_per_object": M}``, then one record
  per line. Files written before the typed records load unchanged.

What a record call writes:

* ``start_episode``: ``episode_start``;
* ``record_plan``: ``plan``, and a ``replan`` record for every plan after the first (its reason names the verdict
  that preceded it);
* ``record_attempt``: ``attempt`` (with the retry policy it runs under in ``params``); if the subgoal has a
  keypoint trace and is a grasp, a ``fact`` with the trace's end pixel as where the object was seen (``source
  "trace"``); its goal image goes to the store as ``goal/<signature>#<attempt>``;
* ``record_verdict``: ``verdict``, and on failure a ``failure`` with the cause from
  :func:`memory.failures.classify_failure` (or the one given);
* ``record_fact``, ``record_event``: ``fact`` and any other kind. A ``final_verdict`` event with ``cut_short``
  true and a ``subgoal`` signature (the agent's verdict on the final state of an attempt the episode's end cut short)
  marks that attempt ``"cut_short"`` in ``last_outcome``: it is neither a success nor a failure, and lessons
  (:mod:`memory.lessons`, which read verdict and failure records only) do not learn from it.

The loading policy for malformed JSONL is strict by default: the first bad line raises
:class:`MemoryFileError` naming the file, the 1-based line number, what was wrong and how many valid event lines
preceded it. ``load(path, strict=False)`` skips bad lines, keeps every valid one, lists each skipped line in
``memory.skipped_lines`` and emits a ``UserWarning``.

The design follows the structured memories of Goal2Skill / RoboMemory (done / remaining split, attempt counters,
failure reasons, object facts) and LoHo-Manip's done/remaining plan form.
"""

from __future__ import annotations

import copy
import json
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

from memory.failures import classify_failure
from memory.lessons import LessonBook, Lessons, RetryRules, retry_policy
from memory.records import (
    STRUCTURED_KINDS,
    AttemptRecord,
    EpisodeStart,
    EventRecord,
    FailureCause,
    FailureRecord,
    ObjectFactRecord,
    PlanRecord,
    Record,
    RecordError,
    ReplanRecord,
    VerdictRecord,
    plan_record,
    record_from_json,
    signature_of,
    task_from_json,
    task_to_json,
    verdict_record,
)
from memory.store import EpisodeWriter, MemoryStore
from tandem.core.errors import ConfigError, TandemError
from tandem.core.memory_view import MAX_HINTS, MAX_PLAN_ITEMS, MemoryView, ViewLimits, clip_text
from tandem.core.types import Plan, RetryPolicy, Subgoal, TaskSpec, Verdict, to_jsonable

FORMAT_NAME = "tandem.task_memory"
FORMAT_VERSION = 1


class MemoryFileError(TandemError, ValueError):
    """A task-memory JSONL file is malformed.

    Attributes:
        path: the file.
        line: 1-based line number of the offending line (0 when the file as a whole is wrong).
        reason: what was wrong.
    """

    def __init__(self, path: str | Path, line: int, reason: str):
        self.path, self.line, self.reason = str(path), int(line), reason
        super().__init__(f"{path}:{line}: {reason}")


class TaskMemoryV1:
    """Structured, event-sourced memory of one episode at a time (implements ``tandem.core.protocols.TaskMemory``).

    Derived state (all JSON-safe):

    * ``plan_done`` / ``plan_remaining``: ``Subgoal.to_json()`` dicts of the latest plan, kept up to date by
      success verdicts (a successful subgoal moves from remaining to done); ``plan_source`` names the planner.
    * ``plan_history``: one row per plan ``{"step", "source", "done": [signatures], "remaining": [signatures],
      "rationale"}``.
    * ``attempt_counts``: signature (e.g. ``"stack(red,green)"``) -> attempts; ``last_outcome``: signature ->
      ``"running"``, ``"success"``, ``"failure"`` or ``"cut_short"`` (the episode ended during the attempt).
    * ``failures``: every failed verdict ``{"subgoal": signature, "text", "attempt", "step", "reason", "cause"}``.
    * ``facts``: object -> list of ``{"fact", "step", "source"}`` (plus ``pixel``/``camera``/``pose`` when known).
    * ``attempt_records``: every :class:`~memory.records.AttemptRecord` with its ``end_step`` once judged.

    Args:
        max_failures_in_view: how many of the most recent failures ``view()`` shows.
        max_facts_per_object: how many of the most recent facts per relevant object ``view()`` shows.
        grasp_skill: the skill that grasps (for failure causes and trace facts).
        lessons: ``None`` (no lessons), ``"store"`` (learn from the ended episodes of the store given to
            :meth:`open_store`), a path to another memory store to learn from (read only; e.g. a finished run,
            which keeps evaluation rows independent of their order), or a :class:`~memory.lessons.LessonBook`.
        rules: thresholds of the retry policy (:class:`~memory.lessons.RetryRules`).

    Raises:
        ConfigError: non-positive limits or a bad ``lessons`` value; from ``record_*`` when called before
            ``start_episode`` or with a reserved event kind.
    """

    def __init__(self, max_failures_in_view: int = 5, max_facts_per_object: int = 3, grasp_skill: str = "pick",
                 lessons: str | Path | LessonBook | None = None, rules: RetryRules | None = None):
        if max_failures_in_view < 1 or max_facts_per_object < 1:
            raise ConfigError(
                f"TaskMemoryV1 limits must be >= 1, got max_failures_in_view={max_failures_in_view}, "
                f"max_facts_per_object={max_facts_per_object}"
            )
        self.max_failures_in_view = int(max_failures_in_view)
        self.max_facts_per_object = int(max_facts_per_object)
        self.grasp_skill = grasp_skill
        self.rules = rules or RetryRules()
        self.skipped_lines: list[tuple[int, str]] = []
        self.store: MemoryStore | None = None
        self.writer: EpisodeWriter | None = None
        self._lesson_source = lessons
        self._lesson_book: LessonBook | None = lessons if isinstance(lessons, LessonBook) else None
        if lessons is not None and not isinstance(lessons, (str, Path, LessonBook)):
            raise ConfigError(f"TaskMemoryV1(lessons=...) must be None, 'store', a store path or a LessonBook, "
                              f"got {type(lessons).__name__}")
        if isinstance(lessons, (str, Path)) and str(lessons) != "store":
            self._lesson_book = LessonBook(MemoryStore(lessons, create=False))
        self.lessons: Lessons | None = None
        self._clear()

    # ------------------------------------------------------------------ state
    def _clear(self) -> None:
        self.task: TaskSpec | None = None
        self.meta: dict[str, Any] = {}
        self._records: list[Record] = []
        self.plan_done: list[dict[str, Any]] = []
        self.plan_remaining: list[dict[str, Any]] = []
        self.plan_source: str | None = None
        self.plan_history: list[dict[str, Any]] = []
        self.attempt_counts: dict[str, int] = {}
        self.last_outcome: dict[str, str] = {}
        self.failures: list[dict[str, Any]] = []
        self.facts: dict[str, list[dict[str, Any]]] = {}
        self.current: dict[str, Any] | None = None
        self.attempt_records: list[AttemptRecord] = []
        self._last_verdict: VerdictRecord | None = None

    def _require_started(self, what: str) -> None:
        if self.task is None:
            raise ConfigError(f"TaskMemoryV1.{what} called before start_episode(task)")

    # ------------------------------------------------------------ persistence (SQLite)
    def open_store(self, path: str | Path | None) -> None:
        """Persist the following episodes to the SQLite store at ``path`` (a file or a run directory); None stops.

        The store stays open across episodes while the path is the same.

        Raises:
            MemoryStoreError / MemorySchemaError: the file is not a usable memory store (it is left untouched).
            ConfigError: called while an episode is being written.
        """
        if self.writer is not None and self.writer.open:
            raise ConfigError("TaskMemoryV1.open_store called while an episode is being written; "
                              "call finish_episode first")
        if path is None:
            if self.store is not None:
                self.store.close()
            self.store = None
            return
        target = Path(path)
        if self.store is not None and target in (self.store.path, self.store.path.parent):
            return
        if self.store is not None:
            self.store.close()
        self.store = MemoryStore(target)
        if self._lesson_source == "store":
            self._lesson_book = LessonBook(self.store)

    def finish_episode(self, success: bool | None, summary: dict[str, Any] | None = None) -> None:
        """Mark the episode finished in the store (no-op without one). Idempotent."""
        if self.writer is not None:
            self.writer.finish(success, summary)
            self.writer = None

    def record_step(self, step: int, t: float, subgoal_id: str | None, action: Any, proprio: Any) -> None:
        """Add one control step (``action`` ``(A,)``, ``proprio`` ``(D,)``) to the store; no-op without one."""
        if self.writer is not None:
            self.writer.add_step(step, t, subgoal_id, action, proprio)

    # ------------------------------------------------------------ recording
    def start_episode(self, task: TaskSpec, meta: dict[str, Any] | None = None) -> None:
        """Forget the previous episode and start the memory of a new episode of ``task``.

        With a store, a new ``running`` episode is begun there (an unfinished previous one is marked finished
        with unknown success) and the task's lessons are loaded.

        Raises:
            ConfigError: if ``task`` is not a TaskSpec.
        """
        if not isinstance(task, TaskSpec):
            raise ConfigError(f"start_episode needs a TaskSpec, got {type(task).__name__}")
        self._clear()
        if self.writer is not None:
            self.writer.finish(None, {"note": "a new episode started before this one was finished"})
            self.writer = None
        if self._lesson_book is not None:
            self.lessons = self._lesson_book.for_task(task.name)
        if self.store is not None:
            self.writer = self.store.begin_episode(task.name, task.instruction, meta)
        self._add(EpisodeStart(0, task=task_to_json(task), meta=to_jsonable(meta or {})))

    def record_plan(self, plan: Plan, step: int, source: str) -> None:
        """Record a new plan from planner ``source`` (e.g. ``"oracle"``) at control step ``step``.

        Every plan after the episode's first is also recorded as a replan.
        """
        self._require_started("record_plan")
        records: list[Record] = []
        if self.plan_history:
            last = self._last_verdict
            if last is None:
                records.append(ReplanRecord(int(step), reason="new plan without a verdict in between"))
            else:
                outcome = "success" if last.success else "failure"
                records.append(ReplanRecord(int(step), reason=f"after the {outcome} of {last.signature} "
                                                              f"(attempt {last.attempt})",
                                            after_failure=not last.success, failed=None if last.success else last.signature))
        records.append(plan_record(plan, step, source))
        self._add(*records)

    def record_attempt(self, subgoal: Subgoal, step: int, policy: RetryPolicy | None = None) -> int:
        """Mark the start of an attempt at ``subgoal`` (run under ``policy``); returns its number (1-based)."""
        self._require_started("record_attempt")
        attempt = self.attempt_counts.get(subgoal.signature, 0) + 1
        params = {} if policy is None or policy == RetryPolicy() else policy.to_json()
        records: list[Record] = [AttemptRecord(int(step), signature=subgoal.signature, attempt=attempt,
                                               subgoal=to_jsonable(subgoal.to_json()), params=params)]
        if subgoal.trace is not None and subgoal.skill == self.grasp_skill and subgoal.args:
            x, y = (float(v) for v in subgoal.trace.points[-1])
            records.append(ObjectFactRecord(int(step), object=subgoal.args[0], source="trace",
                                            fact=f"grasp point at ({x:.0f}, {y:.0f}) px in {subgoal.trace.camera}",
                                            pixel=(x, y), camera=subgoal.trace.camera))
        self._add(*records)
        if self.writer is not None and subgoal.goal_image is not None:
            self.writer.add_image(f"goal/{subgoal.signature}#{attempt}", int(step), subgoal.goal_image)
        return attempt

    def record_verdict(self, subgoal: Subgoal, verdict: Verdict, step: int,
                       cause: FailureCause | str | None = None) -> FailureRecord | None:
        """Record the verifier's verdict on the latest attempt at ``subgoal``.

        A success moves the subgoal (by signature) from the plan's remaining to done. A failure is also
        recorded as a :class:`~memory.records.FailureRecord` with ``cause`` (or the one
        :func:`~memory.failures.classify_failure` tells from the reason), which is returned.

        Raises:
            ValueError: ``cause`` is not a :class:`~memory.records.FailureCause` value.
        """
        self._require_started("record_verdict")
        attempt = self.attempt_counts.get(subgoal.signature, 0)
        records: list[Record] = [verdict_record(subgoal, verdict, step, attempt)]
        failure = None
        if not verdict.success:
            if cause is None:
                c, detail = classify_failure(subgoal.signature, verdict.reason, self.grasp_skill)
            else:
                c, detail = FailureCause(cause), "given by the caller"
            failure = FailureRecord(int(step), signature=subgoal.signature, attempt=attempt, cause=c, detail=detail)
            records.append(failure)
        self._add(*records)
        return failure

    def record_fact(self, obj: str, fact: str, step: int, source: str = "agent",
                    pixel: tuple[float, float] | None = None, camera: str | None = None,
                    pose: tuple[float, ...] | None = None) -> None:
        """Record a fact about object ``obj``, e.g. ``record_fact("red", "knocked off green", 312)``.

        Args:
            source: who observed it (``"verifier"``, ``"planner"``, ``"perception"``...).
            pixel: ``(x, y)`` px in ``camera`` where it was last seen (origin top-left, x right, y down).
            pose: ``(7,)`` position m (world frame) + quaternion wxyz.
        """
        self._require_started("record_fact")
        self._add(ObjectFactRecord(int(step), object=str(obj), fact=str(fact), source=str(source),
                                   pixel=None if pixel is None else (float(pixel[0]), float(pixel[1])), camera=camera,
                                   pose=None if pose is None else tuple(float(v) for v in pose)))

    def record_event(self, kind: str, step: int, **data: Any) -> None:
        """Append a free-form event (``fallback``, ``perturbation``, ``error``, ``vlm_exchange``...).

        ``data`` is made JSON-safe (numpy -> lists/scalars, objects with ``to_json`` -> dicts, else ``str``).

        Raises:
            ConfigError: if ``kind`` is one of :data:`~memory.records.STRUCTURED_KINDS` (use its method).
        """
        self._require_started("record_event")
        if kind in STRUCTURED_KINDS:
            raise ConfigError(f"event kind {kind!r} is reserved; use the matching record_* method "
                              f"(reserved: {sorted(STRUCTURED_KINDS)})")
        self._add(EventRecord(int(step), event=str(kind), data=to_jsonable(data)))

    def _add(self, *records: Record) -> None:
        """Apply ``records`` to the state, then commit them to the store in one transaction."""
        for r in records:
            self._apply(r)
        if self.writer is not None:
            self.writer.append(*records)

    # ---------------------------------------------------------------- apply
    def _apply(self, r: Record) -> None:
        """Update the derived state from one record and append it to the log (also used by ``load``)."""
        if isinstance(r, EpisodeStart):
            self.task = task_from_json(r.task)
            self.meta = dict(r.meta)
        elif isinstance(r, PlanRecord):
            plan = r.plan
            hist = {"step": r.step, "source": r.source, "done": [signature_of(s) for s in plan["done"]],
                    "remaining": [signature_of(s) for s in plan["remaining"]], "rationale": plan.get("rationale", "")}
            self.plan_done = [dict(s) for s in plan["done"]]
            self.plan_remaining = [dict(s) for s in plan["remaining"]]
            self.plan_source = r.source
            self.plan_history.append(hist)
        elif isinstance(r, AttemptRecord):
            self.attempt_counts[r.signature] = int(r.attempt)
            self.last_outcome[r.signature] = "running"
            self.current = dict(r.subgoal) | {"_attempt": int(r.attempt), "_params": dict(r.params)}
            self.attempt_records.append(r)
        elif isinstance(r, VerdictRecord):
            sig = r.signature
            self._last_verdict = r
            if r.success:
                self.last_outcome[sig] = "success"
                self._move_to_done(sig)
            else:
                self.last_outcome[sig] = "failure"
                self.failures.append({"subgoal": sig, "text": r.subgoal["text"], "attempt": int(r.attempt),
                                      "step": r.step, "reason": r.reason, "cause": FailureCause.UNKNOWN.value})
            for i in range(len(self.attempt_records) - 1, -1, -1):
                a = self.attempt_records[i]
                if a.signature == sig and a.attempt == r.attempt and a.end_step is None:
                    self.attempt_records[i] = replace(a, end_step=r.step)
                    break
            if self.current is not None and signature_of(self.current) == sig:
                self.current = None
        elif isinstance(r, FailureRecord):
            for f in reversed(self.failures):
                if f["subgoal"] == r.signature and f["attempt"] == r.attempt:
                    f["cause"] = r.cause.value
                    break
        elif isinstance(r, EventRecord) and r.event == "final_verdict":
            self._apply_final_verdict(r.data)
        elif isinstance(r, ObjectFactRecord):
            fact = {"fact": r.fact, "step": r.step, "source": r.source}
            fact.update({k: v for k, v in (("pixel", r.pixel), ("camera", r.camera), ("pose", r.pose)) if v is not None})
            self.facts.setdefault(r.object, []).append(fact)
        self._records.append(r)

    def _apply_final_verdict(self, data: dict[str, Any]) -> None:
        """A ``final_verdict`` event: the attempt it names, cut short by the episode's end, is ``"cut_short"`` (never a
        failure); where the verdict on the final state is a confident success, the subgoal moves from the plan's
        remaining to done, as a success verdict moves it."""
        sig = data.get("subgoal")
        if not data.get("cut_short") or not isinstance(sig, str):
            return
        self.last_outcome[sig] = "cut_short"
        verdict = data.get("verdict") or {}
        if verdict.get("success") and not verdict.get("uncertain"):
            self._move_to_done(sig)
        if self.current is not None and signature_of(self.current) == sig:
            self.current = None

    def _move_to_done(self, sig: str) -> None:
        """Move the subgoal ``sig`` from the plan's remaining to done (nothing where it is not remaining)."""
        for i, s in enumerate(self.plan_remaining):
            if signature_of(s) == sig:
                self.plan_done.append(self.plan_remaining.pop(i))
                break

    # ---------------------------------------------------------------- query
    def records(self) -> list[Record]:
        """The episode's typed records, oldest first (attempts with their ``end_step`` once judged)."""
        ends = {(a.signature, a.attempt): a.end_step for a in self.attempt_records}
        return [replace(r, end_step=ends.get((r.signature, r.attempt))) if isinstance(r, AttemptRecord) else r
                for r in self._records]

    def events(self) -> list[dict[str, Any]]:
        """The append-only event log, oldest first: one ``{"kind", "step", ...}`` dict per record."""
        return [r.to_json() for r in self._records]

    def attempts(self, subgoal: Subgoal | str) -> int:
        """Number of attempts so far at a subgoal with the same signature (``Subgoal`` or ``"skill(a,b)"``)."""
        sig = subgoal if isinstance(subgoal, str) else subgoal.signature
        return self.attempt_counts.get(sig, 0)

    def retry_policy(self, subgoal: Subgoal) -> RetryPolicy:
        """How to run the next attempt at ``subgoal``: slowed down after repeated slips in this episode, or from
        the first attempt where the task's lessons say so (:func:`memory.lessons.retry_policy`)."""
        episode_failures = [(f["subgoal"], FailureCause(f["cause"])) for f in self.failures]
        return retry_policy(subgoal.signature, episode_failures, self.lessons, self.rules)

    def snapshot(self) -> TaskMemoryV1:
        """An independent copy of the episode's state (no store, no writer) that a planner may read in another
        thread while this memory keeps recording; writes to the copy do not reach this memory."""
        snap = TaskMemoryV1(self.max_failures_in_view, self.max_facts_per_object, self.grasp_skill, rules=self.rules)
        snap.task, snap.meta, snap.lessons = self.task, copy.deepcopy(self.meta), self.lessons
        snap._records = list(self._records)  # records are frozen: a shallow copy is independent
        for name in ("plan_done", "plan_remaining", "plan_history", "attempt_counts", "last_outcome", "failures",
                     "facts", "current"):
            setattr(snap, name, copy.deepcopy(getattr(self, name)))
        snap.plan_source, snap._last_verdict = self.plan_source, self._last_verdict
        snap.attempt_records = list(self.attempt_records)
        return snap

    def memory_view(self) -> MemoryView:
        """The bounded :class:`~tandem.core.memory_view.MemoryView` of the episode so far."""
        limits = ViewLimits(self.max_failures_in_view, self.max_facts_per_object)
        done = [clip_text(s["text"]) for s in self.plan_done]
        remaining = [clip_text(s["text"]) for s in self.plan_remaining]
        failures = tuple({"subgoal": f["subgoal"], "attempt": f["attempt"], "step": f["step"],
                          "cause": f["cause"], "reason": clip_text(f["reason"])} for f in self.failures[-limits.failures:])
        plan_sigs = [signature_of(s) for s in self.plan_done[-MAX_PLAN_ITEMS:] + self.plan_remaining[:MAX_PLAN_ITEMS]]
        cur = self.current
        cur_sig = None if cur is None else signature_of(cur)
        relevant = list(dict.fromkeys(
            ([] if cur is None else list(cur["args"])) + [a for s in self.plan_remaining[:MAX_PLAN_ITEMS] for a in s["args"]]
            + [a for f in failures[-1:] for a in f["subgoal"].partition("(")[2].rstrip(")").split(",") if a]))
        if not relevant:
            relevant = list(self.facts)[-MAX_PLAN_ITEMS:]
        keep_sigs = set(plan_sigs) | {f["subgoal"] for f in failures[-1:]} | ({cur_sig} if cur_sig else set())
        hints = tuple(clip_text(h) for h in (self.lessons.hints(self.rules, MAX_HINTS) if self.lessons else []))
        return MemoryView(
            instruction=None if self.task is None else clip_text(self.task.instruction),
            task=None if self.task is None else self.task.name,
            plan_source=self.plan_source,
            done=tuple(done[-MAX_PLAN_ITEMS:]), remaining=tuple(remaining[:MAX_PLAN_ITEMS]),
            n_done=len(done), n_remaining=len(remaining),
            current=None if cur is None else clip_text(cur["text"]), current_signature=cur_sig,
            current_attempt=0 if cur is None else int(cur["_attempt"]),
            current_policy={} if cur is None else dict(cur["_params"]),
            last_failure=failures[-1] if failures else None, failures=failures,
            facts={obj: tuple(clip_text(f"{f['fact']} at step {f['step']}") for f in self.facts[obj][-limits.facts_per_object:])
                   for obj in relevant[:MAX_PLAN_ITEMS * 2] if obj in self.facts},
            attempts={s: n for s, n in self.attempt_counts.items() if s in keep_sigs},
            last_outcome={s: o for s, o in self.last_outcome.items() if s in keep_sigs},
            hints=hints, total_attempts=sum(self.attempt_counts.values()), total_failures=len(self.failures),
        )

    def view(self) -> dict[str, Any]:
        """The JSON form of :meth:`memory_view` (``MemoryView.to_dict()``; ``MemoryView.from_dict`` reads it back):
        ``{"instruction", "task", "plan_source", "done", "remaining", "n_done", "n_remaining", "current",
        "current_signature", "current_attempt", "current_policy", "last_failure", "failures", "facts", "attempts",
        "last_outcome", "hints", "total_attempts", "total_failures"}``; bounded whatever the episode length."""
        return self.memory_view().to_dict()

    # ---------------------------------------------------------- persistence (JSONL)
    def _header(self) -> dict[str, Any]:
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "max_failures_in_view": self.max_failures_in_view,
                "max_facts_per_object": self.max_facts_per_object}

    def save(self, path: str | Path) -> Path:
        """Write the header line, then one record per line (JSONL). Creates parent folders. Returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as f:
            f.write(json.dumps(self._header()) + "\n")
            for ev in self.events():
                f.write(json.dumps(ev) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path, strict: bool = True) -> TaskMemoryV1:
        """Rebuild a memory from :meth:`save` output by replaying its records.

        Args:
            path: the JSONL file.
            strict: if True (default), the first malformed line raises; if False, malformed lines are skipped,
                recorded in ``skipped_lines`` as ``(line_number, reason)`` and warned about. A bad or missing
                header always raises.

        Raises:
            MemoryFileError: naming the file and line: missing file, bad header, a line that is not JSON, not an
                object, lacks ``kind``/``step`` or a required field, or an event before ``episode_start``.
        """
        path = Path(path)
        if not path.is_file():
            raise MemoryFileError(path, 0, "no such file")
        numbered = [(i, ln) for i, ln in enumerate(path.read_text().splitlines(), 1) if ln.strip()]
        if not numbered:
            raise MemoryFileError(path, 0, "empty file (expected a header line)")
        hline, htext = numbered[0]
        try:
            header = json.loads(htext)
        except json.JSONDecodeError as e:
            raise MemoryFileError(path, hline, f"header is not JSON ({e})") from e
        if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
            raise MemoryFileError(path, hline, f"not a task-memory header (expected format {FORMAT_NAME!r})")
        if header.get("version") != FORMAT_VERSION:
            raise MemoryFileError(path, hline, f"unsupported version {header.get('version')!r} "
                                               f"(this reader knows {FORMAT_VERSION})")
        try:
            mem = cls(max_failures_in_view=int(header.get("max_failures_in_view", 5)),
                      max_facts_per_object=int(header.get("max_facts_per_object", 3)))
        except (ConfigError, TypeError, ValueError) as e:
            raise MemoryFileError(path, hline, f"bad header limits ({e})") from e
        n_valid = 0
        for i, text in numbered[1:]:
            try:
                rec = _parse_line(text, started=mem.task is not None)
                snapshot = mem._snapshot()
                try:
                    mem._apply(rec)
                except (KeyError, TypeError, ValueError, AttributeError) as e:
                    mem._restore(snapshot)
                    raise _BadLine(f"malformed {rec.kind!r} event ({type(e).__name__}: {e})") from e
            except _BadLine as e:
                reason = f"{e} (after {n_valid} valid event lines)"
                if strict:
                    raise MemoryFileError(path, i, reason) from e
                mem.skipped_lines.append((i, str(e)))
                warnings.warn(f"{path}:{i}: skipped: {e}", UserWarning, stacklevel=2)
                continue
            n_valid += 1
        return mem

    def _snapshot(self) -> dict[str, Any]:
        return json.loads(json.dumps({
            "done": self.plan_done, "rem": self.plan_remaining, "src": self.plan_source, "hist": self.plan_history,
            "att": self.attempt_counts, "out": self.last_outcome, "fail": self.failures, "facts": self.facts,
            "cur": self.current, "meta": self.meta, "n": len(self._records),
        })) | {"task": self.task, "attempts": list(self.attempt_records), "last": self._last_verdict}

    def _restore(self, s: dict[str, Any]) -> None:
        self.plan_done, self.plan_remaining, self.plan_source = s["done"], s["rem"], s["src"]
        self.plan_history, self.attempt_counts, self.last_outcome = s["hist"], s["att"], s["out"]
        self.failures, self.facts, self.current, self.meta, self.task = s["fail"], s["facts"], s["cur"], s["meta"], s["task"]
        self.attempt_records, self._last_verdict = s["attempts"], s["last"]
        del self._records[s["n"]:]


class _BadLine(Exception):
    """Internal: one line of a memory file is malformed (turned into MemoryFileError by ``load``)."""


_REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "episode_start": ("task",),
    "plan": ("source", "plan"),
    "attempt": ("subgoal", "signature", "attempt"),
    "verdict": ("subgoal", "signature", "attempt", "verdict"),
    "fact": ("object", "fact"),
    "failure": ("signature", "cause"),
}


def _parse_line(text: str, started: bool) -> Record:
    """Parse and shape-check one JSONL line into a record. Raises ``_BadLine`` with the reason."""
    try:
        ev = json.loads(text)
    except json.JSONDecodeError as e:
        raise _BadLine(f"not JSON ({e})") from e
    if not isinstance(ev, dict):
        raise _BadLine(f"event must be a JSON object, got {type(ev).__name__}")
    if not isinstance(ev.get("kind"), str):
        raise _BadLine("event has no string 'kind'")
    if not isinstance(ev.get("step"), int) or isinstance(ev.get("step"), bool):
        raise _BadLine(f"event {ev['kind']!r} has no integer 'step'")
    missing = [k for k in _REQUIRED_FIELDS.get(ev["kind"], ()) if k not in ev]
    if missing:
        raise _BadLine(f"{ev['kind']!r} event lacks {missing}")
    if ev["kind"] == "episode_start" and started:
        raise _BadLine("second 'episode_start' event (one memory file holds one episode)")
    if ev["kind"] != "episode_start" and not started:
        raise _BadLine(f"{ev['kind']!r} event before 'episode_start'")
    try:
        return record_from_json(ev)
    except (RecordError, TypeError, ValueError, KeyError, IndexError) as e:
        raise _BadLine(str(e)) from e


__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "MemoryFileError", "TaskMemoryV1"]
