"""Validation set for the learned instruction grounder: hand-written phrasings, independent of training.

It was written as a held-out set, then looked at while the grammar and the grounder were improved (2026-12-06), so
it is a validation set now: final figures use ``benchmarks/make_final_paraphrases.py``'s set, never looked at.

This generator was written by a different hand, on purpose *without* reading the grounder's training grammar
(``tandem/core/phrasing.py``), the reference reading (``sim/reference_reading.py``), the learned grounder
(``planner_vlm/learned/grounder*``) or any of its training data. Its only inputs are the three task vocabularies
(``sim/tasks/<task>/vocabulary.yaml``) and :class:`tandem.core.vocabulary.TaskVocabulary` (impossibility rules,
canonical order). The sentence templates are the author's own, written the way a person talks to a robot:
imperatives, polite requests, questions, descriptions of the desired end state, two-sentence instructions,
bottom-to-top and top-to-bottom tower lists, pronouns ("it", "them", "its bin", "their pegs"), "everything" and
"all but X", ordering words ("first ... then", "after that", "before", "once that's done", "finally"), and
case/punctuation variation. No typos. Object, place and skill words come only from the vocabulary files
(their synonyms included); everything else is ordinary English.

For each task (stack_three, pick_place_bins, nut_assembly) it writes
``benchmarks/data/grounding_validation/<task>.jsonl``, one JSON object per line, either a positive::

    {"task": "stack_three", "instruction": "...", "goals": ["on(red,blue)", "on(green,red)"], "ordered": true,
     "kind": "paraphrase", "source": "heldout_v1"}

(goals in :meth:`TaskVocabulary.canonical_order` for stack_three, bottom first, where ``ordered`` is always true;
in the intended execution order otherwise, where ``ordered`` is true only when the words impose an order; a
plain list is unordered and its goals follow the words' order), or a negative a correct system must refuse::

    {"task": "nut_assembly", "instruction": "...", "expect": "refuse", "kind": "impossible", "source": "heldout_v1"}

with ``kind`` one of ``out_of_vocabulary`` (an object, colour or place the task lacks), ``missing_skill`` (a verb
for a skill the task lacks: pour, open, cut, hand over, ...), ``impossible`` (a cube on itself, a cycle, two
cubes on one, one object in two places, a nut on the other peg, an object in another object's bin) or ``empty``
(nothing to do, chit-chat, punctuation only).

Every positive is checked with ``TaskVocabulary.impossibility`` (must be None), every checkable impossible
negative must be refused by it, and duplicates (same words after lower-casing and dropping punctuation) are
removed. The output is deterministic (fixed seed). Standard library, numpy and PyYAML only.

Usage (from the repository root)::

    .venv/bin/python benchmarks/make_validation_paraphrases.py [--out benchmarks/data/grounding_validation]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tandem.core.vocabulary import TaskVocabulary  # noqa: E402

SEED = 7331
SOURCE = "heldout_v1"
N_POSITIVE = 360
TASKS = ("stack_three", "pick_place_bins", "nut_assembly")
NEG_TARGET = {"out_of_vocabulary": 36, "missing_skill": 32, "impossible": 32, "empty": 22}


# ---------------------------------------------------------------------------------------------------- helpers
class Gen:
    """A seeded chooser."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def pick(self, items, weights=None):
        items = list(items)
        if weights is None:
            return items[int(self.rng.integers(len(items)))]
        w = np.asarray(weights, dtype=float)
        return items[int(self.rng.choice(len(items), p=w / w.sum()))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def shuffled(self, items):
        items = list(items)
        return [items[i] for i in self.rng.permutation(len(items))]


def join(g: Gen, items) -> str:
    items = list(items)
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    sep = ", and " if g.chance(0.3) else " and "
    return ", ".join(items[:-1]) + sep + items[-1]


def norm_key(text: str) -> str:
    """Dedup key: lower case, punctuation dropped, spaces collapsed."""
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def wrap_polite(g: Gen, s: str) -> tuple[str, bool]:
    """An imperative clause (starting lower case) with an optional politeness frame; returns (text, question)."""
    frames = [("{}", False), ("please {}", False), ("{}, please", False), ("could you {}", True),
              ("can you {}", True), ("would you {}", True), ("hey robot, {}", False), ("robot, {}", False),
              ("okay, {}", False), ("alright, {}", False), ("now {}", False), ("go ahead and {}", False),
              ("I need you to {}", False), ("next, {}", False), ("would you please {}", True),
              ("your job is to {}", False), ("let's {}", False)]
    weights = [10, 4, 3, 3, 2, 1.5, 1, 1, 1, 1, 1, 1, 1.5, 0.7, 0.8, 0.6, 0.8]
    frame, question = g.pick(frames, weights)
    return frame.format(s), question


def finish(g: Gen, s: str, question: bool = False) -> str:
    """Sentence case (or lower / upper case now and then) and final punctuation."""
    s = " ".join(s.split()).strip()
    s = s.rstrip(".!?")
    mode = g.pick(["sentence", "lower", "upper"], [0.8, 0.17, 0.03])
    if mode == "sentence":
        parts = re.split(r"(?<=[.!?;:]) (?=[a-z])", s)
        out = []
        for i, p in enumerate(parts):
            if i == 0 or parts[i - 1][-1] in ".!?":
                p = p[0].upper() + p[1:]
            out.append(p)
        s = " ".join(out)
        s = re.sub(r"\bi\b", "I", s)
    elif mode == "lower":
        s = s.lower()
    else:
        s = s.upper()
    if question:
        end = g.pick(["?", ""], [0.88, 0.12])
    else:
        end = g.pick([".", "!", ""], [0.55, 0.1, 0.35])
    return s + end


# ---------------------------------------------------------------------------------------------------- stack_three
COLOURS = ("red", "green", "blue")


def cube_namer(g: Gen):
    """Noun phrases for the cubes within one instruction (consistent noun, 'one' for later mentions in 'mixed')."""
    mode = g.pick(["cube", "block", "mixed", "one", "box"], [0.3, 0.3, 0.26, 0.08, 0.06])
    first_noun = g.pick(["cube", "block"])
    said: list[str] = []

    def name(c: str) -> str:
        if mode in ("cube", "block", "box", "one"):
            out = f"the {c} {mode}"
        elif not said:
            out = f"the {c} {first_noun}"
        else:
            out = f"the {c} one"
        said.append(c)
        return out

    return name, (first_noun if mode in ("mixed",) else ("block" if mode in ("one", "box") else mode))


def on_prep(g: Gen) -> str:
    return g.pick(["on", "onto", "on top of"], [4, 3, 3])


def stack_single(g: Gen, x: str, y: str, z: str) -> tuple[str, bool, bool]:
    """on(x,y); z is the unused cube. Returns (text, wrap_ok, question)."""
    N, noun = cube_namer(g)
    v = g.pick(["put", "place", "set", "move", "stack", "stand"], [5, 3, 2, 2, 3, 1])
    t = int(g.rng.integers(22))
    if t == 0:
        return f"{v} {N(x)} {on_prep(g)} {N(y)}", True, False
    if t == 1:
        pv = g.pick(["pick up", "grab", "take", "lift"])
        v2 = g.pick(["put", "place", "set", "stack"])
        return f"{pv} {N(x)} and {v2} it {on_prep(g)} {N(y)}", True, False
    if t == 2:
        return f"{g.pick(['put', 'set', 'place'])} {N(x)} down on {N(y)}", True, False
    if t == 3:
        X, Y = N(x), N(y)
        return f"{v} {X} {on_prep(g)} {Y} and leave {N(z)} where it is", True, False
    if t == 4:
        return f"take {N(x)} and stack it on top of {N(y)}", True, False
    if t == 5:
        return f"move {N(x)} so that it sits on {N(y)}", True, False
    if t == 6:
        return f"just {v} {N(x)} {on_prep(g)} {N(y)}", True, False
    if t == 7:
        return f"I want {N(x)} {g.pick(['on', 'on top of', 'sitting on', 'resting on'])} {N(y)}", False, False
    if t == 8:
        return f"I'd like {N(x)} to end up on top of {N(y)}", False, False
    if t == 9:
        return f"{N(x)} goes {g.pick(['on', 'on top of', 'onto'])} {N(y)}", False, False
    if t == 10:
        return f"{N(y)} should end up with {N(x)} on top of it", False, False
    if t == 11:
        return f"{x} on {y}", False, False
    if t == 12:
        return f"make a two-{noun} stack: {N(y)} on the bottom, {N(x)} on top", True, False
    if t == 13:
        return f"the goal is {N(x)} sitting on {N(y)}", False, False
    if t == 14:
        pv = g.pick(["grab", "pick up", "take"])
        return f"{pv} {N(x)}. {g.pick(['put', 'set', 'place'])} it {on_prep(g)} {N(y)}", False, False
    if t == 15:
        return f"{N(x)} needs to be on top of {N(y)}", False, False
    if t == 16:
        return f"can you get {N(x)} onto {N(y)}", False, True
    if t == 17:
        return f"stack {N(x)} directly above {N(y)}", True, False
    if t == 18:
        Y = N(y)
        return f"{Y} stays where it is; {g.pick(['put', 'stack', 'place'])} {N(x)} on it", False, False
    if t == 19:
        return f"when you're done, {N(x)} should be sitting on {N(y)}", False, False
    if t == 20:
        return f"pile {N(x)} on top of {N(y)}", True, False
    return f"stack {N(x)} on {N(y)} and nothing else", True, False


def stack_tower(g: Gen, b: str, m: str, t_: str) -> tuple[str, bool, bool]:
    """on(m,b), on(t_,m): bottom b, middle m, top t_."""
    N, noun = cube_namer(g)
    nouns = noun + "s"
    v = g.pick(["put", "place", "set", "stack"], [5, 3, 2, 3])
    t = int(g.rng.integers(31))
    if t == 0:
        M, B = N(m), N(b)
        v2 = g.pick([v, "put", "stack"])
        return f"{v} {M} {on_prep(g)} {B}, then {v2} {N(t_)} {on_prep(g)} {N(m)}", True, False
    if t == 1:
        M, B = N(m), N(b)
        return f"{v} {M} {on_prep(g)} {B} and then {g.pick(['put', 'place', 'set'])} {N(t_)} on top", True, False
    if t == 2:
        T, M = N(t_), N(m)
        return f"stack {T} on {M} and {M} on {N(b)}", True, False
    if t == 3:
        B, M = N(b), N(m)
        return f"build a tower with {B} at the bottom, {M} in the middle and {N(t_)} on top", True, False
    if t == 4:
        B, M = N(b), N(m)
        return f"make a stack: {B} on the bottom, then {M}, then {N(t_)}", True, False
    if t == 5:
        M, B = N(m), N(b)
        first = f"{v} {M} {on_prep(g)} {B}"
        T, M2 = N(t_), N(m)
        return f"{first}. {g.pick(['after that', 'then', 'next'])}, {v} {T} {on_prep(g)} {M2}", False, False
    if t == 6:
        M, B = N(m), N(b)
        return f"first {v} {M} {on_prep(g)} {B}; once that's done, {N(t_)} goes on top", True, False
    if t == 7:
        T, M = N(t_), N(m)
        return f"before you {v} {T} on {M}, {v} {M} on {N(b)}", True, False
    if t == 8:
        T, M = N(t_), N(m)
        return f"{v} {T} on {M}, but first {v} {M} on {N(b)}", True, False
    if t == 9:
        M, B = N(m), N(b)
        return f"take {M} and set it on {B}, then grab {N(t_)} and set it on {N(m)}", True, False
    if t == 10:
        B, M = N(b), N(m)
        return f"start with {B} as the base, put {M} on it, and finish with {N(t_)} on top", True, False
    if t == 11:
        return f"stack the {nouns} so it's {t_} on {m} on {b}", True, False
    if t == 12:
        M, B = N(m), N(b)
        return f"pile {M} onto {B} and {N(t_)} onto {N(m)}", True, False
    if t == 13:
        return f"stack all three {nouns} with {b} at the bottom and {t_} at the top", True, False
    if t == 14:
        T, B = N(t_), N(b)
        return f"build a tower of all three {nouns} with {T} at the top, {B} at the bottom and {N(m)} in between", True, False
    if t == 15:
        M, B = N(m), N(b)
        return f"{v} {M} on {B} first, then finish with {N(t_)} on top", True, False
    if t == 16:
        return f"from bottom to top: {b}, {m}, {t_}", False, False
    if t == 17:
        return f"top to bottom: {t_}, {m}, {b}", False, False
    if t == 18:
        T, M = N(t_), N(m)
        return f"I want {T} sitting on {M}, which sits on {N(b)}", False, False
    if t == 19:
        if g.chance(0.5):
            return f"{t_} on {m} on {b}", False, False
        T, M = N(t_), N(m)
        return f"{T} on {M} on {N(b)}", False, False
    if t == 20:
        B, T = N(b), N(t_)
        return f"{B} goes at the bottom, {T} at the top, and {N(m)} between them", False, False
    if t == 21:
        T, M = N(t_), N(m)
        return f"{T} should be on top, resting on {M}, and {N(m)} should rest on {N(b)}", False, False
    if t == 22:
        B, T = N(b), N(t_)
        return f"I'd like a stack of three: {B} on the bottom, {T} on top, and {N(m)} in the middle", False, False
    if t == 23:
        return f"the tower should read {b}, {m}, {t_} from the bottom up", False, False
    if t == 24:
        return f"the final tower, top to bottom, is {t_}, {m}, {b}", False, False
    if t == 25:
        M, B = N(m), N(b)
        return f"{M} goes on {B}. {N(t_)} goes on {N(m)}", False, False
    if t == 26:
        return (f"I need a three-{noun} tower. {b} at the base, then {m}, with {t_} on top"), False, False
    if t == 27:
        B, M = N(b), N(m)
        return f"leave {B} where it is, put {M} on it, then put {N(t_)} on top", True, False
    if t == 28:
        M, B = N(m), N(b)
        return f"stack {M} on {B}, with {N(t_)} directly above {N(m)}", True, False
    if t == 29:
        T, M = N(t_), N(m)
        return f"could you stack {T} on {M} after putting {M} on {N(b)}", False, True
    B, M = N(b), N(m)
    return f"tower time: {B} first, {M} on it, {N(t_)} last", False, False


def stack_positive(g: Gen, i: int):
    if i % 20 < 7:
        x, y = g.shuffled(COLOURS)[:2]
        z = next(c for c in COLOURS if c not in (x, y))
        text, wrap, q = stack_single(g, x, y, z)
        goals = [f"on({x},{y})"]
    else:
        b, m, t = g.shuffled(COLOURS)
        text, wrap, q = stack_tower(g, b, m, t)
        goals = [f"on({m},{b})", f"on({t},{m})"]
    if wrap and g.chance(0.55):
        text, q = wrap_polite(g, text)
    return finish(g, text, q), goals, True


def stack_negative(g: Gen, kind: str):
    """Returns (text, goals_or_None, unknown_word_or_None)."""
    x, y, z = g.shuffled(COLOURS)
    N, noun = cube_namer(g)
    v = g.pick(["put", "place", "stack", "set"])
    if kind == "out_of_vocabulary":
        oc = g.pick(["yellow", "purple", "orange", "white", "black", "pink", "grey", "brown"])
        shape = g.pick(["ball", "sphere", "cylinder", "pyramid", "marble", "cone"])
        cont = g.pick(["bowl", "plate", "tray", "cup", "basket", "drawer"])
        t = int(g.rng.integers(9))
        if t == 0:
            return f"{v} the {oc} {noun} on {N(y)}", None, oc
        if t == 1:
            return f"{v} {N(x)} on top of the {oc} {noun}", None, oc
        if t == 2:
            return f"build a tower with the {oc} {noun} at the bottom, then {x}, then {y}", None, oc
        if t == 3:
            return f"{v} the {shape} on {N(x)}", None, shape
        if t == 4:
            return f"{v} {N(x)} on the {shape}", None, shape
        if t == 5:
            return f"{v} {N(x)} {'on' if cont in ('plate', 'tray') else 'in'} the {cont}", None, cont
        if t == 6:
            return f"stack {N(x)} on {N(y)}, then put the {oc} {noun} on top", None, oc
        if t == 7:
            return f"I want the {oc} {noun} sitting on {N(x)}", None, oc
        return f"put all the {nouns_of(noun)} {'on' if cont in ('plate', 'tray') else 'in'} the {cont}", None, cont
    if kind == "missing_skill":
        opts = [("throw {X} across the room", "throw"), ("roll {X} over", "roll"), ("spin {X} around", "spin"),
                ("flip {X} upside down", "flip"), ("hand me {X}", "hand"), ("give {X} to me", "give"),
                ("push {X} next to {Y}", "push"), ("knock the tower over", "knock"), ("unstack the {ns}", "unstack"),
                ("line the three {ns} up in a row", "line"), ("shake {X}", "shake"), ("open {X}", "open"),
                ("hide {X} behind {Y}", "hide"), ("squeeze {X}", "squeeze"), ("wipe {X} clean", "wipe"),
                ("weigh {X}", "weigh"), ("count the {ns}", "count"), ("point at {X}", "point"),
                ("rotate {X} by ninety degrees", "rotate"), ("tilt {X} onto its side", "tilt"),
                ("cut {X} in half", "cut"), ("paint {X} yellow", "paint"), ("lean {X} against {Y}", "lean"),
                ("wrap {X} in paper", "wrap"), ("tip {X} over", "tip"), ("sort the {ns} by size", "sort"),
                ("kick {X} off the table", "kick"), ("scatter the {ns}", "scatter"), ("drop {X} on the floor", "drop"),
                ("open the {c} box", "open"), ("show me {X}", "show"), ("clean {X}", "clean")]
        tmpl, verb = g.pick(opts)
        text = tmpl.format(X=N(x), Y=N(y), ns=nouns_of(noun), c=x)
        if g.chance(0.4):
            text, q = wrap_polite(g, text)
            return (text, q), None, verb
        return text, None, verb
    if kind == "impossible":
        t = int(g.rng.integers(10))
        if t == 0:
            return f"{v} {N(x)} on itself", [f"on({x},{x})"], None
        if t == 1:
            X = N(x)
            return f"{v} {X} on top of the {x} {noun}", [f"on({x},{x})"], None
        if t == 2:
            X, Y = N(x), N(y)
            return f"{v} {X} on {Y} and {N(y)} on {N(x)}", [f"on({x},{y})", f"on({y},{x})"], None
        if t == 3:
            return (f"stack {N(x)} on {N(y)}, then {N(y)} on top of {N(x)}"), [f"on({x},{y})", f"on({y},{x})"], None
        if t == 4:
            return (f"{x} on {y}, {y} on {z}, and {z} on {x}"), [f"on({x},{y})", f"on({y},{z})", f"on({z},{x})"], None
        if t == 5:
            X, Z = N(x), N(z)
            return f"{v} {X} and {Z} both on {N(y)}", [f"on({x},{y})", f"on({z},{y})"], None
        if t == 6:
            X, Y = N(x), N(y)
            return f"{v} {X} on {Y}, and {N(z)} on {N(y)} too", [f"on({x},{y})", f"on({z},{y})"], None
        if t == 7:
            X, Y = N(x), N(y)
            return f"{v} {X} on {Y} and also on {N(z)}", [f"on({x},{y})", f"on({x},{z})"], None
        if t == 8:
            X, Y = N(x), N(y)
            return f"I want {X} on top of {Y} and on top of {N(z)} at the same time", [f"on({x},{y})", f"on({x},{z})"], None
        return f"build a tower where {x} is both the top and the bottom", None, None
    return None


def nouns_of(noun: str) -> str:
    return {"box": "boxes"}.get(noun, noun + "s")


# ---------------------------------------------------------------------------------------------------- pick_place_bins
ITEMS = ("milk", "bread", "cereal", "can")
ITEM_WORDS = {
    "milk": (["the milk", "the milk carton", "the carton of milk", "the carton"], [5, 3, 2, 1.5]),
    "bread": (["the bread", "the loaf of bread", "the bread loaf", "the loaf"], [5, 3, 1.5, 2]),
    "cereal": (["the cereal", "the cereal box", "the box of cereal", "the box"], [5, 3, 2, 1.5]),
    "can": (["the can", "the soda can", "the coke can", "the can of soda", "the soda", "the tin"], [4, 3, 1.5, 1.5, 1.5, 1.5]),
}
PLACE_VERBS = ["put", "place", "move", "drop", "sort", "store", "stow", "return", "bring"]


def item_namer(g: Gen):
    chosen: dict[str, str] = {}

    def name(o: str) -> str:
        if o not in chosen:
            words, w = ITEM_WORDS[o]
            chosen[o] = g.pick(words, w)
        return chosen[o]

    return name


def own_bin(g: Gen, o: str, allow_its: bool = True) -> str:
    opts = [f"the {o} bin", f"the {o}'s bin"] + (["its bin", "its own bin"] if allow_its else [])
    w = [3, 1] + ([4, 1.5] if allow_its else [])
    return g.pick(opts, w)


def into(g: Gen, verb: str) -> str:
    if verb in ("return", "bring"):
        return "to"
    if verb == "sort":
        return "into"
    if verb in ("store", "stow"):
        return "in"
    return g.pick(["in", "into"], [3, 2])


def bins_unordered(g: Gen, objs: list[str]) -> tuple[str, bool, bool]:
    N = item_namer(g)
    k = len(objs)
    v = g.pick(PLACE_VERBS, [6, 3, 2, 2, 3, 2, 2, 1.5, 1])
    L = join(g, [N(o) for o in objs])
    theirs = g.pick(["their bins", "their own bins", "the right bins", "their matching bins"], [5, 2, 1.5, 1])
    if k == 4 and g.chance(0.45):
        t = int(g.rng.integers(10))
        return [
            ("put everything in its bin", True, False),
            (f"{g.pick(['sort', 'put', 'stow'])} everything into the bins", True, False),
            ("put all four items away in their bins", True, False),
            ("every item goes into its own bin", False, False),
            ("tidy up everything: each thing into its own bin", True, False),
            (f"{g.pick(['put', 'sort', 'store'])} all of them in their bins", True, False),
            ("I want everything sorted into the bins", False, False),
            ("put each of the four things in its own bin", True, False),
            ("everything on the table goes into its bin", False, False),
            ("sort it all into the bins", True, False),
        ][t]
    if k == 3 and g.chance(0.45):
        x = next(o for o in ITEMS if o not in objs)
        X = N(x)
        t = int(g.rng.integers(7))
        return [
            (f"put everything except {X} in its bin", True, False),
            (f"{g.pick(['put', 'sort', 'stow'])} all but {X} into their bins", True, False),
            (f"sort everything but {X} into the bins", True, False),
            (f"leave {X} out and put the other three in their bins", True, False),
            (f"everything but {X} goes in the bins", False, False),
            (f"put away everything apart from {X}, each in its own bin", True, False),
            (f"I want all the items except {X} in their bins", False, False),
        ][t]
    if k == 2 and g.chance(0.15):
        x, y = [o for o in ITEMS if o not in objs]
        return (f"leave {N(x)} and {N(y)} where they are, and put the other two in their bins"), True, False
    if k == 1:
        o = objs[0]
        A = N(o)
        t = int(g.rng.integers(11))
        pv = g.pick(["pick up", "grab", "take", "lift"])
        return [
            (f"{v} {A} {into(g, v)} {own_bin(g, o)}", True, False),
            (f"{pv} {A} and {g.pick(['drop', 'put', 'place'])} it in {own_bin(g, o)}", True, False),
            (f"{A} {g.pick(['needs to go', 'should go', 'goes'])} into {own_bin(g, o)}", False, False),
            (f"{A} belongs in {own_bin(g, o, False)}; please put it there", False, False),
            (f"{own_bin(g, o, False)} is for {A}. put it there", False, False),
            (f"I want {A} in {own_bin(g, o)}", False, False),
            (f"when you're finished, {A} should be in {own_bin(g, o)}", False, False),
            (f"just {v} {A} {into(g, v)} {own_bin(g, o)}", True, False),
            (f"{g.pick(['stow', 'put', 'store'])} {A} away in {own_bin(g, o)}", True, False),
            (f"return {A} to {own_bin(g, o)}", True, False),
            (f"{A}: into {own_bin(g, o)}", False, False),
        ][t]
    t = int(g.rng.integers(14))
    if t == 0:
        return f"{v} {L} {into(g, v)} {theirs}", True, False
    if t == 1:
        pv = g.pick(["pick up", "grab", "take"])
        return f"{pv} {L} and {g.pick(['put', 'drop', 'place'])} them in {theirs}", True, False
    if t == 2:
        parts = [f"{N(o)} in {own_bin(g, o, False)}" for o in objs]
        return f"{g.pick(['put', 'place', 'store'])} {join(g, parts)}", True, False
    if t == 3:
        return f"sort {L} into {theirs}", True, False
    if t == 4:
        return f"tidy {L} away into {theirs}", True, False
    if t == 5 and k == 2:
        return f"put {N(objs[0])} in its bin, and {N(objs[1])} too", True, False
    if t == 6:
        return f"I want {L} in {theirs}", False, False
    if t == 7:
        return f"{L} need to go into {theirs}", False, False
    if t == 8:
        return f"when you're finished, {L} should {'both ' if k == 2 else 'all '}be in {theirs}", False, False
    if t == 9:
        return f"{L}: into the bins, please", False, False
    if t == 10 and k == 2:
        return f"both {N(objs[0])} and {N(objs[1])} go in {theirs}", False, False
    if t == 11:
        parts = [f"{N(o)} goes in {own_bin(g, o, False)}" for o in objs]
        return join(g, parts), False, False
    if t == 12:
        return f"{v} {L} {into(g, v)} the bins, each in its own", True, False
    if t == 13:
        return f"{g.pick(['put', 'stow', 'store'])} {L} away, each in its own bin", True, False
    return f"{v} {L} {into(g, v)} {theirs}", True, False


def bins_ordered(g: Gen, objs: list[str]) -> tuple[str, bool, bool]:
    N = item_namer(g)
    k = len(objs)
    v = g.pick(["put", "place", "sort", "store", "stow", "drop", "move"], [6, 3, 3, 2, 2, 2, 1])
    names = [N(o) for o in objs]
    pr = into(g, v)

    def then_chain(rest: list[str]) -> str:
        if len(rest) == 1:
            return f"then {rest[0]}"
        mids = ", ".join(f"then {r}" for r in rest[:-1])
        return f"{mids}, and {g.pick(['finally', 'last of all', 'lastly'])} {rest[-1]}"

    t = int(g.rng.integers(15))
    if t == 0:
        return f"first {v} {names[0]} {pr} its bin, {then_chain(names[1:])}", True, False
    if t == 1:
        return f"{v} {names[0]} {pr} its bin first, {then_chain(names[1:])}", True, False
    if t == 2:
        mid = "".join(f", then {n}" for n in names[1:-1])
        return (f"start with {names[0]}{mid}, and finish with {names[-1]}; each goes in its own bin"), True, False
    if t == 3:
        out = f"{v} {names[0]} {pr} {own_bin(g, objs[0])}."
        for i, n in enumerate(names[1:], 1):
            conn = "after that" if i == 1 else g.pick(["then", "and after that", "finally"] if i == k - 1 else ["then"])
            out += f" {conn}, {g.pick(['put', v])} {n} {pr} {own_bin(g, objs[i])}."
        return out, False, False
    if k == 2 and t == 4:
        return f"{g.pick(['sort', 'put', 'store'])} {names[0]} into its bin before {names[1]}", True, False
    if k == 2 and t == 5:
        return f"{v} {names[1]} {pr} its bin, but first {g.pick(['put', v])} {names[0]} {pr} its bin", True, False
    if t == 6:
        out = f"{v} {names[0]} {pr} its bin; once that's done, {v} {names[1]} {pr} its bin"
        if k >= 3:
            out += ", " + ", ".join(f"then {n}" for n in names[2:])
        return out, True, False
    if t == 7 and k >= 3:
        return f"one at a time, in this order: {', '.join(names)}. each goes into its own bin", False, False
    if t == 8:
        tail = ": both into their bins" if k == 2 else ": all into their bins"
        return (", ".join([f"{names[0]} first"] + [f"then {n}" for n in names[1:]]) + tail), False, False
    if t == 9:
        out = f"{v} {names[0]} {pr} {own_bin(g, objs[0], False)}"
        for i in range(1, k):
            out += f", and after that {names[i]} {pr} {own_bin(g, objs[i], False)}"
        return out, True, False
    if t == 10 and k == 2:
        return f"do {names[1]} after {names[0]}: both go in their bins", False, False
    if t == 11 and k == 4:
        return (f"put everything in its bin, starting with {names[0]}, then {names[1]}, then {names[2]}, "
                f"and {names[3]} last"), True, False
    if t == 12 and k == 2:
        return f"{v} {names[0]} away first and {names[1]} last", True, False
    if t == 12 and k == 3:
        return f"{v} {names[0]} {pr} its bin first, {names[2]} last, and {names[1]} in between", True, False
    if t == 13:
        return f"I want {names[0]} in its bin first, {then_chain(names[1:])}", False, False
    if t == 14:
        return f"{names[0]} goes into its bin first, followed by {join(g, names[1:])}, in that order", False, False
    return f"first {v} {names[0]} {pr} its bin, {then_chain(names[1:])}", True, False


def bins_positive(g: Gen, i: int):
    k = [1, 2, 2, 3, 3, 4, 4, 2, 3, 1][i % 10]
    objs = g.shuffled(ITEMS)[:k]
    ordered = k >= 2 and g.chance(0.38)
    if ordered:
        text, wrap, q = bins_ordered(g, objs)
    else:
        text, wrap, q = bins_unordered(g, objs)
    if wrap and g.chance(0.5):
        text, q = wrap_polite(g, text)
    return finish(g, text, q), [f"in_bin({o})" for o in objs], ordered


def bins_negative(g: Gen, kind: str):
    N = item_namer(g)
    a, b, c, d = g.shuffled(ITEMS)
    v = g.pick(["put", "place", "store", "stow", "sort"])
    if kind == "out_of_vocabulary":
        obj = g.pick(["apple", "banana", "orange", "yogurt", "cheese", "lemon", "sponge", "mug", "bottle of water",
                      "jar of jam", "bag of chips", "egg"])
        place = g.pick(["fridge", "shelf", "cupboard", "drawer", "sink", "basket", "pantry", "freezer"])
        on_in = "on" if place == "shelf" else "in"
        t = int(g.rng.integers(7))
        word = obj.split()[-1] if obj.split()[0] in ("bottle", "jar", "bag") else obj
        word = {"bottle of water": "water", "jar of jam": "jam", "bag of chips": "chips"}.get(obj, word)
        if t == 0:
            return f"{v} the {obj} {into(g, v)} its bin", None, word
        if t == 1:
            return f"sort {N(a)} and the {obj} into their bins", None, word
        if t == 2:
            return f"{v} {N(a)} {on_in if on_in == 'on' else into(g, v)} the {place}", None, place
        if t == 3:
            return f"put the {obj} in the {a} bin", None, word
        if t == 4:
            return f"first put {N(a)} in its bin, then the {obj}", None, word
        if t == 5:
            return f"put {N(a)} and {N(b)} {on_in} the {place}", None, place
        return f"I want the {obj} {on_in} the {place}", None, word
    if kind == "missing_skill":
        opts = [("pour the milk into a glass", "pour"), ("open {cereal}", "open"), ("open {milk}", "open"),
                ("slice {bread}", "slice"), ("cut {bread} in half", "cut"), ("toast {bread}", "toast"),
                ("shake {can}", "shake"), ("crush {can}", "crush"), ("open {can}", "open"), ("heat up {milk}", "heat"),
                ("squeeze {milk}", "squeeze"), ("wrap {bread} in foil", "wrap"), ("empty {cereal}", "empty"),
                ("hand me {A}", "hand"), ("give {A} to me", "give"), ("stack {A} on top of {B}", "stack"),
                ("weigh {A}", "weigh"), ("read me the label on {A}", "read"), ("butter {bread}", "butter"),
                ("shake {cereal} a bit", "shake"), ("close the milk carton", "close"), ("stand {cereal} upright", "upright"),
                ("eat {bread}", "eat"), ("drink {can}", "drink"), ("smell {milk} to see if it's off", "smell"),
                ("pour some of the cereal into a bowl", "pour"), ("empty the {a} bin", "empty"),
                ("turn {A} upside down", "turn"), ("line up {A} and {B} side by side", "line"),
                ("throw {can} to me", "throw")]
        tmpl, verb = g.pick(opts)
        text = tmpl.format(A=N(a), B=N(b), a=a, **{o: N(o) for o in ITEMS})
        if g.chance(0.4):
            text, q = wrap_polite(g, text)
            return (text, q), None, verb
        return text, None, verb
    if kind == "impossible":
        t = int(g.rng.integers(8))
        if t == 0:
            return f"{v} {N(a)} {into(g, v)} the {b} bin", None, None
        if t == 1:
            return f"{v} {N(a)} {into(g, v)} the {b}'s bin", None, None
        if t == 2:
            return f"put {N(a)} and {N(b)} both in the {a} bin", None, None
        if t == 3:
            return f"put {N(a)} in its own bin and in the {b} bin as well", None, None
        if t == 4:
            return f"put everything in the {a} bin", None, None
        if t == 5:
            return f"put {N(a)} in its bin, and {N(b)} in the {c} bin", None, None
        if t == 6:
            return f"swap them around: {N(a)} into the {b} bin and {N(b)} into the {a} bin", None, None
        return f"I want {N(a)} in the {b} bin and in the {c} bin at the same time", None, None
    return None


# ---------------------------------------------------------------------------------------------------- nut_assembly
SHAPES = ("square", "round")


def nut_namer(g: Gen):
    noun = g.pick(["nut", "ring", "one"], [6, 3, 1.5])
    return lambda s: f"the {s} {noun}", noun


def peg_word(g: Gen) -> str:
    return g.pick(["peg", "post", "rod"], [6, 2, 1.5])


def nut_verb(g: Gen):
    """A verb with a preposition that fits it."""
    v = g.pick(["put", "place", "insert", "slide", "fit", "thread", "drop", "mount", "set", "move"],
               [6, 3, 1, 3, 2, 2, 2, 1.5, 2, 1])
    if v in ("slide", "fit", "thread", "drop"):
        prep = g.pick(["onto", "over", "down onto", "on"], [4, 2, 1, 1])
    elif v in ("insert", "move"):
        prep = "onto"
    else:
        prep = g.pick(["on", "onto"], [3, 2])
    return v, prep


def nut_single(g: Gen, s: str) -> tuple[str, bool, bool]:
    other = "round" if s == "square" else "square"
    Nn, noun = nut_namer(g)
    pw = peg_word(g)
    v, prep = nut_verb(g)
    n, p = Nn(s), f"the {s} {pw}"
    own = g.pick([p, p, "its peg", "its own peg", "the matching peg", f"its {pw}"])
    t = int(g.rng.integers(13))
    if t == 0:
        return f"{v} {n} {prep} {own}", True, False
    if t == 1:
        return f"{g.pick(['pick up', 'grab', 'take', 'lift'])} {n} and {v} it {prep} {own}", True, False
    if t == 2:
        return f"grab {n}, then {v} it {prep} {p}", True, False
    if t == 3:
        return f"just {v} {n} {prep} {own}; leave the {other} {'nut' if noun == 'one' else noun} alone", True, False
    if t == 4:
        return f"I want {n} on {p}", False, False
    if t == 5:
        return f"{n} goes on {own}", False, False
    if t == 6:
        return f"{p} should end up with {n} on it", False, False
    if t == 7:
        return f"when you're done, {n} should be sitting on {p}", False, False
    if t == 8:
        return f"only {n} this time: {v} it {prep} {own}", False, False
    if t == 9:
        return f"{n} needs to go onto {p}", False, False
    if t == 10:
        return f"take {n} over to {p} and slide it down", True, False
    if t == 11:
        return f"{v} {n} {prep} {p} and leave the {other} {'nut' if noun == 'one' else noun} where it is", True, False
    return f"{s} {noun if noun != 'one' else 'nut'} on the {s} {pw}", False, False


def nut_unordered(g: Gen, s1: str, s2: str) -> tuple[str, bool, bool]:
    Nn, noun = nut_namer(g)
    pw = peg_word(g)
    v, prep = nut_verb(g)
    plural = "nuts" if noun in ("nut", "one") else "rings"
    theirs = g.pick([f"their {pw}s", f"their own {pw}s", f"the matching {pw}s", f"their matching {pw}s",
                     f"the right {pw}s"], [5, 2, 2, 1, 1])
    n1, n2 = Nn(s1), Nn(s2)
    p1, p2 = f"the {s1} {pw}", f"the {s2} {pw}"
    t = int(g.rng.integers(13))
    if t == 0:
        return f"{v} both {plural} {prep} {theirs}", True, False
    if t == 1:
        return f"{v} {n1} {prep} {p1} and {n2} {prep} {p2}", True, False
    if t == 2:
        return f"{v} {n1} and {n2} {prep} {theirs}", True, False
    if t == 3:
        return f"{v} each {plural[:-1]} {prep} its matching {pw}", True, False
    if t == 4:
        return f"{s1} on the {s1} {pw}, {s2} on the {s2} {pw}", False, False
    if t == 5:
        return f"I want both {plural} on {theirs}", False, False
    if t == 6:
        return f"both {plural} should end up on {theirs}", False, False
    if t == 7:
        return f"{n1} goes on {p1} and {n2} goes on {p2}", False, False
    if t == 8:
        return f"pick up both {plural} and {v} them {prep} {theirs}", True, False
    if t == 9:
        return f"could you {v} {n1} and {n2} {prep} {theirs}", False, True
    if t == 10:
        return f"{v} the two {plural} {prep} {theirs}", True, False
    if t == 11:
        return f"{p1} gets {n1}, and {p2} gets {n2}", False, False
    return f"each {plural[:-1]} on its own {pw}, please", False, False


def nut_ordered(g: Gen, s1: str, s2: str) -> tuple[str, bool, bool]:
    Nn, noun = nut_namer(g)
    pw = peg_word(g)
    v, prep = nut_verb(g)
    plural = "nuts" if noun in ("nut", "one") else "rings"
    n1, n2 = Nn(s1), Nn(s2)
    p1, p2 = f"the {s1} {pw}", f"the {s2} {pw}"
    t = int(g.rng.integers(14))
    if t == 0:
        return f"first {v} {n1} {prep} {p1}, then {n2} {prep} {p2}", True, False
    if t == 1:
        return f"{v} {n1} {prep} its {pw} first, then {n2}", True, False
    if t == 2:
        return f"start with {n1}, then do {n2}; each goes on its own {pw}", True, False
    if t == 3:
        return f"{v} {n1} {prep} {p1}. after that, {v} {n2} {prep} {p2}", False, False
    if t == 4:
        return f"{v} {n1} {prep} its {pw} before {n2}", True, False
    if t == 5:
        return f"{v} {n2} {prep} {p2}, but only after {n1} is on {p1}", True, False
    if t == 6:
        return f"{v} {n2} {prep} {p2}, but first {v} {n1} {prep} {p1}", True, False
    if t == 7:
        return f"{n1} first, {n2} second, each on its own {pw}", False, False
    if t == 8:
        return f"{v} {n1} {prep} {p1}; once that's done, {v} {n2} {prep} {p2}", True, False
    if t == 9:
        return f"do {n2} after {n1}; both go on their {pw}s", False, False
    if t == 10:
        return f"{v} both {plural} {prep} their {pw}s, starting with {n1}", True, False
    if t == 11:
        return f"{v} {n1} {prep} its {pw} and then {n2} {prep} its {pw}", True, False
    if t == 12:
        return f"I want {n1} on {p1} first, and after that {n2} on {p2}", False, False
    return f"{v} both {plural} {prep} their {pw}s: {s1} first, then {s2}", True, False


def nut_positive(g: Gen, i: int):
    r = i % 10
    if r < 3:
        s = g.pick(SHAPES)
        text, wrap, q = nut_single(g, s)
        goals, ordered = [f"on_peg({s}_nut,{s}_peg)"], False
    else:
        s1, s2 = g.shuffled(SHAPES)
        ordered = r >= 6
        text, wrap, q = (nut_ordered if ordered else nut_unordered)(g, s1, s2)
        goals = [f"on_peg({s1}_nut,{s1}_peg)", f"on_peg({s2}_nut,{s2}_peg)"]
    if wrap and g.chance(0.5):
        text, q = wrap_polite(g, text)
    return finish(g, text, q), goals, ordered


def nut_negative(g: Gen, kind: str):
    Nn, noun = nut_namer(g)
    pw = peg_word(g)
    v, prep = nut_verb(g)
    s1, s2 = g.shuffled(SHAPES)
    if kind == "out_of_vocabulary":
        onut = g.pick(["hex nut", "hexagonal nut", "triangular nut", "star-shaped nut", "bolt", "washer", "screw",
                       "gear", "spring", "blue nut", "big nut", "oval ring"])
        opeg = g.pick(["hex peg", "triangular peg", "third peg", "star peg", "middle peg", "red peg",
                       "oval post", "hook"])
        key_n = {"hex nut": "hex", "hexagonal nut": "hexagonal", "triangular nut": "triangular",
                 "star-shaped nut": "star-shaped", "blue nut": "blue", "big nut": "big", "oval ring": "oval"}.get(onut, onut)
        key_p = {"hex peg": "hex", "triangular peg": "triangular", "third peg": "third", "star peg": "star",
                 "middle peg": "middle", "red peg": "red", "oval post": "oval"}.get(opeg, opeg)
        t = int(g.rng.integers(6))
        if t == 0:
            return f"{v} the {onut} {prep} the {s1} {pw}", None, key_n
        if t == 1:
            return f"{v} {Nn(s1)} {prep} the {opeg}", None, key_p
        if t == 2:
            return f"{v} the {onut} and {Nn(s1)} on their {pw}s", None, key_n
        if t == 3:
            return f"first {v} {Nn(s1)} {prep} its {pw}, then the {onut} {prep} the {opeg}", None, key_n
        if t == 4:
            return f"I want the {onut} on the {opeg}", None, key_n
        return f"{v} the {onut} {prep} its {pw}", None, key_n
    if kind == "missing_skill":
        opts = [("tighten {N}", "tighten"), ("unscrew {N}", "unscrew"), ("remove {N} from its peg", "remove"),
                ("pull {N} off the {s} peg", "pull"), ("spin {N} around", "spin"), ("flip {N} over", "flip"),
                ("hand me {N}", "hand"), ("give {N} to me", "give"), ("polish {N}", "polish"),
                ("oil the {s} {pw}", "oil"), ("bend the {s} {pw}", "bend"), ("pull the {s} {pw} out", "pull"),
                ("paint {N} red", "paint"), ("weigh {N}", "weigh"), ("stack {N} on top of {M}", "stack"),
                ("throw {N} away", "throw"), ("roll {N} over to me", "roll"), ("clean the {s} {pw}", "clean"),
                ("measure the {s} {pw}", "measure"), ("shake {N}", "shake"), ("hammer the {s} {pw} down", "hammer"),
                ("wiggle the {s} {pw} loose", "wiggle"), ("take {N} off the {s} {pw}", "off"),
                ("sort the {ns} by size", "sort"), ("lay {N} flat next to {M}", "lay"), ("wipe down {N}", "wipe"),
                ("turn {N} upside down", "turn"), ("swap the two {pw}s", "swap")]
        tmpl, verb = g.pick(opts)
        text = tmpl.format(N=Nn(s1), M=Nn(s2), s=s1, pw=pw, ns="nuts" if noun != "ring" else "rings")
        if g.chance(0.4):
            text, q = wrap_polite(g, text)
            return (text, q), None, verb
        return text, None, verb
    if kind == "impossible":
        t = int(g.rng.integers(7))
        if t == 0:
            return f"{v} {Nn(s1)} {prep} the {s2} {pw}", [f"on_peg({s1}_nut,{s2}_peg)"], None
        if t == 1:
            return f"{v} both {'rings' if noun == 'ring' else 'nuts'} {prep} the {s1} {pw}", \
                [f"on_peg({s1}_nut,{s1}_peg)", f"on_peg({s2}_nut,{s1}_peg)"], None
        if t == 2:
            return f"{v} {Nn(s1)} {prep} both {pw}s", [f"on_peg({s1}_nut,{s1}_peg)", f"on_peg({s1}_nut,{s2}_peg)"], None
        if t == 3:
            return (f"{v} {Nn(s1)} {prep} the {s2} {pw} and {Nn(s2)} {prep} the {s1} {pw}"), \
                [f"on_peg({s1}_nut,{s2}_peg)", f"on_peg({s2}_nut,{s1}_peg)"], None
        if t == 4:
            return (f"{v} {Nn(s1)} {prep} its {pw}, then move it to the {s2} {pw}"), \
                [f"on_peg({s1}_nut,{s1}_peg)", f"on_peg({s1}_nut,{s2}_peg)"], None
        if t == 5:
            return f"I want {Nn(s1)} sitting on the {s2} {pw}", [f"on_peg({s1}_nut,{s2}_peg)"], None
        return (f"{v} {Nn(s1)} {prep} the {s1} {pw} and {Nn(s2)} {prep} the {s1} {pw} too"), \
            [f"on_peg({s1}_nut,{s1}_peg)", f"on_peg({s2}_nut,{s1}_peg)"], None
    return None


# ---------------------------------------------------------------------------------------------------- empty
EMPTY = ["", " ", "...", "?", "!!!", "hello", "hi there", "thanks!", "okay", "never mind", "do nothing",
         "nothing for now, thanks", "hmm", "um", "what's the weather like today?", "how are you?",
         "good morning, robot", "stop", "wait a second", "forget it", "cancel that", "I don't know", "yes", "no",
         "please", "whatever you think is best", "lorem ipsum dolor sit amet", "123", "tell me a joke",
         "you decide", "hold on", "sorry, wrong window", "test test", "is this thing on?", "go", "ok thanks",
         "nothing", "hmm, let me think", "sounds good", "just wait there"]


def empty_negative(g: Gen, vocab: TaskVocabulary, used: set[str]):
    banned = vocab.words() - {"one", "of", "up"}
    cands = [e for e in EMPTY if not (set(norm_key(e).split()) & banned) and e not in used]
    e = g.pick(cands)
    used.add(e)
    if e.strip() and e[0].isalpha() and g.chance(0.5):
        return finish(g, e, e.endswith("?"))
    return e


# ---------------------------------------------------------------------------------------------------- driver
POSITIVE = {"stack_three": stack_positive, "pick_place_bins": bins_positive, "nut_assembly": nut_positive}
NEGATIVE = {"stack_three": stack_negative, "pick_place_bins": bins_negative, "nut_assembly": nut_negative}


def build(task: str, seed: int) -> list[dict]:
    vocab = TaskVocabulary.load(ROOT / "sim" / "tasks" / task / "vocabulary.yaml")
    g = Gen(seed)
    words = vocab.words()
    rows: list[dict] = []
    seen: set[str] = set()
    i = 0
    while sum(r["kind"] == "paraphrase" for r in rows) < N_POSITIVE:
        i += 1
        if i > 40 * N_POSITIVE:
            raise RuntimeError(f"{task}: could not reach {N_POSITIVE} distinct positives")
        text, goals, ordered = POSITIVE[task](g, i)
        why = vocab.impossibility(goals)
        if why is not None:
            raise AssertionError(f"{task}: positive {text!r} -> {goals} is impossible: {why}")
        if vocab.ordered_by_support and tuple(goals) != vocab.canonical_order(goals):
            raise AssertionError(f"{task}: goals {goals} not in canonical order")
        key = norm_key(text)
        if key in seen:
            continue
        seen.add(key)
        rows.append({"task": task, "instruction": text, "goals": list(goals), "ordered": bool(ordered),
                     "kind": "paraphrase", "source": SOURCE})
    used_empty: set[str] = set()
    for kind, target in NEG_TARGET.items():
        n, tries = 0, 0
        while n < target:
            tries += 1
            if tries > 200 * target:
                raise RuntimeError(f"{task}: could not reach {target} distinct {kind} negatives")
            if kind == "empty":
                text = empty_negative(g, vocab, used_empty)
                key = "\x00" + text  # empties differ by whitespace/punctuation alone
            else:
                out = NEGATIVE[task](g, kind)
                if out is None:
                    continue
                text, goals, marker = out
                q = False
                if isinstance(text, tuple):
                    text, q = text
                text = finish(g, text, q)
                if goals is not None and vocab.impossibility(goals) is None:
                    raise AssertionError(f"{task}: impossible negative {text!r} -> {goals} passes the rules")
                if marker is not None and marker in words:
                    raise AssertionError(f"{task}: {kind} marker {marker!r} is a vocabulary word ({text!r})")
                key = norm_key(text)
            if key in seen:
                continue
            seen.add(key)
            rows.append({"task": task, "instruction": text, "expect": "refuse", "kind": kind, "source": SOURCE})
            n += 1
    order = g.rng.permutation(len(rows))
    return [rows[j] for j in order]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "data" / "grounding_validation")
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for k, task in enumerate(TASKS):
        rows = build(task, args.seed + 1000 * k)
        path = args.out / f"{task}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        counts = Counter(r["kind"] for r in rows)
        pos = [r for r in rows if r["kind"] == "paraphrase"]
        n_ord = sum(r["ordered"] for r in pos)
        n_goals = Counter(len(r["goals"]) for r in pos)
        print(f"{task}: {len(rows)} lines -> {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        for kind in ("paraphrase", *NEG_TARGET):
            print(f"  {kind:18s} {counts.get(kind, 0)}")
        print(f"  positives ordered={n_ord} unordered={len(pos) - n_ord} by #goals={dict(sorted(n_goals.items()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
