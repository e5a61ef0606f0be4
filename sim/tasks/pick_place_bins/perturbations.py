"""``pick_place_bins`` perturbations: its own ``pull_from_bin`` (an object taken back out of its bin),
``miss_grasp`` (a grasp that closes on nothing: the object moves away as the fingers take it) and ``topple`` (a tall
object lying on its side in the source bin from the start), and the generic ``close_gripper`` of
``sim/perturbations.py``, and its surprises ``vanish``, ``appearance_shift`` (the bins' wood tinted),
``move_hidden`` (the object under the arm moved within its bin) and ``drop_after_grasp``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.tasks.pick_place_bins.predicates import PickPlaceBinsPredicates
from sim.tasks.pick_place_bins.scene import OBJECTS, WALL_HALF, PickPlaceBinsScene
from sim.tasks.roles import TaskPerturbations
from sim.tasks.types import TaskEpisode
from tandem.core.errors import UnknownNameError, UnknownObjectError
from tandem.core.geometry import quat_to_mat, quat_yaw_mul, yaw_of_quat, yaw_quat

_PULL_CLEARANCE = 0.03  # pull_from_bin: gap (m) between the moved object's bounding circle and others / the gripper
#: miss_grasp: gap (m) between the moved object's bounding circle and the others', and from the grip site.
_MISS_CLEARANCE = 0.02
#: miss_grasp: how far (m, xy) the object moves from where the fingers took it.
MISS_SHIFT_M = (0.04, 0.10)
#: topple: the objects that can be laid on their side. These tall boxes are the ones a failed grasp knocks over in
#: closed loop; the can would roll and the bread is nearly a cube.
TOPPLE_OBJECTS = ("milk", "cereal")
#: The perturbations this task implements itself (``sim.perturbations.TASK_IMPLEMENTED``), and the predicate whose
#: objects each may move when no target is given.
_OWN: dict[str, str | None] = {"pull_from_bin": "in_bin", "miss_grasp": "grasped",
                               "topple": None}  # topple: TOPPLE_OBJECTS neither in a bin nor grasped


class PickPlaceBinsPerturbations(TaskPerturbations):
    """Perturbations of ``pick_place_bins`` (see module doc).

    Args:
        scene: the task's scene (object poses and extents, the source bin, grip site).
        predicates: the task's predicates (which objects are in their bins, grasped or touched).
    """

    perturbation_names = ("pull_from_bin", "miss_grasp", "topple", "close_gripper",
                          "vanish", "appearance_shift", "move_hidden", "drop_after_grasp")

    def __init__(self, scene: PickPlaceBinsScene, predicates: PickPlaceBinsPredicates) -> None:
        self.scene = scene
        self.preds = predicates

    def perturb(
        self, rs_env: Any, episode: TaskEpisode, name: str, rng: np.random.Generator, target: str | None = None
    ) -> dict[str, Any] | None:
        """Move one object within the source bin (``bin1``) by writing its free-joint qpos and zeroing its qvel
        (the env runs ``mj_forward`` afterwards). The object is set upright on the bin's floor at a spot whose
        bounding circle keeps a clearance from every other object's and from the grip site.

        * ``pull_from_bin``: an object that is in its bin (``target``, else a random one) goes back to the source
          bin, anywhere, with a random yaw (clearance :data:`_PULL_CLEARANCE`).
        * ``miss_grasp``: an object that was just grasped (``target``, the object of the ``grasped`` event) slips
          away as the fingers take it: it moves :data:`MISS_SHIFT_M` (4-10 cm, xy) from where it was, its yaw
          turned by up to 0.3 rad (clearance :data:`_MISS_CLEARANCE`); the fingers close on nothing, and whoever
          drives the arm has to re-pick it from a closed gripper right above it (the learned executor's
          commonest failed-pick state, which no plain demonstration shows).
        * ``topple`` (fires at the first step): one of :data:`TOPPLE_OBJECTS` in the source bin (``target``, else a
          random one) is laid on its side, its long body z axis horizontal: turned a quarter about its body x axis
          (lying on its largest face) or, one time in four, about its body y axis, then a random yaw; its lowest
          corner on the bin's floor (clearance :data:`_PULL_CLEARANCE` over the bounding circle it now covers).
          It gives the perception models the lying objects that a knocked-over box shows them in closed loop.

        Returns:
            ``{"object": x, "from": [x, y, z], "to": [x, y, z]}`` (m, world; ``topple`` adds ``"axis"``: "x" or
            "y"), or None to decline (``pull_from_bin``: no object in its bin, or the object is grasped;
            ``miss_grasp``: the object is not grasped; ``topple``: no tall object in the source bin; any: no free
            spot in 200 draws).

        Raises:
            UnknownNameError: ``name`` is not one of this task's own perturbations.
            UnknownObjectError: unknown ``target``.
        """
        if name not in _OWN:
            raise UnknownNameError("perturbation", name, list(_OWN))
        preds = self.preds.predicates(rs_env, episode)
        if name == "topple":
            return self._topple(rs_env, preds, rng, target)
        if target is None:
            candidates = [o for o in episode.spec.objects if preds.get(f"{_OWN[name]}({o})")]
            if not candidates:
                return None
            target = str(candidates[int(rng.integers(len(candidates)))])
        if target not in OBJECTS:
            raise UnknownObjectError(target, OBJECTS)
        before, quat = self.scene.pose(rs_env, target)
        if name == "pull_from_bin":
            if preds.get(f"grasped({target})") or self.preds.gripper_touches(rs_env, target):
                return None
            xy = self._free_spot(rs_env, target, rng, _PULL_CLEARANCE)
            yaw = float(rng.uniform(-math.pi, math.pi))
        else:
            if not preds.get(f"grasped({target})"):
                return None
            xy = self._free_spot(rs_env, target, rng, _MISS_CLEARANCE, ring=(before[:2], MISS_SHIFT_M))
            yaw = yaw_of_quat(quat) + float(rng.uniform(-0.3, 0.3))
        if xy is None:
            return None
        lo, _ = self.scene.half_extents(rs_env, target)
        pos = np.array([xy[0], xy[1], self.scene.floor_z(rs_env) - lo[2] + 0.002])
        self._set_pose(rs_env, target, pos, yaw_quat(yaw))
        return {"object": target, "from": before.round(4).tolist(), "to": pos.round(4).tolist()}

    def _topple(self, rs_env: Any, preds: dict[str, bool], rng: np.random.Generator,
                target: str | None) -> dict[str, Any] | None:
        """``topple`` (see :meth:`perturb`)."""
        if target is not None and target not in OBJECTS:
            raise UnknownObjectError(target, OBJECTS)
        candidates = [o for o in TOPPLE_OBJECTS if not preds.get(f"in_bin({o})") and not preds.get(f"grasped({o})")]
        if target is None:
            if not candidates:
                return None
            target = str(candidates[int(rng.integers(len(candidates)))])
        elif target not in candidates:
            return None
        before, _ = self.scene.pose(rs_env, target)
        axis = "y" if rng.uniform() < 0.25 else "x"
        half_turn = math.sqrt(0.5)
        lying = np.array([half_turn, half_turn, 0.0, 0.0]) if axis == "x" else np.array([half_turn, 0.0, half_turn, 0.0])
        quat = quat_yaw_mul(float(rng.uniform(-math.pi, math.pi)), lying)
        lo, hi = self.scene.half_extents(rs_env, target)
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        world = corners @ quat_to_mat(quat).T  # (8, 3) about the origin
        radius = float(np.linalg.norm(world[:, :2], axis=1).max())
        xy = self._free_spot(rs_env, target, rng, _PULL_CLEARANCE, radius=radius)
        if xy is None:
            return None
        pos = np.array([xy[0], xy[1], self.scene.floor_z(rs_env) - world[:, 2].min() + 0.002])
        self._set_pose(rs_env, target, pos, quat)
        return {"object": target, "from": before.round(4).tolist(), "to": pos.round(4).tolist(), "axis": axis}

    def _set_pose(self, rs_env: Any, target: str, pos: np.ndarray, quat: np.ndarray) -> None:
        """Write ``target``'s free-joint qpos (``pos (3,)`` m world, ``quat (4,)`` wxyz) and zero its qvel (the env
        runs ``mj_forward`` afterwards)."""
        joint = self.scene.model_object(rs_env, target).joints[0]
        rs_env.sim.data.set_joint_qpos(joint, np.concatenate([pos, quat]))
        rs_env.sim.data.set_joint_qvel(joint, np.zeros(6))

    def _free_spot(self, rs_env: Any, target: str, rng: np.random.Generator, clearance: float,
                   ring: tuple[np.ndarray, tuple[float, float]] | None = None,
                   radius: float | None = None) -> np.ndarray | None:
        """A ``(2,)`` world xy (m) in the source bin where ``target``'s bounding circle keeps ``clearance`` (m)
        from the other objects' and from the grip site: anywhere in the bin, or with ``ring = (centre (2,) m,
        (r_min, r_max) m)`` at a distance in ``[r_min, r_max]`` from ``centre``. ``radius`` (m): the circle's,
        when not the upright object's. None when 200 draws found none."""
        radius = self._radius(rs_env, target) if radius is None else radius
        bin_xy, half = np.asarray(rs_env.bin1_pos[:2], float), np.asarray(rs_env.bin_size[:2], float) / 2
        span = half - WALL_HALF - radius - 0.01
        site, _ = self.scene.site(rs_env)
        others = [(self.scene.pose(rs_env, o)[0][:2], self._radius(rs_env, o)) for o in OBJECTS if o != target]
        for _ in range(200):
            if ring is None:
                xy = bin_xy + rng.uniform(-span, span)
            else:
                angle, dist = rng.uniform(-math.pi, math.pi), rng.uniform(*ring[1])
                xy = np.asarray(ring[0], float) + dist * np.array([math.cos(angle), math.sin(angle)])
                if np.any(np.abs(xy - bin_xy) > span):
                    continue
            if np.linalg.norm(xy - site[:2]) < radius + clearance:
                continue
            if all(np.linalg.norm(xy - p) >= radius + r + clearance for p, r in others):
                return xy
        return None

    def _radius(self, rs_env: Any, obj: str) -> float:
        """Radius (m) of ``obj``'s bounding circle in its body xy plane."""
        lo, hi = self.scene.half_extents(rs_env, obj)
        return float(np.linalg.norm(np.maximum(np.abs(lo[:2]), np.abs(hi[:2]))))
