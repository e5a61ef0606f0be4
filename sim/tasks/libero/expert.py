"""Role 3 of 4 for a LIBERO task: the scripted expert, one shared skill planner per skill
(:mod:`sim.tasks.libero.skills`)."""

from __future__ import annotations

from typing import Any, override

import numpy as np

from sim.tasks.libero.scene import LiberoScene
from sim.tasks.libero.skills import skill_planner
from sim.tasks.libero.world import LiberoWorld
from sim.tasks.roles import TaskExpert
from sim.tasks.types import TaskEpisode, Waypoint
from tandem.core.errors import UnknownSkillError


class LiberoExpert(TaskExpert):
    """Expert of one LIBERO task.

    Args:
        scene: the task's scene (its skills).
    """

    def __init__(self, scene: LiberoScene) -> None:
        self.scene = scene

    @override
    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        if skill not in self.scene.skills:
            raise UnknownSkillError(skill, list(self.scene.skills))
        return skill_planner(skill)(LiberoWorld(rs_env), tuple(args))

    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str,
                   args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The moved object's pose once ``skill(*args)`` succeeded: resting where the placing skill releases it
        (put_in, put_on: :func:`~sim.tasks.libero.skills.place.resting_pose`, the spot the skill chooses) or lifted
        10 cm (pick); nothing moves for the skills that articulate a fixture."""
        world = LiberoWorld(rs_env)
        if skill == "pick":
            pos, quat = world.pose(args[0])
            return {args[0]: (pos + [0.0, 0.0, 0.10], quat)}
        if skill in ("put_in", "put_on"):
            from sim.tasks.libero.skills.place import resting_pose

            return {args[0]: resting_pose(world, args[0], args[1], "in" if skill == "put_in" else "on")}
        return {}
