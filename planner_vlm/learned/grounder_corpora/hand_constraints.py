"""Grounder training phrasings, hand "constraints": goals stated as rules and final arrangements.

This hand writes what a user types when they describe how things should *end up* ("every nut on the peg of the
same shape", "the tower should read red, green, blue from the bottom up", "everything except the milk in its bin")
as well as plain imperatives, sequences, exclusions and conditionals. It implements the ``Phrasing`` protocol of
:mod:`planner_vlm.learned.grounder_train` with module-level functions, pure Python + numpy, deterministic given the
rng. Every object, place and verb word comes from the :class:`~tandem.core.vocabulary.TaskVocabulary`; the module
branches on the vocabulary's structure (``ordered_by_support``, ``own_place``, the goal template's arity), never on
the task's name.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tandem.core.vocabulary import TaskVocabulary, parse_goal

# --------------------------------------------------------------------------------------------------- English tables
#: Verbs this hand knows how to inflect: base -> (gerund, participle, third person, frame). Frames: "loc" takes an
#: object and a destination ("put X on Y"); "to" takes "to" + destination (containers only); "bare" means "put
#: away" on its own ("sort X", "stow X away").
_VERBS: dict[str, tuple[str, str, str, str]] = {
    "put": ("putting", "put", "puts", "loc"),
    "place": ("placing", "placed", "places", "loc"),
    "set": ("setting", "set", "sets", "loc"),
    "move": ("moving", "moved", "moves", "loc"),
    "stack": ("stacking", "stacked", "stacks", "loc"),
    "pile": ("piling", "piled", "piles", "loc"),
    "stand": ("standing", "stood", "stands", "loc"),
    "drop": ("dropping", "dropped", "drops", "loc"),
    "insert": ("inserting", "inserted", "inserts", "loc"),
    "slide": ("sliding", "slid", "slides", "loc"),
    "fit": ("fitting", "fitted", "fits", "loc"),
    "thread": ("threading", "threaded", "threads", "loc"),
    "mount": ("mounting", "mounted", "mounts", "loc"),
    "bring": ("bringing", "brought", "brings", "to"),
    "return": ("returning", "returned", "returns", "to"),
    "store": ("storing", "stored", "stores", "bare"),
    "stow": ("stowing", "stowed", "stows", "bare"),
    "sort": ("sorting", "sorted", "sorts", "bare"),
    "tidy": ("tidying", "tidied", "tidies", "bare"),
}
#: Verbs that may carry a destination but read best with "in"/"into" only (never "onto").
_CONTAINER_ONLY = {"store", "stow"}

_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_SHAPES = {"square", "round", "triangle", "triangular", "hexagonal", "oval", "star", "octagonal", "circular"}
_COLOURS = {"red", "green", "blue", "yellow", "purple", "orange", "pink", "black", "white", "brown", "grey"}
_COLLECTIVE = ("items", "things", "objects")

#: Missing-skill distractor verbs: (base, participle). Exported for the test (no positive may contain them).
MISSING_SKILL_VERBS: tuple[tuple[str, str], ...] = (
    ("wipe", "wiped"), ("push", "pushed"), ("rotate", "rotated"), ("open", "opened"), ("pour", "poured"),
    ("throw", "thrown"), ("shake", "shaken"), ("flip", "flipped"), ("hide", "hidden"), ("paint", "painted"),
    ("knock over", "knocked over"), ("unstack", "unstacked"), ("spin", "spun"), ("squeeze", "squeezed"),
    ("wash", "washed"), ("roll", "rolled"), ("tilt", "tilted"), ("turn over", "turned over"),
    ("crush", "crushed"), ("kick", "kicked"), ("polish", "polished"), ("weigh", "weighed"),
    ("unscrew", "unscrewed"), ("twist", "twisted"), ("heat", "heated"), ("fold", "folded"),
    ("clean", "cleaned"), ("scatter", "scattered"), ("shove", "shoved"), ("toss", "tossed"),
    ("smash", "smashed"), ("scrub", "scrubbed"), ("empty", "emptied"), ("unwrap", "unwrapped"),
)

_OOV_ATTRS = ("purple", "yellow", "orange", "pink", "black", "white", "brown", "grey", "silver", "golden",
              "triangle", "triangular", "hexagonal", "oval", "octagonal", "star", "wooden", "metal", "striped")
_OOV_ITEMS = ("banana", "apple", "cup", "mug", "sponge", "spoon", "fork", "plate", "bowl", "pear", "lemon",
              "tomato", "jar of jam", "water bottle", "teddy bear", "remote", "phone", "stapler", "screwdriver",
              "tennis ball", "marker", "wrench", "bag of chips", "yogurt", "egg")
_OOV_PLACES = ("shelf", "drawer", "table", "floor", "windowsill", "basket", "tray", "fridge", "sink", "counter",
               "cupboard", "trash")

_EMPTY = ("", " ", "hello", "hi", "hey robot", "thanks", "thanks, that's all", "that's all", "do nothing",
          "never mind", "nevermind", "wait", "stop", "hold on", "nothing for now", "ok", "okay",
          "leave everything where it is", "everything stays as it is", "don't move anything",
          "nothing needs to move", "keep everything where it is", "cancel that", "forget it", "good job",
          "no thanks", "hmm", "are you there?", "just wait there", "do not do anything", "nothing, thanks",
          "sorry, never mind", "ignore that", "all good, nothing to do", "?", "...", "thank you robot")


# --------------------------------------------------------------------------------------------------- small helpers
def _pick(rng: np.random.Generator, seq: Sequence):
    return seq[int(rng.integers(len(seq)))]


def _p(rng: np.random.Generator, prob: float) -> bool:
    return bool(rng.random() < prob)


def _shuffled(rng: np.random.Generator, seq: Sequence) -> list:
    items = list(seq)
    return [items[i] for i in rng.permutation(len(items))]


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _join(rng: np.random.Generator, parts: Sequence[str], conj: str = "and") -> str:
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return f"{parts[0]} {conj} {parts[1]}"
    comma = "," if _p(rng, 0.4) else ""
    return ", ".join(parts[:-1]) + f"{comma} {conj} {parts[-1]}"


def _n_args(template: str) -> int:
    idx = [int(f) for _, f, _, _ in string.Formatter().parse(template) if f is not None and f.isdigit()]
    return max(idx) + 1 if idx else 0


@dataclass
class _Task:
    """What this hand derives from a vocabulary: structure, verbs, prepositions, class nouns."""

    vocab: TaskVocabulary
    skill: str
    pred: str
    nargs: int
    kind: str  # "stack" (object on object), "peg" (object on a place), "bin" (object into its own place)
    loc_verbs: tuple[str, ...]
    to_verbs: tuple[str, ...]
    bare_verbs: tuple[str, ...]
    prep_dyn: tuple[str, ...]
    prep_static: tuple[str, ...]
    obj_nouns: tuple[str, ...]
    place_nouns: tuple[str, ...]
    tower_nouns: tuple[str, ...]


def _shared_last_words(phrases: Sequence[Sequence[str]]) -> tuple[str, ...]:
    sets = []
    for words in phrases:
        sets.append({w.split()[-1] for w in words if len(w.split()) > 1 and w.split()[-1] not in ("one", "ones")})
    if not sets:
        return ()
    common = set.intersection(*sets)
    order = [w.split()[-1] for w in phrases[0] if len(w.split()) > 1]
    return tuple(dict.fromkeys(w for w in order if w in common))


def _task(vocab: TaskVocabulary) -> _Task:
    skill = vocab.goal_skills[0]
    template = vocab.skills[skill]
    pred = template.split("(", 1)[0]
    nargs = _n_args(template)
    if nargs >= 2 and not vocab.places:
        kind = "stack"
    elif nargs >= 2:
        kind = "peg"
    else:
        kind = "bin"
    words = [w for w in vocab.skill_words.get(skill, ()) if w in _VERBS]
    loc = [w for w in words if _VERBS[w][3] == "loc"]
    if kind != "bin":
        loc = [w for w in loc if w not in _CONTAINER_ONLY]
    if kind == "stack":
        loc = [w for w in loc if w not in ("drop", "insert", "slide", "fit", "thread", "mount")]
    if not loc:
        loc = [vocab.skill_words[skill][0]] if vocab.skill_words.get(skill) else ["put"]
    to = [w for w in words if _VERBS[w][3] == "to"] if kind == "bin" else []
    bare = [w for w in words if _VERBS[w][3] == "bare"] if (kind == "bin" or vocab.own_place) else []
    head = pred.split("_")[0].lower()
    if head == "in":
        prep_dyn, prep_static = ("into", "in", "into", "inside"), ("in", "inside")
    else:
        prep_dyn, prep_static = ("on", "onto", "onto", "on"), ("on",)
    if kind == "stack":
        prep_dyn = ("on", "onto", "on top of", "on", "onto", "on top of", "atop")
        prep_static = ("on", "on top of", "on", "on top of", "atop")
    obj_nouns = _shared_last_words(list(vocab.objects.values()))
    place_nouns = _shared_last_words(list(vocab.places.values())) if vocab.places else ()
    towers = tuple(w for w in ("tower", "stack", "pile") if w in vocab.words()) or ("stack",)
    return _Task(vocab, skill, pred, nargs, kind, tuple(loc), tuple(to), tuple(bare), prep_dyn, prep_static,
                 obj_nouns, place_nouns, towers)


# --------------------------------------------------------------------------------------------------- noun phrases
def _det(rng: np.random.Generator, word: str, quote: bool = True) -> str:
    if quote and _p(rng, 0.03):
        word = f'"{word}"'
    return word if _p(rng, 0.06) else f"the {word}"


def _obj(T: _Task, rng: np.random.Generator, obj: str) -> str:
    """A noun phrase naming ``obj``: "the red cube", "the soda", "the square nut"."""
    words = T.vocab.objects[obj]
    word = _pick(rng, words)
    if T.obj_nouns and len(word.split()) == 1 and _p(rng, 0.25):
        word = f"{word} {_pick(rng, T.obj_nouns)}"
    return _det(rng, word)


def _own(T: _Task, obj: str) -> str | None:
    return T.vocab.own_place.get(obj)


def _place_explicit(T: _Task, rng: np.random.Generator, place: str) -> str:
    return _det(rng, _pick(rng, T.vocab.places[place]))


def _shared_attr_kind(T: _Task, obj: str, place: str) -> str | None:
    """"shape"/"colour" when the object's and place's first words are one shape/colour word."""
    ow = {w.split()[0] for w in T.vocab.objects[obj]}
    pw = {w.split()[0] for w in T.vocab.places[place]}
    common = ow & pw
    if common & _SHAPES:
        return "shape"
    if common & _COLOURS:
        return "colour"
    return None


def _place_implicit(T: _Task, rng: np.random.Generator, obj: str, plural: bool = False) -> str:
    """"its bin", "its own peg", "the matching post", "the right bin" (or the plural forms)."""
    noun = _pick(rng, T.place_nouns) if T.place_nouns else None
    if noun is None:
        return "where they belong" if plural else "where it belongs"
    nouns = _plural(noun)
    attr = _shared_attr_kind(T, obj, _own(T, obj)) if _own(T, obj) else None
    if plural:
        opts = [f"their {nouns}", f"their own {nouns}", f"the matching {nouns}", f"the right {nouns}",
                f"their {nouns}", f"the correct {nouns}", f"their proper {nouns}"]
        if attr:
            opts += [f"the {nouns} of the same {attr}", f"the {nouns} that match them"]
        else:
            opts += [f"the {nouns} that match them"]
        return _pick(rng, opts)
    opts = [f"its {noun}", f"its own {noun}", f"the matching {noun}", f"the right {noun}", f"its {noun}",
            f"the correct {noun}", f"its proper {noun}", f"the {noun} that matches it", f"its own {noun}"]
    if attr:
        opts += [f"the {noun} of the same {attr}", f"the {noun} with the same {attr}"]
    return _pick(rng, opts)


def _dest(T: _Task, rng: np.random.Generator, obj: str, place: str | None, plural_ok: bool = False) -> str:
    """Destination noun phrase of a container/peg goal: implicit when the place is the object's own."""
    if place is not None and (_own(T, obj) != place or _p(rng, 0.4)):
        return _place_explicit(T, rng, place)
    if place is None and _own(T, obj) and _p(rng, 0.4):
        return _place_explicit(T, rng, _own(T, obj))
    return _place_implicit(T, rng, obj)


def _group(T: _Task, rng: np.random.Generator, objs: Sequence[str]) -> str:
    """A noun phrase naming several objects: "the red and green cubes", "the milk, the can and the bread"."""
    objs = list(objs)
    if len(objs) >= 2 and T.obj_nouns and _p(rng, 0.3):
        attrs = []
        noun = _pick(rng, T.obj_nouns)
        for o in objs:
            cands = [w.split()[0] for w in T.vocab.objects[o] if len(w.split()) == 2 and w.split()[1] == noun]
            if not cands:
                break
            attrs.append(_pick(rng, cands))
        else:
            lead = "both " if len(objs) == 2 and _p(rng, 0.3) else ""
            return f"{lead}the {_join(rng, attrs)} {_plural(noun)}"
    nps = [_obj(T, rng, o) for o in objs]
    if len(objs) == 2 and _p(rng, 0.2):
        return f"both {nps[0]} and {nps[1]}"
    return _join(rng, nps)


def _collective(T: _Task, rng: np.random.Generator, n: int, total: int) -> str:
    """"all three cubes", "everything", "all of them", "each item", "both nuts"."""
    noun = _pick(rng, T.obj_nouns) if T.obj_nouns and _p(rng, 0.6) else _pick(rng, _COLLECTIVE)[:-1]
    nouns = _plural(noun)
    num = _NUMBERS[n] if n < len(_NUMBERS) else str(n)
    opts = [f"all the {nouns}", f"all {num} {nouns}", f"every {noun}", f"all of the {nouns}", f"the {num} {nouns}"]
    if n == 2:
        opts += [f"both {nouns}", f"both of the {nouns}", "both of them"]
    else:
        opts += [f"all {num}", "everything", f"all {num} of them"]
    return _pick(rng, opts)


def _rest_np(T: _Task, rng: np.random.Generator, rest: Sequence[str]) -> str:
    """The objects left alone: named, or "the other one(s)", "the rest", "the remaining ones"."""
    if _p(rng, 0.6):
        return _group(T, rng, rest)
    if len(rest) == 1:
        noun = _pick(rng, T.obj_nouns) if T.obj_nouns else "one"
        return _pick(rng, ("the other one", f"the other {noun}", "the last one", f"the remaining {noun}",
                           "the third one" if len(T.vocab.objects) == 3 else "the other one"))
    return _pick(rng, ("the rest", "the others", "the remaining ones", "the other ones", "everything else",
                       f"the other {_NUMBERS[len(rest)] if len(rest) < 11 else len(rest)}"))


def _attach(rng: np.random.Generator, text: str, leave: str, joiners: Sequence[str] = ("; ", ", ", ". ", " - ")) -> str:
    """``text`` followed by an exclusion ``leave`` (if any), with a joiner that suits it."""
    if not leave:
        return text
    text = text.rstrip(" .")
    if leave.startswith("and "):
        return f"{text}{_pick(rng, (' ', ', '))}{leave}"
    return f"{text}{_pick(rng, joiners)}{leave}"


def _leave(T: _Task, rng: np.random.Generator, rest: Sequence[str]) -> str:
    """An exclusion that adds no goal, or "" (a rest list may be empty: then only "nothing else"-like closers)."""
    if not rest:
        return _pick(rng, ("", "", "that's all", "nothing else", "and that's it", "that is all"))
    np_ = _rest_np(T, rng, rest)
    plural = len(rest) > 1 or np_ in ("the rest", "everything else")
    be = "are" if plural else "is"
    stay = "stay" if plural else "stays"
    opts = [f"leave {np_} alone", f"don't touch {np_}", f"do not move {np_}", f"{np_} {stay} where {'they' if plural else 'it'} {be}",
            f"keep {np_} where {'they' if plural else 'it'} {be}", f"ignore {np_}", f"leave {np_} where {'they' if plural else 'it'} {be}",
            f"don't move {np_}", f"{np_} can stay put", f"and leave {np_}", f"leave {np_} as {'they are' if plural else 'it is'}",
            "and leave everything else", "nothing else", "don't touch anything else", "leave the rest alone"]
    return _pick(rng, opts)


# --------------------------------------------------------------------------------------------------- style
_PREFIX = ("", "", "", "", "", "please ", "hey robot, ", "okay so ", "ok, ", "robot, ", "alright, ", "so, ",
           "hi! ", "now ", "right, ")
_SUFFIX = ("", "", "", "", "", "", " please", " for me", ", thanks", " thank you", " right now", ", please",
           " when you can", ", okay", " asap")


def _style(rng: np.random.Generator, text: str, question: bool = False, prefix_ok: bool = True) -> str:
    text = " ".join(text.split())
    if prefix_ok and _p(rng, 0.35):
        pre = _pick(rng, _PREFIX)
        if not (pre in ("please ", "now ") and text.split(" ", 1)[0] not in _VERBS):
            text = pre + text
    if _p(rng, 0.25):
        text = text + _pick(rng, _SUFFIX)
    if question:
        end = _pick(rng, ("?", "?", "?", "", " ?"))
    else:
        end = _pick(rng, ("", "", ".", ".", ".", "!", " .", "!!"))
    text = text.rstrip(" ,;:") + end
    r = rng.random()
    if r < 0.45:
        text = text[:1].upper() + text[1:]
    elif r < 0.5:
        text = text.upper()
    elif r < 0.53:
        text = " ".join(w[:1].upper() + w[1:] for w in text.split(" "))
    return text


# --------------------------------------------------------------------------------------------------- clauses
@dataclass
class _G:
    """One goal as this hand sees it: mover object, its destination (object or place, or None), the raw goal."""

    obj: str
    dest: str | None
    goal: str


def _parse(T: _Task, goal: str) -> _G:
    _, args = parse_goal(goal)
    return _G(args[0], args[1] if len(args) > 1 else None, goal)


def _put_away(T: _Task) -> bool:
    """Whether "put X away" names the goal: a container task whose goal verbs include "put"."""
    return T.kind == "bin" and "put" in T.vocab.skill_words.get(T.skill, ())


def _verb(T: _Task, rng: np.random.Generator) -> str:
    return _pick(rng, T.loc_verbs)


def _imp(T: _Task, rng: np.random.Generator, g: _G, first: bool = True, verb: str | None = None) -> str:
    """An imperative for one goal: "put the milk in its bin", "stack the red cube on the blue one"."""
    a = _obj(T, rng, g.obj)
    if T.kind == "stack":
        b = _obj(T, rng, g.dest)
        r = rng.random()
        v = verb or _verb(T, rng)
        if r < 0.72:
            return f"{v} {a} {_pick(rng, T.prep_dyn)} {b}"
        if r < 0.8:
            return f"{v} {a} down on {b}"
        if r < 0.88:
            return f"{_pick(rng, ('put', 'place', 'set')) if verb is None else v} {b} {_pick(rng, ('under', 'underneath', 'beneath', 'below'))} {a}"
        if r < 0.95:
            pick = _pick(rng, T.vocab.skill_words.get("pick", ("take",)))
            if pick in ("pick", "lift"):
                pick = f"{pick} up"
            return f"{pick} {a} and {v} it {_pick(rng, T.prep_dyn)} {b}"
        return f"{v} {a} so that it sits on {b}"
    d = _dest(T, rng, g.obj, g.dest)
    r = rng.random()
    if r < 0.55 or not (T.bare_verbs or T.to_verbs) and r < 0.8:
        return f"{verb or _verb(T, rng)} {a} {_pick(rng, T.prep_dyn)} {d}"
    if r < 0.65 and T.to_verbs:
        return f"{_pick(rng, T.to_verbs)} {a} to {d}"
    if r < 0.78 and T.kind == "bin" and (g.dest is None or _own(T, g.obj) == g.dest):
        # destination implied: "put the milk away", "sort the milk", "tidy up the milk"
        opts = [f"put {a} away", f"put away {a}"]
        for bv in T.bare_verbs:
            opts += {"sort": [f"sort {a}"], "tidy": [f"tidy up {a}", f"tidy {a} away"],
                     "store": [f"store {a} away", f"store {a}"], "stow": [f"stow {a} away", f"stow away {a}"]}.get(bv, [])
        if not _put_away(T):
            opts = opts[2:] or [f"{_verb(T, rng)} {a} {_pick(rng, T.prep_dyn)} {d}"]
        return _pick(rng, opts)
    if r < 0.9:
        pick = _pick(rng, T.vocab.skill_words.get("pick", ("take",)))
        if pick in ("pick", "lift"):
            pick = f"{pick} up"
        return f"{pick} {a} and {verb or _verb(T, rng)} it {_pick(rng, T.prep_dyn)} {d}"
    return f"{verb or _verb(T, rng)} {a} {_pick(rng, T.prep_dyn)} {d}"


def _np(T: _Task, rng: np.random.Generator, g: _G) -> str:
    """A verbless goal: "the milk in its bin", "the red cube on the blue one", "the blue under the red"."""
    a = _obj(T, rng, g.obj)
    if T.kind == "stack":
        b = _obj(T, rng, g.dest)
        r = rng.random()
        if r < 0.7:
            return f"{a} {_pick(rng, T.prep_static)} {b}"
        if r < 0.85:
            return f"{b} {_pick(rng, ('under', 'underneath', 'beneath', 'directly below', 'right under'))} {a}"
        return f"{a} {_pick(rng, ('directly above', 'right over', 'over', 'right on top of'))} {b}"
    d = _dest(T, rng, g.obj, g.dest)
    return f"{a} {_pick(rng, T.prep_static)} {d}"


def _state(T: _Task, rng: np.random.Generator, g: _G, mode: str = "is") -> str:
    """A goal as a state: "the milk is in its bin", "the red cube should sit on the blue one", "... to end up on ..."."""
    a = _obj(T, rng, g.obj)
    if T.kind == "stack":
        b = _obj(T, rng, g.dest)
        if _p(rng, 0.25):
            a, b = b, a
            rel = _pick(rng, ("under", "underneath", "beneath", "directly below"))
        else:
            rel = _pick(rng, T.prep_static + ("directly above",))
    else:
        b = _dest(T, rng, g.obj, g.dest)
        rel = _pick(rng, T.prep_static)
    if mode == "to":
        return f"{a} {_pick(rng, ('to end up', 'to be', 'to sit', 'to be sitting', 'to finish'))} {rel} {b}"
    if mode == "should":
        return f"{a} {_pick(rng, ('should be', 'should end up', 'needs to be', 'must be', 'has to be', 'should sit'))} {rel} {b}"
    if mode == "goes":
        return f"{a} {_pick(rng, ('goes', 'belongs', 'sits', 'ends up', 'is'))} {rel} {b}"
    return f"{a} is {rel} {b}"


_CLAUSE_INTRO = ("make it so that {s}", "the goal is that {s}", "when you're done, {s}", "by the end, {s}",
                 "arrange things so that {s}", "at the end, {s}", "the idea is that {s}", "I want it so that {s}",
                 "{s}", "ideally {s}", "once you're finished, {s}")
_NP_INTRO = ("I want {s}", "I'd like {s}", "I need {s}", "the end state: {s}", "what I want: {s}", "the goal: {s}",
             "goal: {s}", "final arrangement: {s}")
#: Marks a text that is already styled (a question): :func:`phrase` returns it as it is.
_DONE = "\x01"


def _states(T: _Task, rng: np.random.Generator, gs: Sequence[_G]) -> str:
    """Goals as an end state: "make it so that the milk is in its bin", "I want the red to end up on the blue"."""
    gs = _shuffled(rng, gs)
    r = rng.random()
    if r < 0.5:
        mode = _pick(rng, ("is", "should", "goes"))
        return _pick(rng, _CLAUSE_INTRO).format(s=_join(rng, [_state(T, rng, g, mode) for g in gs]))
    if r < 0.75:
        return _pick(rng, ("I want ", "I'd like ", "I need ")) + _join(rng, [_state(T, rng, g, "to") for g in gs])
    return _pick(rng, _NP_INTRO).format(s=_join(rng, [_np(T, rng, g) for g in gs]))


# --------------------------------------------------------------------------------------------------- stacks
def _chain(goals: Sequence[str]) -> list[str] | None:
    """Bottom-first list of the cubes of a single chain of stacking goals, or None if the goals are not one chain."""
    pairs = [parse_goal(g)[1] for g in goals]
    on = {a: b for a, b in pairs}
    tops = set(on) - set(on.values())
    if len(tops) != 1:
        return None
    cur = next(iter(tops))
    seq = [cur]
    while cur in on:
        cur = on[cur]
        seq.append(cur)
    if len(seq) != len(pairs) + 1:
        return None
    return seq[::-1]


def _phrase_stack(T: _Task, rng: np.random.Generator, goals: Sequence[str]) -> str:
    gs = [_parse(T, g) for g in goals]
    chain = _chain(goals)
    rest = [o for o in T.vocab.objects if all(o not in (g.obj, g.dest) for g in gs)]
    tower = _pick(rng, T.tower_nouns)
    leave = _leave(T, rng, rest) if _p(rng, 0.45) or (rest and _p(rng, 0.3)) else ""
    if chain is None or len(chain) == 2:
        return _stack_generic(T, rng, gs, leave)
    names = [_obj(T, rng, o) for o in chain]
    n = len(chain)
    sv = _pick(rng, [v for v in T.loc_verbs if v in ("stack", "pile", "put")] or ["build"])
    full = set(chain) == set(T.vocab.objects)
    r = rng.random()
    if r < 0.12:
        lst = ", ".join(names)
        text = _pick(rng, (f"from the bottom up: {lst}", f"bottom to top: {lst}",
                           f"build a {tower} that reads {lst} from the bottom up",
                           f"{sv} them {lst}, from bottom to top" if full else f"build a {tower} from the bottom up: {lst}",
                           f"the {tower} should read {lst} from the bottom up",
                           f"make a {tower}, bottom to top: {lst}", f"{lst}, bottom to top"))
    elif r < 0.22:
        lst = ", ".join(names[::-1])
        text = _pick(rng, (f"top to bottom: {lst}", f"from top to bottom: {lst}",
                           f"the {tower} should read {lst} from top to bottom",
                           f"build a {tower} reading {lst} from the top down",
                           f"I want a {tower} that goes {lst}, top to bottom"))
    elif r < 0.36 and n == 3:
        base = _pick(rng, ("at the bottom", "at the base", "on the bottom", "as the base"))
        mid = _pick(rng, ("in the middle", "between them", "in between", "in the middle of the " + tower))
        top = _pick(rng, ("on top", "at the top", "on the top", "at the very top"))
        parts = [f"{names[0]} {base}", f"{names[1]} {mid}", f"{names[2]} {top}"]
        if mid == "between them":
            parts = [parts[0], parts[2], parts[1]]
        elif _p(rng, 0.3):
            parts = [parts[2], parts[1], parts[0]]
        lead = _pick(rng, ("", f"build a {tower} with ", f"stack {'the three' if full else 'them'}: " if full else "",
                           f"I want a {tower} with ", f"make a {tower}: "))
        text = lead + _join(rng, parts) if lead.endswith("with ") else lead + ", ".join(parts)
    elif r < 0.44 and n == 3 and full:
        base = _pick(rng, ("at the bottom", "at the base", "on the bottom"))
        top = _pick(rng, ("at the top", "on top"))
        mid = _pick(rng, ("", " and the remaining cube in between", " and the last one in the middle", ""))
        if T.obj_nouns:
            noun = _pick(rng, T.obj_nouns)
            what = _pick(rng, (f"the three {_plural(noun)}", f"all three {_plural(noun)}", "all three", "them all"))
        else:
            what = _pick(rng, ("all three", "them all"))
        text = _pick(rng, (f"{sv} {what} into one {tower} with {names[0]} {base} and {names[2]} {top}{mid}",
                           f"build a {tower} of {what} with {names[0]} {base} and {names[2]} {top}{mid}",
                           f"a {tower} of {what}: {names[0]} {base}, {names[2]} {top}{mid}"))
    elif r < 0.7:
        # sequence of steps, bottom up (canonical) or stated with "but first"/"after"
        steps = gs
        s = rng.random()
        if s < 0.3:
            parts = [_imp(T, rng, steps[0])] + [_np(T, rng, g) if _p(rng, 0.5) else _imp(T, rng, g) for g in steps[1:]]
            conns = [_pick(rng, (", then ", ", and then ", "; then ", ", after that ", ". next, ", " and then ", ", next "))
                     for _ in parts[1:]]
            text = parts[0] + "".join(c + p for c, p in zip(conns, parts[1:]))
            if _p(rng, 0.3):
                text = "first " + text
        elif s < 0.45:
            nums = _pick(rng, ("paren", "step", "ord"))
            items = [_imp(T, rng, g) for g in steps]
            if nums == "paren":
                text = " ".join(f"{i + 1}) {t}" for i, t in enumerate(items))
            elif nums == "step":
                text = ". ".join(f"step {_NUMBERS[i + 1]}: {t}" for i, t in enumerate(items))
            else:
                text = "; ".join(f"{_ORDINALS[i]}, {t}" for i, t in enumerate(items))
        elif s < 0.6 and len(steps) == 2:
            a, b = steps
            text = _pick(rng, (f"{_imp(T, rng, b)}, but first {_imp(T, rng, a)}",
                               f"once {_state(T, rng, a)}, {_imp(T, rng, b)}",
                               f"{_imp(T, rng, b)} only after {_state(T, rng, a)}",
                               f"{_imp(T, rng, a)}; once that's done, {_imp(T, rng, b)}",
                               f"before you {_imp(T, rng, b)}, {_imp(T, rng, a)}",
                               f"{_imp(T, rng, b)} after you {_imp(T, rng, a)}"))
        elif s < 0.8:
            lead = _pick(rng, ("", "", f"{_pick(rng, T.loc_verbs)} ", "I want ", "I'd like "))
            text = lead + _join(rng, [_np(T, rng, g) for g in _shuffled(rng, steps)])
        else:
            text = _states(T, rng, steps)
    else:
        # relational chains and "with ... resting on it"
        if n == 3:
            a, b, c = names
            text = _pick(rng, (f"{c} on {b} on {a}", f"{c} on {b}, which sits on {a}",
                               f"{a} under {b}, and {b} under {c}",
                               f"{sv} {b} on {a}, with {c} resting on top of {_obj(T, rng, chain[1])}",
                               f"{a} with {b} resting on it, and {c} on {_obj(T, rng, chain[1])}",
                               f"{a} with {b} on it and {c} on top of that",
                               f"{a} at the bottom, then {b}, then {c} on top",
                               f"{c} over {b} over {a}",
                               f"build a {tower}: {b} on {a}, {c} on {b}"))
        else:
            steps = [f"{names[i + 1]} on {names[i]}" for i in range(n - 1)]
            text = f"build a {tower}: " + ", ".join(steps)
        if _p(rng, 0.3):
            text = _pick(rng, ("I want ", "make ", "I'd like ", "the goal: ")) + text
    if leave:
        text = _attach(rng, text, leave)
    return text


def _stack_generic(T: _Task, rng: np.random.Generator, gs: list[_G], leave: str) -> str:
    """One or several stacking goals said one by one (a pair, or goals that are not one chain)."""
    r = rng.random()
    only = _pick(rng, ("", "", "", "just ", "only ")) if len(gs) == 1 else ""
    if r < 0.45:
        text = only + " and ".join(_imp(T, rng, g) for g in gs)
    elif r < 0.6:
        text = _pick(rng, ("can you ", "could you ", "would you ", "will you ", "can you please ")) + \
            " and ".join(_imp(T, rng, g) for g in gs)
        return _DONE + _style(rng, _attach(rng, text, leave, ("; ", ", ")), question=True, prefix_ok=False)
    elif r < 0.8:
        text = _states(T, rng, gs)
    elif r < 0.9:
        tower = _pick(rng, T.tower_nouns)
        g = gs[0]
        if len(gs) == 1:
            a, b = _obj(T, rng, g.obj), _obj(T, rng, g.dest)
            noun = _pick(rng, T.obj_nouns) if T.obj_nouns else "object"
            text = _pick(rng, (f"make a two-{noun} {tower} with {b} at the bottom and {a} on top",
                               f"build a small {tower}: {b} at the base, {a} on top",
                               f"{b} with {a} resting on it", f"{b} on the bottom, {a} on top",
                               f"I want {b} under {a}", f"{a} over {b}", f"{a} on {b}"))
        else:
            text = _join(rng, [_np(T, rng, g) for g in gs])
    else:
        text = only + _join(rng, [_np(T, rng, g) for g in gs])
        if _p(rng, 0.5):
            text += _pick(rng, (", please", " is all I need", ", that's the goal"))
    if leave:
        text = _attach(rng, text, leave, ("; ", ", ", ". ", " but "))
    return text


# --------------------------------------------------------------------------------------------------- places
def _all_own(T: _Task, gs: Sequence[_G]) -> bool:
    return all(_own(T, g.obj) is not None and (g.dest is None or g.dest == _own(T, g.obj)) for g in gs)


def _phrase_place(T: _Task, rng: np.random.Generator, goals: Sequence[str]) -> tuple[str, bool]:
    gs = [_parse(T, g) for g in goals]
    objs = [g.obj for g in gs]
    rest = [o for o in T.vocab.objects if o not in objs]
    k = len(gs)
    own = _all_own(T, gs)
    if k >= 2 and _p(rng, 0.4):
        return _ordered_place(T, rng, gs, rest), True
    r = rng.random()
    leave = _leave(T, rng, rest) if (rest and _p(rng, 0.35)) or _p(rng, 0.1) else ""
    if own and r < 0.3:
        text = _collective_place(T, rng, gs, rest)
        if text is not None:
            return text, False
    if r < 0.5 and k >= 2 and own:
        grp = _group(T, rng, objs)
        pl = _place_implicit(T, rng, objs[0], plural=True)
        opts = [f"{_verb(T, rng)} {grp} {_pick(rng, T.prep_dyn)} {pl}", f"put {grp} away", f"{grp} {_pick(rng, T.prep_static)} {pl}",
                f"I'd like {grp} {_pick(rng, T.prep_static)} {pl}", f"{grp}: {_pick(rng, T.prep_dyn)} {pl}",
                f"{_verb(T, rng)} {grp} {_pick(rng, T.prep_dyn)} {pl}, each {_pick(rng, T.prep_static)} {_place_implicit(T, rng, objs[0])}"]
        if not _put_away(T):
            opts = [o for o in opts if not o.startswith("put ")]
        for bv in T.bare_verbs:
            opts += {"sort": [f"sort {grp}"], "tidy": [f"tidy up {grp}"], "stow": [f"stow {grp} away"],
                     "store": [f"store {grp} away"]}.get(bv, [])
        text = _pick(rng, opts)
        if "each" in text and not text.endswith(("it", "its")) and "its " not in text.split("each", 1)[1] and \
                "matches it" not in text:
            text = text.split(", each", 1)[0]
    elif r < 0.7:
        parts = [_imp(T, rng, gs[0])] + [_np(T, rng, g) if _p(rng, 0.5) else _imp(T, rng, g) for g in gs[1:]]
        order = _shuffled(rng, range(k))
        parts = [parts[i] for i in order] if all(p.split()[0] in _VERBS or p.startswith(("pick", "take", "grab", "lift"))
                                                 for p in parts) else parts
        text = _join(rng, parts)
        if k == 1 and _p(rng, 0.3):
            text = _pick(rng, ("just ", "only ", "simply ")) + text
    elif r < 0.82:
        text = _pick(rng, ("can you ", "could you ", "would you please ", "will you ", "can you please ")) + \
            _join(rng, [_imp(T, rng, g) for g in _shuffled(rng, gs)])
        if leave:
            text = _attach(rng, text, leave, ("; ", ", "))
        return _DONE + _style(rng, text, question=True, prefix_ok=False), False
    else:
        text = _states(T, rng, gs)
    if leave:
        text = _attach(rng, text, leave)
    return text, False


def _collective_place(T: _Task, rng: np.random.Generator, gs: Sequence[_G], rest: Sequence[str]) -> str | None:
    """"every nut on the peg of the same shape", "everything except the milk in its bin", "only the can"."""
    objs = [g.obj for g in gs]
    n_all = len(T.vocab.objects)
    noun = _pick(rng, T.obj_nouns) if T.obj_nouns else _pick(rng, _COLLECTIVE)[:-1]
    pl1 = _place_implicit(T, rng, objs[0])
    plN = _place_implicit(T, rng, objs[0], plural=True)
    prep = _pick(rng, T.prep_static)
    v = _verb(T, rng)
    if not rest:
        col = _collective(T, rng, n_all, n_all)
        opts = [f"every {noun} {prep} {pl1}", f"each {noun} {prep} {pl1}", f"{v} {col} {_pick(rng, T.prep_dyn)} {plN}",
                f"{v} each {noun} {_pick(rng, T.prep_dyn)} {pl1}", f"everything {prep} {pl1}",
                f"{v} everything {_pick(rng, T.prep_dyn)} {pl1}", f"make sure every {noun} ends up {prep} {pl1}",
                f"{col} {prep} {plN}", f"each of them {prep} {pl1}"]
        if _put_away(T):
            opts += ["put everything away", f"put {col} away"]
        for bv in T.bare_verbs:
            opts += {"sort": [f"sort {col}", "sort everything", f"sort all the {_plural(noun)}"],
                     "tidy": ["tidy up everything", f"tidy up {col}"],
                     "stow": ["stow everything away"], "store": [f"store {col} away"]}.get(bv, [])
        return _pick(rng, opts)
    if len(rest) <= 2 and len(objs) >= 1 and len(objs) >= len(rest):
        ex = _group(T, rng, rest)
        but = _pick(rng, (f"everything except {ex}", f"all but {ex}", f"all of them apart from {ex}",
                          f"everything but {ex}", f"every {noun} except {ex}", f"all the {_plural(noun)} except {ex}",
                          f"everything other than {ex}")
                   + ((f"all {_NUMBERS[len(objs)]} {_plural(noun)} other than {ex}",) if 3 <= len(objs) < 11 else ()))
        opts = [f"{v} {but} {_pick(rng, T.prep_dyn)} {plN}", f"{but} {prep} {plN}", f"{but} should go {prep} {plN}",
                f"I want {but} {prep} {plN}"]
        if _put_away(T):
            opts += [f"put away {but}"]
        for bv in T.bare_verbs:
            opts += {"sort": [f"sort {but}"], "tidy": [f"tidy up {but}"]}.get(bv, [])
        return _pick(rng, opts)
    if len(objs) <= 2:
        grp = _group(T, rng, objs)
        pl = pl1 if len(objs) == 1 else plN
        only = _pick(rng, ("only", "just", "nothing but"))
        opts = [f"{v} {only} {grp} {_pick(rng, T.prep_dyn)} {pl}", f"{only} {grp}, {_pick(rng, T.prep_dyn)} {pl}",
                f"{only} {grp} should go {prep} {pl}",
                f"{grp} {prep} {pl} and nothing else", f"{grp} {prep} {pl}, nothing else"]
        if only != "nothing but":
            opts.append(f"{_verb(T, rng)} {only} {grp} {_pick(rng, T.prep_dyn)} {pl}; {_leave(T, rng, rest)}")
        return _pick(rng, opts)
    return None


def _ordered_place(T: _Task, rng: np.random.Generator, gs: Sequence[_G], rest: Sequence[str]) -> str:
    """A sequence in the goals' own order: "first ..., then ...", "1) ... 2) ...", "b only after a"."""
    k = len(gs)
    s = rng.random()
    if k == 2 and s < 0.35:
        a, b = gs
        ia, ib = _imp(T, rng, a), _imp(T, rng, b)
        other = _obj(T, rng, b.obj)
        noun = _pick(rng, T.obj_nouns) if T.obj_nouns else "one"
        other_ref = _pick(rng, (other, "the other one", other, f"the other {noun}")) if not rest else other
        text = _pick(rng, (
            f"{ib}, but first {ia}", f"once {_state(T, rng, a)}, {ib}", f"{ib} only after {_state(T, rng, a)}",
            f"{ia}; once that's done, {ib}", f"before you {ib}, {ia}", f"{ib} after you {ia}",
            f"{ib}, after {_state(T, rng, a)}",
            f"{_obj(T, rng, a.obj)} first, then {other_ref}, {_pick(rng, T.prep_dyn)} {_place_implicit(T, rng, a.obj, True)}",
            f"{ia} first, then {other_ref}", f"start with {_obj(T, rng, a.obj)}, then {ib}",
            f"{ia}, finishing with {other_ref}", f"only once {_state(T, rng, a)}, {ib}",
            f"{ia}, and when it's in place, {ib}", f"{ia}. after that, {ib}",
            f"{ia} first and {ib} second", f"{ib} - but {ia} before that"))
    elif s < 0.6:
        parts = [_imp(T, rng, gs[0])] + [_np(T, rng, g) if _p(rng, 0.4) else _imp(T, rng, g) for g in gs[1:]]
        conns = [_pick(rng, (", then ", ", and then ", "; then ", ", after that ", ". next, ", " and then ", "; next, "))
                 for _ in parts[1:]]
        if k >= 3 and _p(rng, 0.5):
            conns[-1] = _pick(rng, (", and finally ", ", finally ", "; lastly, ", " and last "))
        text = parts[0] + "".join(c + p for c, p in zip(conns, parts[1:]))
        if _p(rng, 0.4):
            text = _pick(rng, ("first ", "first, ", "to start, ", "start by: ")) + text
    elif s < 0.85:
        nums = _pick(rng, ("paren", "step", "ord", "dot"))
        items = [_imp(T, rng, g) for g in gs]
        if nums == "paren":
            text = " ".join(f"{i + 1}) {t}" for i, t in enumerate(items))
        elif nums == "dot":
            text = " ".join(f"{i + 1}. {t}" for i, t in enumerate(items))
        elif nums == "step":
            text = ". ".join(f"step {_NUMBERS[i + 1]}: {t}" for i, t in enumerate(items))
        else:
            text = "; ".join(f"{_ORDINALS[i]}, {t}" for i, t in enumerate(items))
    else:
        names = [_obj(T, rng, g.obj) for g in gs]
        pl = _place_implicit(T, rng, gs[0].obj, plural=True) if _all_own(T, gs) else None
        if pl is None:
            return _ordered_place(T, rng, gs, rest)
        v = _verb(T, rng)
        text = _pick(rng, (f"{v} {_join(rng, names)} {_pick(rng, T.prep_dyn)} {pl}, in that order",
                           f"{v} {_join(rng, names)} {_pick(rng, T.prep_dyn)} {pl} in exactly this order",
                           f"in this order: {', '.join(names)}, each {_pick(rng, T.prep_dyn)} {_place_implicit(T, rng, gs[0].obj)}"
                           if "its" in _place_implicit(T, rng, gs[0].obj) else f"{v} {_join(rng, names)} {_pick(rng, T.prep_dyn)} {pl}, in that order",
                           f"one at a time, in order: {', '.join(names)}, {_pick(rng, T.prep_dyn)} {pl}"))
    if rest and _p(rng, 0.35):
        text = text + _pick(rng, ("; ", ". ", ", and ")) + _leave(T, rng, rest)
    return text


# --------------------------------------------------------------------------------------------------- protocol
def sample_goals(vocab: TaskVocabulary, rng: np.random.Generator) -> tuple[str, ...]:
    """A possible goal list: a chain of stacking goals (bottom first), or a subset of objects sent to their places."""
    T = _task(vocab)
    objs = list(vocab.objects)
    if T.kind == "stack":
        n = len(objs)
        length = int(rng.integers(2, n + 1)) if n >= 2 else 1
        chain = [objs[i] for i in rng.permutation(n)[:length]]
        goals = tuple(vocab.goal(T.skill, (chain[i + 1], chain[i])) for i in range(length - 1))
        goals = vocab.canonical_order(goals)
    else:
        k = int(rng.integers(1, len(objs) + 1))
        if _p(rng, 0.2):
            k = len(objs)
        chosen = [objs[i] for i in rng.permutation(len(objs))[:k]]
        goals_l = []
        for o in chosen:
            if T.kind == "peg":
                place = vocab.own_place.get(o) or _pick(rng, list(vocab.places))
                goals_l.append(vocab.goal(T.skill, (o, place)))
            else:
                goals_l.append(vocab.goal(T.skill, (o,)))
        goals = tuple(goals_l)
    assert vocab.impossibility(goals) is None, (goals, vocab.impossibility(goals))
    return goals


def phrase(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator, split: str) -> tuple[str, bool]:
    """An instruction asking for exactly ``goals``, and whether its words impose their order."""
    del split
    T = _task(vocab)
    if T.kind == "stack" or vocab.ordered_by_support:
        text = _phrase_stack(T, rng, vocab.canonical_order(goals))
        ordered = True
    else:
        text, ordered = _phrase_place(T, rng, goals)
    if text.startswith(_DONE):
        return text[len(_DONE):], ordered
    return _style(rng, text), ordered


# --------------------------------------------------------------------------------------------------- negatives
def _oov_words(vocab: TaskVocabulary, options: Sequence[str]) -> list[str]:
    known = vocab.words()
    return [o for o in options if not (set(o.split()) & known)]


def _fake_object(T: _Task, rng: np.random.Generator) -> str:
    attrs = _oov_words(T.vocab, _OOV_ATTRS)
    items = _oov_words(T.vocab, _OOV_ITEMS)
    if T.obj_nouns and _p(rng, 0.65):
        return f"the {_pick(rng, attrs)} {_pick(rng, T.obj_nouns)}"
    return f"the {_pick(rng, items)}"


def _fake_place(T: _Task, rng: np.random.Generator) -> str:
    places = _oov_words(T.vocab, _OOV_PLACES)
    attrs = _oov_words(T.vocab, _OOV_ATTRS)
    if T.place_nouns and _p(rng, 0.6):
        return f"the {_pick(rng, attrs)} {_pick(rng, T.place_nouns)}"
    if T.place_nouns and _p(rng, 0.3):
        items = [i for i in _oov_words(T.vocab, _OOV_ITEMS) if " " not in i]
        return f"the {_pick(rng, items)} {_pick(rng, T.place_nouns)}"
    return f"the {_pick(rng, places)}"


def _neg_oov(T: _Task, rng: np.random.Generator) -> str:
    vocab = T.vocab
    goals = sample_goals(vocab, rng)
    gs = [_parse(T, g) for g in goals]
    g = gs[0]
    v = _verb(T, rng)
    prep = _pick(rng, T.prep_dyn)
    r = rng.random()
    if r < 0.4:  # a fake mover
        fake = _fake_object(T, rng)
        if T.kind == "stack":
            d = _obj(T, rng, g.dest)
        else:
            d = _place_implicit(T, rng, g.obj) if _p(rng, 0.5) else (_place_explicit(T, rng, _own(T, g.obj))
                                                                     if _own(T, g.obj) else "its place")
        text = _pick(rng, (f"{v} {fake} {prep} {d}", f"I want {fake} {_pick(rng, T.prep_static)} {d}",
                           f"{_imp(T, rng, g)}, then {v} {fake} {prep} {d}"))
        if T.kind != "stack" and _p(rng, 0.4):
            text = _pick(rng, (f"{v} {fake} {prep} its {_pick(rng, T.place_nouns) if T.place_nouns else 'place'}",
                               f"put {fake} away" if _put_away(T) else f"{v} {fake} {prep} {d}",
                               f"{_imp(T, rng, g)} and {fake} too"))
    elif r < 0.75:  # a fake destination
        fake = _fake_place(T, rng)
        text = _pick(rng, (f"{v} {_obj(T, rng, g.obj)} {prep} {fake}",
                           f"{_obj(T, rng, g.obj)} should end up {_pick(rng, T.prep_static)} {fake}",
                           f"{_imp(T, rng, g)}, then {v} {_obj(T, rng, gs[-1].obj)} {prep} {fake}"
                           if len(gs) > 1 else f"{v} {_obj(T, rng, g.obj)} {prep} {fake}"))
        if T.kind == "stack" and _p(rng, 0.4):
            text = f"{v} {_obj(T, rng, g.obj)} {prep} {_fake_object(T, rng)}"
    else:  # mixed with real goals, e.g. "everything and the banana"
        fake = _fake_object(T, rng)
        if T.kind == "stack":
            text = _pick(rng, (f"build a tower from the bottom up: {_obj(T, rng, g.dest)}, {_obj(T, rng, g.obj)}, {fake}",
                               f"{_imp(T, rng, g)} and put {fake} on top",
                               f"{fake} at the bottom, {_obj(T, rng, g.dest)} in the middle, {_obj(T, rng, g.obj)} on top"))
        else:
            text = _pick(rng, (f"{_imp(T, rng, g)} and {_pick(rng, ('also ', ''))}{v} {fake} {prep} {_place_implicit(T, rng, g.obj)}",
                               f"{v} {_group(T, rng, [x.obj for x in gs])} and {fake} {prep} {_place_implicit(T, rng, g.obj, True)}",
                               f"{v} everything, including {fake}, {_pick(rng, T.prep_dyn)} {_place_implicit(T, rng, g.obj, True)}"))
    return _style(rng, text)


def _neg_missing(T: _Task, rng: np.random.Generator) -> str:
    vocab = T.vocab
    known = vocab.words()
    verbs = [(b, p) for b, p in MISSING_SKILL_VERBS if not (set(b.split()) & known)]
    base, past = _pick(rng, verbs)
    objs = list(vocab.objects)
    o = _pick(rng, objs)
    a = _obj(T, rng, o)
    goals = sample_goals(vocab, rng)
    g = _parse(T, goals[0])
    r = rng.random()
    if base == "knock over" and _p(rng, 0.5):
        vb = f"knock {a} over"
    elif base == "turn over" and _p(rng, 0.5):
        vb = f"turn {a} over"
    else:
        vb = f"{base} {a}"
    if r < 0.35:
        text = vb
    elif r < 0.5:
        return _style(rng, _pick(rng, ("can you ", "could you ", "would you ", "will you ")) + vb, question=True,
                      prefix_ok=False)
    elif r < 0.65:
        text = _pick(rng, (f"I want {a} {past}", f"make sure {a} gets {past}", f"{a} should be {past}",
                           f"I'd like {a} {past}"))
    elif r < 0.85:
        text = _pick(rng, (f"{_imp(T, rng, g)}, then {vb}", f"{vb} and then {_imp(T, rng, g)}",
                           f"first {vb}, then {_imp(T, rng, g)}"))
    else:
        grp = _group(T, rng, objs) if len(objs) > 1 else a
        text = _pick(rng, (f"{base} {grp}", f"{base} everything", f"{base} all of them", f"{vb} gently",
                           f"{vb} and leave the rest alone"))
    return _style(rng, text)


def _neg_impossible(T: _Task, rng: np.random.Generator) -> tuple[str, tuple[str, ...]]:
    """A request for goals the rules forbid, and those goals (whose impossibility is not None)."""
    vocab = T.vocab
    objs = list(vocab.objects)
    v = _verb(T, rng)
    prep = _pick(rng, T.prep_dyn)
    if T.kind == "stack":
        a, b, c = (objs * 3)[:3] if len(objs) < 3 else [objs[i] for i in rng.permutation(len(objs))[:3]]
        A, B, C = _obj(T, rng, a), _obj(T, rng, b), _obj(T, rng, c)
        on = lambda x, y: vocab.goal(T.skill, (x, y))  # noqa: E731
        choice = int(rng.integers(6))
        if choice == 0:
            goals = (on(a, a),)
            text = _pick(rng, (f"{v} {A} {prep} itself", f"{v} {A} {prep} {_obj(T, rng, a)}",
                               f"I want {A} on top of itself"))
        elif choice == 1:
            goals = (on(a, b), on(b, a))
            text = _pick(rng, (f"{v} {A} {prep} {B} and {B} {prep} {A}", f"{A} on {B}, and {B} on {A}",
                               f"{A} under {B} and {A} over {B}"))
        elif choice == 2:
            goals = (on(a, b), on(b, c), on(c, a))
            text = f"{v} {A} {prep} {B}, {B} {prep} {C}, and {C} {prep} {A}"
        elif choice == 3:
            goals = (on(a, c), on(b, c))
            text = _pick(rng, (f"{v} both {A} and {B} directly {prep} {C}", f"{A} and {B} should both sit directly on {C}",
                               f"{v} {A} {prep} {C} and {B} {prep} {C} too, side by side"))
        elif choice == 4:
            goals = (on(a, b), on(a, c))
            text = _pick(rng, (f"{v} {A} {prep} {B} and also {prep} {C}", f"{v} {A} {prep} {B}, then move it {prep} {C}",
                               f"{A} should be on {B} and on {C} at the same time"))
        else:
            goals = (on(a, b), on(c, b))
            text = f"{C} {_pick(rng, ('at the top', 'on top'))} of {B}, and {A} on {B} as well, both directly on it"
    else:
        o = _pick(rng, objs)
        own = _own(T, o)
        others = [p for p in vocab.places if p != own]
        A = _obj(T, rng, o)

        def to(x: str, place: str | None) -> str:
            if T.kind == "peg":
                return vocab.goal(T.skill, (x, place))
            if place is None or place == _own(T, x):
                return vocab.goal(T.skill, (x,))
            return f"{T.pred}({x},{place})"  # one-argument container goal sent to a named other place

        choice = int(rng.integers(4)) if others else 3
        if choice == 0 and others:
            wrong = _pick(rng, others)
            goals = (to(o, wrong),)
            text = _pick(rng, (f"{v} {A} {prep} {_place_explicit(T, rng, wrong)}",
                               f"{A} should go {_pick(rng, T.prep_static)} {_place_explicit(T, rng, wrong)}",
                               f"I want {A} {_pick(rng, T.prep_static)} {_place_explicit(T, rng, wrong)}"))
        elif choice == 1 and others:
            wrong = _pick(rng, others)
            goals = (to(o, own), to(o, wrong))
            text = _pick(rng, (f"{v} {A} {prep} {_place_implicit(T, rng, o)}, then move it {prep} {_place_explicit(T, rng, wrong)}",
                               f"{v} {A} {prep} {_place_implicit(T, rng, o)} and {prep} {_place_explicit(T, rng, wrong)}",
                               f"{A} {_pick(rng, T.prep_static)} {_place_explicit(T, rng, own)} and also {_pick(rng, T.prep_static)} {_place_explicit(T, rng, wrong)}"))
        elif choice == 2 and others and len(objs) >= 2:
            o2 = _pick(rng, [x for x in objs if x != o])
            goals = (to(o, own), to(o2, own))
            text = _pick(rng, (f"{v} {A} {prep} {_place_implicit(T, rng, o)} and {_obj(T, rng, o2)} {prep} the same {_pick(rng, T.place_nouns)}",
                               f"{v} {_group(T, rng, [o, o2])} both {prep} {_place_explicit(T, rng, own)}"))
        elif others:
            wrong = _pick(rng, others)
            goals = (to(o, own), to(o, wrong))
            text = _pick(rng, (f"{v} {A} {prep} {_place_implicit(T, rng, o)} and, at the same time, {prep} {_place_explicit(T, rng, wrong)}",
                               f"{A} {_pick(rng, T.prep_static)} {_place_explicit(T, rng, wrong)} and {_place_explicit(T, rng, own)} at once",
                               f"{A} has to end up {_pick(rng, T.prep_static)} both {_place_explicit(T, rng, own)} and {_place_explicit(T, rng, wrong)}"))
        else:
            goals = (to(o, own), to(o, own))
            text = f"{v} {A} {prep} {_place_implicit(T, rng, o)} twice, in two places at once"
    assert vocab.impossibility(goals) is not None, (text, goals)
    return _style(rng, text), goals


def negatives(vocab: TaskVocabulary, rng: np.random.Generator, split: str) -> tuple[str, str]:
    """An instruction that must be refused, and its kind."""
    del split
    T = _task(vocab)
    kind = _pick(rng, ("out_of_vocabulary", "missing_skill", "impossible", "empty"))
    if kind == "out_of_vocabulary":
        return _neg_oov(T, rng), kind
    if kind == "missing_skill":
        return _neg_missing(T, rng), kind
    if kind == "impossible":
        return _neg_impossible(T, rng)[0], kind
    text = _pick(rng, _EMPTY)
    if text.strip() and _p(rng, 0.25):
        rest = list(vocab.objects)
        text = _pick(rng, (text, _leave(T, rng, rest[: int(rng.integers(1, len(rest) + 1))]).replace("and leave", "leave")))
    return (_style(rng, text) if text.strip(" ?.") else text), kind


__all__ = ["MISSING_SKILL_VERBS", "negatives", "phrase", "sample_goals"]
