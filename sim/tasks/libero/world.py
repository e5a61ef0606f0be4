"""What a LIBERO skill may read of the live simulator: a small privileged view shared by every skill.

Every skill (``sim/tasks/libero/skills/``) plans its waypoints from a :class:`LiberoWorld` only, so that one skill
serves every LIBERO scene. Conventions: positions in m, world frame, z up; quaternions wxyz; yaw in rad about
world +z; boxes are axis-aligned in the world frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from tandem.core.errors import UnknownObjectError


@dataclass(frozen=True)
class JointFrame:
    """One articulation joint of a fixture (a drawer's slide, a door's or a knob's hinge) as the simulator has it now.

    Attributes:
        name: the MuJoCo joint name.
        kind: ``"slide"`` or ``"hinge"``.
        qpos: its position now (m or rad).
        limits: ``(lo, hi)`` of its range (m or rad).
        axis: ``float64 (3,)`` unit axis in the world (+qpos moves along / turns about it, right hand).
        anchor: ``float64 (3,)`` a point of the axis in the world (m).
        body: the MuJoCo id of the body it moves (see :meth:`LiberoWorld.local_geom_boxes`).
    """

    name: str
    kind: str
    qpos: float
    limits: tuple[float, float]
    axis: np.ndarray
    anchor: np.ndarray
    body: int


class LiberoWorld:
    """A privileged view of one LIBERO robosuite env (``rs_env``: a ``libero.libero.envs`` problem instance).

    Args:
        rs_env: the raw LIBERO env (only oracles reach it).
    """

    def __init__(self, rs_env: Any) -> None:
        self.rs_env = rs_env
        self.model = rs_env.sim.model._model
        self.data = rs_env.sim.data._data
        robot = rs_env.robots[0]
        self._eef_site = int(robot.eef_site_id[robot.arms[0]])
        self._gripper = robot.gripper[robot.arms[0]]

    # ---- the robot
    def eef_pos(self) -> np.ndarray:
        """``float64 (3,)`` grip-site position (m, world)."""
        return self.data.site_xpos[self._eef_site].copy()

    def eef_mat(self) -> np.ndarray:
        """``float64 (3, 3)`` grip-site rotation, site -> world."""
        return self.data.site_xmat[self._eef_site].reshape(3, 3).copy()

    def is_grasped(self, name: str) -> bool:
        """Whether the gripper holds object ``name`` (robosuite's ``_check_grasp``: both finger pads touch it)."""
        return bool(self.rs_env._check_grasp(gripper=self._gripper, object_geoms=self._object(name)))

    # ---- objects, fixtures and their regions
    def names(self) -> tuple[str, ...]:
        """Every object, fixture and region (site) name of the scene."""
        env = self.rs_env
        return (*env.objects_dict, *env.fixtures_dict, *env.object_sites_dict)

    def _object(self, name: str) -> Any:
        env = self.rs_env
        obj = env.objects_dict.get(name) or env.fixtures_dict.get(name)
        if obj is None:
            raise UnknownObjectError(name, list(env.objects_dict) + list(env.fixtures_dict))
        return obj

    def pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(pos (3,), quat wxyz (4,))`` of an object's or fixture's root body, or of a region's site.

        Raises:
            UnknownObjectError: no such object, fixture or region.
        """
        env = self.rs_env
        if name in env.object_sites_dict:
            sid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, name)
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, self.data.site_xmat[sid])
            return self.data.site_xpos[sid].copy(), quat
        if name not in env.obj_body_id:
            raise UnknownObjectError(name, list(self.names()))
        bid = env.obj_body_id[name]
        return self.data.xpos[bid].copy(), self.data.xquat[bid].copy()

    def region_box(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A region's extent: ``(lo (3,), hi (3,))`` world box of its site (centre +- half-size along the site's
        axes, rotated into the world and made axis-aligned).

        Raises:
            UnknownObjectError: not a region of the scene.
        """
        if name not in self.rs_env.object_sites_dict:
            raise UnknownObjectError(name, list(self.rs_env.object_sites_dict))
        sid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, name)
        c = self.data.site_xpos[sid]
        r = self.data.site_xmat[sid].reshape(3, 3)
        half = np.abs(r) @ np.asarray(self.model.site_size[sid], dtype=np.float64)
        return c - half, c + half

    def body_box(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned box ``(lo (3,), hi (3,))`` around the collision geoms of an object or fixture (its
        root body and every body below it), from each geom's bounding box.

        Raises:
            UnknownObjectError: no such object or fixture.
        """
        if name not in self.rs_env.obj_body_id:
            raise UnknownObjectError(name, list(self.names()))
        root = self.rs_env.obj_body_id[name]
        m, d = self.model, self.data
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for g in range(m.ngeom):
            b = int(m.geom_bodyid[g])
            if not self._below(b, root) or (m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0):
                continue
            r = d.geom_xmat[g].reshape(3, 3)
            half = np.abs(r) @ np.asarray(m.geom_aabb[g][3:], dtype=np.float64)
            centre = d.geom_xpos[g] + r @ np.asarray(m.geom_aabb[g][:3], dtype=np.float64)
            lo, hi = np.minimum(lo, centre - half), np.maximum(hi, centre + half)
        if not np.all(np.isfinite(lo)):
            pos, _ = self.pose(name)
            return pos.copy(), pos.copy()
        return lo, hi

    def _below(self, body: int, root: int) -> bool:
        while body > 0:
            if body == root:
                return True
            body = int(self.model.body_parentid[body])
        return body == root

    def region_parent(self, name: str) -> str | None:
        """The object or fixture a region (site) belongs to (the basket of ``basket_1_contain_region``), or None."""
        site = self.rs_env.object_sites_dict.get(name)
        return None if site is None else getattr(site, "parent_name", None)

    def movable_objects(self) -> tuple[str, ...]:
        """The scene's movable objects (BDDL ``:objects``), fixtures excluded."""
        return tuple(self.rs_env.objects_dict)

    def _root_of(self, name: str) -> int:
        return int(self.model.body_rootid[self.rs_env.obj_body_id[name]])

    def surface_height(self, xy: np.ndarray, z_from: float, ignore: tuple[str, ...] = ()) -> float | None:
        """Height (m) of the first collision surface straight below ``(x, y, z_from)``: a ray cast down through every
        collision geom but the robot's and those of the objects in ``ignore``; None when nothing is hit."""
        m, d = self.model, self.data
        skip = {int(self.model.body_rootid[self.model.site_bodyid[self._eef_site]])}
        skip |= {self._root_of(n) for n in ignore}
        pnt = np.array([float(xy[0]), float(xy[1]), float(z_from)])
        down = np.array([0.0, 0.0, -1.0])
        geomid = np.zeros(1, dtype=np.int32)
        for _ in range(32):
            dist = mujoco.mj_ray(m, d, pnt, down, None, 1, -1, geomid)
            if dist < 0:
                return None
            g = int(geomid[0])
            hit = pnt[2] - dist
            collides = m.geom_contype[g] != 0 or m.geom_conaffinity[g] != 0
            if collides and int(m.body_rootid[m.geom_bodyid[g]]) not in skip:
                return float(hit)
            pnt[2] = hit - 1e-4
        return None

    def centre_of_mass(self, name: str) -> np.ndarray:
        """``float64 (3,)`` centre of mass (m, world) of an object or fixture and every body below it."""
        if name not in self.rs_env.obj_body_id:
            raise UnknownObjectError(name, list(self.names()))
        return self.data.subtree_com[self.rs_env.obj_body_id[name]].copy()

    def finger_corners(self) -> np.ndarray:
        """``float64 (n, 3)`` world corners of the bounding boxes of the gripper fingers' collision geoms (each in its
        geom's frame)."""
        m, d = self.model, self.data
        hand_root = int(m.body_rootid[m.site_bodyid[self._eef_site]])
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)
        out = []
        for g in range(m.ngeom):
            b = int(m.geom_bodyid[g])
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or ""
            if (int(m.body_rootid[b]) != hand_root or "finger" not in name
                    or (m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0)):
                continue
            r = d.geom_xmat[g].reshape(3, 3)
            local = np.asarray(m.geom_aabb[g][:3]) + signs * np.asarray(m.geom_aabb[g][3:])
            out.append(d.geom_xpos[g] + local @ r.T)
        return np.concatenate(out) if out else np.zeros((0, 3))

    def collision_geoms(self, name: str) -> list[int]:
        """Ids of the collision geoms of an object or fixture (its root body and every body below it)."""
        if name not in self.rs_env.obj_body_id:
            raise UnknownObjectError(name, list(self.names()))
        root = self.rs_env.obj_body_id[name]
        m = self.model
        return [g for g in range(m.ngeom) if self._below(int(m.geom_bodyid[g]), root)
                and (m.geom_contype[g] != 0 or m.geom_conaffinity[g] != 0)]

    def collision_corners(self, name: str) -> np.ndarray:
        """``float64 (8 * n_geoms, 3)`` world corners of the bounding box of each collision geom of an object, in the
        geom's own frame: a tight hull of the object's shape in any orientation (unlike :meth:`body_box`)."""
        m, d = self.model, self.data
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)
        out = []
        for g in self.collision_geoms(name):
            r = d.geom_xmat[g].reshape(3, 3)
            local = np.asarray(m.geom_aabb[g][:3]) + signs * np.asarray(m.geom_aabb[g][3:])
            out.append(d.geom_xpos[g] + local @ r.T)
        if not out:
            return np.array([self.pose(name)[0]])
        return np.concatenate(out)

    def height_map(self, name: str, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Top of object ``name``'s collision geoms seen from above: ``float64 (len(ys), len(xs))`` height (m) of
        the first of its geoms a ray cast straight down at ``(x, y)`` meets, NaN where the ray misses the object
        (every other body ignored)."""
        m, d = self.model, self.data
        lo, hi = self.body_box(name)
        z0 = float(hi[2]) + 0.01
        down = np.array([0.0, 0.0, -1.0])
        out = np.full((len(ys), len(xs)), np.nan)
        geoms = self.collision_geoms(name)
        boxes = []
        for g in geoms:
            r = d.geom_xmat[g].reshape(3, 3)
            half = np.abs(r) @ np.asarray(m.geom_aabb[g][3:], dtype=np.float64)
            c = d.geom_xpos[g] + r @ np.asarray(m.geom_aabb[g][:3], dtype=np.float64)
            boxes.append((c - half - 1e-4, c + half + 1e-4))
        for j, y in enumerate(ys):
            for i, x in enumerate(xs):
                pnt = np.array([float(x), float(y), z0])
                best = np.inf
                for g, (blo, bhi) in zip(geoms, boxes, strict=True):
                    if not (blo[0] <= x <= bhi[0] and blo[1] <= y <= bhi[1]):
                        continue
                    if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:
                        dist = mujoco.mj_rayMesh(m, d, g, pnt, down)
                    else:
                        dist = mujoco.mju_rayGeom(d.geom_xpos[g], d.geom_xmat[g], m.geom_size[g], pnt, down,
                                                  int(m.geom_type[g]))
                    if 0 <= dist < best:
                        best = dist
                if np.isfinite(best):
                    out[j, i] = z0 - best
        return out

    def scene_height_map(self, xs: np.ndarray, ys: np.ndarray, z_from: float,
                         ignore: tuple[str, ...] = ()) -> np.ndarray:
        """:meth:`surface_height` over a grid: ``float64 (len(ys), len(xs))`` m, NaN where nothing is hit."""
        out = np.full((len(ys), len(xs)), np.nan)
        for j, y in enumerate(ys):
            for i, x in enumerate(xs):
                h = self.surface_height(np.array([x, y]), z_from, ignore)
                if h is not None:
                    out[j, i] = h
        return out

    def in_contact(self, a: str, b: str) -> bool:
        """Whether any collision geom of object/fixture ``a`` touches one of ``b`` (LIBERO's ``check_contact``)."""
        return bool(self.rs_env.check_contact(self._object(a), self._object(b)))

    def joint_positions(self, name: str) -> list[float]:
        """The qpos (rad or m) of every joint of an object, fixture or region (a drawer's slide, a knob's hinge)."""
        env = self.rs_env
        joints = (env.object_sites_dict[name].joints if name in env.object_sites_dict
                  else self._object(name).joints)
        return [float(env.sim.data.get_joint_qpos(j)) for j in joints]

    def joint_frames(self, name: str) -> list[JointFrame]:
        """The slide and hinge joints of an object, fixture or region (:class:`JointFrame`), in LIBERO's order.

        Raises:
            UnknownObjectError: no such object, fixture or region.
        """
        env = self.rs_env
        joints = (env.object_sites_dict[name].joints if name in env.object_sites_dict
                  else self._object(name).joints) or []
        m, d = self.model, self.data
        out: list[JointFrame] = []
        for jn in joints:
            j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, jn)
            kind = {int(mujoco.mjtJoint.mjJNT_SLIDE): "slide", int(mujoco.mjtJoint.mjJNT_HINGE): "hinge"}.get(
                int(m.jnt_type[j]))
            if j < 0 or kind is None:
                continue
            out.append(JointFrame(name=jn, kind=kind, qpos=float(d.qpos[m.jnt_qposadr[j]]),
                                  limits=(float(m.jnt_range[j][0]), float(m.jnt_range[j][1])),
                                  axis=d.xaxis[j].copy(), anchor=d.xanchor[j].copy(), body=int(m.jnt_bodyid[j])))
        return out

    def articulation(self, name: str) -> dict[str, list[float]]:
        """LIBERO's articulation ranges of the fixture that owns ``name`` (a fixture, or a region of one), e.g.
        ``{"default_close_ranges": [0.0, 0.005], ...}`` (joint positions, m or rad); empty where it has none.

        Raises:
            UnknownObjectError: no such object, fixture or region.
        """
        env = self.rs_env
        owner = env.object_sites_dict[name].parent_name if name in env.object_sites_dict else name
        props = getattr(self._object(owner), "object_properties", {}) or {}
        return {k: [float(x) for x in v] for k, v in props.get("articulation", {}).items() if len(v) == 2}

    def body_frame(self, body: int) -> tuple[np.ndarray, np.ndarray]:
        """``(pos (3,), rot (3, 3) body -> world)`` of MuJoCo body ``body`` now."""
        return self.data.xpos[body].copy(), self.data.xmat[body].reshape(3, 3).copy()

    def local_geom_boxes(self, body: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Boxes ``(lo (3,), hi (3,))`` of the collision geoms of body ``body`` and every body below it, each axis-aligned
        in ``body``'s own frame (m): a door's slab stays a thin box however far the door is open."""
        m, d = self.model, self.data
        pos, rot = self.body_frame(body)
        out: list[tuple[np.ndarray, np.ndarray]] = []
        for g in range(m.ngeom):
            if not self._below(int(m.geom_bodyid[g]), body) or (m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0):
                continue
            r = rot.T @ d.geom_xmat[g].reshape(3, 3)
            centre = rot.T @ (d.geom_xpos[g] - pos) + r @ np.asarray(m.geom_aabb[g][:3], dtype=np.float64)
            half = np.abs(r) @ np.asarray(m.geom_aabb[g][3:], dtype=np.float64)
            out.append((centre - half, centre + half))
        return out
