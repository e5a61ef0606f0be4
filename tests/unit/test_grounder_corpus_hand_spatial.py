"""The "spatial" hand's phrasing corpus (planner_vlm.learned.grounder_corpora.hand_spatial) is sound on every task."""

from __future__ import annotations

import re

import numpy as np
import pytest

from planner_vlm.learned.grounder_corpora import hand_spatial as hand
from sim.tasks.registry import task_vocabulary

TASKS = ("stack_three", "pick_place_bins", "nut_assembly")
KINDS = {"out_of_vocabulary", "missing_skill", "impossible", "empty"}


@pytest.mark.parametrize("task", TASKS)
def test_positives_and_negatives(task: str) -> None:
    vocab = task_vocabulary(task)
    rng = np.random.default_rng(7)
    missing = [re.compile(rf"\b{re.escape(m)}\b") for m in hand.MISSING_VERBS]
    texts = set()
    for _ in range(2000):
        goals = hand.sample_goals(vocab, rng)
        assert goals and vocab.impossibility(goals) is None
        text, ordered = hand.phrase(vocab, goals, rng, "train")
        assert isinstance(text, str) and text.strip()
        assert isinstance(ordered, bool)
        if vocab.ordered_by_support:
            assert ordered and tuple(goals) == vocab.canonical_order(goals)
        low = text.lower()
        assert not any(p.search(low) for p in missing), text
        texts.add(text)
    assert len(texts) >= 1500, len(texts)
    kinds = set()
    for _ in range(500):
        text, kind = hand.negatives(vocab, rng, "train")  # "impossible" asserts its goals inside the module
        assert isinstance(text, str)
        assert kind in KINDS
        kinds.add(kind)
    assert kinds == KINDS
