"""Oracle goal images and keypoint traces from the live simulator (privileged; implements ``GoalProducer``).

* Goal image: save the exact state, teleport the subgoal's moved objects to ``task.goal_poses(...)``, render,
  restore (``RobosuiteEnv.save_state``/``restore_state``: MuJoCo integration state + gripper ``current_action``),
  so the simulation is bit-identical afterwards (tested).
* Trace: the current grip-site position followed by the scripted expert's planned waypoints
  (:func:`sim.experts.plan_waypoints`), projected into the camera (:mod:`sim.cameras`) and clipped into the image.
* 3-D trace (:class:`tandem.core.types.Trace3D`): the same points in metres (world frame), with the yaw the expert's
  tracker will command at each (:func:`tandem.core.waypoints.resolved_yaws`) and its gripper command. Its first point is
  the grip site now, with the current yaw and the first waypoint's gripper command.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sim.cameras import clip_to_image
from sim.experts import plan_waypoints
from tandem.core.errors import ConfigError
from tandem.core.geometry import yaw_of_mat
from tandem.core.types import KeypointTrace, Observation, Subgoal, Trace3D
from tandem.core.waypoints import waypoint_trace_3d

if TYPE_CHECKING:
    from sim.robosuite_env import RobosuiteEnv


class OracleGoalProducer:
    """Fills ``Subgoal.goal_image`` (teleport-render-restore) and ``Subgoal.trace`` (projected expert path).

    Args:
        env: the live :class:`RobosuiteEnv` (must be built with ``render=True`` for goal images).
        camera: user camera name of the goal image and the trace (``"agentview"``).
        goal_image: whether to render goal images.
        trace_points: whether to fill the keypoint trace (2-D, in ``camera``'s pixels).
        trace_3d: whether to fill the 3-D trace (needs no rendering).

    Raises:
        ConfigError: ``goal_image=True`` on an env built with ``render=False``.
        UnknownNameError: unknown camera.
    """

    #: True: it teleports objects in the live simulator and renders them.
    is_oracle: ClassVar[bool] = True

    def __init__(self, env: RobosuiteEnv, camera: str = "agentview", goal_image: bool = True,
                 trace_points: bool = True, trace_3d: bool = True) -> None:
        if goal_image and not env.render_enabled:
            raise ConfigError("OracleGoalProducer(goal_image=True) needs RobosuiteEnv(render=True)")
        env.rs_camera_name(camera)  # validates the name
        self.env = env
        self.camera = camera
        self.goal_image = goal_image
        self.trace_points = trace_points
        self.trace_3d_enabled = trace_3d

    def render_goal(self, subgoal: Subgoal) -> np.ndarray:
        """``uint8 (H, W, 3)`` upright image of ``camera`` with the subgoal's objects at their goal poses.

        The simulator state is restored bit-exactly afterwards.

        Raises:
            UnknownSkillError / UnknownObjectError: from the task's ``goal_poses``.
        """
        env = self.env
        poses = env.task_def.goal_poses(env.rs_env, env.episode, subgoal.skill, tuple(subgoal.args))
        state = env.save_state()
        try:
            env.teleport(poses)
            return env.render_camera(self.camera)
        finally:
            env.restore_state(state)

    def trace(self, subgoal: Subgoal) -> KeypointTrace:
        """Keypoint trace ``(K, 2)`` px in ``camera``: current grip site, then each planned waypoint (clipped)."""
        env = self.env
        eef, _ = env.eef_pose()
        pts = [eef] + [np.asarray(w.pos, dtype=np.float64) for w in plan_waypoints(env, subgoal)]
        px = env.world_to_pixel(np.stack(pts), self.camera)
        return KeypointTrace(camera=self.camera, points=clip_to_image(px, env.image_size), image_size=env.image_size)

    def trace_3d(self, subgoal: Subgoal) -> Trace3D:
        """3-D trace: the grip site now, then each planned waypoint, with resolved yaws and gripper commands."""
        env = self.env
        eef, rot = env.eef_pose()
        return waypoint_trace_3d(eef, yaw_of_mat(rot), env.wrist_angle(), plan_waypoints(env, subgoal))

    def produce(self, subgoal: Subgoal, observation: Observation | None = None) -> Subgoal:
        """Return a copy of ``subgoal`` with ``goal_image`` and/or ``trace`` filled in from the live simulator.

        ``observation`` is not read (the simulator is the source of truth); it is accepted for the protocol.
        """
        goal = self.render_goal(subgoal) if self.goal_image else subgoal.goal_image
        trace = self.trace(subgoal) if self.trace_points else subgoal.trace
        trace_3d = self.trace_3d(subgoal) if self.trace_3d_enabled else subgoal.trace_3d
        return dataclasses.replace(subgoal, goal_image=goal, trace=trace, trace_3d=trace_3d)
