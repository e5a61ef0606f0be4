"""The phrasing grammar: satisfiable goals, a train split free of the held-out constructions, every vocabulary
word in train, rich and deterministic surface forms, and negatives whose distractors differ between splits."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sim.tasks.registry import task_names, task_vocabulary
from tandem.core.errors import ConfigError
from tandem.core.phrasing import (
    DISTRACTORS,
    HELDOUT_ALTERNATIVES,
    HELDOUT_CONSTRUCTIONS,
    NEGATIVE_KINDS,
    negatives,
    phrase,
    phrase_traced,
    sample_goals,
    verb_forms,
)
from tandem.core.vocabulary import parse_goal

TASKS = ("stack_three", "pick_place_bins", "nut_assembly")

#: Surface marks of held-out constructions that no train instruction may contain.
HELDOUT_TEXT = (r"\bi need you to\b", r"when you get a chance", r"once that('s| is) done", r"but first",
                r"\brespective\b", r"\bcorrect\b", r"apart from", r"along with",
                r"(?<!where it )\bgoes\b", r"should go", r"\b(below|beneath)\b",
                r"starting (from|at) the", r"\bonce you\b", r"make it so that")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()))


def test_the_shipped_tasks_are_covered():
    assert set(TASKS) <= set(task_names())


@pytest.mark.parametrize("task", TASKS)
def test_sample_goals_are_satisfiable_in_canonical_order_with_the_task_shape(task):
    vocab = task_vocabulary(task)
    rng = np.random.default_rng(0)
    sizes = set()
    for _ in range(400):
        goals = sample_goals(vocab, rng)
        assert vocab.impossibility(goals) is None
        assert goals == vocab.canonical_order(goals)
        sizes.add(len(goals))
        objs = [parse_goal(g)[1][0] for g in goals]
        assert len(set(objs)) == len(objs)
    assert sizes == {"stack_three": {1, 2}, "pick_place_bins": {1, 2, 3, 4}, "nut_assembly": {1, 2}}[task]


@pytest.mark.parametrize("task", TASKS)
def test_phrase_is_deterministic_given_the_rng(task):
    vocab = task_vocabulary(task)
    a = [phrase(vocab, sample_goals(vocab, r), r, s) for r in [np.random.default_rng(3)] for s in ("train",) * 50]
    b = [phrase(vocab, sample_goals(vocab, r), r, s) for r in [np.random.default_rng(3)] for s in ("train",) * 50]
    assert a == b
    na = [negatives(vocab, r, "heldout") for r in [np.random.default_rng(4)] for _ in range(50)]
    nb = [negatives(vocab, r, "heldout") for r in [np.random.default_rng(4)] for _ in range(50)]
    assert na == nb


@pytest.mark.parametrize("task", TASKS)
def test_train_never_uses_a_heldout_construction_and_heldout_always_does(task):
    vocab = task_vocabulary(task)
    rng = np.random.default_rng(1)
    train_used: set[str] = set()
    for _ in range(1000):
        text, _, used = phrase_traced(vocab, sample_goals(vocab, rng), rng, "train")
        train_used |= set(used)
        for mark in HELDOUT_TEXT:
            assert not re.search(mark, text.lower()), (mark, text)
    assert not train_used & HELDOUT_CONSTRUCTIONS
    held_used: set[str] = set()
    for _ in range(600):
        text, _, used = phrase_traced(vocab, sample_goals(vocab, rng), rng, "heldout")
        assert set(used) & HELDOUT_CONSTRUCTIONS, text
        held_used |= set(used)
    assert held_used & HELDOUT_CONSTRUCTIONS


def test_every_heldout_construction_is_produced_by_some_task():
    used: set[str] = set()
    for task in TASKS:
        vocab = task_vocabulary(task)
        rng = np.random.default_rng(2)
        for _ in range(800):
            used |= set(phrase_traced(vocab, sample_goals(vocab, rng), rng, "heldout")[2])
    assert used >= HELDOUT_CONSTRUCTIONS


@pytest.mark.parametrize("task", TASKS)
def test_every_vocabulary_word_appears_in_the_train_split(task):
    vocab = task_vocabulary(task)
    rng = np.random.default_rng(5)
    seen: set[str] = set()
    for _ in range(1500):
        seen |= _words(phrase(vocab, sample_goals(vocab, rng), rng, "train")[0])
    assert vocab.words() <= seen, sorted(vocab.words() - seen)


@pytest.mark.parametrize(("task", "goals"), [
    ("stack_three", ("on(red,blue)",)), ("stack_three", ("on(blue,green)", "on(red,blue)")),
    ("pick_place_bins", ("in_bin(milk)",)), ("pick_place_bins", ("in_bin(can)", "in_bin(milk)", "in_bin(bread)")),
    ("nut_assembly", ("on_peg(round_nut,round_peg)",)),
    ("nut_assembly", ("on_peg(square_nut,square_peg)", "on_peg(round_nut,round_peg)")),
])
def test_the_grammar_has_several_hundred_surface_forms_per_goal_set(task, goals):
    vocab = task_vocabulary(task)
    rng = np.random.default_rng(6)
    forms = {phrase(vocab, goals, rng, "train")[0].lower().rstrip(".!?") for _ in range(1000)}
    assert len(forms) >= 500


@pytest.mark.parametrize("task", TASKS)
def test_ordered_follows_the_convention(task):
    vocab = task_vocabulary(task)
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(600):
        goals = sample_goals(vocab, rng)
        _, ordered = phrase(vocab, goals, rng, "train")
        if vocab.ordered_by_support or len(goals) == 1:
            assert ordered == (len(goals) > 1)
        seen.add((len(goals) > 1, ordered))
    if not vocab.ordered_by_support:
        assert {(True, True), (True, False)} <= seen  # both stated orders and plain lists


def test_the_grammar_covers_the_constructions_of_the_issue():
    texts = {t: [phrase(task_vocabulary(t), sample_goals(task_vocabulary(t), r), r, s)[0].lower()
                 for r in [np.random.default_rng(8)] for s in ("train", "heldout") * 800] for t in TASKS}
    for pattern in (r"\bthen\b", r"after that", r"^(\w+ )*first\b.*\b(finally|lastly)\b", r"\bbefore\b",
                    r"on top of", r"\bonto\b", r"\babove\b", r"from bottom to top", r"from top to bottom",
                    r"put it on", r"at the bottom", r"\bblock\b", r"please", r"could you", r"i'd like you to",
                    r"once that's done", r"\bunder\b"):
        assert any(re.search(pattern, t) for t in texts["stack_three"]), pattern
    for pattern in (r"\band \w+ them (in|into|inside|to) (their|the)\b", r"\b(everything|all)\b.*\bexcept\b",
                    r"\bits bin\b", r"\bsoda can\b", r"\bcarton\b", r"\bloaf\b", r"\bthe milk, the \w+,? and the\b",
                    r"^before \w+ing\b",
                    r"\bafter\b", r"\baway\b"):
        assert any(re.search(pattern, t) for t in texts["pick_place_bins"]), pattern
    for pattern in (r"their (pegs|posts|rods)", r"\bboth nuts\b", r"the other one", r"\bits (peg|post|rod)\b"):
        assert any(re.search(pattern, t) for t in texts["nut_assembly"]), pattern
    assert any(t != t.lower() for t in (phrase(task_vocabulary("stack_three"), ("on(red,blue)",),
                                               np.random.default_rng(i), "train")[0] for i in range(20)))


def test_distractors_differ_between_splits_and_are_no_vocabulary_word():
    vocab_words = set().union(*(task_vocabulary(t).words() for t in TASKS))
    for key in DISTRACTORS["train"]:
        train = set().union(*(_words(w) for w in DISTRACTORS["train"][key]))
        held = set().union(*(_words(w) for w in DISTRACTORS["heldout"][key]))
        assert not train & held, key
        if key != "empty":
            assert not (train | held) & vocab_words, key


@pytest.mark.parametrize("task", TASKS)
def test_negatives_draw_every_kind_and_keep_heldout_distractors_out_of_train(task):
    vocab = task_vocabulary(task)
    rng = np.random.default_rng(9)
    held_words = set().union(*(_words(w) for k, ws in DISTRACTORS["heldout"].items() if k != "empty" for w in ws))
    kinds = set()
    for _ in range(400):
        text, kind = negatives(vocab, rng, "train")
        kinds.add(kind)
        if kind in ("out_of_vocabulary", "missing_skill"):
            assert not _words(text) & held_words, text
        if kind == "empty":
            assert text in DISTRACTORS["train"]["empty"]
    assert kinds == set(NEGATIVE_KINDS)


def test_verb_forms():
    assert verb_forms("pick up") == ("pick up", "picks up", "picking up", "picked up", "picked up")
    assert verb_forms("put")[2:] == ("putting", "put", "put")
    assert verb_forms("place")[2:] == ("placing", "placed", "placed")
    assert verb_forms("tidy")[1:4] == ("tidies", "tidying", "tidied")
    assert verb_forms("drop")[2] == "dropping" and verb_forms("open")[2] == "opening"


def test_errors():
    vocab = task_vocabulary("stack_three")
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="split"):
        phrase(vocab, ("on(red,blue)",), rng, "test")
    with pytest.raises(ConfigError, match="impossible"):
        phrase(vocab, ("on(red,red)",), rng, "train")
    with pytest.raises(ConfigError, match="split"):
        negatives(vocab, rng, "validation")


def test_every_heldout_construction_has_a_train_alternative_that_train_produces():
    assert set(HELDOUT_ALTERNATIVES) == set(HELDOUT_CONSTRUCTIONS)
    assert not set(HELDOUT_ALTERNATIVES.values()) & HELDOUT_CONSTRUCTIONS
    used: set[str] = set()
    for task in TASKS:
        vocab = task_vocabulary(task)
        rng = np.random.default_rng(12)
        for _ in range(1500):
            used |= set(phrase_traced(vocab, sample_goals(vocab, rng), rng, "train")[2])
    assert set(HELDOUT_ALTERNATIVES.values()) <= used, sorted(set(HELDOUT_ALTERNATIVES.values()) - used)


def test_train_expresses_every_phenomenon_in_several_surface_forms():
    texts = {t: [phrase(task_vocabulary(t), sample_goals(task_vocabulary(t), r), r, "train")[0].lower()
                 for r in [np.random.default_rng(13)] for _ in range(3000)] for t in TASKS}
    towers = {  # phenomenon -> surface forms that train must all produce
        "inverse": [r"\bunder\b", r"\bunderneath\b", r"\bsupports?\b", r"\bcarr(y|ies)\b", r"\bholds?\b"],
        "end state": [r"^i want\b", r"^i'd like\b", r"should end up", r"^(make sure|arrange things so)",
                      r"the goal is", r"^when you('re| are) done"],
        "chain": [r"\b(red|green|blue)( \w+)? (on|onto|on top of|atop|upon|above) (the )?(red|green|blue)( \w+)? "
                  r"(on|onto|on top of|atop|upon|above) ", r"\w+ under \w+.* under"],
        "ordinal": [r"\bfirst\b.*\blast\b", r"\bsecond\b"],
        "elided": [r"all three (with|,|:)", r"them all"],
        "direction": [r"from bottom to top", r", (from the bottom up|bottom to top|from bottom to top)\b", r"top to bottom"],
        "pronoun": [r"\bit on\b", r"on that\b", r"\. (put|place|set|stack|move) it\b"],
        "order": [r"\bthen\b", r"after that", r"when that's done", r"only then", r"last of all", r"but before that",
                  r"^(please,? )?after\b", r"\bbefore\b"],
        "framing": [r"your (task|job) is to", r"time to", r"we (need|have) to", r"thank", r"could you", r"let's"],
    }
    own = {
        "order": [r"in (that|this) order", r"^(please,? )?(start|begin) (off )?with", r"comes first",
                  r"do the same", r"\bnext\b", r"^(please,? )?after you"],
        "scope": [r"\beverything\b", r"all of them", r"all the (items|objects|things)", r"\bleave\b.*\b(alone|out|where)",
                  r"\bonly the\b|\bjust the\b", r"but not", r"aside from|save for"],
        "place": [r"its place|its home|its spot", r"where it belongs", r"\baway\b", r"\bback\b", r"their (bins|pegs)"],
        "end state": [r"^i (want|need|would like)\b", r"should (be|end up|sit)", r"^(make sure|see to it)"],
    }
    for name, forms in towers.items():
        for f in forms:
            assert any(re.search(f, t) for t in texts["stack_three"]), (name, f)
    for name, forms in own.items():
        for f in forms:
            assert any(re.search(f, t) for t in texts["pick_place_bins"] + texts["nut_assembly"]), (name, f)
