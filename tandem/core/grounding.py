"""What a reading of an instruction gives: the goals it asks for, or a refusal.

A :class:`Grounding` is produced by whoever reads the instruction: the task's reference reading (the judge's, in
``sim/``), a learned grounder (``planner_vlm/learned/grounder.py``), a VLM, or the oracle (``TaskSpec.goals``).
Every summary, results row and memory store records one, with ``grounded_by`` saying who.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tandem.core.errors import TandemError


class InstructionRefused(TandemError):
    """An instruction was refused before anything moved: a word outside the task's vocabulary, a skill the task
    lacks, an impossible goal, or a reading that is not confident. The message is the one-line reason."""


@dataclass(frozen=True)
class Grounding:
    """One reading of an instruction.

    Attributes:
        instruction: the text read.
        goals: ordered goal predicates, e.g. ``("on(red,blue)", "on(green,red)")``; empty when refused.
        ordered: whether the goals must be achieved in this order (stated by the words, or by support).
        confidence: in [0, 1]; 1.0 for a rule-based reading that parsed.
        refused: None, or the one-line reason naming the word or goal at fault.
        grounded_by: who read it: ``"reference_reading"``, ``"learned_grounder"``, ``"vlm"``, ``"oracle"``.
        details: extra facts (per-slot probabilities, the VLM's disagreement), JSON-safe.
    """

    instruction: str
    goals: tuple[str, ...] = ()
    ordered: bool = False
    confidence: float = 1.0
    refused: str | None = None
    grounded_by: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the instruction was grounded (not refused)."""
        return self.refused is None

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``tandem-ground`` prints, plus ``instruction`` and ``grounded_by``."""
        out = {"instruction": self.instruction, "goals": list(self.goals), "ordered": bool(self.ordered),
               "confidence": round(float(self.confidence), 4), "refused": self.refused,
               "grounded_by": self.grounded_by}
        if self.details:
            out["details"] = self.details
        return out


__all__ = ["Grounding", "InstructionRefused"]
