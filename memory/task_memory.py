"""Structured task memory for one episode, persisted as JSONL.

``TaskMemoryV1`` implements :class:`tandem.core.protocols.TaskMemory`. It is event-sourced: every
``record_*`` call builds one JSON-safe event ``{"kind", "step", ...}``, appends it to the
append-only event log and applies it to the derived state (plan progress, attempts, failures,
object facts). :meth:`TaskMemoryV1.load` replays the same events through the same code, so a
loaded memory equals the saved one by construction (same ``view()``, same ``events()``).

The design follows the structured memories of Goal2Skill / RoboMemory (done / remaining split,
attempt counters, failure reasons, object facts) and LoHo-Manip's done/remaining plan form.

Event kinds with a fixed schema (written only by their ``record_*`` method):

* ``episode_start``: ``{"task": TaskSpec fields, "meta": {...}}`` (always the first event);
* ``plan``: ``{"source", "plan": Plan.to_json()}``;
* ``attempt``: ``{"subgoal": Subgoal.to_json(), "signature", "attempt"}``;
* ``verdict``: ``{"subgoal", "signature", "attempt", "verdict": Verdict.to_json()}``;
* ``fact``: ``{"object", "fact"}``.

Any other kind (``replan``, ``fallback``, ``perturbation``, ``error``, ...) is free-form and goes
through :meth:`TaskMemoryV1.record_event`.

File format (``save``): line 1 is a header ``{"format": "tandem.task_memory", "version": 1,
"max_failures_in_view": N, "max_facts_per_object": M}``; every further line is one event, in order.

Loading policy for malformed files: **strict by default** -- the first bad line raises
:class:`MemoryFileError` naming the file, the 1-based line number, what was wrong and how many valid
event lines preceded it; nothing is dropped silently. ``load(path, strict=False)`` instead skips bad
lines, keeps every valid one, and lists each skipped line in ``memory.skipped_lines`` (and emits a
``UserWarning``), e.g. to salvage a log whose last line was cut off by a crash.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

from tandem.core.errors import ConfigError, TandemError
from tandem.core.types import Plan, Subgoal, TaskSpec, Verdict, to_jsonable

FORMAT_NAME = "tandem.task_memory"
FORMAT_VERSION = 1

#: Event kinds with a fixed schema; :meth:`TaskMemoryV1.record_event` refuses them.
STRUCTURED_KINDS: frozenset[str] = frozenset({"episode_start", "plan", "attempt", "verdict", "fact"})


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


def _task_to_json(task: TaskSpec) -> dict[str, Any]:
    return to_jsonable(dataclasses.asdict(task))


def _task_from_json(d: dict[str, Any]) -> TaskSpec:
    """Rebuild a TaskSpec from :func:`_task_to_json` output (lists back to tuples; unknown keys ignored)."""
    names = {f.name for f in dataclasses.fields(TaskSpec)}
    kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in names}
    return TaskSpec(**kwargs)


class TaskMemoryV1:
    """Structured, event-sourced memory of one episode (implements ``tandem.core.protocols.TaskMemory``).

    Derived state (all JSON-safe):

    * ``plan_done`` / ``plan_remaining``: ``Subgoal.to_json()`` dicts of the latest plan, kept up to
      date by success verdicts (a successful subgoal moves from remaining to done, so the view stays
      right when the agent advances without replanning); ``plan_source`` names the planner.
    * ``plan_history``: one row per recorded plan ``{"step", "source", "done": [signatures],
      "remaining": [signatures], "rationale"}``.
    * ``attempt_counts``: ``Subgoal.signature`` (e.g. ``"stack(red,green)"``) -> number of attempts.
    * ``last_outcome``: signature -> ``"running"`` (attempt started, no verdict yet), ``"success"`` or
      ``"failure"``.
    * ``failures``: every failed verdict ``{"subgoal": signature, "text", "attempt", "step", "reason"}``.
    * ``facts``: object name -> list of ``{"fact", "step"}`` in recording order.
    * ``events()``: the append-only event log, one ``{"kind", "step", ...}`` per call.

    Args:
        max_failures_in_view: how many of the most recent failures ``view()`` shows.
        max_facts_per_object: how many of the most recent facts per object ``view()`` shows.

    Raises:
        ConfigError: for non-positive limits; from ``record_*`` when called before ``start_episode``
            or with a reserved event kind.
    """

    def __init__(self, max_failures_in_view: int = 5, max_facts_per_object: int = 3):
        if max_failures_in_view < 1 or max_facts_per_object < 1:
            raise ConfigError(
                f"TaskMemoryV1 limits must be >= 1, got max_failures_in_view={max_failures_in_view}, "
                f"max_facts_per_object={max_facts_per_object}"
            )
        self.max_failures_in_view = int(max_failures_in_view)
        self.max_facts_per_object = int(max_facts_per_object)
        self.skipped_lines: list[tuple[int, str]] = []
        self._clear()

    # ------------------------------------------------------------------ state
    def _clear(self) -> None:
        self.task: TaskSpec | None = None
        self.meta: dict[str, Any] = {}
        self._events: list[dict[str, Any]] = []
        self.plan_done: list[dict[str, Any]] = []
        self.plan_remaining: list[dict[str, Any]] = []
        self.plan_source: str | None = None
        self.plan_history: list[dict[str, Any]] = []
        self.attempt_counts: dict[str, int] = {}
        self.last_outcome: dict[str, str] = {}
        self.failures: list[dict[str, Any]] = []
        self.facts: dict[str, list[dict[str, Any]]] = {}
        self.current: dict[str, Any] | None = None

    def _require_started(self, what: str) -> None:
        if self.task is None:
            raise ConfigError(f"TaskMemoryV1.{what} called before start_episode(task)")

    # ------------------------------------------------------------ recording
    def start_episode(self, task: TaskSpec, meta: dict[str, Any] | None = None) -> None:
        """Forget everything and start the memory of a new episode of ``task``.

        Raises:
            ConfigError: if ``task`` is not a TaskSpec.
        """
        if not isinstance(task, TaskSpec):
            raise ConfigError(f"start_episode needs a TaskSpec, got {type(task).__name__}")
        self._clear()
        self._apply({"kind": "episode_start", "step": 0, "task": _task_to_json(task), "meta": to_jsonable(meta or {})})

    def record_plan(self, plan: Plan, step: int, source: str) -> None:
        """Record a new plan from planner ``source`` (e.g. ``"oracle"``, ``"vlm"``) at control step ``step``."""
        self._require_started("record_plan")
        self._apply({"kind": "plan", "step": int(step), "source": str(source), "plan": to_jsonable(plan.to_json())})

    def record_attempt(self, subgoal: Subgoal, step: int) -> int:
        """Mark the start of an attempt at ``subgoal``; returns the attempt number (1-based) for its signature."""
        self._require_started("record_attempt")
        attempt = self.attempt_counts.get(subgoal.signature, 0) + 1
        self._apply({"kind": "attempt", "step": int(step), "subgoal": to_jsonable(subgoal.to_json()),
                     "signature": subgoal.signature, "attempt": attempt})
        return attempt

    def record_verdict(self, subgoal: Subgoal, verdict: Verdict, step: int) -> None:
        """Record the verifier's verdict on the latest attempt at ``subgoal``.

        A failure is added to ``failures`` with the verdict's reason, the step and the attempt number;
        a success moves the subgoal (matched by signature) from the plan's remaining to done.
        """
        self._require_started("record_verdict")
        self._apply({"kind": "verdict", "step": int(step), "subgoal": to_jsonable(subgoal.to_json()),
                     "signature": subgoal.signature, "attempt": self.attempt_counts.get(subgoal.signature, 0),
                     "verdict": to_jsonable(verdict.to_json())})

    def record_fact(self, obj: str, fact: str, step: int) -> None:
        """Record a fact about object ``obj``, e.g. ``record_fact("red", "knocked off green", 312)``."""
        self._require_started("record_fact")
        self._apply({"kind": "fact", "step": int(step), "object": str(obj), "fact": str(fact)})

    def record_event(self, kind: str, step: int, **data: Any) -> None:
        """Append a free-form event (``replan``, ``fallback``, ``perturbation``, ``error``, ...).

        ``data`` is made JSON-safe (numpy -> lists/scalars, objects with ``to_json`` -> dicts, anything
        else -> ``str``).

        Raises:
            ConfigError: if ``kind`` is one of :data:`STRUCTURED_KINDS` (use its ``record_*`` method).
        """
        self._require_started("record_event")
        if kind in STRUCTURED_KINDS:
            raise ConfigError(f"event kind {kind!r} is reserved; use the matching record_* method "
                              f"(reserved: {sorted(STRUCTURED_KINDS)})")
        self._apply({"kind": str(kind), "step": int(step), **to_jsonable(data)})

    # ---------------------------------------------------------------- apply
    def _apply(self, ev: dict[str, Any]) -> None:
        """Update the derived state from one event and append it to the log (also used by ``load``)."""
        kind = ev["kind"]
        if kind == "episode_start":
            self.task = _task_from_json(ev["task"])
            self.meta = dict(ev.get("meta", {}))
        elif kind == "plan":
            plan = ev["plan"]
            self.plan_done = [dict(s) for s in plan["done"]]
            self.plan_remaining = [dict(s) for s in plan["remaining"]]
            self.plan_source = ev["source"]
            self.plan_history.append({
                "step": ev["step"], "source": ev["source"],
                "done": [_signature(s) for s in plan["done"]],
                "remaining": [_signature(s) for s in plan["remaining"]],
                "rationale": plan.get("rationale", ""),
            })
        elif kind == "attempt":
            self.attempt_counts[ev["signature"]] = int(ev["attempt"])
            self.last_outcome[ev["signature"]] = "running"
            self.current = dict(ev["subgoal"])
        elif kind == "verdict":
            sig, verdict = ev["signature"], ev["verdict"]
            if verdict["success"]:
                self.last_outcome[sig] = "success"
                for i, s in enumerate(self.plan_remaining):
                    if _signature(s) == sig:
                        self.plan_done.append(self.plan_remaining.pop(i))
                        break
            else:
                self.last_outcome[sig] = "failure"
                self.failures.append({"subgoal": sig, "text": ev["subgoal"]["text"], "attempt": int(ev["attempt"]),
                                      "step": ev["step"], "reason": verdict["reason"]})
            if self.current is not None and _signature(self.current) == sig:
                self.current = None
        elif kind == "fact":
            self.facts.setdefault(ev["object"], []).append({"fact": ev["fact"], "step": ev["step"]})
        self._events.append(ev)

    # ---------------------------------------------------------------- query
    def events(self) -> list[dict[str, Any]]:
        """The append-only event log, oldest first (a shallow copy; each event is ``{"kind", "step", ...}``)."""
        return list(self._events)

    def attempts(self, subgoal: Subgoal | str) -> int:
        """Number of attempts so far at a subgoal with the same signature (``Subgoal`` or ``"skill(a,b)"``)."""
        sig = subgoal if isinstance(subgoal, str) else subgoal.signature
        return self.attempt_counts.get(sig, 0)

    def view(self) -> dict[str, Any]:
        """Compact JSON-safe view for prompts.

        Returns:
            ``{"instruction": str | None, "task": str | None, "plan_source": str | None,
            "done": [texts], "remaining": [texts], "current": text | None,
            "failures": [{"subgoal": signature, "attempt", "step", "reason"}] (last N, oldest first),
            "facts": {object: ["<fact> at step <k>", ...]} (last M per object),
            "attempts": {signature: count}, "last_outcome": {signature: "running"|"success"|"failure"}}``.
        """
        return {
            "instruction": None if self.task is None else self.task.instruction,
            "task": None if self.task is None else self.task.name,
            "plan_source": self.plan_source,
            "done": [s["text"] for s in self.plan_done],
            "remaining": [s["text"] for s in self.plan_remaining],
            "current": None if self.current is None else self.current["text"],
            "failures": [{"subgoal": f["subgoal"], "attempt": f["attempt"], "step": f["step"], "reason": f["reason"]}
                         for f in self.failures[-self.max_failures_in_view:]],
            "facts": {obj: [f"{f['fact']} at step {f['step']}" for f in fs[-self.max_facts_per_object:]]
                      for obj, fs in self.facts.items()},
            "attempts": dict(self.attempt_counts),
            "last_outcome": dict(self.last_outcome),
        }

    # ---------------------------------------------------------- persistence
    def _header(self) -> dict[str, Any]:
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "max_failures_in_view": self.max_failures_in_view,
                "max_facts_per_object": self.max_facts_per_object}

    def save(self, path: str | Path) -> Path:
        """Write the header line, then one event per line (JSONL). Creates parent folders. Returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as f:
            f.write(json.dumps(self._header()) + "\n")
            for ev in self._events:
                f.write(json.dumps(ev) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path, strict: bool = True) -> TaskMemoryV1:
        """Rebuild a memory from :meth:`save` output by replaying its events.

        Args:
            path: the JSONL file.
            strict: if True (default), the first malformed line raises; if False, malformed event lines
                are skipped, recorded in ``skipped_lines`` as ``(line_number, reason)`` and warned about.
                A bad or missing header always raises.

        Raises:
            MemoryFileError: naming the file and line: missing file, bad header, a line that is not JSON,
                not an object, lacks ``kind``/``step``, has a malformed structured event, or an event
                before ``episode_start``.
        """
        path = Path(path)
        if not path.is_file():
            raise MemoryFileError(path, 0, "no such file")
        lines = path.read_text().splitlines()
        numbered = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip()]
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
                ev = _parse_event(text, started=mem.task is not None)
                snapshot = mem._snapshot()
                try:
                    mem._apply(ev)
                except (KeyError, TypeError, ValueError, AttributeError) as e:
                    mem._restore(snapshot)
                    raise _BadLine(f"malformed {ev['kind']!r} event ({type(e).__name__}: {e})") from e
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
            "cur": self.current, "meta": self.meta, "n": len(self._events),
        })) | {"task": self.task}

    def _restore(self, s: dict[str, Any]) -> None:
        self.plan_done, self.plan_remaining, self.plan_source = s["done"], s["rem"], s["src"]
        self.plan_history, self.attempt_counts, self.last_outcome = s["hist"], s["att"], s["out"]
        self.failures, self.facts, self.current, self.meta, self.task = s["fail"], s["facts"], s["cur"], s["meta"], s["task"]
        del self._events[s["n"]:]


class _BadLine(Exception):
    """Internal: one line of a memory file is malformed (turned into MemoryFileError by ``load``)."""


def _signature(subgoal_json: dict[str, Any]) -> str:
    return f"{subgoal_json['skill']}({','.join(subgoal_json['args'])})"


_REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "episode_start": ("task",),
    "plan": ("source", "plan"),
    "attempt": ("subgoal", "signature", "attempt"),
    "verdict": ("subgoal", "signature", "attempt", "verdict"),
    "fact": ("object", "fact"),
}


def _parse_event(text: str, started: bool) -> dict[str, Any]:
    """Parse and shape-check one event line. Raises ``_BadLine`` with the reason."""
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
    return ev
