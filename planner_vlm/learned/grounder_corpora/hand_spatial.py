"""Instruction phrasings of one independent hand ("spatial") for training the learned grounder.

Implements the :class:`planner_vlm.learned.grounder_train.Phrasing` protocol with module-level functions
(``sample_goals``, ``phrase``, ``negatives``). The voice is a lab researcher's: precise spatial descriptions of the
final arrangement (bottom/middle/top, under/beneath, "with X resting on it", bottom-up and top-down lists), temporal
constraints (before/after/once/only when/but first/starting with/finishing with) and counts ("both", "all three").

Task-generic: every object, place and verb word comes from the :class:`TaskVocabulary`; the code branches only on
the vocabulary's structure (``ordered_by_support``, ``own_place``, the goal template's arity and predicate name).
Pure Python + numpy, deterministic given the rng.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from tandem.core.vocabulary import TaskVocabulary, parse_goal

# ---------------------------------------------------------------------------------------------- English tables
_NUM = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
_ORD = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
_IRREGULAR = {  # base -> (gerund, past participle)
    "put": ("putting", "put"), "set": ("setting", "set"), "stand": ("standing", "stood"),
    "bring": ("bringing", "brought"), "slide": ("sliding", "slid"), "fit": ("fitting", "fitted"),
    "drop": ("dropping", "dropped"), "build": ("building", "built"), "tidy": ("tidying", "tidied"),
    "stow": ("stowing", "stowed"),
}
#: Verbs that take "VERB X <prep> Y" naturally, and the prepositions each takes for "on"-kind and "in"-kind goals.
_ON_PREPS = {
    "stack": ("on", "onto", "on top of", "atop"), "put": ("on", "onto", "on top of"),
    "place": ("on", "onto", "on top of"), "set": ("on", "onto", "on top of"), "move": ("onto", "on top of"),
    "pile": ("on", "onto", "on top of"), "stand": ("on", "on top of"), "slide": ("onto", "over", "down over"),
    "fit": ("onto", "over", "on"), "thread": ("onto", "over", "on"), "drop": ("onto", "over", "down onto"),
    "mount": ("on", "onto"), "insert": ("on", "onto"),
}
_IN_PREPS = {
    "put": ("in", "into", "inside"), "place": ("in", "into", "inside"), "move": ("into", "to"),
    "drop": ("in", "into"), "sort": ("into",), "store": ("in", "inside"), "stow": ("in", "into"),
    "bring": ("to", "over to"), "return": ("to",), "insert": ("into",), "set": ("in", "inside"),
}
#: Verbs that can end a clause with "away" (container tasks with an own place).
_AWAY = ("put", "stow", "tidy", "store")
_COLLECTIVE = ("items", "objects", "things")
_FILLER_PRE = ("", "", "", "", "", "please ", "hey robot, ", "okay so ", "ok, ", "robot, ", "alright, ", "now ",
               "hi, ", "so, ")
_FILLER_POST = ("", "", "", "", "", "", " please", " for me", " carefully", " gently", " right now", " thanks",
                " if you can", ", thank you", " when you get a chance")
_POLITE = ("could you ", "can you ", "would you ", "please ", "i'd like you to ", "i want you to ", "i need you to ",
           "go ahead and ", "your job is to ", "your task: ", "kindly ", "you should ", "")

# Distractors for negatives (filtered against each vocabulary's words before use).
_OOV_COLOURS = ("purple", "yellow", "orange", "pink", "black", "white", "grey", "brown", "red", "green", "blue",
                "silver", "golden")
_OOV_SHAPES = ("triangle", "triangular", "hexagonal", "star", "oval", "octagonal", "square", "round", "pentagonal")
_OOV_OBJECTS = ("banana", "apple", "mug", "bottle", "sponge", "spoon", "cup", "hammer", "plate", "bowl", "pen",
                "marker", "towel", "egg", "lemon", "screwdriver", "book", "phone", "jar", "wrench", "tennis ball",
                "bolt", "washer", "teddy bear", "cube", "block", "nut", "milk")
_OOV_PLACES = ("shelf", "drawer", "basket", "tray", "sink", "floor", "cabinet", "crate", "bucket", "windowsill",
               "plate", "bowl", "bin", "peg", "box")
#: Verbs of skills the tasks lack (a positive text never contains one of these).
MISSING_VERBS = ("wipe", "push", "rotate", "open", "pour", "throw", "shake", "flip", "hide", "paint", "knock over",
                 "unstack", "wash", "squeeze", "spin", "roll", "kick", "crush", "fold", "polish", "twist", "unscrew",
                 "weigh", "scan", "smash", "poke", "tilt", "peel", "cut", "heat", "tap", "lick", "sniff", "bend")
_EMPTY = ("", " ", "hello", "hi", "hey robot", "thanks", "thanks, that's all", "thank you!", "do nothing",
          "never mind", "nevermind", "wait", "wait a second", "hold on", "stop", "cancel that", "nothing for now",
          "that's it, nothing else", "ok", "okay.", "hmm", "good morning", "are you there?", "what can you do?",
          "nothing needs to move", "leave everything as it is", "don't move anything", "leave everything alone",
          "just stay put", "all good, no task", "forget it", "idle for now", "sorry, wrong window", "test",
          "keep everything where it is", "no changes please", "standby", "yes", "no")


def _pick(rng: np.random.Generator, seq: Sequence, p: Sequence[float] | None = None):
    if p is not None:
        w = np.asarray(p, dtype=float)
        return seq[int(rng.choice(len(seq), p=w / w.sum()))]
    return seq[int(rng.integers(len(seq)))]


def _gerund(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb][0]
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    return verb + "ing"


def _participle(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb][1]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y"):
        return verb[:-1] + "ied"
    return verb + "ed"


def _plural(noun: str) -> str:
    if noun.endswith(("x", "s", "sh", "ch")):
        return noun + "es"
    return noun + "s"


def _sing(plural: str) -> str:
    """"cubes" -> "cube", "boxes" -> "box", "things" -> "item" (never "every thing")."""
    if plural == "things":
        return "item"
    return plural[:-2] if plural.endswith(("xes", "shes", "ches", "sses")) else plural[:-1]


def _all_n(total: int) -> str:
    return "both" if total == 2 else f"all {_NUM.get(total, total)}"


def _join(items: Sequence[str], rng: np.random.Generator, conj: str = "and") -> str:
    items = list(items)
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    oxford = "," if rng.random() < 0.4 else ""
    return ", ".join(items[:-1]) + f"{oxford} {conj} " + items[-1]


# ---------------------------------------------------------------------------------------------- vocabulary view
class _View:
    """What this hand derives from a vocabulary: goal skill, arity, nouns, verbs."""

    def __init__(self, vocab: TaskVocabulary):
        self.v = vocab
        self.skill = vocab.goal_skills[0]
        template = vocab.skills[self.skill]
        self.pred = template.split("(", 1)[0]
        self.n_args = len(set(re.findall(r"\{(\d+)\}", template)))
        self.kind = "in" if self.pred.lower().startswith("in") else "on"
        self.objects = list(vocab.objects)
        self.stacking = bool(vocab.ordered_by_support)
        words = vocab.skill_words.get(self.skill, ())
        self.words = set(vocab.words())
        preps = _IN_PREPS if self.kind == "in" else _ON_PREPS
        self.verbs = [w for w in words if w in preps] or ["put"]
        self.away_verbs = [w for w in words if w in _AWAY]
        self.pick_words = [w for s, ws in vocab.skill_words.items() if s not in vocab.goal_skills for w in ws
                           if w in ("pick up", "grab", "take", "lift")]
        self.obj_class = self._class_nouns(vocab.objects.values())
        self.place_class = self._class_nouns(vocab.places.values()) if vocab.places else []
        self.all_words = vocab.skill_words.get(self.skill, ())

    @staticmethod
    def _class_nouns(word_lists) -> list[str]:
        sets = []
        for ws in word_lists:
            sets.append({w.split()[-1] for w in ws if len(w.split()) > 1})
        common = set.intersection(*sets) if sets else set()
        common.discard("one")
        return sorted(common)

    def preps(self, verb: str) -> tuple[str, ...]:
        table = _IN_PREPS if self.kind == "in" else _ON_PREPS
        return table.get(verb, ("into",) if self.kind == "in" else ("onto",))

    def place_of(self, goal: str) -> tuple[str, str | None]:
        _, args = parse_goal(goal)
        obj = args[0]
        if len(args) >= 2:
            return obj, args[1]
        return obj, self.v.own_place.get(obj)

    # ------------------------------------------------------------------ naming
    def name(self, obj: str, rng: np.random.Generator, style: str = "mix") -> str:
        words = list(self.v.objects[obj])
        if style == "bare" and rng.random() < 0.8:
            short = [w for w in words if len(w.split()) == 1]
            if short:
                return _pick(rng, short)
        w = _pick(rng, words, [3.0 if len(x.split()) > 1 else 1.0 for x in words])
        r = rng.random()
        if style == "quote" and r < 0.7:
            return f'the "{w}"'
        if len(w.split()) == 1 and self.stacking and r < 0.35:
            return w
        return f"the {w}"

    def place_name(self, place: str, rng: np.random.Generator) -> str:
        return "the " + _pick(rng, list(self.v.places[place]))

    def cls(self, rng: np.random.Generator, plural: bool = True) -> str:
        if self.obj_class and rng.random() < 0.75:
            c = _pick(rng, self.obj_class)
        else:
            c = _pick(rng, _COLLECTIVE)[:-1]
        return _plural(c) if plural else c

    def pclass(self, rng: np.random.Generator) -> str:
        return _pick(rng, self.place_class) if self.place_class else "spot"

    def own_pp(self, obj: str, place: str | None, rng: np.random.Generator, plural: bool = False,
               prep: str | None = None, explicit_ok: bool = True) -> str:
        """Prepositional phrase for the object's place: "in its bin", "onto the square peg", "where it belongs"."""
        prep = prep or _pick(rng, ("in", "into") if self.kind == "in" else ("on", "onto"))
        relative_ok = place is not None and self.v.own_place.get(obj) == place
        if place is not None and explicit_ok and (not relative_ok or rng.random() < 0.35) and not plural:
            return f"{prep} {self.place_name(place, rng)}"
        if not relative_ok:
            return f"{prep} {self.place_name(place, rng)}" if place else ""
        pc = self.pclass(rng)
        if plural:
            if rng.random() < 0.1:
                return "where they belong"
            return f"{prep} " + _pick(rng, (f"their {_plural(pc)}", f"their own {_plural(pc)}",
                                              f"the matching {_plural(pc)}", f"the correct {_plural(pc)}",
                                              f"the right {_plural(pc)}", f"their matching {_plural(pc)}"))
        if rng.random() < 0.08:
            return "where it belongs"
        return f"{prep} " + _pick(rng, (f"its {pc}", f"its own {pc}", f"the matching {pc}", f"the correct {pc}",
                                        f"the right {pc}", f"its {pc}", f"its matching {pc}"))


_ASKS = ("could you", "can you", "would you", "will you", "is it possible")


def _pre(rng: np.random.Generator, body: str, view: _View) -> tuple[str, bool]:
    """A leading filler that fits ``body``, and whether the whole text is a question."""
    q = body.startswith(_ASKS)
    pre = _pick(rng, _FILLER_PRE)
    if pre == "please " and (q or body.startswith(_POLITE[3:12]) or not t_verbal(body, view)):
        pre = ""
    return pre, q


def _style(text: str, rng: np.random.Generator, question: bool = False) -> str:
    text = " ".join(text.split())
    if text.count("please") > 1:  # one "please" is enough
        head, _, rest = text.partition("please")
        text = " ".join((head + "please" + rest.replace(" please", "")).split())
    text = text.replace(" ,", ",")
    if not question:
        text = text.rstrip(".!?")
    end = "?" if question else _pick(rng, (".", ".", "", "", "!", ".", ""))
    if question and rng.random() < 0.2:
        end = ""
    text = text.rstrip(" ,;") + end
    r = rng.random()
    if r < 0.55:
        return text[:1].upper() + text[1:] if rng.random() < 0.5 else text
    if r < 0.62:
        return text.upper()
    if r < 0.68:
        return " ".join(w[:1].upper() + w[1:] for w in text.split(" "))
    return text.lower() if rng.random() < 0.6 else text[:1].upper() + text[1:]


# ---------------------------------------------------------------------------------------------- sample_goals
def sample_goals(vocab: TaskVocabulary, rng: np.random.Generator) -> tuple[str, ...]:
    """A possible goal list: chains for stacking vocabularies (bottom first), else a subset of objects, each sent to
    its own place, in the order to achieve them."""
    view = _View(vocab)
    objs = list(vocab.objects)
    for _ in range(100):
        if view.stacking:
            perm = [objs[i] for i in rng.permutation(len(objs))]
            # one chain of 2..n objects, or (with 4+ objects) several chains
            if len(objs) >= 4 and rng.random() < 0.3:
                cut = int(rng.integers(2, len(objs) - 1))
                chains = [perm[:cut], perm[cut:int(rng.integers(cut + 2, len(objs) + 1))]]
            else:
                chains = [perm[: int(rng.integers(2, len(objs) + 1))]]
            goals = [vocab.goal(view.skill, (c[i + 1], c[i])) for c in chains for i in range(len(c) - 1)]
            goals = list(vocab.canonical_order(goals))
        else:
            k = int(rng.integers(1, len(objs) + 1)) if rng.random() < 0.7 else len(objs)
            chosen = [objs[i] for i in rng.permutation(len(objs))[:k]]
            goals = []
            places = list(vocab.places)
            for o in chosen:
                place = vocab.own_place.get(o) or (_pick(rng, places) if places else None)
                goals.append(vocab.goal(view.skill, (o, place) if place else (o,)))
        if vocab.impossibility(goals) is None:
            return tuple(goals)
    raise RuntimeError(f"could not sample a possible goal list for {vocab.task!r}")


# ---------------------------------------------------------------------------------------------- stacking phrasing
def _chains(view: _View, goals: Sequence[str]) -> list[list[str]]:
    support = {}
    for g in goals:
        _, a = parse_goal(g)
        support[a[0]] = a[1]
    tops = set(support) - set(support.values())
    chains = []
    for top in sorted(tops, key=lambda t: [parse_goal(g)[1][0] for g in goals].index(t)):
        c = [top]
        while c[-1] in support:
            c.append(support[c[-1]])
        chains.append(c[::-1])
    chains.sort(key=lambda c: min(i for i, g in enumerate(goals) if parse_goal(g)[1][1] == c[0]))
    return chains


def _leftover_clause(view: _View, rest: list[str], rng: np.random.Generator, named_all_but: bool) -> str:
    if not rest:
        return ""
    names = [view.name(o, rng) for o in rest]
    who = _join(names, rng)
    if named_all_but and len(rest) == 1 and rng.random() < 0.3:
        who = _pick(rng, ("the other one", "the third one", "the remaining one", "the last one")) \
            if view.stacking else "the other one"
    pl = len(rest) > 1 or False
    options = [f"leave {who} alone", f"don't touch {who}", f"do not move {who}", f"ignore {who}",
               f"keep {who} where {'they are' if pl else 'it is'}",
               f"{who} {'stay' if pl else 'stays'} where {'they are' if pl else 'it is'}",
               f"{who} should stay put", f"{who} can stay where {'they are' if pl else 'it is'}",
               f"leave {who} where {'they are' if pl else 'it is'}", f"no need to touch {who}"]
    return _pick(rng, options)


def _tail(view: _View, rest: list[str], rng: np.random.Generator, named_all_but: bool = True) -> str:
    """Optional exclusion / closing remark that adds no goal."""
    r = rng.random()
    if rest and r < 0.4:
        sep = _pick(rng, ("; ", ". ", " - ", "; ", ". "))
        return sep + _leftover_clause(view, rest, rng, named_all_but)
    if r < 0.5:
        return _pick(rng, (", that's all", "; nothing else", ". that's all", ", nothing else", " and that's it",
                           "; leave everything else as it is" if rest else ", that's it", ". nothing more"))
    return ""


def _stack_phrase(view: _View, goals: Sequence[str], rng: np.random.Generator) -> str:
    chains = _chains(view, goals)
    used = {o for c in chains for o in c}
    rest = [o for o in view.objects if o not in used]
    style = _pick(rng, ("mix", "mix", "mix", "bare", "quote"), [4, 4, 4, 3, 1])

    def n(o: str) -> str:
        return view.name(o, rng, style)

    if len(chains) > 1:
        parts = [_chain_simple(view, c, n, rng) for c in chains]
        body = _join(parts, rng) if rng.random() < 0.5 else "; ".join(parts)
        return _style(_pick(rng, _FILLER_PRE) + body + _tail(view, rest, rng), rng)
    c = chains[0]
    full = not rest
    if len(c) == 2:
        body, q = _stack_two(view, c, n, rng)
    elif len(c) == 3:
        body, q = _stack_three(view, c, n, rng, full)
    else:
        body, q = _stack_long(view, c, n, rng, full), False
    pre, q2 = _pre(rng, body, view)
    q = q or q2
    post = _pick(rng, _FILLER_POST) if not q and t_verbal(body, view) and rng.random() < 0.25 else ""
    tail = "" if q else _tail(view, rest, rng)
    if tail and tail.lstrip(";,.- ").removeprefix("and ") in body:
        tail = ""
    return _style(pre + body + post + tail, rng, question=q)


def t_verbal(body: str, view: _View) -> bool:
    """Whether ``body`` is a command that opens with a verb (so "gently" / "for me" may follow it)."""
    first = body.split(" ", 1)[0]
    return first in view.all_words or body.startswith(tuple(p for p in _POLITE if p))


def _verb(view: _View, rng: np.random.Generator) -> str:
    return _pick(rng, view.verbs)


def _on(view: _View, verb: str, rng: np.random.Generator) -> str:
    return _pick(rng, view.preps(verb))


def _chain_simple(view: _View, c: list[str], n, rng: np.random.Generator) -> str:
    v = _verb(view, rng)
    steps = [f"{n(c[i + 1])} {_on(view, v, rng)} {n(c[i])}" for i in range(len(c) - 1)]
    return f"{v} " + _join(steps, rng)


def _tower_noun(view: _View, rng: np.random.Generator) -> str:
    nouns = [w for w in ("tower", "stack", "pile") if w in view.words] or ["stack"]
    return _pick(rng, nouns)


def _make(view: _View, rng: np.random.Generator) -> str:
    """"build a" / "make a" / "stack up a" opener verb."""
    opts = ["make"]
    if "build" in view.words:
        opts += ["build", "build"]
    return _pick(rng, opts)


def _stack_two(view: _View, c: list[str], n, rng: np.random.Generator) -> tuple[str, bool]:
    a, b = c
    v = _verb(view, rng)
    on = _on(view, v, rng)
    cl = view.cls(rng, plural=False)
    under = _pick(rng, ("under", "beneath", "below", "underneath"))
    pol = _pick(rng, _POLITE)
    t = int(rng.integers(17))
    if t == 0:
        return f"{pol}{v} {n(b)} {on} {n(a)}", False
    if t == 1:
        return f"{_pick(rng, ('can you', 'could you', 'would you', 'will you'))} {v} {n(b)} {on} {n(a)}", True
    if t == 2:
        return _pick(rng, (f"i want {n(b)} to end up {on} {n(a)}", f"i'd like {n(b)} {on} {n(a)}",
                           f"the goal is {n(b)} {_participle(v)} {on} {n(a)}",
                           f"make it so that {n(b)} is sitting {on if on != 'onto' else 'on'} {n(a)}",
                           f"when you're done, {n(b)} should be on {n(a)}",
                           f"{n(b)} should end up on top of {n(a)}",
                           f"i need {n(b)} sitting on top of {n(a)}")), False
    if t == 3:
        return _pick(rng, (f"{n(a)} should end up {under} {n(b)}", f"i want {n(a)} {under} {n(b)}",
                           f"make it so {n(a)} is directly {under} {n(b)}",
                           f"the end state: {n(a)} {under} {n(b)}")), False
    if t == 4:
        return f"{pol}{v} {n(b)} {on} {n(a)}", False
    if t == 5:
        return _pick(rng, (f"{n(a)} at the bottom, {n(b)} on top", f"{n(a)} at the base and {n(b)} on top of it",
                           f"bottom: {n(a)}; top: {n(b)}", f"{n(b)} on top, {n(a)} underneath",
                           f"base {n(a)}, then {n(b)} on top")), False
    if t == 6:
        return _pick(rng, (f"from the bottom up: {n(a)}, {n(b)}", f"bottom to top: {n(a)}, {n(b)}",
                           f"top to bottom: {n(b)}, {n(a)}", f"top-down: {n(b)} then {n(a)}",
                           f"bottom-up: {n(a)} then {n(b)}")), False
    if t == 7:
        noun = _tower_noun(view, rng)
        return _pick(rng, (f"{_make(view, rng)} a two-{cl} {noun} with {n(b)} on {n(a)}",
                           f"{_make(view, rng)} a {noun} of two: {n(a)} at the base, {n(b)} on top",
                           f"{_make(view, rng)} a small {noun}, {n(a)} on the bottom and {n(b)} above it",
                           f"{_make(view, rng)} a {noun} of {n(a)} and {n(b)}, with {n(b)} on top")), False
    if t == 8:
        pick = _pick(rng, view.pick_words) if view.pick_words else "take"
        return _pick(rng, (f"{pick} {n(b)} and {v} it {on} {n(a)}",
                           f"{pick} {n(b)}, then {v} it {on} {n(a)}")), False
    if t == 9:
        return _pick(rng, (f"{n(a)} should have {n(b)} resting on it", f"i want {n(a)} with {n(b)} resting on it",
                           f"leave {n(a)} where it is and {v} {n(b)} {on} it",
                           f"{n(a)} stays down with {n(b)} resting on it")), False
    if t == 10:
        return _pick(rng, (f"{v} {n(a)} {under} {n(b)}", f"{n(a)} goes {under} {n(b)}",
                           f"{n(b)} goes {on} {n(a)}", f"{n(b)} {on} {n(a)}")), False
    if t == 11:
        return f"{v} {n(b)} {on} {n(a)}, {_pick(rng, ('just that', 'only that', 'nothing more', 'that one move'))}", False
    if t == 12:
        return f"{pol}{v} {n(b)} {_pick(rng, ('on top of', 'above', 'onto'))} {n(a)}", False
    if t == 13:
        cl2 = view.cls(rng)
        return _pick(rng, (f"{v} just {n(b)} {on} {n(a)}", f"only {v} {n(b)} {on} {n(a)}",
                           f"of the {cl2}, only move {n(b)}: {on} {n(a)}")), False
    if t == 14:
        return f"{_pick(rng, ('is it possible to', 'could you please', 'can you'))} {v} {n(b)} {on} {n(a)}", True
    if t == 15:
        return f"{v} {n(b)} {on} {n(a)} {_pick(rng, ('gently', 'carefully', 'slowly', 'nice and straight'))}", False
    return f"{n(b)} {on} {n(a)}, {_pick(rng, ('please', 'thanks', 'go', 'when ready'))}", False


def _stack_three(view: _View, c: list[str], n, rng: np.random.Generator, full: bool) -> tuple[str, bool]:
    a, b, top = c
    v = _verb(view, rng)
    on = _on(view, v, rng)
    v2 = _verb(view, rng)
    on2 = _on(view, v2, rng)
    under = _pick(rng, ("under", "beneath", "below", "underneath"))
    pol = _pick(rng, _POLITE)
    cl = view.cls(rng)
    all3 = f"all {_NUM.get(len(c), len(c))} {cl}" if full else f"{n(a)}, {n(b)} and {n(top)}"
    the3 = f"the {_NUM.get(len(c), len(c))} {cl}" if full else f"{n(a)}, {n(b)} and {n(top)}"
    then = _pick(rng, ("then", "and then", "after that", "next", "once that's done,", "afterwards", "and after that"))
    it_top = _pick(rng, ("on top of it", "on it", "on top of that one", "on top", f"onto {n(b)}"))
    t = int(rng.integers(24))
    if t == 0:
        return f"{pol}{v} {n(b)} {on} {n(a)}, {then} {v2} {n(top)} {on2} {n(b)}", False
    if t == 1:
        return f"{pol}{v} {n(b)} {on} {n(a)} and {n(top)} {on2 if v2 == v else on} {n(b)}", False
    if t == 2:
        return f"{pol}{v} {n(top)} {on} {n(b)} and {n(b)} {on} {n(a)}", False
    if t == 3:
        mid = _pick(rng, (f"{n(b)} in the middle", f"{n(b)} between them", f"{n(b)} in between",
                          f"{n(b)} second"))
        return _pick(rng, (f"{n(a)} at the bottom, {mid}, {n(top)} on top",
                           f"{n(a)} at the base, {mid} and {n(top)} at the top",
                           f"{pol}stack {the3}: {n(a)} at the bottom, {mid}, {n(top)} on top"
                           if "stack" in view.words else f"{n(a)} on the bottom, {mid}, {n(top)} up top")), False
    if t == 4:
        return _pick(rng, (f"{n(b)} between {n(a)} and {n(top)}, with {n(a)} at the bottom",
                           f"{n(b)} sandwiched between {n(a)} below and {n(top)} above",
                           f"{n(top)} on top, {n(a)} at the base, {n(b)} between them")), False
    if t == 5:
        return _pick(rng, (f"from the bottom up: {n(a)}, {n(b)}, {n(top)}",
                           f"bottom to top: {n(a)}, {n(b)}, {n(top)}",
                           f"bottom-up order: {n(a)}, then {n(b)}, then {n(top)}",
                           f"{_make(view, rng)} a {_tower_noun(view, rng)}, bottom up: {n(a)}, {n(b)}, {n(top)}")), False
    if t == 6:
        return _pick(rng, (f"top to bottom: {n(top)}, {n(b)}, {n(a)}",
                           f"from the top down: {n(top)}, {n(b)}, {n(a)}",
                           f"{_make(view, rng)} a {_tower_noun(view, rng)} reading top to bottom {n(top)}, "
                           f"{n(b)}, {n(a)}")), False
    if t == 7:
        noun = _tower_noun(view, rng)
        return _pick(rng, (f"{_make(view, rng)} a {noun} of {the3} with {n(a)} at the base, then {n(b)}, then "
                           f"{n(top)}",
                           f"{_make(view, rng)} a {noun} out of {all3}: {n(a)}, {n(b)}, {n(top)} from the bottom",
                           f"{_make(view, rng)} a three-level {noun}: {n(a)} bottom, {n(b)} middle, {n(top)} top",
                           f"{pol}{_make(view, rng)} a {noun} with {n(top)} on top of {n(b)} on top of {n(a)}")), False
    if t == 8:
        return _pick(rng, (f"{n(top)} on top of {n(b)}, which sits on {n(a)}",
                           f"{v} {n(top)} {on} {n(b)}, which should itself be on {n(a)}",
                           f"{n(top)} {on} {n(b)} {on2} {n(a)}")), False
    if t == 9:
        return _pick(rng, (f"{n(a)} with {n(b)} resting on it and {n(top)} resting on {n(b)}",
                           f"take {n(a)} as the base, {v} {n(b)} {on} it and {n(top)} {on} {n(b)}",
                           f"leave {n(a)} where it is, {v} {n(b)} {on} it, then {n(top)} on top")), False
    if t == 10:
        fin = _pick(rng, ("finally", "lastly", "and finally", "to finish,"))
        return f"first {v} {n(b)} {on} {n(a)}; {fin} {v2} {n(top)} {on2} {n(b)}", False
    if t == 11:
        fmt = _pick(rng, ("1) {} 2) {}", "1. {}; 2. {}", "step one: {}. step two: {}", "(1) {} (2) {}",
                          "step 1: {}, step 2: {}", "1 - {}; 2 - {}"))
        return fmt.format(f"{v} {n(b)} {on} {n(a)}", f"{v2} {n(top)} {on2} {n(b)}"), False
    if t == 12:
        return _pick(rng, (f"before {_gerund(v2)} {n(top)} {on2} {n(b)}, {v} {n(b)} {on} {n(a)}",
                           f"{v} {n(b)} {on} {n(a)} before {_gerund(v2)} {n(top)} {on2} it",
                           f"after {_gerund(v)} {n(b)} {on} {n(a)}, {v2} {n(top)} {on2} {n(b)}",
                           f"{v2} {n(top)} {on2} {n(b)} after {_gerund(v)} {n(b)} {on} {n(a)}")), False
    if t == 13:
        return f"{v2} {n(top)} {on2} {n(b)}, but first {v} {n(b)} {on} {n(a)}", False
    if t == 14:
        return _pick(rng, (f"only once {n(b)} is on {n(a)}, {v2} {n(top)} {on2} it",
                           f"{v} {n(b)} {on} {n(a)}; only when it's there, {v2} {n(top)} {on2} {n(b)}",
                           f"once {n(b)} is sitting on {n(a)}, {v2} {n(top)} {on2} {n(b)}")), False
    if t == 15:
        return _pick(rng, (f"starting with {n(a)} at the bottom, {v} {n(b)} {on} it and finish with {n(top)} on top",
                           f"start with {n(a)} as the base, then {n(b)}, finishing with {n(top)} at the top",
                           f"starting from {n(a)}, stack {n(b)} and then {n(top)}, so {n(top)} ends up highest"
                           if "stack" in view.words else
                           f"starting with {n(a)} at the base, {v} {n(b)} {on} it, finishing with {n(top)} on top")
                ), False
    if t == 16:
        return _pick(rng, (f"i want {n(a)} {under} {n(b)} and {n(b)} {under} {n(top)}",
                           f"{n(a)} {under} {n(b)}, {n(b)} {under} {n(top)}",
                           f"{n(a)} should end up {under} {n(b)}, which should end up {under} {n(top)}")), False
    if t == 17 and full:
        other = _pick(rng, ("the other one", "the remaining one", "the last one", f"the last {view.cls(rng, False)}",
                            f"the remaining {view.cls(rng, False)}", "the third one"))
        return _pick(rng, (f"{v} {n(b)} {on} {n(a)}, {then} {other} on top",
                           f"{v} {n(b)} {on} {n(a)} and put {other} on top of both"
                           if "put" in view.words else f"{v} {n(b)} {on} {n(a)}, {then} {other} on top of it")), False
    if t == 17 or t == 18:
        return (f"{_pick(rng, ('can you', 'could you', 'would you'))} {v} {n(b)} {on} {n(a)} and then "
                f"{n(top)} {on} {n(b)}"), True
    if t == 19:
        return _pick(rng, (f"the goal is a {_tower_noun(view, rng)}: {n(top)} on {n(b)}, {n(b)} on {n(a)}",
                           f"make it so that {n(top)} is on {n(b)} and {n(b)} is on {n(a)}",
                           f"when you're done, {n(a)} should be at the bottom with {n(b)} on it and {n(top)} on "
                           f"top",
                           f"i'd like {n(b)} on {n(a)} and {n(top)} on {n(b)}")), False
    if t == 20:
        return _pick(rng, (f"{_ORD[0]} {n(b)} {on} {n(a)}, {_ORD[1]} {n(top)} {on} {n(b)}",
                           f"the first move is {n(b)} {on} {n(a)}, the second is {n(top)} {on2} {n(b)}")), False
    if t == 21 and full:
        return _pick(rng, (f"stack {all3} with {n(a)} at the bottom and {n(top)} on top"
                           if "stack" in view.words else f"{v} {all3} in a column, {n(a)} lowest and {n(top)} highest",
                           f"{_make(view, rng)} a {_tower_noun(view, rng)} of {all3}, {n(top)} on top, "
                           f"{n(a)} at the base")), False
    if t == 22:
        return (f"{v} {n(b)} {on} {n(a)}. {_pick(rng, ('then', 'next', 'after that'))} {v2} {n(top)} "
                f"{_pick(rng, ('on top of it', 'on top of that', 'on it', 'on top'))}"), False
    return f"{pol}{v} {n(b)} {on} {n(a)}, {then} {n(top)} {it_top}", False


def _stack_long(view: _View, c: list[str], n, rng: np.random.Generator, full: bool) -> str:
    names = [n(o) for o in c]
    r = rng.random()
    if r < 0.3:
        return "from the bottom up: " + ", ".join(names)
    if r < 0.5:
        return "top to bottom: " + ", ".join(names[::-1])
    v = _verb(view, rng)
    steps = [f"{v} {names[i + 1]} {_on(view, v, rng)} {names[i]}" for i in range(len(c) - 1)]
    return ", then ".join(steps)


# ---------------------------------------------------------------------------------------------- place phrasing
def _place_clause(view: _View, obj: str, place: str | None, rng: np.random.Generator, n,
                  verb: str | None = None, allow_away: bool = True) -> str:
    """"put the milk in its bin", "slide the round nut onto the round peg", "put the milk away"."""
    own = place is not None and view.v.own_place.get(obj) == place
    r = rng.random()
    if own and allow_away and view.kind == "in" and r < 0.15:
        if "tidy" in view.words and rng.random() < 0.3:
            return f"tidy {n(obj)} away"
        if "sort" in view.words and rng.random() < 0.3:
            return f"sort {n(obj)}"
        if view.away_verbs:
            return f"{_pick(rng, [w for w in view.away_verbs if w != 'tidy'] or ['put'])} {n(obj)} away"
    v = verb or _verb(view, rng)
    prep = _pick(rng, view.preps(v))
    if place is None:
        return f"{v} {n(obj)}"
    if prep in ("to", "over to") and own and rng.random() < 0.5:
        return f"{v} {n(obj)} back to its {view.pclass(rng)}" if v == "return" else f"{v} {n(obj)} {prep} its " \
            f"{view.pclass(rng)}"
    return f"{v} {n(obj)} {view.own_pp(obj, place, rng, prep=prep)}"


def _place_phrase(view: _View, goals: Sequence[str], rng: np.random.Generator) -> tuple[str, bool]:
    pairs = [view.place_of(g) for g in goals]
    objs = [o for o, _ in pairs]
    rest = [o for o in view.objects if o not in objs]
    style = _pick(rng, ("mix", "mix", "quote"), [5, 5, 1])
    all_own = all(p is not None and view.v.own_place.get(o) == p for o, p in pairs)

    def n(o: str) -> str:
        return view.name(o, rng, style)

    k = len(pairs)
    ordered_mode = k >= 2 and rng.random() < 0.42
    if ordered_mode:
        body, q = _ordered_places(view, pairs, rng, n), False
    else:
        body, q = _unordered_places(view, pairs, rest, rng, n, all_own)
    pre, q2 = _pre(rng, body, view)
    q = q or q2
    post = _pick(rng, _FILLER_POST) if not q and t_verbal(body, view) and rng.random() < 0.2 else ""
    tail = "" if q else _tail(view, rest, rng, named_all_but=False)
    if tail and tail.lstrip(";,.- ").removeprefix("and ") in body:
        tail = ""
    return _style(pre + body + post + tail, rng, question=q), ordered_mode


def _ordered_places(view: _View, pairs, rng: np.random.Generator, n) -> str:
    k = len(pairs)
    clauses = [_place_clause(view, o, p, rng, n) for o, p in pairs]
    t = int(rng.integers(11))
    if t == 0:
        conns = [_pick(rng, ("then", "and then", "after that", "next", "once that's done,", "afterwards"))
                 for _ in range(k - 1)]
        out = clauses[0]
        for c, cl in zip(conns, clauses[1:]):
            out += f"{_pick(rng, (', ', '; ', '. '))}{c} {cl}"
        return out
    if t == 1:
        mids = [_pick(rng, ("then", "next", "after that")) for _ in range(k - 2)]
        out = f"first {clauses[0]}"
        for m, cl in zip(mids, clauses[1:-1]):
            out += f", {m} {cl}"
        return out + f", {_pick(rng, ('finally', 'and finally', 'lastly', 'and last'))} {clauses[-1]}"
    if t == 2:
        fmt = _pick(rng, ("{i}) {c}", "{i}. {c}", "step {w}: {c}", "({i}) {c}", "step {i}: {c}", "{i} - {c}"))
        sep = _pick(rng, (" ", "; ", ". ", ", "))
        return sep.join(fmt.format(i=i + 1, w=_NUM[i + 1], c=c) for i, c in enumerate(clauses))
    if t == 3 and k == 2:
        (o1, p1), (o2, p2) = pairs
        v = _verb(view, rng)
        pr = _pick(rng, view.preps(v))
        return _pick(rng, (f"{clauses[0]} before {_gerund(v)} {n(o2)} {view.own_pp(o2, p2, rng, prep=pr)}",
                           f"before {_gerund(v)} {n(o2)} {view.own_pp(o2, p2, rng, prep=pr)}, {clauses[0]}",
                           f"after {_gerund(v)} {n(o1)} {view.own_pp(o1, p1, rng, prep=pr)}, {clauses[1]}",
                           f"{clauses[1]} after {_gerund(v)} {n(o1)} {view.own_pp(o1, p1, rng, prep=pr)}",
                           f"{clauses[1]}, but first {clauses[0]}",
                           f"{clauses[1]} - but first, {clauses[0]}"))
    if t == 4 and k == 2:
        (o1, p1), (o2, p2) = pairs
        state = "in" if view.kind == "in" else "on"
        return _pick(rng, (f"{clauses[0]}; only once it's there, {clauses[1]}",
                           f"only once {n(o1)} is {state} {_pron_place(view, o1, p1, rng)}, {clauses[1]}",
                           f"{clauses[0]}, and only when that's done {clauses[1]}",
                           f"once {n(o1)} is {state} {_pron_place(view, o1, p1, rng)}, {clauses[1]}"))
    if t == 5:
        # "X first, then Y (then Z)"
        out = f"{clauses[0]} first"
        for cl in clauses[1:]:
            out += f", then {cl}"
        return out
    if t == 6:
        # starting with / finishing with, same verb and relative places
        v = _verb(view, rng)
        mid = [n(o) for o, _ in pairs[1:-1]]
        plural_pp = view.own_pp(pairs[0][0], pairs[0][1], rng, plural=True, explicit_ok=False) if all(
            view.v.own_place.get(o) == p for o, p in pairs) else ""
        if not plural_pp:
            return ", then ".join(clauses)
        s = f"{v} {_join([n(o) for o, _ in pairs], rng)} {plural_pp}, starting with {n(pairs[0][0])}"
        if k == 2:
            return s + _pick(rng, ("", f" and finishing with {n(pairs[1][0])}"))
        return s + (f", then {_join(mid, rng, 'then')}" if mid else "") + f", and finishing with {n(pairs[-1][0])}"
    if t == 7:
        out = [f"{_ORD[i]}, {c}" if rng.random() < 0.5 else f"{_ORD[i]} {c}" for i, c in enumerate(clauses)]
        return "; ".join(out)
    if t == 8 and all(view.v.own_place.get(o) == p for o, p in pairs):
        # ellipsis with relative places: "put the milk in its bin, then the bread, then the can"
        v = _verb(view, rng)
        prep = _pick(rng, view.preps(v))
        first = f"{v} {n(pairs[0][0])} {view.own_pp(pairs[0][0], pairs[0][1], rng, prep=prep, explicit_ok=False)}"
        return first + "".join(f", then {n(o)}" for o, _ in pairs[1:])
    if t == 9:
        return f"in this order: {', '.join(clauses)}"
    out = clauses[0]
    for cl in clauses[1:]:
        out += f", {_pick(rng, ('then', 'and then', 'and after that', 'next'))} {cl}"
    return out


def _pron_place(view: _View, obj: str, place: str | None, rng: np.random.Generator) -> str:
    if place is not None and view.v.own_place.get(obj) == place and rng.random() < 0.6:
        return f"its {view.pclass(rng)}"
    return view.place_name(place, rng) if place else ""


def _unordered_places(view: _View, pairs, rest, rng: np.random.Generator, n, all_own: bool) -> tuple[str, bool]:
    k = len(pairs)
    objs = [o for o, _ in pairs]
    full = not rest
    total = len(view.objects)
    pol = _pick(rng, _POLITE)
    v = _verb(view, rng)
    prep = _pick(rng, view.preps(v))
    state = "in" if view.kind == "in" else "on"

    def pp_all() -> str:
        if all_own:
            return view.own_pp(objs[0], pairs[0][1], rng, plural=k > 1, prep=prep, explicit_ok=(k == 1))
        return ""

    t = int(rng.integers(16))
    if k == 1:
        o, p = pairs[0]
        if t < 4:
            return f"{pol}{_place_clause(view, o, p, rng, n)}", False
        if t < 6:
            return f"{_pick(rng, ('can you', 'could you', 'would you', 'will you'))} " \
                   f"{_place_clause(view, o, p, rng, n)}", True
        if t < 8:
            where = view.own_pp(o, p, rng, prep=state)
            return _pick(rng, (f"i want {n(o)} to end up {where}", f"the goal is {n(o)} {where}",
                               f"make it so that {n(o)} is {where}", f"when you're done, {n(o)} should be {where}",
                               f"{n(o)} should end up {where}", f"i'd like {n(o)} {where}",
                               f"{n(o)} belongs {where}")), False
        if t < 10 and k < total:
            return _pick(rng, (f"just {_place_clause(view, o, p, rng, n)}",
                               f"only {_place_clause(view, o, p, rng, n)}",
                               f"{_place_clause(view, o, p, rng, n)}, only that one",
                               f"only {n(o)}: {v} it {view.own_pp(o, p, rng, prep=prep)}")), False
        if t < 11 and k == total - 1 and all_own:
            ex = n(rest[0])
            cl = view.cls(rng)
            if total < 3:
                return f"{v} everything except {ex} {view.own_pp(o, p, rng, prep=prep, explicit_ok=False)}", False
            return _pick(rng, (f"{v} everything except {ex} {view.own_pp(o, p, rng, prep=prep, explicit_ok=False)}",
                               f"{v} all the {cl} but {ex} {view.own_pp(o, p, rng, plural=True, prep=prep)}",
                               f"{v} all of them apart from {ex} {view.own_pp(o, p, rng, plural=True, prep=prep)}"
                               )), False
        if t < 13 and view.pick_words:
            pick = _pick(rng, view.pick_words)
            return f"{pick} {n(o)} and {v} it {view.own_pp(o, p, rng, prep=prep)}", False
        return f"{pol}{_place_clause(view, o, p, rng, n)}", False
    # k >= 2
    pp = pp_all()
    names = _join([n(o) for o in objs], rng)
    cl = view.cls(rng)
    if t < 3 or not pp:
        clauses = [_place_clause(view, o, p, rng, n) for o, p in pairs]
        if rng.random() < 0.5 and all_own:
            # verb elided in later clauses: "put the milk in its bin, the bread in its bin and ..."
            clauses = [clauses[0]] + [f"{n(o)} {view.own_pp(o, p, rng, prep=state)}" for o, p in pairs[1:]]
        joined = _join(clauses, rng) if rng.random() < 0.7 else "; ".join(clauses)
        return f"{pol}{joined}", False
    if t < 5:
        return f"{pol}{v} {names} {pp}", False
    if t == 5:
        return f"{_pick(rng, ('can you', 'could you', 'would you'))} {v} {names} {pp}", True
    if t == 6 and full:
        word = _pick(rng, (f"{_all_n(total)} {cl}", "everything", f"every {_sing(cl)}",
                           f"all the {cl}", f"each of the {cl}", _all_n(total)))
        plural = not word.startswith(("every", "each", "everything"))
        return f"{pol}{v} {word} {view.own_pp(objs[0], pairs[0][1], rng, plural=plural, prep=prep, explicit_ok=False)}", \
            False
    if t == 6 and k == total - 1:
        ex = n(rest[0])
        return _pick(rng, (f"{v} everything except {ex} {view.own_pp(objs[0], pairs[0][1], rng, prep=prep, explicit_ok=False)}",
                           f"{v} all but {ex} {view.own_pp(objs[0], pairs[0][1], rng, plural=True, prep=prep)}",
                           f"{v} all of the {cl} apart from {ex} "
                           f"{view.own_pp(objs[0], pairs[0][1], rng, plural=True, prep=prep)}",
                           f"{v} every {_sing(cl)} except {ex} "
                           f"{view.own_pp(objs[0], pairs[0][1], rng, prep=prep, explicit_ok=False)}")), False
    if t == 7 and k == 2:
        both = f"both {cl}" if full else f"both {names}"
        return _pick(rng, (f"{pol}{v} {both} {pp}", f"{v} {names}, both of them, {pp}",
                           f"i want both {names} {view.own_pp(objs[0], pairs[0][1], rng, plural=True, prep=state)}"
                           )), False
    if t == 8:
        where = view.own_pp(objs[0], pairs[0][1], rng, plural=True, prep=state)
        return _pick(rng, (f"i want {names} to end up {where}", f"the goal is {names} {where}",
                           f"make it so that {names} are {where}", f"when you're done, {names} should be {where}",
                           f"i'd like {names} {where}", f"{names} should all end up {where}"
                           if k > 2 else f"{names} should both end up {where}")), False
    if t == 9 and view.pick_words:
        pick = _pick(rng, view.pick_words)
        return f"{pick} {names} and {v} them {pp}", False
    if t == 10 and view.kind == "in" and view.away_verbs:
        av = _pick(rng, view.away_verbs)
        if av == "tidy":
            return f"tidy up {names}", False
        return _pick(rng, (f"{av} {names} away", f"{av} away {names}")), False
    if t == 11 and "sort" in view.words:
        return f"sort {names}{_pick(rng, ('', ' ' + pp))}", False
    if t == 12 and rest:
        return _pick(rng, (f"only {v} {names} {pp}", f"just {names}: {v} them {pp}",
                           f"{v} only {names} {pp}")), False
    if t == 13:
        first = objs[0]
        rest_named = _join([n(o) for o in objs[1:]], rng)
        return f"{v} {n(first)} {view.own_pp(first, pairs[0][1], rng, prep=prep, explicit_ok=False)}, " \
               f"and {rest_named} too", False
    if t == 14 and full:
        return _pick(rng, (f"{v} each of them {view.own_pp(objs[0], pairs[0][1], rng, prep=prep, explicit_ok=False)}",
                           f"every {_sing(cl)} goes {view.own_pp(objs[0], pairs[0][1], rng, prep=state, explicit_ok=False)}",
                           f"{v} {_all_n(total)} {cl} {pp}")), False
    return f"{pol}{v} {names} {pp}", False


# ---------------------------------------------------------------------------------------------- phrase
def phrase(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator, split: str) -> tuple[str, bool]:
    """An instruction asking for exactly ``goals`` and whether its words impose an order."""
    del split
    view = _View(vocab)
    goals = list(goals)
    if view.stacking:
        return _stack_phrase(view, goals, rng), True
    return _place_phrase(view, goals, rng)


# ---------------------------------------------------------------------------------------------- negatives
def _ok_word(view: _View, phrase_: str) -> bool:
    return not (set(phrase_.split()) & view.words)


def _oov(view: _View, rng: np.random.Generator) -> str:
    objs = view.objects
    colours = [c for c in _OOV_COLOURS if _ok_word(view, c)]
    shapes = [s for s in _OOV_SHAPES if _ok_word(view, s)]
    foreign = [o for o in _OOV_OBJECTS if _ok_word(view, o)]
    places = [p for p in _OOV_PLACES if _ok_word(view, p)]
    cls = view.cls(rng, plural=False)
    fake_obj = _pick(rng, [f"the {_pick(rng, colours)} {cls}", f"the {_pick(rng, foreign)}",
                           f"the {_pick(rng, foreign)}"])
    if view.place_class:
        adj = _pick(rng, colours + shapes)
        fake_place = _pick(rng, [f"the {adj} {view.pclass(rng)}", f"the {_pick(rng, places)}"])
    else:
        fake_place = f"the {_pick(rng, places)}"
    v = _verb(view, rng)
    prep = _pick(rng, view.preps(v))
    real = _pick(rng, objs)
    pre = _pick(rng, _FILLER_PRE)
    if view.stacking:
        other = _pick(rng, [o for o in objs if o != real])
        t = int(rng.integers(6))
        if t == 0:
            s = f"{v} {fake_obj} {prep} {view.name(real, rng)}"
        elif t == 1:
            s = f"{v} {view.name(real, rng)} {prep} {fake_obj}"
        elif t == 2:
            s = f"{v} {view.name(real, rng)} {prep} {fake_place}"
        elif t == 3:
            s = f"{v} {view.name(real, rng)} {prep} {view.name(other, rng)}, then {fake_obj} on top"
        elif t == 4:
            s = f"from the bottom up: {view.name(real, rng)}, {fake_obj}, {view.name(other, rng)}"
        else:
            s = f"{fake_obj} at the bottom with {view.name(real, rng)} resting on it"
        return _style(pre + s, rng)
    own = view.v.own_place.get(real)
    t = int(rng.integers(6))
    if t == 0:
        s = f"{v} {fake_obj} {prep} its {view.pclass(rng)}" if view.place_class else f"{v} {fake_obj}"
    elif t == 1:
        s = f"{v} {view.name(real, rng)} {prep} {fake_place}"
    elif t == 2:
        s = f"{_place_clause(view, real, own, rng, lambda o: view.name(o, rng))}, then {fake_obj} too"
    elif t == 3:
        s = f"{v} {view.name(real, rng)} and {fake_obj} {view.own_pp(real, own, rng, plural=True, prep=prep)}" \
            if own else f"{v} {view.name(real, rng)} and {fake_obj}"
    elif t == 4:
        s = f"i want {fake_obj} {'in' if view.kind == 'in' else 'on'} {fake_place}"
    else:
        s = f"put {fake_obj} away and leave {view.name(real, rng)} alone"
    return _style(pre + s, rng)


def _missing(view: _View, rng: np.random.Generator) -> str:
    verbs = [m for m in MISSING_VERBS if _ok_word(view, m)]
    m = _pick(rng, verbs)
    objs = view.objects
    o = _pick(rng, objs)
    o2 = _pick(rng, [x for x in objs if x != o]) if len(objs) > 1 else o
    cl = view.cls(rng)
    t = int(rng.integers(8))
    if t == 0:
        s = f"{m} {view.name(o, rng)}"
    elif t == 1:
        s = f"{_pick(rng, ('could you', 'can you', 'please', 'i want you to', 'go ahead and'))} {m} {view.name(o, rng)}"
    elif t == 2:
        s = f"{m} {view.name(o, rng)} and {view.name(o2, rng)}"
    elif t == 3:
        s = f"{m} all the {cl}"
    elif t == 4:
        s = f"first {m} {view.name(o, rng)}, then {m} {view.name(o2, rng)}"
    elif t == 5:
        s = f"{m} {view.name(o, rng)} {_pick(rng, ('gently', 'carefully', 'twice', 'right now', 'for me'))}"
    elif t == 6:
        s = f"{m} {view.name(o, rng)} and leave {view.name(o2, rng)} alone"
    else:
        s = f"{m} both {view.name(o, rng)} and {view.name(o2, rng)}"
    return _style(_pick(rng, _FILLER_PRE) + s, rng, question=s.startswith(("could", "can")))


def _impossible(view: _View, rng: np.random.Generator) -> str:
    vocab = view.v
    objs = view.objects
    v = _verb(view, rng)
    prep = _pick(rng, view.preps(v))
    for _ in range(50):
        if view.stacking:
            t = int(rng.integers(5))
            a, b, c = (list(rng.permutation(objs)) + list(objs))[:3]
            a, b, c = str(a), str(b), str(c)
            if t == 0:
                intended = [vocab.goal(view.skill, (a, a))]
                text = _pick(rng, (f"{v} {view.name(a, rng)} {prep} itself",
                                   f"{v} {view.name(a, rng)} {prep} {view.name(a, rng)}"))
            elif t == 1:
                intended = [vocab.goal(view.skill, (a, b)), vocab.goal(view.skill, (b, a))]
                text = _pick(rng, (f"{v} {view.name(a, rng)} {prep} {view.name(b, rng)} and {view.name(b, rng)} "
                                   f"{prep} {view.name(a, rng)}",
                                   f"i want {view.name(a, rng)} under {view.name(b, rng)} and {view.name(b, rng)} "
                                   f"under {view.name(a, rng)}"))
            elif t == 2 and len(objs) >= 3:
                intended = [vocab.goal(view.skill, (a, c)), vocab.goal(view.skill, (b, c))]
                text = _pick(rng, (f"{v} {view.name(a, rng)} and {view.name(b, rng)} both {prep} "
                                   f"{view.name(c, rng)}",
                                   f"{v} {view.name(a, rng)} {prep} {view.name(c, rng)} and {view.name(b, rng)} "
                                   f"{prep} {view.name(c, rng)} too, side by side"))
            elif t == 3 and len(objs) >= 3:
                intended = [vocab.goal(view.skill, (a, b)), vocab.goal(view.skill, (a, c))]
                text = f"{v} {view.name(a, rng)} {prep} {view.name(b, rng)} and also {prep} {view.name(c, rng)}"
            elif len(objs) >= 3:
                intended = [vocab.goal(view.skill, (a, b)), vocab.goal(view.skill, (b, c)),
                            vocab.goal(view.skill, (c, a))]
                text = f"{v} {view.name(a, rng)} {prep} {view.name(b, rng)}, {view.name(b, rng)} {prep} " \
                       f"{view.name(c, rng)} and {view.name(c, rng)} {prep} {view.name(a, rng)}"
            else:
                continue
        else:
            owned = [o for o in objs if o in vocab.own_place]
            if not owned or len(vocab.places) < 2:
                break
            o = _pick(rng, owned)
            wrong = _pick(rng, [p for p in vocab.places if p != vocab.own_place[o]])
            pred = view.pred
            t = int(rng.integers(4))
            if t == 0:
                intended = [f"{pred}({o},{wrong})"]
                text = f"{v} {view.name(o, rng)} {prep} {view.place_name(wrong, rng)}"
            elif t == 1:
                intended = [f"{pred}({o},{vocab.own_place[o]})", f"{pred}({o},{wrong})"]
                text = f"{v} {view.name(o, rng)} {prep} {view.place_name(vocab.own_place[o], rng)} and also " \
                       f"{prep} {view.place_name(wrong, rng)}"
            elif t == 2 and len(owned) >= 2:
                o2 = _pick(rng, [x for x in owned if x != o])
                target = vocab.own_place[o]
                intended = [f"{pred}({o},{target})", f"{pred}({o2},{target})"]
                text = f"{v} {view.name(o, rng)} and {view.name(o2, rng)} both {prep} " \
                       f"{view.place_name(target, rng)}"
            elif t == 3 and len(owned) >= 2:
                o2 = _pick(rng, [x for x in owned if x != o])
                intended = [f"{pred}({o},{o2})"]
                text = f"{v} {view.name(o, rng)} {prep} {view.name(o2, rng)}"
            else:
                continue
        why = vocab.impossibility(intended)
        assert why is not None, (intended, text)
        return _style(_pick(rng, _FILLER_PRE) + text, rng)
    # no structural impossibility here: an object on itself
    o = _pick(rng, objs)
    intended = [f"{view.pred}({o},{o})"]
    assert vocab.impossibility(intended) is not None
    return _style(f"{v} {view.name(o, rng)} {prep} itself", rng)


def negatives(vocab: TaskVocabulary, rng: np.random.Generator, split: str) -> tuple[str, str]:
    """An instruction that must be refused, and its kind."""
    del split
    view = _View(vocab)
    kind = _pick(rng, ("out_of_vocabulary", "missing_skill", "impossible", "empty"))
    if kind == "out_of_vocabulary":
        return _oov(view, rng), kind
    if kind == "missing_skill":
        return _missing(view, rng), kind
    if kind == "impossible":
        return _impossible(view, rng), kind
    text = _pick(rng, _EMPTY)
    return (_style(text, rng, question=text.endswith("?")) if text.strip() else text), kind


__all__ = ["MISSING_VERBS", "negatives", "phrase", "sample_goals"]
