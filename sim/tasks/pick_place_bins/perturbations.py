"""``pick_place_bins`` perturbations: its own ``pull_from_bin`` (an object taken back out of its bin), and the
generic ``close_gripper`` of ``sim/perturbations.py``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.tasks.pick_place_bins.predicates import PickPlaceBinsPredicates
from sim.tasks.pick_place_bins.scene import OBJECTS, WALL_HALF, PickPlaceBinsScene
from sim.tasks.roles import TaskPerturbations
from sim.tasks.types import TaskEpisode
from tandem.core.errors import UnknownNameError, UnknownObjectError

_PULL_CLEARANCE = 0.03  # pull_from_bin: gap (m) between the moved object's bounding circle and others / the gripper


class PickPlaceBinsPerturbations(TaskPerturbations):
    """Perturbations of ``pick_place_bins`` (see module doc).

    Args:
        scene: the task's scene (object poses and extents, the source bin, grip site).
        predicates: the task's predicates (which objects are in their bins, grasped or touched).
    """

    perturbation_names = ("pull_from_bin", "close_gripper")

    def __init__(self, scene: PickPlaceBinsScene, predicates: PickPlaceBinsPredicates) -> None:
        self.scene = scene
        self.preds = predicates

    def perturb(
        self, rs_env: Any, episode: TaskEpisode, name: str, rng: np.random.Generator, target: str | None = None
    ) -> dict[str, Any] | None:
        """``pull_from_bin``: move an object that is in its bin back into the source bin (``bin1``).

        The object (``target``, else a random named object whose ``in_bin`` holds) is set upright with a random
        yaw on the source bin's floor, at a spot whose bounding circle keeps :data:`_PULL_CLEARANCE` m from
        every other object and from the grip site, by writing its free-joint qpos and zeroing its qvel (the env
        runs ``mj_forward`` afterwards).

        Returns:
            ``{"object": x, "from": [x, y, z], "to": [x, y, z]}`` (m, world), or None to decline (no object in
            its bin, the object is grasped, or no free spot found in 200 draws).

        Raises:
            UnknownNameError: ``name`` is not ``"pull_from_bin"``. UnknownObjectError: unknown ``target``.
        """
        if name != "pull_from_bin":
            raise UnknownNameError("perturbation", name, self.perturbation_names)
        preds = self.preds.predicates(rs_env, episode)
        if target is None:
            inside = [o for o in episode.spec.objects if preds.get(f"in_bin({o})")]
            if not inside:
                return None
            target = str(inside[int(rng.integers(len(inside)))])
        if target not in OBJECTS:
            raise UnknownObjectError(target, OBJECTS)
        if preds.get(f"grasped({target})") or self.preds.gripper_touches(rs_env, target):
            return None
        lo, _ = self.scene.half_extents(rs_env, target)
        radius = self._radius(rs_env, target)
        bin_xy, half = np.asarray(rs_env.bin1_pos[:2], float), np.asarray(rs_env.bin_size[:2], float) / 2
        span = half - WALL_HALF - radius - 0.01
        site, _ = self.scene.site(rs_env)
        others = [(self.scene.pose(rs_env, o)[0][:2], self._radius(rs_env, o)) for o in OBJECTS if o != target]
        for _ in range(200):
            xy = bin_xy + rng.uniform(-span, span)
            if np.linalg.norm(xy - site[:2]) < radius + _PULL_CLEARANCE:
                continue
            if all(np.linalg.norm(xy - p) >= radius + r + _PULL_CLEARANCE for p, r in others):
                break
        else:
            return None
        yaw = float(rng.uniform(-math.pi, math.pi))
        pos = np.array([xy[0], xy[1], self.scene.floor_z(rs_env) - lo[2] + 0.002])
        quat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
        before, _ = self.scene.pose(rs_env, target)
        joint = self.scene.model_object(rs_env, target).joints[0]
        rs_env.sim.data.set_joint_qpos(joint, np.concatenate([pos, quat]))
        rs_env.sim.data.set_joint_qvel(joint, np.zeros(6))
        return {"object": target, "from": before.round(4).tolist(), "to": pos.round(4).tolist()}

    def _radius(self, rs_env: Any, obj: str) -> float:
        """Radius (m) of ``obj``'s bounding circle in its body xy plane."""
        lo, hi = self.scene.half_extents(rs_env, obj)
        return float(np.linalg.norm(np.maximum(np.abs(lo[:2]), np.abs(hi[:2]))))
