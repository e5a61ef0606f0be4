"""Conversational phrasings for the learned instruction grounder (one independent "hand").

The voice: a non-expert talking to a home robot -- polite, indirect and chatty requests, end-state descriptions,
exclusions ("leave the X alone", "don't touch", "only", "that's all"), pronouns and collectives, questions.

Implements the :class:`planner_vlm.learned.grounder_train.Phrasing` protocol with module-level functions
(``sample_goals``, ``phrase``, ``negatives``). Task-generic: every object, place and verb word comes from the
:class:`~tandem.core.vocabulary.TaskVocabulary`; the code branches only on its structure (``ordered_by_support``,
``own_place``, the goal template's arity and whether the destination is an object or a place). The small tables
below are ordinary English (connectives, politeness, inflections, distractor words for negatives).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tandem.core.vocabulary import TaskVocabulary

# ---------------------------------------------------------------------------------------------- English tables
#: Placing verbs and the destination kinds they read well with: "s" an object (a tower), "p" a place one sets
#: things on (a peg), "c" a container (a bin). Only those in the vocabulary's skill_words are used.
_VERB_KINDS = {
    "put": "spc", "place": "spc", "set": "spc", "move": "spc", "stack": "s", "pile": "s", "stand": "s",
    "drop": "spc", "sort": "c", "store": "c", "stow": "c", "bring": "pc", "return": "pc", "insert": "pc",
    "slide": "spc", "fit": "p", "thread": "p", "mount": "p", "lay": "s", "rest": "s",
}
_PAST = {"put": "put", "set": "set", "stand": "stood", "bring": "brought", "slide": "slid", "fit": "fitted",
         "build": "built", "make": "made", "take": "taken", "lay": "laid", "drop": "dropped", "tidy": "tidied"}
_ING = {"put": "putting", "set": "setting", "drop": "dropping", "fit": "fitting", "tidy": "tidying",
        "lie": "lying", "grab": "grabbing", "stop": "stopping", "get": "getting"}
_NUM = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
_ORD = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_ITEMS = ("items", "things", "objects")
_ITEM = ("item", "thing", "object")
_ADVERBS = ("carefully", "gently", "slowly", "please")
_PREFIX = ("hey robot, ", "okay so ", "ok, ", "robot, ", "hi, ", "so, ", "alright, ", "um, ", "hey, ", "right, ",
           "okay, ", "hello robot, ", "hey there, ", "so basically, ", "hmm, ", "listen, ")
_SUFFIX = (" for me", " please", " right now", " when you get a chance", " if you can", ", thanks",
           ", thank you", " now", " if you don't mind", " whenever you're ready", ", cheers", " thanks!")
_TAILS = ("that's all", "that's it", "nothing else", "and that's all", "nothing more", "that's everything",
          "nothing else please", "and that's it")
_TAILS_REST = ("leave everything else", "leave everything else alone", "don't touch anything else",
               "everything else stays where it is", "leave the rest alone", "leave the others where they are",
               "don't move anything else", "the rest can stay put", "ignore everything else")

#: Negative material: verbs for skills a pick-and-place task lacks (filtered against the vocabulary's words).
MISSING_VERBS = ("wipe", "push", "rotate", "open", "pour", "throw", "shake", "flip", "hide", "paint", "knock over",
                 "unstack", "spin", "squeeze", "wash", "kick", "roll", "clean", "tilt", "crush", "twist", "weigh",
                 "unscrew", "fold", "heat", "smell", "swap", "polish", "poke", "bend", "tip over", "turn over",
                 "shuffle", "scrub", "juggle", "unscrew", "tighten", "loosen", "dust", "hammer")
_OOV_COLOURS = ("purple", "yellow", "orange", "pink", "black", "white", "brown", "grey", "silver", "golden",
                "violet", "turquoise", "red", "green", "blue")
_OOV_SHAPES = ("triangle", "triangular", "hexagonal", "star", "oval", "octagonal", "square", "round", "heart",
               "pentagon")
_OOV_OBJECTS = ("banana", "apple", "mug", "cup", "bottle", "spoon", "sponge", "phone", "book", "plate", "lemon",
                "pencil", "sock", "teddy bear", "remote", "jar of jam", "orange", "egg", "glass", "toothbrush",
                "milk", "bread", "cereal", "can")
_OOV_PLACES = ("shelf", "drawer", "fridge", "sink", "basket", "tray", "floor", "windowsill", "cupboard", "table",
               "counter", "microwave", "bin", "peg")
_EMPTY = ("", "hello", "hi", "hi robot", "hey robot", "thanks, that's all", "thank you", "thanks", "do nothing",
          "never mind", "wait", "hold on", "hold on a second", "stop", "ok", "okay", "good job", "nice work",
          "nothing for now", "actually, forget it", "forget it", "leave everything as it is", "don't touch anything",
          "please don't move anything", "just stay put", "that's everything, thank you", "no thanks", "all done",
          "keep everything where it is", "wait a moment", "cancel that", "nothing, thanks", "how are you?",
          "are you there?", "sorry, never mind", "leave it all where it is", "just wait there", "nope", "hmm",
          "do nothing for now", "not now", "good morning", "stay still please", "ignore that", "never mind, thanks")


def _pick(rng: np.random.Generator, seq: Sequence):
    return seq[int(rng.integers(len(seq)))]


def _chance(rng: np.random.Generator, p: float) -> bool:
    return float(rng.random()) < p


def _n_args(template: str) -> int:
    idx = [int(m) for m in re.findall(r"\{(\d+)\}", template)]
    return max(idx) + 1 if idx else 0


def _past(v: str) -> str:
    if v in _PAST:
        return _PAST[v]
    return v + "d" if v.endswith("e") else v + "ed"


def _ing(v: str) -> str:
    if v in _ING:
        return _ING[v]
    if v.endswith("e") and not v.endswith("ee"):
        return v[:-1] + "ing"
    return v + "ing"


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _class_nouns(named: dict[str, tuple[str, ...]]) -> list[str]:
    """Head nouns every name shares ("red cube", "blue cube" -> "cube"), "one" excluded."""
    sets = [{w.split()[-1] for w in words if len(w.split()) > 1} for words in named.values()]
    common = set.intersection(*sets) if sets else set()
    return sorted(common - {"one", "ones"})


def _join(rng: np.random.Generator, items: Sequence[str], conj: str = "and") -> str:
    items = list(items)
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    comma = "," if _chance(rng, 0.3) else ""
    return ", ".join(items[:-1]) + f"{comma} {conj} {items[-1]}"


@dataclass
class _Goal:
    obj: str
    dest: str | None  # an object (tower), a place, or None (one-argument goal without an own place)
    kind: str  # "s" object support, "p" place one sets things on, "c" container
    own: bool  # the destination is the object's own place (or implied by a one-argument goal)


# ------------------------------------------------------------------------------------------------ the language
class _Lang:
    def __init__(self, vocab: TaskVocabulary, rng: np.random.Generator):
        self.v, self.rng = vocab, rng
        self.objs = list(vocab.objects)
        self.n = len(self.objs)
        self.oc = _class_nouns(vocab.objects)
        self.pc = _class_nouns(vocab.places) if vocab.places else []
        self.words = vocab.words()
        picks = [w for s, ws in vocab.skill_words.items() if s not in vocab.goal_skills for w in ws]
        self.take = [w for w in picks if w != "pick"] or ["take"]
        goal_words = [w for s in vocab.goal_skills for w in vocab.skill_words.get(s, ())]
        self.verbs = {k: [w for w in goal_words if w in _VERB_KINDS and k in _VERB_KINDS[w]] for k in "spc"}
        for k in "spc":
            if not self.verbs[k]:
                self.verbs[k] = [w for w in goal_words if " " not in w][:1] or ["put"]
        self.tidy = "tidy" in goal_words
        self.sort = "sort" in goal_words
        self.build = ["build", "build", "make"] if "build" in goal_words else ["make"]

    # ---------------------------------------------------------------- goals
    def info(self, goal: str) -> _Goal:
        skill, args = self.v.goal_skill_of(goal)
        container = self.v.skills[skill].split("(")[0].lower().startswith("in")
        obj = args[0]
        if len(args) >= 2:
            dest = args[1]
            if dest in self.v.objects:
                return _Goal(obj, dest, "s", False)
            return _Goal(obj, dest, "c" if container else "p", self.v.own_place.get(obj) == dest)
        return _Goal(obj, self.v.own_place.get(obj), "c" if container else "p", True)

    # ---------------------------------------------------------------- noun phrases
    def np(self, obj: str, det: str = "the") -> str:
        word = _pick(self.rng, self.v.objects[obj])
        if _chance(self.rng, 0.03):
            word = f'"{word}"'
        return f"{det} {word}"

    def oc_word(self, plural: bool = False) -> str:
        if self.oc and _chance(self.rng, 0.7):
            w = _pick(self.rng, self.oc)
            return _plural(w) if plural else w
        return _pick(self.rng, _ITEMS if plural else _ITEM)

    def place_np(self, g: _Goal, poss: bool = True, explicit_ok: bool = True) -> str:
        """The destination of a goal, singular ("its bin", "the milk bin", "the blue cube")."""
        if g.kind == "s":
            return self.np(g.dest)
        explicit = f"the {_pick(self.rng, self.v.places[g.dest])}" if g.dest in self.v.places else None
        if not explicit_ok and g.own and self.pc:
            explicit = None
        possessive = []
        if g.own and self.pc and poss:
            pc = _pick(self.rng, self.pc)
            possessive = [f"its {pc}", f"its own {pc}", f"the matching {pc}", f"the right {pc}",
                          f"the correct {pc}", f"its {pc}", f"its proper {pc}"]
        if explicit and (not possessive or _chance(self.rng, 0.45)):
            return explicit
        if possessive:
            return _pick(self.rng, possessive)
        return f"a {_pick(self.rng, self.pc)}" if self.pc else "its place"

    def place_pl(self) -> str:
        pc = _plural(_pick(self.rng, self.pc)) if self.pc else "places"
        return _pick(self.rng, (f"their {pc}", f"their own {pc}", f"the matching {pc}", f"the right {pc}",
                                f"their {pc}", f"their proper {pc}", f"the correct {pc}"))

    def all_n(self) -> str:
        return "both" if self.n == 2 else f"all {_NUM.get(self.n, 'the')}"

    def uniform(self, gs: Sequence[_Goal]) -> bool:
        """Every goal sends its object to its own place: "their bins" says it all."""
        return all(g.kind != "s" and g.own for g in gs) and (bool(self.pc) or all(g.kind == "c" for g in gs))

    def prep(self, kind: str, verb: str) -> str:
        r = self.rng
        if kind == "s":
            return _pick(r, ("on", "onto", "on top of", "on", "onto", "on top of", "atop"))
        if verb in ("bring", "return"):
            return "to"
        if kind == "c":
            return "into" if verb == "sort" else _pick(r, ("in", "into", "in", "into", "inside"))
        if verb in ("slide", "thread", "drop", "fit"):
            return _pick(r, ("onto", "over", "on"))
        return _pick(r, ("on", "onto", "on"))

    def loc(self, g: _Goal, dest: str | None = None, participle: bool = True) -> str:
        """Where the goal leaves the object, for an end state: "in its bin", "on top of the blue cube"."""
        r = self.rng
        d = dest if dest is not None else self.place_np(g)
        if g.kind == "s":
            opts = ["on", "on top of", "on", "on top of"]
            if participle:
                stacked = [w for w in self.verbs["s"] if w in ("stack", "place", "set", "pile", "put")] or ["put"]
                opts += ["resting on", "sitting on", f"{_past(_pick(r, stacked))} on", "sitting on top of"]
            return f"{_pick(r, opts)} {d}"
        if g.kind == "c":
            return f"{_pick(r, ('in', 'inside', 'in'))} {d}"
        return f"{_pick(r, ('on', 'on', 'around'))} {d}"

    # ---------------------------------------------------------------- clauses: (verb, rest)
    def clause(self, g: _Goal, subj: str | None = None, dest: str | None = None,
               allow_away: bool = True) -> tuple[str, str]:
        r = self.rng
        s = subj or self.np(g.obj)
        pron = s in ("it", "them", "that one")
        if g.kind == "c" and g.own and allow_away and dest is None and _chance(r, 0.25):
            c = int(r.integers(4))
            if c == 0 and self.tidy:
                return ("tidy", f"{s} away" if pron or _chance(r, 0.5) else f"up {s}")
            if c == 1 and self.sort and not pron:
                return ("sort", s)
            if c == 2 and not pron:
                return ("put", f"away {s}")
            return (_pick(r, ("put", "put", "put")), f"{s} away")
        verb = _pick(r, self.verbs[g.kind])
        d = dest or self.place_np(g)
        return (verb, f"{s} {self.prep(g.kind, verb)} {d}")

    def render(self, cl: tuple[str, str], form: str = "base", adverb: bool = True) -> str:
        verb, rest = cl
        if form == "ing":
            return f"{_ing(verb)} {rest}"
        if form == "past":
            return f"{_past(verb)} {rest}"
        if adverb and _chance(self.rng, 0.07):
            return f"{_pick(self.rng, _ADVERBS[:3])} {verb} {rest}"
        return f"{verb} {rest}"

    def polite(self, cl: tuple[str, str]) -> str:
        """One imperative clause in a polite, indirect or question frame."""
        r = self.rng
        b = self.render(cl)
        i = int(r.integers(22))
        return [
            b, b, f"please {b}", f"{b}, please", f"could you {b}?", f"can you {b}?", f"would you {b}?",
            f"would you mind {self.render(cl, 'ing')}?", f"I'd like you to {b}", f"I need you to {b}",
            f"I want you to {b}", f"go ahead and {b}", f"let's {b}", f"your job is to {b}", f"try to {b}",
            f"I'd appreciate it if you could {b}", f"do me a favour and {b}", f"time to {b}",
            f"it'd be great if you could {b}", f"when you have a moment, {b}", f"could you please {b}?",
            f"can you {b} for me?",
        ][i]

    def polite_multi(self, body: str) -> str:
        """A frame for a conjunction of base-form clauses."""
        r = self.rng
        i = int(r.integers(12))
        return [body, body, body, f"please {body}", f"could you {body}?", f"can you {body}?", f"I'd like you to {body}",
                f"I need you to {body}", f"would you {body}?", f"now, {body}", f"here's what I need: {body}",
                f"can you please {body}?"][i]

    def state(self, subj: str, pred: str, plural: bool, locative: str | None = None) -> str:
        """An end-state frame: subj + pred ("the milk" + "in its bin"); locative: pred usable after "go"."""
        r = self.rng
        is_, need, end, has = ("are", "need", "end", "have") if plural else ("is", "needs", "ends", "has")
        frames = [f"I want {subj} {pred}", f"I'd like {subj} {pred}", f"I want {subj} to end up {pred}",
                  f"I'd like {subj} to be {pred}", f"{subj} should be {pred}", f"{subj} should end up {pred}",
                  f"{subj} {need} to be {pred}", f"the goal is to have {subj} {pred}", f"the goal is: {subj} {pred}",
                  f"make it so that {subj} {is_} {pred}", f"when you're done, {subj} should be {pred}",
                  f"make sure {subj} {end} up {pred}", f"can you get {subj} {pred}?", f"let's get {subj} {pred}",
                  f"at the end, {subj} should be {pred}", f"I want to see {subj} {pred}",
                  f"please make sure {subj} {is_} {pred}", f"by the time you're finished, {subj} should be {pred}",
                  f"I'd love it if {subj} {'were' if plural else 'was'} {pred}", f"could you make sure {subj} {end} up "
                  f"{pred}?", f"what I want is {subj} {pred}"]
        if locative:
            go = "go" if plural else "goes"
            frames += [f"{subj} {go} {locative}", f"{subj} {has} to go {locative}", f"{subj} should go {locative}"]
        return _pick(r, frames)

    def states_multi(self, pairs: Sequence[str]) -> str:
        body = _join(self.rng, pairs)
        return _pick(self.rng, (f"I want {body}", f"I'd like {body}", f"the goal is to have {body}",
                                f"when you're done, I want {body}", f"I'd like to end up with {body}",
                                f"make it so that we have {body}", f"in the end I want {body}",
                                f"the end result should be {body}", f"can you get {body}?",
                                f"what I'd like is {body}", f"let's end up with {body}"))

    def seq(self, cls: Sequence[tuple[str, str]], states: Sequence[str] | None = None,
            compound: bool = False) -> str:
        """Clauses in this exact order, with sequencing words (compound: no gerund forms)."""
        r = self.rng
        k = len(cls)
        b = [self.render(c) for c in cls]
        i = int(r.integers(14 if k == 2 else 11))
        while compound and i in (3, 7, 10, 12):
            i = int(r.integers(14 if k == 2 else 11))
        if i == 6 and k != 3:
            i = 0
        if i == 0:
            seps = (", then", " and then", ", and then", "; then", ". then", ", after that", ". after that,",
                    ", next", ". next,", "; next,", ", and once that's done,", ". once that's done,",
                    " and after that", ", and after that,", " then")
            return b[0] + "".join(f"{_pick(r, seps)} {x}" for x in b[1:])
        if i == 1:
            mids = "".join(f"{_pick(r, (', then', ', next', ', after that', '; then', ', then'))} {x}" for x in b[1:-1])
            fin = _pick(r, (", and finally", ", finally", ". finally,", ", then", ", and lastly", ". last,",
                            " and then")) if k > 2 else _pick(r, (", then", " and then", ", after that", ". then"))
            return f"{_pick(r, ('first ', 'first, ', 'first of all, ', 'to start, '))}{b[0]}{mids}{fin} {b[-1]}"
        if i == 2:
            fmt = int(r.integers(7))
            parts = []
            for j, x in enumerate(b):
                parts.append([f"{j + 1}) {x}", f"{j + 1}. {x}", f"step {_NUM[j + 1]}: {x}", f"step {j + 1}: {x}",
                              f"{_ORD[j]}: {x}", f"{_ORD[j]}, {x}", f"({j + 1}) {x}"][fmt])
            sep = _pick(r, (" ", "; ", ". ", ", ", "\n")) if fmt < 2 or fmt == 6 else _pick(r, ("; ", ". ", ", "))
            return sep.join(parts)
        if i == 3:
            mids = "".join(f", then {x}" for x in b[1:-1])
            return f"start by {self.render(cls[0], 'ing')}{mids}, and finish by {self.render(cls[-1], 'ing')}"
        if i == 4:
            parts = [f"the {_ORD[0]} thing is to {b[0]}"] + [f"the {_ORD[j]} is to {x}" for j, x in
                                                               enumerate(b[1:], 1)]
            return _join(r, parts) if _chance(r, 0.5) else "; ".join(parts)
        if i == 5:
            return f"{b[0]} first, " + ", ".join(f"then {x}" for x in b[1:])
        if i == 6 and k == 3:
            return f"{b[1]} and then {b[2]}, but first {b[0]}"
        if i == 7:
            return f"after {self.render(cls[0], 'ing')}, " + ", then ".join(b[1:])
        if i == 8:
            return "; ".join([f"first {b[0]}"] + [f"then {x}" for x in b[1:-1]] + [f"finally {b[-1]}"]) if k > 2 \
                else f"first {b[0]}; then {b[1]}"
        if i == 9:
            return f"{b[0]}. once you've done that, " + ". then ".join(b[1:])
        if i == 10:
            return f"begin by {self.render(cls[0], 'ing')}, then " + ", then ".join(b[1:])
        # k == 2 only
        if i == 11:
            return _pick(r, (f"{b[1]}, but first {b[0]}", f"{b[1]} -- but first, {b[0]}",
                             f"{b[1]}; but before that, {b[0]}"))
        if i == 12:
            return _pick(r, (f"before {self.render(cls[1], 'ing')}, {b[0]}", f"{b[0]} before {self.render(cls[1], 'ing')}",
                             f"{b[1]} after {self.render(cls[0], 'ing')}"))
        if states:
            return _pick(r, (f"only once {states[0]}, {b[1]}", f"once {states[0]}, {b[1]}",
                             f"when {states[0]}, {b[1]}", f"as soon as {states[0]}, {b[1]}"))
        return ", then ".join(b)

    def exclusion(self, others: Sequence[str]) -> str:
        r = self.rng
        if not others or _chance(r, 0.25):
            return _pick(r, _TAILS + (_TAILS_REST if others else ()))
        if len(others) == 1:
            x = self.np(others[0])
            if self.n == 3 and self.oc and _chance(r, 0.2):
                x = _pick(r, (f"the third {self.oc_word()}", f"the other {self.oc_word()}"))
            return _pick(r, (f"leave {x} alone", f"don't touch {x}", f"do not move {x}", f"{x} stays where it is",
                             f"keep {x} where it is", f"ignore {x}", f"leave {x} where it is", f"{x} can stay put",
                             f"don't do anything with {x}", f"{x} is fine where it is", f"please don't touch {x}",
                             f"leave {x} be", f"don't worry about {x}"))
        x = _join(r, [self.np(o) for o in others])
        return _pick(r, (f"leave {x} alone", f"don't touch {x}", f"do not move {x}", f"{x} stay where they are",
                         f"keep {x} where they are", f"ignore {x}", f"leave {x} where they are",
                         f"don't worry about {x}", f"{x} can stay put"))

    def add_exclusion(self, body: str, others: Sequence[str], p: float) -> str:
        if not _chance(self.rng, p):
            return body
        ex = self.exclusion(others)
        if body.endswith("?") and ex in _TAILS:
            return f"{body} {ex[0].upper()}{ex[1:]}"
        if body.endswith("?"):
            return f"{body} {ex[0].upper()}{ex[1:]}" if _chance(self.rng, 0.5) else f"{body[:-1]}, and {ex}?"
        verbal = ex.split()[0] in ("leave", "don't", "do", "keep", "ignore", "please", "and", "that's", "nothing")
        if verbal:
            sep = _pick(self.rng, (", and ", "; ", ". ", ", but ", " -- ", ", ", " and "))
        else:
            sep = _pick(self.rng, ("; ", ". ", " -- ", ", but "))
        if sep == ", but " and ex in _TAILS:
            sep = ", "
        if ex.startswith("and ") and sep.strip() in ("and", ", and", ", but"):
            sep = ", "
        return f"{body}{sep}{ex}"

    # ---------------------------------------------------------------- styling
    def style(self, text: str, suffix: bool = True) -> str:
        r = self.rng
        text = text.strip()
        question = text.endswith("?")
        if question:
            text = text[:-1]
        if _chance(r, 0.2):
            text = _pick(r, _PREFIX) + text
        if _chance(r, 0.15) and not text.endswith(tuple(_TAILS + _TAILS_REST)) and suffix:
            text += _pick(r, (" please", " for me") if question else _SUFFIX)
        if text.endswith("!"):
            text = text[:-1]
        if question:
            text += _pick(r, ("?", "?", "?", ""))
        elif text and not text.endswith((".", "!", "?")):
            text += _pick(r, (".", ".", "", "", "!", "", ".", "!!"))
        c = float(r.random())
        if c < 0.55:
            text = text[:1].upper() + text[1:]
        elif c < 0.62:
            text = text.upper()
        elif c < 0.69:
            text = " ".join(w[:1].upper() + w[1:] for w in text.split(" "))
        else:
            text = text.lower() if _chance(r, 0.6) else text
        return text

    # ---------------------------------------------------------------- towers
    def chains(self, gs: Sequence[_Goal]) -> list[list[str]]:
        above = {g.dest: g.obj for g in gs}
        tops = {g.obj for g in gs}
        out = []
        for g in gs:
            if g.dest not in tops and g.dest not in [c[0] for c in out]:
                chain = [g.dest]
                while chain[-1] in above:
                    chain.append(above[chain[-1]])
                out.append(chain)
        return out

    def tower_phrase(self, gs: Sequence[_Goal]) -> str:
        r = self.rng
        chains = self.chains(gs)
        used = {o for c in chains for o in c}
        others = [o for o in self.objs if o not in used]
        if len(chains) > 1:
            parts = []
            for c in chains:
                parts += [self.render(self.pair(c[i], c[i - 1])) for i in range(1, len(c))]
            body = self.polite_multi(_join(r, parts))
            return self.add_exclusion(body, others, 0.3)
        c = chains[0]
        m = len(c) - 1
        fam = int(r.integers(8))
        if fam == 0 or (fam == 7 and m == 1):
            if m == 1:
                body = self.polite(self.pair(c[1], c[0]))
            else:
                cls = [self.pair(c[i], c[i - 1]) for i in range(1, len(c))]
                body = self.seq(cls, [f"{self.np(c[1])} is {self.loc(gs[0], self.np(c[0]), False)}"])
        elif fam == 1:  # "and" lists: the stack implies the order
            cls = [self.pair(c[i], c[i - 1]) for i in range(1, len(c))]
            if m > 1 and _chance(r, 0.5):
                cls = [cls[j] for j in r.permutation(len(cls))]
            if _chance(r, 0.5) and m > 1:  # verb ellipsis: "put A on B and C on A"
                parts = [self.render(cls[0])] + [cl[1] for cl in cls[1:]]
            else:
                parts = [self.render(cl, adverb=False) for cl in cls]
            body = self.polite_multi(_join(r, parts))
        elif fam == 2:  # pronouns
            take = _pick(r, self.take)
            if m == 1:
                v, rest = self.pair(c[1], c[0], subj="it")
                body = _pick(r, (f"{take} {self.np(c[1])} and {v} {rest}",
                                 f"{take} {self.np(c[1])}, then {v} {rest}",
                                 f"see {self.np(c[1])}? {v} {rest}",
                                 f"you see {self.np(c[0])}? {v} {self.np(c[1])} {self.prep('s', v)} it"))
            else:
                first = self.render(self.pair(c[1], c[0]))
                rest = []
                for i in range(2, len(c)):
                    v = _pick(r, self.verbs["s"])
                    ref = _pick(r, ("it", "that", "that one", "it", "top of it", "top of that"))
                    pre = "on" if ref.startswith("top") else _pick(r, ("on", "onto", "on top of"))
                    obj = self.np(c[i])
                    if i == len(c) - 1 and not others and _chance(r, 0.4):
                        obj = _pick(r, (f"the remaining {self.oc_word()}", "the last one", "the remaining one",
                                        "the other one", f"the last {self.oc_word()}"))
                    rest.append(_pick(r, (f"{v} {obj} {pre} {ref}", f"{obj} goes {pre} {ref}")))
                body = first + "".join(f"{_pick(r, (', then ', ', and then ', '. then ', ', after that '))}{x}"
                                       for x in rest)
        elif fam == 3:  # end states
            if m == 1:
                g = gs[0]
                k = int(r.integers(4))
                if k == 0:
                    pred = _pick(r, ("under", "beneath", "below", "underneath", "right under"))
                    body = self.state(self.np(c[0]), f"{pred} {self.np(c[1])}", False, f"{pred} {self.np(c[1])}")
                elif k == 1:
                    body = _pick(r, (f"I want {self.np(c[0])} with {self.np(c[1])} resting on it",
                                     f"{self.np(c[0])} should have {self.np(c[1])} sitting on it",
                                     f"I'd like {self.np(c[1])} above {self.np(c[0])}",
                                     f"{self.np(c[1])} should be right above {self.np(c[0])}"))
                else:
                    d = self.np(c[0])
                    body = self.state(self.np(c[1]), self.loc(g, d), False, self.loc(g, d, False))
            else:
                pairs = []
                for i in range(1, len(c)):
                    if _chance(r, 0.2):
                        pairs.append(f"{self.np(c[i - 1])} {_pick(r, ('under', 'beneath', 'underneath', 'below'))} "
                                     f"{self.np(c[i])}")
                    else:
                        pairs.append(f"{self.np(c[i])} {self.loc(gs[0], self.np(c[i - 1]), False)}")
                if _chance(r, 0.5):
                    pairs = [pairs[j] for j in r.permutation(len(pairs))]
                body = self.states_multi(pairs)
        else:  # fam 4-7: tower descriptions
            body = self.tower_desc(c, others, fam)
        return self.add_exclusion(body, others, 0.4 if others else 0.12)

    def pair(self, top: str, bottom: str, subj: str | None = None) -> tuple[str, str]:
        g = _Goal(top, bottom, "s", False)
        return self.clause(g, subj=subj, dest=self.np(bottom))

    def tower_desc(self, c: list[str], others: Sequence[str], fam: int) -> str:
        r = self.rng
        m = len(c) - 1
        nps = [self.np(o) for o in c]
        bare = [n[4:] if n.startswith("the ") else n for n in nps]
        noun = _pick(r, ("tower", "stack", "pile", "tower", "little tower", "stack"))
        build = _pick(r, self.build)
        a_noun = f"a {noun}"
        intro = _pick(r, (f"{build} {a_noun}", f"{build} {a_noun}", f"could you {build} {a_noun}",
                          f"I'd like {a_noun}", f"let's {build} {a_noun}", f"please {build} {a_noun}",
                          f"I want you to {build} {a_noun}", f"can you {build} me {a_noun}"))
        if not others and self.n >= 3 and _chance(r, 0.45):
            n = _NUM.get(self.n, "all")
            oc = self.oc_word(plural=True)
            intro = _pick(r, (f"stack all {n} {oc}", f"{build} {a_noun} out of all {n} {oc}", f"stack the {n} {oc}",
                              f"{build} {a_noun} with all {n} {oc}", f"use all {n} {oc} to {build} {a_noun}",
                              f"stack all the {oc}", f"{build} {a_noun} using every {self.oc_word()}"))
        bottom = _pick(r, ("at the bottom", "at the base", "on the bottom", "as the base", "at the very bottom"))
        top = _pick(r, ("on top", "at the top", "on the top", "on the very top"))
        if fam == 4:
            if m == 1:
                desc = _pick(r, (f"with {nps[0]} {bottom} and {nps[1]} {top}", f"{nps[0]} {bottom}, {nps[1]} {top}",
                                 f"with {nps[1]} {top} and {nps[0]} {bottom}"))
            elif m == 2:
                mid = _pick(r, ("in the middle", "in the middle", "in between", "second"))
                parts = [f"{nps[0]} {bottom}", f"{nps[1]} {mid}", f"{nps[2]} {top}"]
                if _chance(r, 0.3):
                    parts = [parts[0], parts[2], f"{nps[1]} {_pick(r, ('between them', 'in between', 'in the middle'))}"]
                elif _chance(r, 0.3):
                    parts = parts[::-1]
                desc = _pick(r, ("with ", "", "")) + _join(r, parts)
            else:
                desc = f"with {nps[0]} {bottom}, " + ", ".join(f"then {x}" for x in nps[1:-1]) + f", and {nps[-1]} {top}"
            return f"{intro}{_pick(r, (' ', ': ', ', '))}{desc}" if not desc.startswith("with") else f"{intro} {desc}"
        if fam == 5:
            up = _join(r, bare if _chance(r, 0.3) else nps) if _chance(r, 0.3) else ", ".join(nps)
            down_list = nps[::-1]
            down = _join(r, down_list) if _chance(r, 0.3) else ", ".join(down_list)
            k = int(r.integers(6))
            if k == 0:
                return f"{_pick(r, ('from the bottom up', 'bottom to top', 'from bottom to top', 'going up'))}: {up}"
            if k == 1:
                return f"{_pick(r, ('top to bottom', 'from top to bottom', 'from the top down'))}: {down}"
            if k == 2:
                return f"{intro}, {_pick(r, ('from the bottom up', 'bottom to top'))}: {up}"
            if k == 3:
                return f"{intro} of {_join(r, nps)}, {_pick(r, ('from the bottom up', 'bottom to top', 'in that order from the bottom', 'bottom first'))}"
            if k == 4:
                return f"{intro}, {_pick(r, ('top to bottom', 'from the top down'))}: {down}"
            return f"{intro} of {_join(r, down_list)}, {_pick(r, ('from the top down', 'top to bottom', 'top first'))}"
        if fam == 6:
            if m == 1:
                return _pick(r, (f"{intro} starting with {nps[0]} {bottom} and finishing with {nps[1]} {top}",
                                 f"{intro}: start with {nps[0]} and put {nps[1]} {top}",
                                 f"{intro} with {nps[0]} {bottom} and {nps[1]} resting on it"))
            mids = "".join(f", then {x}" for x in nps[1:-1])
            return _pick(r, (f"{intro} starting with {nps[0]} {bottom}{mids}, and finishing with {nps[-1]} {top}",
                             f"{intro}, starting with {nps[0]}{mids}, finishing with {nps[-1]} {top}",
                             f"{intro}: {nps[0]} {bottom}" + "".join(f", then {x}" for x in nps[1:])))
        # fam 7, m >= 2: "resting on" chains
        desc = f"{nps[0]} {bottom}, with {nps[1]} on it"
        for x in nps[2:]:
            desc += f" and {x} {_pick(r, ('resting on top', 'on top of that', 'sitting on top'))}"
        return _pick(r, (f"{intro}: {desc}", desc, f"I'd like {desc}"))

    # ---------------------------------------------------------------- places (bins, pegs)
    def place_phrase(self, gs: Sequence[_Goal]) -> tuple[str, bool]:
        r = self.rng
        k = len(gs)
        used = [g.obj for g in gs]
        others = [o for o in self.objs if o not in used]
        uni = self.uniform(gs)
        if k == 1:
            return self.add_exclusion(self.single(gs[0], others), others, 0.35 if others else 0.12), False
        if _chance(r, 0.45):
            return self.ordered_places(gs, others, uni), True
        return self.unordered_places(gs, others, uni), False

    def single(self, g: _Goal, others: Sequence[str]) -> str:
        r = self.rng
        i = int(r.integers(10))
        s = self.np(g.obj)
        if i <= 3:
            return self.polite(self.clause(g, subj=s))
        if i == 4:
            v, rest = self.clause(g, subj="it")
            return _pick(r, (f"{_pick(r, self.take)} {s} and {v} {rest}", f"{_pick(r, self.take)} {s}, then {v} {rest}",
                             f"see {s}? {v} {rest}", f"{s} -- {v} {rest}, please",
                             f"could you {_pick(r, self.take)} {s} and {v} {rest}?"))
        if i == 5 and others:
            cl = self.clause(g, subj=s)
            return _pick(r, (f"only {self.render(cl)}", f"just {self.render(cl)}", f"just {s}, please: {self.render(self.clause(g, subj='it'))}",
                             f"only {s} needs to go {self.loc(g, participle=False)}",
                             f"all I want is {s} {self.loc(g)}", f"{self.render(cl)} and nothing else",
                             f"just {s}, {self.loc(g, participle=False)}"))
        if i == 6 and g.kind == "c" and g.own:
            return _pick(r, (f"{s} needs putting away", f"can you put {s} away?", f"{s} should be put away",
                             f"I'd like {s} put away", f"{s} goes back {self.loc(g, participle=False)}",
                             f"please put {s} back {self.loc(g, participle=False)}",
                             f"{s} belongs {self.loc(g, participle=False)}"))
        if i == 6 and g.own and g.kind == "p":
            return _pick(r, (f"{s} belongs {self.loc(g, participle=False)}",
                             f"{s} goes {self.loc(g, participle=False)}",
                             f"put {s} back where it belongs, {self.loc(g, participle=False)}"))
        d = self.place_np(g)
        loc = self.loc(g, d)
        return self.state(s, loc, False, self.loc(g, d, False))

    def unordered_places(self, gs: Sequence[_Goal], others: Sequence[str], uni: bool) -> str:
        r = self.rng
        k = len(gs)
        order = [gs[j] for j in r.permutation(k)] if _chance(r, 0.5) else list(gs)
        nps = [self.np(g.obj) for g in order]
        objs = _join(r, nps)
        fam = int(r.integers(10))
        kind = gs[0].kind
        verb = _pick(r, self.verbs[kind])
        prep = self.prep(kind, verb)
        if uni and fam == 0:  # shared place: "put A, B and C in their bins"
            if kind == "c" and _chance(r, 0.3):
                body = _pick(r, (f"put {objs} away", f"put away {objs}",
                                 *((f"tidy up {objs}", f"tidy {objs} away") if self.tidy else ()),
                                 *((f"sort {objs}", f"sort {objs} into {self.place_pl()}") if self.sort else ())))
            else:
                body = f"{verb} {objs} {prep} {self.place_pl()}"
            body = self.polite_multi(body)
            return self.add_exclusion(body, others, 0.35 if others else 0.1)
        if uni and fam == 1 and not others:  # collectives
            n = self.all_n()
            pl = self.place_pl()
            oc = self.oc_word(plural=True)
            items = [f"everything {prep} {pl}", f"{n} {oc} {prep} {pl}", f"all the {oc} {prep} {pl}",
                     f"each {self.oc_word()} {prep} its own {_pick(r, self.pc) if self.pc else 'place'}",
                     f"every {self.oc_word()} {prep} {self.place_np(gs[0], explicit_ok=False)}",
                     f"all of them {prep} {pl}", "everything where it belongs",
                     f"each of them {prep} {self.place_np(gs[0], explicit_ok=False)}"]
            if self.n == 2:
                items += [f"both {oc} {prep} {pl}", f"both of them {prep} {pl}"]
            body = f"{verb} {_pick(r, items)}"
            if kind == "c" and _chance(r, 0.3):
                body = _pick(r, ("put everything away", f"put all the {oc} away", f"put {n} {oc} away",
                                 *(("tidy everything up", "tidy up everything", f"tidy up all the {oc}")
                                   if self.tidy else ()),
                                 *(("sort everything", f"sort all the {oc}", f"sort everything into {pl}")
                                   if self.sort else ())))
            if _chance(r, 0.2):
                return _pick(r, (f"every {self.oc_word()} goes {self.loc(gs[0], participle=False)}",
                                 f"I want everything {self.loc(gs[0], self.place_pl())}",
                                 f"{n} {oc} should end up {self.loc(gs[0], self.place_pl())}",
                                 f"when you're done, everything should be {self.loc(gs[0], self.place_pl())}",
                                 f"can you make sure each {self.oc_word()} ends up {self.loc(gs[0], participle=False)}?"))
            return self.polite_multi(body)
        if uni and fam == 2 and others:  # everything except X
            ex = _join(r, [self.np(o) for o in others], "or" if _chance(r, 0.3) else "and")
            pl = self.place_pl()
            oc = self.oc_word(plural=True)
            put = f"{verb} everything" if kind != "c" or _chance(r, 0.5) else "put everything away"
            where = f" {prep} {pl}" if not put.endswith("away") else ""
            return _pick(r, (f"{put} except {ex}{where}", f"{put}{where} except {ex}",
                             f"{verb} all the {oc} but {ex} {prep} {pl}", f"{verb} all but {ex} {prep} {pl}",
                             f"{verb} all of them apart from {ex} {prep} {pl}",
                             f"{put}{where}, but leave {ex} alone", f"{put}{where} -- don't touch {ex}",
                             f"everything other than {ex} should go {prep} {pl}",
                             f"{put} apart from {ex}{where}", f"could you {put}{where} except for {ex}?",
                             f"{put}{where} but {ex}"))
        if fam == 3:  # pronouns: "grab A and B and put them in their bins"
            take = _pick(r, self.take)
            if uni:
                if kind == "c" and _chance(r, 0.3):
                    tail = _pick(r, ("put them away", "put them all away", "put both away" if k == 2 else "put them away"))
                else:
                    tail = _pick(r, (f"{verb} them {prep} {self.place_pl()}",
                                     f"{verb} each of them {prep} {self.place_np(gs[0], explicit_ok=False)}",
                                     f"{verb} them all {prep} {self.place_pl()}" if k > 2 else
                                     f"{verb} both {prep} {self.place_pl()}"))
                body = _pick(r, (f"{take} {objs} and {tail}", f"{objs}: {tail}, please",
                                 f"see {objs}? {tail}", f"could you {take} {objs} and {tail}?"))
                return self.add_exclusion(body, others, 0.3 if others else 0.1)
        if fam == 4 and not others and k >= 2:  # "the rest" / "the other one"
            g0, rest = order[0], order[1:]
            first = self.render(self.clause(g0, dest=self.place_np(g0, explicit_ok=False)))
            if len(rest) == 1 and uni:
                tail = _pick(r, ("the other one too", "the other one as well", f"the other {self.oc_word()} too",
                                 "do the same with the other one", f"the other one {prep} {self.place_np(rest[0])}"))
            elif uni:
                tail = _pick(r, ("the rest too", "the rest as well", f"the rest {prep} {self.place_pl()}",
                                 f"the remaining ones {prep} {self.place_pl()}", "do the same with the rest",
                                 f"all the others {prep} {self.place_pl()}", "the others too"))
            else:
                tail = None
            if tail:
                return self.polite_multi(f"{first}, and {tail}" if _chance(r, 0.6) else f"{first} and {tail}")
        if fam == 5 and k == 2 and uni:  # both
            body = self.polite_multi(_pick(r, (
                f"{verb} both {objs} {prep} {self.place_pl()}",
                f"{_pick(r, self.take)} {objs} and {verb} both of them {prep} {self.place_pl()}")))
            if _chance(r, 0.4):
                body = _pick(r, (f"{objs} both go {self.loc(gs[0], self.place_pl(), False)}",
                                 f"both {objs} should be {self.loc(gs[0], self.place_pl())}"))
            return self.add_exclusion(body, others, 0.3 if others else 0.1)
        if fam == 6 and others and uni:  # only / just
            body = _pick(r, (f"only {verb} {objs} {prep} {self.place_pl()}", f"just {objs}, please -- {verb} them "
                             f"{prep} {self.place_pl()}", f"only {objs} need to go {self.loc(gs[0], self.place_pl(), False)}",
                             f"{verb} just {objs} {prep} {self.place_pl()}",
                             f"I only want {objs} {self.loc(gs[0], self.place_pl())}"))
            return self.add_exclusion(body, others, 0.4)
        if fam == 7:  # end state
            if uni and _chance(r, 0.5):
                return self.add_exclusion(self.state(objs, self.loc(gs[0], self.place_pl()), True,
                                                     self.loc(gs[0], self.place_pl(), False)), others, 0.3)
            pairs = [f"{self.np(g.obj)} {self.loc(g)}" for g in order]
            return self.add_exclusion(self.states_multi(pairs), others, 0.3)
        # default: clause list with "and", maybe with verb ellipsis
        cls = [self.clause(g) for g in order]
        if uni and _chance(r, 0.3):
            cls[0] = self.clause(order[0], allow_away=False)
            parts = [self.render(cls[0])] + [f"{self.np(g.obj)} {self.loc(g, participle=False)}" for g in order[1:]]
        else:
            parts = [self.render(c, adverb=False) for c in cls]
        return self.add_exclusion(self.polite_multi(_join(r, parts)), others, 0.3 if others else 0.1)

    def ordered_places(self, gs: Sequence[_Goal], others: Sequence[str], uni: bool) -> str:
        r = self.rng
        k = len(gs)
        fam = int(r.integers(6))
        if uni and fam == 0:  # object order list with a shared place
            nps = [self.np(g.obj) for g in gs]
            kind = gs[0].kind
            verb = _pick(r, self.verbs[kind])
            dest = f"{self.prep(kind, verb)} {self.place_pl()}"
            one = f"{self.prep(kind, verb)} {self.place_np(gs[0], explicit_ok=False)}"
            if kind == "c" and _chance(r, 0.3):
                dest = one = "away"
                verb = "put"
            listed = _join(r, nps)
            coll = listed if others or _chance(r, 0.5) else _pick(r, ("everything", f"all the {self.oc_word(True)}",
                                                                      f"{self.all_n()} {self.oc_word(True)}"))
            i = int(r.integers(6))
            if i == 0:
                body = f"{verb} {listed} {dest}, {_pick(r, ('in that order', 'in this order', 'in exactly that order'))}"
            elif i == 1:
                body = f"{verb} {coll} {dest} one at a time, starting with {nps[0]}, " + \
                    ", ".join(f"then {x}" for x in nps[1:])
            elif i == 2:
                body = f"{nps[0]} first, " + ", ".join(f"then {x}" for x in nps[1:]) + f" -- {verb} them {dest}"
            elif i == 3:
                body = f"{verb} {nps[0]} {one} first, then " + ", then ".join(nps[1:])
            elif i == 4:
                mids = "".join(f", then {x}" for x in nps[1:-1])
                body = f"{verb} {nps[0]} {one}{mids}, finishing with {nps[-1]}"
            else:
                body = f"{verb} {coll} {dest} one by one: first {nps[0]}, " + \
                    ", ".join(f"then {x}" for x in nps[1:-1]) + (", " if k > 2 else "") + f"and last {nps[-1]}"
            return self.add_exclusion(body, others, 0.3 if others else 0.1)
        if fam == 1 and uni and k == 2:  # "then do the same with B" / "the other one"
            first = self.render(self.clause(gs[0], dest=self.place_np(gs[0], explicit_ok=False)))
            b = self.np(gs[1].obj)
            if self.n == 2 and _chance(r, 0.5):
                b = _pick(r, ("the other one", f"the other {self.oc_word()}"))
            tail = _pick(r, (f"then do the same with {b}", f"then {b}", f"and after that {b}",
                             f"then {b} after it", f"and then {b}"))
            return self.add_exclusion(f"{first}, {tail}", others, 0.3 if others else 0.1)
        cls = [self.clause(g) for g in gs]
        if fam == 2:  # pronoun chain
            take = _pick(r, self.take)
            parts = []
            for g in gs:
                v, rest = self.clause(g, subj="it")
                parts.append(f"{take} {self.np(g.obj)} and {v} {rest}")
            return self.add_exclusion(self.seq([(p.split(" ", 1)[0], p.split(" ", 1)[1]) for p in parts],
                                               compound=True), others, 0.2)
        states = []
        if k == 2:
            g = gs[0]
            states = [f"{self.np(g.obj)} is {self.loc(g)}"]
        return self.add_exclusion(self.seq(cls, states), others, 0.3 if others else 0.1)

    # ---------------------------------------------------------------- negatives
    def word_free(self, phrase: str) -> bool:
        return not any(w in self.words for w in phrase.split())


# ------------------------------------------------------------------------------------------------ protocol
def sample_goals(vocab: TaskVocabulary, rng: np.random.Generator) -> tuple[str, ...]:
    """A possible goal list: chains of distinct objects (towers) or a subset of objects sent to their places."""
    objs = list(vocab.objects)
    n = len(objs)
    for _ in range(100):
        skill = _pick(rng, vocab.goal_skills)
        nargs = _n_args(vocab.skills[skill])
        goals: list[str] = []
        if nargs >= 2 and (vocab.ordered_by_support or not vocab.places):
            perm = [objs[j] for j in rng.permutation(n)]
            size = int(rng.integers(2, n + 1)) if n >= 2 else 0
            chain = perm[:size]
            goals = [vocab.goal(skill, (chain[i], chain[i - 1])) for i in range(1, len(chain))]
            left = perm[size:]
            if len(left) >= 2 and _chance(rng, 0.3):
                c2 = left[: int(rng.integers(2, len(left) + 1))]
                goals += [vocab.goal(skill, (c2[i], c2[i - 1])) for i in range(1, len(c2))]
            goals = list(vocab.canonical_order(goals))
        else:
            weights = np.ones(n)
            weights[-1] = 1.5
            k = int(rng.choice(np.arange(1, n + 1), p=weights / weights.sum()))
            chosen = [objs[j] for j in rng.permutation(n)[:k]]
            for o in chosen:
                if nargs >= 2:
                    place = vocab.own_place.get(o) or _pick(rng, list(vocab.places))
                    goals.append(vocab.goal(skill, (o, place)))
                else:
                    goals.append(vocab.goal(skill, (o,)))
        if goals and vocab.impossibility(goals) is None:
            return tuple(goals)
    raise ValueError(f"cannot sample a possible goal list for task {vocab.task!r}")


def phrase(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator, split: str) -> tuple[str, bool]:
    """An instruction asking for exactly ``goals``, and whether its words impose their order."""
    lang = _Lang(vocab, rng)
    gs = [lang.info(g) for g in goals]
    if all(g.kind == "s" for g in gs):
        text, ordered = lang.tower_phrase(gs), bool(vocab.ordered_by_support)
        if not vocab.ordered_by_support:
            ordered = False
    else:
        text, ordered = lang.place_phrase(gs)
    if len(gs) < 2 and not vocab.ordered_by_support:
        ordered = False
    return lang.style(text), ordered


def missing_verbs(vocab: TaskVocabulary) -> list[str]:
    """This module's distractor verbs for skills ``vocab`` lacks (none shares a word with its skill words)."""
    skill_words = {w for ws in vocab.skill_words.values() for p in ws for w in p.split()}
    return [v for v in dict.fromkeys(MISSING_VERBS) if not any(w in skill_words for w in v.split())]


def negatives(vocab: TaskVocabulary, rng: np.random.Generator, split: str) -> tuple[str, str]:
    """(text, kind): an instruction to refuse, kind in out_of_vocabulary | missing_skill | impossible | empty."""
    lang = _Lang(vocab, rng)
    kind = _pick(rng, ("out_of_vocabulary", "missing_skill", "impossible", "empty"))
    if kind == "impossible":
        text = _impossible(lang)
        if text is None:
            kind, text = "empty", _empty(lang)
    elif kind == "out_of_vocabulary":
        text = _oov(lang)
    elif kind == "missing_skill":
        text = _missing(lang)
    else:
        text = _empty(lang)
    return (lang.style(text, suffix=kind != "empty") if text else text), kind


def _real_goal(lang: _Lang) -> _Goal:
    v = lang.v
    g = lang.info(sample_goals(v, lang.rng)[0])
    return g


def _oov(lang: _Lang) -> str:
    r = lang.rng
    colours = [c for c in _OOV_COLOURS if lang.word_free(c)]
    shapes = [s for s in _OOV_SHAPES if lang.word_free(s)]
    things = [o for o in _OOV_OBJECTS if lang.word_free(o)]
    places = [p for p in _OOV_PLACES if lang.word_free(p)]
    g = _real_goal(lang)
    # a fake object
    fake_objs = [f"the {o}" for o in things]
    if lang.oc:
        fake_objs += [f"the {c} {lang.oc_word()}" for c in colours] + [f"the {s} {lang.oc_word()}" for s in shapes]
    # a fake destination
    if g.kind == "s":
        fake_dest = [f"the {p}" for p in places] + fake_objs
    else:
        fake_dest = [f"the {p}" for p in places]
        if lang.pc:
            fake_dest += [f"the {c} {_pick(r, lang.pc)}" for c in colours + shapes] + \
                         [f"the {o} {_pick(r, lang.pc)}" for o in things if " " not in o]
    i = int(r.integers(5))
    verb = _pick(r, lang.verbs[g.kind])
    prep = lang.prep(g.kind, verb)
    fo = _pick(r, fake_objs)
    fd = _pick(r, fake_dest)
    if i == 0:  # fake object, real destination
        dest = lang.place_np(g)
        if g.kind != "s" and g.own and lang.pc and _chance(r, 0.5):
            dest = f"its {_pick(r, lang.pc)}"
        return lang.polite((verb, f"{fo} {prep} {dest}"))
    if i == 1:  # real object, fake destination
        return lang.polite((verb, f"{lang.np(g.obj)} {prep} {fd}"))
    if i == 2:  # mixed with a real goal
        real = lang.render(lang.clause(g))
        fake = f"{verb} {fo} {prep} {fd if _chance(r, 0.4) else lang.place_np(g)}"
        return _pick(r, (f"{real}, then {fake}", f"{fake} and {real}", f"{real} and {fake}"))
    if i == 3:  # a fake object in a list
        objs = [lang.np(o) for o in lang.objs[: int(r.integers(1, lang.n + 1))]] + [fo]
        objs = [objs[j] for j in r.permutation(len(objs))]
        if g.kind == "s":
            return f"{_pick(r, lang.build)} a tower of {_join(r, objs)}"
        return f"{verb} {_join(r, objs)} {prep} {lang.place_pl()}"
    return lang.state(fo, f"{lang.loc(g, lang.place_np(g), False)}", False)


def _missing(lang: _Lang) -> str:
    r = lang.rng
    verbs = missing_verbs(lang.v)
    mv = _pick(r, verbs)
    o = lang.np(_pick(r, lang.objs))
    def act_of(np_: str) -> str:
        if " " in mv:
            a, b = mv.split(" ", 1)
            return f"{a} {np_} {b}" if np_ in ("it", "everything") or _chance(r, 0.5) else f"{mv} {np_}"
        return f"{mv} {np_}"

    act = act_of(o)
    i = int(r.integers(5))
    if i == 0:
        return _pick(r, (act, f"please {act}", f"could you {act}?", f"can you {act}?", f"I'd like you to {act}",
                         f"I need you to {act}", f"would you {act} for me?", f"go ahead and {act}"))
    if i == 1:
        g = _real_goal(lang)
        real = lang.render(lang.clause(g))
        return _pick(r, (f"{act}, then {real}", f"{real} and then {act}", f"first {act}, then {real}"))
    if i == 2:
        o2 = lang.np(_pick(r, lang.objs))
        return f"{act} and {o2}" if o2 != o else f"{act} and then {_pick(r, lang.take)} it"
    if i == 3:
        return _pick(r, (act_of("everything"), f"{act} and leave the rest alone", f"just {act}, that's all"))
    return f"{_pick(r, lang.take)} {o} and {act_of('it')}"


def _impossible(lang: _Lang) -> str | None:
    r, v = lang.rng, lang.v
    skill = v.goal_skills[0]
    name = v.skills[skill].split("(")[0]
    objs = lang.objs
    tower = v.ordered_by_support or not v.places
    for _ in range(30):
        perm = [objs[j] for j in r.permutation(len(objs))]
        a = perm[0]
        if tower:
            kinds = ["self"] + (["cycle", "share", "two"] if len(objs) >= 2 else []) + \
                (["share", "two", "cycle3"] if len(objs) >= 3 else [])
            kind = _pick(r, kinds)
            vb = _pick(r, lang.verbs["s"])
            A = lang.np(a)
            if kind == "self":
                goals = [f"{name}({a},{a})"]
                text = _pick(r, (f"{vb} {A} on {lang.np(a)}", f"{vb} {A} on itself", f"{vb} {A} on top of itself",
                                 f"I want {A} on top of {lang.np(a)}"))
            elif kind == "cycle":
                b = perm[1]
                goals = [f"{name}({a},{b})", f"{name}({b},{a})"]
                text = _pick(r, (f"{vb} {A} on {lang.np(b)} and {lang.np(b)} on {lang.np(a)}",
                                 f"{vb} {A} on top of {lang.np(b)}, then {lang.np(b)} on top of {lang.np(a)}",
                                 f"I want {A} on {lang.np(b)} and {lang.np(b)} on {lang.np(a)} at the same time"))
            elif kind == "cycle3":
                b, c = perm[1], perm[2]
                goals = [f"{name}({a},{b})", f"{name}({b},{c})", f"{name}({c},{a})"]
                text = f"{vb} {A} on {lang.np(b)}, {lang.np(b)} on {lang.np(c)} and {lang.np(c)} on {lang.np(a)}"
            elif kind == "share":
                b, c = perm[1], perm[2] if len(perm) > 2 else perm[0]
                goals = [f"{name}({a},{c})", f"{name}({b},{c})"]
                text = _pick(r, (f"{vb} {A} on {lang.np(c)} and {lang.np(b)} on {lang.np(c)} too",
                                 f"{vb} both {A} and {lang.np(b)} directly on {lang.np(c)}",
                                 f"{vb} {A} and {lang.np(b)} side by side on top of {lang.np(c)}"))
            else:
                b, c = perm[1], perm[2] if len(perm) > 2 else perm[0]
                goals = [f"{name}({a},{b})", f"{name}({a},{c})"]
                text = _pick(r, (f"{vb} {A} on {lang.np(b)} and on {lang.np(c)}",
                                 f"{vb} {A} on {lang.np(b)}, and also {vb} it on {lang.np(c)}",
                                 f"I want {A} on top of {lang.np(b)} and on top of {lang.np(c)} at once"))
        else:
            places = list(v.places)
            g = lang.info(sample_goals(v, r)[0])
            a = g.obj
            A = lang.np(a)
            vb = _pick(r, lang.verbs[g.kind])
            pr = lang.prep(g.kind, vb)
            own = v.own_place.get(a)
            wrong = [p for p in places if p != own]
            kind = _pick(r, ("wrong", "wrong", "object", "two", "all_one"))
            if kind == "wrong" and wrong:
                p = _pick(r, wrong)
                goals = [f"{name}({a},{p})"]
                pw = f"the {_pick(r, v.places[p])}"
                text = _pick(r, (f"{vb} {A} {pr} {pw}", f"I want {A} {lang.loc(g, pw, False)}",
                                 f"could you {vb} {A} {pr} {pw}?", f"{A} goes {lang.loc(g, pw, False)}"))
            elif kind == "object" and len(objs) >= 2:
                b = perm[1] if perm[1] != a else perm[0]
                goals = [f"{name}({a},{b})"]
                text = f"{vb} {A} {pr} {lang.np(b)}"
            elif kind == "two" and wrong and own:
                p = _pick(r, wrong)
                goals = [f"{name}({a},{own})", f"{name}({a},{p})"]
                text = f"{vb} {A} {pr} the {_pick(r, v.places[own])} and {pr} the {_pick(r, v.places[p])}"
            elif kind == "all_one" and places:
                p = _pick(r, places)
                goals = [f"{name}({o},{p})" for o in objs]
                text = f"{vb} {_pick(r, ('everything', 'all of them', 'all the ' + lang.oc_word(True)))} {pr} the " \
                       f"{_pick(r, v.places[p])}"
            else:
                continue
        if v.impossibility(goals) is not None:
            return text
    return None


def _empty(lang: _Lang) -> str:
    r = lang.rng
    if _chance(r, 0.2):
        o = lang.np(_pick(r, lang.objs))
        return _pick(r, (f"leave {o} alone", f"don't touch {o}", f"{o} stays where it is", f"please don't move {o}",
                         f"ignore {o}", f"keep {o} where it is, that's all", "leave everything alone",
                         "don't touch anything, thanks"))
    return _pick(r, _EMPTY)


__all__ = ["MISSING_VERBS", "missing_verbs", "negatives", "phrase", "sample_goals"]
