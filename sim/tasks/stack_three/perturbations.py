"""``stack_three`` perturbations: all generic (``sim/perturbations.py``); ``knock_top_cube`` and ``slip_fast`` were
made for this task (a cube knocked off its stack; a fast carry that slips)."""

from __future__ import annotations

from sim.tasks.roles import TaskPerturbations


class StackThreePerturbations(TaskPerturbations):
    """Perturbations of ``stack_three``: none of its own."""

    perturbation_names = ("knock_top_cube", "open_gripper", "close_gripper", "slip_fast")
