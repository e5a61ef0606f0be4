"""NutAssembly: put the square nut on the square peg and the round nut on the round peg, in a drawn order.

Built on robosuite's ``NutAssembly`` environment (Zhu et al., "robosuite", 2020; task from Mandlekar et al.,
"RoboTurk", CoRL 2018): a Panda arm under the OSC_POSE controller, two nuts with an offset handle, two pegs
fixed to the table (square peg = robosuite body ``peg1``, round peg = ``peg2``).

Geometry the expert relies on (robosuite ``square-nut.xml``, ``round-nut.xml``, ``pegs_arena.xml``):

* nut body origin = centre of the hole; a nut is 0.02 m thick, so lying flat its origin is 0.01 m above the
  table top (z = 0.83 m);
* the handle lies along the nut's local +x axis (handle site 0.054 m from the origin on the square nut,
  0.06 m on the round nut) and is 0.032 m wide along local y, so the fingers close along local y;
* square peg: box, half-width 0.016 m (hole half-width 0.02275 m); round peg: cylinder, radius 0.02 m
  (hole inner radius ~0.031 m); both peg tops are at z = 0.95 m, at x = 0.23 m, y = +0.1 / -0.1 m.

Conventions: positions in m, world frame; quaternions wxyz; angles in rad about world +z. The gripper yaw of a
:class:`~sim.tasks.base.Waypoint` is the direction of the finger axis (grip-site x axis) from world +x, as in
``sim/experts.py``; its tracker resolves a yaw modulo pi to the one nearest the current yaw, so this expert
never asks for more than :data:`YAW_STEP` of rotation per waypoint and picks the direction itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.tasks.base import SKILL_PREDICATES, TaskDefinition, TaskEpisode, Waypoint
from tandem.core.errors import UnknownObjectError, UnknownSkillError
from tandem.core.geometry import quat_to_mat, quat_yaw_mul, rotate_z, wrap_pi, yaw_of_mat, yaw_of_quat
from tandem.core.types import TaskSpec

#: z of the table top in robosuite's NutAssembly (``table_offset[2]``), m.
TABLE_Z = 0.82
#: z of both pegs' tops (peg bodies at 0.85 m, half-height 0.1 m), m.
PEG_TOP_Z = 0.95
#: z of a nut's origin when the nut lies flat on the table, m.
NUT_REST_Z = TABLE_Z + 0.01


@dataclass(frozen=True)
class NutInfo:
    """Static facts about one nut.

    Attributes:
        rs_name: robosuite object name (``"SquareNut"`` / ``"RoundNut"``).
        peg: name of the peg this nut belongs on.
        label: words used in the instruction (``"square nut"``).
        grasp_offset: distance (m) from the nut origin along its local +x axis at which the expert grasps the
            handle: past the ring, so the finger pads touch only the handle.
    """

    rs_name: str
    peg: str
    label: str
    grasp_offset: float


@dataclass(frozen=True)
class PegInfo:
    """Static facts about one peg: robosuite body name, instruction words, ``on_peg`` xy tolerance (m)."""

    body: str
    label: str
    xy_tol: float


NUTS: dict[str, NutInfo] = {
    "square_nut": NutInfo("SquareNut", "square_peg", "square nut", 0.062),
    "round_nut": NutInfo("RoundNut", "round_peg", "round nut", 0.068),
}
PEGS: dict[str, PegInfo] = {
    # A nut threaded on a peg is off-centre by at most ~0.007 m (square on square) to ~0.011 m (round on round).
    # 0.02 m still excludes a nut lying against the outside of the peg (its origin is then >= 0.03 m away).
    "square_peg": PegInfo("peg1", "square peg", 0.02),
    "round_peg": PegInfo("peg2", "round peg", 0.02),
}

#: ``on_peg`` requires the nut origin below this z (m): far below the peg top (0.95 m), so the nut is threaded
#: on the peg rather than balanced on it. robosuite's own check uses the same ``table_offset[2] + 0.05``.
ON_PEG_MAX_Z = TABLE_Z + 0.05
#: A nut is settled below these speeds of its free joint (m/s, rad/s).
SETTLED_LIN_SPEED = 0.05
SETTLED_ANG_SPEED = 1.0

# ---- expert parameters (m, rad, control steps) ----
#: The most yaw change the expert asks for in one waypoint (the tracker resolves yaw modulo pi).
YAW_STEP = 1.0
#: Planning limit on the Panda's wrist joint 7 (hardware limit 2.8973 rad; the margin absorbs base-yaw changes).
Q7_LIMIT = 2.5
#: While inserting, the handle must point within this angle of world -x (towards the robot): with the handle
#: pointing away, the grip site would be out of the Panda's reach near the table at the peg (x > ~0.18 m).
HANDLE_WINDOW = math.radians(40.0)
APPROACH_HEIGHT = 0.10  # grip site above the grasp point before the slow descent
LIFT_HEIGHT = 0.10  # pick lifts the nut this much
CARRY_NUT_Z = PEG_TOP_Z + 0.05  # nut origin height while moving over the peg
ALIGN_NUT_Z = PEG_TOP_Z + 0.025  # nut origin height when aligned over the peg, before descending onto it
RELEASE_NUT_Z = NUT_REST_Z + 0.035  # nut origin height at which the gripper opens (threaded on the peg)
RETREAT_HEIGHT = 0.15  # grip site rises this much after releasing


def handle_turn(handle_yaw: float, q7: float, q7_shift_at_peg: float = 0.0) -> float | None:
    """Smallest rotation (rad, about +z) that brings a nut's handle into :data:`HANDLE_WINDOW` around world -x
    while the wrist joint 7 stays within :data:`Q7_LIMIT` (turning the gripper yaw by +d moves joint 7 by
    about -d), both where the nut is turned and, later, over the peg.

    Args:
        handle_yaw: current handle direction (rad).
        q7: Panda joint 7 angle (rad) predicted at the grasp.
        q7_shift_at_peg: predicted change of joint 7 (rad) when the arm then moves over the peg at constant
            gripper yaw (the arm's azimuth changes, see :func:`arm_azimuth`).

    Returns:
        the rotation, or None if no admissible one exists.
    """
    lo_q = q7 - Q7_LIMIT + max(0.0, q7_shift_at_peg)  # admissible rotations for the wrist
    hi_q = q7 + Q7_LIMIT + min(0.0, q7_shift_at_peg)
    best: float | None = None
    base = math.pi - handle_yaw
    for k in range(-2, 3):
        lo = max(base - HANDLE_WINDOW + 2 * math.pi * k, lo_q)
        hi = min(base + HANDLE_WINDOW + 2 * math.pi * k, hi_q)
        if lo > hi:
            continue
        cand = min(max(0.0, lo), hi)  # closest point of [lo, hi] to 0
        if best is None or abs(cand) < abs(best):
            best = cand
    return best


def arm_azimuth(point: np.ndarray, base_pos: np.ndarray) -> float:
    """Direction (rad, about world +z) from the robot base to ``point`` (m, world).

    For the Panda pointing down, joint 7 is about ``q1 + q3 + 3*pi/4 - gripper_yaw`` and ``q1 + q3`` follows
    this azimuth, so moving the hand at constant yaw from azimuth ``a`` to ``b`` changes joint 7 by ``b - a``
    (measured on robosuite's NutAssembly to within ~0.1 rad).
    """
    return float(math.atan2(point[1] - base_pos[1], point[0] - base_pos[0]))


def yaw_steps(start: float, delta: float) -> list[float]:
    """Yaws from ``start`` (exclusive) to ``start + delta`` (inclusive) in steps of at most :data:`YAW_STEP`."""
    n = max(1, math.ceil(abs(delta) / YAW_STEP - 1e-9))
    return [start + delta * (i + 1) / n for i in range(n)]


def _check_name(name: str, known: dict[str, Any]) -> None:
    if name not in known:
        raise UnknownObjectError(name, list(known))


@dataclass(frozen=True)
class PickPlan:
    """What the expert will do for ``pick(nut)`` from a given state (all world frame).

    Attributes:
        grasp: ``(3,)`` grip-site position (m) at the grasp, on the handle axis.
        grasp_yaw: gripper yaw (rad, unwrapped: continuous from the current yaw) at the grasp.
        start_yaw: current gripper yaw (rad).
        turn: rotation (rad about +z) applied to the lifted nut so its handle points into the window.
    """

    grasp: np.ndarray
    grasp_yaw: float
    start_yaw: float
    turn: float


class NutAssemblyTask(TaskDefinition):
    """Two-nut assembly: ``pick(nut)`` then ``insert(nut, peg)`` for each nut, nut order drawn per seed."""

    name = "nut_assembly"
    skills = ("pick", "insert")
    max_steps = 1200
    perturbation_names: tuple[str, ...] = ("open_gripper", "close_gripper")

    # ------------------------------------------------------------------ spec
    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        """Draw which nut goes first (one ``rng.permutation(2)``).

        Returns:
            TaskEpisode whose spec has instruction e.g. ``"put the square nut on the square peg, then the round
            nut on the round peg"``, objects ``("square_nut", "round_nut")``, targets ``("square_peg",
            "round_peg")``, skills ``pick``/``insert``, goals ``on_peg(nut,peg)`` in the drawn order;
            ``choices["order"]`` is the nut order.
        """
        nuts = list(NUTS)
        order = tuple(nuts[i] for i in rng.permutation(len(nuts)))
        parts = [f"the {NUTS[n].label} on the {PEGS[NUTS[n].peg].label}" for n in order]
        spec = TaskSpec(
            name=self.name,
            instruction=f"put {parts[0]}, then {parts[1]}",
            objects=tuple(nuts),
            max_steps=self.max_steps,
            skills={s: SKILL_PREDICATES[s] for s in self.skills},
            goals=tuple(SKILL_PREDICATES["insert"].format(n, NUTS[n].peg) for n in order),
            targets=tuple(PEGS),
            skill_texts=dict(SKILL_TEXTS),
        )
        return TaskEpisode(spec=spec, choices={"order": order})

    def subgoal_text(self, skill: str, args: tuple[str, ...]) -> str:
        """``"pick up the square_nut"`` / ``"put the square_nut on the square_peg"`` (the spec's ``skill_texts``).

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self._check_skill_args(skill, tuple(args))
        return SKILL_TEXTS[skill].format(*args)

    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        """``("square_nut", "round_nut")``."""
        return tuple(NUTS)

    # ------------------------------------------------------------------ env
    def make_robosuite_env(self, **env_kwargs: Any) -> Any:
        """Build robosuite ``NutAssembly`` with both nuts, a Panda and OSC_POSE (robosuite's BASIC config).

        ``env_kwargs`` (cameras, image size, ``hard_reset``, ``control_freq``...) are forwarded to
        ``robosuite.make`` and override the defaults here. Unless given, the placement initializer is
        :func:`make_nut_sampler`: robosuite's default ranges, but nuts spawn resting on the table.
        """
        import robosuite
        from robosuite.controllers import load_composite_controller_config

        kwargs: dict[str, Any] = {
            "robots": "Panda",
            "controller_configs": load_composite_controller_config(controller="BASIC", robot="Panda"),
            "has_renderer": False,
            "has_offscreen_renderer": False,
            "use_camera_obs": False,
            "hard_reset": False,
            "control_freq": 20,
            "ignore_done": True,
        }
        kwargs.update(env_kwargs)
        kwargs["single_object_mode"] = 0
        if kwargs.get("placement_initializer") is None:
            kwargs["placement_initializer"] = make_nut_sampler(kwargs.get("table_offset", (0.0, 0.0, TABLE_Z)))
        return robosuite.make("NutAssembly", **kwargs)

    # ------------------------------------------------------------------ state
    def _nut(self, rs_env: Any, name: str) -> Any:
        _check_name(name, NUTS)
        for nut in rs_env.nuts:
            if nut.name == NUTS[name].rs_name:
                return nut
        raise UnknownObjectError(name, [n.name for n in rs_env.nuts])

    def nut_pose(self, rs_env: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(pos float64 (3,) m world, quat float64 (4,) wxyz)`` of a nut's origin (the centre of its hole).

        Raises:
            UnknownObjectError: ``name`` is not a nut.
        """
        _check_name(name, NUTS)
        bid = rs_env.obj_body_id[NUTS[name].rs_name]
        return np.array(rs_env.sim.data.body_xpos[bid]), np.array(rs_env.sim.data.body_xquat[bid])

    def peg_pos(self, rs_env: Any, peg: str) -> np.ndarray:
        """``float64 (3,)`` world position (m) of a peg's centre (its top is 0.1 m higher).

        Raises:
            UnknownObjectError: ``peg`` is not a peg.
        """
        _check_name(peg, PEGS)
        return np.array(rs_env.sim.data.body_xpos[rs_env.sim.model.body_name2id(PEGS[peg].body)])

    def _gripper(self, rs_env: Any) -> Any:
        """The Panda's ``GripperModel`` (robosuite 1.5 keeps one per arm in a dict)."""
        robot = rs_env.robots[0]
        return robot.gripper[robot.arms[0]] if isinstance(robot.gripper, dict) else robot.gripper

    def is_grasped(self, rs_env: Any, name: str) -> bool:
        """Both Panda finger pads touch the nut (robosuite ``_check_grasp``)."""
        nut = self._nut(rs_env, name)
        return bool(rs_env._check_grasp(gripper=self._gripper(rs_env), object_geoms=nut.contact_geoms))

    def is_settled(self, rs_env: Any, name: str) -> bool:
        """The nut's free-joint speed is below :data:`SETTLED_LIN_SPEED` (m/s) and :data:`SETTLED_ANG_SPEED` (rad/s)."""
        nut = self._nut(rs_env, name)
        qvel = np.asarray(rs_env.sim.data.get_joint_qvel(nut.joints[0]))
        return bool(np.linalg.norm(qvel[:3]) < SETTLED_LIN_SPEED and np.linalg.norm(qvel[3:]) < SETTLED_ANG_SPEED)

    def is_on_peg(self, rs_env: Any, name: str, peg: str) -> bool:
        """The nut is threaded on ``peg``, released and settled.

        Threaded: the nut origin is within the peg's ``xy_tol`` of the peg axis and below :data:`ON_PEG_MAX_Z`
        (so it surrounds the peg instead of lying on its top). Released: no gripper geom touches the nut
        (robosuite's own check has no release test, see FIELD-NOTES). Settled: :meth:`is_settled`.
        """
        pos, _ = self.nut_pose(rs_env, name)
        peg_xy = self.peg_pos(rs_env, peg)[:2]
        if not (np.linalg.norm(pos[:2] - peg_xy) < PEGS[peg].xy_tol and pos[2] < ON_PEG_MAX_Z):
            return False
        released = not rs_env.check_contact(self._gripper(rs_env), self._nut(rs_env, name))
        return bool(released and self.is_settled(rs_env, name))

    def label_vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        preds = tuple(SKILL_PREDICATES["pick"].format(n) for n in NUTS)
        preds += tuple(SKILL_PREDICATES["insert"].format(n, p) for n in NUTS for p in PEGS)
        return tuple(NUTS), preds

    def predicates(self, rs_env: Any, episode: TaskEpisode) -> dict[str, bool]:
        """``grasped(n)`` for each nut and ``on_peg(n,p)`` for every nut/peg pair (see :meth:`is_on_peg`)."""
        preds = {SKILL_PREDICATES["pick"].format(n): self.is_grasped(rs_env, n) for n in NUTS}
        for n in NUTS:
            for p in PEGS:
                preds[SKILL_PREDICATES["insert"].format(n, p)] = self.is_on_peg(rs_env, n, p)
        return preds

    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        """Nut name -> ``{"pos": [x, y, z] (m, world, hole centre), "quat": [w, x, y, z]}``."""
        out = {}
        for n in NUTS:
            pos, quat = self.nut_pose(rs_env, n)
            out[n] = {"pos": pos.tolist(), "quat": quat.tolist()}
        return out

    # ------------------------------------------------------------------ expert
    def _check_skill_args(self, skill: str, args: tuple[str, ...]) -> None:
        if skill not in self.skills:
            raise UnknownSkillError(skill, list(self.skills))
        want = 1 if skill == "pick" else 2
        if len(args) != want:
            raise UnknownObjectError(",".join(args), list(NUTS) + (list(PEGS) if want == 2 else []))
        _check_name(args[0], NUTS)
        if want == 2:
            _check_name(args[1], PEGS)

    def _eef(self, rs_env: Any) -> tuple[np.ndarray, np.ndarray]:
        robot = rs_env.robots[0]
        sid = robot.eef_site_id[robot.arms[0]] if isinstance(robot.eef_site_id, dict) else robot.eef_site_id
        return np.array(rs_env.sim.data.site_xpos[sid]), np.array(rs_env.sim.data.site_xmat[sid]).reshape(3, 3)

    def _q7(self, rs_env: Any) -> float:
        robot = rs_env.robots[0]
        return float(rs_env.sim.data.qpos[robot._ref_joint_pos_indexes[-1]])

    def plan_pick(self, rs_env: Any, nut: str) -> PickPlan:
        """Where and how the expert grasps ``nut``, and how far it turns the lifted nut (see :class:`PickPlan`).

        The fingers close across the handle (along the nut's local y). Of the grasp yaws that do so (every
        pi), it takes the one minimising the total wrist rotation (to the grasp, then :func:`handle_turn`)
        that keeps joint 7 within :data:`Q7_LIMIT` at the grasp, after the turn and over the peg (joint 7 is
        predicted from its current value, the yaw change and the arm's azimuth change, :func:`arm_azimuth`).
        """
        pos, quat = self.nut_pose(rs_env, nut)
        grasp = pos + quat_to_mat(quat) @ np.array([NUTS[nut].grasp_offset, 0.0, 0.0])
        handle_yaw = yaw_of_quat(quat)
        eef, eef_rot = self._eef(rs_env)
        start = yaw_of_mat(eef_rot)
        base_pos = np.asarray(rs_env.robots[0].base_pos)
        # joint 7 at the grasp before any yaw change, then its shift when the arm later reaches over the peg
        q7_there = self._q7(rs_env) + arm_azimuth(grasp, base_pos) - arm_azimuth(eef, base_pos)
        peg_shift = arm_azimuth(self.peg_pos(rs_env, NUTS[nut].peg), base_pos) - arm_azimuth(grasp, base_pos)
        base = start + wrap_pi(handle_yaw + math.pi / 2 - start)
        best: tuple[float, float, float] | None = None  # (cost, grasp_yaw, turn)
        for k in (-2, -1, 0, 1, 2):
            g = base + k * math.pi
            q7_g = q7_there - (g - start)
            if abs(q7_g) > Q7_LIMIT:
                continue
            turn = handle_turn(handle_yaw, q7_g, peg_shift)
            if turn is None:
                continue
            cost = abs(g - start) + abs(turn)
            if best is None or cost < best[0]:
                best = (cost, g, turn)
        if best is None:  # no admissible plan (wrist already out of range): nearest grasp yaw, no turn
            best = (0.0, start + ((handle_yaw + math.pi - start) % math.pi - math.pi / 2), 0.0)
        return PickPlan(grasp=grasp, grasp_yaw=best[1], start_yaw=start, turn=best[2])

    def expert_waypoints(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> list[Waypoint]:
        """Waypoints of the scripted expert from the current state (grip-site positions, m, world).

        ``pick(nut)``: rise and turn (<= :data:`YAW_STEP` per waypoint) to above the handle -> slow descent ->
        close and hold -> lift :data:`LIFT_HEIGHT` -> turn the nut so its handle points towards the robot
        (:data:`HANDLE_WINDOW`; keeps the grip site within reach when the nut is over its peg).
        ``insert(nut, peg)``: measures the grip-site -> hole-centre offset now (after the grasp, so any slip is
        accounted for), carries the nut so its hole centre is over the peg axis, aligns, descends slowly until
        the nut is threaded on the peg, opens, and retreats straight up. The yaw is held. If the nut is not
        grasped, it only backs off 5 cm upwards (the subgoal then fails verification).

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self._check_skill_args(skill, tuple(args))
        if skill == "pick":
            return self._pick_waypoints(rs_env, args[0])
        return self._insert_waypoints(rs_env, args[0], args[1])

    def _pick_waypoints(self, rs_env: Any, nut: str) -> list[Waypoint]:
        plan = self.plan_pick(rs_env, nut)
        eef, _ = self._eef(rs_env)
        grasp = plan.grasp
        above = grasp + np.array([0.0, 0.0, APPROACH_HEIGHT])
        wps: list[Waypoint] = []
        # rise (if low), then travel to above the handle while turning, at most YAW_STEP per waypoint
        start = eef if eef[2] >= above[2] - 0.02 else np.array([eef[0], eef[1], above[2]])
        if start is not eef:
            wps.append(Waypoint(start, plan.start_yaw, -1.0, 0.02, 0.05, 0, "rise"))
        yaws = yaw_steps(plan.start_yaw, plan.grasp_yaw - plan.start_yaw)
        for i, y in enumerate(yaws):
            p = start + (above - start) * (i + 1) / len(yaws)
            last = i == len(yaws) - 1
            wps.append(Waypoint(p, y, -1.0, 0.01 if last else 0.03, 0.05, 0, "above" if last else "travel"))
        y = plan.grasp_yaw
        wps += [
            Waypoint(grasp + np.array([0.0, 0.0, 0.03]), y, -1.0, 0.006, 0.025, 0, "pre_grasp"),
            Waypoint(grasp, y, -1.0, 0.005, 0.01, 2, "grasp"),
            Waypoint(grasp, y, 1.0, 0.01, 0.01, 10, "close"),
        ]
        lifted = grasp + np.array([0.0, 0.0, LIFT_HEIGHT])
        wps.append(Waypoint(lifted, y, 1.0, 0.01, 0.02, 0, "lift"))
        for t in yaw_steps(y, plan.turn) if abs(plan.turn) > 1e-6 else []:
            wps.append(Waypoint(lifted, t, 1.0, 0.01, 0.02, 0, "turn"))
        wps.append(Waypoint(lifted, y + plan.turn, 1.0, 0.01, 0.02, 4, "hold"))
        return wps

    def _insert_waypoints(self, rs_env: Any, nut: str, peg: str) -> list[Waypoint]:
        nut_pos, _ = self.nut_pose(rs_env, nut)
        eef, eef_rot = self._eef(rs_env)
        yaw = yaw_of_mat(eef_rot)
        if not self.is_grasped(rs_env, nut):  # nothing to insert: back off upwards, the verifier reports failure
            return [Waypoint(eef + np.array([0.0, 0.0, 0.05]), yaw, -1.0, 0.02, 0.03, 0, "not_grasped")]
        dz = eef[2] - nut_pos[2]  # grip site height over the hole centre
        xy = self.peg_pos(rs_env, peg)[:2] + (eef - nut_pos)[:2]
        carry_z = max(eef[2], CARRY_NUT_Z + dz)
        wps: list[Waypoint] = []
        if eef[2] < carry_z - 0.01:
            wps.append(Waypoint(np.array([eef[0], eef[1], carry_z]), yaw, 1.0, 0.02, 0.03, 0, "rise"))
        wps += [
            Waypoint(np.array([*xy, carry_z]), yaw, 1.0, 0.01, 0.04, 0, "over_peg"),
            Waypoint(np.array([*xy, ALIGN_NUT_Z + dz]), yaw, 1.0, 0.003, 0.01, 6, "align"),
            Waypoint(np.array([*xy, RELEASE_NUT_Z + dz]), yaw, 1.0, 0.005, 0.006, 0, "descend"),
            Waypoint(np.array([*xy, RELEASE_NUT_Z + dz]), yaw, -1.0, 0.01, 0.01, 8, "release"),
            Waypoint(np.array([*xy, RELEASE_NUT_Z + dz + RETREAT_HEIGHT]), yaw, -1.0, 0.02, 0.03, 0, "retreat"),
        ]
        return wps

    def goal_poses(self, rs_env: Any, episode: TaskEpisode, skill: str, args: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Nut pose once the skill succeeded, for the oracle goal image (computed from the current state).

        ``pick(nut)``: the nut lifted :data:`LIFT_HEIGHT` and turned about its grasp point as the expert will
        (:meth:`plan_pick`). ``insert(nut, peg)``: the nut lying flat around the peg (origin on the peg axis at
        :data:`NUT_REST_Z`) with its current yaw.

        Raises:
            UnknownSkillError / UnknownObjectError: for names this task does not know.
        """
        self._check_skill_args(skill, tuple(args))
        nut = args[0]
        pos, quat = self.nut_pose(rs_env, nut)
        if skill == "pick":
            plan = self.plan_pick(rs_env, nut)
            new_pos = plan.grasp + rotate_z(pos - plan.grasp, plan.turn) + np.array([0.0, 0.0, LIFT_HEIGHT])
            return {nut: (new_pos, quat_yaw_mul(plan.turn, quat))}
        yaw = yaw_of_quat(quat)
        flat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
        peg_xy = self.peg_pos(rs_env, args[1])[:2]
        return {nut: (np.array([peg_xy[0], peg_xy[1], NUT_REST_Z]), flat)}


#: Subgoal wording per skill (``TaskSpec.skill_texts``).
SKILL_TEXTS: dict[str, str] = {"pick": "pick up the {0}", "insert": "put the {0} on the {1}"}


def make_nut_sampler(table_offset: tuple[float, float, float] | np.ndarray) -> Any:
    """robosuite's default NutAssembly placement, with the nuts spawned resting on the table.

    Same as robosuite: a ``SequentialCompositeSampler`` with ``SquareNutSampler`` (x in [-0.115, -0.11],
    y in [0.11, 0.225] m) and ``RoundNutSampler`` (y in [-0.225, -0.11] m), uniform yaw, relative to
    ``table_offset`` (m, world). Different: robosuite's ``z_offset=0.02`` plus the nuts' 0.05 m
    ``bottom_site`` drops them from 0.06 m; here ``z_offset=-0.039`` puts them 1 mm above the table, so the
    state at reset is already at rest (no fall, and the first observation shows where the nuts lie).
    """
    from robosuite.utils.placement_samplers import SequentialCompositeSampler, UniformRandomSampler

    sampler = SequentialCompositeSampler(name="ObjectSampler")
    for nut_name, y_range in (("SquareNut", [0.11, 0.225]), ("RoundNut", [-0.225, -0.11])):
        sampler.append_sampler(
            UniformRandomSampler(
                name=f"{nut_name}Sampler",
                x_range=[-0.115, -0.11],
                y_range=y_range,
                rotation=None,
                rotation_axis="z",
                ensure_object_boundary_in_range=False,
                ensure_valid_placement=True,
                reference_pos=np.asarray(table_offset, dtype=np.float64),
                z_offset=-0.039,
            )
        )
    return sampler
