"""``stack_three`` predicates, from simulator state:

* ``grasped(x)``: both Panda fingerpads touch cube x (robosuite ``_check_grasp``).
* ``on(x,y)``: x rests on y: xy centre distance < :data:`ON_XY_TOL`, ``|z_x - (z_y + 2 h)| <`` :data:`ON_Z_TOL`,
  x not grasped and settled (linear speed < :data:`SETTLED_SPEED` m/s).
"""

from __future__ import annotations

from typing import Any, override

import numpy as np

from sim.tasks.roles import TaskPredicates
from sim.tasks.stack_three.scene import COLORS, CUBE_HALF, StackThreeScene
from sim.tasks.types import TaskEpisode

ON_XY_TOL = 0.02  # m
ON_Z_TOL = 0.008  # m
SETTLED_SPEED = 0.05  # m/s


class StackThreePredicates(TaskPredicates):
    """Predicates of ``stack_three`` (see module doc).

    Args:
        scene: the task's scene (cube poses).
    """

    def __init__(self, scene: StackThreeScene) -> None:
        self.scene = scene

    def speed(self, rs_env: Any, c: str) -> float:
        """Linear speed (m/s) of cube ``c``'s free joint."""
        return float(np.linalg.norm(rs_env.sim.data.get_joint_qvel(rs_env.cubes[c].joints[0])[:3]))

    def is_grasped(self, rs_env: Any, c: str) -> bool:
        """Both Panda fingerpads touch cube ``c`` (robosuite ``_check_grasp``)."""
        return bool(rs_env._check_grasp(gripper=rs_env.robots[0].gripper, object_geoms=rs_env.cubes[c]))

    @override
    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        preds = tuple(f"grasped({c})" for c in COLORS)
        preds += tuple(f"on({x},{y})" for x in COLORS for y in COLORS if x != y)
        return COLORS, preds

    @override
    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        pos = {c: self.scene.cube_pos(rs_env, c) for c in COLORS}
        grasped = {c: self.is_grasped(rs_env, c) for c in COLORS}
        out = {f"grasped({c})": grasped[c] for c in COLORS}
        for x in COLORS:
            for y in COLORS:
                if x == y:
                    continue
                d = pos[x] - pos[y]
                on = (np.linalg.norm(d[:2]) < ON_XY_TOL and abs(d[2] - 2 * CUBE_HALF) < ON_Z_TOL
                      and not grasped[x] and self.speed(rs_env, x) < SETTLED_SPEED)
                out[f"on({x},{y})"] = bool(on)
        return out
