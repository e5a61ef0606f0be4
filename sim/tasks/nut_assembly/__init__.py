"""``nut_assembly``: put the square nut on the square peg and the round nut on the round peg, in a drawn order.

Four parts (see :mod:`sim.tasks`): :mod:`.scene` (robosuite's ``NutAssembly``, nuts spawned at rest, the drawn
order), :mod:`.predicates` (``grasped``, ``on_peg``), :mod:`.expert` (handle grasp, turn and threading with the
wrist kept in range), :mod:`.perturbations`.
"""

from __future__ import annotations

from sim.tasks.base import TaskDefinition
from sim.tasks.nut_assembly.expert import (
    ALIGN_NUT_Z,
    CARRY_NUT_Z,
    RELEASE_NUT_Z,
    RETREAT_HEIGHT,
    NutAssemblyExpert,
)
from sim.tasks.nut_assembly.perturbations import NutAssemblyPerturbations
from sim.tasks.nut_assembly.predicates import (
    ON_PEG_MAX_Z,
    SETTLED_ANG_SPEED,
    SETTLED_LIN_SPEED,
    NutAssemblyPredicates,
)
from sim.tasks.nut_assembly.scene import (
    NUT_REST_Z,
    NUTS,
    PEG_TOP_Z,
    PEGS,
    SKILL_TEXTS,
    TABLE_Z,
    NutAssemblyScene,
    NutInfo,
    PegInfo,
    make_nut_sampler,
)

__all__ = [
    "ALIGN_NUT_Z", "CARRY_NUT_Z", "NUTS", "NUT_REST_Z", "ON_PEG_MAX_Z", "PEGS", "PEG_TOP_Z", "RELEASE_NUT_Z",
    "RETREAT_HEIGHT", "SETTLED_ANG_SPEED", "SETTLED_LIN_SPEED", "SKILL_TEXTS", "TABLE_Z", "NutAssemblyExpert",
    "NutAssemblyPerturbations", "NutAssemblyPredicates", "NutAssemblyScene", "NutAssemblyTask", "NutInfo", "PegInfo",
    "make_nut_sampler",
]


class NutAssemblyTask(TaskDefinition):
    """Two-nut assembly: ``pick(nut)`` then ``insert(nut, peg)`` for each nut, nut order drawn per seed."""

    def __init__(self) -> None:
        scene = NutAssemblyScene()
        predicates = NutAssemblyPredicates(scene)
        super().__init__(scene=scene, predicates=predicates, expert=NutAssemblyExpert(scene, predicates),
                         perturbations=NutAssemblyPerturbations(scene, predicates))
