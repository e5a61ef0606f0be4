"""Training text for the learned instruction grounder, from several independent hands.

A grounder trained on one phrasing generator reads that generator's sentences and little else: other people's
wordings (exclusions such as "leave the milk alone", "X first", "with the green cube at the bottom") fall outside it.
Each module here is one writer's generator, written without reading the others, the project grammar
(:mod:`tandem.core.phrasing`) or any evaluation file (``benchmarks/data/``). Each implements the
:class:`planner_vlm.learned.grounder_train.Phrasing` protocol over a task's declared vocabulary (never a task's
name), so a new task's grounder trains on all of them.

:class:`Mixture` draws each example from one source, chosen at random in proportion to its weight.

Sources (:data:`CORPORA`): ``grammar`` (:mod:`tandem.core.phrasing`, split ``"train"``), ``hand_terse`` (an operator's
commands and lists), ``hand_conversational`` (a non-expert's polite requests, end states, exclusions),
``hand_spatial`` (precise arrangements and temporal constraints), ``hand_lists`` (chains, labelled layouts, ordered
lists, partitives), ``hand_constraints`` (goals stated as rules or final arrangements).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

import numpy as np

from tandem.core.errors import ConfigError
from tandem.core.vocabulary import TaskVocabulary

#: Source name -> module implementing ``sample_goals``, ``phrase`` and ``negatives``.
CORPORA: dict[str, str] = {
    "grammar": "tandem.core.phrasing",
    "hand_terse": "planner_vlm.learned.grounder_corpora.hand_terse",
    "hand_conversational": "planner_vlm.learned.grounder_corpora.hand_conversational",
    "hand_spatial": "planner_vlm.learned.grounder_corpora.hand_spatial",
    "hand_lists": "planner_vlm.learned.grounder_corpora.hand_lists",
    "hand_constraints": "planner_vlm.learned.grounder_corpora.hand_constraints",
}
#: The shipped grounders' sources, equal weights.
DEFAULT_CORPORA: tuple[str, ...] = tuple(CORPORA)


def load_corpus(name: str) -> ModuleType:
    """The module of source ``name``.

    Raises:
        ConfigError: an unknown name (lists the known ones).
    """
    if name not in CORPORA:
        raise ConfigError(f"corpora: unknown source {name!r} (known: {', '.join(CORPORA)})")
    return importlib.import_module(CORPORA[name])


class Mixture:
    """Several sources as one :class:`~planner_vlm.learned.grounder_train.Phrasing`: each call picks a source with
    probability proportional to its weight, then draws from it (goals from one source may be phrased by another:
    every source phrases any possible goal list).

    Args:
        names: sources of :data:`CORPORA`, at least one, no repeats. weights: one positive number per source
            (default: equal).

    Raises:
        ConfigError: an unknown or repeated source, or weights that do not match.
    """

    def __init__(self, names: Sequence[str] = DEFAULT_CORPORA, weights: Sequence[float] | None = None):
        names = tuple(names)
        if not names or len(set(names)) != len(names):
            raise ConfigError(f"corpora: expected distinct source names, got {list(names)}")
        w = np.ones(len(names)) if weights is None else np.asarray(weights, float)
        if w.shape != (len(names),) or not np.all(np.isfinite(w)) or not np.all(w > 0):
            raise ConfigError(f"corpora weights: expected {len(names)} positive numbers, got {weights}")
        self.names = names
        self.sources = [load_corpus(n) for n in names]
        self.p = w / w.sum()
        self.__name__ = "+".join(names)

    def _pick(self, rng: np.random.Generator) -> ModuleType:
        return self.sources[int(rng.choice(len(self.sources), p=self.p))]

    def sample_goals(self, vocab: TaskVocabulary, rng: np.random.Generator) -> tuple[str, ...]:
        """A possible goal list from a randomly chosen source."""
        return tuple(self._pick(rng).sample_goals(vocab, rng))

    def phrase(self, vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator,
               split: str) -> tuple[str, bool]:
        """``(text, ordered)`` for ``goals`` from a randomly chosen source."""
        text, ordered = self._pick(rng).phrase(vocab, goals, rng, split)
        return str(text), bool(ordered)

    def negatives(self, vocab: TaskVocabulary, rng: np.random.Generator, split: str) -> tuple[str, str]:
        """``(text, kind)`` of an instruction to refuse, from a randomly chosen source."""
        text, kind = self._pick(rng).negatives(vocab, rng, split)
        return str(text), str(kind)


__all__ = ["CORPORA", "DEFAULT_CORPORA", "Mixture", "load_corpus"]
