"""The phrasing grammar: instructions for goals, drawn at random, for any :class:`TaskVocabulary`.

It makes training data for a learned grounder and draws evaluation instructions. Everything is driven by the
vocabulary's fields: object and place words and synonyms, skill words, ``own_place``, ``rules`` and
``ordered_by_support``; no task name is read. Two task shapes follow from the fields:

* **towers** (``ordered_by_support``, objects go on objects): ``"stack the red cube on the blue one, then the
  green block on top"``, ``"build a tower: blue at the bottom, then red, then green"``, ``"from top to bottom:
  green, red, blue"``, ``"put the blue cube at the bottom, the red cube in the middle and the green one on
  top"``, ``"pick up the red cube and put it on the blue one"``;
* **own places** (every object has an ``own_place``): ``"put the milk, the can and the bread into their bins"``,
  ``"put everything away except the bread"``, ``"put the square nut on its peg, then the other one"``,
  ``"before putting the can away, put the milk in its bin"`` (milk first), ``"grab the milk and the can and
  put them in their bins"``. Whether a place noun takes ``in``/``into`` or ``on``/``onto``/``over`` follows the
  goal predicate's name (``in_...`` is a container).

Conventions:

* ``ordered`` is True, for ``ordered_by_support`` vocabularies, when there are two goals or more; otherwise when
  the words order the goals ("then", "after that", "first ... finally", "before", "after", "followed by"). A
  plain list ("the milk, the can and the bread") is unordered.
* Each random choice of a *construction* (a sentence frame, a connective, a list form, a politeness form, an
  own-place form) is recorded by name (:func:`phrase_traced`); word choices (synonyms, verbs, prepositions), case
  and final punctuation are not constructions.
* **Phenomena.** Every semantic phenomenon has several surface forms in the train split: inverse relations
  ("under"/"underneath", "the blue cube supports/carries/holds the red one"), end states ("I want/I'd like/I need
  X on Y", "X should be/end up/sit on Y", "the goal is: ...", "when you're done, ...", "make sure (that) X is on
  Y"), chains ("red on green on blue", "blue under green under red"), direction lists (prefix and suffix, "a tower
  of blue, red and green, from the bottom up"), positions, ordinal towers ("blue first, red second, green last",
  "first blue, then red, finally green"), elided cubes ("stack all three with blue at the bottom and green on
  top"), pronouns ("... and put it on ...", two sentences, "on that"), ellipsis ("then the can", "do the same
  with the can"), order words (then, next, after that, afterwards, when that's done, and only then, finally,
  lastly, last of all, before, after, "after you've ...", "but before that", "start with X", "X comes first",
  "in that order"), scope ("everything", "all of them", "all the items", "only/just the X", "except/but/other
  than/excluding/aside from/but not X", "leave X where it is/alone/out"), places ("its bin", "its own bin", "the
  right bin", "where it belongs", "its place/home/spot", "away", "back", "the milk bin"), framings (imperative,
  please, could/can/would you, I'd like you to, your task is to, time to, we need to, go ahead and, let's,
  thanks, if you can) and fillers (now, carefully, gently, quickly, right away, too, here, ...).
* **The held-out part** (:data:`HELDOUT_CONSTRUCTIONS`) holds out *surface forms only*, never a phenomenon: each
  held-out construction has a train construction that means the same (:data:`HELDOUT_ALTERNATIVES`). It is only
  produced with ``split="heldout"``, and every heldout instruction uses at least one of it: "I need you to ..."
  (train: "I'd like you to"), "..., when you get a chance" (train: "..., please"), "once that's done" / "once
  you've done that" (train: "when that's done"), "..., but first ..." (train: "..., but before that, ..."),
  "once you've <done A>, <do B>" (train: "after you've <done A>, ..."/"after <doing A>, ..."), "their
  respective bins" (train: "their bins"), "the correct peg" (train: "the right peg"), "apart from" (train:
  "except"), "A along with B" (train: "A as well as B"), "X goes/should go on Y" (train: "X should be/end up on
  Y"), "below"/"beneath" (train: "under"/"underneath"), the prefixed positions "at the bottom the blue cube"
  (train: "the blue cube at the bottom"), "starting from the bottom" (train: "from bottom to top") and "make it
  so that X is on Y" (train: "make sure that X is on Y"). Vocabulary words are never held out: every one of them
  is produced by the train split.
* :func:`negatives` draws instructions that must be refused; their distractor words (:data:`DISTRACTORS`)
  differ between the splits.

Everything is deterministic given the ``numpy.random.Generator``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from tandem.core.errors import ConfigError
from tandem.core.vocabulary import TaskVocabulary, parse_goal

SPLITS: tuple[str, ...] = ("train", "heldout")

#: Constructions produced only with ``split="heldout"`` (see the module docstring).
HELDOUT_CONSTRUCTIONS: frozenset[str] = frozenset({
    "polite.need", "polite.when_chance", "conn.once_done", "frame.but_first", "frame.once_prefix",
    "own.respective", "own.correct", "except.apart_from", "list.along_with", "frame.goes", "rel.below",
    "tower.positions_prefix", "dir.starting_from", "end.make_so",
})

#: For each held-out construction, a train construction that says the same thing in other words (the phenomenon
#: the held-out form expresses is always learnt from train).
HELDOUT_ALTERNATIVES: dict[str, str] = {
    "polite.need": "polite.id_like", "polite.when_chance": "polite.please_post", "conn.once_done": "conn.when_done",
    "frame.but_first": "frame.before_that", "frame.once_prefix": "frame.after_prefix", "own.respective": "own.its",
    "own.correct": "own.right", "except.apart_from": "except.except", "list.along_with": "list.as_well_as",
    "frame.goes": "end.should", "rel.below": "rel.under", "tower.positions_prefix": "tower.positions",
    "dir.starting_from": "dir.plain", "end.make_so": "end.so_that",
}

#: Kinds of instruction :func:`negatives` draws, each one the reference reading must refuse.
NEGATIVE_KINDS: tuple[str, ...] = ("out_of_vocabulary", "missing_skill", "impossible", "empty")

#: Distractor words of :func:`negatives` per split: none is a vocabulary word of a shipped task, and the two
#: splits share none.
DISTRACTORS: dict[str, dict[str, tuple[str, ...]]] = {
    "train": {
        "colours": ("purple", "yellow", "orange", "pink", "black", "beige", "turquoise", "maroon"),
        "things": ("apple", "bowl", "cup", "plate", "banana", "bottle", "fork", "orange juice", "knife", "jar"),
        "places": ("fridge", "shelf", "drawer", "table", "floor", "sofa", "bucket", "chair"),
        "ordinals": ("third", "fourth"),
        "verbs": ("pour", "open", "throw", "wipe", "unscrew", "push", "pull", "kick", "cut", "wash", "stir", "heat",
                  "clean", "break", "twist", "press", "slice", "toss"),
        "fixtures": ("drawer", "table", "door", "lid", "faucet", "light"),
        "empty": ("", " ", "hello", "hi", "do nothing", "nothing", "thanks", "ok", "please"),
    },
    "heldout": {
        "colours": ("white", "brown", "grey", "violet", "golden", "silver", "cyan", "magenta"),
        "things": ("mug", "spoon", "sponge", "lemon", "teapot", "kettle", "towel", "pear", "whisk", "glass"),
        "places": ("sink", "cupboard", "tray", "basket", "counter", "pantry", "crate", "windowsill"),
        "ordinals": ("fifth", "sixth"),
        "verbs": ("shake", "fold", "squeeze", "close", "rotate", "flip", "spin", "paint", "roll", "crush", "scrub",
                  "chop", "drag", "hang", "swap", "tilt", "fill", "sweep"),
        "fixtures": ("window", "tap", "oven", "curtain", "dishwasher", "microwave"),
        "empty": ("\t  ", "hey there", "never mind", "thank you", "good morning", "okay", "just wait"),
    },
}

# ------------------------------------------------------------------ English morphology
_IRREGULAR: dict[str, tuple[str, ...]] = {  # verb -> (gerund, past, participle)
    "put": ("putting", "put", "put"), "set": ("setting", "set", "set"), "bring": ("bringing", "brought", "brought"),
    "build": ("building", "built", "built"), "stand": ("standing", "stood", "stood"),
    "take": ("taking", "took", "taken"), "slide": ("sliding", "slid", "slid"), "fit": ("fitting", "fitted", "fit"),
    "throw": ("throwing", "threw", "thrown"), "cut": ("cutting", "cut", "cut"), "spin": ("spinning", "spun", "spun"),
    "shake": ("shaking", "shook", "shaken"), "tidy": ("tidying", "tidied", "tidied"),
    "drop": ("dropping", "dropped", "dropped"), "grab": ("grabbing", "grabbed", "grabbed"),
}
_CVC = re.compile(r"^[^aeiou]*[aeiou][^aeiouwxy]$")


def verb_forms(phrase: str) -> tuple[str, ...]:
    """The forms of a verb phrase, its first word inflected: ``(base, third person, gerund, past, participle)``,
    e.g. ``verb_forms("pick up") == ("pick up", "picks up", "picking up", "picked up", "picked up")``."""
    head, *rest = phrase.split()
    tail = "".join(" " + w for w in rest)
    if head in _IRREGULAR:
        ing, past, part = _IRREGULAR[head]
    elif head.endswith("ie"):
        ing, past = head[:-2] + "ying", head + "d"
        part = past
    elif head.endswith("e") and not head.endswith("ee"):
        ing, past = head[:-1] + "ing", head + "d"
        part = past
    elif head.endswith("y") and len(head) > 1 and head[-2] not in "aeiou":
        ing, past = head + "ing", head[:-1] + "ied"
        part = past
    elif _CVC.match(head):
        ing, past = head + head[-1] + "ing", head + head[-1] + "ed"
        part = past
    else:
        ing, past = head + "ing", head + "ed"
        part = past
    if head.endswith(("s", "x", "z", "ch", "sh")):
        third = head + "es"
    elif head.endswith("y") and len(head) > 1 and head[-2] not in "aeiou":
        third = head[:-1] + "ies"
    else:
        third = head + "s"
    return tuple(w + tail for w in (head, third, ing, past, part))


def plural(noun: str) -> str:
    """``"box"`` -> ``"boxes"``, ``"peg"`` -> ``"pegs"`` (the plural of the last word)."""
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"


_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six")
_AWAY_VERBS = ("put", "store", "stow", "tidy")       # "put the milk away"
_BARE_VERBS = ("sort", "store", "stow", "tidy")      # "sort the milk and the can" (own places implied)
_TO_VERBS = ("bring", "return", "move", "take")      # "return the can to its bin"
_FRAME_ONLY = ("build", "tower", "tidy")             # not used as "<verb> X on Y"
_TOWER_NOUNS = ("tower", "stack", "pile")            # "build a tower"
_TOWER_VERBS = ("stack", "pile")                     # "stack the cubes from bottom to top: ..."


def _cls_nouns(vocab: TaskVocabulary) -> list[str]:
    """Last words that name two objects or more (``cube``, ``nut``), but not ``one``; else generic nouns."""
    seen: dict[str, set[str]] = {}
    for obj, phrases in vocab.objects.items():
        for p in phrases:
            w = p.split()
            if len(w) > 1:
                seen.setdefault(w[-1], set()).add(obj)
    shared = [w for w, objs in seen.items() if len(objs) > 1 and w != "one"]
    return shared or ["item", "object", "thing"]


def place_nouns(vocab: TaskVocabulary) -> list[str]:
    """The last words of the place phrases (``bin``; ``peg``, ``post``, ``rod``), in file order."""
    out: list[str] = []
    for phrases in vocab.places.values():
        for p in phrases:
            if p.split()[-1] not in out:
                out.append(p.split()[-1])
    return out


def _shape(vocab: TaskVocabulary) -> str:
    if vocab.ordered_by_support and not vocab.places:
        return "tower"
    if vocab.places and vocab.own_place and set(vocab.own_place) == set(vocab.objects):
        return "own_place"
    raise ConfigError(f"phrasing supports towers (ordered_by_support, no places) and tasks where every object has "
                      f"an own_place; vocabulary of {vocab.task!r} is neither")


def sample_goals(vocab: TaskVocabulary, rng: np.random.Generator) -> tuple[str, ...]:
    """A random satisfiable goal sequence, in ``vocab.canonical_order``: a tower of 2 to min(4, n) objects
    (1 to 3 goals; stack_three: 1 or 2), or 1 to n objects sent to their own places in random order.

    Raises:
        ConfigError: the vocabulary has neither shape (see the module docstring).
    """
    shape = _shape(vocab)
    objs = list(vocab.objects)
    skill = vocab.goal_skills[0]
    order = [objs[i] for i in rng.permutation(len(objs))]
    if shape == "tower":
        height = int(rng.integers(2, min(4, len(objs)) + 1))
        tower = order[:height]
        goals = tuple(vocab.goal(skill, (tower[i], tower[i - 1])) for i in range(1, height))
    else:
        k = int(rng.integers(1, len(objs) + 1))
        goals = tuple(vocab.goal(skill, (o, vocab.own_place[o])) for o in order[:k])
    assert vocab.impossibility(goals) is None, goals
    return vocab.canonical_order(goals)


# ------------------------------------------------------------------ the grammar
class _Grammar:
    """One draw: the vocabulary's word lists, the rng, the split and the constructions used so far."""

    def __init__(self, vocab: TaskVocabulary, rng: np.random.Generator, split: str):
        if split not in SPLITS:
            raise ConfigError(f"split {split!r} is not one of {list(SPLITS)}")
        self.v, self.rng, self.split = vocab, rng, split
        self.shape = _shape(vocab)
        self.used: list[str] = []
        self.override: dict[str, str] = {}
        self.skill = vocab.goal_skills[0]
        words = vocab.skill_words.get(self.skill) or (self.skill,)
        self.goal_words = list(words)
        self.rel_verbs = [w for w in words if w not in _FRAME_ONLY] or list(words)
        self.away_verbs = [w for w in words if w in _AWAY_VERBS]
        self.bare_verbs = [w for w in words if w in _BARE_VERBS]
        self.pick_verbs = [w for s, ws in vocab.skill_words.items() if s not in vocab.goal_skills for w in ws]
        self.nouns = _cls_nouns(vocab)
        self.pnouns = place_nouns(vocab)
        template = vocab.skills[self.skill].split("(")[0]
        self.container = template.startswith("in")

    # -- random helpers
    def choice(self, seq: Sequence):
        return seq[int(self.rng.integers(len(seq)))]

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, options: Sequence[str], weights: Sequence[float] | None = None) -> str:
        """Choose a construction among ``options`` allowed in this split and record it."""
        w = list(weights) if weights is not None else [1.0] * len(options)
        names, ws = [], []
        for o, x in zip(options, w):
            held = o in HELDOUT_CONSTRUCTIONS
            if held and self.split == "train":
                continue
            names.append(o)
            ws.append(x * (3.0 if held else 1.0))
        p = np.asarray(ws, dtype=float)
        name = names[int(self.rng.choice(len(names), p=p / p.sum()))]
        self.used.append(name)
        return name

    # -- words
    def obj(self, name: str, article: bool = True) -> str:
        if name in self.override:
            return "the " + self.override[name]
        w = self.choice(self.v.objects[name])
        if article or len(w.split()) > 1 or self.coin(0.85):
            return "the " + w
        return w

    def objs(self, names: Sequence[str]) -> str:
        """A list of noun phrases: "A", "A and B", "A, B and C", "A, B, and C", "A as well as B", ..."""
        items = [self.obj(n) for n in names]
        if len(items) == 1:
            return items[0]
        form = self.pick(["list.and", "list.oxford", "list.as_well_as", "list.plus", "list.along_with"],
                         [4, 2, 1, 1, 1])
        if form == "list.oxford" and len(items) > 2:
            return ", ".join(items[:-1]) + ", and " + items[-1]
        last = {"list.as_well_as": " as well as ", "list.plus": " plus ",
                "list.along_with": " along with "}.get(form, " and ")
        return ", ".join(items[:-1]) + last + items[-1]

    def rest_np(self) -> str:
        self.pick(["rest.other"])
        n = self.choice(self.nouns)
        return self.choice(["the other one", "the remaining one", "the last one", f"the remaining {n}",
                            f"the other {n}", f"the last {n}"])

    def prep(self, verb: str = "") -> str:
        if self.container:
            base = ["in", "into", "inside"]
        else:
            base = ["on", "onto", "over"] if self.shape == "own_place" else \
                ["on", "onto", "on top of", "atop", "upon", "above"]
        if verb and verb.split()[0] in _TO_VERBS:
            base = ["to", base[1]]
        return self.choice(base)

    def own(self, obj: str | None, plural_: bool, verb: str) -> str:
        """An own-place target for ``obj`` (or, plural, for several objects): with its preposition."""
        n = self.choice(self.pnouns)
        ns = plural(n)
        opts = ["own.its", "own.its_own", "own.right", "own.the_noun", "own.where", "own.correct", "own.place"]
        wts = [5, 2, 2, 1, 2, 1, 2]
        if plural_:
            opts, wts = [*opts, "own.respective"], [*wts, 1]
        if obj is not None and not plural_:
            opts, wts = [*opts, "own.explicit"], [*wts, 5]
        form = self.pick(opts, wts)
        if form == "own.where":
            return self.choice(["where they belong", "where they go", "where they should be"] if plural_ else
                               ["where it belongs", "where it goes", "where it should be"])
        if form == "own.place":
            return self.prep(verb) + " " + self.choice(
                ["their places", "their own places", "their proper places", "their homes", f"their designated {ns}"]
                if plural_ else ["its place", "its own place", "its proper place", "its home", "its spot",
                                 f"its designated {n}"])
        p = self.prep(verb)
        if form == "own.explicit":
            return f"{p} the {self.choice(self.v.places[self.v.own_place[obj]])}"
        phrase = {
            "own.its": f"their {ns}" if plural_ else f"its {n}",
            "own.its_own": f"their own {ns}" if plural_ else f"its own {n}",
            "own.right": self.choice([f"the right {ns}", f"the matching {ns}"] if plural_ else
                                     [f"the right {n}", f"the matching {n}"]),
            "own.the_noun": f"the {ns}" if plural_ else f"the {n}",
            "own.correct": self.choice([f"the correct {ns}", f"their correct {ns}"] if plural_ else
                                       [f"the correct {n}", f"its correct {n}"]),
            "own.respective": f"their respective {ns}",
        }[form]
        return f"{p} {phrase}"

    def vp(self, obj_text: str, obj: str | None, plural_: bool, form: int = 0, allow_bare: bool = True) -> str:
        """``"<verb> <objects> <target>"`` for own places; ``form`` indexes :func:`verb_forms` (0 base, 2 gerund,
        4 participle). ``allow_bare``: the target may be left out ("sort the milk"); not where a noun phrase
        follows with no order word between (it would join the list)."""
        back = [w for w in self.rel_verbs if w in ("put", "return", "bring", "move", "place")]
        styles = ["target"] + (["away", "particle"] if self.away_verbs else []) + \
            (["bare"] if self.bare_verbs and allow_bare else []) + (["back"] if back else [])
        style = self.choice(styles) if self.coin(0.35) else "target"
        if style == "back":
            verb = self.choice(back)
            self.pick(["own.back"])
            if allow_bare and self.coin(0.4):
                return f"{verb_forms(verb)[form]} {obj_text} back"
            return f"{verb_forms(verb)[form]} {obj_text} back {self.own(obj, plural_, verb)}"
        if style == "target":
            verb = self.choice(self.rel_verbs)
            return f"{verb_forms(verb)[form]} {obj_text} {self.own(obj, plural_, verb)}"
        if style == "bare":
            verb = self.choice(self.bare_verbs)
            particle = " up" if verb == "tidy" else ""
            self.pick(["own.bare"])
            return f"{verb_forms(verb)[form]}{particle} {obj_text}"
        verb = self.choice(self.away_verbs)
        self.pick(["own.away"])
        if style == "away":
            return f"{verb_forms(verb)[form]} {obj_text} away"
        return f"{verb_forms(verb)[form]} away {obj_text}"

    def pick_np(self, obj_text: str) -> str:
        verb = self.choice(self.pick_verbs)
        if verb == "pick" or (verb == "pick up" and self.coin(0.3)):
            return f"pick {obj_text} up"
        return f"{verb} {obj_text}"

    # -- connectives
    def conn(self, np_next: bool) -> str:
        """A connective that orders the next step after the previous one."""
        opts = ["conn.then", "conn.after_that", "conn.next", "conn.afterwards", "conn.sentence", "conn.once_done",
                "conn.when_done", "conn.only_then"]
        wts = [6, 2, 2, 1, 2, 1, 1, 1]
        if np_next:
            opts, wts = [*opts, "conn.followed_by"], [*wts, 1]
        form = self.pick(opts, wts)
        return self.choice({
            "conn.then": [", then ", " then ", ", and then ", " and then ", "; then "],
            "conn.after_that": [", after that ", ", and after that ", "; after that, ", ", after that, "],
            "conn.next": [", next ", "; next, ", ", next, "],
            "conn.afterwards": [", afterwards ", ", and afterwards "],
            "conn.sentence": [". Then ", ". After that, ", ". Next, ", ". Afterwards, "],
            "conn.followed_by": [", followed by "],
            "conn.once_done": [", once that's done, ", ". Once that is done, ", "; once that's done, ",
                               ". Once you've done that, ", ", and once that's done, "],
            "conn.when_done": [", when that's done, ", ". When that's done, ", ", and when you're done with that, ",
                               ". When you've done that, ", "; after you've done that, ", ". After doing that, "],
            "conn.only_then": [", and only then ", ", and only then, ", "; only then "],
        }[form])

    def first_mark(self) -> str:
        """"first " (the body stays imperative) or a fronted marker ("to start, "; it does not)."""
        self.pick(["mark.first"])
        return self.choice(["first ", "first ", "first, ", "first of all, ", "to start, ", "firstly, ", "to begin, "])

    def final_conn(self) -> str:
        self.pick(["mark.finally"])
        return self.choice([", and finally ", ", finally ", ". Finally, ", ", lastly ", ". Lastly, ",
                            ", then finally ", ", and last of all ", ". Last of all, ", ", and then finally "])

    # ------------------------------------------------------------------ own-place bodies
    def own_step(self, obj: str, first: bool, verb_before: bool, last_rest: bool,
                 need_target: bool = False) -> tuple[str, bool]:
        """One step for ``obj``; returns (text, whether it carries a verb). ``need_target``: the step must end
        with its target (another step follows with no order word between)."""
        opts = ["step.full", "step.pronoun", "frame.goes", "end.should"]
        wts = [6, 2, 1, 1]
        if not first and verb_before:
            opts, wts = [*opts, "step.np", "ref.same"], [*wts, 3, 1]
        form = self.pick(opts, wts)
        text = self.rest_np() if last_rest and self.coin(0.5) else self.obj(obj)
        if form == "ref.same":
            same = self.choice(["do the same with ", "same with ", "the same for ", "do the same for "]) + text
            if need_target:
                return f"{same} {self.own(obj, False, 'put')}", False
            return same, False
        if form == "end.should":
            return f"{text} {self.choice(['should be', 'should end up', 'belongs', 'should sit'])} " \
                   f"{self.own(obj, False, 'put')}", False
        if form == "step.full":
            return self.vp(text, obj, False, allow_bare=not need_target), True
        if form == "step.pronoun":
            verb = self.choice(self.rel_verbs)
            return f"{self.pick_np(text)}{self.choice([' and ', ' and ', '. '])}{verb} it " \
                   f"{self.own(obj, False, verb)}", True
        if form == "frame.goes":
            return f"{text} {self.choice(['goes', 'should go'])} {self.own(obj, False, 'put')}", False
        if self.coin(0.5) and not need_target:
            return text, False
        return f"{text} {self.own(obj, False, 'put')}", False

    def own_unordered(self, objs: list[str]) -> tuple[str, bool]:
        k, n = len(objs), len(self.v.objects)
        opts = ["frame.list", "frame.steps_and", "frame.pronoun", "frame.goes", "frame.state"]
        wts = [6, 3, 3, 1, 3]
        if k == n:
            opts, wts = [*opts, "frame.everything"], [*wts, 3]
        if 1 <= n - k <= 2:
            opts, wts = [*opts, "frame.except", "frame.leave"], [*wts, 3, 2]
        if k == n and k >= 2:
            opts, wts = [*opts, "frame.rest"], [*wts, 1]
        form = self.pick(opts, wts)
        plural_ = k > 1
        if form == "frame.list":
            if k == 1 and self.coin(0.3):
                self.pick(["scope.only"])
                return self.vp(self.choice(["only ", "just "]) + self.obj(objs[0]), objs[0], False), True
            return self.vp(self.objs(objs), objs[0], plural_), True
        if form == "frame.state":
            if k == n and self.coin(0.3):
                all_np = self.all_np(n)
                each = all_np.split()[0] in ("each", "every")
                clauses = [(all_np, None, not each)]
            elif self.coin(0.5):
                clauses = [(self.objs(objs), objs[0], plural_)]
            else:
                clauses = [(self.obj(o), o, False) for o in objs]
            return self.state([(np_, self.own(o, pl, "put"), pl) for np_, o, pl in clauses])
        if form == "frame.leave":
            excluded = [o for o in self.v.objects if o not in objs]
            excluded = [excluded[i] for i in self.rng.permutation(len(excluded))]
            self.pick(["except.leave"])
            all_np = self.all_np(n)
            each = all_np.split()[0] in ("each", "every")
            ex_np = " and ".join(self.obj(o) for o in excluded)
            where = self.choice(["where they are", "alone", "out", "untouched", "as they are"] if len(excluded) > 1
                                else ["where it is", "alone", "out", "untouched", "as it is"])
            r = self.choice(["but", "ing", "out"])
            head = self.vp(all_np, None, not each)
            if r == "but":
                return f"{head}{self.choice([', but ', ' but ', ', and ', '. But '])}leave {ex_np} {where}", True
            if r == "ing":
                return f"{head}, leaving {ex_np} {where}", True
            return f"{head}{self.choice([', but ', ' and '])}leave out {ex_np}", True
        if form == "frame.goes":
            verb = "go" if plural_ else "goes"
            return f"{self.objs(objs)} {self.choice([verb, 'should go'])} {self.own(objs[0], plural_, 'put')}", False
        if form == "frame.pronoun":
            verb = self.choice(self.rel_verbs)
            pron = "them" if plural_ else "it"
            joiner = self.choice([" and ", ", and ", ", then "])
            if self.coin(0.3) and self.away_verbs:
                tail = f"{self.choice(self.away_verbs)} {pron} away"
                self.pick(["own.away"])
            else:
                tail = f"{verb} {pron} {self.own(None if plural_ else objs[0], plural_, verb)}"
            return f"{self.pick_np(self.objs(objs))}{joiner}{tail}", True
        if form == "frame.steps_and":
            parts, verb_before, first_verb = [], False, False
            for i, o in enumerate(objs):
                text, has_verb = self.own_step(o, i == 0, verb_before, False, need_target=i < len(objs) - 1)
                first_verb = first_verb or (i == 0 and has_verb)
                verb_before = verb_before or has_verb
                parts.append(text)
            if len(parts) == 1:
                return parts[0], first_verb
            return ", ".join(parts[:-1]) + self.choice([" and ", ", and "]) + parts[-1], first_verb
        if form == "frame.rest":
            head = objs[0]
            rest_np = self.choice(["everything else", "the rest", "all the others", "the others"])
            self.pick(["rest.everything_else"])
            if self.coin(0.5):
                return self.vp(f"{self.obj(head)} and {rest_np}", head, True), True
            return f"{self.vp(self.obj(head), head, False)}{self.choice([', and ', ' and '])}{rest_np}" \
                   f"{self.choice(['', ' too', ' as well'])}", True
        all_np = self.all_np(n)
        if form == "frame.everything":
            each = all_np.split()[0] in ("each", "every")
            return self.vp(all_np, None, not each), True
        excluded = [o for o in self.v.objects if o not in objs]
        excluded = [excluded[i] for i in self.rng.permutation(len(excluded))]
        word = self.pick(["except.except", "except.but", "except.other_than", "except.excluding",
                          "except.apart_from", "except.but_not", "except.aside"], [3, 2, 1, 1, 1, 1, 1])
        ex = {"except.except": self.choice(["except", "except for"]), "except.but": "but",
              "except.other_than": "other than", "except.excluding": "excluding",
              "except.apart_from": "apart from", "except.but_not": self.choice(["but not", ", but not"]),
              "except.aside": self.choice(["aside from", "save for"])}[word]
        each = all_np.split()[0] in ("each", "every")
        ex_np = self.objs(excluded)
        if self.coin(0.5):
            return f"{self.vp(all_np, None, not each)} {ex} {ex_np}", True
        verb = self.choice(self.rel_verbs)
        return f"{verb} {all_np} {ex} {ex_np} {self.own(None, not each, verb)}", True

    def state(self, clauses: list[tuple[str, str, bool]]) -> tuple[str, bool]:
        """An end state: clauses (subject, "<relation> <target>", plural) under one framing; (text, imperative)."""
        form = self.pick(["end.want", "end.goal", "end.should", "end.when_done", "end.so_that", "end.make_so"],
                         [3, 2, 3, 1, 2, 1])
        if form in ("end.want", "end.goal"):
            body = self.join_and([f"{s} {t}" for s, t, _ in clauses])
            pre = self.choice(["I want ", "I'd like ", "I need ", "I would like "] if form == "end.want" else
                              ["the goal is: ", "goal: ", "the goal is ", "in the end, "])
            return pre + body, False
        if form in ("end.should", "end.when_done"):
            body = self.join_and([f"{s} {self.choice(['should be', 'should end up', 'should sit'])} {t}"
                                  for s, t, _ in clauses])
            if form == "end.when_done":
                return self.choice(["when you're done, ", "when you are done, ", "once done, "]) + body, False
            return body, False
        body = self.join_and([f"{s} {self.choice(['are', 'end up', 'sit'] if pl else ['is', 'ends up', 'sits'])} {t}"
                              for s, t, pl in clauses])
        if form == "end.make_so":
            return "make it so that " + body, True
        return self.choice(["arrange things so that ", "make sure that ", "make sure ", "see to it that "]) + body, True

    def join_and(self, items: list[str]) -> str:
        if len(items) == 1:
            return items[0]
        return ", ".join(items[:-1]) + self.choice([" and ", ", and "]) + items[-1]

    def all_np(self, n: int) -> str:
        noun = self.choice(self.nouns)
        gen = self.choice(["item", "object", "thing"])
        opts = ["everything", "all the " + plural(noun), "all of the " + plural(noun), "each " + noun,
                "every " + noun, f"all {_NUMBERS[n]} {plural(noun)}" if n < len(_NUMBERS) else "everything",
                "all the " + plural(gen), "all of them", "all " + plural(gen), "each " + gen]
        if n == 2:
            opts += ["both " + plural(noun), "both the " + plural(noun)]
        return self.choice(opts)

    def own_ordered(self, objs: list[str]) -> tuple[str, bool]:
        k = len(objs)
        opts = ["frame.seq", "frame.first_finally", "frame.before_infix", "frame.after_infix", "frame.in_order",
                "frame.start_with"]
        wts = [6, 3, 2, 2, 2, 2]
        if k == 2:
            opts += ["frame.before_prefix", "frame.after_prefix", "frame.once_prefix", "frame.but_first",
                     "frame.before_that"]
            wts += [2, 1, 1, 1, 1]
        form = self.pick(opts, wts)
        n = len(self.v.objects)
        rest_ok = k == n  # the last object is then the only one left unnamed
        if form == "frame.in_order":
            order = self.choice([", in that order", " in that order", ", in this order", ", in exactly that order",
                                 " in the order I said"])
            return self.vp(self.objs(objs), objs[0], True) + order, True
        if form == "frame.start_with":
            a = self.obj(objs[0])
            r = self.choice(["start", "do", "comes", "np"])
            head = {"start": self.choice(["start with ", "begin with ", "start off with "]) + a,
                    "do": f"do {a} first", "comes": f"{a} {self.choice(['comes first', 'is first'])}",
                    "np": f"{a} first"}[r]
            parts = [head, self.vp(self.obj(objs[1]), objs[1], False)]
            for i, o in enumerate(objs[2:]):
                parts.append(self.own_step(o, False, True, rest_ok and i == k - 3)[0])
            return head + "".join(self.conn(False) + p for p in parts[1:]), r in ("start", "do")
        n = len(self.v.objects)
        rest_ok = k == n  # the last object is then the only one left unnamed
        if form in ("frame.seq", "frame.first_finally"):
            parts, has_verb, first_verb = [], False, False
            for i, o in enumerate(objs):
                text, hv = self.own_step(o, i == 0, has_verb, rest_ok and i == k - 1)
                first_verb = first_verb or (i == 0 and hv)
                has_verb = has_verb or hv
                parts.append(text)
            text = self.join_steps(parts, form == "frame.first_finally")
            return text, first_verb and not text.startswith(("first,", "first of", "to ", "firstly"))
        a, b = objs[0], objs[1]
        tail = ""
        if k > 2:
            steps = []
            for i, o in enumerate(objs[2:]):
                text, _ = self.own_step(o, False, True, rest_ok and i == k - 3)
                steps.append(text)
            tail = "".join(self.conn(False) + s for s in steps)
        if form == "frame.before_infix":
            head = self.vp(self.obj(a), a, False)
            r = self.choice(["np", "ing", "you"])
            other = self.obj(b) if r == "np" else self.vp(self.obj(b), b, False, form=2) if r == "ing" else \
                "you " + self.vp(self.obj(b), b, False)
            return f"{head} {self.choice(['before', 'prior to'] if r != 'you' else ['before'])} {other}{tail}", True
        if form == "frame.after_infix":
            head = self.vp(self.obj(b), b, False)
            r = self.choice(["np", "ing", "you"])
            other = self.obj(a) if r == "np" else self.vp(self.obj(a), a, False, form=2) if r == "ing" else \
                "you " + self.vp(self.obj(a), a, False)
            return f"{head} after {other}{tail}", True
        if form == "frame.before_prefix":
            r = self.choice(["ing", "you"])
            other = self.vp(self.obj(b), b, False, form=2) if r == "ing" else "you " + self.vp(self.obj(b), b, False)
            return f"before {other}, {self.vp(self.obj(a), a, False)}", False
        if form == "frame.after_prefix":
            r = self.choice(["ing", "done"])
            other = f"after {self.vp(self.obj(a), a, False, form=2)}" if r == "ing" else \
                f"after you{self.choice([chr(39) + 've', ' have'])} {self.vp(self.obj(a), a, False, form=4)}"
            return f"{other}, {self.vp(self.obj(b), b, False)}", False
        if form == "frame.once_prefix":
            other = f"once you{self.choice([chr(39) + 've', ' have'])} {self.vp(self.obj(a), a, False, form=4)}"
            return f"{other}, {self.vp(self.obj(b), b, False)}", False
        # frame.but_first / frame.before_that
        head = self.vp(self.obj(b), b, False)
        mark = self.choice([", but first ", ". But first, "] if form == "frame.but_first" else
                           [", but before that, ", ". Before that, ", ", but before you do that, "])
        other = self.obj(a) if self.coin(0.4) else self.vp(self.obj(a), a, False)
        return f"{head}{mark}{other}", True

    def join_steps(self, parts: list[str], first_finally: bool) -> str:
        out = (self.first_mark() if first_finally else "") + parts[0]
        for i, p in enumerate(parts[1:], start=1):
            if first_finally and i == len(parts) - 1:
                out += self.final_conn() + p
            else:
                out += self.conn(False) + p
        return out

    # ------------------------------------------------------------------ tower bodies
    def t_step(self, top: str, bottom: str, first: bool, on_prev: bool, form_idx: int = 0,
               verb_only: bool = False, last_rest: bool = False) -> tuple[str, bool]:
        """One goal, ``top`` on ``bottom``; returns (text, whether it starts with a verb). ``on_prev``: ``bottom``
        is the top placed by the previous step; ``form_idx`` indexes :func:`verb_forms` (2: gerund)."""
        opts = ["step.full", "step.pronoun", "rel.under", "rel.below", "frame.goes", "end.should", "rel.support"]
        wts = [6, 2, 1, 1, 1, 1, 1]
        if form_idx or verb_only:
            opts, wts = ["step.full", "rel.under", "rel.below"], [6, 1, 1]
        elif not first:
            opts, wts = [*opts, "step.np"], [*wts, 3]
        if on_prev and not form_idx and not verb_only:
            opts, wts = [*opts, "ref.on_top", "ref.pronoun_target"], [*wts, 2, 2]
        form = self.pick(opts, wts)
        t = self.rest_np() if last_rest and not form.startswith("rel.") and self.coin(0.3) else None
        verb = self.choice(self.rel_verbs)
        v = verb_forms(verb)[form_idx]
        if form in ("rel.under", "rel.below"):
            under = self.choice(["under", "underneath"] if form == "rel.under" else ["below", "beneath"])
            return f"{v} {self.obj(bottom, False)} {under} {t or self.obj(top, False)}", True
        if form == "rel.support":
            rel = self.choice(["supports", "should support", "carries", "should carry", "holds", "should hold"])
            return f"{self.obj(bottom, False)} {rel} {self.obj(top, False)}", False
        t = t or self.obj(top, False)
        if form == "end.should":
            return f"{t} {self.choice(['should be', 'should end up', 'should sit'])} {self.prep()} " \
                   f"{self.obj(bottom, False)}", False
        if form == "ref.on_top":
            if self.coin():
                return f"{v} {t} on top", True
            return f"{t} on top", False
        if form == "ref.pronoun_target":
            return f"{v} {t} {self.choice(['on top of it', 'onto it', 'on it', 'on that', 'on top of that', 'onto that one'])}", True
        if form == "step.pronoun":
            return f"{self.pick_np(t)}{self.choice([' and ', ' and ', '. '])}{v} it {self.prep()} " \
                   f"{self.obj(bottom, False)}", True
        if form == "frame.goes":
            return f"{t} {self.choice(['goes', 'should go'])} {self.prep()} {self.obj(bottom, False)}", False
        if form == "step.np":
            return f"{t} {self.prep()} {self.obj(bottom, False)}", False
        return f"{v} {t} {self.prep()} {self.obj(bottom, False)}", True

    def tower_intro(self) -> str | None:
        intros = []
        if "build" in self.goal_words:
            intros += [f"build a {w}" for w in _TOWER_NOUNS if w in self.goal_words]
        for v in _TOWER_VERBS:
            if v in self.goal_words:
                intros += [f"{v} the {plural(self.choice(self.nouns))}", f"{v} them",
                           f"{v} {self.choice(['up ', ''])}the {plural(self.choice(self.nouns))}"]
        if "build" in self.goal_words and intros:
            intros += [f"build a {self.choice([w for w in _TOWER_NOUNS if w in self.goal_words] or ['tower'])} "
                       f"of the {plural(self.choice(self.nouns))}"]
        return self.choice(intros) if intros else None

    def tower(self, goals: tuple[str, ...]) -> tuple[str, bool]:
        pairs = [parse_goal(g)[1] for g in goals]          # (top, bottom), bottom first
        order = [pairs[0][1]] + [p[0] for p in pairs]      # bottom -> top
        k = len(pairs)
        intro = self.tower_intro()
        opts = ["frame.rel", "frame.rel_and", "frame.state"]
        wts = [6, 2, 2]
        full = len(order) == len(self.v.objects)
        if intro is not None:
            opts += ["tower.markers", "tower.dir", "tower.positions", "tower.positions_prefix", "tower.ordinal"]
            wts += [2, 3, 2, 1, 2]
            if full and len(order) == 3:
                opts += ["tower.elided"]
                wts += [2]
        if k >= 2:
            opts += ["frame.before_infix", "frame.after_infix", "chain.on"]
            wts += [1, 1, 2]
        if k == 2:
            opts += ["frame.before_prefix", "frame.after_prefix", "frame.once_prefix", "frame.but_first",
                     "frame.before_that"]
            wts += [1, 1, 1, 1, 1]
        form = self.pick(opts, wts)
        if form == "frame.state":
            clauses = []
            for t, b in pairs:
                if self.coin(0.2):
                    clauses.append((self.obj(b, False), f"under {self.obj(t, False)}", False))
                else:
                    clauses.append((self.obj(t, False), f"{self.prep()} {self.obj(b, False)}", False))
            if self.coin(0.5):
                clauses.reverse()
            return self.state(clauses)
        if form == "chain.on":
            if self.coin(0.7):
                seq = list(reversed(order))
                rel = [self.prep() for _ in seq[1:]]
            else:
                seq = list(order)
                rel = ["under" for _ in seq[1:]]
            chain = self.obj(seq[0], False) + "".join(f" {r} {self.obj(o, False)}" for r, o in zip(rel, seq[1:]))
            r = self.choice(["verb", "state", "bare"])
            if r == "verb":
                return f"{self.choice(self.rel_verbs)} {chain}", True
            if r == "state":
                return self.choice(["I want ", "I'd like ", "the goal is: "]) + chain, False
            return chain, False
        if form == "frame.rel":
            steps = [self.t_step(t, b, i == 0, i > 0, last_rest=full and i == k - 1 and i > 0)
                     for i, (t, b) in enumerate(pairs)]
            texts = [s for s, _ in steps]
            if len(steps) == 1:
                return texts[0], steps[0][1]
            text = self.join_steps(texts, self.coin(0.3))
            return text, steps[0][1] and not text.startswith(("first,", "first of", "to ", "firstly"))
        if form == "frame.rel_and":
            idx = list(range(k))
            if self.coin(0.4):
                idx.reverse()
            steps = [self.t_step(pairs[i][0], pairs[i][1], j == 0, False) for j, i in enumerate(idx)]
            texts = [s for s, _ in steps]
            if len(steps) == 1:
                return texts[0], steps[0][1]
            return ", ".join(texts[:-1]) + self.choice([" and ", ", and "]) + texts[-1], steps[0][1]
        if form.startswith("frame."):
            # two consecutive goals a (lower) and b (upper); any goals above them follow with connectives
            (ta, ba), (tb, bb) = pairs[0], pairs[1]
            tail = "".join(self.conn(False) + self.t_step(t, b, False, False, verb_only=True)[0]
                           for t, b in pairs[2:])
            if form == "frame.before_prefix":
                head, hv = self.t_step(ta, ba, True, False)
                return f"before {self.t_step(tb, bb, False, False, 2)[0]}, {head}", False
            if form == "frame.after_prefix":
                head, hv = self.t_step(tb, bb, True, False)
                if self.coin(0.3):
                    return f"after you{self.choice([chr(39) + 've', ' have'])} " \
                           f"{self.t_step(ta, ba, False, False, 4)[0]}, {head}{tail}", False
                return f"after {self.t_step(ta, ba, False, False, 2)[0]}, {head}{tail}", False
            if form == "frame.once_prefix":
                head, hv = self.t_step(tb, bb, True, False)
                return f"once you{self.choice([chr(39) + 've', ' have'])} " \
                       f"{self.t_step(ta, ba, False, False, 4)[0]}, {head}{tail}", False
            if form == "frame.before_infix":
                head, hv = self.t_step(ta, ba, True, False)
                other = self.t_step(tb, bb, False, False, 2)[0] if self.coin() else \
                    "you " + self.t_step(tb, bb, True, False, verb_only=True)[0]
                return f"{head} before {other}{tail}", hv
            if form == "frame.after_infix":
                head, hv = self.t_step(tb, bb, True, False)
                other = self.t_step(ta, ba, False, False, 2)[0] if self.coin() else \
                    "you " + self.t_step(ta, ba, True, False, verb_only=True)[0]
                return f"{head} after {other}{tail}", hv
            head, hv = self.t_step(tb, bb, True, False)
            mark = self.choice([", but first ", ". But first, "] if form == "frame.but_first" else
                               [", but before that, ", ". Before that, ", ", but before you do that, "])
            return f"{head}{mark}{self.t_step(ta, ba, True, False, verb_only=True)[0]}", hv
        return self.tower_list(form, order, intro)

    def tower_list(self, form: str, order: list[str], intro: str) -> tuple[str, bool]:
        n = len(order)
        bottom = ["at the bottom", "on the bottom", "as the base", "at the base", "at the very bottom"]
        top = ["on top", "at the top", "on the top", "on the very top"]
        middle = ["in the middle", "in between", "in the center"]
        if form == "tower.ordinal":
            items = [self.obj(o, False) for o in order]
            r = self.choice(["post", "pre"])
            if r == "post":
                items[0] += " first"
                if n == 3 and self.coin():
                    items[1] += " second"
                if self.coin(0.6):
                    items[-1] += self.choice([" last", " last of all"])
                sep = self.choice([", then ", ", ", ", and then ", "; "])
                lst = sep.join(items[:-1]) + self.choice([sep, ", and ", " and "]) + items[-1]
            else:
                lst = self.choice(["first ", "first, "]) + items[0] + "".join(
                    self.choice([", then ", ", next ", ", after that "]) + it for it in items[1:-1]) + \
                    self.choice([", then ", ", and finally ", ", finally ", ", lastly "]) + items[-1]
            how = self.choice(["intro", "verb", "bare"])
            if how == "intro":
                return f"{intro}{self.choice([': ', ', '])}{lst}", True
            if how == "verb":
                verb = self.choice([w for w in _TOWER_VERBS if w in self.goal_words] or ["stack"])
                return f"{verb} {lst}", True
            return lst, False
        if form == "tower.elided":
            marks = {order[0]: bottom, order[1]: middle, order[2]: top}
            named = [order[i] for i in sorted(self.rng.choice(3, 2, replace=False))]
            if self.coin():
                named.reverse()
            verbs = [w for w in _TOWER_VERBS if w in self.goal_words] or ["stack"]
            noun = plural(self.choice(self.nouns))
            head = self.choice([f"{self.choice(verbs)} all three", f"{self.choice(verbs)} all the {noun}",
                                f"{self.choice(verbs)} them all", f"{self.choice(verbs)} all three {noun}",
                                f"{self.choice(verbs)} all of the {noun}"])
            items = [f"{self.obj(o, False)} {self.choice(marks[o])}" for o in named]
            return f"{head}{self.choice([' with ', ', ', ': '])}{items[0]}{self.choice([' and ', ', '])}{items[1]}", True
        if form == "tower.markers":
            down = self.coin(0.3)
            seq = list(reversed(order)) if down else order
            items = [self.obj(o, False) for o in seq]
            items[0] += " " + self.choice(top if down else bottom)
            if self.coin(0.5):
                items[-1] += " " + self.choice(bottom if down else top)
            sep = self.choice([", then ", ", ", " then "])
            body = sep.join(items[:-1]) + self.choice([sep, ", and ", " and ", ", and then "]) + items[-1]
            return f"{intro}{self.choice([': ', ' with ', ', '])}{body}", True
        if form == "tower.dir":
            down = self.coin(0.4)
            seq = list(reversed(order)) if down else order
            d = self.pick(["dir.plain", "dir.starting_from"], [4, 1])
            if d == "dir.plain":
                phrase = self.choice(["from top to bottom", "top to bottom", "from the top down"] if down else
                                     ["from bottom to top", "bottom to top", "from the bottom up"])
            else:
                phrase = self.choice(["starting from the top", "starting at the top"] if down else
                                     ["starting from the bottom", "starting at the bottom"])
            items = [self.obj(o, False) for o in seq]
            sep = self.choice([", ", ", then "])
            lst = sep.join(items[:-1]) + self.choice([sep, " and ", ", and "]) + items[-1]
            r = self.choice(["intro_colon", "bare", "verb_list", "suffix", "verb_suffix"])
            if r == "intro_colon":
                return f"{intro} {phrase}: {lst}", True
            if r == "suffix":
                return f"{lst}, {phrase}", False
            if r == "verb_suffix":
                verb = self.choice([w for w in _TOWER_VERBS if w in self.goal_words] or ["stack"])
                if "build" in self.goal_words and self.coin():
                    return f"build a {self.choice([w for w in _TOWER_NOUNS if w in self.goal_words] or ['tower'])} " \
                           f"of {lst}, {phrase}", True
                return f"{verb} {lst}{self.choice([', ', ' '])}{phrase}", True
            if r == "bare":
                return f"{phrase}: {lst}", False
            verb = self.choice([w for w in _TOWER_VERBS if w in self.goal_words] or ["stack"])
            return f"{verb} {lst} {phrase}", True
        marks = {order[0]: bottom, order[-1]: top}
        if n == 3:
            marks[order[1]] = middle
        seq = [order[i] for i in self.rng.permutation(n)]
        if form == "tower.positions":
            items = [f"{self.obj(o, False)} {self.choice(marks[o])}" for o in seq]
        else:
            items = [f"{self.choice(marks[o])} {self.obj(o, False)}" for o in seq]
        lst = ", ".join(items[:-1]) + self.choice([" and ", ", and "]) + items[-1]
        r = self.choice(["intro", "verb", "bare"] if form == "tower.positions" else ["intro", "bare"])
        if r == "intro":
            return f"{intro}{': ' if form != 'tower.positions' else self.choice([' with ', ': '])}{lst}", True
        if r == "verb":
            return f"{self.choice(self.rel_verbs)} {lst}", True
        return lst, False

    # ------------------------------------------------------------------ whole instructions
    def body(self, goals: tuple[str, ...]) -> tuple[str, bool, bool]:
        """(text, imperative, ordered)."""
        if self.shape == "tower":
            text, imp = self.tower(goals)
            return text, imp, len(goals) > 1
        objs = [parse_goal(g)[1][0] for g in goals]
        if len(objs) >= 2 and self.coin(0.5):
            text, imp = self.own_ordered(objs)
            return text, bool(imp), True
        text, imp = self.own_unordered(objs)
        return text, imp, False

    def finish(self, body: str, imperative: bool) -> str:
        if imperative and self.coin(0.15):
            self.pick(["fill.adverb_pre"])
            body = self.choice(["now ", "now, ", "carefully ", "quickly ", "gently ", "just ", "also ",
                                "kindly ", "right away, "]) + body
        elif self.coin(0.15):
            self.pick(["fill.adverb_post"])
            body += self.choice([" now", " carefully", " gently", " quickly", " right away", " too", " as well",
                                 " here", " there", " for me", " slowly"])
        opts = ["polite.none", "polite.please_pre", "polite.please_post", "polite.when_chance", "polite.thanks",
                "polite.if_you_can"]
        wts = [8, 3, 2, 1, 1, 1]
        if imperative:
            opts += ["polite.could", "polite.would", "polite.can", "polite.id_like", "polite.want",
                     "polite.kindly", "polite.go_ahead", "polite.lets", "polite.need", "polite.task",
                     "polite.time_to", "polite.we_need"]
            wts += [2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
        form = self.pick(opts, wts)
        question = False
        if form in ("polite.thanks", "polite.if_you_can"):
            body += self.choice([", thanks", ". Thanks", ", thank you", ". Thank you"] if form == "polite.thanks" else
                                [", if you can", " if you can", " when you can", ", when you have a moment"])
            form = "polite.none"
        if form == "polite.please_pre":
            text = self.choice(["please ", "please, "]) + body
        elif form == "polite.please_post":
            text = body + ", please"
        elif form == "polite.when_chance":
            text = body + self.choice([", when you get a chance", " when you get a chance"])
        elif form in ("polite.could", "polite.would", "polite.can"):
            word = form.split(".")[1]
            text = f"{word} you {self.choice(['', 'please '])}{body}"
            question = True
        else:
            text = {"polite.none": "", "polite.id_like": self.choice(["I'd like you to ", "I would like you to "]),
                    "polite.want": "I want you to ", "polite.kindly": "kindly ", "polite.go_ahead": "go ahead and ",
                    "polite.lets": "let's ", "polite.need": "I need you to ",
                    "polite.task": self.choice(["your task is to ", "your job is to "]),
                    "polite.time_to": self.choice(["time to ", "it's time to "]),
                    "polite.we_need": self.choice(["we need to ", "we have to "])}[form] + body
        r = self.rng.random()
        if r < 0.45:
            text = text.lower()
        elif r < 0.95:
            text = re.sub(r"(^|[.!?] )([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)
            text = re.sub(r"\bi('d| )", lambda m: "I" + m.group(1), text)
        else:
            text = text.upper()
        end = self.choice(["?", "?", ""]) if question else self.choice([".", ".", "", "!"])
        return text + end


def phrase_traced(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator,
                  split: str) -> tuple[str, bool, tuple[str, ...]]:
    """:func:`phrase`, plus the names of the constructions it used (in order).

    Raises:
        ConfigError: ``split`` is not ``"train"``/``"heldout"``, ``goals`` is not satisfiable (the message is
            ``vocab.impossibility``'s line), or the vocabulary has neither shape of the module docstring.
    """
    goals = tuple(goals)
    g = _Grammar(vocab, rng, split)
    why = vocab.impossibility(goals)
    if why is not None:
        raise ConfigError(f"cannot phrase impossible goals {list(goals)}: {why}")
    goals = vocab.canonical_order(goals) if vocab.ordered_by_support else goals
    for attempt in range(40):
        g.used = []
        body, imperative, ordered = g.body(goals)
        text = g.finish(body, imperative)
        if split == "train" or any(u in HELDOUT_CONSTRUCTIONS for u in g.used) or attempt == 39:
            break
    if split == "heldout" and not any(u in HELDOUT_CONSTRUCTIONS for u in g.used):  # pragma: no cover - 40 misses
        g.used.append("polite.need")
        text = "I need you to " + body + "."
    return text, ordered, tuple(g.used)


def phrase(vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator, split: str) -> tuple[str, bool]:
    """One instruction asking for ``goals`` and whether it states their order (see the module docstring).

    ``split="train"`` never uses :data:`HELDOUT_CONSTRUCTIONS`; ``split="heldout"`` always uses one at least.

    Raises:
        ConfigError: as :func:`phrase_traced`.
    """
    text, ordered, _ = phrase_traced(vocab, goals, rng, split)
    return text, ordered


# ------------------------------------------------------------------ negatives
def negatives(vocab: TaskVocabulary, rng: np.random.Generator, split: str) -> tuple[str, str]:
    """An instruction the task must refuse, and its kind (one of :data:`NEGATIVE_KINDS`):

    * ``out_of_vocabulary``: an object, colour or place the task lacks ("the purple cube", "the apple",
      "in the fridge", "on the third peg") inside an otherwise valid instruction;
    * ``missing_skill``: a verb the task lacks ("pour the milk", "open the drawer");
    * ``impossible``: goals ``vocab.impossibility`` rejects (a cube on itself, a cycle, two cubes on one, one cube
      to two places, an object into another's place), or an object used as a place;
    * ``empty``: empty, blank, or asks for nothing ("hello", "do nothing").

    Distractor words come from :data:`DISTRACTORS` of ``split``.

    Raises:
        ConfigError: as :func:`phrase_traced`.
    """
    g = _Grammar(vocab, rng, split)
    d = DISTRACTORS[split]
    known = vocab.words()
    kind = NEGATIVE_KINDS[int(rng.integers(len(NEGATIVE_KINDS)))]
    objs = list(vocab.objects)
    if kind == "empty":
        return g.choice(d["empty"]), kind
    if kind == "missing_skill":
        verb = g.choice([v for v in d["verbs"] if v not in known])
        what = g.obj(g.choice(objs)) if g.coin(0.7) else "the " + g.choice(d["fixtures"])
        body = f"{verb} {what}{g.choice(['', ' now', ' for me', ' carefully'])}"
        if g.coin(0.3):
            pos, _ = phrase(vocab, sample_goals(vocab, rng), rng, split)
            return f"{pos.rstrip('.!?')}{g.choice([', then ', ' and then ', '. Then '])}{body}", kind
        return g.finish(body, True), kind
    if kind == "impossible":
        return g.finish(_impossible(g), True), kind
    # out_of_vocabulary
    cols = [c for c in d["colours"] if c not in known]
    if g.coin(0.6):
        nouns = g.nouns
        oov = g.choice([f"{g.choice(cols)} {g.choice(nouns)}" for _ in range(3)] +
                       [g.choice(d["things"]), f"{g.choice(d['ordinals'])} {g.choice(nouns)}"])
        for _ in range(40):
            goals = sample_goals(vocab, rng)
            mentioned = sorted({a for goal in goals for a in parse_goal(goal)[1] if a in vocab.objects})
            g.override = {g.choice(mentioned): oov}
            text, _, _ = _phrase_with(g, goals)
            if oov in text.lower():
                return text, kind
        g.override = {}
    obj = g.choice(objs)
    verb = g.choice(g.rel_verbs)
    pn = g.choice(g.pnouns) if g.pnouns else g.choice(g.nouns)
    place = g.choice([g.choice(d["places"]), f"{g.choice(d['ordinals'])} {pn}", f"{g.choice(cols)} {pn}"])
    return g.finish(f"{verb} {g.obj(obj)} {g.prep(verb)} the {place}", True), kind


def _phrase_with(g: _Grammar, goals: tuple[str, ...]) -> tuple[str, bool, tuple[str, ...]]:
    """Phrase ``goals`` with an existing grammar draw (its overrides kept)."""
    g.used = []
    body, imperative, ordered = g.body(goals)
    return g.finish(body, imperative), ordered, tuple(g.used)


def _impossible(g: _Grammar) -> str:
    v = g.v
    objs = [list(v.objects)[i] for i in g.rng.permutation(len(v.objects))]
    rules = set(v.rules)
    opts: list[str] = []
    if g.shape == "tower":
        opts += [r for r in ("distinct_args", "no_cycle") if r in rules]
        if len(objs) > 2:
            opts += [r for r in ("one_per_support", "one_goal_per_object") if r in rules]
    else:
        if "own_place" in rules and len(v.places) > 1:
            opts.append("own_place")
        if len(objs) > 1:
            opts.append("object_as_place")
    if not opts:
        raise ConfigError(f"vocabulary of {v.task!r} declares no rule that makes an impossible instruction")
    rule = g.choice(opts)
    verb = g.choice(g.rel_verbs)
    a, b = objs[0], objs[1]
    c = objs[2] if len(objs) > 2 else None
    if g.coin(0.25):  # the same impossibilities as end states and chains
        if rule == "distinct_args":
            return f"{g.choice(['I want ', 'make sure '])}{g.obj(a)} {g.choice(['is on', 'sits on top of'])} itself"
        if rule == "no_cycle":
            return f"{verb} {g.obj(a)} {g.prep()} {g.obj(b)} {g.prep()} {g.obj(a)}"
        if rule == "own_place":
            wrong = g.choice([p for p in v.places if p != v.own_place[a]])
            return f"{g.obj(a)} should end up {g.prep('put')} the {g.choice(v.places[wrong])}"
        if rule == "object_as_place":
            return f"I want {g.obj(a)} {g.prep('put')} {g.obj(b)}"
    if rule == "distinct_args":
        if g.coin(0.3):
            return f"{verb} {g.obj(a)} {g.choice(['on itself', 'on top of itself'])}"
        return f"{verb} {g.obj(a)} {g.prep()} {g.obj(a)}"
    if rule == "no_cycle":
        if c is not None and g.coin(0.4):
            return f"{verb} {g.obj(a)} {g.prep()} {g.obj(b)}, {g.obj(b)} {g.prep()} {g.obj(c)} and " \
                   f"{g.obj(c)} {g.prep()} {g.obj(a)}"
        return f"{verb} {g.obj(a)} {g.prep()} {g.obj(b)}{g.choice([' and ', ', then '])}{g.obj(b)} {g.prep()} " \
               f"{g.obj(a)}"
    if rule == "one_per_support":
        if g.coin(0.5):
            return f"{verb} {g.obj(a)} and {g.obj(c)} {g.prep()} {g.obj(b)}"
        return f"{verb} {g.obj(a)} {g.prep()} {g.obj(b)}, then {g.obj(c)} {g.prep()} {g.obj(b)}"
    if rule == "one_goal_per_object":
        if g.coin(0.5):
            return f"{verb} {g.obj(a)} {g.prep()} {g.obj(b)} and {g.prep()} {g.obj(c)}"
        return f"{verb} {g.obj(a)} {g.prep()} {g.obj(b)}, then {verb} {g.obj(a)} {g.prep()} {g.obj(c)}"
    if rule == "own_place":
        wrong = g.choice([p for p in v.places if p != v.own_place[a]])
        return f"{verb} {g.obj(a)} {g.prep(verb)} the {g.choice(v.places[wrong])}"
    return f"{verb} {g.obj(a)} {g.prep(verb)} {g.obj(b)}"


__all__ = ["DISTRACTORS", "HELDOUT_CONSTRUCTIONS", "NEGATIVE_KINDS", "SPLITS", "negatives", "phrase",
           "phrase_traced", "place_nouns", "plural", "sample_goals", "verb_forms"]
