"""MemoryView: the compact, bounded state of an episode for a planner prompt and for learned features.

Whatever the episode length, a view holds at most :data:`MAX_PLAN_ITEMS` done and remaining subgoals,
:attr:`ViewLimits.failures` recent failures, :attr:`ViewLimits.facts_per_object` facts for each *relevant* object
(the current subgoal's and the remaining subgoals' arguments), :data:`MAX_HINTS` lesson hints, and every string
cut to :data:`MAX_TEXT` characters; the attempt counters cover only the signatures in the plan and the last
failure. So ``len(json.dumps(view.to_dict()))`` has a bound that does not grow with the number of events.

:meth:`MemoryView.to_text` renders it as prompt text within a token budget, dropping the least important lines
first (older failures, facts, the done list, attempt counters), and :meth:`MemoryView.features` as a fixed-size
``float32`` vector for a learned planner (:data:`FEATURE_NAMES`).

The token count defaults to :func:`approx_tokens` (words and punctuation marks: close to, and for English
prose usually above, the BPE token count of Llama / Qwen tokenizers); pass ``count_tokens`` to use the model's
own tokenizer, e.g. ``lambda s: len(tokenizer(s).input_ids)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory.records import FailureCause

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
    """Bounded summary of one episode's memory (built by ``TaskMemoryV1.memory_view``).

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
        """JSON-safe dict: the keys of the version-1 view (``instruction``, ``task``, ``plan_source``, ``done``,
        ``remaining``, ``current``, ``failures`` without ``cause``... plus ``cause``, ``facts``, ``attempts``,
        ``last_outcome``) and ``current_attempt``, ``last_failure``, ``hints``."""
        return {
            "instruction": self.instruction, "task": self.task, "plan_source": self.plan_source,
            "done": list(self.done), "remaining": list(self.remaining), "current": self.current,
            "current_attempt": self.current_attempt, "last_failure": self.last_failure,
            "failures": [dict(f) for f in self.failures],
            "facts": {k: list(v) for k, v in self.facts.items()},
            "attempts": dict(self.attempts), "last_outcome": dict(self.last_outcome), "hints": list(self.hints),
        }

    # ------------------------------------------------------------------ text
    def _lines(self) -> list[tuple[int, int, str]]:
        """Candidate prompt lines as ``(priority, position, text)``; lower priority numbers are kept first."""
        out: list[tuple[int, int, str]] = []
        pos = 0

        def add(priority: int, text: str) -> None:
            nonlocal pos
            out.append((priority, pos, text))
            pos += 1

        if self.instruction:
            add(0, f"Instruction: {self.instruction}")
        if self.current:
            slow = self.current_policy.get("speed_scale", 1.0)
            note = f", at {slow:g}x speed" if slow < 1.0 else ""
            add(0, f"Current: {self.current} (attempt {self.current_attempt}{note})")
        if self.last_failure:
            f = self.last_failure
            add(1, f"Last failure: {f['subgoal']} attempt {f['attempt']} (step {f['step']}), cause {f['cause']}: "
                   f"{f['reason']}")
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
        older = [f for f in self.failures if f is not self.failures[-1]] if self.failures else []
        if older:
            add(5, "Earlier failures:")
            for k, f in enumerate(reversed(older)):
                add(5 + k, f"- {f['subgoal']} attempt {f['attempt']} (step {f['step']}), {f['cause']}: {f['reason']}")
        if self.attempts:
            add(8, "Attempts: " + ", ".join(f"{s}={n}" for s, n in self.attempts.items()))
        return out

    def to_text(self, max_tokens: int | None = None, count_tokens: Callable[[str], int] = approx_tokens) -> str:
        """Prompt text of the view within ``max_tokens`` (None: everything).

        Lines are kept by priority (instruction and current subgoal, then the last failure and the remaining plan,
        lesson hints, the done list, object facts, older failures, attempt counters) while they fit; a section
        header whose items were all dropped is dropped too; a line longer than the whole budget is cut.

        Raises:
            ValueError: ``max_tokens`` < 1.
        """
        lines = self._lines()
        if max_tokens is None:
            return "\n".join(t for _, _, t in lines)
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        kept: list[tuple[int, int, str]] = []
        used = 0
        for pri, pos, text in sorted(lines, key=lambda x: (x[0], x[1])):
            n = count_tokens(text) + 1  # + the newline
            if used + n > max_tokens:
                if not kept:  # even the first line is too long: cut it to the budget
                    words = text.split(" ")
                    while words and count_tokens(" ".join(words)) + 1 > max_tokens:
                        words.pop()
                    if words:
                        kept.append((pri, pos, " ".join(words)))
                break
            kept.append((pri, pos, text))
            used += n
        kept.sort(key=lambda x: x[1])
        # drop headers ("...:") left without their items
        texts = [t for _, _, t in kept]
        out = [t for i, t in enumerate(texts)
               if not (t in _HEADERS and (i + 1 >= len(texts) or not texts[i + 1].startswith("- ")))]
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
               float(self.current_policy.get("speed_scale", 1.0) < 1.0)]
        return np.asarray(vec, dtype=np.float32)


__all__ = ["CAUSES", "FEATURE_NAMES", "MAX_HINTS", "MAX_PLAN_ITEMS", "MAX_TEXT", "MemoryView", "ViewLimits",
           "approx_tokens", "clip_text"]
