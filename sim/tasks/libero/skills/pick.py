"""``pick(o)``: a top-down grasp of object ``o``, shared by every LIBERO scene.

The grasp is chosen on the object's height map (:meth:`LiberoWorld.height_map`: the top of its collision geoms
seen from above), so that one rule grasps a can across its body, a box across its narrow side, an upright book
across its thickness and a mug by its rim (one finger inside the cup):

* a candidate is a grip-site position ``c`` (x, y) and a finger-axis yaw; along the finger axis the two fingers
  open :data:`FINGER_OPEN` apart;
* the grip site closes :data:`GRASP_DEPTH` below the highest point of the object between the fingers (no lower
  than :data:`MIN_GRASP_HEIGHT` above its bottom), and no lower than :data:`FINGER_CLEARANCE` above whatever lies
  under either finger (the scene ray-cast from above: the object, its neighbours, the table), nor so low that the
  hand above the fingers meets what stands under it (a basket's wall beside the object);
* the candidate is feasible when object material stands between the fingers at least :data:`MIN_HOLD` above that
  height, no wider than :data:`MAX_GRASP_WIDTH`, and the line between the fingers passes within
  :data:`MAX_COM_OFFSET` of the object's centre of mass;
* among feasible candidates the grasp centred on its material (the fingers close symmetrically) and nearest the
  object's centre of mass, across the narrowest material, wins.

Where no candidate is feasible the grasp falls back to the centre of the object's collision box, the fingers across
its narrower horizontal side.
"""

from __future__ import annotations

import numpy as np

from sim.tasks.libero.world import LiberoWorld
from sim.tasks.types import Waypoint
from tandem.core.geometry import yaw_of_mat

#: How far below the object's top (between the fingers) the grip site closes (m).
GRASP_DEPTH = 0.03
#: The lowest the grip site goes above the object's bottom (m).
MIN_GRASP_HEIGHT = 0.01
#: Approach height above the grasp point (m), and the lift after closing (m).
APPROACH = 0.12
LIFT = 0.15
#: Gap between the open fingers (m) (Panda in LIBERO: about 0.068 between the finger collision boxes), and the
#: widest material grasped (m).
FINGER_OPEN = 0.068
MAX_GRASP_WIDTH = 0.066
#: Half the width of a finger across the finger axis (m), and how far out it reaches along it past the gap (m)
#: (the finger's collision box, 0.021 x 0.027 x 0.063 m, and its pad).
FINGER_HALF_WIDTH = 0.011
FINGER_THICKNESS = 0.028
#: How far a finger reaches below the grip site (m), with a margin: everything under a finger (the object, its
#: neighbours, the table) must lie lower, so the grasp rises above low neighbours.
FINGER_CLEARANCE = 0.012
#: Material the fingers must hold (m, height of the object above the grip site between them).
MIN_HOLD = 0.005
#: The hand above the fingers (Panda's hand collision box, in the grip frame): half its length along the finger
#: axis, half its width across it (m), and the height of its bottom above the grip site (m). Whatever stands under it
#: (a basket's wall beside the object) must stay below it, so the grasp rises or turns.
HAND_HALF_LENGTH = 0.105
HAND_HALF_WIDTH = 0.032
HAND_BOTTOM = 0.045
#: Farthest the centre of mass may lie from the line between the fingers (m): no grazing grasp of an edge.
MAX_COM_OFFSET = 0.015
#: Height above the object's top from which the neighbourhood is ray-cast (m).
SCAN_HEIGHT = 0.15
#: Height-map resolution (m), candidate spacing (m), and candidate yaws.
RESOLUTION = 0.005
CANDIDATE_STEP = 0.01
YAWS = np.linspace(0.0, np.pi, 12, endpoint=False)
#: Score weights: off-centre material (m -> score), distance to the centre of mass, yaw turn (rad -> score).
W_OFFSET = 2.0
W_COM = 1.0
W_TURN = 0.005
#: Score weight of the grasped material's width (m -> score): across the narrowest side, a box is held flat.
W_WIDTH = 0.5


def _lookup(hmap: np.ndarray, x0: float, y0: float, pts: np.ndarray) -> np.ndarray:
    """Height-map values at points ``(..., 2)`` (nearest cell; -inf outside the map or where the object is not)."""
    ix = np.rint((pts[..., 0] - x0) / RESOLUTION).astype(int)
    iy = np.rint((pts[..., 1] - y0) / RESOLUTION).astype(int)
    inside = (ix >= 0) & (ix < hmap.shape[1]) & (iy >= 0) & (iy < hmap.shape[0])
    out = np.full(ix.shape, -np.inf)
    out[inside] = hmap[iy[inside], ix[inside]]
    return np.where(np.isnan(out), -np.inf, out)


def _fallback(world: LiberoWorld, obj: str) -> tuple[np.ndarray, float]:
    lo, hi = world.body_box(obj)
    centre = (lo + hi) / 2
    z = max(hi[2] - GRASP_DEPTH, lo[2] + MIN_GRASP_HEIGHT)
    size = hi - lo
    yaw = 0.0 if size[0] <= size[1] else np.pi / 2
    return np.array([centre[0], centre[1], z]), float(yaw)


def grasp_point(world: LiberoWorld, obj: str, current_yaw: float = 0.0) -> tuple[np.ndarray, float]:
    """``(grip-site position (3,) m world, yaw rad)`` of the grasp of ``obj`` (see the module doc)."""
    lo, hi = world.body_box(obj)
    margin = max(FINGER_OPEN / 2 + FINGER_THICKNESS, HAND_HALF_LENGTH) + 0.01
    xs = np.arange(lo[0] - margin, hi[0] + margin + 1e-9, RESOLUTION)
    ys = np.arange(lo[1] - margin, hi[1] + margin + 1e-9, RESOLUTION)
    hmap = world.height_map(obj, xs, ys)
    scene = world.scene_height_map(xs, ys, float(hi[2]) + SCAN_HEIGHT)  # the object, its neighbours, the table
    if not np.any(np.isfinite(hmap)):
        return _fallback(world, obj)
    com = world.centre_of_mass(obj)[:2]
    cx = np.arange(lo[0], hi[0] + 1e-9, CANDIDATE_STEP)
    cy = np.arange(lo[1], hi[1] + 1e-9, CANDIDATE_STEP)
    centres = np.stack(np.meshgrid(cx, cy), axis=-1).reshape(-1, 2)
    s = np.arange(-(FINGER_OPEN / 2 + FINGER_THICKNESS), FINGER_OPEN / 2 + FINGER_THICKNESS + 1e-9, RESOLUTION / 2)
    inner = np.abs(s) < FINGER_OPEN / 2
    finger = np.abs(s) > FINGER_OPEN / 2 + 0.002
    offsets = np.linspace(-FINGER_HALF_WIDTH, FINGER_HALF_WIDTH, 3)
    hand_s = np.linspace(-HAND_HALF_LENGTH, HAND_HALF_LENGTH, 22)
    hand_o = np.linspace(-HAND_HALF_WIDTH, HAND_HALF_WIDTH, 3)
    best: tuple[float, np.ndarray, float] | None = None
    for yaw in YAWS:
        u = np.array([np.cos(yaw), np.sin(yaw)])
        v = np.array([-u[1], u[0]])
        # (centres, lines across the finger width, samples along the finger axis, xy)
        pts = (centres[:, None, None, :] + offsets[None, :, None, None] * v
               + s[None, None, :, None] * u)
        h = _lookup(scene, xs[0], ys[0], pts)
        mid = _lookup(hmap, xs[0], ys[0], pts[:, 1])
        top = np.where(inner, mid, -np.inf).max(axis=1)
        under_fingers = np.where(finger, h.max(axis=1), -np.inf).max(axis=1)
        hand_pts = centres[:, None, None, :] + hand_o[None, :, None, None] * v + hand_s[None, None, :, None] * u
        under_hand = _lookup(scene, xs[0], ys[0], hand_pts).reshape(len(centres), -1).max(axis=1)
        z = np.maximum(np.maximum(top - GRASP_DEPTH, lo[2] + MIN_GRASP_HEIGHT), under_fingers + FINGER_CLEARANCE)
        z = np.maximum(z, under_hand - HAND_BOTTOM + 0.005)
        free = z <= top - MIN_HOLD
        material = inner & (mid >= z[:, None] + MIN_HOLD)
        has = material.any(axis=1)
        s_lo = np.where(material, s, np.inf).min(axis=1)
        s_hi = np.where(material, s, -np.inf).max(axis=1)
        s_lo, s_hi = np.where(has, s_lo, 0.0), np.where(has, s_hi, 0.0)
        beside = np.abs((centres - com) @ v)  # the centre of mass's distance from the line between the fingers
        ok = free & has & (s_hi - s_lo <= MAX_GRASP_WIDTH) & np.isfinite(top) & (beside <= MAX_COM_OFFSET)
        if not ok.any():
            continue
        off = np.where(ok, (s_lo + s_hi) / 2, 0.0)
        width = np.where(ok, s_hi - s_lo, 0.0)
        held = centres + off[:, None] * u  # where the material ends up, centred between the fingers
        turn = abs(((yaw - current_yaw + np.pi / 2) % np.pi) - np.pi / 2)
        score = W_OFFSET * np.abs(off) + W_WIDTH * width + W_COM * np.linalg.norm(held - com, axis=1) + W_TURN * turn
        score = np.where(ok, score, np.inf)
        k = int(np.argmin(score))
        if best is None or score[k] < best[0]:
            best = (float(score[k]), np.array([held[k][0], held[k][1], z[k]]), float(yaw))
    if best is None:
        return _fallback(world, obj)
    return best[1], best[2]


def plan_pick(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``pick(args[0])``: above, down, close, lift."""
    p, yaw = grasp_point(world, args[0], yaw_of_mat(world.eef_mat()))
    up = np.array([0.0, 0.0, 1.0])
    return [
        Waypoint(pos=p + APPROACH * up, yaw=yaw, gripper=-1.0, tol=0.015, max_step=0.05, label="above"),
        Waypoint(pos=p, yaw=yaw, gripper=-1.0, tol=0.008, max_step=0.02, label="grasp"),
        Waypoint(pos=p, yaw=yaw, gripper=1.0, tol=0.02, max_step=0.01, hold=10, label="close"),
        Waypoint(pos=p + LIFT * up, yaw=yaw, gripper=1.0, tol=0.02, max_step=0.03, label="lift"),
    ]
