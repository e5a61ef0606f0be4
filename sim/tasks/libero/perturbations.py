"""Role 4 of 4 for a LIBERO task: the generic perturbations of ``sim/perturbations.py`` that need no task code.

LIBERO tasks implement none of their own; the surprise suite's object-level perturbations are not yet wired to
LIBERO's objects.
"""

from __future__ import annotations

from sim.tasks.roles import TaskPerturbations


class LiberoPerturbations(TaskPerturbations):
    """No task-specific perturbations."""

    perturbation_names: tuple[str, ...] = ()
