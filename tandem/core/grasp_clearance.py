"""Clearance of an open parallel gripper from obstacles and container walls, for choosing a top-down grasp's yaw.

One geometry for the scripted expert, which reads the simulator's poses (``sim/tasks/pick_place_bins/expert.py``),
and for the learned planner's grasp check, which reads the state model's estimates
(:mod:`planner_vlm.learned.grasp_check`).

Also an upright object's outline from its two keypoints and box (:func:`footprint`), which the learned planner's grasp
check and pick_place_bins' pick geometry over a read draw their obstacles with, and the Panda's empty-hand opening (:data:`PANDA_EMPTY_OPENING_M`), read by the executor and the learned planner, and the
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
#: a bread pinched by its edge can hold them under 10 mm apart, so the line sits at 5 mm.
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


#: Symmetry order from which an object's footprint is taken as a disc (a can).
ROUND_ORDER = 8


def footprint(keypoints: np.ndarray, lo: np.ndarray, hi: np.ndarray, order: int) -> np.ndarray:
    """``(N, 2)`` world xy (m) sampled on an upright object's outline from its keypoints ``(2, 3)`` and body-frame
    box ``lo, hi (3,)``: a disc for symmetry order >= :data:`ROUND_ORDER`, the square of its larger half side for
    order 4 (its yaw is only known modulo a quarter turn), else the box turned to the keypoints' yaw."""
    kp = np.asarray(keypoints, np.float64)
    centre = kp[0, :2]
    if order >= ROUND_ORDER:
        r = float(np.max(np.abs(np.concatenate([lo[:2], hi[:2]]))))
        a = np.linspace(0.0, 2 * math.pi, 24, endpoint=False)
        return centre + r * np.stack([np.cos(a), np.sin(a)], axis=1)
    d = kp[1, :2] - kp[0, :2]
    phi = math.atan2(d[1], d[0])
    box_lo, box_hi = np.asarray(lo[:2], np.float64), np.asarray(hi[:2], np.float64)
    if order % 4 == 0:
        s = float(np.max(np.abs(np.concatenate([box_lo, box_hi]))))
        box_lo, box_hi = np.array([-s, -s]), np.array([s, s])
    corners = np.array([[box_lo[0], box_lo[1]], [box_hi[0], box_lo[1]], [box_hi[0], box_hi[1]], [box_lo[0], box_hi[1]]])
    t = np.linspace(0.0, 1.0, 7)[:, None]
    local = np.concatenate([corners[i] + t * (corners[(i + 1) % 4] - corners[i]) for i in range(4)])
    rot = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
    return centre + local @ rot.T
