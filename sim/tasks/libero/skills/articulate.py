"""``close(x)``, ``turn_on(x)``, ``turn_off(x)``: move a fixture's joints into LIBERO's range, with the gripper down.

One implementation for every scene, decided from the fixture's joints (:meth:`LiberoWorld.joint_frames`) and the
collision boxes of the bodies they move (:meth:`LiberoWorld.local_geom_boxes`), never from a task's name:

* **push** (``close``): the closed fingertips push the moving body's leading face toward the closed end of the joint
  (the joint limit on the side of LIBERO's ``default_close_ranges``), a little past it, press there for
  :data:`PRESS_STEPS`, then relax onto the closed end for :data:`EASE_STEPS` before backing off (let go at once, a
  door springs back off its stop, out of LIBERO's closed range).

  - slide joint (a drawer): the leading face is the part that sticks out most against the push (a drawer's handle);
    the fingers go down :data:`STANDOFF` in front of it, then push straight along the joint's axis, the gripper
    leaning :data:`SLIDE_PUSH_TILT` toward the push (``Waypoint.tilt``): straight down, the hand and the forearm meet
    the cabinet's face above the drawer before it is shut.
  - hinge joint with a vertical axis (a microwave's door): the fingers push the door's outer face at
    :data:`PUSH_RADIUS` of its reach from the hinge, high on the door so that the hand passes over its top edge
    (:data:`HAND_CLEARANCE`), and follow the arc the door sweeps, turning the finger axis along the door.

* **twist** (``turn_on``, ``turn_off``): a knob turning about a vertical axis is grasped by its top part (its fin)
  across the fin's narrow side, and the gripper turns about the knob's axis to the target angle (LIBERO's
  ``default_turnon_ranges`` / ``default_turnoff_ranges``), then lets go.

A joint already in its range is left alone. Hinges about a horizontal axis (a lid) are not handled. Figures:
``docs/results/libero_experts_articulation.md``. Positions in m (world), angles in rad.
"""

from __future__ import annotations

import math

import numpy as np

from sim.tasks.libero.world import JointFrame, LiberoWorld
from sim.tasks.types import Waypoint
from tandem.core.errors import TandemError

#: Half the thickness of the closed fingers across the push (m): the grip site stays this far from the face.
FINGER_HALF = 0.012
#: Distance (m) in front of the face where the fingers go down before pushing.
STANDOFF = 0.05
#: Height (m) above the moving body's top at which the hand passes over to the standoff point.
APPROACH_CLEARANCE = 0.08
#: Grip-site height below a pushed body's top (m) at most: the hand (about 5 cm above the grip site) passes over it.
HAND_CLEARANCE = 0.055
#: Lean (rad) of the gripper toward a drawer it pushes: fingertips ahead, the hand and the wrist back from the
#: cabinet's face above the drawer (straight down, they meet it about 5 cm before the drawer is shut).
SLIDE_PUSH_TILT = 0.5
#: Fraction of a door's reach from its hinge at which the fingers push it.
PUSH_RADIUS = 0.75
#: How far past the closed end the push aims (m for a slide, rad for a hinge): the joint's limit stops it.
OVERSHOOT_M = 0.03
OVERSHOOT_RAD = 0.06
#: Control steps the fingers keep pressing at the end of a push (the joint's limit stops the body).
PRESS_STEPS = 12
#: Control steps the fingers then rest at the closed end, their push relaxed, before backing off.
EASE_STEPS = 6
#: Largest turn (rad) between two waypoints of an arc or a twist.
ARC_STEP = 0.15
#: Grip-site depth below a knob's top when grasping it (m), and the top part of the knob that is grasped (m).
KNOB_GRASP_DEPTH = 0.015
KNOB_TOP_PART = 0.02
#: Fraction of LIBERO's turn-on range aimed at (from its near end), and the extra turn for the grasp's slip (rad).
TURN_FRACTION = 0.35
TWIST_MARGIN = 0.12
#: Back-off (m) from the face after a push, and the lift after letting go of a knob (m).
BACK_OFF = 0.05
LIFT = 0.08

_UP = np.array([0.0, 0.0, 1.0])


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """``(3, 3)`` rotation by ``angle`` rad about unit ``axis`` (Rodrigues)."""
    a = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``(8, 3)`` corners of the box ``lo..hi``."""
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])


def _world_corners(world: LiberoWorld, jf: JointFrame) -> list[np.ndarray]:
    """World corners ``(8, 3)`` of each collision box of the body ``jf`` moves."""
    pos, rot = world.body_frame(jf.body)
    return [pos + _corners(lo, hi) @ rot.T for lo, hi in world.local_geom_boxes(jf.body)]


def _steps(start: float, end: float) -> list[float]:
    """Angles from ``start`` (excluded) to ``end`` (included) at most :data:`ARC_STEP` apart."""
    n = max(1, math.ceil(abs(end - start) / ARC_STEP))
    return [start + (end - start) * (k + 1) / n for k in range(n)]


def closed_target(world: LiberoWorld, name: str, jf: JointFrame) -> float:
    """The joint position a close aims at: the joint's limit on the side of LIBERO's closed range.

    Raises:
        TandemError: ``name``'s fixture declares no closed range.
    """
    rng = world.articulation(name).get("default_close_ranges")
    if not rng:
        raise TandemError(f"close({name}): its fixture declares no closed range")
    mid = sum(rng) / 2
    lo, hi = jf.limits
    return lo if abs(mid - lo) < abs(mid - hi) else hi


def is_closed(world: LiberoWorld, name: str, jf: JointFrame) -> bool:
    """LIBERO's judgement of one joint (``is_close``: past the near end of the closed range, strictly)."""
    target = closed_target(world, name, jf)
    rng = world.articulation(name)["default_close_ranges"]
    near = min(rng) if target >= max(rng) else max(rng)
    return jf.qpos > near if target >= max(rng) else jf.qpos < near


# ---------------------------------------------------------------- push (close)
def _push_slide(world: LiberoWorld, jf: JointFrame, target: float) -> list[Waypoint]:
    s = 1.0 if target > jf.qpos else -1.0
    push = jf.axis * s
    push_h = np.array([push[0], push[1], 0.0])
    if np.linalg.norm(push_h) < 0.5:
        raise TandemError(f"close: joint {jf.name} slides too steeply ({jf.axis.round(2).tolist()}) to push with a "
                          "downward gripper")
    push_h /= np.linalg.norm(push_h)
    corners = _world_corners(world, jf)
    proj = [c @ push_h for c in corners]
    face = min(float(p.min()) for p in proj)
    lead = np.concatenate([c for c, p in zip(corners, proj, strict=True) if p.min() <= face + 0.005])
    top = max(float(c[:, 2].max()) for c in corners)
    centre = (lead.min(axis=0) + lead.max(axis=0)) / 2
    z = max(float(centre[2]), top - HAND_CLEARANCE)
    contact = centre - push_h * (centre @ push_h - face)
    contact[2] = z
    start = contact - push_h * FINGER_HALF
    travel = (abs(target - jf.qpos) + OVERSHOOT_M) * float(abs(jf.axis @ push_h))
    end = start + push_h * travel
    yaw = math.atan2(push_h[1], push_h[0]) + math.pi / 2  # finger axis across the push
    toward = math.atan2(push_h[1], push_h[0])
    standoff = start - push_h * STANDOFF
    tilt = dict(tilt=SLIDE_PUSH_TILT, tilt_toward=toward)
    return [
        Waypoint(pos=np.array([*standoff[:2], max(top, z) + APPROACH_CLEARANCE]), yaw=yaw, gripper=1.0, tol=0.02,
                 max_step=0.04, label="above", **tilt),
        Waypoint(pos=standoff, yaw=yaw, gripper=1.0, tol=0.01, max_step=0.02, label="standoff", **tilt),
        Waypoint(pos=end, yaw=yaw, gripper=1.0, tol=0.02, max_step=0.01, hold=PRESS_STEPS, label="push", **tilt),
        Waypoint(pos=end - push_h * OVERSHOOT_M, yaw=yaw, gripper=1.0, tol=0.01, max_step=0.004, hold=EASE_STEPS,
                 label="ease", **tilt),
        Waypoint(pos=end - push_h * BACK_OFF, yaw=yaw, gripper=1.0, tol=0.02, max_step=0.01, label="back_off",
                 **tilt),
    ]


def _push_hinge(world: LiberoWorld, jf: JointFrame, target: float) -> list[Waypoint]:
    if abs(jf.axis[2]) < 0.9:
        raise TandemError(f"close: hinge {jf.name} turns about {jf.axis.round(2).tolist()}, not a vertical axis; a "
                          "downward gripper cannot follow its arc")
    s = 1.0 if target > jf.qpos else -1.0
    pos, rot = world.body_frame(jf.body)
    anchor_l, axis_l = rot.T @ (jf.anchor - pos), rot.T @ jf.axis
    boxes = world.local_geom_boxes(jf.body)
    allc = np.concatenate([_corners(lo, hi) for lo, hi in boxes]) - anchor_l
    radial = allc.mean(axis=0) - (allc.mean(axis=0) @ axis_l) * axis_l
    u = radial / np.linalg.norm(radial)
    t = s * np.cross(axis_l, u)  # the way the pushed face moves
    reach = float((allc @ u).max())
    radius = PUSH_RADIUS * reach
    top, bottom = float((allc @ axis_l).max()), float((allc @ axis_l).min())
    h = max(top - HAND_CLEARANCE, bottom + 0.02)
    face = math.inf
    for lo, hi in boxes:
        c = _corners(lo, hi) - anchor_l
        if (c @ u).min() <= radius <= (c @ u).max() and (c @ axis_l).min() <= h <= (c @ axis_l).max():
            face = min(face, float((c @ t).min()))
    if not math.isfinite(face):
        raise TandemError(f"close: no face of the body hinge {jf.name} moves at {radius:.3f} m from its axis")
    grip_l = anchor_l + radius * u + h * axis_l + (face - FINGER_HALF) * t

    def at(phi: float, offset: float = 0.0) -> tuple[np.ndarray, float]:
        r = _rotation(jf.axis, phi - jf.qpos)
        p = jf.anchor + r @ (pos + rot @ (grip_l + offset * t) - jf.anchor)
        uw = r @ rot @ u
        return p, math.atan2(uw[1], uw[0])

    start, yaw0 = at(jf.qpos, -STANDOFF)
    top_w = float((pos + (allc + anchor_l) @ rot.T)[:, 2].max())
    end_phi = target + s * OVERSHOOT_RAD
    out = [
        Waypoint(pos=np.array([*start[:2], top_w + APPROACH_CLEARANCE]), yaw=yaw0, gripper=1.0, tol=0.02,
                 max_step=0.04, label="above"),
        Waypoint(pos=start, yaw=yaw0, gripper=1.0, tol=0.01, max_step=0.02, label="standoff"),
    ]
    contact, yaw = at(jf.qpos)
    out.append(Waypoint(pos=contact, yaw=yaw, gripper=1.0, tol=0.01, max_step=0.01, label="contact"))
    phis = _steps(jf.qpos, end_phi)
    for k, phi in enumerate(phis):
        p, yaw = at(phi)
        last = k == len(phis) - 1  # press against the closed end for a while
        out.append(Waypoint(pos=p, yaw=yaw, gripper=1.0, tol=0.02 if last else 0.015, max_step=0.012,
                            hold=PRESS_STEPS if last else 0, label="press" if last else "push"))
    eased, yaw = at(target)  # let the door off its stop gently: released at once, it springs back open
    out.append(Waypoint(pos=eased, yaw=yaw, gripper=1.0, tol=0.01, max_step=0.004, hold=EASE_STEPS, label="ease"))
    back, yaw = at(target, -BACK_OFF)
    out.append(Waypoint(pos=back, yaw=yaw, gripper=1.0, tol=0.02, max_step=0.01, label="back_off"))
    return out


def plan_close(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``close(args[0])`` (a fixture or a region of one, e.g. a drawer): push each of its joints that
    LIBERO does not judge closed to its closed end (see the module doc).

    Raises:
        TandemError: no joint, no closed range, or a joint a downward gripper cannot push.
    """
    name = args[0]
    joints = world.joint_frames(name)
    if not joints:
        raise TandemError(f"close({name}): it has no slide or hinge joint")
    out: list[Waypoint] = []
    for jf in joints:
        if is_closed(world, name, jf):
            continue
        target = closed_target(world, name, jf)
        out += _push_slide(world, jf, target) if jf.kind == "slide" else _push_hinge(world, jf, target)
    if out:
        last = out[-1]
        out.append(Waypoint(pos=last.pos + LIFT * _UP, yaw=last.yaw, gripper=1.0, tol=0.02, max_step=0.03,
                            label="lift"))
    return out


# ---------------------------------------------------------------- twist (turn_on, turn_off)
def _twist(world: LiberoWorld, jf: JointFrame, target: float) -> list[Waypoint]:
    if jf.kind != "hinge" or abs(jf.axis[2]) < 0.9:
        raise TandemError(f"turn: joint {jf.name} is not a hinge about a vertical axis ({jf.kind}, "
                          f"{jf.axis.round(2).tolist()})")
    corners = _world_corners(world, jf)
    top = max(float(c[:, 2].max()) for c in corners)
    fin = np.concatenate([c for c in corners if c[:, 2].max() >= top - KNOB_TOP_PART])
    pos, rot = world.body_frame(jf.body)
    # the fin's extent along two horizontal axes of the knob's own frame (its sides are square to them)
    ax = [rot[:, i] for i in range(3) if abs(rot[2, i]) < 0.7]
    ext = [float((fin @ a).max() - (fin @ a).min()) for a in ax]
    across = ax[int(np.argmin(ext))]
    centre = sum(((fin @ a).max() + (fin @ a).min()) / 2 * a for a in ax)
    grasp = np.array([centre[0], centre[1], top - KNOB_GRASP_DEPTH])
    yaw0 = math.atan2(across[1], across[0])
    s = 1.0 if target > jf.qpos else -1.0
    end_phi = target + s * TWIST_MARGIN
    spin = 1.0 if jf.axis[2] > 0 else -1.0
    out = [
        Waypoint(pos=grasp + LIFT * _UP, yaw=yaw0, gripper=-1.0, tol=0.012, max_step=0.04, label="above"),
        Waypoint(pos=grasp, yaw=yaw0, gripper=-1.0, tol=0.006, max_step=0.015, label="grasp"),
        Waypoint(pos=grasp, yaw=yaw0, gripper=1.0, tol=0.02, max_step=0.01, hold=10, label="close"),
    ]
    p = grasp
    for phi in _steps(jf.qpos, end_phi):
        r = _rotation(jf.axis, phi - jf.qpos)
        p = jf.anchor + r @ (grasp - jf.anchor)
        out.append(Waypoint(pos=p, yaw=yaw0 + spin * (phi - jf.qpos), gripper=1.0, tol=0.01, max_step=0.01,
                            label="twist"))
    yaw = out[-1].yaw
    out += [
        Waypoint(pos=p, yaw=yaw, gripper=-1.0, tol=0.02, max_step=0.005, hold=8, label="release"),
        Waypoint(pos=p + LIFT * _UP, yaw=yaw, gripper=-1.0, tol=0.02, max_step=0.03, label="lift"),
    ]
    return out


def _plan_turn(world: LiberoWorld, name: str, key: str, on: bool) -> list[Waypoint]:
    rng = world.articulation(name).get(key)
    if not rng:
        raise TandemError(f"turn {'on' if on else 'off'}({name}): its fixture declares no {key}")
    joints = [jf for jf in world.joint_frames(name) if jf.kind == "hinge"]
    if not joints:
        raise TandemError(f"turn {'on' if on else 'off'}({name}): it has no hinge joint")
    lo, hi = min(rng), max(rng)
    jf = joints[0]
    if on:  # LIBERO: on once qpos >= lo of the on range
        if jf.qpos >= lo + TWIST_MARGIN / 2:
            return []
        target = min(lo + TURN_FRACTION * (hi - lo), jf.limits[1])
    else:  # LIBERO: off once qpos < hi of the off range
        if jf.qpos < hi:
            return []
        target = max(lo, jf.limits[0])
    return _twist(world, jf, target)


def plan_turn_on(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``turn_on(args[0])``: twist its knob into LIBERO's turn-on range (see the module doc).

    Raises:
        TandemError: no turn-on range, no hinge, or a knob not turning about a vertical axis.
    """
    return _plan_turn(world, args[0], "default_turnon_ranges", on=True)


def plan_turn_off(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]:
    """Waypoints of ``turn_off(args[0])``: twist its knob back into LIBERO's turn-off range.

    Raises:
        TandemError: as :func:`plan_turn_on`.
    """
    return _plan_turn(world, args[0], "default_turnoff_ranges", on=False)
