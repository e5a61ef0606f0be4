"""MemoryView: the one view of an episode's task memory, for every prompt and every learned planner.

The memory (``memory.task_memory.TaskMemoryV1.memory_view``) builds it; ``TaskMemory.view()`` is its JSON form
(:meth:`MemoryView.to_dict`), which is what crosses threads and processes, and :meth:`MemoryView.from_dict` reads
that form back, so a planner, a verifier or a learned component of another package reads the same typed view
without importing ``memory``. The type lives in the core layer for that reason, as ``Plan`` and ``Verdict`` do.

Whatever the episode length, a view holds at most :data:`MAX_PLAN_ITEMS` done and remaining subgoals,
:attr:`ViewLimits.failures` recent failures, :attr:`ViewLimits.facts_per_object` facts for each *relevant* object
(the current subgoal's and the remaining subgoals' arguments), :data:`MAX_HINTS` lesson hints, and every string
cut to :data:`MAX_TEXT` characters; the attempt counters cover only the signatures in the plan and the last
failure. So ``len(json.dumps(view.to_dict()))`` has a bound that does not grow with the number of events.

Renderings (there is no other renderer of memory for a model):

* :meth:`MemoryView.to_text`: prompt text within a token budget. The unit it drops is a whole entry (one line:
  a failure, a fact, a hint, the done list...), least important first (older failures, facts, the done list and
  the verified outcomes); a line saying how many entries were left out ends a shortened text. Never a character cut
  of JSON. :meth:`MemoryView.from_text` reads the plan, the outcomes and the last failure back from that text.
* :meth:`MemoryView.features`: a fixed-size ``float32`` vector for a learned planner (:data:`FEATURE_NAMES`).

The token count defaults to :func:`approx_tokens` (words and punctuation marks: close to, and for English
prose usually above, the BPE token count of Llama / Qwen tokenizers); pass ``count_tokens`` to use the model's
own tokenizer, e.g. ``lambda s: len(tokenizer(s).input_ids)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np


class FailureCause(StrEnum):
    """Why a subgoal attempt failed (the memory classifies verdicts: ``memory.failures.classify_failure``).

    * ``grasp_slipped``: the object was not (or no longer) held: a missed grasp, or it left the gripper mid-carry;
    * ``object_moved``: the object was pushed or knocked away from where the attempt expected it;
    * ``wrong_object``: the attempt acted on another object;
    * ``timeout``: the attempt's step budget ran out before the executor reported it done;
    * ``unreachable``: the executor could not reach the object or place;
    * ``unknown``: none of the above could be told from the verdict.
    """

    GRASP_SLIPPED = "grasp_slipped"
    OBJECT_MOVED = "object_moved"
    WRONG_OBJECT = "wrong_object"
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    UNKNOWN = "unknown"


#: Most done / remaining subgoals shown (the rest are summarised as a count).
MAX_PLAN_ITEMS = 8
#: Most lesson hints shown.
MAX_HINTS = 4
#: Longest string kept in a view (characters); longer ones end with "...".
MAX_TEXT = 240
#: Causes in the order of the one-hot block of :meth:`MemoryView.features`.
CAUSES: tuple[str, ...] = tuple(c.value for c in FailureCause)
#: Names of the entries of :meth:`MemoryView.features`, in order.
FEATURE_NAMES: tuple[str, ...] = (
    "n_done", "n_remaining", "has_current", "current_attempt", "current_failures", "total_attempts",
    "total_failures", "has_last_failure", *(f"last_cause_{c}" for c in CAUSES), "n_hints", "slow_policy",
)

_TOKEN = re.compile(r"\w+|[^\w\s]")
#: Start of the line of :meth:`MemoryView.to_text` with the verifier's latest verdict and the attempt count of each
#: subgoal signature: ``Verified outcomes: pick(red): success (1 attempt); stack(red,green): failure (2 attempts)``.
OUTCOMES_PREFIX = "Verified outcomes: "
_OUTCOME = re.compile(r"([^;:\s][^;:]*\([^)]*\)): (\w+) \((\d+) attempts?\)")
_HEADERS = frozenset({"Lessons from earlier episodes:", "Object facts:", "Earlier failures:"})


def approx_tokens(text: str) -> int:
    """Approximate token count of ``text``: its words plus its punctuation marks."""
    return len(_TOKEN.findall(text))


def clip_text(text: Any, limit: int = MAX_TEXT) -> str:
    """``str(text)`` cut to ``limit`` characters (ending in ``...`` when cut)."""
    s = str(text)
    return s if len(s) <= limit else s[: max(limit - 3, 0)] + "..."


@dataclass(frozen=True)
class ViewLimits:
    """How much a view keeps (see the module docstring).

    Attributes:
        failures: most recent failures kept.
        facts_per_object: most recent facts kept per relevant object.
    """

    failures: int = 5
    facts_per_object: int = 3


@dataclass(frozen=True)
class MemoryView:
    """Bounded summary of one episode's memory (built by ``TaskMemoryV1.memory_view``; read back from
    ``TaskMemory.view()`` with :meth:`from_dict`).

    Attributes:
        instruction, task: the task's instruction and name (None before an episode).
        plan_source: planner of the latest plan.
        done, remaining: subgoal texts of the plan, at most :data:`MAX_PLAN_ITEMS` each (``n_done`` /
            ``n_remaining`` are the full counts).
        current: text of the running attempt's subgoal, or None; ``current_signature``, ``current_attempt``
            (1-based) and ``current_policy`` (``RetryPolicy.to_json()`` it runs with) go with it.
        last_failure: ``{"subgoal", "attempt", "step", "cause", "reason"}`` of the latest failed verdict, or None.
        failures: the latest failures, oldest first, each like ``last_failure``.
        facts: relevant object -> its latest facts as ``"<fact> at step <k>"``.
        attempts, last_outcome: signature -> attempt count / ``running`` | ``success`` | ``failure``, for the
            signatures of the plan and the last failure.
        hints: lessons from earlier episodes of the task, as short sentences.
        total_attempts, total_failures: counts over the whole episode (not only the shown signatures).
    """

    instruction: str | None = None
    task: str | None = None
    plan_source: str | None = None
    done: tuple[str, ...] = ()
    remaining: tuple[str, ...] = ()
    n_done: int = 0
    n_remaining: int = 0
    current: str | None = None
    current_signature: str | None = None
    current_attempt: int = 0
    current_policy: dict[str, Any] = field(default_factory=dict)
    last_failure: dict[str, Any] | None = None
    failures: tuple[dict[str, Any], ...] = ()
    facts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    last_outcome: dict[str, str] = field(default_factory=dict)
    hints: tuple[str, ...] = ()
    total_attempts: int = 0
    total_failures: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of every field (tuples become lists); :meth:`from_dict` reads it back unchanged."""
        return {
            "instruction": self.instruction, "task": self.task, "plan_source": self.plan_source,
            "done": list(self.done), "remaining": list(self.remaining),
            "n_done": self.n_done, "n_remaining": self.n_remaining,
            "current": self.current, "current_signature": self.current_signature,
            "current_attempt": self.current_attempt, "current_policy": dict(self.current_policy),
            "last_failure": None if self.last_failure is None else dict(self.last_failure),
            "failures": [dict(f) for f in self.failures],
            "facts": {k: list(v) for k, v in self.facts.items()},
            "attempts": dict(self.attempts), "last_outcome": dict(self.last_outcome), "hints": list(self.hints),
            "total_attempts": self.total_attempts, "total_failures": self.total_failures,
        }

    @classmethod
    def from_dict(cls, view: Mapping[str, Any] | None) -> MemoryView:
        """The view of a ``TaskMemory.view()`` dict (:meth:`to_dict`'s form).

        Missing keys are empty, so the views of other ``TaskMemory`` implementations (and None) read too: the
        counts default to the lengths of the lists, ``last_failure`` to the last of ``failures``, a fact given as
        one string to a one-fact tuple, and a failure without a field to ``"?"`` (``cause``: ``unknown``).

        Raises:
            TypeError: ``view`` is neither a mapping nor None.
        """
        if view is None:
            return cls()
        if not isinstance(view, Mapping):
            raise TypeError(f"MemoryView.from_dict needs the dict of TaskMemory.view(), got {type(view).__name__}")
        done = tuple(str(t) for t in view.get("done") or ())
        remaining = tuple(str(t) for t in view.get("remaining") or ())
        failures = tuple(_failure(f) for f in view.get("failures") or ())
        last = view.get("last_failure")
        facts = {str(obj): (str(fs),) if isinstance(fs, str) else tuple(str(f) for f in fs)
                 for obj, fs in (view.get("facts") or {}).items()}
        attempts = {str(s): int(n) for s, n in (view.get("attempts") or {}).items()}
        return cls(
            instruction=view.get("instruction"), task=view.get("task"), plan_source=view.get("plan_source"),
            done=done, remaining=remaining,
            n_done=int(view.get("n_done", len(done))), n_remaining=int(view.get("n_remaining", len(remaining))),
            current=view.get("current"), current_signature=view.get("current_signature"),
            current_attempt=int(view.get("current_attempt") or 0),
            current_policy=dict(view.get("current_policy") or {}),
            last_failure=_failure(last) if last is not None else (failures[-1] if failures else None),
            failures=failures, facts=facts, attempts=attempts,
            last_outcome={str(s): str(o) for s, o in (view.get("last_outcome") or {}).items()},
            hints=tuple(str(h) for h in view.get("hints") or ()),
            total_attempts=int(view.get("total_attempts", sum(attempts.values()))),
            total_failures=int(view.get("total_failures", len(failures))),
        )

    # ------------------------------------------------------------------ text
    def entries(self) -> list[tuple[int, int, str]]:
        """The prompt's entries as ``(priority, position, line)``; lower priority numbers are kept first.

        One entry is one line: the instruction, the current subgoal, the last failure, the remaining plan, each
        lesson hint, the done list, the verified outcomes (the verifier's latest verdict and the attempt count of
        each signature), each object fact, each older failure, and the headers of the listed sections.
        """
        out: list[tuple[int, int, str]] = []
        pos = 0

        def add(priority: int, text: str) -> None:
            nonlocal pos
            out.append((priority, pos, text))
            pos += 1

        if self.instruction:
            add(0, f"Instruction: {self.instruction}")
        if self.current:
            slow = float(self.current_policy.get("speed_scale", 1.0))
            note = f", at {slow:g}x speed" if slow < 1.0 else ""
            add(0, f"Current: {self.current} (attempt {self.current_attempt}{note})")
        if self.last_failure:
            add(1, f"Last failure: {_failure_line(self.last_failure)}")
        rem = "; ".join(f"{i}. {t}" for i, t in enumerate(self.remaining, 1)) or "(none)"
        more = self.n_remaining - len(self.remaining)
        add(1, f"Remaining: {rem}" + (f" (+{more} more)" if more > 0 else ""))
        if self.hints:
            add(2, "Lessons from earlier episodes:")
            for h in self.hints:
                add(2, f"- {h}")
        done = "; ".join(f"{i}. {t}" for i, t in enumerate(self.done, self.n_done - len(self.done) + 1))
        add(3, f"Done: {done or '(none)'}" + (f" ({self.n_done - len(self.done)} earlier not shown)"
                                               if self.n_done > len(self.done) else ""))
        if self.facts:
            add(4, "Object facts:")
            for obj, fs in self.facts.items():
                for k, fact in enumerate(reversed(fs)):  # newest first within the priority band
                    add(4 + k, f"- {obj}: {fact}")
        older = list(self.failures)
        if older and self.last_failure is not None and older[-1] == self.last_failure:
            older.pop()
        if older:
            add(5, "Earlier failures:")
            for k, f in enumerate(reversed(older)):
                add(5 + k, f"- {_failure_line(f)}")
        sigs = list(self.attempts) + [s for s in self.last_outcome if s not in self.attempts]
        if sigs:
            add(3, OUTCOMES_PREFIX + "; ".join(
                f"{s}: {self.last_outcome.get(s, 'none')} ({_plural(self.attempts.get(s, 0), 'attempt')})"
                for s in sigs))
        return out

    @classmethod
    def from_text(cls, text: str) -> MemoryView:
        """The part of a view that :meth:`to_text` rendered and a reader can take back: ``instruction``, ``current``,
        ``done``, ``remaining`` (and their counts), ``attempts`` and ``last_outcome`` by signature, and the last
        failure's ``subgoal`` and ``cause``; the rest stays empty. Lines it does not know are skipped, so a text cut
        to a token budget reads too.

        It is how a stand-in for a model (``tandem-oracle-sim-vlm``, the test fake server) reads the memory from
        the prompt, as a model would, without a side channel. Subgoal texts must not contain ``"; "``.
        """
        fields: dict[str, Any] = {}
        for line in text.splitlines():
            head, _, rest = line.partition(": ")
            if head == "Instruction":
                fields["instruction"] = rest
            elif head == "Current":
                fields["current"] = re.sub(r" \(attempt \d+[^)]*\)$", "", rest)
            elif head in ("Done", "Remaining"):
                body = re.sub(r" \((?:\+\d+ more|\d+ earlier not shown)\)$", "", rest)
                items = () if body == "(none)" else tuple(re.sub(r"^\d+\. ", "", t) for t in body.split("; "))
                fields[head.lower()] = items
                fields[f"n_{head.lower()}"] = len(items)
            elif head == "Last failure":
                m = re.match(r"(.*) attempt (\S+) \(step (\S+)\), cause (\w+): (.*)$", rest)
                if m:
                    attempt, step = (int(g) if g.isdigit() else g for g in (m.group(2), m.group(3)))
                    fields["last_failure"] = {"subgoal": m.group(1), "attempt": attempt, "step": step,
                                              "cause": m.group(4), "reason": m.group(5)}
            elif line.startswith(OUTCOMES_PREFIX):
                found = _OUTCOME.findall(line[len(OUTCOMES_PREFIX):])
                fields["attempts"] = {s: int(n) for s, _, n in found}
                fields["last_outcome"] = {s: o for s, o, _ in found if o != "none"}
        return cls(**fields)

    def to_text(self, max_tokens: int | None = None, count_tokens: Callable[[str], int] = approx_tokens) -> str:
        """Prompt text of the view within ``max_tokens`` (None: every entry).

        Whole entries (lines, see :meth:`entries`) are kept by priority (instruction and current subgoal, then
        the last failure and the remaining plan, lesson hints, the done list and verified outcomes, object facts,
        older failures) while they fit, and shown in their original order; a section header whose items were
        all dropped is dropped too. Where entries were left out, a last line says how many
        (``(3 lower-priority memory entries not shown)``), within the budget. Only a first entry longer than the
        whole budget is cut, at a word.

        Raises:
            ValueError: ``max_tokens`` < 1.
        """
        lines = self.entries()
        if max_tokens is None:
            return "\n".join(t for _, _, t in lines)
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        kept = _fit(lines, max_tokens, count_tokens)
        if len(kept) < len(lines):  # make room for the line that says so
            note_cost = count_tokens(_omitted(len(lines))) + 1
            if max_tokens > note_cost:
                kept = _fit(lines, max_tokens - note_cost, count_tokens)
        kept.sort(key=lambda x: x[1])
        # drop headers ("...:") left without their items
        texts = [t for _, _, t in kept]
        out = [t for i, t in enumerate(texts)
               if not (t in _HEADERS and (i + 1 >= len(texts) or not texts[i + 1].startswith("- ")))]
        n_left = sum(1 for _, _, t in lines if t not in _HEADERS) - sum(1 for t in out if t not in _HEADERS)
        if n_left > 0:
            note = _omitted(n_left)
            if count_tokens("\n".join([*out, note])) + len(out) + 1 <= max_tokens:
                out.append(note)
        return "\n".join(out)

    # ------------------------------------------------------------------ features
    def features(self) -> np.ndarray:
        """``float32 (F,)`` with F = ``len(FEATURE_NAMES)``: counts, the current attempt, a one-hot of the last
        failure's cause, the number of hints and whether the current attempt runs slowed down."""
        cause = (self.last_failure or {}).get("cause")
        cur_fail = sum(1 for f in self.failures if f["subgoal"] == self.current_signature)
        vec = [self.n_done, self.n_remaining, float(self.current is not None), self.current_attempt, cur_fail,
               self.total_attempts, self.total_failures, float(self.last_failure is not None),
               *(float(cause == c) for c in CAUSES), len(self.hints),
               float(float(self.current_policy.get("speed_scale", 1.0)) < 1.0)]
        return np.asarray(vec, dtype=np.float32)


def _failure(f: Any) -> dict[str, Any]:
    """One failure entry with every field of the view's failures (``"?"`` / ``unknown`` where a field is missing)."""
    if not isinstance(f, Mapping):
        return {"subgoal": "?", "attempt": "?", "step": "?", "cause": FailureCause.UNKNOWN.value, "reason": str(f)}
    return {"subgoal": f.get("subgoal", "?"), "attempt": f.get("attempt", "?"), "step": f.get("step", "?"),
            "cause": f.get("cause") or FailureCause.UNKNOWN.value, "reason": f.get("reason", "")}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _failure_line(f: Mapping[str, Any]) -> str:
    return (f"{f.get('subgoal', '?')} attempt {f.get('attempt', '?')} (step {f.get('step', '?')}), "
            f"cause {f.get('cause', FailureCause.UNKNOWN.value)}: {f.get('reason', '')}")


def _omitted(n: int) -> str:
    return f"({n} lower-priority memory entries not shown)"


def _fit(lines: list[tuple[int, int, str]], budget: int,
         count_tokens: Callable[[str], int]) -> list[tuple[int, int, str]]:
    """The entries kept within ``budget`` tokens, by priority then position (each costs its tokens + a newline)."""
    kept: list[tuple[int, int, str]] = []
    used = 0
    for pri, pos, text in sorted(lines, key=lambda x: (x[0], x[1])):
        n = count_tokens(text) + 1
        if used + n > budget:
            if not kept:  # even the first entry is too long: cut it at a word
                words = text.split(" ")
                while words and count_tokens(" ".join(words)) + 1 > budget:
                    words.pop()
                if words:
                    kept.append((pri, pos, " ".join(words)))
            break
        kept.append((pri, pos, text))
        used += n
    return kept


__all__ = ["CAUSES", "FEATURE_NAMES", "MAX_HINTS", "MAX_PLAN_ITEMS", "MAX_TEXT", "FailureCause", "MemoryView",
           "ViewLimits", "approx_tokens", "clip_text"]
