"""``put_in(o, place)`` and ``put_on(o, place)``: carry the held object ``o`` over its place and let go.

The place is a region (a site: a basket's inside, a stove's cook region, a drawer's inside) or an object (a plate).
The object is lowered until its bottom is :data:`CLEARANCE` above the place's top (a region's box top is its
floor for ``in``; the top of the box for ``on``), then released. Without ``o`` in hand, the pick comes first.
"""

from __future__ import annotations

import numpy as np

from sim.tasks.libero.skills.pick import APPROACH, plan_pick
from sim.tasks.libero.world import LiberoWorld
from sim.tasks.types import Waypoint
from tandem.core.geometry import yaw_of_mat

#: Height of the object's bottom above the place's surface at release (m).
CLEARANCE = 0.02
#: Carry height above the release point (m).
CARRY = 0.10


def _place_box(world: LiberoWorld, place: str) -> tuple[np.ndarray, np.ndarray]:
    return world.region_box(place) if place in world.rs_env.object_sites_dict else world.body_box(place)


def _plan_place(world: LiberoWorld, args: tuple[str, ...], surface: str) -> list[Waypoint]:
    obj, place = args[0], args[1]
    pre: list[Waypoint] = []
    if world.is_grasped(obj):
        lo, _ = world.body_box(obj)
        bottom_below_grip = world.eef_pos()[2] - lo[2]
        yaw = yaw_of_mat(world.eef_mat())
    else:
        pre = plan_pick(world, (obj,))
        lo, _ = world.body_box(obj)
        bottom_below_grip = pre[1].pos[2] - lo[2]
        yaw = pre[0].yaw
    plo, phi = _place_box(world, place)
    centre = (plo + phi) / 2
    floor = plo[2] if surface == "in" else phi[2]
    release = np.array([centre[0], centre[1], floor + CLEARANCE + bottom_below_grip])
    carry_z = max(release[2] + CARRY, (pre[-1].pos[2] if pre else world.eef_pos()[2]))
    carry = np.array([centre[0], centre[1], carry_z])
    return pre + [
        Waypoint(pos=carry, yaw=yaw, gripper=1.0, tol=0.015, max_step=0.04, label="carry"),
        Waypoint(pos=release, yaw=yaw, gripper=1.0, tol=0.01, max_step=0.015, hold=2, label="lower"),
        Waypoint(pos=release, yaw=yaw, gripper=-1.0, tol=0.03, max_step=0.005, hold=8, label="release"),
        Waypoint(pos=release + [0.0, 0.0, APPROACH], yaw=yaw, gripper=-1.0, tol=0.02, max_step=0.03, label="retreat"),
    ]


def plan_put_in(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``put_in(o, region)``."""
    return _plan_place(world, args, "in")


def plan_put_on(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``put_on(o, place)``."""
    return _plan_place(world, args, "on")
