"""Lessons across episodes: per task and skill, failure statistics and the recovery that worked.

:func:`learn_lessons` reads the attempt, verdict and failure records of earlier episodes of one task and
counts, per skill: attempts, successes, failures by cause (:class:`memory.records.FailureCause`), attempts and
successes at full and at reduced speed, and, after a failure of each cause, how the next attempt at the same
subgoal fared when it was a plain retry or a slowed-down one. :class:`LessonBook` does this over the episodes
of a :class:`memory.store.MemoryStore` (finished and interrupted ones; the running episode is never included).

The lessons feed back in two ways (:func:`retry_policy`, used by ``TaskMemoryV1.retry_policy``):

* **retry policy** for the agent (:class:`tandem.core.types.RetryPolicy`). Within an episode, after
  ``RetryRules.slip_escalation`` slips of one subgoal (None, the default: never), its next attempt runs at
  ``RetryRules.slow_scale`` of the executor's speed ("after two slips, re-grasp slower"); this is what explores
  the slower speed in the first place. Across episodes, the recovery that worked decides: a skill whose objects
  slipped in at least ``min_slip_episodes`` earlier episodes, where a plain retry after a slip mostly failed
  (success rate below ``max_plain_retry_rate``) and a slowed-down retry after a slip succeeded more often (at
  least ``min_slow_attempts`` of them), runs slowed down from its first attempt;
* **hints** for the planner prompt (``MemoryView.hints``): short sentences with the counts above and the
  objects most often knocked or pushed away (a candidate to handle first).

The rules are deliberately simple counts with evidence thresholds, in the spirit of SERA's harness revised from
rollouts and RoboMemory's episodic memory; they never read simulator state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memory.records import AttemptRecord, FailureCause, FailureRecord, Record, VerdictRecord
from tandem.core.types import RetryPolicy

#: Record kinds that lessons read (everything else in an episode is skipped when loading).
LESSON_KINDS: tuple[str, ...] = ("attempt", "verdict", "failure")


@dataclass(frozen=True)
class RetryRules:
    """Thresholds of :func:`retry_policy` (see the module docstring).

    Attributes:
        slip_escalation: slips of one subgoal within an episode before its next attempt is slowed down; None
            (default) never slows down within an episode (then lessons have no slowed-down attempts to learn from).
        slow_scale: the speed factor of a slowed-down attempt, in (0, 1).
        min_slip_episodes: earlier episodes with slips of a skill before lessons slow it down from the start.
        min_slow_attempts: slowed-down retries after a slip in earlier episodes needed to compare the recoveries.
        max_plain_retry_rate: a plain retry after a slip must have succeeded less often than this.
    """

    slip_escalation: int | None = None
    slow_scale: float = 0.5
    min_slip_episodes: int = 2
    min_slow_attempts: int = 2
    max_plain_retry_rate: float = 0.5

    def __post_init__(self) -> None:
        if (self.slip_escalation is not None and self.slip_escalation < 1) or self.min_slip_episodes < 1 \
                or self.min_slow_attempts < 1:
            raise ValueError(f"RetryRules counts must be >= 1, got {self}")
        if not 0.0 < self.max_plain_retry_rate <= 1.0:
            raise ValueError(f"RetryRules.max_plain_retry_rate must be in (0, 1], got {self.max_plain_retry_rate}")
        if not 0.0 < self.slow_scale < 1.0:
            raise ValueError(f"RetryRules.slow_scale must be in (0, 1), got {self.slow_scale}")


@dataclass
class Rate:
    """``successes`` out of ``n``."""

    n: int = 0
    successes: int = 0

    def add(self, success: bool) -> None:
        """Count one attempt, a success or not."""
        self.n += 1
        self.successes += int(success)

    @property
    def rate(self) -> float | None:
        """Share of successes, or None before any attempt."""
        return self.successes / self.n if self.n else None

    def __str__(self) -> str:
        return f"{self.successes}/{self.n}"


@dataclass
class SkillStats:
    """What earlier episodes say about one skill of one task.

    Attributes:
        skill: e.g. ``"stack"``.
        episodes: earlier episodes that attempted it.
        attempts: all attempts with a verdict; ``full`` / ``slow`` split them by speed.
        failures: cause -> number of failed attempts.
        slip_episodes: episodes with at least one ``grasp_slipped`` failure of the skill.
        recoveries: cause -> ``{"retry": Rate, "slow_retry": Rate}``: the next attempt at the same subgoal after
            a failure of that cause, at full speed or slowed down.
        moved_objects: object -> failed attempts with cause ``object_moved`` (the subgoal's first argument).
    """

    skill: str
    episodes: int = 0
    attempts: Rate = field(default_factory=Rate)
    full: Rate = field(default_factory=Rate)
    slow: Rate = field(default_factory=Rate)
    failures: Counter = field(default_factory=Counter)
    slip_episodes: int = 0
    recoveries: dict[str, dict[str, Rate]] = field(default_factory=dict)
    moved_objects: Counter = field(default_factory=Counter)

    def slip_recoveries(self) -> tuple[Rate, Rate]:
        """``(plain retry, slowed-down retry)`` outcomes of the next attempt after a ``grasp_slipped`` failure."""
        rec = self.recoveries.get(FailureCause.GRASP_SLIPPED.value, {})
        return rec.get("retry", Rate()), rec.get("slow_retry", Rate())

    def prefers_slow(self, rules: RetryRules) -> bool:
        """Whether the evidence says: run this skill slowed down from the first attempt (module docstring)."""
        plain, slow = self.slip_recoveries()
        if self.slip_episodes < rules.min_slip_episodes or slow.n < rules.min_slow_attempts:
            return False
        plain_rate = plain.rate if plain.rate is not None else 0.0
        return plain_rate < rules.max_plain_retry_rate and (slow.rate or 0.0) > plain_rate

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict of the skill's counts: attempts, full-speed and slow retries, failures by cause."""
        return {"skill": self.skill, "episodes": self.episodes, "attempts": vars(self.attempts),
                "full_speed": vars(self.full), "slow": vars(self.slow), "failures": dict(self.failures),
                "slip_episodes": self.slip_episodes,
                "recoveries": {c: {k: vars(r) for k, r in v.items()} for c, v in self.recoveries.items()},
                "moved_objects": dict(self.moved_objects)}


@dataclass
class Lessons:
    """Lessons of one task: :class:`SkillStats` per skill over ``n_episodes`` earlier episodes."""

    task: str
    n_episodes: int = 0
    skills: dict[str, SkillStats] = field(default_factory=dict)

    def hints(self, rules: RetryRules | None = None, limit: int = 4) -> list[str]:
        """Up to ``limit`` short sentences for the planner prompt, skills with most failures first."""
        rules = rules or RetryRules()
        out: list[str] = []
        for st in sorted(self.skills.values(), key=lambda s: -sum(s.failures.values())):
            n_fail = sum(st.failures.values())
            if not n_fail:
                continue
            top = ", ".join(f"{c} x{n}" for c, n in st.failures.most_common(2))
            text = (f"{st.skill}: {n_fail} of {st.attempts.n} attempts failed in {self.n_episodes} earlier "
                    f"episodes ({top})")
            for cause, rec in st.recoveries.items():
                parts = [f"{'slowed-down' if k == 'slow_retry' else 'plain'} retry worked {r}" for k, r in rec.items()
                         if r.n]
                if parts:
                    text += f"; after {cause}: " + ", ".join(parts)
            if st.prefers_slow(rules):
                text += f"; it now runs at {rules.slow_scale:g}x speed from the first attempt"
            out.append(text)
        moved = Counter()
        for st in self.skills.values():
            moved.update(st.moved_objects)
        for obj, n in moved.most_common(1):
            if n >= 2:
                out.append(f"{obj} was knocked or pushed away in {n} failed attempts: consider handling it first")
        return out[:limit]

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: the task, its number of episodes and each skill's :meth:`SkillStats.to_json`."""
        return {"task": self.task, "n_episodes": self.n_episodes,
                "skills": {k: v.to_json() for k, v in sorted(self.skills.items())}}


def _speed(att: AttemptRecord | None) -> float:
    return float((att.params if att is not None else {}).get("speed_scale", 1.0))


def learn_lessons(task: str, episodes: Iterable[Sequence[Record]]) -> Lessons:
    """Lessons of ``task`` from the records of earlier episodes (each a sequence in commit order).

    Only attempt, verdict and failure records are read; other records are ignored.
    """
    lessons = Lessons(task=task)
    for records in episodes:
        lessons.n_episodes += 1
        attempts: dict[tuple[str, int], AttemptRecord] = {}
        causes: dict[tuple[str, int], FailureCause] = {}
        for r in records:
            if isinstance(r, AttemptRecord):
                attempts[(r.signature, r.attempt)] = r
            elif isinstance(r, FailureRecord):
                causes[(r.signature, r.attempt)] = r.cause
        seen_skills: set[str] = set()
        slipped: set[str] = set()
        previous_failure: dict[str, FailureCause] = {}  # signature -> cause of its latest failure
        for r in records:
            if not isinstance(r, VerdictRecord):
                continue
            skill = r.signature.partition("(")[0]
            st = lessons.skills.setdefault(skill, SkillStats(skill))
            seen_skills.add(skill)
            slow = _speed(attempts.get((r.signature, r.attempt))) < 1.0
            st.attempts.add(r.success)
            (st.slow if slow else st.full).add(r.success)
            prev = previous_failure.pop(r.signature, None)
            if prev is not None:
                st.recoveries.setdefault(prev.value, {}).setdefault("slow_retry" if slow else "retry", Rate()).add(
                    r.success)
            if not r.success:
                cause = causes.get((r.signature, r.attempt), FailureCause.UNKNOWN)
                st.failures[cause.value] += 1
                previous_failure[r.signature] = cause
                if cause is FailureCause.GRASP_SLIPPED:
                    slipped.add(skill)
                if cause is FailureCause.OBJECT_MOVED:
                    obj = r.signature.partition("(")[2].rstrip(")").split(",")[0]
                    if obj:
                        st.moved_objects[obj] += 1
        for skill in seen_skills:
            lessons.skills[skill].episodes += 1
            lessons.skills[skill].slip_episodes += int(skill in slipped)
    return lessons


def retry_policy(signature: str, episode_failures: Sequence[tuple[str, FailureCause]], lessons: Lessons | None,
                 rules: RetryRules) -> RetryPolicy:
    """The policy for the next attempt at ``signature``.

    Args:
        signature: ``skill(args)`` of the subgoal about to be attempted.
        episode_failures: ``(signature, cause)`` of every failed attempt so far in this episode.
        lessons: lessons of the task, or None (only the within-episode rule applies).
        rules: thresholds.
    """
    slips = sum(1 for s, c in episode_failures if s == signature and c is FailureCause.GRASP_SLIPPED)
    if rules.slip_escalation is not None and slips >= rules.slip_escalation:
        return RetryPolicy(rules.slow_scale, f"{slips} slips of {signature} in this episode")
    skill = signature.partition("(")[0]
    st = lessons.skills.get(skill) if lessons is not None else None
    if st is not None and st.prefers_slow(rules):
        plain, slow = st.slip_recoveries()
        return RetryPolicy(rules.slow_scale, f"lesson: {skill} slipped in {st.slip_episodes} of {st.episodes} earlier "
                                             f"episodes; after a slip, slowed-down retries succeeded {slow}, plain "
                                             f"retries {plain}")
    return RetryPolicy()


class LessonBook:
    """Lessons per task from the episodes of a memory store, recomputed when new episodes have ended.

    Args:
        store: a :class:`memory.store.MemoryStore` (lessons from its finished and interrupted episodes).
        window: use only the latest ``window`` episodes of the task (None: all).
    """

    def __init__(self, store: Any, window: int | None = 200):
        self.store = store
        self.window = window
        self._cache: dict[str, tuple[tuple[int, ...], Lessons]] = {}

    def for_task(self, task: str) -> Lessons:
        """Lessons of ``task`` from the store's ended episodes (the running ones are left out)."""
        ended = [e.id for e in self.store.episodes(task=task) if e.status != "running"]
        if self.window is not None:
            ended = ended[-self.window:]
        key = tuple(ended)
        hit = self._cache.get(task)
        if hit is not None and hit[0] == key:
            return hit[1]
        lessons = learn_lessons(task, (self.store.records(eid, kinds=LESSON_KINDS) for eid in ended))
        self._cache[task] = (key, lessons)
        return lessons


__all__ = ["LESSON_KINDS", "LessonBook", "Lessons", "Rate", "RetryRules", "SkillStats", "learn_lessons",
           "retry_policy"]
