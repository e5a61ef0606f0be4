"""Role 2 of 4 for a LIBERO task: the goal atoms as LIBERO's env judges them, and ``grasped`` of each object.

A goal predicate is true exactly when LIBERO's ``env._eval_predicate`` says so (the judge of the benchmark);
``grasped(o)`` is robosuite's grasp check (both finger pads touch ``o``).
"""

from __future__ import annotations

from typing import Any, override

from sim.tasks.libero.problem import atom_of
from sim.tasks.libero.scene import LiberoScene
from sim.tasks.libero.world import LiberoWorld
from sim.tasks.roles import TaskPredicates
from sim.tasks.types import TaskEpisode


class LiberoPredicates(TaskPredicates):
    """Predicates of one LIBERO task (see the module doc).

    Args:
        scene: the task's scene.
    """

    def __init__(self, scene: LiberoScene) -> None:
        self.scene = scene

    @override
    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        world = LiberoWorld(rs_env)
        out = {g: bool(rs_env._eval_predicate(atom_of(g))) for g in self.scene.problem.goals}
        for o in self.scene.problem.objects:
            out[f"grasped({o})"] = world.is_grasped(o)
        return out

    @override
    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        objects = tuple(self.scene.problem.objects)
        return objects, tuple(f"grasped({o})" for o in objects) + tuple(self.scene.problem.goals)
