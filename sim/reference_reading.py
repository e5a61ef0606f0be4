"""The judge's reference reading: an instruction's words -> the task's goals, by fixed rules over its vocabulary.

:func:`read_instruction` is deterministic and reads only the :class:`~tandem.core.vocabulary.TaskVocabulary`
(no simulator, no model). How it reads:

1. **Words.** Lower case; ``, . ; : ! ?`` kept as separators; hyphens become spaces. Phrases are matched
   longest first: the vocabulary's object, place and skill phrases (skill verbs with their ``-s``, ``-ing`` and
   past forms), then the phrases of the grammar below. A word left over must be a filler
   (:data:`FILLER_WORDS`, :data:`FILLER_PHRASES`) or a noun naming a kind of object ("cubes", "items");
   otherwise the instruction is refused: a verb of :data:`FOREIGN_VERBS` as a missing skill, a negation
   (:data:`NEGATIONS`) as unclear, any other word as out of vocabulary.
2. **Order.** "then", "after that", "next", "finally", "once that's done", "followed by", ... start a later step;
   "but first" / "before that" a step before the previous one; "before"/"after" order the two parts around them
   ("before putting the can away, put the milk in its bin": milk, then can; "put the can away after the milk":
   milk, then can). A plain list, "and", or a new sentence states no order.
3. **Actions.** Inside a step: a skill verb, the objects it moves (lists with "and" and commas; "it"/"them": the
   objects of the previous action; "everything"/"all the items"/"both nuts", with "except"/"but"/"other
   than"/"apart from"/"excluding"; "the other one"/"the rest": the objects not named yet) and a target after a
   relation word ("on", "onto", "on top of", "in", "into", "to", ...; "under"/"below" swap the two): an object, a
   place, or the object's own place ("its bin", "their pegs", "the right bin", "where it belongs", "away"). A
   step without a verb takes the previous one ("then the can"). A goal verb without a target means the own
   place; a pick verb without a target asks for nothing ("pick up the red cube and put it on the blue one"). A
   step with neither verb nor target takes the own-place target of the step before it ("the milk goes in its
   bin, then the loaf").
4. **Towers** (``ordered_by_support``): "on top" / "on top of it" is the cube placed last; with no relation word,
   a list with a direction ("from bottom to top: blue, red, green", "from the top down") or positions ("blue at
   the bottom, red in the middle and green on top") is read as a tower.
   A list with "first" after (or before) a cube, "second" and "last" is an ordinal tower ("blue first, red
   second, green last": bottom first); "all three"/"them all" in such a list adds the cubes not named ("stack all
   three with blue at the bottom and green on top"). A relation word right after an object target chains ("the
   red cube on the green cube on the blue cube"); "supports"/"carries"/"holds" swap like "under"; "that" after a
   relation word is "it".
5. **Own places.** "in that order" makes a list's objects steps in text order; "leave X where it is/alone/out"
   takes X out of "everything"; a bare object with neither verb nor target ("start with the milk, then put the can
   in its bin", "do the same with the can") goes to its own place, by the action before or after it.
6. **Checks.** An object used as a place, an object sent to a place that is not its own, and whatever
   ``vocab.impossibility`` rejects are refused, the reason naming the goal.

Goals come out in ``vocab.canonical_order`` for ``ordered_by_support`` vocabularies (``ordered`` is then True when
there are two goals or more), otherwise in the stated order (``ordered`` True when the words order two steps
that carry goals). A refusal is a :class:`~tandem.core.grounding.Grounding` with ``goals=()``, ``refused`` one line
naming the word or goal at fault, and ``details["refusal"]`` one of ``"empty"``, ``"out_of_vocabulary"``,
``"missing_skill"``, ``"impossible"``, ``"unclear"``. Confidence is 1.0 either way. Never raises on text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from tandem.core.grounding import Grounding
from tandem.core.phrasing import place_nouns, plural, verb_forms
from tandem.core.vocabulary import TaskVocabulary

GROUNDED_BY = "reference_reading"


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Single words read as filler: articles, pronouns of address, politeness, auxiliaries, adverbs, greetings.
FILLER_WORDS: frozenset[str] = _wordset("""
a an the its their please kindly could would will you your yourself i i'd i'm me my we us let's now just also too again
carefully gently slowly quickly there here up down of do go goes should be is are have has having you've
you'd that this with for so ok okay hello hi hey thanks thank good morning nothing wait two three four five six
belongs belong really as well only back want wants like need needs sit sits rest rests lie lies end ends be
should goal target result arrange make sure get things same alone untouched out very job task time we've once more
""")

#: Multi-word fillers (matched as phrases, so that e.g. "can" in "can you" is not the soda can).
FILLER_PHRASES: tuple[str, ...] = (
    "can you", "i'd like you to", "i would like you to", "i want you to", "i need you to", "would you mind",
    "go ahead and", "when you get a chance", "never mind", "if you can", "as well", "for me",
    "would you like to", "make sure to", "i'd like to", "take care to", "your task is to", "your job is to",
    "time to", "it's time to", "we need to", "we have to", "make it so that", "make sure that", "see to it that",
    "when you can", "right away", "thank you", "where it is", "where they are", "as it is", "as they are",
    "the same", "do the same with", "same with", "same for", "the goal is", "in the end", "one at a time",
    "one by one", "i need", "i want", "i'd like", "i would like", "we need", "if you would", "when you have a moment",
)

#: Verbs of skills no shipped task has: read as a missing skill, not as an unknown word.
FOREIGN_VERBS: frozenset[str] = _wordset("""
pour open close throw wipe unscrew screw push pull kick cut wash shake fold squeeze rotate flip spin paint roll
crush turn twist press hit break cook slice chop fill empty clean dry heat melt eat drink sweep spray stir
scrub toss shove drag swap unstack tilt hang
""")

#: Negations: an instruction that says what not to do is refused as unclear ("but not" is an exception word).
NEGATIONS: frozenset[str] = frozenset({"not", "don't", "dont", "never", "no", "without"})

# (phrase, kind, value) of the grammar; vocabulary-driven ones are added per vocabulary.
_REL = [("on", "on"), ("onto", "on"), ("on to", "on"), ("upon", "on"), ("atop", "on"), ("above", "on"),
        ("over", "on"), ("on top of", "on"), ("in", "on"), ("into", "on"), ("in to", "on"), ("inside", "on"),
        ("inside of", "on"), ("to", "on"), ("down on", "on"), ("down onto", "on"), ("around", "on"),
        ("under", "under"), ("underneath", "under"), ("below", "under"), ("beneath", "under"),
        ("supports", "under"), ("support", "under"), ("carries", "under"), ("carry", "under"), ("holds", "under"),
        ("hold", "under"), ("is under", "under")]
_ORDER = ("in that order", "in this order", "in the order given", "in the order i said", "in the order i named",
          "in the order i named them", "one after the other in that order", "in exactly that order")
_LEAVE = ("leave", "leaving", "leave out", "leaving out")
_SEQ = ("then", "and then", "after that", "and after that", "afterwards", "afterward", "and afterwards", "next",
        "after which", "finally", "and finally", "then finally", "lastly", "once that's done", "once that is done",
        "when that's done", "when that is done", "when you're done", "once done", "when done", "followed by",
        "subsequently", "and next", "and lastly", "when you're done with that", "once you've done that",
        "when you've done that", "after you've done that", "after doing that", "after this", "and only then",
        "only then", "last of all", "and last of all", "once you're done with that", "once that's finished",
        "when that's finished", "and then finally", "and once that's done", "and when that's done", "when you are done",
        "once you are done")
_SEQ_REV = ("but first", "but before that", "before that", "but before", "but before you do that",
            "before you do that", "before doing that")
_FIRST = ("first", "firstly", "first of all", "to start", "to begin", "to start with", "to begin with",
          "start by", "begin by", "start with", "begin with", "start off with", "comes first", "is first",
          "come first")
_BEFORE = ("before", "prior to", "ahead of")
_AFTER = ("after", "once")
_CONJ = ("and", "as well as", "plus", "along with", "together with", "&")
_EXCEPT = ("except", "except for", "but not", "other than", "apart from", "excluding", "save for",
           "aside from")
_DIR = {"bt": ("from bottom to top", "bottom to top", "from the bottom up", "bottom up", "from the bottom to the top",
               "starting from the bottom", "starting at the bottom", "bottom first"),
        "tb": ("from top to bottom", "top to bottom", "from the top down", "top down", "from the top to the bottom",
               "starting from the top", "starting at the top", "top first")}
_POS = {"bottom": ("at the bottom", "on the bottom", "as the base", "at the base", "as the bottom",
                   "at the very bottom", "on the very bottom"),
        "middle": ("in the middle", "in between", "in the center", "in the centre"),
        "top": ("on top", "at the top", "on the top", "on the very top", "at the very top", "as the top")}
#: Ordinal tower positions (read in tower lists only): "blue first, red second, green last".
_ORD = {"middle": ("second",), "top": ("last",)}
_NUMBERS = ("two", "three", "four", "five", "six")


@dataclass(frozen=True)
class _Tok:
    kind: str
    value: str = ""
    text: str = ""


class _Refusal(Exception):
    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def _cls_nouns(vocab: TaskVocabulary) -> set[str]:
    """Nouns naming a kind of object: last words shared by two objects' phrases, and generic nouns."""
    seen: dict[str, set[str]] = {}
    for obj, phrases in vocab.objects.items():
        for p in phrases:
            w = p.split()
            if len(w) > 1:
                seen.setdefault(w[-1], set()).add(obj)
    return {w for w, objs in seen.items() if len(objs) > 1} | {"item", "object", "thing"}


_LEXICA: dict[str, tuple[dict[tuple[str, ...], _Tok], set[str], int]] = {}


def _lexicon(vocab: TaskVocabulary) -> tuple[dict[tuple[str, ...], _Tok], set[str], int]:
    """(phrase -> token, noun words, longest phrase), cached per vocabulary content."""
    key = json.dumps(vocab.to_dict(), sort_keys=True)
    if key in _LEXICA:
        return _LEXICA[key]
    lex: dict[tuple[str, ...], _Tok] = {}

    def add(phrase: str, kind: str, value: str = "") -> None:
        lex.setdefault(tuple(phrase.split()), _Tok(kind, value, phrase))

    for obj, phrases in vocab.objects.items():
        for p in phrases:
            add(p, "OBJ", obj)
    for place, phrases in vocab.places.items():
        for p in phrases:
            add(p, "PLACE", place)
    for skill, phrases in vocab.skill_words.items():
        for p in phrases:
            for form in verb_forms(p):
                add(form, "SKILL", skill)
    for skill in vocab.skills:
        for form in verb_forms(skill):
            add(form, "SKILL", skill)
    nouns = _cls_nouns(vocab)
    all_nouns = sorted(n for n in nouns if n != "one")
    if vocab.own_place:
        for n in place_nouns(vocab):
            ns = plural(n)
            for p in (f"its {n}", f"its own {n}", f"their {ns}", f"their own {ns}", f"their {n}", f"the right {n}",
                      f"the right {ns}", f"the matching {n}", f"the matching {ns}", f"the correct {n}",
                      f"the correct {ns}", f"its correct {n}", f"their correct {ns}", f"its matching {n}",
                      f"their matching {ns}", f"their respective {ns}", f"its respective {n}",
                      f"the corresponding {n}", f"the corresponding {ns}", f"its proper {n}", f"the proper {n}",
                      f"the proper {ns}", f"the {n}", f"the {ns}", f"its right {n}", f"its designated {n}",
                      f"their designated {ns}", f"the designated {n}", f"the designated {ns}"):
                add(p, "OWN")
        for p in ("where it belongs", "where they belong", "where it goes", "where they go", "away",
                  "its place", "their places", "its spot", "their spots", "their own places", "its home",
                  "their homes", "its proper place", "their proper places", "its own place", "its own spot",
                  "their own spots", "where it should be", "where they should be", "where it should go",
                  "where they should go", "its usual place", "their usual places"):
            add(p, "OWN")
    for p, v in _REL:
        add(p, "REL", v)
    for p in _SEQ:
        add(p, "SEQ")
    for p in _SEQ_REV:
        add(p, "SEQ_REV")
    for p in _FIRST:
        add(p, "FIRST")
    for p in _BEFORE:
        add(p, "BEFORE")
    for p in _AFTER:
        add(p, "AFTER")
    for p in _CONJ:
        add(p, "CONJ")
    for p in _EXCEPT:
        add(p, "EXCEPT")
    add("but", "BUT")
    for p in _ORDER:
        add(p, "ORDER")
    for p in _LEAVE:
        add(p, "LEAVE")
    add("itself", "SELF")
    for p in ("it", "them", "those", "these", "both of them", "all of them", "each of them"):
        add(p, "PRON" if p in ("it", "them", "those", "these") else "ALL")
    for p in ("everything", "all", "each", "each one", "every one", "both", "all together", "them all",
              "all three of them", "all of it"):
        add(p, "ALL")
    for n in all_nouns:
        ns = plural(n)
        for p in (f"the {ns}", f"all the {ns}", f"all of the {ns}", f"all {ns}", f"every {n}", f"each {n}",
                  f"both {ns}", f"both the {ns}", f"both of the {ns}", *(f"all {k} {ns}" for k in _NUMBERS),
                  *(f"all the {k} {ns}" for k in _NUMBERS)):
            add(p, "ALL")
    rest = ["everything else", "the rest", "the rest of them", "the others", "all the others", "all the rest",
            "the other one", "the other", "the other ones", "the remaining one", "the remaining ones",
            "the last one", "anything else"]
    for n in all_nouns:
        rest += [f"the remaining {n}", f"the other {n}", f"the last {n}", f"the remaining {plural(n)}",
                 f"the other {plural(n)}"]
    for p in rest:
        add(p, "REST")
    if vocab.ordered_by_support:
        for d, phrases in _DIR.items():
            for p in phrases:
                add(p, "DIR", d)
        for pos, phrases in _POS.items():
            for p in phrases:
                add(p, "POS", pos)
        for pos, phrases in _ORD.items():
            for p in phrases:
                add(p, "ORD", pos)
    for p in FILLER_PHRASES:
        add(p, "FILL")
    for p in ("do not", "don't"):
        add(p, "NEG")
    noun_words = nouns | {plural(n) for n in nouns}
    out = (lex, noun_words, max(len(k) for k in lex))
    _LEXICA[key] = out
    return out


_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[,.;:!?&]")
_FOREIGN_FORMS: dict[str, str] = {f: v for v in sorted(FOREIGN_VERBS) for f in verb_forms(v)}


def _lex(vocab: TaskVocabulary, text: str) -> list[_Tok]:
    lex, nouns, longest = _lexicon(vocab)
    words = _WORD_RE.findall(text.lower().replace("\u2019", "'").replace("-", " ").replace("_", " "))
    known = vocab.words()
    toks: list[_Tok] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ",.;:!?":
            toks.append(_Tok("COMMA" if w == "," else "COLON" if w == ":" else "STOP", w, w))
            i += 1
            continue
        for n in range(min(longest, len(words) - i), 0, -1):
            tok = lex.get(tuple(words[i:i + n]))
            if tok is not None:
                break
        else:
            tok, n = None, 1
        if w == "that" and toks and toks[-1].kind == "REL":
            tok, n = _Tok("PRON", "that", "that"), 2 if words[i + 1:i + 2] == ["one"] else 1
        if tok is not None:
            if tok.kind != "FILL":
                toks.append(tok)
            i += n
            continue
        if w in _FOREIGN_FORMS and w not in known:
            toks.append(_Tok("FOREIGN", _FOREIGN_FORMS[w], w))
        elif w in NEGATIONS:
            toks.append(_Tok("NEG", w, w))
        elif w in FILLER_WORDS or w in nouns:
            pass
        elif w in known:
            toks.append(_Tok("STRAY", w, w))
        else:
            toks.append(_Tok("UNKNOWN", w, w))
        i += 1
    return toks


@dataclass
class _Action:
    verb: str | None = None                 # skill named in this action
    movers: list[str] = field(default_factory=list)
    all_: bool = False
    except_: list[str] = field(default_factory=list)
    target: tuple[str, str] | None = None   # ("obj", name) | ("place", name) | ("own", "")
    rel: str = "on"
    step: tuple[int, int] = (0, 0)
    index: int = 0
    eff_verb: str | None = None

    def empty(self) -> bool:
        return not (self.movers or self.all_ or self.target or self.verb)


class _Reader:
    def __init__(self, vocab: TaskVocabulary):
        self.v = vocab
        self.actions: list[_Action] = []
        self.mentioned: list[str] = []
        self.goal_tops: list[str] = []   # the object left on top by each goal action with a target, text order
        self.left: list[str] = []        # objects to leave where they are ("leave the milk where it is")
        self.in_order = False            # "in that order": the objects of a list are steps in text order

    def refuse(self, kind: str, reason: str):
        raise _Refusal(kind, reason)

    # -- structure
    def segments(self, toks: list[_Tok]) -> list[tuple[tuple[int, int], list[_Tok]]]:
        """Split at order words into parts, each with its step (rank of its segment, rank within it)."""
        segs: list[list[_Tok]] = [[]]
        joins: list[str] = ["seq"]
        for t in toks:
            if t.kind in ("SEQ", "SEQ_REV"):
                segs.append([])
                joins.append("seq" if t.kind == "SEQ" else "rev")
            else:
                segs[-1].append(t)
        order: list[int] = [0]
        for i in range(1, len(segs)):
            at = order.index(i - 1)
            order.insert(at + 1 if joins[i] == "seq" else at, i)
        rank = {s: r for r, s in enumerate(order)}
        out = []
        for i, seg in enumerate(segs):
            for j, part in self.split_before_after(seg):
                out.append(((rank[i], j), part))
        return out

    def split_before_after(self, seg: list[_Tok]) -> list[tuple[int, list[_Tok]]]:
        """[(rank within the segment, tokens)] in text order."""
        idx = [i for i, t in enumerate(seg) if t.kind in ("BEFORE", "AFTER")]
        if not idx:
            return [(0, seg)]
        if len(idx) > 1:
            self.refuse("unclear", f"'{seg[idx[1]].text}': one 'before'/'after' per step at most")
        i = idx[0]
        kind = seg[i].kind
        lead = [t for t in seg[:i] if t.kind not in ("FIRST", "COMMA", "STOP", "CONJ")]
        if not lead:  # "before A, B"
            j = next((j for j in range(i + 1, len(seg)) if seg[j].kind == "COMMA"
                      and any(t.kind in ("OBJ", "ALL", "REST", "PRON", "OWN") for t in seg[i + 1:j])), None)
            if j is None:
                self.refuse("unclear", f"'{seg[i].text} ...' needs a comma before the main clause")
            a, b = seg[i + 1:j], seg[j + 1:]
            # text order: a then b; time: "before a, b" -> b first
            return [(1, a), (0, b)] if kind == "BEFORE" else [(0, a), (1, b)]
        left, right = seg[:i], seg[i + 1:]
        return [(0, left), (1, right)] if kind == "BEFORE" else [(1, left), (0, right)]

    # -- actions
    def rest(self) -> list[str]:
        left = [o for o in self.v.objects if o not in self.mentioned]
        if not left:
            self.refuse("unclear", "'the rest' / 'the other one' names no object that is left")
        return left

    def mention(self, *names: str) -> None:
        for n in names:
            if n not in self.mentioned:
                self.mentioned.append(n)

    def close(self, a: _Action) -> _Action:
        if a.all_:
            a.movers = list(dict.fromkeys([*a.movers, *self.v.objects]))
        if a.except_:
            a.movers = [m for m in a.movers if m not in a.except_]
        if not a.empty():
            a.index = len(self.actions)
            self.actions.append(a)
            if a.target is not None and a.movers:
                self.goal_tops.append(a.target[1] if a.rel == "under" and a.target[0] == "obj" else a.movers[-1])
        return _Action(step=a.step)

    def tower_top(self, cur: _Action) -> str | None:
        if self.goal_tops:
            return self.goal_tops[-1]
        for m in reversed(self.mentioned):
            if m not in cur.movers:
                return m
        return None

    def parse_part(self, step: tuple[int, int], toks: list[_Tok]) -> None:
        cur = _Action(step=step)
        expect = False       # a relation word waits for its target
        in_except = False
        in_leave = False
        last = ""            # kind of the previous token
        for t in toks:
            k = t.kind
            prev_kind, last = last, k
            started = bool(cur.movers or cur.all_)
            if k == "LEAVE":
                cur = self.close(cur)
                in_leave, expect, in_except = True, False, False
                continue
            if k == "ORDER":
                self.in_order = True
                continue
            if in_leave:
                if k == "OBJ":
                    self.mention(t.value)
                    self.left.append(t.value)
                    continue
                if k in ("CONJ", "COMMA", "PRON"):
                    continue
                in_leave = False
            if k == "SKILL":
                if started or cur.target is not None:
                    cur = self.close(cur)
                cur.verb, expect, in_except = t.value, False, False
            elif k == "OBJ":
                self.mention(t.value)
                if expect:
                    cur.target, expect = ("obj", t.value), False
                elif in_except:
                    cur.except_.append(t.value)
                else:
                    if cur.target is not None and started:
                        cur = self.close(cur)
                    cur.movers.append(t.value)
            elif k in ("PLACE", "OWN"):
                if cur.target is not None and not expect and started:
                    prev = cur
                    cur = self.close(cur)
                    cur.movers, cur.all_ = list(prev.movers), False
                cur.target = ("place", t.value) if k == "PLACE" else ("own", "")
                expect = in_except = False
            elif k == "REL":
                if cur.target is not None and started and cur.target[0] == "obj" and prev_kind in ("OBJ", "PRON") \
                        and not self.v.places:
                    # a chain, "the red cube on the green cube on the blue cube": the target moves next
                    prev = cur
                    cur = self.close(cur)
                    cur.movers, cur.verb = [prev.target[1]], prev.verb
                elif cur.target is not None and started:
                    prev = cur
                    cur = self.close(cur)
                    cur.movers, cur.verb = list(prev.movers), prev.verb
                cur.rel, expect, in_except = t.value, True, False
            elif k in ("PRON", "SELF"):
                if expect:
                    if k == "SELF":
                        if not cur.movers:
                            self.refuse("unclear", "'itself' refers to nothing")
                        cur.target = ("obj", cur.movers[0])
                    else:
                        top = self.tower_top(cur)
                        if top is None:
                            self.refuse("unclear", f"'{t.text}' refers to nothing")
                        cur.target = ("obj", top)
                    expect = False
                    continue
                if cur.target is not None and started:
                    cur = self.close(cur)
                prev = next((a for a in reversed(self.actions) if a.movers), None)
                if prev is None:
                    self.refuse("unclear", f"'{t.text}' refers to nothing named before")
                cur.movers += [m for m in prev.movers if m not in cur.movers]
            elif k == "ALL":
                if cur.target is not None and started:
                    cur = self.close(cur)
                cur.all_ = True
            elif k == "REST":
                if expect:
                    self.refuse("unclear", f"'{t.text}' cannot be where something goes")
                if cur.target is not None and started:
                    cur = self.close(cur)
                names = self.rest()
                self.mention(*names)
                cur.movers += names
            elif k == "EXCEPT" or (k == "BUT" and cur.all_):
                in_except = True
            elif k == "POS":
                if t.value == "top" and not expect:
                    top = self.tower_top(cur)
                    if top is None or not cur.movers:
                        self.refuse("unclear", f"'{t.text}': on top of what?")
                    cur.target, cur.rel = ("obj", top), "on"
            elif k in ("STOP", "COLON"):
                cur = self.close(cur)
                expect = in_except = False
            # COMMA, CONJ, BUT (no "everything" before it), FIRST, DIR: separators only
        if expect and cur.target is None and cur.movers:
            self.refuse("unclear", f"'{self.v.objects[cur.movers[-1]][0]}' has a relation word with no target")
        self.close(cur)

    # -- goals
    def goals(self) -> list[tuple[str, tuple[int, int], int]]:
        """(goal, step, action index) of every action that asks for one, text order."""
        v = self.v
        eff, prev = None, None
        for a in self.actions:
            eff = a.verb or eff
            a.eff_verb = eff
            if a.verb is None and a.target is None and prev is not None and prev.target is not None and \
                    prev.target[0] in ("own", "place") and v.own_place:
                a.target = ("own", "")   # "the milk goes in its bin, then the loaf"
            if a.verb is not None or a.target is not None:
                prev = a
        if v.own_place:  # "start with the milk, then put the can in its bin": a bare list takes the next action's
            for i, a in enumerate(self.actions):
                if a.movers and a.eff_verb is None and a.target is None:
                    nxt = next((b for b in self.actions[i + 1:] if b.target is not None or
                                b.eff_verb in v.goal_skills), None)
                    if nxt is not None:
                        a.target, a.eff_verb = ("own", ""), nxt.eff_verb
        goal_skill = v.goal_skills[0]
        out: list[tuple[str, tuple[int, int], int]] = []
        for a in self.actions:
            if a.all_ and self.left:
                a.movers = [m for m in a.movers if m not in self.left]
            if not a.movers:
                continue
            skill = a.eff_verb if a.eff_verb in v.goal_skills else goal_skill
            target = a.target
            if target is None:
                if a.eff_verb is None or a.eff_verb not in v.goal_skills:
                    continue
                if not v.own_place:
                    self.refuse("unclear", f"'{v.objects[a.movers[0]][0]}': the instruction does not say where it "
                                           f"goes")
                target = ("own", "")
            for m in a.movers:
                kind, name = target
                if v.places:
                    if a.rel == "under":
                        self.refuse("impossible", f"'under' does not fit task {v.task!r}: objects go into places")
                    if kind == "obj":
                        self.refuse("impossible", f"{m} onto {name}: {name} is an object, not a place of task "
                                                  f"{v.task!r}")
                    if kind == "own":
                        if m not in v.own_place:
                            self.refuse("unclear", f"{m} has no place of its own in task {v.task!r}")
                        name = v.own_place[m]
                    goal = v.goal(skill, (m, name))
                    lost = name not in goal  # the predicate does not name the place: check it here
                    if lost and "own_place" in v.rules and m in v.own_place and name != v.own_place[m]:
                        self.refuse("impossible", f"{goal} into {name}: {m} belongs in {v.own_place[m]}, "
                                                  f"not {name}")
                else:
                    if kind != "obj":
                        self.refuse("unclear", f"{m}: task {v.task!r} puts objects on objects, not on places")
                    goal = v.goal(skill, (name, m) if a.rel == "under" else (m, name))
                out.append((goal, a.step, a.index))
        return out

    def tower_list(self, toks: list[_Tok]) -> list[str]:
        """Goals of a tower given as a list with a direction or positions."""
        chunks: list[list[_Tok]] = [[]]
        for t in toks:
            if t.kind in ("COMMA", "CONJ", "SEQ", "SEQ_REV", "STOP", "COLON"):
                chunks.append([])
            else:
                chunks[-1].append(t)
        objs: list[str] = []
        marks: dict[str, str] = {}
        mark_order: list[str] = []
        excluded: set[str] = set()
        dirs = {t.value for t in toks if t.kind == "DIR"}
        pending_first = False   # "first, the blue cube, ...": the next cube named is the bottom one
        for ch in chunks:
            in_except = False
            for i, t in enumerate(ch):
                if t.kind == "OBJ" and pending_first and not in_except:
                    pending_first = False
                    marks.setdefault(t.value, "bottom")
                    mark_order.append("bottom")
                if t.kind in ("EXCEPT",):
                    in_except = True
                elif t.kind == "OBJ" and in_except:
                    excluded.add(t.value)
                elif t.kind == "OBJ" and t.value not in objs:
                    objs.append(t.value)
                elif t.kind in ("POS", "ORD", "FIRST"):
                    value = "bottom" if t.kind == "FIRST" else t.value
                    before = [x for x in ch[:i] if x.kind == "OBJ"]
                    after = [x for x in ch[i + 1:] if x.kind == "OBJ"]
                    who = before[-1] if before else after[0] if after else None
                    if who is None:
                        if t.kind == "FIRST":
                            pending_first = True
                            continue
                        self.refuse("unclear", f"'{t.text}' names no cube")
                    if who.value in marks and marks[who.value] != value:
                        self.refuse("impossible", f"{who.value} is put both {marks[who.value]} and {value}")
                    marks[who.value] = value
                    mark_order.append(value)
        if any(t.kind == "ALL" and t.text.startswith(("all", "every", "them all")) for t in toks):  # "stack all three with blue at the bottom and green on top"
            objs += [o for o in self.v.objects if o not in objs]
        objs = [o for o in objs if o not in excluded]
        if len(dirs) > 1:
            self.refuse("unclear", "the tower is listed both from the bottom and from the top")
        direction = next(iter(dirs), None)
        if direction is None:
            first = next((m for m in mark_order if m != "middle"), None)
            direction = {"bottom": "bt", "top": "tb"}.get(first or "")
        if direction is None:
            self.refuse("unclear", "the order of the tower is not stated (say which cube goes at the bottom)")
        n = len(objs)
        if n < 2:
            self.refuse("unclear", "a tower needs two cubes or more")
        slots: list[str | None] = [None] * n
        for o, m in marks.items():
            if o not in objs:
                continue
            if m == "middle" and n != 3:
                self.refuse("unclear", f"{o}: 'in the middle' of a tower of {n}")
            at = {"bottom": 0, "top": n - 1, "middle": 1}[m]
            if slots[at] is not None:
                self.refuse("impossible", f"{slots[at]} and {o} are both put {m} ({m} holds one cube)")
            slots[at] = o
        free = [i for i in range(n) if slots[i] is None]
        if direction == "tb":
            free.reverse()
        for o, i in zip([o for o in objs if o not in marks], free):
            slots[i] = o
        skill = self.v.goal_skills[0]
        return [self.v.goal(skill, (slots[i], slots[i - 1])) for i in range(1, n)]


def _refused(text: str, kind: str, reason: str) -> Grounding:
    return Grounding(instruction=text, goals=(), ordered=False, confidence=1.0, refused=reason,
                     grounded_by=GROUNDED_BY, details={"refusal": kind})


def read_instruction(vocab: TaskVocabulary, text: str) -> Grounding:
    """Read ``text`` as an instruction of ``vocab``'s task (the rules are in the module docstring).

    Returns a :class:`Grounding` with ``grounded_by="reference_reading"``, confidence 1.0, and either the goals
    with ``ordered``, or ``refused`` (one line naming the word or goal at fault) and ``goals=()``.
    """
    text = "" if text is None else str(text)
    try:
        return _read(vocab, text)
    except _Refusal as r:
        return _refused(text, r.kind, r.reason)


def _read(vocab: TaskVocabulary, text: str) -> Grounding:
    task = vocab.task
    if not text.strip():
        raise _Refusal("empty", f"no goal: the instruction is empty (task {task!r})")
    toks = _lex(vocab, text)
    for t in toks:
        if t.kind == "FOREIGN":
            raise _Refusal("missing_skill", f"'{t.text}' asks for a skill task {task!r} lacks (its skills: "
                                            f"{', '.join(vocab.skills)})")
    for t in toks:
        if t.kind == "UNKNOWN":
            raise _Refusal("out_of_vocabulary", f"'{t.text}' is not a word of task {task!r}'s vocabulary")
        if t.kind == "STRAY":
            raise _Refusal("out_of_vocabulary", f"'{t.text}' alone names no object or place of task {task!r}")
        if t.kind == "NEG":
            raise _Refusal("unclear", f"'{t.text}': negations are not read; say only what to do")
    r = _Reader(vocab)
    if vocab.ordered_by_support and not any(t.kind == "REL" for t in toks) and \
            any(t.kind in ("DIR", "POS", "ORD", "FIRST") for t in toks):
        goals = r.tower_list(toks)
        ordered_steps = 2
    else:
        for step, part in r.segments(toks):
            r.parse_part(step, part)
        found = r.goals()
        found.sort(key=lambda g: (g[1], g[2]))
        goals, steps = [], set()
        for g, step, _ in found:
            if g not in goals:
                goals.append(g)
                steps.add(step)
        ordered_steps = len(steps) if not r.in_order else len(goals)
    if not goals:
        raise _Refusal("empty", f"no goal: the instruction asks for nothing task {task!r} can do")
    why = vocab.impossibility(goals)
    if why is not None:
        raise _Refusal("impossible", why)
    if vocab.ordered_by_support:
        return Grounding(instruction=text, goals=vocab.canonical_order(goals), ordered=len(goals) > 1,
                         confidence=1.0, grounded_by=GROUNDED_BY)
    return Grounding(instruction=text, goals=tuple(goals), ordered=ordered_steps > 1 and len(goals) > 1,
                     confidence=1.0, grounded_by=GROUNDED_BY)


__all__ = ["FILLER_PHRASES", "FILLER_WORDS", "FOREIGN_VERBS", "GROUNDED_BY", "NEGATIONS", "read_instruction"]
