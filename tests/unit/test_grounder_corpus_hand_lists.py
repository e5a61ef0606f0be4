"""The ``hand_lists`` training corpus: possible goals, refusable negatives, varied texts, no distractor verbs."""

from __future__ import annotations

import re

import numpy as np
import pytest

from planner_vlm.learned.grounder_corpora import hand_lists
from sim.tasks.registry import task_vocabulary
from tandem.core.vocabulary import TaskVocabulary

TASKS = ("stack_three", "pick_place_bins", "nut_assembly")
KINDS = {"out_of_vocabulary", "missing_skill", "impossible", "empty"}


def _vocab(task: str) -> TaskVocabulary:
    return task_vocabulary(task)


@pytest.mark.parametrize("task", TASKS)
def test_positives(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(11)
    verbs = re.compile(r"\b(" + "|".join(re.escape(v) for v in hand_lists.MISSING_VERBS) + r")\b", re.IGNORECASE)
    texts = set()
    for _ in range(2000):
        goals = hand_lists.sample_goals(vocab, rng)
        assert len(goals) >= 1
        assert vocab.impossibility(goals) is None, goals
        if vocab.ordered_by_support:
            assert tuple(goals) == vocab.canonical_order(goals)
        text, ordered = hand_lists.phrase(vocab, goals, rng, "train")
        assert isinstance(text, str) and text.strip(), goals
        assert isinstance(ordered, bool)
        if vocab.ordered_by_support:
            assert ordered
        assert not verbs.search(text), text
        texts.add(text)
    assert len(texts) >= 1500, len(texts)


@pytest.mark.parametrize("task", TASKS)
def test_negatives(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(12)
    counts = dict.fromkeys(KINDS, 0)
    for _ in range(500):
        text, kind = hand_lists.negatives(vocab, rng, "train")  # "impossible" asserts its goals' impossibility
        assert isinstance(text, str)
        assert kind in KINDS
        counts[kind] += 1
    assert min(counts.values()) >= 80, counts


@pytest.mark.parametrize("task", TASKS)
def test_impossible_goals_checked(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(13)
    for _ in range(300):
        _, goals = hand_lists._impossible(vocab, rng)
        assert vocab.impossibility(goals) is not None, goals


@pytest.mark.parametrize("task", TASKS)
def test_deterministic(task: str) -> None:
    vocab = _vocab(task)
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(50):
        ga, gb = hand_lists.sample_goals(vocab, a), hand_lists.sample_goals(vocab, b)
        assert ga == gb
        assert hand_lists.phrase(vocab, ga, a, "train") == hand_lists.phrase(vocab, gb, b, "train")
        assert hand_lists.negatives(vocab, a, "train") == hand_lists.negatives(vocab, b, "train")
