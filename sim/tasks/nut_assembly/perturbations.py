"""``nut_assembly`` perturbations: the generic gripper ones of ``sim/perturbations.py`` (a nut dropped mid-carry, a
spurious closure before a grasp); none of its own."""

from __future__ import annotations

from sim.tasks.roles import TaskPerturbations


class NutAssemblyPerturbations(TaskPerturbations):
    """Perturbations of ``nut_assembly``: none of its own."""

    perturbation_names: tuple[str, ...] = ("open_gripper", "close_gripper")
