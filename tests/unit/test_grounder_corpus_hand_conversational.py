"""The conversational phrasing hand (planner_vlm.learned.grounder_corpora.hand_conversational) on the three tasks."""

from __future__ import annotations

import re

import numpy as np
import pytest

from planner_vlm.learned.grounder_corpora import hand_conversational as hand
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
    verbs = hand.missing_verbs(vocab)
    assert verbs
    pattern = re.compile(r"\b(" + "|".join(re.escape(v) for v in verbs) + r")\b")
    texts = set()
    for _ in range(2000):
        goals = hand.sample_goals(vocab, rng)
        assert goals
        assert vocab.impossibility(goals) is None, goals
        text, ordered = hand.phrase(vocab, goals, rng, "train")
        assert isinstance(text, str) and text.strip(), goals
        assert isinstance(ordered, bool)
        if vocab.ordered_by_support:
            assert ordered
        if len(goals) == 1 and not vocab.ordered_by_support:
            assert not ordered
        hit = pattern.search(text.lower())
        assert hit is None, (text, hit.group(0))
        texts.add(text)
    assert len(texts) >= 1500, len(texts)


@pytest.mark.parametrize("task", TASKS)
def test_negatives(task: str) -> None:
    vocab = _vocab(task)
    rng = np.random.default_rng(23)
    kinds = {k: 0 for k in KINDS}
    for _ in range(500):
        text, kind = hand.negatives(vocab, rng, "train")
        assert kind in KINDS
        assert isinstance(text, str)
        if kind != "empty":
            assert text.strip()
        kinds[kind] += 1
    assert all(n >= 60 for n in kinds.values()), kinds


@pytest.mark.parametrize("task", TASKS)
def test_impossible_negatives_are_impossible(task: str) -> None:
    """Each impossible negative is built from goals the vocabulary refuses (checked inside the generator)."""
    vocab = _vocab(task)
    lang = hand._Lang(vocab, np.random.default_rng(5))
    calls = []
    real = vocab.impossibility

    class Spy:
        def __getattr__(self, name):
            return getattr(vocab, name)

        def impossibility(self, goals):
            out = real(goals)
            calls.append(out)
            return out

    lang.v = Spy()
    for _ in range(200):
        calls.clear()
        text = hand._impossible(lang)
        assert text is not None
        assert calls and calls[-1] is not None


@pytest.mark.parametrize("task", TASKS)
def test_deterministic(task: str) -> None:
    vocab = _vocab(task)
    out = []
    for _ in range(2):
        rng = np.random.default_rng(3)
        out.append([hand.phrase(vocab, hand.sample_goals(vocab, rng), rng, "train") for _ in range(50)]
                   + [hand.negatives(vocab, rng, "train") for _ in range(50)])
    assert out[0] == out[1]
