"""LIBERO tasks in tandem (the optional extra ``tandem[libero]``): ``libero_10/<LIBERO task name>``.

Four parts (see :mod:`sim.tasks`): :mod:`.scene` (LIBERO's BDDL scene and its official init states),
:mod:`.predicates` (the BDDL goal atoms, judged by LIBERO's own ``_eval_predicate``), :mod:`.expert` (the shared
skills of :mod:`.skills`), :mod:`.perturbations`. :mod:`.installation` finds and patches LIBERO, :mod:`.problem`
parses a task's BDDL, :mod:`.init_states` reads the official init states without torch.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sim.tasks.base import TaskDefinition
from tandem.core.grounding import Grounding

if TYPE_CHECKING:
    from sim.tasks.libero.scene import LiberoScene

__all__ = ["LiberoTask"]


def _normalised(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", re.sub(r"\s+", " ", text.lower())).strip()


class LiberoTask(TaskDefinition):
    """One LIBERO task, its four parts composed.

    Args:
        name: ``<suite>/<task>``.

    Raises:
        LiberoNotInstalled: the extra is missing. UnknownTaskError: no such LIBERO task.
    """

    def __init__(self, name: str) -> None:
        # the parts import MuJoCo and LIBERO: imported here, so that listing LIBERO's task names
        # (sim.tasks.libero.problem, a module of this package) stays light
        from sim.tasks.libero.expert import LiberoExpert
        from sim.tasks.libero.perturbations import LiberoPerturbations
        from sim.tasks.libero.predicates import LiberoPredicates
        from sim.tasks.libero.scene import LiberoScene

        scene = LiberoScene(name)
        super().__init__(scene=scene, predicates=LiberoPredicates(scene), expert=LiberoExpert(scene),
                         perturbations=LiberoPerturbations())

    def read_instruction(self, instruction: str) -> Grounding:
        """The judge's reading: LIBERO's own instruction (case, spacing and punctuation aside) means the BDDL goal;
        any other text is refused, because LIBERO judges a task only by its BDDL goal."""
        scene: LiberoScene = self.parts.scene  # type: ignore[assignment]
        own = scene.problem.instruction
        if _normalised(instruction) == _normalised(own):
            return Grounding(instruction=instruction, goals=scene.problem.goals, ordered=True, confidence=1.0,
                             grounded_by="reference_reading")
        return Grounding(instruction=instruction, refused=f"LIBERO task {scene.name!r} is judged by its BDDL goal "
                         f"only; its instruction is {own!r}", grounded_by="reference_reading")
