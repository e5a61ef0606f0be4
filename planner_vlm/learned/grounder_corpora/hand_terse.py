"""Training phrasings for the instruction grounder, hand ``terse``: an operator typing at a robot console.

Implements the ``Phrasing`` protocol of :mod:`planner_vlm.learned.grounder_train` with module-level functions
(:func:`sample_goals`, :func:`phrase`, :func:`negatives`). Task-generic: every object, place and verb word comes from
the :class:`~tandem.core.vocabulary.TaskVocabulary`; the code branches only on its structure (``ordered_by_support``,
``own_place``, the goal template's arity). Pure Python + numpy, deterministic given the rng.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tandem.core.vocabulary import TaskVocabulary, parse_goal

# ---------------------------------------------------------------------------------------------- English tables
_NUM = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
_ORD = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_COLLECTIVE = ("items", "objects", "things")
#: Skill words that are not "VERB thing PREP place" verbs (nouns, or verbs with another frame).
_NOT_PLACING_VERBS = {"build", "tower", "tidy", "pick", "pick up", "grab", "take", "lift"}
#: Verbs that take "to" before a place.
_TO_VERBS = {"bring", "return", "move"}
#: Bare "VERB thing" verbs that already mean "into its own place" (used only where the place is implied).
_BARE_VERBS = ("sort", "store", "stow", "return")
_IRREGULAR = {"put": ("put", "putting"), "set": ("set", "setting"), "stand": ("stood", "standing"),
              "bring": ("brought", "bringing"), "slide": ("slid", "sliding"), "fit": ("fitted", "fitting"),
              "drop": ("dropped", "dropping"), "build": ("built", "building"), "stow": ("stowed", "stowing"),
              "sit": ("sat", "sitting")}
_ADVERBS = ("gently", "carefully", "slowly", "neatly")
_PREFIX = ("hey robot, ", "okay so ", "ok, ", "robot: ", "alright, ", "right, ", "now ", "so ", "hi! ", "hey, ",
           "okay robot, ", "next task: ", "task: ", "new job: ")
_SUFFIX = (" please", " for me", " right now", ", thanks", " now", " when you can", ", thank you", " please and thanks",
           " if you can")
#: Missing-skill distractors ("{o}" is the object). Their first words never appear in a positive of this module.
MISSING_SKILL_PHRASES = (
    "wipe {o}", "wipe down {o}", "push {o}", "push {o} to the left", "rotate {o}", "rotate {o} by ninety degrees",
    "open {o}", "pour out {o}", "throw {o}", "throw {o} away", "shake {o}", "flip {o}", "hide {o}", "paint {o}",
    "paint {o} green", "knock over {o}", "knock {o} over", "unstack {o}", "spin {o}", "roll {o}", "wash {o}",
    "clean {o}", "squeeze {o}", "tilt {o}", "kick {o}", "crush {o}", "polish {o}", "turn {o} upside down",
    "fold {o}", "cut {o}", "smash {o}", "weigh {o}", "scan {o}", "unscrew {o}", "twist {o}", "tip {o} over",
    "toss {o}", "shove {o}", "juggle {o}", "balance {o} on its edge", "drag {o}", "hammer {o}", "break {o}",
    "heat {o}", "melt {o}", "bend {o}", "screw {o} tight", "tap {o}", "swap {o} with the wall",
)
#: The head verb of each distractor (what the test checks against positives).
MISSING_SKILL_VERBS = tuple(sorted({p.split()[0] for p in MISSING_SKILL_PHRASES}))
_OOV_COLOURS = ("purple", "yellow", "orange", "pink", "black", "white", "brown", "grey", "gold", "silver", "violet",
                "teal", "magenta", "beige")
_OOV_SHAPES = ("triangle", "triangular", "hexagonal", "star", "oval", "octagonal", "square", "round", "diamond",
               "pentagonal", "tiny", "giant")
_OOV_THINGS = ("banana", "apple", "cup", "mug", "bottle", "sponge", "hammer", "spoon", "ball", "pencil", "phone",
               "orange", "teddy bear", "screwdriver", "plate", "bowl", "lemon", "egg", "book", "marker", "wrench",
               "cube", "box", "nut", "can", "block", "ring", "bin", "peg")
_OOV_PLACES = ("shelf", "drawer", "table", "floor", "basket", "tray", "sink", "bucket", "cupboard", "fridge",
               "windowsill", "counter", "chair", "bin", "peg", "box", "crate", "pedestal")
_EMPTY = ("", "hello", "hi", "hey robot", "thanks, that's all", "thanks", "thank you", "do nothing", "never mind",
          "nevermind", "wait", "hold on", "stop", "cancel that", "forget it", "nothing for now", "ok", "okay",
          "good job", "all done", "that's it", "no thanks", "nothing", "stay still", "just wait", "hmm",
          "hello there, how are you?", "are you ready?", "test", "testing, one two three", "ignore that",
          "don't do anything", "do not do anything right now", "relax", "pause", "one moment please",
          "leave everything as it is", "don't move anything", "leave it all where it is", "abort",
          "standby", "never mind, that's all", "sorry, wrong window", "what can you do?", "good morning",
          "are you there?", "ok thanks, we're done", "no, nothing", "?", "...", "nope", "yes")


def _ch(rng: np.random.Generator, seq: Sequence):
    return seq[int(rng.integers(len(seq)))]


def _p(rng: np.random.Generator, prob: float) -> bool:
    return bool(rng.random() < prob)


def _join(rng: np.random.Generator, items: Sequence[str], conj: str = "and") -> str:
    items = list(items)
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    comma = "," if _p(rng, 0.3) else ""
    return ", ".join(items[:-1]) + f"{comma} {conj} {items[-1]}"


def _plural(noun: str) -> str:
    return noun + "es" if noun.endswith(("s", "x", "ch", "sh")) else noun + "s"


def _pp(verb: str) -> str:
    head, _, tail = verb.partition(" ")
    if head in _IRREGULAR:
        out = _IRREGULAR[head][0]
    elif head.endswith("e"):
        out = head + "d"
    else:
        out = head + "ed"
    return f"{out} {tail}".strip()


def _ing(verb: str) -> str:
    head, _, tail = verb.partition(" ")
    if head in _IRREGULAR:
        out = _IRREGULAR[head][1]
    elif head.endswith("e") and not head.endswith("ee"):
        out = head[:-1] + "ing"
    else:
        out = head + "ing"
    return f"{out} {tail}".strip()


# ---------------------------------------------------------------------------------------------- vocabulary shape
@dataclass
class _Info:
    vocab: TaskVocabulary
    skill: str
    name: str
    nargs: int
    support: bool
    prep: str
    verbs: tuple[str, ...]
    bare: tuple[str, ...]
    obj_cls: tuple[str, ...]
    place_cls: tuple[str, ...]


def _class_nouns(phrases_per_name: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """Last words of multi-word phrases shared by every name ("cube", "block"), never "one"."""
    shared: set[str] | None = None
    order: list[str] = []
    for phrases in phrases_per_name:
        last = {p.split()[-1] for p in phrases if len(p.split()) > 1 and p.split()[-1] != "one"
                and "'" not in p.split()[-1]}
        for p in phrases:
            w = p.split()[-1]
            if w in last and w not in order:
                order.append(w)
        shared = last if shared is None else shared & last
    return tuple(w for w in order if shared and w in shared)


def _info(vocab: TaskVocabulary) -> _Info:
    skill = vocab.goal_skills[0]
    template = vocab.skills[skill]
    name = template.split("(", 1)[0]
    nargs = len(set(re.findall(r"\{(\d+)\}", template)))
    support = bool(vocab.ordered_by_support) or (nargs == 2 and not vocab.places)
    head = name.split("_")[0]
    prep = head if head in ("in", "on") else ("on" if support else "in")
    words = vocab.skill_words.get(skill, ())
    verbs = tuple(w for w in words if w not in _NOT_PLACING_VERBS and " " not in w) or ("put",)
    bare = tuple(w for w in words if w in _BARE_VERBS)
    return _Info(vocab, skill, name, nargs, support, prep, verbs, bare,
                 _class_nouns(list(vocab.objects.values())), _class_nouns(list(vocab.places.values())))


def _args(goal: str) -> tuple[str, ...]:
    return parse_goal(goal)[1]


def _place_of(info: _Info, goal: str) -> str | None:
    args = _args(goal)
    if len(args) >= 2:
        return args[1]
    return info.vocab.own_place.get(args[0])


def _is_own(info: _Info, goal: str) -> bool:
    args = _args(goal)
    place = _place_of(info, goal)
    return place is not None and info.vocab.own_place.get(args[0]) == place and bool(info.place_cls)


# ---------------------------------------------------------------------------------------------- noun phrases
def _obj(info: _Info, rng: np.random.Generator, obj: str, article: bool = False) -> str:
    w = _ch(rng, info.vocab.objects[obj])
    if w.split()[-1] != "one" and _p(rng, 0.03):
        w = f'"{w}"'
    if article or w.endswith("one") or _p(rng, 0.85):
        return "the " + w
    return w


def _cls(info: _Info, rng: np.random.Generator, plural: bool = False) -> str:
    noun = _ch(rng, info.obj_cls) if info.obj_cls and _p(rng, 0.6) else _ch(rng, ("item", "object", "thing"))
    return _plural(noun) if plural else noun


def _cls1(info: _Info, rng: np.random.Generator) -> str:
    """A singular class noun that reads well after "each"/"every" (never "thing")."""
    noun = _cls(info, rng)
    return "item" if noun == "thing" else noun


def _own_ref(info: _Info, rng: np.random.Generator, plural: bool = False) -> str:
    noun = _ch(rng, info.place_cls)
    if plural:
        noun = _plural(noun)
        return _ch(rng, (f"their {noun}", f"their own {noun}", f"the matching {noun}", f"the right {noun}",
                         f"the correct {noun}", f"their {noun}", f"their respective {noun}"))
    return _ch(rng, (f"its {noun}", f"its own {noun}", f"the matching {noun}", f"the right {noun}",
                     f"the correct {noun}", f"its {noun}", f"its {noun}"))


def _place_np(info: _Info, rng: np.random.Generator, place: str) -> str:
    return "the " + _ch(rng, info.vocab.places[place])


def _prep(info: _Info, rng: np.random.Generator, verb: str | None = None) -> str:
    if verb in _TO_VERBS and not info.support:
        return "to" if _p(rng, 0.6) or info.prep != "in" else "into"
    if info.support:
        return _ch(rng, ("on", "onto", "on top of", "on", "onto", "atop"))
    if info.prep == "in":
        return _ch(rng, ("in", "into", "into", "inside"))
    return _ch(rng, ("on", "onto", "on", "over"))


def _target(info: _Info, rng: np.random.Generator, goal: str, verb: str | None = None, plural: bool = False) -> str:
    """Where the goal's object goes, with its preposition: "on the blue cube", "into its bin"."""
    args = _args(goal)
    if info.support:
        return f"{_prep(info, rng, verb)} {_obj(info, rng, args[1])}"
    place = _place_of(info, goal)
    prep = _prep(info, rng, verb)
    if prep == "over":
        prep = "onto"
    if place is None:
        return f"{prep} a {_ch(rng, info.place_cls or ('place',))}"
    if _is_own(info, goal) and (plural or _p(rng, 0.5)):
        return f"{prep} {_own_ref(info, rng, plural)}"
    return f"{prep} {_place_np(info, rng, place)}"


def _verb(info: _Info, rng: np.random.Generator) -> str:
    return _ch(rng, info.verbs)


def _act(info: _Info, rng: np.random.Generator, goal: str, verb: str | None = None, ing: bool = False,
         elide: bool = False, adverb: bool = True, bare: bool = True) -> str:
    """One goal as an imperative ("put the red cube on the blue one"), a gerund, or verbless ("the red on the blue")."""
    obj = _args(goal)[0]
    if elide:
        return f"{_obj(info, rng, obj)} {_target(info, rng, goal)}"
    # place implied (one-argument goal with an own place): "put X away", "sort X", "tidy up X"
    if bare and info.nargs == 1 and info.vocab.own_place.get(obj) and _p(rng, 0.35):
        opts = []
        words = info.vocab.skill_words.get(info.skill, ())
        if "put" in words:
            opts += ["put {o} away", "put away {o}"]
        if "tidy" in words:
            opts += ["tidy up {o}", "tidy {o} away"]
        opts += [f"{b} {{o}}" for b in info.bare if b != "return"]
        if opts:
            form = _ch(rng, opts)
            if ing:
                head = form.split()[0]
                form = form.replace(head, _ing(head), 1)
            return form.replace("{o}", _obj(info, rng, obj))
    verb = verb or _verb(info, rng)
    v = _ing(verb) if ing else verb
    adv = ""
    if adverb and _p(rng, 0.07):
        adv = " " + _ch(rng, _ADVERBS)
        if _p(rng, 0.5):
            return f"{adv.strip()} {v} {_obj(info, rng, obj)} {_target(info, rng, goal, verb)}"
    return f"{v} {_obj(info, rng, obj)}{adv} {_target(info, rng, goal, verb)}"


def _acts(info: _Info, rng: np.random.Generator, goals: Sequence[str], verb: str | None, p_elide: float,
          p_verb: float = 1.0) -> list[str]:
    """Clauses for ``goals``; a later one may drop its verb ("..., then the green on the red"). A clause followed by
    a verbless one always names its place, so "sort the milk and the box in the cereal bin" cannot happen."""
    elide = [i > 0 and _p(rng, p_elide) for i in range(len(goals))]
    return [_act(info, rng, g, verb if _p(rng, p_verb) else None, elide=elide[i],
                 bare=not (i + 1 < len(goals) and elide[i + 1])) for i, g in enumerate(goals)]


def _loc(info: _Info, rng: np.random.Generator, goal: str, simple: bool = False) -> str:
    """Where the goal's object is once done: "on top of the blue one", "in its bin"."""
    args = _args(goal)
    if info.support:
        preps = ('on', 'on top of', 'on', 'atop') if simple else \
            ('on', 'on top of', 'on', 'atop', 'above', 'sitting on', 'resting on')
        return f"{_ch(rng, preps)} " \
               f"{_obj(info, rng, args[1])}"
    t = _target(info, rng, goal)
    return t.replace("into ", "in ", 1).replace("onto ", "on ", 1).replace("to ", "in ", 1) \
        if t.startswith(("into ", "onto ", "to ")) else t


def _state(info: _Info, rng: np.random.Generator, goal: str, finite: bool) -> str:
    """The goal as a state: finite ("the milk is in its bin", "blue sits under red") or not ("the red cube on the
    blue one", "the milk stored in its bin", "blue under red")."""
    args = _args(goal)
    if info.support and _p(rng, 0.2):
        below = _ch(rng, ("under", "beneath", "below", "underneath"))
        mid = _ch(rng, (" is", " sits", " is")) if finite else ""
        return f"{_obj(info, rng, args[1])}{mid} {below} {_obj(info, rng, args[0])}"
    if finite:
        verb = _ch(rng, ('is', 'is', 'sits', 'ends up'))
        return f"{_obj(info, rng, args[0])} {verb} {_loc(info, rng, goal, simple=verb == 'sits')}"
    if _p(rng, 0.3):
        return f"{_obj(info, rng, args[0])} {_pp(_verb(info, rng))} {_target(info, rng, goal)}"
    return f"{_obj(info, rng, args[0])} {_loc(info, rng, goal)}"


# ---------------------------------------------------------------------------------------------- sentence frames
_LEADS = {"put", "take", "grab", "pick", "tidy", "stack", "build", "make", "pile", "lift", *_ADVERBS}


def _polite(rng: np.random.Generator, body: str, info: _Info | None = None) -> tuple[str, bool]:
    """Wrap an imperative body (one that starts with a verb); returns (text, is_question)."""
    r = rng.random()
    first = body.split(" ", 1)[0]
    if r < 0.42 or not (first in _LEADS or (info is not None and first in info.verbs)):
        return body, False
    if r < 0.62:
        return _ch(rng, ("could you ", "can you ", "would you ", "will you ", "could you please ",
                         "can you please ")) + body, True
    return _ch(rng, ("please ", "please ", "i'd like you to ", "i need you to ", "go ahead and ", "your task: ",
                     "i want you to ", "kindly ", "you should ", "let's ", "time to ")) + body, False


def _end_state(info: _Info, rng: np.random.Generator, goals: Sequence[str], finite: bool | None = None) -> str:
    """The goals as an end state, any mention order: "i want X on Y and Z on X", "make it so that X is on Y"."""
    finite = _p(rng, 0.35) if finite is None else finite
    states = [_state(info, rng, g, finite) for g in goals]
    body = _join(rng, states)
    if finite:
        frames = ("make it so that {b}", "{b}", "goal: {b}", "the goal is that {b}", "when you're done, {b}",
                  "at the end {b}", "i want it so that {b}", "make sure {b}", "see to it that {b}")
    else:
        frames = ("i want {b}", "i'd like {b}", "goal: {b}", "the goal is {b}", "the goal is: {b}",
                  "target state: {b}", "end state: {b}", "i need {b}", "{b}, please", "{b}", "get {b}",
                  "final state: {b}", "result: {b}", "what i want is {b}", "desired: {b}")
    return _ch(rng, frames).format(b=body)


def _should(info: _Info, rng: np.random.Generator, goals: Sequence[str]) -> str:
    """'when you're done, X should be on Y' style."""
    parts = []
    for g in goals:
        obj = _args(g)[0]
        aux = _ch(rng, ("should be", "needs to be", "must be", "has to be", "should end up", "goes"))
        parts.append(f"{_obj(info, rng, obj)} {aux} {_loc(info, rng, g, simple=aux == 'goes')}")
    lead = _ch(rng, ("when you're done, ", "at the end, ", "once finished, ", "", "", "by the end ",
                     "afterwards "))
    return lead + _join(rng, parts)


def _want_to(info: _Info, rng: np.random.Generator, goals: Sequence[str]) -> str:
    """'I want X to end up on Y and Z to end up on X'."""
    parts = [f"{_obj(info, rng, _args(g)[0])} to {_ch(rng, ('end up', 'be', 'sit', 'be', 'land'))} "
             f"{_loc(info, rng, g)}" for g in goals]
    return _ch(rng, ("i want ", "i'd like ", "i need ", "we want ")) + _join(rng, parts)


_CONNECT = (", then ", ", then ", " then ", ", and then ", ", after that ", ". after that, ", ", next ", ". next, ",
            "; then ", ". then ", ", once that's done, ", ". once that's done ", " and then ", ", afterwards ",
            ", after which ", "; next ", " -- then ")


def _seq(info: _Info, rng: np.random.Generator, goals: Sequence[str]) -> str:
    """The goals in the given order, with words that impose that order."""
    n = len(goals)
    style = rng.random()
    verb = _verb(info, rng) if _p(rng, 0.6) else None
    if style < 0.4:  # connectors
        acts = _acts(info, rng, goals, verb, 0.4)
        text = acts[0] + "".join(_ch(rng, _CONNECT) + a for a in acts[1:])
        if _p(rng, 0.25):
            text = "first " + text
        return text
    if style < 0.58:  # first ... then ... finally
        parts = []
        acts = _acts(info, rng, goals, verb, 0.3)
        for i, a in enumerate(acts):
            lead = "first" if i == 0 else ("finally" if i == n - 1 and _p(rng, 0.7) else _ch(rng, ("then", "next")))
            if i > 0 and lead == "finally" and _p(rng, 0.3):
                lead = "last"
            if i == 0 and _p(rng, 0.3):
                lead = "to start,"
            parts.append(f"{lead} {a}")
        sep = _ch(rng, (", ", "; ", ". ", ", "))
        return sep.join(parts)
    if style < 0.72:  # ordinals
        parts = [f"{_ORD[i]}{_ch(rng, (',', '', ':'))} {_act(info, rng, g, verb)}" for i, g in enumerate(goals)]
        if _p(rng, 0.3):
            parts[0] = parts[0].replace("first", "firstly", 1)
        return _ch(rng, ("; ", ". ", ", ")).join(parts)
    if style < 0.9:  # numbered steps
        fmt = _ch(rng, ("{i}) ", "{i}. ", "({i}) ", "step {w}: ", "step {i}: ", "{i} - ", "#{i} "))
        parts = [fmt.format(i=i + 1, w=_NUM.get(i + 1, str(i + 1))) + _act(info, rng, g, verb)
                 for i, g in enumerate(goals)]
        return _ch(rng, (" ", "; ", ". ", ", ", "\n")).join(parts)
    # "in this order" / starting with / finishing with
    parts = _acts(info, rng, goals, verb, 0.5)
    return _join(rng, parts, "then") + _ch(rng, (", in that order", ", in this order", ", exactly in that order",
                                                 " -- in that order", " (in that order)", ", one after another"))


def _two_step(info: _Info, rng: np.random.Generator, g1: str, g2: str) -> str:
    """Two goals, g1 before g2, with 'but first' / 'before' / 'after' / 'only once' / 'X first'."""
    v = _verb(info, rng)
    r = int(rng.integers(9))
    if r == 0:
        return f"{_act(info, rng, g2, v, bare=False)}, but first {_act(info, rng, g1, v, elide=_p(rng, 0.3))}"
    if r == 1:
        return f"{_act(info, rng, g1, v)} before {_act(info, rng, g2, v, ing=True)}"
    if r == 2:
        return f"before {_act(info, rng, g2, v, ing=True)}, {_act(info, rng, g1, v)}"
    if r == 3:
        return f"after {_act(info, rng, g1, v, ing=True)}, {_act(info, rng, g2, v)}"
    if r == 4:
        return f"{_act(info, rng, g2, v)} after {_act(info, rng, g1, v, ing=True)}"
    if r == 5:
        lead = _ch(rng, ("only once", "once", "as soon as", "after", "when", "only after"))
        return f"{lead} {_state(info, rng, g1, True)}, {_act(info, rng, g2, v)}"
    if r == 6:
        return f"{_act(info, rng, g1, v, bare=False)} first, then {_act(info, rng, g2, v, elide=_p(rng, 0.5))}"
    if r == 7:
        return f"{_act(info, rng, g2, v)} -- but only after {_state(info, rng, g1, True)}"
    return f"{_act(info, rng, g1, v, bare=False)}. {_ch(rng, ('only then', 'then', 'after that', 'once that is done'))} " \
           f"{_act(info, rng, g2, v, elide=_p(rng, 0.3))}"


# ---------------------------------------------------------------------------------------------- towers
def _chains(info: _Info, goals: Sequence[str]) -> list[list[str]]:
    above = {_args(g)[1]: _args(g)[0] for g in goals}
    tops = {_args(g)[0] for g in goals}
    chains = []
    for g in goals:
        base = _args(g)[1]
        if base in tops:
            continue
        if any(c[0] == base for c in chains):
            continue
        chain = [base]
        while chain[-1] in above:
            chain.append(above[chain[-1]])
        chains.append(chain)
    return chains


def _layers(info: _Info, rng: np.random.Generator, c: Sequence[str]) -> str:
    o = [_obj(info, rng, x) for x in c]
    bottom = _ch(rng, ("at the bottom", "at the base", "on the bottom", "as the base", "as the bottom"))
    top = _ch(rng, ("on top", "at the top", "on the top", "last on top"))
    if len(c) == 2:
        return _ch(rng, (f"{o[0]} {bottom}, {o[1]} {top}", f"{o[0]} {bottom} and {o[1]} {top}",
                         f"{o[1]} {top}, {o[0]} {bottom}"))
    if len(c) == 3:
        mid = _ch(rng, ("in the middle", "in the middle", "in between", "second"))
        return _ch(rng, (f"{o[0]} {bottom}, {o[1]} {mid}, {o[2]} {top}",
                         f"{o[0]} {bottom}, {o[1]} {mid} and {o[2]} {top}",
                         f"{o[2]} {top}, {o[1]} {mid}, {o[0]} {bottom}",
                         f"{o[0]} {bottom}, {o[2]} {top}, {o[1]} between them",
                         f"{o[0]} {bottom}, then {o[1]}, then {o[2]} {top}"))
    return f"{o[0]} {bottom}, " + ", ".join(f"then {x}" for x in o[1:-1]) + f", {o[-1]} {top}"


def _order_list(info: _Info, rng: np.random.Generator, c: Sequence[str]) -> str:
    up = [_obj(info, rng, x) for x in c]
    if _p(rng, 0.5):
        lead = _ch(rng, ("from the bottom up", "bottom to top", "bottom up", "from bottom to top",
                         "starting from the bottom", "base first"))
        items = up
    else:
        lead = _ch(rng, ("top to bottom", "from top to bottom", "from the top down", "top down"))
        items = up[::-1]
    lst = _ch(rng, (", ", ", ", " then ", " / ")).join(items) if _p(rng, 0.7) else _join(rng, items)
    return _ch(rng, (f"{lead}: {lst}", f"{lst}, {lead}", f"{lst} ({lead})", f"{lead} {lst}"))


def _tower(info: _Info, rng: np.random.Generator, c: Sequence[str], n_all: int) -> str:
    """One tower (bottom first) described as a whole."""
    noun = _ch(rng, ("tower", "stack", "pile", "tower", "stack"))
    r = int(rng.integers(9))
    everything = len(c) == n_all and n_all > 2
    if r == 0:
        return _ch(rng, ("build a {n}: ", "make a {n}: ", "{n}: ", "build a {n} -- ", "stack them: ",
                         "i want a {n} with ")).format(n=noun) + _layers(info, rng, c)
    if r == 1:
        return _ch(rng, ("build a {n}, ", "stack ", "{n}, ", "make a {n}, ", "stack them ", "build a {n} ")) \
            .format(n=noun) + _order_list(info, rng, c)
    if r == 2 and everything:
        grp = _ch(rng, (f"the {_NUM.get(n_all, str(n_all))} {_cls(info, rng, True)}",
                        f"all {_NUM.get(n_all, str(n_all))} {_cls(info, rng, True)}",
                        f"all {_NUM.get(n_all, str(n_all))}", f"all the {_cls(info, rng, True)}",
                        "everything", "them all"))
        head = _ch(rng, (f"stack {grp}", f"build a {noun} out of {grp}", f"put {grp} in one {noun}",
                         f"pile up {grp}", f"take {grp} and stack them"))
        return f"{head}{_ch(rng, (': ', ', ', ' -- '))}{_ch(rng, (_layers, _order_list))(info, rng, c)}"
    if r == 3 and len(c) == 3:
        members = [_obj(info, rng, x) for x in rng.permutation(list(c))]
        return f"{_ch(rng, ('build', 'make', 'stack'))} a {noun} of {_join(rng, members)} with " \
               f"{_obj(info, rng, c[0])} at the {_ch(rng, ('bottom', 'base'))} and {_obj(info, rng, c[2])} on top"
    if r == 4:
        parts = [f"{_obj(info, rng, c[i])} {_ch(rng, ('under', 'beneath', 'below', 'underneath'))} "
                 f"{_obj(info, rng, c[i + 1])}" for i in range(len(c) - 1)]
        return _ch(rng, ("i want ", "goal: ", "i'd like ", "", "end state: ")) + _join(rng, parts)
    if r == 5:
        text = f"make {_obj(info, rng, c[0])} the base{_ch(rng, (',', ''))} with {_obj(info, rng, c[1])} " \
               f"resting on it"
        for i in range(2, len(c)):
            text += f" and {_obj(info, rng, c[i])} resting on {_obj(info, rng, c[i - 1])}"
        return text
    if r == 6 and len(c) == 3:
        return f"{_act(info, rng, _goal(info, c[1], c[0]))}{_ch(rng, (' with ', ', with '))}" \
               f"{_obj(info, rng, c[2])} {_ch(rng, ('on top', 'on top of that', 'resting on top', 'above that'))}"
    if r == 7 and len(c) == 2:
        return f"{_ch(rng, ('build', 'make'))} a {_ch(rng, ('small ', 'two-level ', '', 'short '))}{noun}: " \
               f"{_state(info, rng, _goal(info, c[1], c[0]), False)}"
    return _ch(rng, ("{n}: ", "build a {n}: ", "", "the {n}: ")).format(n=noun) + _layers(info, rng, c)


def _shuffled(rng: np.random.Generator, goals: Sequence[str]) -> list[str]:
    return [str(goals[int(i)]) for i in rng.permutation(len(goals))]


def _goal(info: _Info, *args: str) -> str:
    return info.vocab.goal(info.skill, args)


# ---------------------------------------------------------------------------------------------- exclusions
def _exclusion(info: _Info, rng: np.random.Generator, untouched: Sequence[str], context: bool = True) -> str:
    if untouched and _p(rng, 0.8):
        names = [_obj(info, rng, o) for o in untouched]
        lst = _join(rng, names)
        lst_or = _join(rng, names, "or")
        one = len(names) == 1
        opts = [f"leave {lst} alone", f"don't touch {lst_or}", f"do not move {lst_or}", f"ignore {lst}",
                f"leave {lst} where {'it is' if one else 'they are'}",
                f"{lst} {'stays' if one else 'stay'} where {'it is' if one else 'they are'}",
                f"keep {lst} where {'it is' if one else 'they are'}",
                f"don't move {lst_or}", f"{lst} {'stays' if one else 'stay'} as {'it is' if one else 'they are'}",
                "leave everything else", "leave everything else alone", "don't touch anything else",
                "leave the rest alone", "don't move anything else"]
        if one and len(untouched) == 1:
            opts += [f"{lst} doesn't move", "don't touch the other one" if context and info.support
                     and len(info.vocab.objects) == 3 else f"leave {lst} out of it"]
        return _ch(rng, opts)
    return _ch(rng, ("that's all", "nothing else", "that's it", "nothing more", "and nothing else",
                     "that is all", "only that"))


def _attach(rng: np.random.Generator, text: str, excl: str, question: bool) -> str:
    if question:
        return f"{text}? {excl}"
    r = rng.random()
    if r < 0.45:
        sep = _ch(rng, (', ', '; ', '. ', ', and ', ', but ', ' -- ', ' and '))
        if "and" in sep or "but" in sep:
            excl = excl.removeprefix("and ")
        return f"{text}{sep}{excl}"
    if r < 0.6:
        return f"{text} ({excl})"
    if r < 0.85 and not excl.startswith(("that", "nothing", "and", "only")) and "else" not in excl \
            and "rest" not in excl:
        return f"{excl}{_ch(rng, ('; ', ', ', '. ', ' and '))}{text}"
    return f"{text}. {excl}"


# ---------------------------------------------------------------------------------------------- style
def _style(rng: np.random.Generator, text: str, question: bool, suffix: bool = True) -> str:
    text = " ".join(text.split(" ")).strip()
    if _p(rng, 0.18):
        text = _ch(rng, _PREFIX) + text
    if suffix and not question and _p(rng, 0.12):
        text = text + _ch(rng, _SUFFIX)
    if question:
        end = _ch(rng, ("?", "?", "?", "", " ?"))
    else:
        end = _ch(rng, (".", "", "", ".", "!", ".", "", "!!", " :)"))
    if text.endswith(("?", ".", "!", ")")) and end in (".", "?", " ?"):
        end = ""
    text = text + end
    r = rng.random()
    if r < 0.4:
        return text
    if r < 0.82:
        return text[:1].upper() + text[1:]
    if r < 0.91:
        return text.upper()
    return " ".join(w[:1].upper() + w[1:] for w in text.split(" "))


# ---------------------------------------------------------------------------------------------- protocol
def sample_goals(vocab: TaskVocabulary, rng: np.random.Generator) -> tuple[str, ...]:
    """A possible goal list: towers (chains over distinct objects, bottom first) for support vocabularies, else a
    random subset of the objects (1..all) each sent to its own place, in a random achievement order."""
    info = _info(vocab)
    objs = list(vocab.objects)
    n = len(objs)
    for _ in range(100):
        if info.support:
            k = int(rng.integers(2, n + 1))
            chosen = [objs[i] for i in rng.permutation(n)[:k]]
            goals, rest = [], chosen
            while len(rest) >= 2:
                size = int(rng.integers(2, len(rest) + 1))
                if len(rest) - size == 1:
                    size = len(rest)
                chain, rest = rest[:size], rest[size:]
                goals += [_goal(info, chain[i + 1], chain[i]) for i in range(len(chain) - 1)]
            goals = list(vocab.canonical_order(goals))
        else:
            k = n if _p(rng, 0.2) else int(rng.integers(1, n + 1))
            chosen = [objs[i] for i in rng.permutation(n)[:k]]
            goals = []
            for o in chosen:
                if info.nargs >= 2:
                    place = vocab.own_place.get(o) or _ch(rng, list(vocab.places))
                    goals.append(_goal(info, o, place))
                else:
                    goals.append(_goal(info, o))
        if vocab.impossibility(goals) is None:
            return tuple(goals)
    raise RuntimeError(f"hand_terse: no possible goal list found for {vocab.task!r}")


def _phrase_support(info: _Info, rng: np.random.Generator, goals: Sequence[str]) -> tuple[str, bool]:
    n_all = len(info.vocab.objects)
    chains = _chains(info, goals)
    used = {x for c in chains for x in c}
    untouched = [o for o in info.vocab.objects if o not in used]
    question = False
    r = rng.random()
    if r < 0.3:
        if len(goals) == 2 and _p(rng, 0.4):
            body = _two_step(info, rng, goals[0], goals[1])
        elif len(goals) >= 2:
            body = _seq(info, rng, goals)
        else:
            body = _act(info, rng, goals[0])
            if _p(rng, 0.3):
                body = _ch(rng, ("just ", "only ", "simply ")) + body
        body, question = _polite(rng, body, info) if _p(rng, 0.4) else (body, False)
    elif r < 0.58:
        parts = [_tower(info, rng, c, n_all) for c in chains]
        body = _ch(rng, ("; ", ", and also ", ". also ")).join(parts)
    elif r < 0.72:
        body = _end_state(info, rng, _shuffled(rng, goals))
    elif r < 0.82:
        body = _ch(rng, (_should, _want_to))(info, rng, _shuffled(rng, goals))
    elif r < 0.9 and len(goals) >= 2 and len(used) == n_all and len(chains) == 1:
        # ... "then the last one on top"
        body = _seq(info, rng, goals[:-1]) if len(goals) > 2 else _act(info, rng, goals[0])
        last = _ch(rng, ("the last one", "the remaining one", "the other one", "the last " + _cls(info, rng),
                         "the remaining " + _cls(info, rng), "the third one" if n_all == 3 else "the last one"))
        body += _ch(rng, (", then ", ", and then ", ". then ", ", finally ")) + \
            f"{_ch(rng, ('', _verb(info, rng) + ' '))}{last} on top"
    else:
        # plain imperative list (order implied by support), mention order shuffled
        verb = _verb(info, rng)
        order = _shuffled(rng, goals)
        acts = _acts(info, rng, order, verb, 0.5)
        body = _join(rng, acts) if _p(rng, 0.6) else "; ".join(acts)
        body, question = _polite(rng, body, info)
    if untouched and _p(rng, 0.45) or (not untouched and _p(rng, 0.08)):
        return _style(rng, _attach(rng, body, _exclusion(info, rng, untouched), question), False), True
    return _style(rng, body, question), True


def _collective(info: _Info, rng: np.random.Generator, goals: Sequence[str]) -> str | None:
    """Goals as a collective ("everything", "all but X", "both nuts"): None where it does not fit."""
    objs = list(info.vocab.objects)
    sent = [_args(g)[0] for g in goals]
    if not all(_is_own(info, g) for g in goals):
        return None
    n_all, k = len(objs), len(goals)
    verb = _verb(info, rng)
    where = _target(info, rng, goals[0], verb, plural=True)
    away = " away" if info.nargs == 1 and "put" in info.vocab.skill_words.get(info.skill, ()) else ""
    if k == n_all:
        num = _NUM.get(n_all, str(n_all))
        grp = _ch(rng, ("everything", "all the " + _cls(info, rng, True), f"all {num} {_cls(info, rng, True)}",
                        f"all {num}", "each " + _cls1(info, rng), "every " + _cls1(info, rng),
                        "all of them", "each of them", "the " + _cls(info, rng, True), "them all",
                        f"both {_cls(info, rng, True)}" if n_all == 2 else "everything",
                        "both" if n_all == 2 else "all of the " + _cls(info, rng, True)))
        if n_all == 2:
            grp = grp.replace("all two", "both")
        single = grp.startswith(("each", "every")) and not grp.startswith("each of")
        if single or grp == "everything":
            where = _target(info, rng, goals[0], verb, plural=False)
            if _is_own(info, goals[0]):
                where = f"{where.split()[0]} {_own_ref(info, rng, False)}"
        opts = [f"{verb} {grp} {where}"]
        if away and verb == "put":
            opts.append(f"put {grp} away")
        opts += [f"{b} {grp}" for b in info.bare if b != "return"]
        if "tidy" in info.vocab.skill_words.get(info.skill, ()):
            opts.append(f"tidy up {grp}")
        return _ch(rng, opts)
    if k == n_all - 1:
        left = [o for o in objs if o not in sent][0]
        lo = _obj(info, rng, left)
        head = _ch(rng, (f"everything except {lo}", f"all but {lo}", f"all of them apart from {lo}",
                         f"everything but {lo}", f"all the {_cls(info, rng, True)} except {lo}",
                         f"every {_cls1(info, rng)} except {lo}", f"everything other than {lo}"))
        if head.startswith(("everything", "every ")) or k == 1:
            where = f"{where.split()[0]} {_own_ref(info, rng, False)}"
        opts = [f"{verb} {head} {where}"]
        if away and verb == "put":
            opts.append(f"put {head} away")
        opts += [f"{b} {head}" for b in info.bare if b != "return"]
        return _ch(rng, opts)
    return None


def _phrase_places(info: _Info, rng: np.random.Generator, goals: Sequence[str]) -> tuple[str, bool]:
    k = len(goals)
    sent = [_args(g)[0] for g in goals]
    untouched = [o for o in info.vocab.objects if o not in sent]
    question = False
    ordered = False
    r = rng.random()
    if k >= 2 and r < 0.4:
        ordered = True
        s = rng.random()
        if k == 2 and s < 0.3:
            body = _two_step(info, rng, goals[0], goals[1])
        elif s < 0.45 and all(_is_own(info, g) for g in goals):
            objs = [_obj(info, rng, o) for o in sent]
            v = _verb(info, rng)
            where = _target(info, rng, goals[0], v, plural=True)
            if k == 2:
                body = _ch(rng, (f"{v} {objs[0]} and {objs[1]} {where}, starting with {_obj(info, rng, sent[0])}",
                                 f"{v} {objs[1]} and {objs[0]} {where}, finishing with {_obj(info, rng, sent[1])}",
                                 f"{v} {objs[0]} {where.split()[0]} {_own_ref(info, rng)} first, then the other one"
                                 if len(info.vocab.objects) == 2 else
                                 f"{v} {objs[0]} {where.split()[0]} {_own_ref(info, rng)} first, then {objs[1]}",
                                 f"{v} {objs[0]} first and {objs[1]} second, both {where}"))
            else:
                mid = ", ".join(f"then {o}" for o in objs[1:-1])
                body = _ch(rng, (
                    f"{v} {_join(rng, objs)} {where}, in that order",
                    f"{v} {_join(rng, objs)} {where}, starting with {objs[0]}, {mid}, finishing with {objs[-1]}",
                    f"{v} them {where} one at a time: {', '.join(objs)}",
                    f"{', '.join(objs)} -- in that order -- {where}"))
        elif s < 0.5 and set(sent) == set(info.vocab.objects) and k == 2 and _is_own(info, goals[1]):
            body = f"{_act(info, rng, goals[0])}, then {_ch(rng, ('the other one', 'the rest', 'the remaining one'))}"
        else:
            body = _seq(info, rng, goals)
        if _p(rng, 0.25):
            body, question = _polite(rng, body, info)
    else:
        order = _shuffled(rng, goals)
        coll = _collective(info, rng, order) if _p(rng, 0.5) else None
        s = rng.random()
        if coll is not None:
            body, question = _polite(rng, coll, info) if _p(rng, 0.4) else (coll, False)
        elif s < 0.35:
            verb = _verb(info, rng)
            acts = _acts(info, rng, order, verb, 0.4, p_verb=0.7)
            body = _join(rng, acts) if _p(rng, 0.7) else _ch(rng, ("; ", ", ")).join(acts)
            if k == 1 and not untouched and _p(rng, 0.1):
                body = "just " + body
            elif k == 1 and _p(rng, 0.15):
                body = _ch(rng, ("only ", "just ")) + body
            body, question = _polite(rng, body, info)
        elif s < 0.5 and all(_is_own(info, g) for g in order):
            objs = [_obj(info, rng, _args(g)[0]) for g in order]
            grab = _ch(rng, [w for w in info.vocab.skill_words.get("pick", ())
                             if w in ("grab", "take", "pick up")] or ["take"])
            v = _verb(info, rng)
            if k == 1:
                body = f"{grab} {objs[0]} and {v} it {_target(info, rng, order[0], v)}"
            else:
                pron = _ch(rng, ("them", "them", "each of them", "all of them" if k > 2 else "both of them"))
                plural = pron == "them" or pron.startswith(("all", "both"))
                where = _target(info, rng, order[0], v, plural=plural)
                if not plural:
                    where = f"{where.split()[0]} {_own_ref(info, rng)}"
                body = f"{grab} {_join(rng, objs)} and {v} {pron} {where}"
            body, question = _polite(rng, body, info) if _p(rng, 0.3) else (body, False)
        elif s < 0.65:
            body = _end_state(info, rng, order)
        elif s < 0.8:
            body = _ch(rng, (_should, _want_to))(info, rng, order)
        elif s < 0.9:
            # "the milk: its bin. the bread: the bread bin."
            body = _ch(rng, ("; ", ", ", ". ")).join(
                f"{_obj(info, rng, _args(g)[0])}{_ch(rng, (' goes ', ' -- ', ' ', ' goes '))}{_loc(info, rng, g, True)}"
                for g in order)
        else:
            body = _ch(rng, ("can you ", "could you ", "would you ")) + _join(
                rng, _acts(info, rng, order, None, 0.5))
            question = True
    if untouched and _p(rng, 0.4) or (not untouched and _p(rng, 0.06)):
        return _style(rng, _attach(rng, body, _exclusion(info, rng, untouched), question), False), ordered
    return _style(rng, body, question), ordered


def phrase(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator, split: str) -> tuple[str, bool]:
    """An instruction asking for exactly ``goals``, and whether its words impose their order."""
    del split
    info = _info(vocab)
    goals = list(goals)
    if info.support:
        return _phrase_support(info, rng, vocab.canonical_order(goals))
    return _phrase_places(info, rng, goals)


# ---------------------------------------------------------------------------------------------- negatives
#: The goals of the latest "impossible" negative (for tests); each was checked with ``vocab.impossibility``.
last_impossible_goals: tuple[str, ...] = ()


def _oov_object(info: _Info, rng: np.random.Generator) -> str:
    vw = info.vocab.words()
    if _p(rng, 0.5):
        mods = [w for w in (*_OOV_COLOURS, *_OOV_SHAPES) if w not in vw]
        nouns = list(info.obj_cls) or [p.split()[-1] for ps in info.vocab.objects.values() for p in ps
                                        if len(p.split()) > 1 and p.split()[-1] != "one"] or ["thing"]
        return f"the {_ch(rng, mods)} {_ch(rng, nouns)}"
    return "the " + _ch(rng, [w for w in _OOV_THINGS if not set(w.split()) & vw])


def _oov_place(info: _Info, rng: np.random.Generator) -> str:
    vw = info.vocab.words()
    if info.place_cls and _p(rng, 0.6):
        mods = [w for w in (*_OOV_COLOURS, *_OOV_SHAPES) if w not in vw]
        return f"the {_ch(rng, mods)} {_ch(rng, info.place_cls)}"
    return "the " + _ch(rng, [w for w in _OOV_PLACES if w not in vw])


def _real_goal(info: _Info, rng: np.random.Generator) -> str:
    return _ch(rng, list(sample_goals(info.vocab, rng)))


def _neg_oov(info: _Info, rng: np.random.Generator) -> str:
    objs = list(info.vocab.objects)
    v = _verb(info, rng)
    r = int(rng.integers(5))
    if r == 0 or (r == 1 and not info.support):
        clause = f"{v} {_oov_object(info, rng)} {_target(info, rng, _real_goal(info, rng), v)}"
    elif r == 1:
        clause = f"{v} {_obj(info, rng, _ch(rng, objs))} {_prep(info, rng)} {_oov_object(info, rng)}"
    elif r == 2:
        clause = f"{v} {_obj(info, rng, _ch(rng, objs))} {_prep(info, rng, v)} {_oov_place(info, rng)}"
    elif r == 3:
        clause = _ch(rng, (f"{v} {_oov_object(info, rng)} {_prep(info, rng, v)} {_oov_place(info, rng)}",
                           f"i want {_oov_object(info, rng)} {_prep(info, rng)} {_oov_place(info, rng)}",
                           f"{v} {_oov_object(info, rng)} {_ch(rng, ('away', 'over there', 'down'))}"))
    else:
        clause = f"{v} {_obj(info, rng, _ch(rng, objs))} and {_oov_object(info, rng)} " \
                 f"{_prep(info, rng, v)} {_oov_place(info, rng)}"
    if _p(rng, 0.4):  # mixed with a real goal
        real = _act(info, rng, _real_goal(info, rng))
        clause = _ch(rng, (f"{real}, then {clause}", f"{clause} and {real}", f"first {real}; then {clause}",
                           f"{clause}, after that {real}"))
    body, q = _polite(rng, clause, info)
    return _style(rng, body, q)


def _neg_missing(info: _Info, rng: np.random.Generator) -> str:
    vw = set(w for ws in info.vocab.skill_words.values() for p in ws for w in p.split())
    phrases = [p for p in MISSING_SKILL_PHRASES if not set(p.replace("{o}", "").split()) & vw]
    objs = list(info.vocab.objects)
    form = _ch(rng, phrases)
    r = rng.random()
    if r < 0.5:
        clause = form.replace("{o}", _obj(info, rng, _ch(rng, objs)))
    elif r < 0.7:
        pair = [_obj(info, rng, o) for o in rng.permutation(objs)[:2]]
        clause = form.replace("{o}", _join(rng, pair))
    elif r < 0.85:
        clause = form.replace("{o}", _ch(rng, ("everything", "all of them", "the " + _cls(info, rng, True))))
    else:
        clause = form.replace("{o}", _obj(info, rng, _ch(rng, objs)))
        real = _act(info, rng, _real_goal(info, rng))
        clause = _ch(rng, (f"{real}, then {clause}", f"{clause} and then {real}", f"{clause}, then {real}"))
    body, q = _polite(rng, clause, info)
    return _style(rng, body, q)


def _impossible(info: _Info, rng: np.random.Generator) -> tuple[str, tuple[str, ...]]:
    vocab = info.vocab
    objs = list(vocab.objects)
    o = lambda x: _obj(info, rng, x)  # noqa: E731
    v = _verb(info, rng)
    on = lambda: _prep(info, rng, v)  # noqa: E731
    cands: list[tuple[str, tuple[str, ...]]] = []
    if info.support and len(objs) >= 2:
        a, b, c = (list(rng.permutation(objs)) * 2)[:3]
        cands.append((_ch(rng, (f"{v} {o(a)} {on()} {o(a)}", f"{v} {o(a)} {on()} itself",
                                f"{v} {o(a)} on top of itself")), (_goal(info, a, a),)))
        cands.append((_ch(rng, (f"{v} {o(a)} {on()} {o(b)} and {o(b)} {on()} {o(a)}",
                                f"{v} {o(a)} {on()} {o(b)}, then {v} {o(b)} {on()} {o(a)}",
                                f"i want {o(a)} on {o(b)} and {o(b)} on {o(a)}")),
                      (_goal(info, a, b), _goal(info, b, a))))
        if len(objs) >= 3:
            cands.append((_ch(rng, (f"{v} {o(a)} {on()} {o(c)} and {o(b)} {on()} {o(c)}",
                                    f"{v} both {o(a)} and {o(b)} {on()} {o(c)}",
                                    f"{o(a)} and {o(b)} both directly on {o(c)}",
                                    f"{v} {o(a)} and {o(b)} side by side on {o(c)}")),
                          (_goal(info, a, c), _goal(info, b, c))))
            cands.append((_ch(rng, (f"{v} {o(a)} {on()} {o(b)} and {on()} {o(c)}",
                                    f"{v} {o(a)} {on()} {o(b)} and also {on()} {o(c)}")),
                          (_goal(info, a, b), _goal(info, a, c))))
            cands.append((f"{v} {o(a)} {on()} {o(b)}, {o(b)} {on()} {o(c)} and {o(c)} {on()} {o(a)}",
                          (_goal(info, a, b), _goal(info, b, c), _goal(info, c, a))))
    elif info.nargs >= 2:
        owned = [x for x in objs if x in vocab.own_place]
        if owned and len(vocab.places) >= 2:
            a = _ch(rng, owned)
            wrong = _ch(rng, [p for p in vocab.places if p != vocab.own_place[a]])
            cands.append((_ch(rng, (f"{v} {o(a)} {on()} {_place_np(info, rng, wrong)}",
                                    f"i want {o(a)} on {_place_np(info, rng, wrong)}")),
                          (_goal(info, a, wrong),)))
            cands.append((f"{v} {o(a)} {on()} {_place_np(info, rng, vocab.own_place[a])} and "
                          f"{on()} {_place_np(info, rng, wrong)}",
                          (_goal(info, a, vocab.own_place[a]), _goal(info, a, wrong))))
            if len(owned) >= 2:
                a, b = [owned[i] for i in rng.permutation(len(owned))[:2]]
                pa, pb = vocab.own_place[a], vocab.own_place[b]
                if pa != pb:
                    cands.append((_ch(rng, (f"{v} {o(a)} {on()} {_place_np(info, rng, pb)} and {o(b)} {on()} "
                                            f"{_place_np(info, rng, pa)}",
                                            f"swap them: {o(a)} {on()} {_place_np(info, rng, pb)}, {o(b)} {on()} "
                                            f"{_place_np(info, rng, pa)}")),
                                  (_goal(info, a, pb), _goal(info, b, pa))))
                    cands.append((f"{v} both {o(a)} and {o(b)} {on()} {_place_np(info, rng, pa)}",
                                  (_goal(info, a, pa), _goal(info, b, pa))))
    else:
        owned = [x for x in objs if x in vocab.own_place]
        if owned and len(vocab.places) >= 2:
            a = _ch(rng, owned)
            wrong = _ch(rng, [p for p in vocab.places if p != vocab.own_place[a]])
            # a one-argument template cannot name the place: the intended goal carries it as a second argument
            cands.append((_ch(rng, (f"{v} {o(a)} {on()} {_place_np(info, rng, wrong)}",
                                    f"i want {o(a)} in {_place_np(info, rng, wrong)}",
                                    f"{v} {o(a)} {on()} {_place_np(info, rng, wrong)}, not its own")),
                          (f"{info.name}({a},{wrong})",)))
            cands.append((_ch(rng, (f"{v} {o(a)} {on()} {_place_np(info, rng, vocab.own_place[a])} and {on()} "
                                    f"{_place_np(info, rng, wrong)}",
                                    f"{v} {o(a)} {on()} {_place_np(info, rng, wrong)} and {on()} "
                                    f"{_own_ref(info, rng)}" if info.place_cls else
                                    f"{v} {o(a)} {on()} two places at once")),
                          (_goal(info, a), _goal(info, a))))
    if not cands:
        raise RuntimeError(f"hand_terse: no impossible request for {vocab.task!r}")
    for i in rng.permutation(len(cands)):
        text, goals = cands[int(i)]
        if vocab.impossibility(goals) is not None:
            break
    else:
        raise RuntimeError(f"hand_terse: no impossible request for {vocab.task!r}")
    assert vocab.impossibility(goals) is not None, goals
    body, q = _polite(rng, text, info)
    return _style(rng, body, q), goals


def _neg_empty(info: _Info, rng: np.random.Generator) -> str:
    r = rng.random()
    if r < 0.65:
        text = _ch(rng, _EMPTY)
        return _style(rng, text, text.endswith("?"), suffix=False) if text else text
    objs = list(info.vocab.objects)
    text = _exclusion(info, rng, [objs[i] for i in rng.permutation(len(objs))[:int(rng.integers(1, 3))]], False)
    if text.startswith(("leave everything else", "don't touch anything else", "leave the rest",
                        "don't move anything else", "that", "nothing", "and", "only")):
        text = _ch(rng, ("leave everything alone", "don't touch anything", "nothing today"))
    return _style(rng, _ch(rng, ("", "never mind, ", "actually, ", "no, ", "for now ")) + text, False)


def negatives(vocab: TaskVocabulary, rng: np.random.Generator, split: str) -> tuple[str, str]:
    """An instruction that must be refused, and its kind."""
    global last_impossible_goals
    del split
    info = _info(vocab)
    kind = _ch(rng, ("out_of_vocabulary", "missing_skill", "impossible", "empty"))
    if kind == "out_of_vocabulary":
        return _neg_oov(info, rng), kind
    if kind == "missing_skill":
        return _neg_missing(info, rng), kind
    if kind == "impossible":
        text, goals = _impossible(info, rng)
        last_impossible_goals = goals
        return text, kind
    return _neg_empty(info, rng), kind


__all__ = ["MISSING_SKILL_PHRASES", "MISSING_SKILL_VERBS", "negatives", "phrase", "sample_goals"]
