"""``pick(o)``: a top-down grasp of object ``o``, shared by every LIBERO scene.

The grasp point is the centre of the object's collision box (:meth:`LiberoWorld.body_box`) in x, y, and
:data:`GRASP_DEPTH` below its top (no lower than :data:`MIN_GRASP_HEIGHT` above its bottom); the finger axis runs
along the box's narrower horizontal side, so the fingers close across it.
"""

from __future__ import annotations

import numpy as np

from sim.tasks.libero.world import LiberoWorld
from sim.tasks.types import Waypoint

#: How far below the object's top the grip site closes (m).
GRASP_DEPTH = 0.03
#: The lowest the grip site goes above the object's bottom (m).
MIN_GRASP_HEIGHT = 0.01
#: Approach height above the grasp point (m), and the lift after closing (m).
APPROACH = 0.12
LIFT = 0.15


def grasp_point(world: LiberoWorld, obj: str) -> tuple[np.ndarray, float]:
    """``(grip-site position (3,) m world, yaw rad)`` of the grasp of ``obj`` (see the module doc)."""
    lo, hi = world.body_box(obj)
    centre = (lo + hi) / 2
    z = max(hi[2] - GRASP_DEPTH, lo[2] + MIN_GRASP_HEIGHT)
    size = hi - lo
    yaw = 0.0 if size[0] <= size[1] else np.pi / 2
    return np.array([centre[0], centre[1], z]), float(yaw)


def plan_pick(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``pick(args[0])``: above, down, close, lift."""
    p, yaw = grasp_point(world, args[0])
    up = np.array([0.0, 0.0, 1.0])
    return [
        Waypoint(pos=p + APPROACH * up, yaw=yaw, gripper=-1.0, tol=0.015, max_step=0.05, label="above"),
        Waypoint(pos=p, yaw=yaw, gripper=-1.0, tol=0.008, max_step=0.02, label="grasp"),
        Waypoint(pos=p, yaw=yaw, gripper=1.0, tol=0.02, max_step=0.01, hold=10, label="close"),
        Waypoint(pos=p + LIFT * up, yaw=yaw, gripper=1.0, tol=0.02, max_step=0.03, label="lift"),
    ]
