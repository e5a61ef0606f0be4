"""``stack_three`` perturbations: all generic (``sim/perturbations.py``); ``knock_top_cube`` and ``slip_fast`` were
made for this task (a cube knocked off its stack; a fast carry that slips), and ``knock_at_release`` (the knock at the
release step of a stack). The surprises ``vanish``, ``appearance_shift`` and ``move_hidden`` apply too."""

from __future__ import annotations

from sim.tasks.roles import TaskPerturbations


class StackThreePerturbations(TaskPerturbations):
    """Perturbations of ``stack_three``: none of its own."""

    perturbation_names = ("knock_top_cube", "open_gripper", "close_gripper", "slip_fast",
                          "vanish", "knock_at_release", "appearance_shift", "move_hidden")
