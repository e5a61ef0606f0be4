"""``pick_place_bins`` predicates (all from simulator ground truth):

* ``grasped(x)``: both finger-pad geom groups touch ``x`` (the test of robosuite's ``_check_grasp``, done on
  MuJoCo's contact arrays) and ``x``'s lowest point is at least :data:`LIFT_CLEARANCE` above the bin floors.
* ``in_bin(x)``: ``x``'s centre lies inside its own cell (divider-to-wall interior), its lowest point is
  below the cell walls' top, no gripper geom touches it (released) and it is at rest (settled).
  robosuite's own ``objects_in_bins`` uses a gripper-distance proxy instead of a release test, so it is
  not used here.
"""

from __future__ import annotations

from typing import Any, override

import numpy as np

from sim.tasks.pick_place_bins.scene import OBJECTS, WALL_HEIGHT, PickPlaceBinsScene
from sim.tasks.roles import TaskPredicates
from sim.tasks.types import TaskEpisode

#: Minimum height (m) of an object's lowest point above the bin floor for ``grasped`` to hold.
LIFT_CLEARANCE = 0.01
#: Max object speed (m/s) and angular speed (rad/s) for ``in_bin`` to count it as settled.
SETTLED_LIN_SPEED = 0.05
SETTLED_ANG_SPEED = 0.5


class PickPlaceBinsPredicates(TaskPredicates):
    """Predicates of ``pick_place_bins`` (see module doc).

    Args:
        scene: the task's scene (object poses and extents, bin cells).
    """

    def __init__(self, scene: PickPlaceBinsScene) -> None:
        self.scene = scene

    def _geom_ids(self, rs_env: Any) -> dict[str, np.ndarray]:
        """Geom ids (cached per model): each object's contact geoms, the whole gripper, and each finger pad group."""
        cache = rs_env.__dict__.get("_tandem_geom_ids")
        if cache is None:
            m = rs_env.sim.model
            gripper = rs_env.robots[0].gripper["right"]

            def ids(names: Any) -> np.ndarray:
                names = [names] if isinstance(names, str) else names
                return np.array(sorted({m.geom_name2id(n) for n in names}), dtype=np.int64)

            cache = {o: ids(self.scene.model_object(rs_env, o).contact_geoms) for o in OBJECTS}
            cache["_gripper"] = ids(gripper.contact_geoms)
            cache["_pad_left"] = ids(gripper.important_geoms["left_fingerpad"])
            cache["_pad_right"] = ids(gripper.important_geoms["right_fingerpad"])
            rs_env.__dict__["_tandem_geom_ids"] = cache
        return cache

    @staticmethod
    def _touching(rs_env: Any, geoms_a: np.ndarray, geoms_b: np.ndarray) -> bool:
        """True if any active MuJoCo contact pairs a geom of ``geoms_a`` with one of ``geoms_b``."""
        d = rs_env.sim.data._data
        if d.ncon == 0:
            return False
        g1, g2 = d.contact.geom1[: d.ncon], d.contact.geom2[: d.ncon]
        return bool(np.any((np.isin(g1, geoms_a) & np.isin(g2, geoms_b)) | (np.isin(g2, geoms_a) & np.isin(g1, geoms_b))))

    def gripper_touches(self, rs_env: Any, obj: str) -> bool:
        """True if any geom of the robot's gripper is in contact with ``obj``."""
        ids = self._geom_ids(rs_env)
        return self._touching(rs_env, ids["_gripper"], ids[obj])

    def _is_grasped(self, rs_env: Any, obj: str) -> bool:
        """Both finger-pad groups touch ``obj`` (as robosuite's ``_check_grasp``) and it is lifted."""
        if self.scene.bottom_z(rs_env, obj) <= self.scene.floor_z(rs_env) + LIFT_CLEARANCE:
            return False
        ids = self._geom_ids(rs_env)
        return self._touching(rs_env, ids["_pad_left"], ids[obj]) and self._touching(rs_env, ids["_pad_right"], ids[obj])

    def _velocity(self, rs_env: Any, obj: str) -> tuple[float, float]:
        joint = self.scene.model_object(rs_env, obj).joints[0]
        adr = rs_env.sim.model.get_joint_qvel_addr(joint)
        qvel = np.asarray(rs_env.sim.data.qvel[adr[0] : adr[1]], float)
        return float(np.linalg.norm(qvel[:3])), float(np.linalg.norm(qvel[3:6]))

    def inside_cell(self, rs_env: Any, obj: str) -> bool:
        """Geometry only: ``obj``'s centre is inside its goal cell (xy between walls and dividers) and its lowest
        point is below the walls' top. Says nothing about release or rest (see ``in_bin`` in :meth:`predicates`).

        Raises:
            UnknownObjectError: ``obj`` is not milk, bread, cereal or can.
        """
        pos, _ = self.scene.pose(rs_env, obj)
        lo, hi = self.scene.cell_bounds(rs_env, obj)
        inside_xy = bool(np.all(pos[:2] > lo) and np.all(pos[:2] < hi))
        wall_top = float(rs_env.bin2_pos[2]) + WALL_HEIGHT
        return inside_xy and self.scene.bottom_z(rs_env, obj) < wall_top and pos[2] > self.scene.floor_z(rs_env) - 0.01

    def _is_in_bin(self, rs_env: Any, obj: str) -> bool:
        if not self.inside_cell(rs_env, obj):
            return False
        lin, ang = self._velocity(rs_env, obj)
        settled = lin < SETTLED_LIN_SPEED and ang < SETTLED_ANG_SPEED
        return settled and not self.gripper_touches(rs_env, obj)

    @override
    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return OBJECTS, tuple(p for o in OBJECTS for p in (f"grasped({o})", f"in_bin({o})"))

    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        """``grasped(x)`` and ``in_bin(x)`` for all four objects (distractors included).

        ``in_bin`` requires the object inside its cell, released (no gripper contact) and settled
        (speed < :data:`SETTLED_LIN_SPEED` m/s, angular speed < :data:`SETTLED_ANG_SPEED` rad/s).
        """
        preds: dict[str, bool] = {}
        for obj in OBJECTS:
            preds[f"grasped({obj})"] = self._is_grasped(rs_env, obj)
            preds[f"in_bin({obj})"] = self._is_in_bin(rs_env, obj)
        return preds
