"""``nut_assembly`` predicates: ``grasped(nut)`` and ``on_peg(nut, peg)`` (threaded, released and settled)."""

from __future__ import annotations

from typing import Any, override

import numpy as np

from sim.tasks.nut_assembly.scene import NUTS, PEGS, TABLE_Z, NutAssemblyScene
from sim.tasks.roles import TaskPredicates
from sim.tasks.types import SKILL_PREDICATES, TaskEpisode

#: ``on_peg`` requires the nut origin below this z (m): far below the peg top (0.95 m), so the nut is threaded
#: on the peg rather than balanced on it. robosuite's own check uses the same ``table_offset[2] + 0.05``.
ON_PEG_MAX_Z = TABLE_Z + 0.05
#: A nut is settled below these speeds of its free joint (m/s, rad/s).
SETTLED_LIN_SPEED = 0.05
SETTLED_ANG_SPEED = 1.0


class NutAssemblyPredicates(TaskPredicates):
    """Predicates of ``nut_assembly`` (see module doc).

    Args:
        scene: the task's scene (nut and peg poses).
    """

    def __init__(self, scene: NutAssemblyScene) -> None:
        self.scene = scene

    def _gripper(self, rs_env: Any) -> Any:
        """The Panda's ``GripperModel`` (robosuite 1.5 keeps one per arm in a dict)."""
        robot = rs_env.robots[0]
        return robot.gripper[robot.arms[0]] if isinstance(robot.gripper, dict) else robot.gripper

    def is_grasped(self, rs_env: Any, name: str) -> bool:
        """Both Panda finger pads touch the nut (robosuite ``_check_grasp``)."""
        nut = self.scene.nut_object(rs_env, name)
        return bool(rs_env._check_grasp(gripper=self._gripper(rs_env), object_geoms=nut.contact_geoms))

    def is_settled(self, rs_env: Any, name: str) -> bool:
        """The nut's free-joint speed is below :data:`SETTLED_LIN_SPEED` (m/s) and :data:`SETTLED_ANG_SPEED` (rad/s)."""
        nut = self.scene.nut_object(rs_env, name)
        qvel = np.asarray(rs_env.sim.data.get_joint_qvel(nut.joints[0]))
        return bool(np.linalg.norm(qvel[:3]) < SETTLED_LIN_SPEED and np.linalg.norm(qvel[3:]) < SETTLED_ANG_SPEED)

    def is_on_peg(self, rs_env: Any, name: str, peg: str) -> bool:
        """The nut is threaded on ``peg``, released and settled.

        Threaded: the nut origin is within the peg's ``xy_tol`` of the peg axis and below :data:`ON_PEG_MAX_Z`
        (so it surrounds the peg instead of lying on its top). Released: no gripper geom touches the nut
        (robosuite's own check has no release test, see FIELD-NOTES). Settled: :meth:`is_settled`.
        """
        pos, _ = self.scene.nut_pose(rs_env, name)
        peg_xy = self.scene.peg_pos(rs_env, peg)[:2]
        if not (np.linalg.norm(pos[:2] - peg_xy) < PEGS[peg].xy_tol and pos[2] < ON_PEG_MAX_Z):
            return False
        released = not rs_env.check_contact(self._gripper(rs_env), self.scene.nut_object(rs_env, name))
        return bool(released and self.is_settled(rs_env, name))

    @override
    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        preds = tuple(SKILL_PREDICATES["pick"].format(n) for n in NUTS)
        preds += tuple(SKILL_PREDICATES["insert"].format(n, p) for n in NUTS for p in PEGS)
        return tuple(NUTS), preds

    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        """``grasped(n)`` for each nut and ``on_peg(n,p)`` for every nut/peg pair (see :meth:`is_on_peg`)."""
        preds = {SKILL_PREDICATES["pick"].format(n): self.is_grasped(rs_env, n) for n in NUTS}
        for n in NUTS:
            for p in PEGS:
                preds[SKILL_PREDICATES["insert"].format(n, p)] = self.is_on_peg(rs_env, n, p)
        return preds
