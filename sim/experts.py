"""Scripted experts: a generic end-effector waypoint tracker and the privileged :class:`ScriptedExecutor`.

The task (``TaskDefinition.expert_waypoints``) decides *where* to go for a skill (pick, place, stack, insert);
this module decides *how*: OSC_POSE delta actions that track the waypoints in the grip-site frame.

Control law (FIELD-NOTES "Scripted experts": ``clip((target - eef) / 0.05, +-1)`` solved robosuite Stack 200/200):

* position: ``d = target - eef`` limited to ``waypoint.max_step`` (m per control step), then divided by the live
  controller's ``output_max[:3]`` (m per unit action; 0.05 by default) and clipped to ``[-1, 1]``.
  Commands are expressed in the controller's input frame (``input_ref_frame='base'``: rotated by the base frame).
* orientation: gripper pointing straight down (grip-site z axis = world -z) with the finger axis (grip-site x
  axis) at the waypoint's yaw, taken modulo pi (the Panda gripper is symmetric) nearest to the current yaw; a
  waypoint with a ``tilt`` then leans the approach axis by that angle toward ``tilt_toward`` (a push past a ledge).
  The rotation error (axis-angle, world) is divided by ``output_max[3:]`` (rad per unit action) and clipped.
* gripper: ``waypoint.gripper`` (-1 open, +1 close).
* a waypoint is reached when ``|target - eef| < tol`` and the orientation error < :data:`ROT_TOL`; the tracker
  then holds it for ``hold`` steps and moves on. A waypoint not reached in :data:`WAYPOINT_TIMEOUT` steps is
  skipped (so a blocked expert still terminates; the verifier then sees the failure).

Yaw convention: the gripper's yaw is the direction (rad, about world +z, from world +x) of its finger axis, i.e. of
the line between the two fingers = the grip site's x axis.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import mujoco
import numpy as np

from sim.tasks.base import Waypoint
from tandem.core.errors import NonFiniteActionError, TandemError, UnknownObjectError, UnknownSkillError
from tandem.core.geometry import yaw_of_mat
from tandem.core.types import Observation, Subgoal, TaskSpec
from tandem.core.wrist import resolve_yaw

if TYPE_CHECKING:
    from sim.robosuite_env import RobosuiteEnv

#: Orientation tolerance (rad) for a waypoint to count as reached.
ROT_TOL = 0.12
#: Steps after which an unreached waypoint is skipped.
WAYPOINT_TIMEOUT = 120
#: Grip-site rotation (site -> world) pointing down with yaw 0 (finger axis along world +x).
R_DOWN = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])


def down_rotation(yaw: float) -> np.ndarray:
    """Site->world rotation ``(3, 3)`` of a gripper pointing down with its finger axis at ``yaw`` (rad)."""
    c, s = math.cos(yaw), math.sin(yaw)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return rz @ R_DOWN


def tilt_rotation(tilt: float, toward: float) -> np.ndarray:
    """World rotation ``(3, 3)`` that leans a downward approach axis by ``tilt`` rad toward the horizontal direction
    ``toward`` (rad about world +z); the identity for ``tilt == 0``."""
    if tilt == 0.0:
        return np.eye(3)
    axis = np.array([math.sin(toward), -math.cos(toward), 0.0])  # (-z) x (cos, sin, 0)
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(tilt) * k + (1.0 - math.cos(tilt)) * (k @ k)


def rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Axis-angle ``(3,)`` (rad, world frame) of ``target @ current.T``."""
    r = target @ current.T
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, r.reshape(-1))
    if q[0] < 0:
        q = -q
    v = np.zeros(3)
    mujoco.mju_quat2Vel(v, q, 1.0)
    return v


class WaypointTracker:
    """Turns a list of :class:`Waypoint` into OSC_POSE delta actions.

    Args:
        waypoints: targets in order (grip-site position m world, yaw rad, gripper, tol, max_step, hold).
        pos_scale: ``float (3,)`` m per unit action (controller ``output_max[:3]``).
        rot_scale: ``float (3,)`` rad per unit action (controller ``output_max[3:6]``).
        base_rot: ``(3, 3)`` rotation of the controller's input frame in the world (robot base for 'base').
    """

    def __init__(self, waypoints: list[Waypoint], pos_scale: np.ndarray, rot_scale: np.ndarray,
                 base_rot: np.ndarray | None = None) -> None:
        self.waypoints = list(waypoints)
        self.pos_scale = np.asarray(pos_scale, dtype=np.float64)
        self.rot_scale = np.asarray(rot_scale, dtype=np.float64)
        self.base_rot = np.eye(3) if base_rot is None else np.asarray(base_rot, dtype=np.float64)
        self.index = 0
        self.held = 0
        self.steps_on = 0
        self.reached_log: list[tuple[str, bool]] = []  # (label, reached or timed out)
        self._yaw: float | None = None  # resolved yaw (rad) of the current waypoint

    @property
    def done(self) -> bool:
        """True once every waypoint was reached and held (or timed out)."""
        return self.index >= len(self.waypoints)

    @property
    def current(self) -> Waypoint | None:
        """The waypoint being tracked, or None once the last is reached."""
        return None if self.done else self.waypoints[self.index]

    def action(self, eef_pos: np.ndarray, eef_rot: np.ndarray, wrist_q: float | None = None) -> np.ndarray:
        """Next action ``float32 (7,)`` for the grip-site pose ``eef_pos (3,)`` m and ``eef_rot (3, 3)`` site->world.

        ``wrist_q`` (rad, Panda joint 7) lets the tracker pick the waypoint yaw modulo pi that keeps the wrist
        away from its joint limit (:func:`tandem.core.wrist.resolve_yaw`; chosen once per waypoint). After the last
        waypoint it keeps the last pose and gripper command (zero motion).
        """
        if self.done:
            last = self.waypoints[-1] if self.waypoints else None
            a = np.zeros(7, dtype=np.float32)
            a[6] = -1.0 if last is None else last.gripper
            return a
        wp = self.waypoints[self.index]
        if self._yaw is None:
            self._yaw = resolve_yaw(wp.yaw, yaw_of_mat(eef_rot), wrist_q)
        target_rot = down_rotation(self._yaw)
        if wp.tilt:
            target_rot = tilt_rotation(wp.tilt, wp.tilt_toward) @ target_rot
        rot_err = rotation_error(target_rot, eef_rot)
        d = np.asarray(wp.pos, dtype=np.float64) - eef_pos
        dist = float(np.linalg.norm(d))
        self.steps_on += 1
        if dist < wp.tol and np.linalg.norm(rot_err) < ROT_TOL:
            self.held += 1
        if self.held > wp.hold or self.steps_on > WAYPOINT_TIMEOUT:
            self.reached_log.append((wp.label, self.steps_on <= WAYPOINT_TIMEOUT))
            self.index += 1
            self.held = 0
            self.steps_on = 0
            self._yaw = None
            return self.action(eef_pos, eef_rot, wrist_q)
        if dist > wp.max_step:
            d = d * (wp.max_step / dist)
        a = np.zeros(7, dtype=np.float64)
        a[:3] = np.clip((self.base_rot.T @ d) / self.pos_scale, -1.0, 1.0)
        a[3:6] = np.clip((self.base_rot.T @ rot_err) / self.rot_scale, -1.0, 1.0)
        a[6] = wp.gripper
        return a.astype(np.float32)


def _validate(env: RobosuiteEnv, subgoal: Subgoal) -> None:
    task = env.task_def
    if subgoal.skill not in task.skills:
        raise UnknownSkillError(subgoal.skill, list(task.skills))
    known = set(task.object_names(env.episode)) | set(env.spec.targets)
    for a in subgoal.args:
        if a not in known:
            raise UnknownObjectError(a, sorted(known))


def plan_waypoints(env: RobosuiteEnv, subgoal: Subgoal) -> list[Waypoint]:
    """The scripted expert's waypoints for ``subgoal`` from the env's current state (privileged).

    Returns:
        list of :class:`Waypoint` (grip-site positions in m, world frame).

    Raises:
        UnknownSkillError / UnknownObjectError: skill or argument not known to the task of the episode.
    """
    if env.episode is None:
        raise TandemError("plan_waypoints: call env.reset() first")
    _validate(env, subgoal)
    return env.task_def.expert_waypoints(env.rs_env, env.episode, subgoal.skill, tuple(subgoal.args))


class ScriptedExecutor:
    """The privileged scripted expert as a ``tandem.core.protocols.Executor`` (reads the live simulator).

    ``set_subgoal`` asks the task for the skill's waypoints from the current simulator state; ``select_action``
    tracks them from the observation's proprio (grip-site pose, which is the frame the OSC controller tracks).

    Args:
        env: the :class:`RobosuiteEnv` whose simulator the expert may read.
    """

    #: True: it reads the live simulator (object poses, the controller), so it is an oracle.
    is_oracle: ClassVar[bool] = True

    def __init__(self, env: RobosuiteEnv) -> None:
        self.env = env
        ctrl = env.controller
        out_max = np.asarray(ctrl.output_max, dtype=np.float64).reshape(-1)
        in_max = np.asarray(ctrl.input_max, dtype=np.float64).reshape(-1)
        if out_max.shape[0] < 6:
            raise TandemError(f"ScriptedExecutor needs an OSC_POSE controller with 6 outputs, got {out_max}")
        # a unit of action moves output_max / input_max (linear scaling in robosuite's Controller.scale_action)
        scale = out_max[:6] / in_max[:6]
        self.pos_scale, self.rot_scale = scale[:3], scale[3:6]
        if getattr(ctrl, "input_ref_frame", "base") == "base" and getattr(ctrl, "origin_ori", None) is not None:
            self.base_rot = np.asarray(ctrl.origin_ori, dtype=np.float64)
        else:
            self.base_rot = np.eye(3)
        self.subgoal: Subgoal | None = None
        self.tracker: WaypointTracker | None = None

    def reset(self) -> None:
        """Forget the current subgoal."""
        self.subgoal = None
        self.tracker = None

    def set_subgoal(self, subgoal: Subgoal, task: TaskSpec | None = None) -> None:
        """Plan the waypoints of ``subgoal`` from the current state.

        Raises:
            UnknownSkillError / UnknownObjectError: see :func:`plan_waypoints`.
        """
        waypoints = plan_waypoints(self.env, subgoal)
        self.subgoal = subgoal
        self.tracker = WaypointTracker(waypoints, self.pos_scale, self.rot_scale, self.base_rot)

    def select_action(self, observation: Observation | None = None) -> np.ndarray:
        """Next OSC action ``float32 (7,)`` in ``[-1, 1]``.

        Uses ``observation.proprio`` (grip-site position m, quaternion wxyz) when given, else the live sim.

        Raises:
            TandemError: no subgoal set. NonFiniteActionError: NaN pose.
        """
        if self.tracker is None:
            raise TandemError("ScriptedExecutor.select_action: call set_subgoal() first")
        if observation is not None and observation.proprio.shape[0] >= 7:
            pos = observation.proprio[:3].astype(np.float64)
            mat = np.zeros(9)
            mujoco.mju_quat2Mat(mat, observation.proprio[3:7].astype(np.float64))
            rot = mat.reshape(3, 3)
        else:
            pos, rot = self.env.eef_pose()
        a = self.tracker.action(pos, rot, self.env.wrist_angle())
        if not np.all(np.isfinite(a)):
            raise NonFiniteActionError(f"scripted expert produced {a.tolist()} (eef pose NaN?)")
        return a

    def subgoal_done(self) -> bool:
        """True once the last waypoint was reached and held (or timed out)."""
        return self.tracker is not None and self.tracker.done

    @property
    def waypoints(self) -> list[Waypoint]:
        """Waypoints of the current subgoal (empty before ``set_subgoal``)."""
        return [] if self.tracker is None else list(self.tracker.waypoints)


def executor_info(ex: ScriptedExecutor) -> dict[str, Any]:
    """Debug view: current waypoint index/label and which waypoints were reached vs timed out."""
    t = ex.tracker
    if t is None:
        return {}
    return {"index": t.index, "n": len(t.waypoints), "label": None if t.current is None else t.current.label,
            "reached": list(t.reached_log)}
