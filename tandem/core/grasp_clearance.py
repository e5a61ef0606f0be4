"""Clearance of an open parallel gripper from obstacles and container walls, for choosing a top-down grasp's yaw.

One geometry for the scripted expert, which reads the simulator's poses (``sim/tasks/pick_place_bins/expert.py``),
and for the learned planner's grasp check, which reads the state model's estimates
(:mod:`planner_vlm.learned.grasp_check`).

Also the Panda's empty-hand opening (:data:`PANDA_EMPTY_OPENING_M`), read by the executor and the learned planner, and the
widest opening of a hand that holds something (:data:`PANDA_HELD_MAX_OPENING_M`).

Conventions: positions in m, world frame, z up; yaw in rad about world +z from world +x; a gripper's yaw is the
direction of its finger axis, the line its fingers close along, ``(cos yaw, sin yaw, 0)``. The gripper points
down. Its parts are boxes in the grip-site frame: ``(|x| from, |x| to, half y, bottom z)`` in m, with x along the
closing direction and z up from the grip site.

numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: The open Panda gripper as boxes in the grip-site frame, ``(|x| from, |x| to, half y, bottom z)`` in m (measured
#: from robosuite's collision meshes, with about 5 mm of margin): the open fingers, the hand, the wrist (link 7).
PANDA_OPEN_GRIPPER: tuple[tuple[float, float, float, float], ...] = (
    (0.035, 0.055, 0.014, -0.012),  # fingers (open)
    (0.0, 0.105, 0.028, 0.028),  # hand
    (0.0, 0.09, 0.048, 0.095),  # wrist (link 7)
)

#: A Panda gripper closed to less than this opening (m, the proprio's finger gap) holds nothing. Every object held in
#: the three tasks' demonstrations keeps the fingers 30 mm or more apart; closed on nothing they are 1.5-2.5 mm apart;
#: a bread pinched by its edge in closed loop held at 9.4 mm (pick_place_bins, validation seed 702), so the line sits
#: at 5 mm.
PANDA_EMPTY_OPENING_M = 0.005
#: A Panda gripper opened to this or more (m) holds nothing either: open it reads 78-80 mm, and objects held in the
#: demonstrations keep the fingers 31-60 mm apart (pick_place_bins' 113 demonstrations, frames closed for 10 steps).
PANDA_HELD_MAX_OPENING_M = 0.07


@dataclass(frozen=True)
class Container:
    """An open box that the gripper works inside (a bin): its inner walls' xy rectangle and their top.

    Attributes:
        inner_lo, inner_hi: ``(x, y)`` m, world frame, of the inner faces of the walls.
        rim_z: world z (m) of the walls' top.
    """

    inner_lo: tuple[float, float]
    inner_hi: tuple[float, float]
    rim_z: float


def open_gripper_clearance(grasp: np.ndarray, yaw: float, obstacles: Sequence[tuple[np.ndarray, float]],
                           containers: Sequence[Container] = (),
                           parts: Sequence[tuple[float, float, float, float]] = PANDA_OPEN_GRIPPER) -> float:
    """Smallest xy gap (m; negative: overlap) between the open gripper at a grasp and the obstacles and walls.

    A part counts against an obstacle (or a container's walls) only if the obstacle's top is above the part's
    bottom when the grip site is at ``grasp``. An obstacle point inside a part gives -0.01; a part corner outside a
    container's inner rectangle gives its (negative) distance to it; a container counts only for a grasp inside it.

    Args:
        grasp: ``(3,)`` grip-site position (m, world).
        yaw: finger-axis yaw (rad).
        obstacles: ``(points (N, 2) m world xy sampled on the obstacle's outline, top z m)`` each.
        containers: walls that the gripper must stay inside of.
        parts: the open gripper (:data:`PANDA_OPEN_GRIPPER`).

    Returns:
        the clearance (m); ``inf`` with nothing to clear.
    """
    grasp = np.asarray(grasp, np.float64)
    closing = np.array([math.cos(yaw), math.sin(yaw)])
    across = np.array([closing[1], -closing[0]])
    frame = np.stack([closing, across])  # world xy -> (along closing, across)
    clear = np.inf
    for pts, top in obstacles:
        local = (np.asarray(pts, np.float64) - grasp[:2]) @ frame.T
        for x_lo, x_hi, half_y, z_bottom in parts:
            if top < grasp[2] + z_bottom:
                continue
            ax = np.abs(local[:, 0])
            dx = np.maximum(np.maximum(x_lo - ax, ax - x_hi), 0.0)
            dy = np.maximum(np.abs(local[:, 1]) - half_y, 0.0)
            gap = np.hypot(dx, dy)
            inside = (dx == 0) & (dy == 0)
            clear = min(clear, -0.01 if inside.any() else float(gap.min()))
    for box in containers:
        lo, hi = np.asarray(box.inner_lo, np.float64), np.asarray(box.inner_hi, np.float64)
        if np.any(grasp[:2] < lo) or np.any(grasp[:2] > hi):
            continue  # a grasp outside the box: its walls are not around the gripper
        for _x_lo, x_hi, half_y, z_bottom in parts:
            if box.rim_z < grasp[2] + z_bottom:
                continue
            for sx in (-1, 1):
                for sy in (-1, 1):
                    c = grasp[:2] + sx * x_hi * closing + sy * half_y * across
                    clear = min(clear, float(np.min(c - lo)), float(np.min(hi - c)))
    return float(clear)
