"""The ``hand_terse`` phrasing corpus: possible goals, non-empty texts, valid negatives, enough variety."""

from __future__ import annotations

import re

import numpy as np
import pytest

from planner_vlm.learned.grounder_corpora import hand_terse
from sim.tasks.registry import task_vocabulary
from tandem.core.vocabulary import TaskVocabulary

TASKS = ("stack_three", "pick_place_bins", "nut_assembly")
KINDS = {"out_of_vocabulary", "missing_skill", "impossible", "empty"}


def _vocab(task: str) -> TaskVocabulary:
    return task_vocabulary(task)


@pytest.mark.parametrize("task", TASKS)
def test_positives(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(1234)
    texts = set()
    distractors = set(hand_terse.MISSING_SKILL_VERBS)
    for _ in range(2000):
        goals = hand_terse.sample_goals(vocab, rng)
        assert goals and vocab.impossibility(goals) is None, goals
        if vocab.ordered_by_support:
            assert tuple(goals) == vocab.canonical_order(goals)
        text, ordered = hand_terse.phrase(vocab, goals, rng, "train")
        assert isinstance(text, str) and text.strip()
        assert isinstance(ordered, bool)
        if vocab.ordered_by_support:
            assert ordered
        words = set(re.findall(r"[a-z]+", text.lower()))
        assert not words & distractors, (text, words & distractors)
        texts.add(text)
    assert len(texts) >= 1500, len(texts)


@pytest.mark.parametrize("task", TASKS)
def test_negatives(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(4321)
    kinds: dict[str, int] = {}
    skill_words = {w for ws in vocab.skill_words.values() for p in ws for w in p.split()}
    for _ in range(500):
        text, kind = hand_terse.negatives(vocab, rng, "train")
        assert isinstance(text, str)
        assert kind in KINDS
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == "impossible":
            assert vocab.impossibility(hand_terse.last_impossible_goals) is not None
            assert text.strip()
        if kind == "missing_skill":
            words = set(re.findall(r"[a-z]+", text.lower()))
            assert (words & set(hand_terse.MISSING_SKILL_VERBS)) - skill_words, text
    assert set(kinds) == KINDS
    assert min(kinds.values()) >= 75, kinds


def test_deterministic() -> None:
    vocab = _vocab("pick_place_bins")
    a = [hand_terse.phrase(vocab, hand_terse.sample_goals(vocab, r), r, "train")
         for r in [np.random.default_rng(7)] for _ in range(50)]
    b = [hand_terse.phrase(vocab, hand_terse.sample_goals(vocab, r), r, "train")
         for r in [np.random.default_rng(7)] for _ in range(50)]
    assert a == b
