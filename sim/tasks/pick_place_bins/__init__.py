"""``pick_place_bins``: put 2 to 4 grocery items (milk, bread, cereal, can) into their own bin cells.

Four parts (see :mod:`sim.tasks`): :mod:`.scene` (robosuite's ``PickPlace``, the drawn objects and order, bin
geometry), :mod:`.predicates` (``grasped``, ``in_bin``), :mod:`.expert` (clearance-aware top-down grasps, places
in the object's cell), :mod:`.perturbations` (``pull_from_bin``, ``miss_grasp``).
"""

from __future__ import annotations

from sim.tasks.base import TaskDefinition
from sim.tasks.pick_place_bins.expert import PickPlaceBinsExpert
from sim.tasks.pick_place_bins.perturbations import PickPlaceBinsPerturbations
from sim.tasks.pick_place_bins.predicates import (
    LIFT_CLEARANCE,
    SETTLED_ANG_SPEED,
    SETTLED_LIN_SPEED,
    PickPlaceBinsPredicates,
)
from sim.tasks.pick_place_bins.scene import BINS, GRASP, OBJECTS, SKILL_TEXTS, PickPlaceBinsScene

__all__ = [
    "BINS", "GRASP", "LIFT_CLEARANCE", "OBJECTS", "SETTLED_ANG_SPEED", "SETTLED_LIN_SPEED", "SKILL_TEXTS",
    "PickPlaceBinsExpert", "PickPlaceBinsPerturbations", "PickPlaceBinsPredicates", "PickPlaceBinsScene",
    "PickPlaceBinsTask",
]


class PickPlaceBinsTask(TaskDefinition):
    """Put the named groceries into their bins: ``pick(x)`` then ``place(x, "x_bin")`` per named object."""

    def __init__(self) -> None:
        scene = PickPlaceBinsScene()
        predicates = PickPlaceBinsPredicates(scene)
        super().__init__(scene=scene, predicates=predicates, expert=PickPlaceBinsExpert(scene),
                         perturbations=PickPlaceBinsPerturbations(scene, predicates))
