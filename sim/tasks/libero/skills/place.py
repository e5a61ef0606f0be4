"""``put_in(o, place)`` and ``put_on(o, place)``: carry the held object ``o`` over its place and let go.

The place is a region (a site: a basket's inside, a stove's cook region, a caddy's compartment, a table region) or
an object (a plate). LIBERO judges both by the object's root-body position (its origin), not its box:

* over an object (``on(o, plate)``): the origin within 3 cm (xy) of the place's origin, touching it;
* in or on a region: the origin inside the region's site box (xy; z for ``in``), touching the region's parent.

So the skill puts the held object's *origin* there. Over an object the target is the place's origin. In a region
it is the best of a grid of spots and of a few yaws (the held one, a quarter turn, and the turns that square the
object with the region's axes, for a long object in a narrow compartment): the surface under the object's footprint there, found by casting rays straight down
(:meth:`LiberoWorld.surface_height`, the held object and the robot ignored), should be low (the floor, not another
object or a wall) and flat; for ``in`` the footprint should stay inside the region, against one of its sides
(packed, so that the next object finds room beside it); for ``on`` only the origin must lie in the region, so it
goes near one of the region's sides, the object overhanging onto the region's parent where that is flat. The object is lowered
until its bottom is :data:`CLEARANCE` above the highest surface under its footprint, and the fingers beside it
:data:`FINGER_CLEARANCE` above what lies under them (a basket's rim), and released. The carry goes
up first, then across at a height that clears the place, then down. Without ``o`` in hand, the pick comes first.
"""

from __future__ import annotations

import numpy as np

from sim.tasks.libero.skills.pick import APPROACH, plan_pick
from sim.tasks.libero.world import LiberoWorld
from sim.tasks.types import Waypoint
from tandem.core.geometry import yaw_of_mat

#: Height of the object's bottom above the highest surface under it at release (m).
CLEARANCE = 0.015
#: Height of the fingers' bottom above the highest surface under them at release (m).
FINGER_CLEARANCE = 0.01
#: Height of the object's bottom above everything around the place while carrying (m).
CARRY_CLEARANCE = 0.05
#: Candidate spots per side of a region, the margin (m) kept between the origin and the region's edge, the yaw
#: turns tried (rad) and the score weights: footprint outside the region (m), unevenness under it (m), distance to
#: the region's centre (m), a turn.
GRID = 7
EDGE_MARGIN = 0.01
TURNS = (0.0, np.pi / 2)
W_OUTSIDE = 3.0
W_UNEVEN = 1.0
W_CENTRE = 0.2
#: ``in`` a region, spots are packed against its side (the gap (m) between the footprint and the nearest side of the
#: region, kept :data:`PACK_GAP` wide, is scored): the next object finds room beside this one.
W_PACK = 0.3
PACK_GAP = 0.01
#: ``on`` a region only the object's origin must lie in it (the object may overhang it, supported by the region's
#: parent): spots keep the origin :data:`ON_EDGE_MARGIN` inside the region and near one of its sides, so that a
#: second object fits beside the first (two moka pots on one cook region).
ON_EDGE_MARGIN = 0.015
#: Score weight of the carry's length (m): of equal spots, the nearer.
W_NEAR = 0.01
W_TURN = 0.005
#: A turn is tried only for an object whose origin is this close (m, xy) to the grip site.
TURN_MAX_OFFSET = 0.015
#: Footprint samples per side for the surface rays.
FOOTPRINT_SAMPLES = 4


def _rot(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s], [s, c]])


def _principal_yaw(points: np.ndarray) -> float:
    """Yaw (rad) of the side of the smallest-area bounding rectangle of ``points (n, 2)`` (its orientation)."""
    best = (np.inf, 0.0)
    for a in np.linspace(0.0, np.pi / 2, 46, endpoint=False):
        q = points @ _rot(-a).T
        area = float(np.ptp(q[:, 0]) * np.ptp(q[:, 1]))
        if area < best[0]:
            best = (area, float(a))
    return best[1]


def _is_region(world: LiberoWorld, place: str) -> bool:
    return place in world.rs_env.object_sites_dict


def place_target(world: LiberoWorld, obj: str, place: str, grip: np.ndarray, yaw: float,
                 kind: str) -> tuple[np.ndarray, float, float]:
    """Where the grip site releases ``obj`` (held at ``grip`` (3,) with yaw ``yaw``): ``(release grip position
    (3,) m world, release yaw rad, carry height m)`` (see the module doc). ``kind`` is ``"in"`` or ``"on"``."""
    opos, _ = world.pose(obj)
    lo, _ = world.body_box(obj)
    origin_rel = opos[:2] - grip[:2]
    corners = world.collision_corners(obj)[:, :2] - grip[:2]
    bottom_below = grip[2] - lo[2]
    fingers = world.finger_corners()
    finger_rel = fingers[:, :2] - grip[:2]
    finger_below = grip[2] - float(fingers[:, 2].min()) if len(fingers) else 0.0
    region = _is_region(world, place)
    plo, phi = world.region_box(place) if region else world.body_box(place)
    if region:
        margin = EDGE_MARGIN if kind == "in" else ON_EDGE_MARGIN
        a = np.linspace(plo[0] + margin, phi[0] - margin, GRID)
        b = np.linspace(plo[1] + margin, phi[1] - margin, GRID)
        spots = np.stack(np.meshgrid(a, b), axis=-1).reshape(-1, 2)
        centre = (plo[:2] + phi[:2]) / 2
    else:
        centre = world.pose(place)[0][:2]
        spots = centre[None, :]
    # rays start above the place and everything standing on it
    z_from = float(phi[2])
    for other in world.movable_objects():
        if other == obj:
            continue
        olo, ohi = world.body_box(other)
        if np.all(olo[:2] < phi[:2]) and np.all(ohi[:2] > plo[:2]):
            z_from = max(z_from, float(ohi[2]))
    z_from += 0.02
    best: tuple[float, np.ndarray, float, float] | None = None
    # the held yaw, turned a quarter, and the turns that square the object's box with the world's axes (the axes of
    # LIBERO's region boxes), each as the tracker will make it: the smaller turn, yaw being taken modulo pi
    axis = _principal_yaw(corners)
    turns = sorted({round(float((t + np.pi / 2) % np.pi - np.pi / 2), 6)
                    for t in (*TURNS, -axis, np.pi / 2 - axis)}, key=abs)
    for turn in turns:
        if turn and np.linalg.norm(origin_rel) > TURN_MAX_OFFSET:
            continue  # the tracker may turn either way (yaw is taken modulo pi): only for an origin near the grip
        r = _rot(turn)
        rel_origin, rel_corners = r @ origin_rel, corners @ r.T
        flo, fhi = rel_corners.min(axis=0), rel_corners.max(axis=0)
        fx = np.linspace(flo[0], fhi[0], FOOTPRINT_SAMPLES)
        fy = np.linspace(flo[1], fhi[1], FOOTPRINT_SAMPLES)
        samples = np.stack(np.meshgrid(fx, fy), axis=-1).reshape(-1, 2)
        finger_samples = np.unique(np.round(finger_rel @ r.T, 3), axis=0)
        for spot in spots:
            g = spot - rel_origin  # grip xy that puts the origin on the spot
            heights = [world.surface_height(g + p, z_from, ignore=(obj,)) for p in samples]
            hs = np.array([h for h in heights if h is not None])
            if hs.size == 0:
                continue
            outside = 0.0
            if region and kind == "in":
                outside = float(np.sum(np.maximum(plo[:2] - (g + flo), 0.0)) + np.sum(np.maximum((g + fhi) - phi[:2], 0.0)))
            # the fingers come down beside the object: the grip stays high enough for both
            finger_hs = [world.surface_height(g + p, z_from, ignore=(obj,)) for p in finger_samples]
            finger_top = max((h for h in finger_hs if h is not None), default=-np.inf)
            grip_z = max(float(hs.max()) + CLEARANCE + bottom_below, finger_top + FINGER_CLEARANCE + finger_below)
            support = grip_z - bottom_below - CLEARANCE  # where the object's bottom is let go, less the clearance
            score = support + W_UNEVEN * float(hs.max() - hs.min()) + W_OUTSIDE * outside + W_TURN * abs(turn)
            if region and kind == "in":  # the footprint against a side of the region
                gap = float(min(np.min((g + flo) - plo[:2]), np.min(phi[:2] - (g + fhi))))
                score += W_PACK * abs(gap - PACK_GAP)
            elif region:  # the origin near a side: only the origin must lie in the region
                score += W_PACK * float(min(np.min(spot - plo[:2]), np.min(phi[:2] - spot)))
            else:
                score += W_CENTRE * float(np.linalg.norm(spot - centre))
            score += W_NEAR * float(np.linalg.norm(spot - opos[:2]))
            if best is None or score < best[0]:
                best = (score, np.array([g[0], g[1], grip_z]), yaw + turn, z_from)
    if best is None:  # nothing under the place: release at its top, over its centre
        g = centre - origin_rel
        best = (0.0, np.array([g[0], g[1], float(phi[2]) + CLEARANCE + bottom_below]), yaw, z_from)
    _, release, release_yaw, top = best
    carry_z = max(release[2], top + CARRY_CLEARANCE + bottom_below)
    return release, float(release_yaw), float(carry_z)


def resting_pose(world: LiberoWorld, obj: str, place: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The pose ``(pos (3,) m world, quat wxyz (4,))`` of ``obj``'s root body once this skill has released it over
    ``place`` and it rests there: its origin on the chosen spot, its bottom on the surface under it. From the held
    grasp when ``obj`` is in hand, else from the grasp :func:`plan_pick` would make."""
    import mujoco

    if world.is_grasped(obj):
        grip, yaw = world.eef_pos(), yaw_of_mat(world.eef_mat())
    else:
        pick = plan_pick(world, (obj,))
        grip, yaw = pick[1].pos, pick[1].yaw
    release, release_yaw, _ = place_target(world, obj, place, grip, yaw, kind)
    opos, oquat = world.pose(obj)
    lo, _ = world.body_box(obj)
    turn = release_yaw - yaw
    xy = release[:2] + _rot(turn) @ (opos[:2] - grip[:2])
    z = release[2] - (grip[2] - lo[2]) - CLEARANCE + (opos[2] - lo[2])
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, np.array([np.cos(turn / 2), 0.0, 0.0, np.sin(turn / 2)]), oquat)
    return np.array([xy[0], xy[1], z]), quat


def _plan_place(world: LiberoWorld, args: tuple[str, ...], kind: str) -> list[Waypoint]:
    obj, place = args[0], args[1]
    pre: list[Waypoint] = []
    if world.is_grasped(obj):
        grip = world.eef_pos()
        yaw = yaw_of_mat(world.eef_mat())
    else:
        pre = plan_pick(world, (obj,))
        grip = pre[1].pos
        yaw = pre[1].yaw
    release, release_yaw, carry_z = place_target(world, obj, place, grip, yaw, kind)
    start = pre[-1].pos if pre else grip
    carry_z = max(carry_z, float(start[2]))
    return pre + [
        Waypoint(pos=np.array([start[0], start[1], carry_z]), yaw=yaw, gripper=1.0, tol=0.02, max_step=0.03,
                 label="raise"),
        Waypoint(pos=np.array([release[0], release[1], carry_z]), yaw=release_yaw, gripper=1.0, tol=0.012,
                 max_step=0.04, label="carry"),
        Waypoint(pos=release, yaw=release_yaw, gripper=1.0, tol=0.02, max_step=0.015, hold=3, label="lower"),
        Waypoint(pos=release, yaw=release_yaw, gripper=-1.0, tol=0.03, max_step=0.005, hold=8, label="release"),
        Waypoint(pos=release + [0.0, 0.0, APPROACH], yaw=release_yaw, gripper=-1.0, tol=0.02, max_step=0.03,
                 label="retreat"),
    ]


def plan_put_in(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``put_in(o, region)``."""
    return _plan_place(world, args, "in")


def plan_put_on(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``put_on(o, place)``."""
    return _plan_place(world, args, "on")
