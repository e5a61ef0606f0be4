"""A task's vocabulary as declared data: what an instruction may name and which goals are possible.

A :class:`TaskVocabulary` is everything a planner needs to understand an instruction for one task or one real
cell, and nothing of the episode's answer (``TaskSpec.goals`` stays the judge's):

* ``skills``: skill name -> the ground predicate template that holds once the skill succeeded
  (``{"pick": "grasped({0})", "stack": "on({0},{1})"}``), ``{0}``, ``{1}`` standing for the skill's args;
* ``goal_skills``: the skills whose predicate can be a goal of an instruction (``("stack",)``);
* ``skill_words``: skill -> verbs and phrases that ask for it (``{"stack": ("stack", "put", "place")}``);
* ``objects``: object name -> the words and synonyms that name it, longest first is not required
  (``{"can": ("can", "soda can", "coke")}``);
* ``places``: place name -> its words (``{"square_peg": ("square peg",)}``); empty where objects go on objects;
* ``own_place``: object -> the only place it may go (``{"square_nut": "square_peg", "milk": "milk_bin"}``);
* ``rules``: the names of the impossibility rules that hold (:data:`RULES`);
* ``ordered_by_support``: the goals' order follows support, bottom first (towers), whatever order the words
  gave; otherwise the words' order is the goals' order when they state one.

Goals are predicate strings, ``"on(red,blue)"``, ``"in_bin(milk)"``, ``"on_peg(square_nut,square_peg)"``.

The file form (:meth:`TaskVocabulary.save` / :meth:`TaskVocabulary.load`) is YAML or JSON with the same keys, so a
real cell is described by a file without the simulator (``configs/bridge/*.yaml`` name one).
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tandem.core.errors import ConfigError

#: Skill name -> the ground predicate template that holds once the skill succeeded, shared by every task (``{0}``,
#: ``{1}`` are the subgoal's args): the one definition, read by the tasks (``sim.tasks``; each task's vocabulary
#: declares the subset it uses) and by the oracle verifier where it was given no task. A new skill is one line here.
SKILL_PREDICATES: dict[str, str] = {
    "pick": "grasped({0})",
    "place": "in_bin({0})",
    "stack": "on({0},{1})",
    "insert": "on_peg({0},{1})",
}

#: Impossibility rules a vocabulary may declare, each with what it forbids.
RULES: dict[str, str] = {
    "distinct_args": "an object on or in itself",
    "no_cycle": "objects on each other in a cycle",
    "one_per_support": "two objects on one support",
    "one_goal_per_object": "one object sent to two places",
    "own_place": "an object sent to a place that is not its own",
    "known_names": "a name outside the vocabulary",
}

_GOAL_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*)\)\s*$")


def parse_goal(goal: str) -> tuple[str, tuple[str, ...]]:
    """``"on(red,blue)"`` -> ``("on", ("red", "blue"))``.

    Raises:
        ConfigError: ``goal`` is not of the form ``name(arg, ...)`` (the message quotes it).
    """
    m = _GOAL_RE.match(str(goal))
    if m is None:
        raise ConfigError(f"goal {goal!r} is not a predicate of the form name(arg,...)")
    args = tuple(a.strip() for a in m.group(2).split(",") if a.strip())
    return m.group(1), args


def _template_name(template: str) -> str:
    return template.split("(", 1)[0]


def _n_args(template: str) -> int:
    idx = [int(f) for _, f, _, _ in string.Formatter().parse(template) if f is not None and f.isdigit()]
    return max(idx) + 1 if idx else 0


def _words(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(w, str) and w.strip() for w in value):
        raise ConfigError(f"vocabulary {key}: expected a non-empty list of words, got {value!r}")
    return tuple(" ".join(w.lower().split()) for w in value)


@dataclass(frozen=True)
class TaskVocabulary:
    """The declared vocabulary of one task or cell (see the module docstring for each field).

    Raises:
        ConfigError: on construction, a field of the wrong shape, a goal skill without a template, an unknown
            rule name, or an ``own_place`` that names an unknown object or place (each message names the key).
    """

    task: str
    skills: dict[str, str]
    goal_skills: tuple[str, ...]
    objects: dict[str, tuple[str, ...]]
    skill_words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    skill_texts: dict[str, str] = field(default_factory=dict)
    places: dict[str, tuple[str, ...]] = field(default_factory=dict)
    own_place: dict[str, str] = field(default_factory=dict)
    rules: tuple[str, ...] = ()
    ordered_by_support: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.task, str) or not self.task:
            raise ConfigError(f"vocabulary task: expected a non-empty name, got {self.task!r}")
        if not self.objects:
            raise ConfigError(f"vocabulary of {self.task!r}: objects is empty")
        for skill in self.goal_skills:
            if skill not in self.skills:
                raise ConfigError(f"vocabulary of {self.task!r}: goal skill {skill!r} has no predicate template in "
                                  f"skills (known: {sorted(self.skills)})")
        for rule in self.rules:
            if rule not in RULES:
                raise ConfigError(f"vocabulary of {self.task!r}: unknown rule {rule!r} (known: {sorted(RULES)})")
        for obj, place in self.own_place.items():
            if obj not in self.objects:
                raise ConfigError(f"vocabulary of {self.task!r}: own_place names unknown object {obj!r}")
            if place not in self.places:
                raise ConfigError(f"vocabulary of {self.task!r}: own_place of {obj!r} is unknown place {place!r}")

    # ------------------------------------------------------------------ names
    @property
    def names(self) -> tuple[str, ...]:
        """Every object and place name."""
        return (*self.objects, *self.places)

    def words(self) -> set[str]:
        """Every single word (lower case) that the vocabulary uses for an object, place or skill."""
        out: set[str] = set()
        for phrases in (*self.objects.values(), *self.places.values(), *self.skill_words.values()):
            for phrase in phrases:
                out.update(phrase.split())
        return out

    def goal(self, skill: str, args: Sequence[str]) -> str:
        """The goal predicate of ``skill(*args)``, e.g. ``goal("stack", ("red", "blue")) == "on(red,blue)"``.

        Raises:
            ConfigError: ``skill`` is not a goal skill (names the known ones).
        """
        if skill not in self.goal_skills:
            raise ConfigError(f"{skill!r} is not a goal skill of task {self.task!r} (known: {list(self.goal_skills)})")
        template = self.skills[skill]
        return template.format(*args[: _n_args(template)])

    def goal_skill_of(self, goal: str) -> tuple[str, tuple[str, ...]]:
        """The goal skill and args whose predicate is ``goal``: ``"on(red,blue)"`` -> ``("stack", ("red", "blue"))``.

        Raises:
            ConfigError: ``goal`` is malformed, or no goal skill has its predicate name and arity.
        """
        name, args = parse_goal(goal)
        for skill in self.goal_skills:
            template = self.skills[skill]
            if _template_name(template) == name and _n_args(template) == len(args):
                return skill, args
        known = [self.skills[s] for s in self.goal_skills]
        raise ConfigError(f"goal {goal!r} matches no goal skill of task {self.task!r} (templates: {known})")

    # ------------------------------------------------------------------ rules
    def impossibility(self, goals: Sequence[str]) -> str | None:
        """Why ``goals`` cannot all hold in this task, in one line naming the goal at fault; None if they can.

        Checks, in order: the goals parse and match a goal skill; ``known_names``; ``distinct_args``;
        ``own_place``; ``one_goal_per_object``; ``one_per_support``; ``no_cycle`` (only the declared rules).
        An empty goal list is impossible ("no goal").
        """
        if not goals:
            return "no goal: the instruction asks for nothing this task can do"
        parsed: list[tuple[str, tuple[str, ...]]] = []
        for g in goals:
            try:
                self.goal_skill_of(g)
            except ConfigError as e:
                return str(e)
            parsed.append(parse_goal(g))
        rules = set(self.rules)
        names = set(self.names)
        for g, (_, args) in zip(goals, parsed):
            unknown = [a for a in args if a not in names]
            if "known_names" in rules and unknown:
                return f"{g}: {unknown[0]!r} is not an object or place of task {self.task!r}"
            if "distinct_args" in rules and len(set(args)) < len(args):
                return f"{g}: {RULES['distinct_args']}"
            if "own_place" in rules and len(args) >= 2 and args[0] in self.own_place and args[1] != self.own_place[args[0]]:
                return f"{g}: {args[0]} belongs on {self.own_place[args[0]]}, not {args[1]}"
        if "one_goal_per_object" in rules:
            seen: dict[str, str] = {}
            for g, (_, args) in zip(goals, parsed):
                if args and args[0] in seen:
                    return f"{g}: {args[0]} is already sent by {seen[args[0]]} ({RULES['one_goal_per_object']})"
                if args:
                    seen[args[0]] = g
        support = {args[0]: args[1] for _, args in parsed if len(args) >= 2 and args[1] in self.objects}
        if "one_per_support" in rules:
            on: dict[str, str] = {}
            for g, (_, args) in zip(goals, parsed):
                if len(args) >= 2 and args[1] in self.objects:
                    if args[1] in on:
                        return f"{g}: {args[1]} already carries {on[args[1]]} ({RULES['one_per_support']})"
                    on[args[1]] = args[0]
        if "no_cycle" in rules:
            for start in support:
                seen_chain, cur = [start], start
                while cur in support:
                    cur = support[cur]
                    if cur == start:
                        return f"{' on '.join(seen_chain + [start])}: {RULES['no_cycle']}"
                    seen_chain.append(cur)
        return None

    def canonical_order(self, goals: Sequence[str]) -> tuple[str, ...]:
        """``goals`` in the order they can be achieved: with ``ordered_by_support``, a goal whose support object is
        itself placed by another goal comes after it (a tower bottom first); otherwise unchanged. Stable."""
        goals = tuple(goals)
        if not self.ordered_by_support:
            return goals
        placed = {}
        for g in goals:
            _, args = parse_goal(g)
            if args:
                placed[args[0]] = g
        out: list[str] = []
        visiting: set[str] = set()

        def visit(g: str) -> None:
            if g in out or g in visiting:
                return
            visiting.add(g)
            _, args = parse_goal(g)
            if len(args) >= 2 and args[1] in placed:
                visit(placed[args[1]])
            out.append(g)

        for g in goals:
            visit(g)
        return tuple(out)

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, the file's keys."""
        return {"task": self.task, "skills": dict(self.skills), "goal_skills": list(self.goal_skills),
                "skill_words": {k: list(v) for k, v in self.skill_words.items()},
                "skill_texts": dict(self.skill_texts),
                "objects": {k: list(v) for k, v in self.objects.items()},
                "places": {k: list(v) for k, v in self.places.items()},
                "own_place": dict(self.own_place), "rules": list(self.rules),
                "ordered_by_support": bool(self.ordered_by_support)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "vocabulary") -> TaskVocabulary:
        """Build from :meth:`to_dict`'s form.

        Raises:
            ConfigError: a missing or unknown key, or a value of the wrong shape (names ``where`` and the key).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
        known = {"task", "skills", "goal_skills", "skill_words", "skill_texts", "objects", "places", "own_place",
                 "rules", "ordered_by_support"}
        extra = sorted(set(data) - known)
        if extra:
            raise ConfigError(f"{where}: unknown key {extra[0]!r} (known: {sorted(known)})")
        for key in ("task", "skills", "goal_skills", "objects"):
            if key not in data:
                raise ConfigError(f"{where}: missing key {key!r}")

        def mapping(key: str) -> Mapping[str, Any]:
            value = data.get(key) or {}
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}.{key}: expected a mapping, got {type(value).__name__}")
            return value

        def strings(key: str) -> dict[str, str]:
            out = {}
            for k, v in mapping(key).items():
                if not isinstance(v, str) or not v:
                    raise ConfigError(f"{where}.{key}.{k}: expected a non-empty string, got {v!r}")
                out[str(k)] = v
            return out

        goal_skills = data["goal_skills"]
        if not isinstance(goal_skills, (list, tuple)) or not all(isinstance(s, str) for s in goal_skills):
            raise ConfigError(f"{where}.goal_skills: expected a list of skill names, got {goal_skills!r}")
        rules = data.get("rules") or []
        if not isinstance(rules, (list, tuple)):
            raise ConfigError(f"{where}.rules: expected a list of rule names, got {rules!r}")
        ordered = data.get("ordered_by_support", False)
        if not isinstance(ordered, bool):
            raise ConfigError(f"{where}.ordered_by_support: expected true or false, got {ordered!r}")
        return cls(
            task=str(data["task"]), skills=strings("skills"), goal_skills=tuple(goal_skills),
            objects={str(k): _words(v, f"{where}.objects.{k}") for k, v in mapping("objects").items()},
            skill_words={str(k): _words(v, f"{where}.skill_words.{k}") for k, v in mapping("skill_words").items()},
            skill_texts=strings("skill_texts"),
            places={str(k): _words(v, f"{where}.places.{k}") for k, v in mapping("places").items()},
            own_place=strings("own_place"), rules=tuple(str(r) for r in rules), ordered_by_support=ordered)

    def save(self, path: str | Path) -> Path:
        """Write the vocabulary as YAML (``.yaml``/``.yml``) or JSON (any other suffix); returns the path."""
        path = Path(path)
        if path.suffix in (".yaml", ".yml"):
            import yaml

            path.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True))
        else:
            path.write_text(json.dumps(self.to_dict(), indent=2))
        return path

    @classmethod
    def load(cls, path: str | Path) -> TaskVocabulary:
        """Read a vocabulary file written by :meth:`save` (or by hand).

        Raises:
            ConfigError: the file is missing or unreadable, not YAML/JSON, or not a valid vocabulary (names the file).
        """
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise ConfigError(f"vocabulary file {path}: cannot read it ({e.strerror or e})") from None
        try:
            if path.suffix in (".yaml", ".yml"):
                import yaml

                data = yaml.safe_load(text)
            else:
                data = json.loads(text)
        except Exception as e:  # noqa: BLE001 - any parse error is one named line
            raise ConfigError(f"vocabulary file {path}: not valid {path.suffix.lstrip('.') or 'JSON'}: "
                              f"{str(e).splitlines()[0]}") from None
        return cls.from_dict(data, where=f"vocabulary file {path}")


def goals_equal(vocab: TaskVocabulary, a: Iterable[str], b: Iterable[str], ordered: bool) -> bool:
    """Whether two goal lists ask for the same thing: the same sequence when ``ordered`` (after
    :meth:`TaskVocabulary.canonical_order`), else the same set."""
    a, b = tuple(a), tuple(b)
    if ordered:
        return vocab.canonical_order(a) == vocab.canonical_order(b)
    return len(a) == len(b) and set(a) == set(b)


__all__ = ["RULES", "TaskVocabulary", "goals_equal", "parse_goal"]
