"""A grounder for unit tests of planners: each instruction's goals are listed by hand, as a trained grounder would
read the words (``planner_vlm.learned.grounder.InstructionGrounder`` is tested on its own in test_grounder.py)."""

from __future__ import annotations

from tandem.core.grounding import Grounding
from tandem.core.types import TaskSpec


class ListedGrounder:
    """Reads each listed instruction as its listed goals; refuses any other text.

    Args:
        specs: task specs whose ``instruction`` reads as their ``goals``.
        readings: more instruction -> goals.
        vocabulary: the vocabulary it reads over (None: any).
        ordered: whether each reading states its goals' order.
    """

    vocabulary = None

    def __init__(self, *specs: TaskSpec, readings: dict[str, tuple[str, ...]] | None = None, vocabulary=None,
                 ordered: bool = False):
        self.ordered = ordered
        if vocabulary is not None:
            self.vocabulary = vocabulary
        self.readings = {s.instruction: tuple(s.goals) for s in specs}
        self.readings.update(readings or {})

    def ground(self, text: str) -> Grounding:
        if text not in self.readings:
            return Grounding(text, refused=f"no reading listed for {text!r}", grounded_by="listed (test)")
        return Grounding(text, goals=self.readings[text], ordered=self.ordered, grounded_by="listed (test)")
