"""The FINAL held-out evaluation set of natural-language instructions for the learned instruction grounder.

What it is: a small, seeded generator of instructions for the three simulated tasks (``stack_three``,
``pick_place_bins``, ``nut_assembly``), each with the goals a careful reader would take from it, plus lines the
grounder must refuse. It is the last, untouched test of the grounder: nothing here should ever be trained or tuned on.

Independence: these phrasings were written by a different hand, independently of the training grammar, of the
reference reading and of the earlier held-out paraphrase sets; none of those was read while writing this file. It
uses only each task's declared vocabulary (``sim/tasks/<task>/vocabulary.yaml``) for objects, places and skill
verbs, and ordinary English for everything else.

Format: ``benchmarks/data/grounding_final/<task>.jsonl``, one JSON object per line:

* positives: ``{"task", "instruction", "goals": [...], "ordered": bool, "kind": "paraphrase",
  "source": "final_v1"}``; goals are predicate strings (``on(red,blue)``, ``in_bin(milk)``,
  ``on_peg(square_nut,square_peg)``); stack_three goals are in canonical (bottom-first) order and always
  ordered; for the other tasks ``ordered`` is true only where the words impose an order, and the goals are then
  listed in that order;
* negatives: ``{"task", "instruction", "expect": "refuse", "kind": k, "source": "final_v1"}`` with ``k`` one of
  ``out_of_vocabulary`` (an object, colour or place the task lacks), ``missing_skill`` (a verb for a skill the task
  lacks), ``impossible`` (goals the task's rules forbid) or ``empty`` (nothing to do).

Every positive's goals pass ``TaskVocabulary.impossibility`` (None), every impossible line's intended goals fail
it, and lines are deduplicated case- and punctuation-insensitively. The output is deterministic (seed 20261206).

Run::

    .venv/bin/python benchmarks/make_final_paraphrases.py
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tandem.core.vocabulary import TaskVocabulary  # noqa: E402

SEED = 20261206
SOURCE = "final_v1"
OUT_DIR = ROOT / "benchmarks" / "data" / "grounding_final"
N_POSITIVE = 360  # per task (at least 330 asked)
POOL_ROUNDS = 10


class Pick:
    """Seeded choices."""

    def __init__(self, seed: int) -> None:
        self.g = np.random.default_rng(seed)

    def c(self, seq):
        return seq[int(self.g.integers(len(seq)))]

    def p(self, prob: float) -> bool:
        return bool(self.g.random() < prob)

    def shuffle(self, seq: list) -> list:
        idx = self.g.permutation(len(seq))
        return [seq[int(i)] for i in idx]


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def norm(s: str) -> str:
    """Case- and punctuation-insensitive key for deduplication."""
    s = re.sub(r"[^a-z0-9' ]+", " ", s.lower()).replace("'", "")
    return " ".join(s.split())


def styled(r: Pick, s: str) -> str:
    """Typing variation: mostly as written; sometimes all lower case, no final full stop, or (rarely) shouting."""
    u = r.g.random()
    if u < 0.55:
        return s
    if u < 0.72:
        return s.lower().rstrip(".")
    if u < 0.82:
        return s.lower()
    if u < 0.95:
        return s.rstrip(".")
    if u < 0.98:
        return s[:-1] + "!" if s.endswith(".") else s
    return s.upper()


def join_list(r: Pick, items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    comma = "," if r.p(0.4) else ""
    return ", ".join(items[:-1]) + f"{comma} and {items[-1]}"


# ====================================================================================================== stack_three
COLOURS = ("red", "green", "blue")
# (verb, gerund): skill words for stacking
ST_VERBS = [("stack", "stacking"), ("put", "putting"), ("place", "placing"), ("set", "setting"),
            ("move", "moving"), ("pile", "piling"), ("stand", "standing")]
ST_PICK = ["pick up", "grab", "take", "lift"]


def cube(r: Pick, c: str, bare: bool = False) -> str:
    forms = [f"the {c} cube"] * 4 + [f"the {c} block"] * 3 + [f"the {c} one", f"the {c} box"]
    if bare:
        forms += [c] * 3
    return r.c(forms)


def st_rel(r: Pick, verb: str) -> str:
    if verb == "move":
        return r.c(["onto", "on top of"])
    if verb in ("put", "place", "set"):
        return r.c(["on", "onto", "on top of", "on top of", "above"])
    if verb == "stand":
        return r.c(["on", "on top of"])
    return r.c(["on", "onto", "on top of"])


def st_vp(r: Pick, x: str, y: str, bare: bool = False) -> tuple[str, str]:
    """('stack the red cube on the blue block', gerund form)."""
    v, ger = r.c(ST_VERBS)
    rel = st_rel(r, v)
    X, Y = cube(r, x, bare), cube(r, y, bare)
    return f"{v} {X} {rel} {Y}", f"{ger} {X} {rel} {Y}"


def st_single(r: Pick, x: str, y: str) -> list[str]:
    """Instructions meaning on(x, y) only."""
    z = next(c for c in COLOURS if c not in (x, y))
    vp, ger = st_vp(r, x, y)
    vp2, _ = st_vp(r, x, y, bare=True)
    X, Y, Z = cube(r, x), cube(r, y), cube(r, z)
    under_v = r.c(["put", "place", "set", "move"])
    under = r.c(["under", "underneath", "below", "beneath"])
    return [
        cap(vp) + ".",
        cap(vp2) + ".",
        f"Please {vp}.",
        cap(vp) + ", please.",
        f"{r.c(['Could', 'Can', 'Would'])} you {vp}?",
        f"Would you mind {ger}?",
        f"I want {X} {r.c(['on top of', 'sitting on', 'resting on', 'on'])} {Y}.",
        f"I'd like {X} stacked on {Y}.",
        f"{cap(X)} should end up {r.c(['on', 'on top of'])} {Y}.",
        f"When you're done, {X} should be sitting on {Y}.",
        f"{cap(X)} goes on top of {Y}.",
        f"{cap(r.c(ST_PICK))} {X} and {r.c(['put', 'set', 'place', 'stack'])} it on {r.c(['', 'top of '])}{Y}.",
        f"{cap(r.c(ST_PICK))} {X}. {cap(r.c(['put', 'set', 'place', 'stack']))} it on {Y}.",
        f"{cap(under_v)} {Y} {under} {X}.",
        f"Could you {under_v} {Y} {under} {X}?",
        f"I want {Y} {r.c(['under', 'underneath', 'below'])} {X}, with {X} resting on it.",
        f"{cap(vp)} and leave {Z} {r.c(['alone', 'where it is', 'out of it'])}.",
        f"{cap(vp)}; don't touch {Z}.",
        f"Leave {Z} alone and {vp}.",
        f"{cap(Z)} stays where it is. Just {vp}.",
        f"{x} on {y}",
        f"{x} onto {y}, please",
        f"{cap(x)} on top of {y}.",
        f"{cap(X)} should be stacked on {Y}.",
        f"{cap(r.c(['stack', 'pile']))} the {x} and {y} cubes with {x} on top.",
        f"Build a two-block tower with {Y} at the bottom and {X} on top.",
        f"{cap(Y)} is the base; {r.c(['put', 'stack', 'set', 'place'])} {X} on it.",
        f"I need {X} stacked on top of {Y}.",
        f"Only one move: {vp}.",
        f"Just {vp}, nothing else.",
    ]


def st_tower(r: Pick, b: str, m: str, t: str) -> list[str]:
    """Instructions meaning a tower b (bottom), m, t (top): on(m,b), on(t,m)."""
    B, M, T = cube(r, b), cube(r, m), cube(r, t)
    vp1, ger1 = st_vp(r, m, b)
    vp2, _ = st_vp(r, t, m)
    vp2b, ger2 = st_vp(r, t, m)
    tower = r.c(["tower", "stack", "pile"])
    build = r.c(["Build", "Stack", "Build", "Pile up"]) if tower == "tower" else r.c(["Build", "Make"])
    top_words = r.c(["on top", "at the top"])
    bot_words = r.c(["at the bottom", "on the bottom", "at the base"])
    upv = r.c(["put", "stack", "set", "place"])
    return [
        f"{build} a {tower} with {b} {bot_words}, {m} in the middle and {t} {top_words}.",
        f"Build a tower with {B} {bot_words}, {M} in the middle, and {T} {top_words}.",
        f"Stack the three cubes from the bottom up: {b}, {m}, {t}.",
        f"Stack the cubes bottom to top: {b}, {m}, {t}.",
        f"Build a tower that reads {t}, {m}, {b} from top to bottom.",
        f"Top to bottom, the tower should go {t}, {m}, {b}.",
        f"From bottom to top I want {b}, {m} and {t}.",
        f"{cap(vp1)}, then {vp2}.",
        f"First {vp1}, then {vp2}.",
        f"{cap(vp1)}. Then {vp2}.",
        f"{cap(vp1)}. Once that's done, {vp2b}.",
        f"{cap(vp1)}. After that, {r.c(['put', 'stack', 'set'])} {T} on top.",
        f"{cap(vp2)} after {ger1}.",
        f"Before {ger2}, {vp1}.",
        f"{cap(vp2)}, but first {vp1}.",
        f"Start by {ger1}, and finish by {ger2}.",
        f"{cap(r.c(['stack', 'put', 'place']))} {T} on {M} and {M} on {B}.",
        f"{cap(r.c(['stack', 'put']))} {t} on {m} and {m} on {b}.",
        f"I want {T} on top, {M} in the middle and {B} at the bottom.",
        f"I'd like {B} at the bottom, {M} on it, and {T} on top.",
        f"{cap(B)} goes at the bottom, {M} goes on it, and {T} goes on top.",
        f"{t} on {m} on {b}",
        f"{cap(t)} on {m}, {m} on {b}.",
        f"Could you build a tower of all three cubes with {B} at the base and {T} at the top?",
        f"Can you {upv} {M} on {B} and then {T} on {M}?",
        f"Pile all three cubes up with {b} at the base, {t} at the top and {m} between them.",
        f"{cap(M)} goes between {B} and {T}, with {B} at the bottom.",
        f"{cap(r.c(['put', 'place', 'set']))} {M} under {T} and on top of {B}.",
        f"{cap(r.c(['put', 'place', 'set']))} {B} under {M}, then {r.c(['put', 'stack', 'set'])} {T} on top.",
        f"{cap(vp1)}. Finally, {r.c(['put', 'stack', 'place'])} {T} on top of the stack.",
        f"The finished tower should have {T} on top and {B} at the bottom, with {M} in between.",
        f"Bottom: {b}. Middle: {m}. Top: {t}.",
        f"{cap(r.c(['stack', 'put', 'place']))} {T} onto {M} once {M} is sitting on {B}.",
        f"Stack all three, starting with {b} at the bottom, then {m}, then {t}.",
        f"Make a stack of the three cubes: {t} on top, then {m}, then {b} at the bottom.",
        f"When you're finished, {T} should be on {M} and {M} should be on {B}.",
        f"{cap(r.c(ST_PICK))} {M} and {r.c(['put', 'stack', 'set'])} it on {B}. Then {vp2b}.",
        f"I need a tower: {b} first at the bottom, {m} next, {t} last on top.",
    ]


def gen_stack_three(r: Pick) -> list[tuple[str, list[str], bool]]:
    pool = []
    for _ in range(POOL_ROUNDS):
        for x, y in itertools.permutations(COLOURS, 2):
            for s in st_single(r, x, y):
                pool.append((s, [f"on({x},{y})"], True))
        for b, m, t in itertools.permutations(COLOURS, 3):
            for s in st_tower(r, b, m, t):
                pool.append((s, [f"on({m},{b})", f"on({t},{m})"], True))
    return pool


def st_negatives(r: Pick) -> list[tuple[str, str, list[str] | None]]:
    out: list[tuple[str, str, list[str] | None]] = []
    oov = [
        "Put the yellow cube on the red cube.", "Stack the blue block on the purple block.",
        "Place the orange cube on top of the green one.", "Put the red cube on the table.",
        "Set the green block on the shelf.", "Move the blue cube into the tray.",
        "Put the red ball on the blue cube.", "Stack the pyramid on the green block.",
        "Build a tower with the black cube at the bottom.", "Put the white block on the red block.",
        "Could you place the pink cube on the blue cube?", "Put the green cube in the bowl.",
        "Stack the red cube on the cylinder.", "Put the blue cube on the plate.",
        "I want the yellow block on top of the green block.",
        "Stack the red cube, the blue cube and the orange cube into a tower.",
        "Put the sphere on top of the red block.", "Put the green cube on the floor.",
        "Move the red block to the corner.", "Place the blue cube in the drawer.",
        "Build a tower from four cubes: red, green, blue and yellow.", "Put the gold cube on the blue cube.",
        "Stack the silver block on the red block.", "Put the red cube on the book.",
        "Set the blue block on the laptop.", "Put the green cube into the cup.",
        "Put the red cube on the brown cube.", "Stack the purple one on the yellow one.",
        "Put the triangle on the green cube.", "Place the red cube in the basket.",
        "Put the teal block on the blue block.", "Stack the green cube on the grey cube.",
        "Put the blue cube on the windowsill.", "Put the red cube on the cardboard tube.",
        "Please put the maroon block on top of the red block.", "Put the cone on the blue cube.",
        "Stack the green block on the magenta block, please.", "Move the red cube into the sink.",
    ]
    out += [(s, "out_of_vocabulary", None) for s in oov]
    missing = [
        "Paint the red cube green.", "Throw the blue cube.", "Push the red cube to the left.",
        "Knock over the blue block.", "Hand me the green cube.", "Give me the red block.",
        "Spin the blue cube around.", "Shake the red cube.", "Hide the green block.", "Clean the blue cube.",
        "Kick the red block.", "Squeeze the green cube.", "Unstack the red cube from the blue cube.",
        "Rotate the blue block ninety degrees.", "Flip the red cube upside down.", "Point at the green cube.",
        "Count the cubes.", "Line up the red, green and blue cubes in a row.", "Sort the cubes by colour.",
        "Slide the red cube to the right.", "Open the blue box.", "Wipe the green block.",
        "Weigh the red cube.", "Swap the red cube and the green cube.", "Tap the green cube twice.",
        "Toss the blue cube to me.", "Drag the green cube to the edge.", "Nudge the red block forward.",
        "Tip over the blue cube.", "Break the green block apart.", "Turn the blue block around.",
        "Shove the green cube aside.", "Show me the red cube.", "Measure the green block.",
        "Could you roll the blue cube over?", "Please wrap the red block in paper.",
    ]
    out += [(s, "missing_skill", None) for s in missing]
    imp: list[tuple[str, list[str]]] = []
    for c in COLOURS:
        imp += [(f"Put the {c} cube on itself.", [f"on({c},{c})"]),
                (f"Stack the {c} block on the {c} block.", [f"on({c},{c})"]),
                (f"Place {c} on {c}.", [f"on({c},{c})"]),
                (f"Set the {c} one on top of itself.", [f"on({c},{c})"])]
    for x, y in itertools.combinations(COLOURS, 2):
        imp += [(f"Put {x} on {y} and {y} on {x}.", [f"on({x},{y})", f"on({y},{x})"]),
                (f"Stack the {y} cube on the {x} cube and the {x} cube on the {y} cube.",
                 [f"on({y},{x})", f"on({x},{y})"])]
    for a, b, c in (("red", "green", "blue"), ("blue", "red", "green")):
        imp.append((f"Put {a} on {b}, {b} on {c}, and {c} on {a}.", [f"on({a},{b})", f"on({b},{c})",
                                                                     f"on({c},{a})"]))
    for base in COLOURS:
        x, y = [c for c in COLOURS if c != base]
        imp += [(f"Put both the {x} and the {y} cube on the {base} cube.", [f"on({x},{base})", f"on({y},{base})"]),
                (f"Stack {x} on {base} and {y} on {base}.", [f"on({x},{base})", f"on({y},{base})"]),
                (f"Place the {x} block and the {y} block side by side on top of the {base} block.",
                 [f"on({x},{base})", f"on({y},{base})"])]
    for c in COLOURS:
        x, y = [o for o in COLOURS if o != c]
        imp += [(f"Put the {c} cube on the {x} cube and on the {y} cube.", [f"on({c},{x})", f"on({c},{y})"]),
                (f"Stack the {c} block on both the {x} block and the {y} block.", [f"on({c},{x})", f"on({c},{y})"])]
    out += [(s, "impossible", g) for s, g in imp]
    out += [(s, "empty", None) for s in EMPTY]
    return out


# ================================================================================================== pick_place_bins
ITEMS = ("milk", "bread", "cereal", "can")
ITEM_WORDS = {
    "milk": ["the milk"] * 3 + ["the milk carton"] * 2 + ["the carton of milk", "the carton"],
    "bread": ["the bread"] * 3 + ["the loaf"] * 2 + ["the loaf of bread", "the bread loaf"],
    "cereal": ["the cereal"] * 3 + ["the cereal box"] * 2 + ["the box of cereal", "the box"],
    "can": ["the can"] * 2 + ["the soda can"] * 2 + ["the coke can", "the can of soda", "the soda", "the tin"],
}
# verb -> (gerund, prepositions to a bin)
BIN_VERBS = {"put": ("putting", ["in", "into"]), "place": ("placing", ["in", "into"]),
             "drop": ("dropping", ["in", "into"]), "sort": ("sorting", ["into"]),
             "store": ("storing", ["in"]), "stow": ("stowing", ["in", "away in"]),
             "move": ("moving", ["to", "into"]), "bring": ("bringing", ["to"]),
             "return": ("returning", ["to"]), "tidy": ("tidying", ["away into"]),
             }
BIN_VERB_WEIGHTS = ["put"] * 4 + ["place"] * 2 + ["drop"] * 2 + ["sort", "store", "stow", "stow", "move", "bring",
                                                                     "return", "tidy"]


def item(r: Pick, o: str) -> str:
    return r.c(ITEM_WORDS[o])


def own_bin(r: Pick, o: str, its: bool = True) -> str:
    forms = [f"the {o} bin", f"the {o} bin", f"the {o}'s bin"]
    if its:
        forms += ["its bin", "its bin", "its own bin"]
    return r.c(forms)


def b_vp(r: Pick, o: str, verb: str | None = None, its: bool = True) -> tuple[str, str]:
    v = verb or r.c(BIN_VERB_WEIGHTS)
    ger, preps = BIN_VERBS[v]
    X, prep, B = item(r, o), r.c(preps), own_bin(r, o, its)
    return f"{v} {X} {prep} {B}", f"{ger} {X} {prep} {B}"


def b_vp_many(r: Pick, objs: list[str]) -> tuple[str, str]:
    v = r.c(BIN_VERB_WEIGHTS)
    ger, preps = BIN_VERBS[v]
    L = join_list(r, [item(r, o) for o in objs])
    B = r.c(["their bins", "their own bins", "the right bins", "their matching bins"])
    return f"{v} {L} {r.c(preps)} {B}", f"{ger} {L} {r.c(preps)} {B}"


def bins_single(r: Pick, o: str) -> list[str]:
    rest = [x for x in ITEMS if x != o]
    vp, ger = b_vp(r, o)
    X = item(r, o)
    others = join_list(r, [item(r, x) for x in r.shuffle(rest)])
    return [
        cap(vp) + ".",
        f"Please {vp}.",
        cap(vp) + ", please.",
        f"{r.c(['Could', 'Can', 'Would'])} you {vp}?",
        f"Would you mind {ger}?",
        f"{cap(X)} goes in {own_bin(r, o)}.",
        f"{cap(X)} should end up in {own_bin(r, o, its=False)}.",
        f"I want {X} in {own_bin(r, o, its=False)}.",
        f"{cap(r.c(['pick up', 'grab', 'take', 'lift']))} {X} and {r.c(['put', 'drop', 'place', 'stow'])} it in "
        f"{own_bin(r, o)}.",
        f"{cap(r.c(['grab', 'take', 'pick up']))} {X}. {cap(r.c(['put', 'drop', 'store']))} it in {own_bin(r, o)}.",
        f"Just {X}: {r.c(['put', 'drop', 'stow'])} it in {r.c(['its bin', 'its own bin'])}.",
        f"Only {X} needs to go in its bin; leave the rest alone.",
        f"{cap(vp)} and leave everything else where it is.",
        f"{cap(vp)}. Don't touch anything else.",
        f"Leave {others} alone and {vp}.",
        f"{cap(r.c(['put', 'tidy', 'stow']))} away everything except {others}.",
        f"Everything but {others} goes in its bin.",
        f"{cap(r.c(['put', 'place', 'drop']))} {X} {r.c(['in', 'into'])} {own_bin(r, o, its=False)}, nothing else.",
        f"{cap(X)} belongs in {own_bin(r, o, its=False)}; {r.c(['put', 'return', 'move'])} it there.",
        f"The {o} bin is where {X} should end up.",
    ]


def bins_unordered(r: Pick, objs: list[str]) -> list[str]:
    vp, ger = b_vp_many(r, objs)
    L = join_list(r, [item(r, o) for o in objs])
    parts = [b_vp(r, o)[0] for o in objs]
    rest = [x for x in ITEMS if x not in objs]
    both = "both" if len(objs) == 2 else "all"
    out = [
        cap(vp) + ".",
        f"Please {vp}.",
        f"{r.c(['Could', 'Can'])} you {vp}?",
        f"Would you mind {ger}?",
        cap(join_list(r, parts)) + ".",
        f"I want {L} in their bins.",
        f"{cap(L)} should {both} end up in their own bins.",
        f"{cap(r.c(['grab', 'pick up', 'take']))} {L} and {r.c(['put', 'drop', 'stow'])} them in their bins.",
        f"{cap(r.c(['grab', 'pick up', 'take']))} {L} and sort them into their bins.",
        f"{cap(L)}: each one goes into its own bin.",
        f"{cap(r.c(['put', 'stow', 'tidy']))} {L} away, each into its own bin.",
    ]
    if rest:
        others = join_list(r, [item(r, x) for x in r.shuffle(rest)])
        out += [
            f"{cap(vp)}, but leave {others} alone.",
            f"{cap(vp)} and don't touch {others}.",
            f"{cap(r.c(['put', 'tidy', 'stow']))} away everything except {others}.",
            f"Sort everything {r.c(['except', 'but'])} {others} into the bins.",
            f"Everything {r.c(['but', 'except', 'apart from'])} {others} goes into its bin.",
            f"All but {others} should end up in their bins.",
            f"Leave {others} where {'it is' if len(rest) == 1 else 'they are'} and put the rest in their bins.",
        ]
    else:
        v = r.c(BIN_VERB_WEIGHTS)
        out += [
            f"{cap(v)} everything {r.c(BIN_VERBS[v][1])} its bin.",
            f"{cap(r.c(['sort all the items into', 'put all the items into', 'tidy all the items away into']))} "
            "their bins.",
            "Every object goes in its own bin.",
            f"Could you {r.c(['put', 'sort', 'place'])} all four things into their bins?",
            "I want every item in its bin.",
            f"{cap(r.c(['put', 'stow', 'store']))} the milk, bread, cereal and can in their bins.",
            f"Tidy up: {r.c(['everything', 'every item'])} goes into its own bin.",
            "Everything should end up in the right bin.",
        ]
    return out


def ordinal_chain(r: Pick, names: list[str]) -> str:
    """'the milk, then the can, and finally the bread'."""
    if len(names) == 2:
        return f"{names[0]}, then {names[1]}"
    mid = ", then ".join(names[1:-1])
    return f"{names[0]}, then {mid}, and {r.c(['finally', 'last of all', 'lastly'])} {names[-1]}"


def bins_ordered(r: Pick, seq: list[str]) -> list[str]:
    names = [item(r, o) for o in seq]
    parts = [b_vp(r, o) for o in seq]
    v = r.c(["put", "place", "drop", "stow", "sort"])
    out = [
        f"{cap(parts[0][0])} first, then {names[1]}"
        + ("" if len(seq) == 2 else ", then " + ", then ".join(names[2:])) + ".",
        "First " + ", then ".join(p[0] for p in parts) + ".",
        (f"{cap(v)} each item {r.c(BIN_VERBS[v][1])} its own bin" if len(seq) == 4 else
         f"{cap(v)} {join_list(r, r.shuffle(list(names)))} {r.c(BIN_VERBS[v][1])} their bins")
        + f", starting with {ordinal_chain(r, names)}.",
        f"Start with {ordinal_chain(r, names)}; each goes into its own bin.",
        f"{cap(join_list(r, names))} go into their bins in that order.",
        f"In this order, {v} these {r.c(BIN_VERBS[v][1])} their bins: {', '.join(names)}.",
        f"{cap(names[0])} first, then {ordinal_chain(r, names[1:]) if len(names) > 2 else names[1]}, "
        + ("both" if len(seq) == 2 else "all") + " into their bins.",
    ]
    if len(seq) == 2:
        a, b = seq
        out += [
            f"{cap(parts[0][0])}. Once that's done, {parts[1][0]}.",
            f"{cap(parts[0][0])}. After that, {parts[1][0]}.",
            f"{cap(parts[0][0])}, and then {parts[1][0]}.",
            f"{cap(parts[1][0])}, but only after {names[0]} is in {own_bin(r, a, its=False)}.",
            f"{cap(parts[0][0])} before {names[1]} goes into its bin.",
            f"Before {parts[1][1]}, {parts[0][0]}.",
            f"{cap(parts[1][0])} after {parts[0][1]}.",
            f"{cap(v)} {names[0]} and {names[1]} {r.c(BIN_VERBS[v][1])} their bins, {names[0]} first.",
            f"Could you {parts[0][0]} and then {parts[1][0]}?",
            f"{cap(parts[0][0])} first. When that's done, {r.c(['put', 'drop', 'stow'])} {names[1]} in its bin too.",
            f"I want {names[0]} in its bin first and {names[1]} in its bin after that.",
            f"Do {names[0]} first and {names[1]} second; {v} both into their bins.",
        ]
    else:
        out += [
            cap(". Then ".join(p[0] for p in parts)) + ".",
            f"{cap(parts[0][0])}. Next, {parts[1][0]}. " + " ".join(
                f"{'Finally' if i == len(parts) - 1 else 'After that'}, {p[0]}." for i, p in enumerate(parts[2:], 2)),
        ]
    return out


def gen_pick_place_bins(r: Pick) -> list[tuple[str, list[str], bool]]:
    pool = []
    for _ in range(POOL_ROUNDS):
        for o in ITEMS * 3:
            for s in bins_single(r, o):
                pool.append((s, [f"in_bin({o})"], False))
        for k in (2, 2, 3, 4):
            for objs in itertools.combinations(ITEMS, k):
                objs = r.shuffle(list(objs))
                for s in bins_unordered(r, objs):
                    pool.append((s, [f"in_bin({o})" for o in objs], False))
        for k in (2, 2, 3, 4):
            seqs = list(itertools.permutations(ITEMS, k))
            for _ in range(4):
                seq = list(r.c(seqs))
                for s in bins_ordered(r, seq):
                    pool.append((s, [f"in_bin({o})" for o in seq], True))
    return pool


def bins_negatives(r: Pick) -> list[tuple[str, str, list[str] | None]]:
    out: list[tuple[str, str, list[str] | None]] = []
    oov = [
        "Put the apple in its bin.", "Put the eggs in the egg bin.", "Sort the banana into the fruit bin.",
        "Put the milk in the fridge.", "Put the bread on the shelf.", "Drop the can in the trash.",
        "Put the cereal in the cupboard.", "Store the cheese in the cheese bin.", "Put the yogurt in its bin.",
        "Put the butter away in its bin.", "Move the orange to the fruit bin.",
        "Put the water bottle in the bottle bin.", "Stow the chips in the snack bin.",
        "Put the soda can in the recycling.", "Put the loaf in the oven.",
        "Put the milk, the bread and the eggs in their bins.", "Put everything in the basket.",
        "Drop the carton in the sink.", "Place the cereal on the counter.", "Put the pasta in its bin.",
        "Put the rice in the rice bin.", "Put the jam jar in its bin.", "Return the ketchup to its bin.",
        "Put the apple and the bread in their bins.", "Bring the tea bags to the tea bin.",
        "Put the tomato in the vegetable bin.", "Put the milk in the blue bin.",
        "Drop the cookies in the cookie bin.", "Put the cereal in the dishwasher.",
        "Sort the fork into the cutlery bin.", "Put the bread in the lunch bag.", "Put the milk on the tray.",
        "Put the sugar in the sugar bin.", "Put the can into the microwave.",
        "Could you put the avocado in its bin?", "Stow the lemon in the lemon bin.",
        "Place the peanut butter in its bin, please.", "Put the carrots in their bin.",
    ]
    out += [(s, "out_of_vocabulary", None) for s in oov]
    missing = [
        "Open the milk carton.", "Pour out the cereal.", "Shake the soda can.", "Slice the bread.",
        "Crush the can.", "Toast the bread.", "Drink the milk.", "Eat the loaf.", "Cut the loaf in half.",
        "Heat up the milk.", "Open the cereal box.", "Squeeze the carton.", "Wash the can.", "Weigh the bread.",
        "Stack the can on top of the cereal box.", "Empty the milk bin.", "Read me the label on the cereal box.",
        "Recycle the tin.", "Flatten the milk carton.", "Peel the label off the soda can.", "Count the items.",
        "Hand me the soda.", "Give me the bread.", "Knock the cereal box over.", "Turn the milk carton around.",
        "Tear open the bread loaf.", "Freeze the loaf of bread.", "Scan the barcode on the milk.",
        "Smell the milk.", "Spin the can.", "Close the cereal bin.", "Empty all the bins.",
        "Could you unwrap the bread?", "Please rinse the coke can.", "Shake the carton of milk.",
        "Line up the milk, the bread, the cereal and the can in a row.",
    ]
    out += [(s, "missing_skill", None) for s in missing]
    imp: list[tuple[str, list[str]]] = []
    forms = ["Put {X} in the {b} bin.", "Drop {X} into the {b}'s bin.", "Store {X} in the {b} bin, please.",
             "Could you place {X} in the {b} bin?", "{CX} goes in the {b} bin."]
    i = 0
    for o in ITEMS:
        for b in ITEMS:
            if b == o:
                continue
            for _ in range(2):
                f = forms[i % len(forms)]
                i += 1
                X = item(r, o)
                if b == "can" and o != "can" and "{b}'s" in f:
                    f = "Drop {X} into the can bin."
                imp.append((f.format(X=X, CX=cap(X), b=b), [f"in_bin_wrong({o},{b})"]))
    imp += [
        ("Put the bread in both the bread bin and the can bin.", ["in_bin_two(bread)"]),
        ("Put everything in the milk bin.", ["in_bin_wrong(bread,milk)"]),
        ("Put the cereal into the can bin and the can into the cereal bin.", ["in_bin_wrong(cereal,can)"]),
        ("Store the milk in the cereal bin and the bread in its own bin.", ["in_bin_wrong(milk,cereal)"]),
        ("Put all four items into the bread bin.", ["in_bin_wrong(milk,bread)"]),
        ("Put the milk in its bin and then move it to the can bin.", ["in_bin_two(milk)"]),
        ("Put the soda in the can bin and in the milk bin.", ["in_bin_two(can)"]),
        ("Swap them: the milk goes in the bread bin and the bread goes in the milk bin.",
         ["in_bin_wrong(milk,bread)"]),
    ]
    out += [(s, "impossible", g) for s, g in imp]
    out += [(s, "empty", None) for s in EMPTY]
    return out


# ===================================================================================================== nut_assembly
SHAPES = ("square", "round")
NUT_VERBS = {"put": ("putting", ["on", "onto"]), "place": ("placing", ["on", "onto"]),
             "insert": ("inserting", ["onto"]), "slide": ("sliding", ["onto", "over", "down onto"]),
             "fit": ("fitting", ["onto", "over"]), "thread": ("threading", ["onto", "over"]),
             "drop": ("dropping", ["onto", "over"]), "mount": ("mounting", ["on", "onto"]),
             "set": ("setting", ["on", "onto"]), "move": ("moving", ["onto", "to"])}
NUT_VERB_WEIGHTS = ["put"] * 3 + ["place", "place", "slide", "slide", "insert", "fit", "thread", "drop", "mount",
                                  "set", "move"]


def nut(r: Pick, s: str) -> str:
    return r.c([f"the {s} nut"] * 3 + [f"the {s} ring"])


def peg(r: Pick, s: str, its: bool = True) -> str:
    post = r.c(["peg", "peg", "peg", "post", "rod"])
    forms = [f"the {s} {post}"] * 3
    if its:
        forms += [f"its {post}", f"its {post}", f"its matching {post}", f"the matching {post}"]
    return r.c(forms)


def n_vp(r: Pick, s: str, its: bool = True, what: str | None = None) -> tuple[str, str]:
    v = r.c(NUT_VERB_WEIGHTS)
    ger, preps = NUT_VERBS[v]
    N, prep, P = what or nut(r, s), r.c(preps), peg(r, s, its)
    return f"{v} {N} {prep} {P}", f"{ger} {N} {prep} {P}"


def other(s: str) -> str:
    return "round" if s == "square" else "square"


def nut_single(r: Pick, s: str) -> list[str]:
    o = other(s)
    vp, ger = n_vp(r, s)
    vpf, _ = n_vp(r, s, its=False)
    N, Oth, Pf = nut(r, s), nut(r, o), peg(r, s, its=False)
    v = r.c(NUT_VERB_WEIGHTS)
    return [
        cap(vp) + ".",
        cap(vpf) + ".",
        f"Please {vp}.",
        cap(vpf) + ", please.",
        f"{r.c(['Could', 'Can', 'Would'])} you {vp}?",
        f"Would you mind {ger}?",
        f"I want {N} on {Pf}.",
        f"{cap(N)} should end up on {peg(r, s)}.",
        f"{cap(N)} goes on {Pf}.",
        f"When you're done, {N} should be sitting on {Pf}.",
        f"{cap(r.c(['pick up', 'grab', 'take', 'lift']))} {N} and {r.c(['put', 'slide', 'drop', 'fit'])} it "
        f"onto {peg(r, s)}.",
        f"{cap(r.c(['grab', 'take', 'pick up']))} {N}. {cap(r.c(['put', 'slide', 'thread', 'set']))} it onto "
        f"{Pf}.",
        f"Leave {Oth} where it is and {vp}.",
        f"Only {N} needs to go on its peg; don't touch {Oth}.",
        f"{cap(vp)} and leave {Oth} alone.",
        f"{cap(Pf)} should have {N} on it.",
        f"Make sure {Pf} ends up with {N} around it.",
        f"{cap(r.c(['take', 'grab']))} {N} and {r.c(['slide', 'drop', 'thread'])} it down over {Pf}.",
        f"Just {N}, onto {Pf}.",
        f"Of the two nuts, {v} the {s} one {r.c(NUT_VERBS[v][1])} {Pf}.",
        f"{cap(N)} onto {Pf}, please",
        f"The {s} peg needs its nut: {r.c(['put', 'fit', 'slide', 'mount'])} {N} on it.",
        f"I'd like {N} mounted on {Pf}.",
        f"{cap(vp)}. That's all.",
    ]


def nut_both(r: Pick) -> list[str]:
    first = r.c(SHAPES)
    second = other(first)
    p1, p2 = n_vp(r, first)[0], n_vp(r, second)[0]
    v = r.c(NUT_VERB_WEIGHTS)
    prep = r.c(NUT_VERBS[v][1])
    nuts = r.c(["nuts", "nuts", "rings"])
    pegs = r.c(["pegs", "pegs", "posts", "rods"])
    n1, n2 = nut(r, first), nut(r, second)
    return [
        f"{cap(v)} both {nuts} {prep} their {pegs}.",
        f"{cap(v)} both {nuts} {prep} their matching {pegs}.",
        f"{cap(p1)} and {p2}.",
        f"Each nut goes on its own {r.c(['peg', 'post'])}.",
        f"{cap(v)} each {nuts[:-1]} {prep} its matching {pegs[:-1]}.",
        f"I want both {nuts} on their {pegs}.",
        f"Both {nuts} should end up on their {pegs}.",
        f"{r.c(['Could', 'Can'])} you {v} the square and round nuts {prep} their {pegs}?",
        f"{cap(r.c(['grab', 'pick up', 'take']))} both {nuts} and {r.c(['put', 'slide', 'fit', 'thread'])} "
        f"them onto their {pegs}.",
        f"{cap(v)} the {nuts} {prep} the {pegs} they match.",
        f"{cap(v)} {n1} {prep} {peg(r, first, False)} and {n2} {prep} {peg(r, second, False)}.",
        f"{cap(v)} {n1} and {n2} {prep} their {pegs}.",
        f"Both {pegs} should end up with their {nuts} on them.",
        f"Would you mind {NUT_VERBS[v][0]} both {nuts} {prep} their {pegs}?",
        f"{cap(n1)} goes on {peg(r, first, False)} and {n2} goes on {peg(r, second, False)}.",
        f"{cap(v)} every nut {prep} the {r.c(['peg', 'post'])} of the same shape.",
        f"Please {v} the two {nuts} {prep} their own {pegs}, in any order.",
    ]


def nut_ordered(r: Pick, a: str) -> list[str]:
    b = other(a)
    pa, pb = n_vp(r, a), n_vp(r, b)
    pbf = n_vp(r, b, its=False)
    v = r.c(NUT_VERB_WEIGHTS)
    prep = r.c(NUT_VERBS[v][1])
    na, nb = nut(r, a), nut(r, b)
    pegs = r.c(["pegs", "pegs", "posts"])
    return [
        f"First {pa[0]}, then {pb[0]}.",
        f"{cap(pa[0])}, then {pb[0]}.",
        f"{cap(pa[0])}. Then {pb[0]}.",
        f"{cap(pa[0])}. After that, {pb[0]}.",
        f"{cap(pa[0])}. Once that's done, {pbf[0]}.",
        f"{cap(pa[0])} before {pb[1]}.",
        f"{cap(pb[0])} after {pa[1]}.",
        f"{cap(pb[0])}, but first {pa[0]}.",
        f"{cap(pbf[0])}, but only once {na} is on its peg.",
        f"Before {pb[1]}, {pa[0]}.",
        f"Start with {na}, then {nb}, each {prep} its own {pegs[:-1]}.",
        f"Start with {na}, then the {b} one, each {prep} its own {pegs[:-1]}.",
        f"{cap(a)} nut first, then {b}, each {prep} its own peg.",
        f"{cap(v)} both nuts {prep} their {pegs}, {na} first.",
        f"{cap(v)} both rings {prep} their {pegs}, starting with {na}.",
        f"Could you {pa[0]} and then {pb[0]}?",
        f"I want {na} on its {pegs[:-1]} first and {nb} on its {pegs[:-1]} after that.",
        f"{cap(v)} {na} {prep} {peg(r, a, False)} first, and {nb} {prep} {peg(r, b, False)} second.",
        f"{cap(na)} goes on first; {nb} goes on after it. Each to its own {pegs[:-1]}.",
        f"Do {na} first and {nb} second; {v} each {prep} its matching {pegs[:-1]}.",
    ]


def gen_nut_assembly(r: Pick) -> list[tuple[str, list[str], bool]]:
    goal = {s: f"on_peg({s}_nut,{s}_peg)" for s in SHAPES}
    pool = []
    for _ in range(POOL_ROUNDS):
        for s in SHAPES:
            for t in nut_single(r, s):
                pool.append((t, [goal[s]], False))
        for t in nut_both(r):
            pool.append((t, [goal["square"], goal["round"]], False))
        for a in SHAPES:
            for t in nut_ordered(r, a):
                pool.append((t, [goal[a], goal[other(a)]], True))
    return pool


def nut_negatives(r: Pick) -> list[tuple[str, str, list[str] | None]]:
    out: list[tuple[str, str, list[str] | None]] = []
    oov = [
        "Put the hexagonal nut on the square peg.", "Slide the hex nut onto its peg.",
        "Put the triangular nut on the triangular peg.", "Put the washer on the round peg.",
        "Thread the bolt through the square nut.", "Put the square nut on the table.",
        "Put the round ring in the tray.", "Place the square nut in the drawer.", "Put the screw on the round post.",
        "Put the red nut on the square peg.", "Put the round nut on the third peg.",
        "Slide the square nut onto the blue peg.", "Put the square nut on the hook.",
        "Put the oval ring on the round rod.", "Put the star-shaped nut on its peg.",
        "Mount the round nut on the spindle.", "Put the square nut on the floor.", "Drop the round nut into the cup.",
        "Put the wing nut on the round peg.", "Fit the rubber gasket over the square post.",
        "Put the round nut on the hexagonal peg.", "Place the round ring on the shelf.",
        "Put the square nut in the toolbox.", "Thread the spring onto the round peg.",
        "Could you put the octagonal nut on the square rod?", "Put the small nut on the big peg.",
        "Slide the square nut onto the pencil.", "Put the round nut in my hand.",
        "Put both nuts in the bucket.", "Put the brass nut on the round peg.",
        "Slide the round ring onto the green post.", "Put the square nut on the magnet.",
        "Place the triangle on the square peg.", "Please put the cap on the round rod.",
    ]
    out += [(s, "out_of_vocabulary", None) for s in oov]
    missing = [
        "Tighten the square nut.", "Unscrew the round nut.", "Spin the square nut.",
        "Remove the square nut from its peg.", "Pull the round peg out.", "Flip the square nut over.",
        "Polish the round ring.", "Hand me the square nut.", "Bend the round rod.", "Rotate the square peg.",
        "Oil the round post.", "Loosen the square nut.", "Weigh the round nut.", "Paint the square ring.",
        "Throw the round nut.", "Stack the round nut on the square nut.", "Swap the two nuts.",
        "Measure the square peg.", "Clean the round post.", "Count the nuts.", "Wiggle the square peg.",
        "Knock the round nut off its peg.", "Shake the square ring.", "Turn the square nut a quarter turn.",
        "Tap the round peg.", "Twist the round ring.", "Hide the square nut.", "Give me the round nut.",
        "Push the square peg over.", "Could you clean the square nut?", "Please inspect the round rod.",
        "Saw the square rod in half.", "Roll the round ring across the floor.", "Straighten the bent square rod.",
    ]
    out += [(s, "missing_skill", None) for s in missing]
    imp: list[tuple[str, list[str]]] = []
    verbs = ["Put {N} on {P}.", "Slide {N} onto {P}.", "Could you fit {N} over {P}?", "Thread {N} onto {P}.",
             "I want {N} on {P}.", "Mount {N} on {P}, please.", "Drop {N} over {P}.", "Insert {N} onto {P}.",
             "Place {N} on {P}.", "{CN} should end up on {P}.", "Set {N} on {P}.", "Move {N} onto {P}."]
    i = 0
    for s in SHAPES:
        o = other(s)
        for post in ("peg", "post", "rod"):
            for _ in range(2):
                f = verbs[i % len(verbs)]
                i += 1
                N = nut(r, s)
                imp.append((f.format(N=N, CN=cap(N), P=f"the {o} {post}"), [f"on_peg({s}_nut,{o}_peg)"]))
    imp += [
        ("Put both nuts on the square peg.", ["on_peg(round_nut,square_peg)"]),
        ("Put both rings on the round post.", ["on_peg(square_nut,round_peg)"]),
        ("Put the square nut on the round peg and the round nut on the square peg.",
         ["on_peg(square_nut,round_peg)"]),
        ("Swap them: the round ring goes on the square post and the square ring goes on the round post.",
         ["on_peg(round_nut,square_peg)"]),
        ("Put the square nut on both pegs.", ["on_peg(square_nut,round_peg)"]),
        ("Put the round nut on the round peg and then on the square peg.", ["on_peg(round_nut,square_peg)"]),
        ("Put the square nut on the square peg and the round nut on the square peg too.",
         ["on_peg(round_nut,square_peg)"]),
        ("Slide the round nut onto the square peg first, then the square nut onto the round peg.",
         ["on_peg(round_nut,square_peg)"]),
        ("Put each nut on the peg that does not match it.", ["on_peg(round_nut,square_peg)"]),
        ("Slide both nuts onto the round rod.", ["on_peg(square_nut,round_peg)"]),
        ("Thread the square ring onto the round peg and leave the round ring alone.",
         ["on_peg(square_nut,round_peg)"]),
        ("First put the round nut on the square rod, then the square nut on its own rod.",
         ["on_peg(round_nut,square_peg)"]),
        ("Could you put the round ring on the square peg, please?", ["on_peg(round_nut,square_peg)"]),
        ("I'd like the square nut to end up on the round post.", ["on_peg(square_nut,round_peg)"]),
    ]
    out += [(s, "impossible", g) for s, g in imp]
    out += [(s, "empty", None) for s in EMPTY]
    return out


# ============================================================================================================ empty
EMPTY = [
    "", "um", "...?!", "hmm, let me think", "ok", "thanks", "hello", "hi robot", "nothing for now", "never mind",
    "wait", "sorry, wrong window", "test", "testing one two three", "lorem ipsum dolor sit amet", "blah blah blah",
    "Good morning!", "Is this thing on?", "Do nothing.", "Just stay where you are.", "Cancel that.",
]


# ============================================================================================================= main
TASKS = {
    "stack_three": (gen_stack_three, st_negatives),
    "pick_place_bins": (gen_pick_place_bins, bins_negatives),
    "nut_assembly": (gen_nut_assembly, nut_negatives),
}


def check_wrong_goal(vocab: TaskVocabulary, tag: str) -> bool:
    """For the bins and nut impossible lines: the intended fault, as a goal list the rules must refuse."""
    m = re.match(r"^(\w+)\(([^)]*)\)$", tag)
    name, args = m.group(1), m.group(2).split(",")
    if name == "in_bin_wrong":  # an object into another object's bin: not expressible as in_bin(X); check own_place
        obj, bin_of = args
        return vocab.own_place[obj] != f"{bin_of}_bin"
    if name == "in_bin_two":  # one object sent twice
        return vocab.impossibility([f"in_bin({args[0]})", f"in_bin({args[0]})"]) is not None
    return vocab.impossibility([tag]) is not None


def build_task(task: str, seed: int) -> list[dict]:
    vocab = TaskVocabulary.load(ROOT / "sim" / "tasks" / task / "vocabulary.yaml")
    gen_pos, gen_neg = TASKS[task]
    r = Pick(seed)
    seen: set[str] = set()
    rows: list[dict] = []
    pool = gen_pos(r)
    pool = r.shuffle(pool)
    pos = 0
    for text, goals, ordered in pool:
        if pos >= N_POSITIVE:
            break
        text = styled(r, " ".join(text.split()))
        key = norm(text)
        if not key or key in seen:
            continue
        why = vocab.impossibility(goals)
        if why is not None:
            raise AssertionError(f"{task}: positive {text!r} -> {goals} is impossible: {why}")
        goals = list(vocab.canonical_order(goals)) if vocab.ordered_by_support else list(goals)
        seen.add(key)
        rows.append({"task": task, "instruction": text, "goals": goals, "ordered": bool(ordered),
                     "kind": "paraphrase", "source": SOURCE})
        pos += 1
    if pos < N_POSITIVE:
        raise AssertionError(f"{task}: only {pos} distinct positives")
    neg_seen: set[str] = set()
    for text, kind, goals in gen_neg(r):
        if kind == "impossible":
            ok = (vocab.impossibility(goals) is not None) if task == "stack_three" else \
                all(check_wrong_goal(vocab, g) for g in goals)
            if not ok:
                raise AssertionError(f"{task}: impossible line {text!r} is possible")
        if kind != "empty":
            text = styled(r, text) if r.p(0.5) else text
        key = norm(text)
        if key in seen:
            raise AssertionError(f"{task}: negative {text!r} duplicates a positive")
        if key in neg_seen and kind != "empty":
            continue
        if kind == "empty" and key in neg_seen:
            continue
        neg_seen.add(key)
        rows.append({"task": task, "instruction": text, "expect": "refuse", "kind": kind, "source": SOURCE})
    return rows


def main() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for task in TASKS:
        rows = build_task(task, SEED)
        path = OUT_DIR / f"{task}.jsonl"
        with path.open("w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        counts = Counter(row["kind"] for row in rows)
        n_ordered = sum(1 for row in rows if row.get("ordered") and row["kind"] == "paraphrase")
        sizes = Counter(len(row["goals"]) for row in rows if row["kind"] == "paraphrase")
        print(f"{task}: {len(rows)} lines -> {path.relative_to(ROOT)}")
        for kind in ("paraphrase", "out_of_vocabulary", "missing_skill", "impossible", "empty"):
            print(f"  {kind:18s} {counts.get(kind, 0)}")
        print(f"  (positives: {n_ordered} ordered; goals per line {dict(sorted(sizes.items()))})")


if __name__ == "__main__":
    main()
