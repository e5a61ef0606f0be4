"""``stack_three``: stack three coloured cubes (red, green, blue) into a tower in a seed-drawn order.

Four parts (see :mod:`sim.tasks`): :mod:`.scene` (the ``Stack``-based env with three cubes, the drawn order),
:mod:`.predicates` (``grasped``, ``on``), :mod:`.expert` (pick and stack waypoints), :mod:`.perturbations`.
"""

from __future__ import annotations

from sim.tasks.base import TaskDefinition
from sim.tasks.stack_three.expert import StackThreeExpert
from sim.tasks.stack_three.perturbations import StackThreePerturbations
from sim.tasks.stack_three.predicates import ON_XY_TOL, ON_Z_TOL, SETTLED_SPEED, StackThreePredicates
from sim.tasks.stack_three.scene import (
    COLORS,
    CUBE_HALF,
    MIN_SPACING,
    SKILL_TEXTS,
    StackThreeEnv,
    StackThreeScene,
)

__all__ = [
    "COLORS", "CUBE_HALF", "MIN_SPACING", "ON_XY_TOL", "ON_Z_TOL", "SETTLED_SPEED", "SKILL_TEXTS",
    "StackThreeEnv", "StackThreeExpert", "StackThreePerturbations", "StackThreePredicates", "StackThreeScene",
    "StackThreeTask",
]


class StackThreeTask(TaskDefinition):
    """Task definition of ``stack_three``: its four parts, composed."""

    def __init__(self) -> None:
        scene = StackThreeScene()
        predicates = StackThreePredicates(scene)
        super().__init__(scene=scene, predicates=predicates, expert=StackThreeExpert(scene, predicates),
                         perturbations=StackThreePerturbations())
