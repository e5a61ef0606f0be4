"""``PointingGeometry``: the VLM planner's pointing mode (``planner=vlm planner.geometry=pointing``). The VLM points in
the camera image at what the next subgoal needs; tandem lifts the points to 3-D with the camera's depth and
calibration and builds the subgoal's 3-D trace from the task's skill waypoint geometry, the one its scripted expert
plans with (:class:`tandem.core.point_geometry.PointGeometry`, handed in by the runtime).

The points (the plan reply's ``next_trace.points``, parsed into ``Subgoal.trace``: ``(K, 2)`` px ``(x, y)`` of the
trace camera at the observation's image size, origin top-left): two per argument the geometry names
(:meth:`~tandem.core.point_geometry.PointGeometry.pointed_args`), in order: the object's top centre, then a point on
its top face toward the middle of one side (its orientation).

Lifting (:func:`lift_with_depth`): the top centre's pixel is lifted with the depth image (the median of the valid depths
in a 3 x 3 window, m along the optical axis) to the surface point the camera sees there; the side point is lifted onto
the horizontal plane through it (:meth:`~planner_vlm.learned.camera.CameraCalibration.lift`), and the direction
between them is the object's yaw. The grasp yaw among an object's symmetric candidates is the one whose fingertips
(6 cm either side along the finger axis) see the lowest surface in the depth image (:meth:`PointingGeometry.clearance`):
the expert's "fingers clear of the other cubes", measured instead of read from the simulator. Whether the gripper
holds the subgoal's object is read from proprio and the points: the fingers neither closed on nothing nor open, and
the camera ray through the object's pointed top (where pointed) within :data:`HELD_NEAR_M` of the grip site.

It reads camera images, depth and proprio only, never ``Observation.privileged`` (``is_oracle = False``). It knows
no object it has not been pointed at: open vocabulary, as far as the task's skill geometry goes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

import numpy as np

from planner_vlm.learned.camera import CameraCalibration
from planner_vlm.learned.geometry import projected_trace
from planner_vlm.learned.proprio import gripper_yaw
from tandem.core.errors import ConfigError
from tandem.core.grasp_clearance import PANDA_EMPTY_OPENING_M, PANDA_HELD_MAX_OPENING_M
from tandem.core.point_geometry import Anchor, PointGeometry
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Subgoal, TaskSpec
from tandem.core.waypoints import waypoint_trace_3d

#: The moved object is held where the camera ray through its pointed top passes within this distance (m) of the grip
#: site, with the fingers neither closed on nothing nor open (:data:`~tandem.core.grasp_clearance.PANDA_EMPTY_OPENING_M`,
#: :data:`~tandem.core.grasp_clearance.PANDA_HELD_MAX_OPENING_M`). The ray, not the depth: from above, the hand hides
#: the top of what it holds, and the depth there is the hand's.
HELD_NEAR_M = 0.05
#: Fingertip distance (m) from the grasp point along the finger axis, where the clearance is measured.
FINGER_REACH_M = 0.06


def lift_with_depth(calibration: CameraCalibration, depth: np.ndarray, pixel: np.ndarray,
                    window: int = 1) -> np.ndarray | None:
    """The 3-D point (``float64 (3,)`` m, world frame) the camera sees at ``pixel`` ``(x, y)`` px.

    Args:
        calibration: the camera's calibration at ``depth``'s size.
        depth: ``float32 (H, W)`` m along the optical axis, NaN or <= 0 where there is no return.
        pixel: ``(2,)`` px, origin top-left.
        window: half size of the square window whose valid depths' median is used.

    Returns:
        The point, or None where the window holds no valid depth or lies outside the image.
    """
    h, w = depth.shape[:2]
    x, y = float(pixel[0]), float(pixel[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        return None
    c, r = int(round(x)), int(round(y))
    if not (0 <= c < w and 0 <= r < h):
        return None
    patch = depth[max(r - window, 0): r + window + 1, max(c - window, 0): c + window + 1]
    vals = patch[np.isfinite(patch) & (patch > 0)]
    if not len(vals):
        return None
    z = float(np.median(vals))
    cam = z * np.linalg.solve(calibration.intrinsics, np.array([x, y, 1.0]))
    return calibration.rotation @ cam + calibration.position


class PointingGeometry:
    """Gives a subgoal its 3-D trace ``Subgoal.trace_3d`` (points ``(K, 3)`` m, world frame; yaw ``(K,)`` rad; gripper
    ``(K,)`` in [-1, 1]) from the VLM's points (see the module docstring).

    Args:
        geometry: the task's skill waypoint geometry (:class:`~tandem.core.point_geometry.PointGeometry`).
        calibration: the pointing camera's calibration (intrinsics and pose; resized to the depth image's size).
        camera: the camera the VLM points in (the planner's ``trace_camera``); its depth must be in the observation.

    Attributes:
        source: ``"pointing"`` (the planner's ``source`` is then ``vlm+pointing``).
    """

    is_oracle: ClassVar[bool] = False
    source: ClassVar[str] = "pointing"

    def __init__(self, geometry: PointGeometry, calibration: CameraCalibration, camera: str = "agentview"):
        self.geometry = geometry
        self.calibration = calibration
        self.camera = camera

    def reset(self) -> None:
        """Nothing is kept between subgoals."""

    def check_task(self, task: TaskSpec) -> None:
        """Refuse a geometry of another task.

        Raises:
            ConfigError: naming both tasks.
        """
        if self.geometry.task != task.name:
            raise ConfigError(f"planner.geometry=pointing: the skill geometry is {self.geometry.task!r}'s, the task "
                              f"is {task.name!r}")

    def clearance(self, depth: np.ndarray, calibration: CameraCalibration, center: np.ndarray, yaw: float) -> float:
        """How clear (m) a grasp at ``center (3,)`` with the fingers along ``yaw`` is: minus the highest surface the
        depth image shows at the two fingertips above the grasp point's height (a fingertip it cannot see counts as
        blocked by 1 m)."""
        u = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        worst = 0.0
        for tip in (center + FINGER_REACH_M * u, center - FINGER_REACH_M * u):
            px = calibration.project(tip[None])[0]
            seen = lift_with_depth(calibration, depth, px)
            worst = max(worst, 1.0 if seen is None else float(seen[2] - center[2]))
        return -worst

    def holds(self, proprio: np.ndarray, pixel: np.ndarray | None) -> bool:
        """Whether the gripper of ``proprio (8,)`` holds the object whose top was pointed at ``pixel`` ``(x, y)`` px of
        the calibration's image size (None: not pointed at; then the opening alone decides)."""
        opening = float(proprio[7])
        if not PANDA_EMPTY_OPENING_M < opening < PANDA_HELD_MAX_OPENING_M:
            return False
        if pixel is None:
            return True
        distance, _ = self.calibration.nearest_on_ray(pixel, np.asarray(proprio[:3], np.float64))
        return distance < HELD_NEAR_M

    def _moved_pixel(self, subgoal: Subgoal, observation: Observation) -> np.ndarray | None:
        """The pointed top of the subgoal's first argument in px of the calibration's image size, or None."""
        trace = subgoal.trace
        if trace is None or not len(trace.points) or not subgoal.args:
            return None
        h, w = (int(v) for v in self.calibration.image_size)
        return np.asarray(trace.points[0], np.float64) * np.array([w / trace.image_size[1], h / trace.image_size[0]])

    def fill(self, subgoal: Subgoal, observation: Observation, memory: TaskMemory | None = None) -> Subgoal:
        """A copy of ``subgoal`` with its 3-D trace from its points and, for videos, that trace projected into the
        camera (``trace``). Where it cannot (too few points, no depth, a point with no depth return, a geometry that
        cannot plan it), the subgoal comes back without ``trace_3d`` and a ``pointing_failed`` memory event says why
        (the executor then reports the subgoal unplannable, and the agent retries or replans).

        Raises:
            UnknownSkillError: a skill the task's geometry does not plan.
        """
        step = int(observation.step)
        why, anchors = self._anchors(subgoal, observation)
        if why is None:
            proprio = np.asarray(observation.proprio, np.float64)
            eef, eef_yaw = proprio[:3], float(gripper_yaw(proprio))
            held = self.holds(proprio, self._moved_pixel(subgoal, observation))
            depth = np.asarray(observation.depth[self.camera], np.float64)  # type: ignore[index]
            cal = self.calibration.resized((int(depth.shape[0]), int(depth.shape[1])))
            result = self.geometry.waypoints(subgoal.skill, subgoal.args, anchors, eef, eef_yaw, held,
                                             lambda c, y: self.clearance(depth, cal, c, y))
            if isinstance(result, str):
                why = result
            else:
                wrist = float(observation.joints[-1]) if observation.joints is not None else None
                trace = waypoint_trace_3d(eef, eef_yaw, wrist, result)
                if memory is not None:
                    memory.record_event("pointing", step, subgoal=subgoal.text, held=held,
                                        anchors={a: {"top": [round(float(v), 4) for v in an.top],
                                                     "yaw": round(float(an.yaw), 3)} for a, an in anchors.items()})
                image = observation.images.get(self.camera)
                size = ((int(image.shape[0]), int(image.shape[1])) if image is not None
                        else (int(self.calibration.image_size[0]), int(self.calibration.image_size[1])))
                return replace(subgoal, trace_3d=trace,
                               trace=projected_trace(trace, self.calibration, self.camera, size))
        if memory is not None:
            memory.record_event("pointing_failed", step, subgoal=subgoal.text, reason=why)
        return replace(subgoal, trace_3d=None)

    def _anchors(self, subgoal: Subgoal, observation: Observation) -> tuple[str | None, dict[str, Anchor]]:
        """``(None, anchors)``, or ``(why not, {})``."""
        args = self.geometry.pointed_args(subgoal.skill, subgoal.args)
        trace = subgoal.trace
        if trace is None or trace.camera != self.camera:
            return f"the model gave no points in {self.camera}", {}
        depth = (observation.depth or {}).get(self.camera)
        if depth is None:
            return f"the observation has no {self.camera} depth", {}
        depth = np.asarray(depth, np.float64)
        pts = np.asarray(trace.points, np.float64) * (np.array([depth.shape[1], depth.shape[0]], np.float64)
                                                      / np.array([trace.image_size[1], trace.image_size[0]]))
        cal = self.calibration.resized((int(depth.shape[0]), int(depth.shape[1])))
        anchors: dict[str, Anchor] = {}
        for i, name in enumerate(args):
            if len(pts) < 2 * i + 2:
                break  # fewer points than arguments: the geometry says whether it can do without
            top = lift_with_depth(cal, depth, pts[2 * i])
            if top is None:
                return f"no depth return at the point on {name} ({pts[2 * i].round(1).tolist()} px)", {}
            try:
                side = cal.lift(pts[2 * i + 1][None], np.array([top[2]]))[0]
            except ValueError as e:
                return f"the point toward {name}'s side cannot be lifted: {e}", {}
            d = side[:2] - top[:2]
            yaw = math.atan2(d[1], d[0]) if float(np.linalg.norm(d)) > 1e-6 else 0.0
            anchors[name] = Anchor(top=top, yaw=yaw)
        return None, anchors




__all__ = ["FINGER_REACH_M", "HELD_NEAR_M", "PointingGeometry", "lift_with_depth"]
