"""The "constraints" hand of grounder training phrasings: possible goals, non-empty distinct texts, sound negatives."""

from __future__ import annotations

import re

import numpy as np
import pytest

from planner_vlm.learned.grounder_corpora import hand_constraints as hand
from sim.tasks.registry import task_vocabulary
from tandem.core.vocabulary import TaskVocabulary

TASKS = ("stack_three", "pick_place_bins", "nut_assembly")
KINDS = {"out_of_vocabulary", "missing_skill", "impossible", "empty"}


def _vocab(task: str) -> TaskVocabulary:
    return task_vocabulary(task)


def _verb_patterns() -> list[re.Pattern]:
    out = []
    for forms in hand.MISSING_SKILL_VERBS:
        for form in forms:
            out.append(re.compile(r"\b" + re.escape(form) + r"\b"))
    return out


@pytest.mark.parametrize("task", TASKS)
def test_positives(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(7)
    texts = set()
    patterns = _verb_patterns()
    for _ in range(2000):
        goals = hand.sample_goals(vocab, rng)
        assert goals and vocab.impossibility(goals) is None, goals
        if vocab.ordered_by_support:
            assert tuple(goals) == vocab.canonical_order(goals)
        text, ordered = hand.phrase(vocab, goals, rng, "train")
        assert isinstance(text, str) and text.strip(), goals
        assert isinstance(ordered, bool)
        if vocab.ordered_by_support:
            assert ordered
        low = text.lower()
        hits = [p.pattern for p in patterns if p.search(low)]
        assert not hits, (text, hits)
        texts.add(text)
    assert len(texts) >= 1500, len(texts)


@pytest.mark.parametrize("task", TASKS)
def test_negatives(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(11)
    seen = set()
    for _ in range(500):
        text, kind = hand.negatives(vocab, rng, "train")
        assert isinstance(text, str)
        assert kind in KINDS, kind
        seen.add(kind)
    assert seen == KINDS


@pytest.mark.parametrize("task", TASKS)
def test_impossible_negatives_are_impossible(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(13)
    T = hand._task(vocab)
    for _ in range(300):
        text, goals = hand._neg_impossible(T, rng)
        assert text.strip()
        assert vocab.impossibility(goals) is not None, (text, goals)


@pytest.mark.parametrize("task", TASKS)
def test_missing_skill_verbs_are_not_vocabulary_verbs(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(17)
    skill_words = {w for ws in vocab.skill_words.values() for p in ws for w in p.split()}
    T = hand._task(vocab)
    for _ in range(200):
        text = hand._neg_missing(T, rng).lower()
        assert any(re.search(r"\b" + re.escape(f) + r"\b", text) or
                   re.search(r"\b" + re.escape(b.split()[0]) + r"\b", text)
                   for b, f in hand.MISSING_SKILL_VERBS), text
    for base, _past in hand.MISSING_SKILL_VERBS:
        if not (set(base.split()) & vocab.words()):
            assert not (set(base.split()) & skill_words)


def test_deterministic() -> None:
    vocab = _vocab("pick_place_bins")
    a = [hand.phrase(vocab, hand.sample_goals(vocab, r), r, "train") for r in [np.random.default_rng(3)] for _ in range(50)]
    b = [hand.phrase(vocab, hand.sample_goals(vocab, r), r, "train") for r in [np.random.default_rng(3)] for _ in range(50)]
    assert a == b
