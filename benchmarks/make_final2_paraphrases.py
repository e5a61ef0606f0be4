"""Final (v2) held-out evaluation set for the instruction grounder: natural-language instructions -> goals or refusal.

What this set is
----------------
The last, untouched test of the learned instruction grounder for three tasks (``stack_three``,
``pick_place_bins``, ``nut_assembly``). Nobody trains or tunes on it. Every line is either a positive
(an instruction with the ordered goal predicates a careful human reader would take from it) or a
negative (an instruction the grounder must refuse, with the reason kind).

Independence
------------
Written from scratch by a helper session that read ONLY ``tandem/core/vocabulary.py`` (the ``TaskVocabulary``
API) and the three vocabulary files ``sim/tasks/{stack_three,pick_place_bins,nut_assembly}/vocabulary.yaml``.
It did NOT read any other file of the repository: no other ``benchmarks/`` script or data set (earlier
paraphrase sets included), nor ``tandem/core/phrasing.py``, ``sim/reference_reading.py``, ``planner_vlm/``,
``docs/`` or ``tests/``. Every sentence frame below was written from the author's own sense of how people
instruct a robot; object, place and skill words come from the vocabulary files (synonyms included), the rest is
ordinary English.

Format (JSON lines, one file per task under ``benchmarks/data/grounding_final2/``)
----------------------------------------------------------------------------------
* positive: ``{"task", "instruction", "goals": [...], "ordered": bool, "kind": "paraphrase", "source": "final_v2"}``
  - stack_three: one stack of 2 or 3 cubes, goals ``on(top,bottom)`` bottom first
    (``vocab.canonical_order``), always ``"ordered": true``;
  - pick_place_bins / nut_assembly: ``in_bin(obj)`` / ``on_peg(nut,peg)``; ``"ordered": true`` only where the
    words impose a total order, and then the goals are listed in that order; otherwise listed in mention order.
* negative: ``{"task", "instruction", "expect": "refuse", "kind": k, "source": "final_v2"}`` with k one of
  ``out_of_vocabulary``, ``missing_skill``, ``impossible``, ``empty``.

Checks made when the script runs: every positive's goals pass ``vocab.impossibility`` (None); every
``impossible`` line's intended goals (kept in the script only) fail it -- for pick_place_bins a wrong-bin goal is
written with the bin as a second argument (``in_bin(milk,bread_bin)``), which the vocabulary rejects; every
``out_of_vocabulary`` line's intended goals (where it has a goal form) fail it too. Positives are distinct
case- and punctuation-insensitively; per task at least 360 positives and at least 120 negatives
(each kind >= 25, ``empty`` >= 15).

Seeded and deterministic: ``random.Random(20261207)`` (one stream per task derived from it).
Run: ``.venv/bin/python benchmarks/make_final2_paraphrases.py``
"""

from __future__ import annotations

import itertools
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tandem.core.vocabulary import TaskVocabulary  # noqa: E402

SEED = 20261207
OUT_DIR = ROOT / "benchmarks" / "data" / "grounding_final2"
SOURCE = "final_v2"
N_POS = 400          # target positives per task (>= 360 required)


def norm(s: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]+", " ", s.lower()).split())


def style(text: str, rng: random.Random) -> str:
    """Vary case and end punctuation the way typed instructions vary."""
    text = " ".join(text.split())
    question = text.endswith("?")
    body = text.rstrip("?.! ")
    r = rng.random()
    if r < 0.55:
        body = body[0].upper() + body[1:]
    elif r < 0.62:
        body = body.upper()
    elif r < 0.67:
        body = " ".join(w[:1].upper() + w[1:] for w in body.split(" "))
    if question:
        end = rng.choice(["?", "?", "?", ""])
    else:
        end = rng.choice(["", ".", ".", ".", "!"])
    return body + end


# ====================================================================================== stack_three
CUBES = ("red", "green", "blue")


def cube_np(c: str, rng: random.Random) -> str:
    return rng.choice([f"the {c} cube", f"the {c} block", f"the {c} box", f"the {c} one", c,
                       f"the {c} cube", f"the {c} block"])


STACK_VERBS = ("put", "place", "set", "stack", "move")

# two-cube stacks: {T} top, {B} bottom, {X} the cube left out; lower case = bare colour
STACK2 = [
    "{v} {T} on {B}",
    "{v} {T} on top of {B}",
    "{v} {T} onto {B}",
    "please {v} {T} on {B}",
    "could you {v} {T} on top of {B}?",
    "would you mind stacking {T} on {B}?",
    "pick up {T} and {v} it on {B}",
    "grab {T} and set it down on {B}",
    "I want {T} on top of {B}",
    "{T} goes on {B}",
    "{T} should end up on top of {B}",
    "{B} should have {T} sitting on it",
    "{B} at the bottom, {T} on top of it",
    "stack {T} on {B} and leave {X} where it is",
    "{v} {T} on {B}, but don't touch {X}",
    "only {T} on {B}, nothing else",
    "build a two-cube stack with {B} on the bottom and {T} on top",
    "build a small tower: {b} first, then {t} on it",
    "I'd like {T} stacked on {B}, please",
    "can you put {T} onto {B}?",
    "lift {T} and place it on top of {B}",
    "{T} on {B}",
    "{t} on {b}, please",
    "stand {T} on {B}",
    "{B} goes underneath {T}",
    "put {T} on {B}; {X} stays put",
    "let's have {T} resting on {B}",
    "the goal is {T} on top of {B}",
    "is it possible to stack {T} on top of {B}?",
    "I need {T} placed on {B} and that's all",
    "move {T} so it sits on top of {B}",
    "take {T} and stack it on {B}",
    "set {T} down on top of {B}",
    "{T} should be stacked on {B}",
    "stack {t} on {b}; leave {x} alone",
    "place {T} onto {B} please",
    "pile {T} on top of {B}",
    "hey robot, {v} {T} on {B}",
    "first grab {T}, then put it on {B}",
    "{B} needs {T} on top of it",
    "stack two cubes, {T} on {B}; ignore {X}",
    "don't use {X}; just {v} {T} on {B}",
    "with {B} as the base, stack {T} on it",
    "use {B} as the base and {v} {T} on top",
    "could you please put {T} on top of {B} and leave the other cube alone?",
    "put {T} on {B}. that's it",
    "end state: {T} on {B}",
    "{T} on top, {B} underneath",
    "build a tower of just two blocks, {b} below and {t} above",
    "top: {t}, bottom: {b}",
    "leave {X} out of it and stack {T} on {B}",
    "the {t} one should sit on the {b} one",
    "without moving {X}, {v} {T} on {B}",
    "just {T} on top of {B}, please",
    "I'd like you to {v} {T} on {B}",
    "{T} needs to go on top of {B}",
    "stack only two cubes: {b} at the bottom and {t} on it",
]

# three-cube stacks: {T} top, {M} middle, {B} bottom
STACK3 = [
    "stack {M} on {B}, then {T} on {M}",
    "put {M} on {B} and then put {T} on top of {M}",
    "build a tower with {B} at the bottom, {M} in the middle and {T} on top",
    "build a stack: {b} on the bottom, then {m}, then {t}",
    "from bottom to top: {b}, {m}, {t}",
    "from top to bottom: {t}, {m}, {b}",
    "stack all three cubes with {B} at the base and {T} at the top",
    "I want {T} on {M} and {M} on {B}",
    "{T} on {M}, {M} on {B}",
    "first put {M} on {B}. then put {T} on {M}",
    "{M} goes on {B} and {T} goes on {M}",
    "build a three-cube tower: {t} on top of {m}, {m} on top of {b}",
    "{m} on {b}, {t} on {m}",
    "stack {T} on {M} after you put {M} on {B}",
    "before you put {T} on {M}, put {M} on {B}",
    "put {T} on top of {M}, but first put {M} on {B}",
    "stack the three cubes so that {M} is between {B} below and {T} above",
    "put {M} in the middle of a tower, between {B} at the bottom and {T} at the top",
    "I'd like all three stacked: {B} at the bottom, {T} at the top",
    "stack all the cubes so that {t} is on top and {b} is at the bottom",
    "stack all three blocks with {m} in the middle, {b} underneath it and {t} on top",
    "could you stack {M} on {B} and then {T} on top of {M}?",
    "please build a tower: {b}, {m}, {t}, bottom up",
    "top-down order: {t}, {m}, {b}",
    "stack everything into one tower with {B} on the bottom, then {M}, then {T}",
    "pile all three up: {b} base, {m} middle, {t} top",
    "{B} at the bottom, {M} on it, and {T} on top of {M}",
    "the final tower should read {t}, {m}, {b} from the top down",
    "the finished stack should be {b}, {m}, {t} from the table up",
    "I want a tower where {T} sits on {M}, which sits on {B}",
    "put {M} on {B}. once that's done, put {T} on {M}",
    "once {M} is on {B}, stack {T} on top of {M}",
    "grab {M}, put it on {B}, then grab {T} and put it on {M}",
    "{T} on top, {M} in the middle, {B} on the bottom",
    "stack all three cubes: {t} highest, {b} lowest",
    "use {B} as the base, put {M} on it, and finish with {T} on top",
    "build a tower of all three cubes, {b} first, then {m}, then {t}",
    "first {m} on {b}, then {t} on {m}",
    "{T} should end up on {M}, and {M} on {B}",
    "build one stack of the three cubes: {T} on {M} on {B}",
    "tower, please: {t} over {m} over {b}",
    "stack {M} onto {B}, and after that stack {T} onto {M}",
    "I'd like {M} resting on {B} with {T} resting on {M}",
    "in the three-cube tower the middle cube should be {m}, with {b} under it and {t} over it",
    "can you build a tower from all three cubes with {t} at the very top and {m} right below it?",
    "stack all three: {m} goes directly on {b}, and {t} goes directly on {m}",
    "bottom {b}, middle {m}, top {t}",
    "is it possible to stack {M} on {B} and {T} on {M}?",
    "{t} on {m} on {b}, please",
    "stack the three blocks so {b} is lowest and {m} is right above it",
    "start the tower with {B}, then put {M} on it, then {T}",
    "place {M} onto {B}, then place {T} on top of {M}, and you're done",
    "{B} is the base. {M} goes on it. {T} goes on {M}",
    "pile up all the cubes: {b} at the base, then {m}, and {t} last",
    "I need the blocks stacked {t} on top of {m} on top of {b}",
    "stack them all, {t} above {m} and {m} above {b}",
    "set {M} on {B} first, and then set {T} on {M}",
    "build a tower with all three blocks where {b} is at the bottom and {t} is on top",
]


def stack_positive(spec, rng: random.Random, vocab: TaskVocabulary):
    n, frame = spec
    if n == 3:
        t, m, b = rng.sample(CUBES, 3)
        goals = [vocab.goal("stack", (m, b)), vocab.goal("stack", (t, m))]
        fill = {"T": cube_np(t, rng), "M": cube_np(m, rng), "B": cube_np(b, rng), "t": t, "m": m, "b": b}
    else:
        t, b, x = rng.sample(CUBES, 3)
        goals = [vocab.goal("stack", (t, b))]
        fill = {"T": cube_np(t, rng), "B": cube_np(b, rng), "X": cube_np(x, rng), "t": t, "b": b, "x": x}
    fill["v"] = rng.choice(STACK_VERBS)
    return frame.format(**fill), list(vocab.canonical_order(goals)), True


def stack_negatives(rng: random.Random, vocab: TaskVocabulary):
    out = []  # (text, kind, intended goals or None)
    oov_col = ["yellow", "orange", "purple", "black", "white", "pink"]
    things = ["plate", "tray", "shelf", "book", "windowsill", "mug"]
    shapes = ["sphere", "pyramid", "cylinder", "ball", "cone"]
    oov = [
        ("put the {o} cube on the {c} cube", lambda o, c: [f"on({o},{c})"]),
        ("stack the {c} block on the {o} block", lambda o, c: [f"on({c},{o})"]),
        ("place the {o} block on top of the {c} one", lambda o, c: [f"on({o},{c})"]),
        ("could you stack the {c} cube on the {o} cube?", lambda o, c: [f"on({c},{o})"]),
        ("I want the {o} box sitting on the {c} box", lambda o, c: [f"on({o},{c})"]),
        ("build a tower with the {o} cube at the bottom and the {c} cube on it", lambda o, c: [f"on({c},{o})"]),
    ]
    oov_thing = [
        ("put the {c} cube on the {s}", lambda s, c: [f"on({c},{s})"]),
        ("set the {c} block down on the {s}", lambda s, c: [f"on({c},{s})"]),
        ("please move the {c} cube onto the {s}", lambda s, c: [f"on({c},{s})"]),
    ]
    oov_shape = [
        ("stack the {s} on top of the {c} block", lambda s, c: [f"on({s},{c})"]),
        ("put the {c} cube on the {s}", lambda s, c: [f"on({c},{s})"]),
        ("place the {s} onto the {c} cube", lambda s, c: [f"on({s},{c})"]),
    ]
    cands = []
    for f, g in oov:
        for o in oov_col:
            for c in CUBES:
                cands.append((f.format(o=o, c=c), g(o, c)))
    for f, g in oov_thing:
        for s in things:
            for c in CUBES:
                cands.append((f.format(s=s, c=c), g(s, c)))
    for f, g in oov_shape:
        for s in shapes:
            for c in CUBES:
                cands.append((f.format(s=s, c=c), g(s, c)))
    out += _pick_spread(cands, 35, rng, "out_of_vocabulary", key=lambda x: x[0].split(" the ")[0])

    missing = [
        "rotate the {c} cube ninety degrees", "push the {c} block to the edge of the table",
        "wipe the {c} cube clean", "flip the {c} block upside down", "roll the {c} cube across the table",
        "paint the {c} cube {c2}", "throw the {c} block", "shake the {c} box", "spin the {c} block around",
        "push the {c} cube against the {c2} cube", "polish the {c} block", "squeeze the {c} cube",
        "turn the {c} block so a different face points up", "knock the {c} cube over",
        "hand the {c} cube to me", "tap the {c} cube twice", "clean the {c} block",
        "could you rotate the {c} block a quarter turn?", "wipe down the {c} cube and the {c2} cube",
        "push the {c} box a little to the left", "tilt the {c} cube onto its edge",
    ]
    cands = []
    for f in missing:
        for c, c2 in itertools.permutations(CUBES, 2):
            cands.append((f.format(c=c, c2=c2), None))
    out += _pick_spread(cands, 33, rng, "missing_skill", key=lambda x: x[0].split(" the ")[0][:12])

    imp = []
    for c in CUBES:
        imp += [(f"put the {c} cube on the {c} cube", [f"on({c},{c})"]),
                (f"stack the {c} block on itself", [f"on({c},{c})"]),
                (f"place {c} on top of {c}", [f"on({c},{c})"]),
                (f"put the {c} one on top of itself", [f"on({c},{c})"]),
                (f"set the {c} box down on the {c} box", [f"on({c},{c})"])]
    for a, b, c in itertools.permutations(CUBES, 3):
        imp += [(f"put {a} on {b} and {b} on {a}", [f"on({a},{b})", f"on({b},{a})"]),
                (f"the {a} cube should be on the {b} cube and the {b} cube on the {a} cube",
                 [f"on({a},{b})", f"on({b},{a})"]),
                (f"stack them in a loop: {a} on {b}, {b} on {c}, {c} on {a}",
                 [f"on({a},{b})", f"on({b},{c})", f"on({c},{a})"]),
                (f"I want the {a} block on the {b} block, the {b} block on the {c} block and the {c} block "
                 f"on the {a} block", [f"on({a},{b})", f"on({b},{c})", f"on({c},{a})"]),
                (f"put both the {a} and the {b} cube directly on the {c} cube, side by side",
                 [f"on({a},{c})", f"on({b},{c})"]),
                (f"stack {a} on {c} and also stack {b} directly on {c}", [f"on({a},{c})", f"on({b},{c})"]),
                (f"I want the {a} block and the {b} block each sitting right on top of the {c} block",
                 [f"on({a},{c})", f"on({b},{c})"]),
                (f"put the {a} cube on the {b} cube and on the {c} cube at the same time",
                 [f"on({a},{b})", f"on({a},{c})"]),
                (f"the {a} cube should rest directly on the {b} cube and also directly on the {c} cube",
                 [f"on({a},{b})", f"on({a},{c})"])]
    out += _pick_spread(imp, 35, rng, "impossible", key=lambda x: x[0][:14])

    empty = ["never mind", "do nothing", "that's all for now, thanks", "don't move anything",
             "leave the cubes exactly where they are", "nothing to do right now", "stay still",
             "cancel that, I don't need anything", "just wait", "no stacking today",
             "leave all three blocks alone", "the blocks are fine as they are", "forget it",
             "don't touch the {c} cube", "hold on, there's nothing to build", "stop",
             "you can relax, no task", "I don't want any tower", "leave everything on the table as it is",
             "don't stack anything", "please keep your hands off the {c} block", "nothing, thanks"]
    cands = []
    for f in empty:
        if "{c}" in f:
            cands += [(f.format(c=c), None) for c in CUBES]
        else:
            cands.append((f, None))
    out += _pick_spread(cands, 22, rng, "empty", key=lambda x: x[0][:10])
    return out


# ====================================================================================== pick_place_bins
ITEMS = ("milk", "bread", "cereal", "can")
ITEM_NP = {
    "milk": ["the milk carton", "the carton of milk", "the milk", "the carton", "the milk"],
    "bread": ["the loaf of bread", "the bread loaf", "the bread", "the loaf", "the bread"],
    "cereal": ["the cereal box", "the box of cereal", "the cereal", "the box", "the cereal"],
    "can": ["the soda can", "the coke can", "the can of soda", "the can", "the soda", "the tin", "the soda can"],
}
BIN_NAMED = {o: [f"the {o} bin", f"the {o}'s bin"] for o in ITEMS}

# slots: {A}..{D} object NPs (in the goal order), {Abin} its bin (may be "its bin"), {ABIN} named bin only,
# {X}/{Y} objects NOT given a goal (exclusions). n = number of goal objects, ordered flag.
BINS = [
    # ---- one object
    (1, False, "put {A} in {Abin}"),
    (1, False, "place {A} into {Abin}"),
    (1, False, "drop {A} into {Abin}"),
    (1, False, "return {A} to {Abin}"),
    (1, False, "bring {A} over to {ABIN}"),
    (1, False, "put {A} away"),
    (1, False, "put away {A}"),
    (1, False, "tidy {A} away into {Abin}"),
    (1, False, "stow {A} in {Abin}"),
    (1, False, "store {A} in {Abin}"),
    (1, False, "sort {A} into {Abin}"),
    (1, False, "could you put {A} in {Abin}?"),
    (1, False, "would you please drop {A} in {Abin}?"),
    (1, False, "I'd like {A} in {ABIN}"),
    (1, False, "{A} belongs in {ABIN}; please put it there"),
    (1, False, "{A} should end up in {ABIN}"),
    (1, False, "pick up {A} and put it in {Abin}"),
    (1, False, "grab {A} and drop it in {Abin}"),
    (1, False, "take {A} to {Abin}"),
    (1, False, "only {A} needs to go in {ABIN}"),
    (1, False, "put {A} in {Abin} and leave everything else alone"),
    (1, False, "put {A} away, but don't touch {X}"),
    (1, False, "please put {A} in {Abin}, that's all"),
    (1, False, "move {A} into {Abin}"),
    (1, False, "the only thing to put away is {A}"),
    (1, False, "{A} goes in {ABIN}"),
    (1, False, "would it be possible to put {A} in {Abin}?"),
    (1, False, "I want {A} put away in {Abin}"),
    (1, False, "leave {X} where it is and just put {A} away"),
    (1, False, "put {A} into {Abin}; nothing else"),
    (1, False, "{A} into {ABIN}, please"),
    (1, False, "time to put {A} away"),
    (1, False, "don't put anything away except {A}"),
    (1, False, "{A} needs to go back in {ABIN}"),
    (1, False, "make sure {A} ends up in {ABIN}"),
    (1, False, "lift {A} and stow it in {Abin}"),
    (1, False, "put {A} in {Abin}, not {X}"),
    (1, False, "just tidy away {A}; {X} and {Y} stay out"),
    # ---- two objects, no order
    (2, False, "put {A} and {B} in their bins"),
    (2, False, "put {A} in {Abin} and {B} in {Bbin}"),
    (2, False, "put away {A} and {B}"),
    (2, False, "both {A} and {B} need to go in their bins"),
    (2, False, "could you store {A} and {B} in their own bins?"),
    (2, False, "I'd like {A} and {B} put away"),
    (2, False, "sort {A} and {B} into their bins"),
    (2, False, "{A} goes in {ABIN}, {B} goes in {BBIN}"),
    (2, False, "tidy away {A} and {B}, and leave the rest"),
    (2, False, "put {A} and {B} away; don't touch {X} or {Y}"),
    (2, False, "put everything away except {X} and {Y}"),
    (2, False, "please return {A} and {B} to their bins, in any order"),
    (2, False, "drop {A} into {Abin}, and {B} into {Bbin}"),
    (2, False, "{A} and {B} should end up in their bins"),
    (2, False, "only {A} and {B}: put them in their bins"),
    (2, False, "stow {A} and also {B}"),
    (2, False, "would you put {A} as well as {B} in their bins?"),
    (2, False, "put {A} into {Abin}. {B} too"),
    (2, False, "store {A} in {ABIN} and {B} in {BBIN}, whichever first"),
    (2, False, "the two things to put away are {A} and {B}"),
    (2, False, "leave {X} and {Y} on the table, and put the other two away"),
    # ---- two objects, ordered
    (2, True, "put {A} in {Abin}, then put {B} in {Bbin}"),
    (2, True, "first put away {A}, then {B}"),
    (2, True, "put {A} away first and {B} after that"),
    (2, True, "put {B} away after {A}"),
    (2, True, "before you put away {B}, put {A} in {Abin}"),
    (2, True, "put {B} in {Bbin}, but first put {A} in {Abin}"),
    (2, True, "{A} first, then {B}, both into their bins"),
    (2, True, "put away {A} and {B}, starting with {A}"),
    (2, True, "once {A} is in {ABIN}, put {B} in {Bbin}"),
    (2, True, "put {A} in {Abin}. after that, put {B} in {Bbin}"),
    (2, True, "put {A} and {B} in their bins, {A} before {B}"),
    (2, True, "put {A} away, and then finish with {B}"),
    (2, True, "sort {A} into {Abin} and then {B} into {Bbin}"),
    (2, True, "I want {A} stored first and {B} second"),
    (2, True, "first {A}, then {B}: put them both away"),
    (2, True, "grab {A} and put it in {Abin}; when that's done, put {B} in {Bbin}"),
    (2, True, "put {B} away, but only after {A} is in {ABIN}"),
    (2, True, "could you put {A} away and then {B}?"),
    (2, True, "put {A} and then {B} in their bins"),
    (2, True, "{A} into {ABIN} first, {B} into {BBIN} second"),
    (2, True, "put away {B} second and {A} first"),
    (2, True, "put {A} and {B} away, with {B} last"),
    # ---- three objects, no order
    (3, False, "put {A}, {B} and {C} in their bins"),
    (3, False, "put away everything except {X}"),
    (3, False, "put everything but {X} in its bin"),
    (3, False, "put {A}, {B}, and {C} away, but leave {X}"),
    (3, False, "sort {A}, {B} and {C} into their bins"),
    (3, False, "everything goes in its bin except {X}"),
    (3, False, "{A} in {ABIN}, {B} in {BBIN}, {C} in {CBIN}"),
    (3, False, "leave {X} out and put the other three away"),
    (3, False, "don't touch {X}; put the rest in their bins"),
    (3, False, "I'd like {A}, {B} and {C} stowed in their bins"),
    (3, False, "could you tidy away {A}, {B} and {C}?"),
    (3, False, "put all the items except {X} into their own bins"),
    (3, False, "store {A}, {B} and {C}, and keep {X} out"),
    # ---- three objects, ordered
    (3, True, "put {A} away first, then {B}, and finally {C}"),
    (3, True, "first {A}, then {B}, then {C}: put each in its bin"),
    (3, True, "put {A} in {Abin}, then {B} in {Bbin}, then {C} in {Cbin}"),
    (3, True, "put away {A}, {B} and {C}, in that order"),
    (3, True, "start with {A}, next {B}, and {C} last; each goes in its bin"),
    (3, True, "put {A} away, then {B}, and save {C} for last"),
    (3, True, "in this order, put these in their bins: {A}, {B}, {C}"),
    (3, True, "put {A} in its bin. next, {B}. last, {C}"),
    (3, True, "once {A} is in {ABIN}, put away {B} and then {C}"),
    (3, True, "put away everything except {X}, in the order {A}, {B}, {C}"),
    (3, True, "drop {A} into {Abin} first, {B} into {Bbin} second and {C} into {Cbin} third"),
    # ---- all four, no order
    (4, False, "put everything in its bin"),
    (4, False, "put all the items away"),
    (4, False, "put all four objects in their bins"),
    (4, False, "tidy up: everything goes in its own bin"),
    (4, False, "sort all the groceries into their bins"),
    (4, False, "put {A}, {B}, {C} and {D} in their bins"),
    (4, False, "clear the table: put every item into its bin"),
    (4, False, "put away {A}, {B}, {C}, and {D}"),
    (4, False, "could you put everything away?"),
    (4, False, "store all four things in their respective bins"),
    (4, False, "I want every object in its own bin"),
    (4, False, "put {A} in {Abin} and the rest in their bins too"),
    (4, False, "put {A} away, and everything else as well"),
    (4, False, "return all the items to their bins, any order is fine"),
    (4, False, "each item goes into its matching bin"),
    (4, False, "stow away all of the groceries"),
    # ---- all four, ordered
    (4, True, "put {A} away first, then {B}, then {C}, and {D} last"),
    (4, True, "in order: {A}, {B}, {C}, {D}. each into its bin"),
    (4, True, "put everything away in this order: {A}, {B}, {C}, {D}"),
    (4, True, "first {A}, second {B}, third {C}, fourth {D}; put them in their bins"),
    (4, True, "{A} into {ABIN}, then {B} into {BBIN}, then {C} into {CBIN}, then {D} into {DBIN}"),
    (4, True, "start with {A}, then {B}, then {C}, and finish with {D}; all into their bins"),
    (4, True, "put all four away; the order is {A}, {B}, {C}, {D}"),
    (4, True, "put {A} away. then {B}. then {C}. then {D}"),
]


def bins_positive(spec, rng: random.Random, vocab: TaskVocabulary):
    n, ordered, frame = spec
    objs = rng.sample(ITEMS, 4)
    goal_objs, rest = objs[:n], objs[n:]
    fill = {}
    for slot, o in zip("ABCD", goal_objs):
        fill[slot] = rng.choice(ITEM_NP[o])
        fill[slot + "BIN"] = rng.choice(BIN_NAMED[o])
        fill[slot + "bin"] = rng.choice(BIN_NAMED[o] + ["its bin", "its own bin"])
    for slot, o in zip("XY", rest):
        fill[slot] = rng.choice(ITEM_NP[o])
    # the word 'box'/'carton' etc. alone are fine; avoid two different objects rendered identically (never happens)
    text = frame.format(**fill)
    goals = [vocab.goal("place", (o,)) for o in goal_objs]
    return text, goals, ordered


def bins_negatives(rng: random.Random, vocab: TaskVocabulary):
    out = []
    items = ["apple", "banana", "egg", "water bottle", "yogurt cup", "cheese", "jar of jam", "butter",
             "orange juice"]
    places = ["fridge", "shelf", "recycling bin", "sink", "drawer", "cupboard", "basket", "blue bin"]
    cands = []
    for it in items:
        key = it.replace(" ", "_")
        cands += [(f"put the {it} in its bin", [f"in_bin({key})"]),
                  (f"place the {it} into the {it} bin", [f"in_bin({key})"]),
                  (f"could you store the {it} away in its own bin?", [f"in_bin({key})"]),
                  (f"sort the {it} into its bin", [f"in_bin({key})"])]
    for pl in places:
        key = pl.replace(" ", "_")
        for o in ITEMS:
            np_ = rng.choice(ITEM_NP[o])
            prep = "on" if pl == "shelf" else "in"
            cands += [(f"put {np_} {prep} the {pl}", [f"in_bin({o},{key})"]),
                      (f"store {np_} {prep} the {pl}", [f"in_bin({o},{key})"]),
                      (f"drop {np_} {'onto' if pl == 'shelf' else 'into'} the {pl}, please", [f"in_bin({o},{key})"])]
    out += _pick_spread(cands, 35, rng, "out_of_vocabulary", key=lambda x: x[0].split()[-1])

    every = ITEMS
    missing = [("open {A}", ("milk", "cereal", "can")), ("pour out {A}", ("milk", "cereal", "can")),
               ("slice {A}", ("bread",)), ("shake {A}", every), ("crush {A}", ("can", "cereal", "milk")),
               ("squeeze {A}", ("bread", "milk")), ("rotate {A} ninety degrees", every),
               ("push {A} to the side", every), ("wipe {A} clean", ("milk", "cereal", "can")),
               ("flip {A} upside down", ("milk", "cereal", "can")), ("close {A}", ("milk", "cereal")),
               ("throw {A}", every), ("knock over {A}", ("milk", "cereal", "can")), ("hand me {A}", every),
               ("weigh {A}", every), ("stack {A} on top of {B}", every),
               ("could you open {A} for me?", ("milk", "cereal", "can")), ("spin {A} around", every),
               ("tear open {A}", ("cereal", "bread")), ("shake {A} and then open it", ("can", "milk")),
               ("balance {A} on {B}", every), ("turn {A} so the label faces me", ("milk", "cereal", "can")),
               ("toast {A}", ("bread",)), ("cut {A} in half", ("bread",))]
    cands = []
    for f, allowed in missing:
        for a, b in itertools.permutations(ITEMS, 2):
            if a in allowed:
                cands.append((f.format(A=rng.choice(ITEM_NP[a]), B=rng.choice(ITEM_NP[b])), None))
    out += _pick_spread(cands, 33, rng, "missing_skill", key=lambda x: x[0].split()[0])

    imp = []
    for a, b in itertools.permutations(ITEMS, 2):
        A, B = rng.choice(ITEM_NP[a]), rng.choice(ITEM_NP[b])
        wrong = [f"in_bin({a},{b}_bin)"]
        imp += [(f"put {A} in the {b} bin", wrong),
                (f"place {A} into the {b}'s bin", wrong),
                (f"{A} goes in the {b} bin", wrong),
                (f"store {A} in the {b} bin instead of its own", wrong),
                (f"put {A} in the {b} bin and {B} in the {a} bin",
                 [f"in_bin({a},{b}_bin)", f"in_bin({b},{a}_bin)"]),
                (f"put {A} in both the {a} bin and the {b} bin", [f"in_bin({a},{a}_bin)", f"in_bin({a},{b}_bin)"]),
                (f"put {A} and {B} together in the {a} bin", [f"in_bin({a},{a}_bin)", f"in_bin({b},{a}_bin)"]),
                (f"put {A} in its own bin and also in the {b} bin", [f"in_bin({a},{a}_bin)", f"in_bin({a},{b}_bin)"])]
    for a in ITEMS:
        imp.append((f"put all four items into the {a} bin", [f"in_bin({o},{a}_bin)" for o in ITEMS]))
    out += _pick_spread(imp, 35, rng, "impossible", key=lambda x: x[0][:8])

    empty = ["never mind", "do nothing for now", "nothing needs to be put away", "leave everything where it is",
             "don't move any of the groceries", "the table is fine as it is", "stop", "just wait",
             "no need to put anything away", "all good, no action needed", "leave {A} alone", "don't touch {A}",
             "hold off for now", "actually, forget it", "stay where you are", "don't put anything in the bins",
             "that's all, thanks, nothing else", "cancel that", "keep the bins empty", "leave {A} on the table"]
    cands = []
    for f in empty:
        if "{A}" in f:
            cands += [(f.format(A=rng.choice(ITEM_NP[o])), None) for o in ITEMS]
        else:
            cands.append((f, None))
    out += _pick_spread(cands, 22, rng, "empty", key=lambda x: x[0][:10])
    return out


# ====================================================================================== nut_assembly
NUTS = ("square_nut", "round_nut")
PEG_OF = {"square_nut": "square_peg", "round_nut": "round_peg"}
SHAPE = {"square_nut": "square", "round_nut": "round"}


def nut_np(n: str, rng: random.Random) -> str:
    s = SHAPE[n]
    return rng.choice([f"the {s} nut", f"the {s} ring", f"the {s} one", f"the {s} nut"])


def peg_named(n: str, rng: random.Random) -> str:
    s = SHAPE[n]
    return rng.choice([f"the {s} peg", f"the {s} post", f"the {s} rod", f"the {s} peg"])


NUT_VERBS_ON = ("put", "place", "insert", "slide", "fit", "thread", "drop", "mount", "set", "move")

# slots: {A},{B} nuts (goal order), {Ap}/{Bp} own peg (may be "its peg"), {AP}/{BP} named peg, {a}/{b} shape
# words; {X} the other nut when only one gets a goal; {v} a verb that takes "X onto Y".
NUTS_FRAMES = [
    # ---- one nut
    (1, False, "{v} {A} onto {Ap}"),
    (1, False, "{v} {A} on {Ap}"),
    (1, False, "please {v} {A} on {Ap}"),
    (1, False, "could you {v} {A} onto {Ap}?"),
    (1, False, "pick up {A} and {v} it onto {Ap}"),
    (1, False, "grab {A} and slide it down {AP}"),
    (1, False, "{A} goes on {AP}"),
    (1, False, "{A} should end up on {AP}"),
    (1, False, "I want {A} on {AP}"),
    (1, False, "only {A}: put it on {AP}"),
    (1, False, "put {A} on {Ap} and leave {X} alone"),
    (1, False, "don't touch {X}; just {v} {A} onto {Ap}"),
    (1, False, "thread {A} over {Ap}"),
    (1, False, "fit {A} over {Ap}"),
    (1, False, "{AP} needs {A} on it"),
    (1, False, "just {A} onto {AP}, please"),
    (1, False, "put {A} on its peg"),
    (1, False, "{A} onto {AP}"),
    (1, False, "mount {A} on {Ap}, nothing else"),
    (1, False, "the task is to put {A} on {Ap}"),
    (1, False, "would you mind putting {A} on {Ap}?"),
    (1, False, "take {A} and set it on {Ap}"),
    (1, False, "lift {A} and drop it over {Ap}"),
    (1, False, "slide {A} all the way down {Ap}"),
    (1, False, "set {A} down on {Ap}"),
    (1, False, "{A} belongs on {AP}; put it there"),
    (1, False, "place {A} on {Ap}, that's it"),
    (1, False, "is it possible to fit {A} onto {Ap}?"),
    (1, False, "I'd like {A} mounted on {AP}"),
    (1, False, "{A} should be sitting on {AP}"),
    (1, False, "leave {X} where it is and insert {A} onto {Ap}"),
    (1, False, "only {A} needs to go on {AP}"),
    (1, False, "put {A} on {Ap}. don't do anything with {X}"),
    (1, False, "your job: {A} on {AP}"),
    (1, False, "drop {A} down over {Ap}"),
    (1, False, "{A} on {AP}, please"),
    (1, False, "the {a} nut goes on the {a} peg"),
    (1, False, "put {A} back on {Ap}"),
    (1, False, "I need {A} threaded onto {AP}"),
    (1, False, "put {A} onto {Ap} but leave the other nut alone"),
    (1, False, "can you put {A} on {Ap}?"),
    (1, False, "put just the {a} nut on its peg"),
    (1, False, "I only want {A} on {AP}, not {X}"),
    (1, False, "place {A} over {Ap}"),
    (1, False, "{AP} is where {A} goes; put it there"),
    (1, False, "the {a} ring belongs on the {a} rod. put it there"),
    (1, False, "put {A} on {Ap}; leave the other one where it is"),
    (1, False, "don't put {X} anywhere; {v} {A} on {Ap}"),
    (1, False, "nothing but {A} on {AP}, please"),
    # ---- both, no order
    (2, False, "put both nuts on their pegs"),
    (2, False, "put each nut on its own peg"),
    (2, False, "{v} {A} on {Ap} and {B} on {Bp}"),
    (2, False, "put {A} and {B} on their pegs"),
    (2, False, "both nuts go on their matching pegs"),
    (2, False, "could you fit both rings onto their pegs?"),
    (2, False, "place all the nuts on their pegs"),
    (2, False, "I want every nut on its peg"),
    (2, False, "put {A} on {Ap}, and {B} on {Bp} as well"),
    (2, False, "{A} onto {AP}, {B} onto {BP}"),
    (2, False, "put {A} on {Ap}. {B} too, on {BP}"),
    (2, False, "mount both the square and the round nut on their pegs"),
    (2, False, "slide the two rings onto their posts"),
    (2, False, "insert each ring onto the matching rod"),
    (2, False, "put the nuts on the pegs where they belong"),
    (2, False, "put {A} on its peg and the other nut on its peg too"),
    (2, False, "both nuts need to end up on their pegs, in any order"),
    (2, False, "would you thread both nuts onto their pegs?"),
    (2, False, "put {A} and the other one on their pegs"),
    (2, False, "{A} belongs on {AP} and {B} belongs on {BP}; put them there"),
    (2, False, "put all nuts onto the correct pegs"),
    (2, False, "put {A} on {Ap} and {B} on {Bp}, whichever order you like"),
    (2, False, "I'd like {A} and {B} both mounted on their own pegs"),
    (2, False, "end state: {A} on {AP} and {B} on {BP}"),
    (2, False, "both: {A} on {AP}, {B} on {BP}"),
    (2, False, "set the two nuts on their own pegs"),
    (2, False, "every ring should end up on its own post"),
    # ---- both, ordered
    (2, True, "put {A} on {Ap}, then {B} on {Bp}"),
    (2, True, "first {A} onto {AP}, then {B} onto {BP}"),
    (2, True, "{v} {A} on {Ap} first, and {B} on {Bp} after"),
    (2, True, "put {B} on {BP} after you put {A} on {AP}"),
    (2, True, "before putting {B} on {BP}, put {A} on {AP}"),
    (2, True, "put {B} on {Bp}, but first put {A} on {Ap}"),
    (2, True, "put the nuts on their pegs, {A} first"),
    (2, True, "start by putting {A} on {Ap}, then put the other nut on its peg"),
    (2, True, "once {A} is on {AP}, put {B} on {BP}"),
    (2, True, "put {A} on {Ap}. after that, put {B} on {Bp}"),
    (2, True, "put both nuts on their pegs, with {B} last"),
    (2, True, "{A} goes on its peg first, then {B} on its peg"),
    (2, True, "insert {A} onto {Ap} and then {B} onto {Bp}"),
    (2, True, "put {A} on {Ap}; when that's done, put {B} on {Bp}"),
    (2, True, "first the {a} nut, then the {b} nut, each on its own peg"),
    (2, True, "could you put {A} on {Ap} and then {B} on {Bp}?"),
    (2, True, "put {A} on its peg before {B}"),
    (2, True, "put {B} on its peg only after {A} is on {AP}"),
    (2, True, "{A} onto {AP} first, {B} onto {BP} second"),
    (2, True, "put {A} on its peg, and afterwards the other nut on its peg"),
    (2, True, "save {B} for last; {A} goes on {AP} first"),
    (2, True, "in this order: {A}, then {B}, each onto its matching peg"),
    (2, True, "mount {A} first and {B} second, each on its peg"),
    (2, True, "put {A} on {AP} and, once it's seated, {B} on {BP}"),
    (2, True, "I want {A} on {AP} before {B} goes on {BP}"),
    (2, True, "put {A} and then {B} on their pegs"),
    (2, True, "put {A} on its peg. next, {B} on its peg"),
    (2, True, "{A} first and then {B}, on their respective pegs"),
    (2, True, "mount {A} on {Ap}, and follow it with {B} on {Bp}"),
]


def nut_positive(spec, rng: random.Random, vocab: TaskVocabulary):
    n, ordered, frame = spec
    nuts = rng.sample(NUTS, 2)
    goal_nuts, rest = nuts[:n], nuts[n:]
    fill = {"v": rng.choice(NUT_VERBS_ON)}
    for slot, o in zip("AB", goal_nuts):
        fill[slot] = nut_np(o, rng)
        fill[slot + "P"] = peg_named(o, rng)
        fill[slot + "p"] = rng.choice([peg_named(o, rng), peg_named(o, rng), "its peg", "its own peg",
                                       "the matching peg"])
        fill[slot.lower()] = SHAPE[o]
    for o in rest:
        fill["X"] = nut_np(o, rng)
    text = frame.format(**fill)
    goals = [vocab.goal("insert", (o, PEG_OF[o])) for o in goal_nuts]
    return text, goals, ordered


def nut_negatives(rng: random.Random, vocab: TaskVocabulary):
    out = []
    oov_nuts = ["hex nut", "hexagonal nut", "triangular nut", "star-shaped nut", "bolt", "washer", "screw",
                "oval ring"]
    oov_places = ["table", "hex peg", "triangular peg", "blue peg", "third peg", "tray"]
    cands = []
    for o in oov_nuts:
        key = o.replace(" ", "_").replace("-", "_")
        for p in NUTS:
            peg = PEG_OF[p]
            cands += [(f"put the {o} on the {SHAPE[p]} peg", [f"on_peg({key},{peg})"]),
                      (f"slide the {o} onto the {SHAPE[p]} post", [f"on_peg({key},{peg})"])]
        cands += [(f"mount the {o} on its peg", [f"on_peg({key},{key}_peg)"]),
                  (f"could you fit the {o} onto its rod?", [f"on_peg({key},{key}_rod)"])]
    for pl in oov_places:
        key = pl.replace(" ", "_")
        for n in NUTS:
            cands += [(f"put {nut_np(n, rng)} on the {pl}", [f"on_peg({n},{key})"]),
                      (f"place {nut_np(n, rng)} onto the {pl}", [f"on_peg({n},{key})"])]
    out += _pick_spread(cands, 35, rng, "out_of_vocabulary", key=lambda x: x[0].split()[-1])

    missing = ["tighten {A}", "spin {A}", "flip {A} over", "rotate {A} by forty-five degrees",
               "push {A} to the edge of the table", "wipe {P}", "polish {P}", "shake {A}", "loosen {A}",
               "hand me {A}", "weigh {A}", "clean {P}", "bend {P}", "knock over {P}", "roll {A} across the table",
               "could you spin {A} around a few times?", "wipe {A} clean", "turn {A} so its flat side faces up",
               "tap {A} against {P}", "paint {A}"]
    cands = []
    for f in missing:
        for n in NUTS:
            for _ in range(2):
                cands.append((f.format(A=nut_np(n, rng), P=peg_named(n, rng)), None))
    out += _pick_spread(cands, 33, rng, "missing_skill", key=lambda x: x[0].split()[0])

    imp = []
    for a, b in itertools.permutations(NUTS, 2):
        sa, sb = SHAPE[a], SHAPE[b]
        A, B = nut_np(a, rng), nut_np(b, rng)
        wrong = [f"on_peg({a},{PEG_OF[b]})"]
        for pw in (f"the {sb} peg", f"the {sb} post", f"the {sb} rod"):
            imp += [(f"put {A} on {pw}", wrong), (f"slide the {sa} nut onto {pw}", wrong),
                    (f"the {sa} ring goes on {pw}", wrong)]
        imp += [(f"put {A} on the {sb} peg and {B} on the {sa} peg", [wrong[0], f"on_peg({b},{PEG_OF[a]})"]),
                (f"swap them: the {sa} nut on the {sb} post, the {sb} nut on the {sa} post",
                 [wrong[0], f"on_peg({b},{PEG_OF[a]})"]),
                (f"put {A} on both pegs at once", [f"on_peg({a},{PEG_OF[a]})", wrong[0]]),
                (f"mount the {sa} nut on the {sa} peg and on the {sb} peg at the same time",
                 [f"on_peg({a},{PEG_OF[a]})", wrong[0]]),
                (f"put both nuts on the {sa} peg", [f"on_peg({a},{PEG_OF[a]})", f"on_peg({b},{PEG_OF[a]})"]),
                (f"stack both rings together on the {sa} rod",
                 [f"on_peg({a},{PEG_OF[a]})", f"on_peg({b},{PEG_OF[a]})"]),
                (f"could you fit {A} onto the {sb} peg?", wrong),
                (f"I want the {sa} nut sitting on the {sb} peg", wrong),
                (f"insert the {sa} one onto the {sb} rod, please", wrong)]
    out += _pick_spread(imp, 35, rng, "impossible", key=lambda x: x[0][:8])

    empty = ["never mind", "do nothing", "leave the nuts where they are", "don't move anything", "stop",
             "nothing to assemble right now", "just wait", "forget it", "no task for now, thanks",
             "leave {A} alone", "don't touch {A}", "hold off for the moment", "stay still",
             "keep both pegs empty", "cancel that", "that's all, nothing else to do",
             "don't put anything on the pegs", "the table is fine as it is", "leave {A} on the table",
             "all done, no action needed"]
    cands = []
    for f in empty:
        if "{A}" in f:
            cands += [(f.format(A=nut_np(n, rng)), None) for n in NUTS]
        else:
            cands.append((f, None))
    out += _pick_spread(cands, 22, rng, "empty", key=lambda x: x[0][:10])
    return out


# ====================================================================================== common
def _pick_spread(cands, k, rng: random.Random, kind: str, key):
    """k distinct candidates, spread over the groups that ``key`` forms (round robin over shuffled groups)."""
    seen, uniq = set(), []
    for c in cands:
        if norm(c[0]) not in seen:
            seen.add(norm(c[0]))
            uniq.append(c)
    groups: dict[str, list] = {}
    for c in uniq:
        groups.setdefault(key(c), []).append(c)
    order = sorted(groups)
    for g in order:
        rng.shuffle(groups[g])
    rng.shuffle(order)
    picked = []
    while len(picked) < k and any(groups[g] for g in order):
        for g in order:
            if groups[g] and len(picked) < k:
                picked.append(groups[g].pop())
    assert len(picked) == k, (kind, len(picked), k)
    return [(text, kind, goals) for text, goals in picked]


def build(task: str, rng: random.Random):
    vocab = TaskVocabulary.load(ROOT / "sim" / "tasks" / task / "vocabulary.yaml")
    if task == "stack_three":
        frames = [(2, f) for f in STACK2] + [(3, f) for f in STACK3]
        make, negs = (lambda f: stack_positive(f, rng, vocab)), stack_negatives
    elif task == "pick_place_bins":
        frames, make, negs = BINS, (lambda f: bins_positive(f, rng, vocab)), bins_negatives
    else:
        frames, make, negs = NUTS_FRAMES, (lambda f: nut_positive(f, rng, vocab)), nut_negatives
    n_frames = len({f[-1] for f in frames})
    assert n_frames == len(frames), f"{task}: duplicate frames"

    lines, seen = [], set()
    order = list(range(len(frames)))
    tries = 0
    while len(lines) < N_POS:
        rng.shuffle(order)
        for i in order:
            if len(lines) >= N_POS:
                break
            for _ in range(6):
                tries += 1
                text, goals, ordered = make(frames[i])
                text = style(text, rng)
                if norm(text) in seen:
                    continue
                seen.add(norm(text))
                assert vocab.impossibility(goals) is None, (task, text, goals)
                if task == "stack_three":
                    assert list(vocab.canonical_order(goals)) == goals and ordered
                lines.append({"task": task, "instruction": text, "goals": goals, "ordered": ordered,
                              "kind": "paraphrase", "source": SOURCE})
                break
        assert tries < 100000, task

    neg_lines = []
    for text, kind, intended in negs(rng, vocab):
        if kind == "impossible":
            assert intended and vocab.impossibility(intended) is not None, (task, text, intended)
        if kind == "out_of_vocabulary" and intended:
            assert vocab.impossibility(intended) is not None, (task, text, intended)
        text = style(text, rng)
        assert norm(text) not in seen, (task, text)
        seen.add(norm(text))
        neg_lines.append({"task": task, "instruction": text, "expect": "refuse", "kind": kind, "source": SOURCE})

    all_lines = lines + neg_lines
    rng.shuffle(all_lines)
    return all_lines, n_frames


def main() -> None:
    master = random.Random(SEED)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for task in ("stack_three", "pick_place_bins", "nut_assembly"):
        rng = random.Random(master.randrange(2**32))
        lines, n_frames = build(task, rng)
        path = OUT_DIR / f"{task}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        counts: dict[str, int] = {}
        for x in lines:
            counts[x["kind"]] = counts.get(x["kind"], 0) + 1
        pos = [x for x in lines if x["kind"] == "paraphrase"]
        assert len(pos) >= 360 and len({norm(x["instruction"]) for x in pos}) == len(pos)
        neg = [x for x in lines if x.get("expect") == "refuse"]
        assert len(neg) >= 120 and all(counts[k] >= 25 for k in ("out_of_vocabulary", "missing_skill", "impossible"))
        assert counts["empty"] >= 15
        n_ord = sum(1 for x in pos if x["ordered"])
        print(f"{path.relative_to(ROOT)}: {len(lines)} lines, {counts}, ordered positives {n_ord}, "
              f"positive frames {n_frames}")


if __name__ == "__main__":
    main()
