"""The grounder's training sources work together: each phrases any source's goals, and the mixture draws from all."""

from __future__ import annotations

import numpy as np
import pytest

from planner_vlm.learned.grounder_corpora import CORPORA, Mixture, load_corpus
from planner_vlm.learned.grounder_train import generate
from sim.tasks.registry import task_vocabulary
from tandem.core.errors import ConfigError

TASKS = ("stack_three", "pick_place_bins", "nut_assembly")


@pytest.mark.parametrize("task", TASKS)
def test_every_source_phrases_every_sources_goals(task):
    vocab = task_vocabulary(task)
    rng = np.random.default_rng(3)
    sources = {name: load_corpus(name) for name in CORPORA}
    for sampler in sources.values():
        for _ in range(40):
            goals = tuple(sampler.sample_goals(vocab, rng))
            assert goals and vocab.impossibility(goals) is None
            for writer in sources.values():
                text, ordered = writer.phrase(vocab, goals, rng, "train")
                assert isinstance(text, str) and text.strip()
                assert isinstance(ordered, (bool, np.bool_))


@pytest.mark.parametrize("task", TASKS)
def test_mixture_draws_from_every_source(task):
    vocab = task_vocabulary(task)
    mix = Mixture()
    examples, info = generate(vocab, mix, n_pos=400, n_impossible=40, n_neg=200, seed=0)
    kinds = {ex.kind for ex in examples}
    assert {"paraphrase", "out_of_vocabulary", "missing_skill", "empty"} <= kinds
    assert info["max_goals"] >= 2
    # each source's own draws are reachable: the mixture's texts are more varied than any one source's
    texts = {ex.text for ex in examples if ex.kind == "paraphrase"}
    assert len(texts) > 350


def test_mixture_refuses_unknown_or_repeated_sources():
    with pytest.raises(ConfigError, match="unknown source 'nope'"):
        Mixture(["grammar", "nope"])
    with pytest.raises(ConfigError, match="distinct"):
        Mixture(["grammar", "grammar"])
    with pytest.raises(ConfigError, match="positive numbers"):
        Mixture(["grammar"], weights=[float("nan")])
