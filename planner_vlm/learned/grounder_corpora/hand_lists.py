"""Hand ``lists``: compact, structured instructions for the learned grounder's training text.

One writer's phrasings (see :mod:`planner_vlm.learned.grounder_corpora`): chains ("A on B on C"), labelled layouts
("bottom: A. middle: B. top: C."; "base = A, top = C"), ordered lists ("in this order: a, b, c", "first a, second b,
lastly c", numbered steps and bullets), partitive references ("of the two nuts, the square one", "the other two",
"the remaining three") and sentences whose order of mention differs from the order of action ("put b in its bin, but
do a first"), besides ordinary imperatives, questions, end states and exclusions.

Implements :class:`planner_vlm.learned.grounder_train.Phrasing` with module-level functions over a task's declared
vocabulary only: every object, place and verb word comes from the :class:`TaskVocabulary`, and the module branches on
its structure (``ordered_by_support``, ``own_place``, the goal template's arity, whether the support is an object or
a place), never on the task's name. Pure Python + numpy, deterministic given the rng.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence

import numpy as np

from tandem.core.vocabulary import TaskVocabulary, parse_goal

# ---------------------------------------------------------------------------------------------- English tables
NUM = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
ORD = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh", 8: "eighth"}

#: Verbs (for skills a task lacks) used by ``missing_skill`` negatives; never used by a positive text.
MISSING_VERBS: tuple[str, ...] = (
    "wipe", "push", "rotate", "open", "pour", "throw", "shake", "flip", "hide", "paint", "knock over", "unstack",
    "squeeze", "spin", "wash", "crush", "kick", "fold", "roll", "tilt", "twist", "cut", "polish", "heat", "weigh",
    "smash", "scrub", "toss", "juggle", "unscrew", "tip over", "peel", "sniff", "lick",
)
_COLOURS = ("purple", "yellow", "orange", "pink", "black", "white", "brown", "grey", "violet", "silver", "gold",
            "turquoise")
_SHAPES = ("triangle", "triangular", "hexagonal", "star", "oval", "diamond", "pentagon", "octagonal")
_THINGS = ("banana", "apple", "cup", "mug", "spoon", "bottle", "sponge", "pen", "bowl", "plate", "ball", "book",
           "phone", "toy car", "teddy bear", "screwdriver", "hammer", "lemon", "egg", "jar of jam", "water bottle",
           "pencil", "wrench", "bolt", "glass", "towel", "candle")
_OOV_PLACES = ("shelf", "drawer", "basket", "tray", "bucket", "cabinet", "sink", "windowsill", "crate", "fridge",
               "floor", "chair", "desk")

#: Verb -> (past participle, gerund) for the English forms used here.
_FORMS = {
    "put": ("put", "putting"), "set": ("set", "setting"), "drop": ("dropped", "dropping"),
    "fit": ("fitted", "fitting"), "slide": ("slid", "sliding"), "stand": ("stood", "standing"),
    "bring": ("brought", "bringing"), "build": ("built", "building"), "tidy": ("tidied", "tidying"),
}


def _pp(verb: str) -> str:
    if verb in _FORMS:
        return _FORMS[verb][0]
    return verb + "d" if verb.endswith("e") else verb + "ed"


def _ger(verb: str) -> str:
    if verb in _FORMS:
        return _FORMS[verb][1]
    return verb[:-1] + "ing" if verb.endswith("e") and not verb.endswith("ee") else verb + "ing"


def _plural(noun: str) -> str:
    if noun.endswith(("x", "s", "sh", "ch")):
        return noun + "es"
    return noun + "s"


#: How a verb takes a destination: onto an object/peg ("on" kind) or into a container ("in" kind).
_ON_FRAMES = {"put": ("on", "onto", "on top of"), "place": ("on", "onto", "on top of"), "set": ("on", "onto"),
              "move": ("onto", "on top of", "on"), "stack": ("on", "onto", "on top of", "atop"),
              "pile": ("on", "onto", "on top of"), "stand": ("on", "on top of", "atop"), "drop": ("onto", "on"),
              "insert": ("onto", "on"), "slide": ("onto", "over", "down onto"), "fit": ("onto", "over", "on"),
              "thread": ("onto", "over"), "mount": ("on", "onto"), "lower": ("onto", "over")}
_IN_FRAMES = {"put": ("in", "into", "inside"), "place": ("in", "into"), "move": ("into", "to"),
              "drop": ("in", "into"), "store": ("in",), "stow": ("in", "inside"), "bring": ("to",),
              "return": ("to",), "sort": ("into",), "insert": ("into",), "slide": ("into",)}
#: Verb -> forms that ask for an object's own container without naming it ("X" is the object list).
_AWAY = {"put": ("put X away", "put away X"), "store": ("store X", "store X away"), "stow": ("stow X", "stow X away"),
         "sort": ("sort X",), "tidy": ("tidy up X", "tidy X away"), "return": ("return X",),
         "move": ("move X to where it belongs",), "place": ("place X where it belongs",)}

_POLITE_PRE = ("please ", "could you ", "can you ", "would you ", "I'd like you to ", "I want you to ",
               "go ahead and ", "I need you to ")
_PRE_FILL = ("hey robot, ", "okay so ", "ok, ", "robot, ", "alright, ", "so ", "right, ", "hi, ", "hey, ", "now ",
             "okay robot: ")
_POST_FILL = (" please", ", thanks", " for me", " right now", ", thank you", " when you can", ", cheers",
              " if you can", " now")
_ADVERBS = ("carefully ", "gently ", "quickly ", "slowly ")
_COLLECTIVE = ("items", "objects", "things")
_EMPTY = ("", "hello", "hi", "hey robot", "thanks, that's all", "thank you, that's all", "do nothing",
          "nothing for now", "never mind", "wait", "hold on", "stop", "ok", "okay", "hmm", "cancel that", "forget it",
          "nothing, thanks", "that's all", "just wait there", "stay where you are", "leave everything as it is",
          "don't move anything", "don't touch anything", "do not touch anything, thanks", "all good, do nothing",
          "no task right now", "pause", "good morning", "are you there?", "nevermind, leave it", "we're done",
          "sorry, wrong window", "test", "...", "?", "ok robot, nothing to do", "everything stays where it is",
          "keep everything where it is", "leave it all alone", "relax", "skip this one")


# ---------------------------------------------------------------------------------------------- vocabulary shape
def _pick(rng: np.random.Generator, seq: Sequence):
    return seq[int(rng.integers(len(seq)))]


def _n_args(template: str) -> int:
    idx = [int(f) for _, f, _, _ in string.Formatter().parse(template) if f is not None and f.isdigit()]
    return max(idx) + 1 if idx else 0


def _skill(vocab: TaskVocabulary) -> str:
    return vocab.goal_skills[0]


def _arity(vocab: TaskVocabulary) -> int:
    return _n_args(vocab.skills[_skill(vocab)])


def _object_support(vocab: TaskVocabulary) -> bool:
    """Objects go on objects (towers)."""
    return _arity(vocab) >= 2 and not vocab.places


def _kind(vocab: TaskVocabulary) -> str:
    """"on" or "in": how the goal predicate relates the object to its place (from the predicate's name)."""
    name = vocab.skills[_skill(vocab)].split("(", 1)[0].lower()
    if name.startswith("in") or "_in" in name:
        return "in"
    if name.startswith("on") or "_on" in name:
        return "on"
    return "in" if _arity(vocab) == 1 else "on"


def _verbs(vocab: TaskVocabulary) -> list[str]:
    """The goal skill's single-word verbs that take a destination of this task's kind."""
    frames = _ON_FRAMES if _kind(vocab) == "on" else _IN_FRAMES
    words = [w for w in vocab.skill_words.get(_skill(vocab), ()) if " " not in w]
    out = [w for w in words if w in frames]
    return out or ["put"]


def _away_verbs(vocab: TaskVocabulary) -> list[str]:
    if _arity(vocab) != 1 or not vocab.own_place:
        return []
    return [w for w in vocab.skill_words.get(_skill(vocab), ()) if w in _AWAY]


def _class_nouns(phrases: Sequence[Sequence[str]]) -> list[str]:
    """Head nouns every entity shares ("cube" of "red cube"), "one" excluded."""
    sets = [{p.split()[-1] for p in ws if " " in p} - {"one"} for ws in phrases]
    if not sets:
        return []
    common = set.intersection(*sets)
    return sorted(common)


def _obj_nouns(vocab: TaskVocabulary) -> list[str]:
    return _class_nouns(list(vocab.objects.values()))


def _place_nouns(vocab: TaskVocabulary) -> list[str]:
    nouns = _class_nouns(list(vocab.places.values()))
    if nouns:
        return nouns
    return ["bin"] if _kind(vocab) == "in" else ["place"]


def _attr(vocab: TaskVocabulary, obj: str) -> str | None:
    """"red" of "red one", for partitives ("of the cubes, the red one")."""
    for w in vocab.objects[obj]:
        if w.endswith(" one"):
            return w[:-4]
    return None


def _all_words(vocab: TaskVocabulary) -> set[str]:
    return vocab.words() | {w for ws in vocab.skill_words.values() for p in ws for w in p.split()}


# ---------------------------------------------------------------------------------------------- noun phrases
def _np(vocab: TaskVocabulary, obj: str, rng: np.random.Generator) -> str:
    w = _pick(rng, vocab.objects[obj])
    r = rng.random()
    if r < 0.04 and not w.endswith(" one"):
        return f'the "{w}"'
    if r < 0.12 and " " not in w:
        return w
    return "the " + w


def _partitive_np(vocab: TaskVocabulary, obj: str, rng: np.random.Generator) -> str:
    a = _attr(vocab, obj)
    return f"the {a} one" if a else _np(vocab, obj, rng)


def _join(items: Sequence[str], rng: np.random.Generator, conj: str = "and") -> str:
    items = list(items)
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    oxford = "," if rng.random() < 0.4 else ""
    return ", ".join(items[:-1]) + f"{oxford} {conj} {items[-1]}"


def _collective(vocab: TaskVocabulary, rng: np.random.Generator) -> str:
    nouns = _obj_nouns(vocab)
    if nouns and rng.random() < 0.7:
        return _plural(_pick(rng, nouns))
    return _pick(rng, _COLLECTIVE)


def _group(vocab: TaskVocabulary, k: int, rng: np.random.Generator) -> str:
    """A phrase for a set of k objects that is the whole set of the task ("all three cubes", "both", "everything")."""
    n = len(vocab.objects)
    noun = _collective(vocab, rng)
    opts = [f"all the {noun}", f"all {NUM.get(n, str(n))} {noun}", f"the {NUM.get(n, str(n))} {noun}",
            "all of them", "everything", f"every one of the {noun}", f"each of the {noun}"]
    if n == 2:
        opts += ["both", f"both {noun}", "both of them"]
    if n >= 3:
        opts += [f"all {NUM.get(n, str(n))}", f"all {NUM.get(n, str(n))} of them"]
    return _pick(rng, opts)


# ---------------------------------------------------------------------------------------------- styling
_VERB_LIKE = {*_ON_FRAMES, *_IN_FRAMES, *_AWAY, "take", "grab", "pick", "build", "make", "stack",
              *(v.split()[0] for v in MISSING_VERBS)}

def _style(text: str, rng: np.random.Generator, question: bool = False, imperative: bool = True) -> str:
    text = re.sub(r"\?\s*(?=[,;.])", "", " ".join(text.split(" ")).strip())
    if question:
        text = text.rstrip("?")
    text = re.sub(r"\.(\s*\.)+", ".", text)
    if imperative and text.split(" ", 1)[0] in _VERB_LIKE and rng.random() < 0.08:
        text = _pick(rng, _ADVERBS) + text
    r = rng.random()
    if r < 0.15:
        text = _pick(rng, _PRE_FILL) + text
    elif r < 0.27:
        text = text + _pick(rng, _POST_FILL)
    c = rng.random()
    if question:
        end = "?" if c < 0.85 else ""
    else:
        end = "" if c < 0.45 else "." if c < 0.85 else "!" if c < 0.95 else ";" if c < 0.97 else "!!"
    if text and text[-1] in ".!?;:" and end:
        end = ""
    text = text + end
    text = re.sub(r"\?\s*(?=[,;.])", "", text)
    c = rng.random()
    if c < 0.5:
        return text
    if c < 0.85:
        return text[:1].upper() + text[1:]
    if c < 0.93:
        return " ".join(w[:1].upper() + w[1:] for w in text.split(" "))
    return text.upper()


# ---------------------------------------------------------------------------------------------- sampling
def sample_goals(vocab: TaskVocabulary, rng: np.random.Generator) -> tuple[str, ...]:
    """A possible goal list (``vocab.impossibility(goals) is None``), canonical order for towers."""
    skill = _skill(vocab)
    objs = list(vocab.objects)
    for _ in range(100):
        if _object_support(vocab):
            n = len(objs)
            m = int(rng.integers(2, n + 1))
            chosen = [objs[i] for i in rng.permutation(n)[:m]]
            # split into chains of >= 2 (one chain unless there are 4 or more cubes)
            chains: list[list[str]] = []
            rest = chosen
            while rest:
                if len(rest) >= 4 and rng.random() < 0.4:
                    cut = int(rng.integers(2, len(rest) - 1))
                    chains.append(rest[:cut])
                    rest = rest[cut:]
                else:
                    chains.append(rest)
                    rest = []
            goals = [vocab.goal(skill, (c[i + 1], c[i])) for c in chains for i in range(len(c) - 1)]
            goals = list(vocab.canonical_order(goals))
        else:
            n = len(objs)
            k = int(rng.integers(1, n + 1))
            chosen = [objs[i] for i in rng.permutation(n)[:k]]
            goals = []
            for o in chosen:
                if _arity(vocab) >= 2:
                    place = vocab.own_place.get(o) or _pick(rng, list(vocab.places))
                    goals.append(vocab.goal(skill, (o, place)))
                else:
                    goals.append(vocab.goal(skill, (o,)))
        if vocab.impossibility(goals) is None:
            return tuple(goals)
    raise RuntimeError(f"hand_lists: no possible goal list found for task {vocab.task!r}")


# ---------------------------------------------------------------------------------------------- towers
def _chains(vocab: TaskVocabulary, goals: Sequence[str]) -> list[list[str]]:
    above: dict[str, str] = {}
    tops: set[str] = set()
    order: list[str] = []
    for g in goals:
        _, args = parse_goal(g)
        top, bottom = args[0], args[1]
        above[bottom] = top
        tops.add(top)
        order += [bottom, top]
    roots = [b for b in dict.fromkeys(order) if b in above and b not in tops]
    chains = []
    for r in roots:
        c = [r]
        while c[-1] in above:
            c.append(above[c[-1]])
        chains.append(c)
    return chains


def _on(rng: np.random.Generator, verb: str | None = None) -> str:
    if verb and verb in _ON_FRAMES:
        return _pick(rng, _ON_FRAMES[verb])
    return _pick(rng, ("on", "onto", "on top of", "on top of", "atop"))


def _state_on(rng: np.random.Generator) -> str:
    return _pick(rng, ("on", "on", "on top of", "atop", "resting on", "sitting on"))


def _then(rng: np.random.Generator) -> str:
    return _pick(rng, (", then ", "; then ", ". then ", ", and then ", ", after that ", ". after that, ", ". next, ",
                       ", next ", ". once that's done, ", ", and once that's done, ", " and after that ", " then ",
                       " -> "))


def _tower_noun(rng: np.random.Generator) -> str:
    return _pick(rng, ("tower", "stack", "pile", "tower", "stack"))


def _chain_text(vocab: TaskVocabulary, c: list[str], rng: np.random.Generator, n_obj: int) -> str:
    """One tower ``c`` (bottom first) in one of many layouts."""
    N = lambda o: _np(vocab, o, rng)  # noqa: E731
    verbs = _verbs(vocab)
    V = lambda: _pick(rng, verbs)  # noqa: E731
    L = len(c)
    whole = n_obj == L
    noun = _collective(vocab, rng)
    kind = int(rng.integers(16))
    if kind == 0:  # pairwise bottom-up
        parts = []
        for i in range(1, L):
            v = V()
            if i == 1 or rng.random() < 0.5:
                parts.append(f"{v} {N(c[i])} {_on(rng, v)} {N(c[i - 1])}")
            elif rng.random() < 0.5:
                parts.append(f"{v} {N(c[i])} on top of it")
            else:
                parts.append(f"{N(c[i])} on {N(c[i - 1])}")
        out = parts[0]
        for p in parts[1:]:
            out += _then(rng) + p
        return out
    if kind == 1:  # top-down mention with "but first" / "before" / "after"
        if L == 2:
            v = V()
            return _pick(rng, (f"{v} {N(c[1])} {_on(rng, v)} {N(c[0])}", f"{N(c[1])} {_on(rng)} {N(c[0])}",
                               f"{N(c[0])} under {N(c[1])}", f"{N(c[1])} goes {_on(rng)} {N(c[0])}"))
        last = f"{V()} {N(c[-1])} on {N(c[-2])}"
        rest = [f"{N(c[i])} on {N(c[i - 1])}" for i in range(1, L - 1)]
        first = f"{V()} " + ", then ".join(rest)
        return _pick(rng, (f"{last}, but first {first}", f"{last} - but do {', then '.join(rest)} first",
                           f"before you {last.split(' ', 1)[0]} {last.split(' ', 1)[1]}, {first}",
                           f"{last}, after you {first.split(' ', 1)[0]} {first.split(' ', 1)[1]}",
                           f"{last}; {', then '.join(rest)} comes before that"))
    if kind == 2:  # labelled layout
        if L == 2:
            return _pick(rng, (f"bottom: {N(c[0])}. top: {N(c[1])}", f"base = {N(c[0])}, top = {N(c[1])}",
                               f"base: {N(c[0])}; top: {N(c[1])}", f"top = {N(c[1])}, bottom = {N(c[0])}",
                               f"{_tower_noun(rng)} of two. bottom: {N(c[0])}, top: {N(c[1])}"))
        if L == 3:
            return _pick(rng, (f"bottom: {N(c[0])}. middle: {N(c[1])}. top: {N(c[2])}",
                               f"base = {N(c[0])}, middle = {N(c[1])}, top = {N(c[2])}",
                               f"base = {N(c[0])}, top = {N(c[2])}, {N(c[1])} in between",
                               f"top: {N(c[2])}; middle: {N(c[1])}; bottom: {N(c[0])}",
                               f"{V()} them like this - bottom: {N(c[0])}, middle: {N(c[1])}, top: {N(c[2])}",
                               f"base: {N(c[0])}\nmiddle: {N(c[1])}\ntop: {N(c[2])}"))
        levels = [f"level {i + 1}: {N(o)}" for i, o in enumerate(c)]
        return f"{_tower_noun(rng)}, bottom up. " + ", ".join(levels)
    if kind == 3:  # chain "C on B on A"
        sep = _pick(rng, (" on ", " on top of ", " on ", " onto "))
        chain = sep.join(N(o) for o in reversed(c))
        return _pick(rng, (f"{V()} {chain}", chain, f"I want {chain}", f"{_tower_noun(rng)}: {chain}",
                           f"make it {chain}", f"the goal is {chain}"))
    if kind == 4:  # bottom-up / top-down lists
        up = ", ".join(N(o) for o in c)
        down = ", ".join(N(o) for o in reversed(c))
        return _pick(rng, (f"from the bottom up: {up}", f"bottom to top: {up}", f"top to bottom: {down}",
                           f"{V()} them bottom first: {', then '.join(N(o) for o in c)}",
                           f"build a {_tower_noun(rng)}, bottom to top: {up}",
                           f"build a {_tower_noun(rng)}, from top to bottom: {down}",
                           f"{_tower_noun(rng)} from the bottom up - {up}",
                           f"{V()} in this order, bottom first: {up}",
                           f"{V()} them - listed top first: {down}"))
    if kind == 5:  # roles
        if L == 2:
            roles = _pick(rng, (f"{N(c[0])} at the bottom and {N(c[1])} on top",
                                f"{N(c[1])} on top, {N(c[0])} at the base",
                                f"with {N(c[0])} as the base and {N(c[1])} on top"))
        elif L == 3:
            roles = _pick(rng, (f"{N(c[0])} at the bottom, {N(c[1])} in the middle, {N(c[2])} on top",
                                f"with {N(c[0])} at the base, {N(c[2])} on top and {N(c[1])} between them",
                                f"{N(c[2])} on top, {N(c[1])} in the middle, {N(c[0])} at the bottom",
                                f"{N(c[0])} at the base, then {N(c[1])}, then {N(c[2])} on top"))
        else:
            roles = (f"{N(c[0])} at the bottom, then " + ", then ".join(N(o) for o in c[1:-1])
                     + f", {N(c[-1])} on top")
        what = (f"of the {NUM.get(L, str(L))} {noun}" if whole else "")
        head = _pick(rng, (f"build a {_tower_noun(rng)} {what}", f"make a {_tower_noun(rng)} {what}",
                           f"{V()} {('all ' + NUM.get(L, str(L))) if whole else 'them'}", f"{_tower_noun(rng)}"))
        return " ".join(head.split()) + _pick(rng, (": ", ", ", " - ")) + roles
    if kind == 6:  # under / beneath / below
        w = lambda: _pick(rng, ("under", "beneath", "below", "underneath", "directly below"))  # noqa: E731
        parts = [f"{N(c[i - 1])} {w()} {N(c[i])}" for i in range(1, L)]
        body = _join(parts, rng) if rng.random() < 0.6 else ", ".join(parts)
        return _pick(rng, (body, f"I want {body}", f"the goal: {body}", f"make it so that {body}",
                           f"arrange them so: {body}"))
    if kind == 7:  # end state
        parts = [f"{N(c[i])} {_state_on(rng)} {N(c[i - 1])}" for i in range(1, L)]
        if rng.random() < 0.3:
            parts = [f"{N(c[i])} {_pick(rng, ('above', 'directly above', 'right above'))} {N(c[i - 1])}"
                     for i in range(1, L)]
        body = _join(parts, rng)
        return _pick(rng, (f"I want {body}", f"the goal is {body}", f"make it so that {body}",
                           f"when you're done: {body}", f"end state: {body}", f"I'd like {body}",
                           f"final layout - {body}",
                           "when you're done, " + _join([f"{N(c[i])} should be on {N(c[i - 1])}"
                                                          for i in range(1, L)], rng),
                           _join([f"{N(c[i])} should end up on {N(c[i - 1])}" for i in range(1, L)], rng),
                           f"I want {N(c[1])} to end up on {N(c[0])}" + "".join(
                               f" and {N(c[i])} on {N(c[i - 1])}" for i in range(2, L))))
    if kind == 8:  # numbered steps / bullets
        steps = []
        for i in range(1, L):
            v = V()
            steps.append(_pick(rng, (f"{v} {N(c[i])} {_on(rng, v)} {N(c[i - 1])}", f"{N(c[i])} on {N(c[i - 1])}",
                                     f"{N(c[i])} onto {N(c[i - 1])}")))
        fmt = int(rng.integers(6))
        if fmt == 0:
            return " ".join(f"{i + 1}) {s}" for i, s in enumerate(steps))
        if fmt == 1:
            return " ".join(f"{i + 1}. {s}." for i, s in enumerate(steps))
        if fmt == 2:
            return "; ".join(f"step {NUM[i + 1]}: {s}" for i, s in enumerate(steps))
        if fmt == 3:
            return "in this order:\n" + "\n".join(f"- {s}" for s in steps)
        if fmt == 4:
            return " ".join(f"({i + 1}) {s}" for i, s in enumerate(steps))
        return "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps))
    if kind == 9:  # ordinals
        if L == 2:
            v = V()
            return _pick(rng, (f"first, {N(c[0])} stays where it is; second, {v} {N(c[1])} {_on(rng, v)} it",
                               f"first, {v} {N(c[1])} {_on(rng, v)} {N(c[0])}. that's the only step"))
        parts = []
        for i in range(1, L):
            v = V()
            lead = "lastly" if i == L - 1 and rng.random() < 0.5 else ORD[i]
            parts.append(f"{lead}, {v} {N(c[i])} {_on(rng, v)} {N(c[i - 1])}")
        return "; ".join(parts)
    if kind == 10:  # resting
        v = V()
        if L == 2:
            return _pick(rng, (f"keep {N(c[0])} where it is, with {N(c[1])} resting on it",
                               f"{N(c[0])} with {N(c[1])} resting on it",
                               f"{v} {N(c[1])} {_on(rng, v)} {N(c[0])} and leave it resting there"))
        tail = "".join(f", and {N(c[i])} resting on {N(c[i - 1])}" for i in range(2, L))
        return _pick(rng, (f"keep {N(c[0])} where it is, with {N(c[1])} resting on it{tail}",
                           f"{N(c[0])} at the bottom with {N(c[1])} resting on it{tail}"))
    if kind == 11:  # partitive
        P = lambda o: _partitive_np(vocab, o, rng)  # noqa: E731
        scope = f"of the {NUM[n_obj] + ' ' if n_obj in NUM and rng.random() < 0.6 else ''}{noun}"
        if whole and L >= 2:
            other = _pick(rng, ("the other one", "the remaining one", "the last one", "the one that's left"))
            if L == 2:
                return f"{scope}, {P(c[0])} is the base and {other} goes on it"
            mids = "".join(f", then {P(o)} on it" for o in c[1:-1])
            return _pick(rng, (f"{scope}, {P(c[0])} is the base{mids}, and {other} on top",
                               f"{scope}: {P(c[0])} at the bottom{mids}, {other} last, on top"))
        v = V()
        return f"{scope}, {v} {P(c[1])} {_on(rng, v)} {P(c[0])}" + "".join(
            f", then {P(c[i])} on {P(c[i - 1])}" for i in range(2, L))
    if kind == 12:  # question
        v = V()
        body = f"{v} {N(c[1])} {_on(rng, v)} {N(c[0])}" + "".join(
            f" and then {N(c[i])} on {N(c[i - 1])}" for i in range(2, L))
        return _pick(rng, ("can you ", "could you ", "would you ", "will you ", "can you please ")) + body + "?"
    if kind == 13:  # collective "all three"
        if whole:
            seq = ", then ".join(N(o) for o in c[1:-1])
            mid = f", then {seq}" if seq else ""
            return _pick(rng, (f"{V()} {_group(vocab, L, rng)}: {N(c[0])} at the bottom{mid}, {N(c[-1])} on top",
                               f"{_group(vocab, L, rng)} into one {_tower_noun(rng)}, {N(c[0])} first{mid}, "
                               f"{N(c[-1])} last on top"))
        v = V()
        return f"just {v} {N(c[1])} {_on(rng, v)} {N(c[0])}" + "".join(
            f" and {N(c[i])} on {N(c[i - 1])}" for i in range(2, L))
    if kind == 14:  # "X first" / "starting with" / "finishing with"
        if L == 2:
            return _pick(rng, (f"{N(c[0])} first, {N(c[1])} on it", f"start with {N(c[0])} as the base, then "
                               f"{N(c[1])} on top", f"{V()} {N(c[1])} {_on(rng)} {N(c[0])}, finishing with "
                               f"{N(c[1])} on top"))
        mid = ", ".join(N(o) for o in c[1:-1])
        return _pick(rng, (f"{_pick(rng, ('build', 'make'))} a {_tower_noun(rng)} starting with {N(c[0])} at the bottom, then {mid}, "
                           f"finishing with {N(c[-1])} on top",
                           f"{_tower_noun(rng)}: {N(c[0])} first, then {mid}, {N(c[-1])} last"))
    # kind 15: "A on B" with "pile/stack/stand" forms and pronoun
    v = V()
    if L == 2:
        return _pick(rng, (f"take {N(c[1])} and {v} it {_on(rng, v)} {N(c[0])}",
                           f"{N(c[1])} {_on(rng)} {N(c[0])}", f"{v} {N(c[1])} {_on(rng, v)} {N(c[0])}"))
    return (f"take {N(c[1])} and {v} it {_on(rng, v)} {N(c[0])}" + "".join(
        f", then {N(c[i])} on top of that" for i in range(2, L)))


def _excluded_text(vocab: TaskVocabulary, left: Sequence[str], rng: np.random.Generator, count_ok: bool) -> str:
    """An exclusion for the objects ``left`` (not in any goal)."""
    N = lambda o: _np(vocab, o, rng)  # noqa: E731
    generic = ["that's all", "nothing else", "and nothing else", "leave everything else", "leave the rest",
               "leave everything else alone", "don't touch anything else", "nothing more"]
    if not left:
        return _pick(rng, generic)
    names = _join([N(o) for o in left], rng)
    names_or = _join([N(o) for o in left], rng, "or")
    opts = [f"leave {names} alone", f"don't touch {names_or}", f"do not move {names_or}",
            f"{names} {'stays' if len(left) == 1 else 'stay'} where {'it is' if len(left) == 1 else 'they are'}",
            f"keep {names} where {'it is' if len(left) == 1 else 'they are'}", f"ignore {names}",
            _pick(rng, generic)]
    if count_ok:
        n = len(left)
        other = ("the other one" if n == 1 else f"the other {NUM.get(n, str(n))}")
        rem = ("the remaining one" if n == 1 else f"the remaining {NUM.get(n, str(n))}")
        opts += [f"leave {other} alone", f"{rem} {'stays' if n == 1 else 'stay'} where "
                 f"{'it is' if n == 1 else 'they are'}", f"don't touch {other}", "leave the rest",
                 "the remaining ones stay put" if n > 1 else "the other one stays put"]
    return _pick(rng, opts)


def _attach(text: str, excl: str, rng: np.random.Generator) -> str:
    relative = ("other", "remaining", "last one", "rest", "else", "that's", "nothing")
    if rng.random() < 0.2 and not excl.startswith("and ") and not any(w in excl for w in relative):
        return f"{excl}. {text}"
    if excl.startswith("and "):
        return f"{text} {excl}"
    if excl.startswith(("the ", '"')):
        sep = _pick(rng, ("; ", ". ", " ("))
        return text + sep + excl + (")" if sep == " (" else "")
    sep = _pick(rng, ("; ", ", ", ". ", " - ", " (") if " but " in text or excl.startswith(("that", "nothing"))
                else ("; ", ", ", ". ", " - ", " (", ", but "))
    return text + sep + excl + (")" if sep == " (" else "")


def _phrase_towers(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator) -> str:
    chains = _chains(vocab, goals)
    n_obj = len(vocab.objects)
    texts = [_chain_text(vocab, c, rng, n_obj if len(chains) == 1 else -1).rstrip("?") for c in chains]
    out = texts[0]
    for t in texts[1:]:
        out += _pick(rng, ("; and separately, ", ". in another stack, ", ". also, ", "; second tower: "))
        out += t
    used = {o for c in chains for o in c}
    left = [o for o in vocab.objects if o not in used]
    if left and rng.random() < 0.45:
        out = _attach(out, _excluded_text(vocab, left, rng, count_ok=True), rng)
    elif rng.random() < 0.08:
        out = _attach(out, _pick(rng, ("that's all", "nothing else")), rng)
    return out


# ---------------------------------------------------------------------------------------------- containers / pegs
class _Places:
    def __init__(self, vocab: TaskVocabulary, goals: Sequence[str]):
        self.vocab = vocab
        self.objs: list[str] = []
        self.place: dict[str, str | None] = {}
        for g in goals:
            _, args = parse_goal(g)
            self.objs.append(args[0])
            self.place[args[0]] = args[1] if len(args) >= 2 else vocab.own_place.get(args[0])
        self.kind = _kind(vocab)
        self.verbs = _verbs(vocab)
        self.away = _away_verbs(vocab)
        self.pnouns = _place_nouns(vocab)
        self.own = all(self.place[o] is not None and self.place[o] == vocab.own_place.get(o) for o in self.objs)

    # destinations
    def prep(self, rng: np.random.Generator, verb: str | None = None) -> str:
        frames = _ON_FRAMES if self.kind == "on" else _IN_FRAMES
        if verb and verb in frames:
            return _pick(rng, [p for p in frames[verb] if p != "on top of"] or frames[verb])
        return _pick(rng, ("on", "onto") if self.kind == "on" else ("in", "into"))

    def state_prep(self) -> str:
        return "on" if self.kind == "on" else "in"

    def explicit(self, o: str, rng: np.random.Generator) -> str:
        p = self.place[o]
        if p is None:
            return "its place"
        return "the " + _pick(rng, self.vocab.places[p])

    def dest1(self, o: str, rng: np.random.Generator) -> str:
        """Where one object goes: its own place by an implicit reference or by name."""
        if not self.own or rng.random() < 0.35:
            return self.explicit(o, rng)
        pn = _pick(rng, self.pnouns)
        return _pick(rng, (f"its {pn}", f"its {pn}", f"its own {pn}", f"the matching {pn}", f"the right {pn}",
                           f"the correct {pn}", f"the {pn} it belongs in" if self.kind == "in"
                           else f"the {pn} it belongs on"))

    def destn(self, rng: np.random.Generator) -> str:
        """Where several objects go, each to its own place (only when ``own``)."""
        pn = _plural(_pick(rng, self.pnouns))
        return _pick(rng, (f"their {pn}", f"their {pn}", f"their own {pn}", f"the matching {pn}",
                           f"the right {pn}", f"the correct {pn}"))

    def to_dest(self, verb: str, dest: str, rng: np.random.Generator) -> str:
        return f"{self.prep(rng, verb)} {dest}"

    # clauses
    def clause(self, o: str, rng: np.random.Generator, np_: str | None = None, away: bool = True) -> str:
        """An imperative for one object (``away``: may leave the place implicit, "put the milk away")."""
        X = np_ or _np(self.vocab, o, rng)
        if away and self.away and self.own and rng.random() < 0.3:
            return _pick(rng, _AWAY[_pick(rng, self.away)]).replace("X", X)
        v = _pick(rng, self.verbs)
        return f"{v} {X} {self.to_dest(v, self.dest1(o, rng), rng)}"

    def implicit_clause(self, o: str, rng: np.random.Generator) -> str:
        """An imperative sending one object to its own place without naming the place (needs ``own``)."""
        X = _np(self.vocab, o, rng)
        if self.away and rng.random() < 0.4:
            return _pick(rng, _AWAY[_pick(rng, self.away)]).replace("X", X)
        v = _pick(rng, self.verbs)
        pn = _pick(rng, self.pnouns)
        return f"{v} {X} {self.prep(rng, v)} {_pick(rng, (f'its {pn}', f'its own {pn}', f'the matching {pn}'))}"

    def short(self, o: str, rng: np.random.Generator) -> str:
        """A verbless item ("the milk in its bin"), for lists after a first clause."""
        X = _np(self.vocab, o, rng)
        return f"{X} {self.prep(rng)} {self.dest1(o, rng)}"

    def group_clause(self, objs_text: str, rng: np.random.Generator, many: bool = True) -> str:
        """An imperative for a group whose members each go to their own place (``own``)."""
        if self.away and rng.random() < 0.35:
            away = _pick(rng, _AWAY[_pick(rng, self.away)]).replace("X", objs_text)
            return away.replace("where it belongs", "where they belong") if many else away
        v = _pick(rng, self.verbs)
        if not many:
            pn = _pick(rng, self.pnouns)
            return f"{v} {objs_text} {self.prep(rng, v)} {_pick(rng, (f'its {pn}', f'its own {pn}'))}"
        if rng.random() < 0.2:
            pn = _pick(rng, self.pnouns)
            return f"{v} {objs_text} each {self.prep(rng, v)} its own {pn}"
        return f"{v} {objs_text} {self.to_dest(v, self.destn(rng), rng)}"

    def state(self, o: str, rng: np.random.Generator) -> str:
        X = _np(self.vocab, o, rng)
        return f"{X} {self.state_prep()} {self.dest1(o, rng)}"


def _names(vocab: TaskVocabulary, objs: Sequence[str], rng: np.random.Generator) -> str:
    return _join([_np(vocab, o, rng) for o in objs], rng)


def _unordered(vocab: TaskVocabulary, P: _Places, rng: np.random.Generator) -> tuple[str, bool, bool]:
    """(text, question, imperative) with no order stated; mention order is shuffled."""
    objs = [P.objs[i] for i in rng.permutation(len(P.objs))]
    n, k = len(vocab.objects), len(objs)
    left = [o for o in vocab.objects if o not in objs]
    choices = ["items", "end", "question", "pronoun"]
    if P.own:
        choices += ["group", "group", "only"]
        if k == n:
            choices += ["all", "all", "rest"]
        if 0 < len(left) < n and k >= 1 and n >= 2:
            choices += ["except", "except"]
        if n >= 2:
            choices += ["partitive"]
    c = _pick(rng, choices)
    if c == "items":
        if P.own and k > 1 and rng.random() < 0.3:  # "put the milk in its bin, and the bread too"
            return P.implicit_clause(objs[0], rng) + _pick(rng, (", and ", " and ", ", also ", "; same for ")) + \
                _join([_np(vocab, o, rng) for o in objs[1:]], rng) + _pick(rng, (" too", " as well", "")), False, True
        first = P.clause(objs[0], rng, away=False)
        rest = [P.short(o, rng) if rng.random() < 0.5 else P.clause(o, rng) for o in objs[1:]]
        if not rest:
            return first, False, True
        sep = _pick(rng, (", ", "; ", " and ", ", and ", " & ", ", plus "))
        if sep in (", ", "; "):
            return first + sep + sep.join(rest[:-1]) + (sep if len(rest) > 1 else "") + \
                ("and " if rng.random() < 0.5 and sep == ", " else "") + rest[-1], False, True
        return first + "".join(f"{sep}{r}" for r in rest), False, True
    if c == "group":
        return P.group_clause(_names(vocab, objs, rng), rng, k > 1), False, True
    if c == "all":
        g = _group(vocab, k, rng)
        t = _pick(rng, (P.group_clause(g, rng), P.group_clause(g, rng),
                        f"every item goes {P.prep(rng)} its own {_pick(rng, P.pnouns)}",
                        f"each of them {P.state_prep()} its own {_pick(rng, P.pnouns)}, please",
                        f"I want {g} {P.state_prep()} {P.destn(rng)}"))
        return t, False, t.startswith(tuple(P.verbs) + tuple(_AWAY))
    if c == "rest":
        o = objs[0]
        others = [x for x in objs if x != o]
        cnt = len(others)
        if cnt > 1:
            rest_ref = _pick(rng, ("the rest", "the other ones", "the remaining ones", "everything else",
                                   f"the other {NUM.get(cnt, str(cnt))}", f"the remaining {NUM.get(cnt, str(cnt))}"))
        else:
            rest_ref = _pick(rng, ("the other one", "the remaining one", "the last one", "the one that's left"))
        if not others:
            return P.clause(o, rng), False, True
        v = _pick(rng, P.verbs)
        dest = P.destn(rng) if cnt > 1 else P.dest1(others[0], rng)
        return _pick(rng, (f"{P.clause(o, rng)} and {v} {rest_ref} {P.to_dest(v, dest, rng)} too",
                           f"{P.clause(o, rng)}; {rest_ref} {'go' if cnt > 1 else 'goes'} {P.state_prep()} "
                           f"{dest} as well")), False, True
    if c == "except":
        ex = _names(vocab, left, rng)
        ex_or = ex
        g = _pick(rng, ("everything", f"all the {_collective(vocab, rng)}", "all of them", "every item",
                        "everything"))
        word = _pick(rng, ("except", "except for", "but", "apart from", "other than", "besides"))
        opts = [P.group_clause(f"{g} {word} {ex_or}", rng),
                P.group_clause(f"all but {ex}", rng),
                f"{P.group_clause(g, rng)}, except {ex}",
                f"{P.group_clause('everything', rng)} - all but {ex}"]
        return _pick(rng, opts), False, True
    if c == "only":
        many = k > 1
        t = _pick(rng, (f"only {P.group_clause(_names(vocab, objs, rng), rng, many)}",
                        f"just {P.group_clause(_names(vocab, objs, rng), rng, many)}",
                        f"{P.group_clause('only ' + _names(vocab, objs, rng), rng, many)}",
                        f"just {_names(vocab, objs, rng)}, {P.prep(rng)} {P.destn(rng)} - nothing else" if k > 1 else
                        f"just {_np(vocab, objs[0], rng)} {P.prep(rng)} {P.dest1(objs[0], rng)}, nothing else"))
        return t, False, False
    if c == "partitive":
        scope = f"of the {NUM.get(n, str(n)) + ' ' if rng.random() < 0.6 else ''}{_collective(vocab, rng)}"
        parts = [_partitive_np(vocab, o, rng) for o in objs]
        if k == n and k >= 2 and rng.random() < 0.5:
            head = parts[:-1]
            v = _pick(rng, P.verbs)
            dest = P.destn(rng) if len(head) > 1 else P.dest1(objs[0], rng)
            other = _pick(rng, ("the other one", "the remaining one", "the last one"))
            return (f"{scope}, {v} {_join(head, rng)} {P.to_dest(v, dest, rng)}, and {other} too"), False, False
        return f"{scope}, {P.group_clause(_join(parts, rng), rng) if k > 1 else P.clause(objs[0], rng, parts[0])}", \
            False, False
    if c == "end":
        items = [P.state(o, rng) for o in objs]
        body = _join(items, rng)
        sp = P.state_prep()
        opts = [f"I want {body}", f"the goal is {body}", f"the goal: {body}", f"end state: {body}",
                f"make it so that {_join([f'{_np(vocab, o, rng)} is {sp} {P.dest1(o, rng)}' for o in objs], rng)}",
                f"when you're done, {_join([f'{_np(vocab, o, rng)} should be {sp} {P.dest1(o, rng)}' for o in objs], rng)}",
                f"I'd like {_np(vocab, objs[0], rng)} to end up {sp} {P.dest1(objs[0], rng)}" + "".join(
                    f" and {P.state(o, rng)}" for o in objs[1:])]
        if P.own and k > 1:
            opts.append(f"{_names(vocab, objs, rng)} should all end up {sp} {P.destn(rng)}" if k > 2 else
                        f"{_names(vocab, objs, rng)} should both be {sp} {P.destn(rng)}")
        return _pick(rng, opts), False, False
    if c == "question":
        q = _pick(rng, ("can you ", "could you ", "would you ", "can you please ", "could you please "))
        if P.own and k > 1 and rng.random() < 0.5:
            return q + P.group_clause(_names(vocab, objs, rng), rng) + "?", True, False
        return q + P.clause(objs[0], rng, away=k == 1) + "".join(f" and {P.short(o, rng)}" for o in objs[1:]) + \
            "?", True, False
    # pronoun
    pick = _pick(rng, ("take", "grab", "pick up"))
    if k == 1:
        v = _pick(rng, P.verbs)
        o = objs[0]
        return _pick(rng, (f"{pick} {_np(vocab, o, rng)} and {v} it {P.to_dest(v, P.dest1(o, rng), rng)}",
                           f"{_np(vocab, o, rng)}: {v} it {P.to_dest(v, P.dest1(o, rng), rng)}",
                           f"see {_np(vocab, o, rng)}? {v} that one {P.to_dest(v, P.dest1(o, rng), rng)}")), \
            False, True
    if P.own:
        v = _pick(rng, P.verbs)
        them = _pick(rng, ("them", "them all", "each of them", "all of them", "them both" if k == 2 else "them"))
        return _pick(rng, (f"{pick} {_names(vocab, objs, rng)} and {v} {them} {P.to_dest(v, P.destn(rng), rng)}",
                           f"{_names(vocab, objs, rng)}: {v} {them} {P.to_dest(v, P.destn(rng), rng)}")), False, True
    return P.clause(objs[0], rng) + "".join(f" and {P.clause(o, rng)}" for o in objs[1:]), False, True


def _ordered(vocab: TaskVocabulary, P: _Places, rng: np.random.Generator) -> tuple[str, bool, bool]:
    """(text, question, imperative) stating exactly the order of ``P.objs`` (k >= 2)."""
    objs = P.objs
    k, n = len(objs), len(vocab.objects)
    N = lambda o: _np(vocab, o, rng)  # noqa: E731
    choices = ["then", "ordinals", "numbered", "butfirst", "before", "once", "first", "endstate"]
    if P.own:
        choices += ["inorder", "inorder", "starting", "xfirst"]
        if k == n or k == 2:
            choices += ["partitive"]
    c = _pick(rng, choices)
    item = lambda o: P.clause(o, rng) if rng.random() < 0.55 else P.short(o, rng)  # noqa: E731
    if c == "then":
        if P.own and rng.random() < 0.35:  # "put the milk in its bin, then the cereal, then the soda"
            out = P.implicit_clause(objs[0], rng)
            for o in objs[1:]:
                out += _then(rng) + N(o)
            return out, False, True
        out = P.clause(objs[0], rng)
        for o in objs[1:]:
            out += _then(rng) + item(o)
        return out, False, True
    if c == "ordinals":
        parts = []
        for i, o in enumerate(objs):
            lead = ("lastly" if rng.random() < 0.5 else "finally") if i == k - 1 and k > 2 else ORD[i + 1]
            parts.append(f"{lead}, {item(o)}" if rng.random() < 0.5 else f"{lead} {item(o)}")
        return _pick(rng, ("; ", ", ", ". ")).join(parts), False, False
    if c == "numbered":
        steps = [item(o) for o in objs]
        fmt = int(rng.integers(6))
        if fmt == 0:
            return " ".join(f"{i + 1}) {s}" for i, s in enumerate(steps)), False, False
        if fmt == 1:
            return " ".join(f"{i + 1}. {s}." for i, s in enumerate(steps)), False, False
        if fmt == 2:
            return "; ".join(f"step {NUM[i + 1]}: {s}" for i, s in enumerate(steps)), False, False
        if fmt == 3:
            return "in this order:\n" + "\n".join(f"- {s}" for s in steps), False, False
        if fmt == 4:
            return "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps)), False, False
        return " ".join(f"({i + 1}) {s}" for i, s in enumerate(steps)), False, False
    if c == "butfirst":
        last = P.clause(objs[-1], rng)
        pre = objs[:-1]
        chain = P.clause(pre[0], rng) + "".join(f", then {item(o)}" for o in pre[1:])
        if k == 2 and P.own and rng.random() < 0.5:
            return _pick(rng, (f"{last}, but do {N(pre[0])} first", f"{last}, but first {N(pre[0])}",
                               f"{last} - but {N(pre[0])} goes first")), False, True
        return _pick(rng, (f"{last}, but first {chain}", f"{last}; before that, {chain}",
                           f"{last}. but before you do that, {chain}")), False, True
    if c == "before":
        if k == 2:
            a, b = objs
            return _pick(rng, (f"before you {P.clause(b, rng)}, {P.clause(a, rng)}",
                               f"{P.clause(a, rng)} before {N(b)}" if P.own else
                               f"{P.clause(a, rng)} before you {P.clause(b, rng)}",
                               f"{P.clause(b, rng)} after {N(a)}" if P.own else
                               f"{P.clause(b, rng)} after you {P.clause(a, rng)}",
                               f"do {N(b)} after {N(a)}" if P.own else f"{P.clause(a, rng)}, then {P.clause(b, rng)}",
                               f"{P.clause(a, rng)}, and only once it's {P.state_prep()} there, {P.clause(b, rng)}",
                               f"{N(a)} before {N(b)}, each {P.prep(rng)} its own {_pick(rng, P.pnouns)}"
                               if P.own else f"{P.clause(a, rng)} first and {P.clause(b, rng)} second")), False, True
        out = P.clause(objs[0], rng)
        for i in range(1, k):
            out += f", {P.clause(objs[i], rng)} after that" if rng.random() < 0.5 else \
                f"; {N(objs[i])} comes after {N(objs[i - 1])}" if P.own else _then(rng) + P.clause(objs[i], rng)
        return out, False, True
    if c == "once":
        out = P.clause(objs[0], rng)
        for i in range(1, k):
            prev = objs[i - 1]
            out += _pick(rng, (f", and only once {N(prev)} is {P.state_prep()} {P.dest1(prev, rng)}, "
                               f"{P.clause(objs[i], rng)}",
                               f". once that's done, {P.clause(objs[i], rng)}",
                               f". when {N(prev)} is {P.state_prep()} {P.dest1(prev, rng)}, {P.clause(objs[i], rng)}"))
        return out, False, True
    if c == "first":
        body = ", then ".join(item(o) for o in objs[1:-1])
        mid = f", then {body}" if body else ""
        fin = _pick(rng, ("finally", "lastly", "and finally", "last of all", "and last"))
        if k == 2:
            return _pick(rng, (f"first {item(objs[0])}, {fin} {item(objs[1])}",
                               f"first {item(objs[0])}, then {item(objs[1])}")), False, False
        return f"first {item(objs[0])}{mid}, {fin} {item(objs[-1])}", False, False
    if c == "inorder":
        lst = ", ".join(N(o) for o in objs) if rng.random() < 0.6 else ", then ".join(N(o) for o in objs)
        g = "them" if k < n else _group(vocab, k, rng)
        opts = [f"{P.group_clause(g, rng)} in this order: {lst}",
                f"in this order: {lst}. all {P.prep(rng)} {P.destn(rng)}",
                f"{P.group_clause(g, rng)}, one at a time: {lst}",
                f"order: {lst} - each {P.prep(rng)} its own {_pick(rng, P.pnouns)}",
                f"{P.group_clause(_names(vocab, objs, rng), rng)}, in that order",
                f"{P.group_clause(_names(vocab, objs, rng), rng)} - in exactly that order"]
        return _pick(rng, opts), False, False
    if c == "starting":
        if k == 2:
            a, b = objs
            shuffled = [a, b] if rng.random() < 0.5 else [b, a]
            return _pick(rng, (f"{P.group_clause(_names(vocab, shuffled, rng), rng)}, starting with {N(a)}",
                               f"{P.group_clause(_names(vocab, shuffled, rng), rng)}, finishing with {N(b)}",
                               f"starting with {N(a)}, {P.group_clause(_names(vocab, shuffled, rng), rng)}")), \
                False, False
        mids = ", then ".join(N(o) for o in objs[1:-1])
        return (f"{P.group_clause('them' if k < n else _group(vocab, k, rng), rng)}, starting with {N(objs[0])}, "
                f"then {mids}, and finishing with {N(objs[-1])}"), False, False
    if c == "xfirst":
        if k == 2:
            a, b = objs
            g = _group(vocab, k, rng) if k == n else _names(vocab, [b, a] if rng.random() < 0.5 else [a, b], rng)
            return _pick(rng, (f"{P.group_clause(g, rng)}, {N(a)} first", f"{N(a)} first, then {N(b)}, "
                               f"{P.prep(rng)} {P.destn(rng)}", f"{P.clause(a, rng)} first, {N(b)} second")), \
                False, False
        return f"{N(objs[0])} first, " + ", ".join(f"then {N(o)}" for o in objs[1:]) + \
            f" - {P.prep(rng)} {P.destn(rng)}", False, False
    if c == "partitive":
        noun = _collective(vocab, rng)
        P_ = lambda o: _partitive_np(vocab, o, rng)  # noqa: E731
        if k == 2:
            a, b = objs
            scope = (f"of the {NUM.get(n, str(n))} {noun}" if k == n else
                     f"of {_names(vocab, [b, a] if rng.random() < 0.5 else [a, b], rng)}")
            other = _pick(rng, ("the other one", "the other", "the remaining one"))
            return f"{scope}, {P.clause(a, rng, P_(a))} first, then {other}", False, False
        other = _pick(rng, ("the last one", "the remaining one", "the one that's left"))
        mids = "".join(f", then {P_(o)}" for o in objs[1:-1])
        return (f"of the {NUM.get(n, str(n))} {noun}, {P.clause(objs[0], rng, P_(objs[0]))} first{mids}, "
                f"and {other} last"), False, False
    # endstate with order
    sp = P.state_prep()
    return (f"I want {N(objs[0])} to end up {sp} {P.dest1(objs[0], rng)} first" +
            "".join(f", then {P.state(o, rng)}" for o in objs[1:])), False, False


def _phrase_places(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator) -> tuple[str, bool]:
    P = _Places(vocab, goals)
    k = len(P.objs)
    ordered = k >= 2 and rng.random() < 0.45
    if ordered:
        text, question, imp = _ordered(vocab, P, rng)
    else:
        text, question, imp = _unordered(vocab, P, rng)
    left = [o for o in vocab.objects if o not in P.objs]
    if not question and "nothing else" not in text:
        r = rng.random()
        if left and r < 0.3:
            text = _attach(text, _excluded_text(vocab, left, rng, count_ok=True), rng)
        elif r < 0.38:
            text = _attach(text, _pick(rng, ("that's all", "nothing else", "and nothing else")), rng)
        elif r < 0.48 and imp and rng.random() < 0.5:
            text = _pick(rng, _POLITE_PRE) + text
    return _style(text, rng, question=question, imperative=imp), ordered


def phrase(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator, split: str) -> tuple[str, bool]:
    """An instruction asking for exactly ``goals``, and whether its words state their order (always for towers)."""
    del split
    goals = tuple(goals)
    if _object_support(vocab):
        text = _phrase_towers(vocab, goals, rng)
        r = rng.random()
        if r < 0.1 and not text.lower().startswith(("can ", "could ", "would ", "will ")):
            text = _pick(rng, ("please ", "I'd like you to ", "could you ")) + text if text.split(" ", 1)[0] in \
                _verbs(vocab) else text
        q = text.endswith("?") or text.startswith(("could you ", "can you ", "would you ", "will you "))
        return _style(text.rstrip("?"), rng, question=q), vocab.ordered_by_support
    text, ordered = _phrase_places(vocab, goals, rng)
    return text, ordered if not vocab.ordered_by_support else True


# ---------------------------------------------------------------------------------------------- negatives
def _free(vocab: TaskVocabulary, words: Sequence[str]) -> list[str]:
    known = _all_words(vocab)
    return [w for w in words if not (set(w.split()) & known)]


def _real_clause(vocab: TaskVocabulary, rng: np.random.Generator) -> str:
    goals = sample_goals(vocab, rng)
    if _object_support(vocab):
        c = _chains(vocab, goals)[0]
        v = _pick(rng, _verbs(vocab))
        return f"{v} {_np(vocab, c[1], rng)} {_on(rng, v)} {_np(vocab, c[0], rng)}"
    P = _Places(vocab, goals[:1])
    return P.clause(P.objs[0], rng)


def _oov(vocab: TaskVocabulary, rng: np.random.Generator) -> str:
    objs = list(vocab.objects)
    X = lambda: _np(vocab, _pick(rng, objs), rng)  # noqa: E731
    colour = _pick(rng, _free(vocab, _COLOURS))
    thing = "the " + _pick(rng, _free(vocab, _THINGS))
    place = "the " + _pick(rng, _free(vocab, _OOV_PLACES))
    shape = _pick(rng, _free(vocab, _SHAPES))
    onouns = _obj_nouns(vocab)
    fake_obj = (f"the {_pick(rng, (colour, shape))} {_pick(rng, onouns)}" if onouns and rng.random() < 0.6 else thing)
    if _object_support(vocab):
        v = _pick(rng, _verbs(vocab))
        fake_obj = f"the {colour} {_pick(rng, onouns)}" if onouns and rng.random() < 0.7 else thing
        opts = [f"{v} {fake_obj} on {X()}", f"{v} {X()} {_on(rng, v)} {fake_obj}", f"{v} {X()} on {place}",
                f"{_real_clause(vocab, rng)}, then {v} {fake_obj} on top",
                f"bottom: {X()}. top: {fake_obj}", f"build a tower: {fake_obj} at the bottom, {X()} on top",
                f"{v} {thing} on {X()}", f"{fake_obj} on " + " on ".join(
                    _np(vocab, objs[i], rng) for i in rng.permutation(len(objs))[:2]), f"can you {v} {X()} into {place}?",
                f"put {X()} next to {fake_obj}"]
        return _pick(rng, opts)
    P = _Places(vocab, sample_goals(vocab, rng)[:1])
    v = _pick(rng, P.verbs)
    pn = _pick(rng, P.pnouns)
    fake_place = _pick(rng, (f"the {colour} {pn}", f"the {shape} {pn}", place, f"the {_pick(rng, _free(vocab, _THINGS))} {pn}"))
    opts = [f"{v} {fake_obj} {P.prep(rng, v)} its {pn}", f"{v} {X()} {P.prep(rng, v)} {fake_place}",
            f"{P.clause(P.objs[0], rng)} and {v} {fake_obj} {P.prep(rng, v)} {fake_place}",
            f"{v} {thing} {P.prep(rng, v)} {fake_place}", f"{P.clause(P.objs[0], rng)}, then {fake_obj} too",
            f"first {P.clause(P.objs[0], rng)}, then {v} {X()} {P.prep(rng, v)} {fake_place}",
            f"can you {v} {fake_obj} {P.prep(rng, v)} {P.explicit(P.objs[0], rng)}?",
            f"{v} {X()} and {fake_obj} {P.prep(rng, v)} {'their' if P.own else 'the'} {_plural(pn)}",
            f"I want {fake_obj} {P.state_prep()} {P.explicit(P.objs[0], rng)}"]
    return _pick(rng, opts)


def _missing(vocab: TaskVocabulary, rng: np.random.Generator) -> str:
    known = _all_words(vocab)
    verbs = [v for v in MISSING_VERBS if not (set(v.split()) & known)]
    v = _pick(rng, verbs)
    names = list(vocab.objects) + list(vocab.places)
    a = _pick(rng, names)

    def N(name: str) -> str:
        return _np(vocab, name, rng) if name in vocab.objects else "the " + _pick(rng, vocab.places[name])

    b = _pick(rng, [x for x in vocab.objects if x != a] or list(vocab.objects))
    opts = [f"{v} {N(a)}", f"please {v} {N(a)}", f"can you {v} {N(a)}?", f"{v} {N(a)} and {N(b)}",
            f"I'd like you to {v} {N(a)}", f"{_real_clause(vocab, rng)}, then {v} {N(b)}",
            f"first {v} {N(a)}, then {_real_clause(vocab, rng)}", f"{v} {N(a)} {_pick(rng, ('gently', 'carefully', 'twice', 'now'))}",
            f"could you {v} {N(b)} for me", f"1) {v} {N(a)} 2) {v} {N(b)}", f"{v} all the {_collective(vocab, rng)}",
            f"{v} everything", f"just {v} {N(b)}, nothing else"]
    return _pick(rng, opts)


def _impossible(vocab: TaskVocabulary, rng: np.random.Generator) -> tuple[str, tuple[str, ...]]:
    skill = _skill(vocab)
    objs = list(vocab.objects)
    rules = set(vocab.rules)
    N = lambda o: _np(vocab, o, rng)  # noqa: E731
    cands: list[Callable[[], tuple[str, tuple[str, ...]]]] = []
    if _object_support(vocab):
        V = lambda: _pick(rng, _verbs(vocab))  # noqa: E731
        if "distinct_args" in rules:
            def self_on() -> tuple[str, tuple[str, ...]]:
                a = _pick(rng, objs)
                v = V()
                return _pick(rng, (f"{v} {N(a)} on {N(a)}", f"{v} {N(a)} on itself", f"{N(a)} on top of itself",
                                   f"stack {N(a)} onto {N(a)}")), (vocab.goal(skill, (a, a)),)
            cands.append(self_on)
        if "no_cycle" in rules and len(objs) >= 2:
            def cycle() -> tuple[str, tuple[str, ...]]:
                m = int(rng.integers(2, min(3, len(objs)) + 1))
                cyc = [objs[i] for i in rng.permutation(len(objs))[:m]]
                pairs = [(cyc[i], cyc[(i + 1) % m]) for i in range(m)]
                v = V()
                text = f"{v} " + _join([f"{N(a)} on {N(b)}" for a, b in pairs], rng)
                return text, tuple(vocab.goal(skill, p) for p in pairs)
            cands.append(cycle)
        if "one_per_support" in rules and len(objs) >= 3:
            def two_on_one() -> tuple[str, tuple[str, ...]]:
                a, b, s = (objs[i] for i in rng.permutation(len(objs))[:3])
                v = V()
                return _pick(rng, (f"{v} {N(a)} and {N(b)} both on {N(s)}", f"{v} {N(a)} on {N(s)} and {N(b)} on "
                                   f"{N(s)} too", f"{N(a)} and {N(b)} side by side on top of {N(s)}")), \
                    (vocab.goal(skill, (a, s)), vocab.goal(skill, (b, s)))
            cands.append(two_on_one)
        if "one_goal_per_object" in rules and len(objs) >= 3:
            def one_on_two() -> tuple[str, tuple[str, ...]]:
                a, b, s = (objs[i] for i in rng.permutation(len(objs))[:3])
                v = V()
                return _pick(rng, (f"{v} {N(a)} on both {N(b)} and {N(s)}", f"{v} {N(a)} on {N(b)} and also on "
                                   f"{N(s)}")), (vocab.goal(skill, (a, b)), vocab.goal(skill, (a, s)))
            cands.append(one_on_two)
    else:
        P = _Places(vocab, sample_goals(vocab, rng)[:1])
        name = vocab.skills[skill].split("(", 1)[0]
        owned = [o for o in objs if o in vocab.own_place]
        if "own_place" in rules and owned and len(vocab.places) >= 2:
            def wrong_place() -> tuple[str, tuple[str, ...]]:
                o = _pick(rng, owned)
                wp = _pick(rng, [p for p in vocab.places if p != vocab.own_place[o]])
                v = _pick(rng, P.verbs)
                text = f"{v} {N(o)} {P.prep(rng, v)} the {_pick(rng, vocab.places[wp])}"
                return text, (f"{name}({o},{wp})",)
            cands.append(wrong_place)

            def two_places() -> tuple[str, tuple[str, ...]]:
                o = _pick(rng, owned)
                wp = _pick(rng, [p for p in vocab.places if p != vocab.own_place[o]])
                v = _pick(rng, P.verbs)
                own = f"the {_pick(rng, vocab.places[vocab.own_place[o]])}"
                other = f"the {_pick(rng, vocab.places[wp])}"
                text = _pick(rng, (f"{v} {N(o)} {P.prep(rng, v)} both {own} and {other}",
                                   f"{v} {N(o)} {P.prep(rng, v)} {own} and also {P.prep(rng, v)} {other}"))
                first = vocab.goal(skill, (o, vocab.own_place[o]))
                return text, (first, f"{name}({o},{wp})")
            cands.append(two_places)
        if len(owned) >= 2 and _arity(vocab) >= 2 and "own_place" in rules:
            def two_on_one_place() -> tuple[str, tuple[str, ...]]:
                a, b = (owned[i] for i in rng.permutation(len(owned))[:2])
                p = vocab.own_place[a]
                v = _pick(rng, P.verbs)
                text = f"{v} {N(a)} and {N(b)} {P.prep(rng, v)} the {_pick(rng, vocab.places[p])}"
                return text, (vocab.goal(skill, (a, p)), vocab.goal(skill, (b, p)))
            cands.append(two_on_one_place)
        if len(objs) >= 2:
            def into_object() -> tuple[str, tuple[str, ...]]:
                a, b = (objs[i] for i in rng.permutation(len(objs))[:2])
                v = _pick(rng, P.verbs)
                return f"{v} {N(a)} {P.prep(rng, v)} {N(b)}", (f"{name}({a},{b})",)
            cands.append(into_object)
    fn = _pick(rng, cands)
    text, goals = fn()
    assert vocab.impossibility(goals) is not None, (text, goals)
    return text, goals


def negatives(vocab: TaskVocabulary, rng: np.random.Generator, split: str) -> tuple[str, str]:
    """(text, kind): an instruction the grounder must refuse."""
    del split
    kind = _pick(rng, ("out_of_vocabulary", "missing_skill", "impossible", "empty"))
    if kind == "out_of_vocabulary":
        return _style(_oov(vocab, rng), rng), kind
    if kind == "missing_skill":
        return _style(_missing(vocab, rng), rng), kind
    if kind == "impossible":
        text, _ = _impossible(vocab, rng)
        return _style(text, rng), kind
    if rng.random() < 0.75:
        text = _pick(rng, _EMPTY)
    else:
        objs = list(vocab.objects)
        left = [objs[i] for i in rng.permutation(len(objs))[:int(rng.integers(1, len(objs) + 1))]]
        names = _join([_np(vocab, o, rng) for o in left], rng)
        names_or = _join([_np(vocab, o, rng) for o in left], rng, "or")
        one = len(left) == 1
        text = _pick(rng, (f"leave {names} alone", f"don't touch {names_or}", f"do not move {names_or}",
                           f"{names} {'stays' if one else 'stay'} where {'it is' if one else 'they are'}",
                           f"keep {names} where {'it is' if one else 'they are'}", f"ignore {names}",
                           f"leave {names} where {'it is' if one else 'they are'}, that's all"))
    if text == "" or rng.random() < 0.5:
        return text, kind
    return _style(text, rng, imperative=False), kind


__all__ = ["MISSING_VERBS", "negatives", "phrase", "sample_goals"]
