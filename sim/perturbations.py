"""Mid-episode disturbances for recovery tests, applied by :class:`sim.robosuite_env.RobosuiteEnv` inside ``step``.

Perturbations (each fires at most once per episode):

* ``knock_top_cube`` (stack_three): once ``on(x, y)`` first holds, x is teleported off y onto free table space
  (lying flat on the table, at least 8 cm from every other object and 6 cm from the gripper).
* ``pull_from_bin`` (pick_place_bins): once ``in_bin(x)`` first holds, the task's
  :meth:`TaskDefinition.perturb` moves x back onto the table area it came from.
* ``miss_grasp`` (pick_place_bins): once ``grasped(x)`` first holds, the task's :meth:`TaskDefinition.perturb`
  moves x 4-10 cm away on the source bin's floor, so the fingers close on nothing and the next pick starts with a
  closed gripper right above it (the retry state of a learned executor's failed grasp).
* ``open_gripper`` (any task): once an object is grasped and carried (lifted > 5 cm above its start height),
  the gripper command is forced open for :data:`OPEN_GRIPPER_STEPS` control steps so the object drops.
* ``close_gripper`` (any task): once the gripper is open and empty, its command is forced closed for
  :data:`CLOSE_GRIPPER_STEPS` control steps (a spurious closure, or a grasp that closed on nothing), so the next
  motion starts with a closed gripper that must open again. Its n-th event is the n-th time the gripper is free:
  at the start of the episode (n = 1), then after each grasp.
* ``jam_on_peg`` (nut_assembly): while the n-th grasped nut (n = ``after_success``) is carried close above its peg,
  the task's :meth:`TaskDefinition.perturb` drives the arm so that the nut comes down 1.5-3 cm off the peg's axis
  and rests, still grasped, on the peg's top: the position part of the action is replaced for
  :data:`PUSH_STEPS` control steps by a proportional law towards the grip-site point the task names (``push_to``);
  the rotation part is zeroed and the gripper command kept. Whoever drives the arm then has to rise and align again
  (the learned executor's commonest insertion failure, and the recovery its demonstrations lacked).
* ``topple`` (pick_place_bins): at the first step (its event, :data:`START_EVENT`, holds from the start), the task's
  :meth:`TaskDefinition.perturb` lays a tall box of the source bin on its side, as a failed grasp knocks one over in
  closed loop (perception data with lying objects).
* ``slip_fast`` (stack_three; *recurring*, e.g. worn finger pads): whenever a carried object (as above) moves
  faster than :data:`SLIP_SPEED` (end-effector speed over the last control step), it slips: the gripper is
  forced open as for ``open_gripper``. It fires again on every later fast carry (at most once per grasp). With
  the scripted expert at full speed, carrying a cube to its stack slips (about 0.2 m/s), the pick's lift does not
  (about 0.16 m/s), and a carry at half speed does not: a lesson to learn, used by the memory benchmark.

Trigger (:class:`PerturbationSpec`): with ``at_step=k`` the perturbation fires at the first step ``>= k`` at which
its condition holds; otherwise it fires on the ``after_success``-th *event* of its kind (an event is a predicate
such as ``on(red,green)``, ``in_bin(milk)`` or "x carried" becoming true for the first time in the episode).
The env reports ``info["perturbation"] = {"name", "step", "detail"}`` on the step it fires. A task-implemented
perturbation may decline (its ``perturb`` returns None, e.g. ``jam_on_peg`` until the nut is over its peg); it is then
retried on every later step while its triggering event still holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from sim.tasks.base import TaskDefinition, TaskEpisode
from tandem.core.errors import ConfigError, UnknownNameError


class PerturbableEnv(Protocol):
    """What a :class:`Perturber` needs of the simulator adapter (implemented by ``sim.robosuite_env.RobosuiteEnv``).

    Declared here so that this module does not import the adapter that owns it (no import cycle).

    Attributes:
        rs_env: the raw robosuite env (privileged).
        episode: the current :class:`TaskEpisode`.
        task_def: the episode's :class:`TaskDefinition`.
        step_count: control steps since reset.
    """

    rs_env: Any
    episode: TaskEpisode
    task_def: TaskDefinition

    @property
    def step_count(self) -> int: ...

    def eef_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Grip-site ``(pos (3,) m world, rotation (3, 3) site->world)``."""
        ...

    def gripper_opening(self) -> float:
        """Distance between the fingers (m)."""
        ...

    def teleport(self, poses: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """Move objects to ``(pos (3,) m, quat wxyz (4,))`` instantly, then ``forward()``."""
        ...

    def forward(self) -> None:
        """``mj_forward`` after qpos was written."""
        ...

    @property
    def controller_settings(self) -> dict[str, Any]:
        """The live OSC controller's settings; ``"output_max"[:3]`` is m of set-point offset per unit action."""
        ...

#: Every perturbation name; a task supports those in its ``perturbation_names``.
PERTURBATIONS: tuple[str, ...] = ("knock_top_cube", "open_gripper", "close_gripper", "pull_from_bin", "slip_fast",
                                  "jam_on_peg", "miss_grasp", "topple")
#: Perturbations implemented by the task itself through ``TaskDefinition.perturb``.
TASK_IMPLEMENTED: tuple[str, ...] = ("pull_from_bin", "jam_on_peg", "miss_grasp", "topple")
#: Subgoals of work each perturbation undoes when it fires, for which the env extends the episode's step budget by
#: the task's :attr:`TaskScene.steps_per_subgoal` each (``RobosuiteEnv(perturbation_budget=True)``): a pulled or
#: knocked-off object must be picked and placed again (2), a dropped or slipped-away one picked again (1). Those that
#: undo nothing finished add nothing: ``close_gripper`` and ``jam_on_peg`` (a detour within the running subgoal),
#: ``topple`` (the episode's starting scene), and ``slip_fast`` (caused by the agent's own speed: the lesson the
#: memory benchmark measures is to avoid it).
ADDED_SUBGOALS: dict[str, int] = {"knock_top_cube": 2, "pull_from_bin": 2, "open_gripper": 1, "miss_grasp": 1,
                                  "close_gripper": 0, "jam_on_peg": 0, "topple": 0, "slip_fast": 0}
#: The event of perturbations that change the scene the episode starts from: it holds from the first step.
START_EVENT = "start"
#: Control steps for which a task perturbation's ``push_to`` replaces the position action.
PUSH_STEPS = 20
#: Control steps the gripper is forced open by ``open_gripper``.
OPEN_GRIPPER_STEPS = 10
#: Control steps the gripper is forced closed by ``close_gripper``.
CLOSE_GRIPPER_STEPS = 15
#: Finger opening (m) above which an empty gripper counts as open for ``close_gripper``.
OPEN_WIDTH = 0.06
#: Height (m) above the start height at which a grasped object counts as carried.
CARRY_LIFT = 0.05
#: End-effector speed (m/s) above which a carried object slips under ``slip_fast``.
SLIP_SPEED = 0.18


@dataclass(frozen=True)
class PerturbationSpec:
    """Which perturbation to apply and when.

    Attributes:
        name: one of :data:`PERTURBATIONS` supported by the task.
        at_step: fire at the first control step ``>= at_step`` at which the condition holds; None = event-based.
        after_success: with ``at_step=None``, fire on the n-th event of the perturbation's kind (n >= 1).
    """

    name: str
    at_step: int | None = None
    after_success: int = 1


def _event_prefix(name: str) -> str:
    return {"knock_top_cube": "on(", "pull_from_bin": "in_bin(", "open_gripper": "carried(",
            "close_gripper": "free(", "slip_fast": "carried(", "jam_on_peg": "grasped(", "miss_grasp": "grasped(",
            "topple": START_EVENT}[name]


def _args_of(pred: str) -> tuple[str, ...]:
    return tuple(a.strip() for a in pred.partition("(")[2].rstrip(")").split(","))


class Perturber:
    """Stateful trigger + effect of one :class:`PerturbationSpec` for one episode (created by the env on reset).

    Args:
        spec: the perturbation to apply.
        task_def: the task (its ``perturbation_names`` must list ``spec.name``).
        rng: generator for random choices (e.g. where the knocked cube lands); seeded from the episode seed.

    Raises:
        UnknownNameError: unknown perturbation, or one that the task does not support (lists valid ones).
        ConfigError: negative ``at_step`` or ``after_success < 1``.
    """

    def __init__(self, spec: PerturbationSpec, task_def: TaskDefinition, rng: np.random.Generator) -> None:
        self.validate(spec, task_def)
        self.spec = spec
        self.task_def = task_def
        self.rng = rng
        self.fired = False
        self.events = 0
        self.seen: set[str] = set()
        self.force_open_left = 0
        self.force_close_left = 0
        self.grasps = 0  # grasp onsets so far (close_gripper's event counter)
        self.grasping = False
        self.start_z: dict[str, float] | None = None
        self.prev_eef: np.ndarray | None = None
        self.slipped: set[str] = set()  # slip_fast: objects that slipped during their current grasp
        self.n_fired = 0
        self.pending: str | None = None  # a triggering event whose task perturbation declined (retried)
        self.push_to: np.ndarray | None = None  # grip-site target (m, world) of a task perturbation's push
        self.push_left = 0

    @staticmethod
    def validate(spec: PerturbationSpec, task_def: TaskDefinition) -> None:
        """Check ``spec`` against the task. Raises UnknownNameError / ConfigError (see class doc)."""
        if spec.name not in PERTURBATIONS:
            raise UnknownNameError("perturbation", spec.name, list(PERTURBATIONS))
        if spec.name not in task_def.perturbation_names:
            raise UnknownNameError("perturbation", spec.name, list(task_def.perturbation_names),
                                   where=f"for task {task_def.name!r}")
        if spec.at_step is not None and spec.at_step < 0:
            raise ConfigError(f"PerturbationSpec.at_step must be >= 0, got {spec.at_step}")
        if spec.after_success < 1:
            raise ConfigError(f"PerturbationSpec.after_success must be >= 1, got {spec.after_success}")

    # -- state for save/restore
    def get_state(self) -> dict[str, Any]:
        return {"fired": self.fired, "events": self.events, "seen": sorted(self.seen),
                "force_open_left": self.force_open_left, "force_close_left": self.force_close_left,
                "grasps": self.grasps, "grasping": self.grasping,
                "start_z": None if self.start_z is None else dict(self.start_z), "rng": self.rng.bit_generator.state,
                "slipped": sorted(self.slipped), "n_fired": self.n_fired,
                "prev_eef": None if self.prev_eef is None else self.prev_eef.tolist(), "pending": self.pending,
                "push_to": None if self.push_to is None else self.push_to.tolist(), "push_left": self.push_left}

    def set_state(self, st: dict[str, Any]) -> None:
        self.fired, self.events, self.seen = st["fired"], st["events"], set(st["seen"])
        self.force_open_left = st["force_open_left"]
        self.force_close_left = st.get("force_close_left", 0)
        self.grasps, self.grasping = st.get("grasps", 0), st.get("grasping", False)
        self.start_z = None if st["start_z"] is None else dict(st["start_z"])
        self.rng.bit_generator.state = st["rng"]
        self.slipped, self.n_fired = set(st.get("slipped", ())), int(st.get("n_fired", 0))
        self.prev_eef = None if st.get("prev_eef") is None else np.asarray(st["prev_eef"], dtype=np.float64)
        self.pending = st.get("pending")
        self.push_to = None if st.get("push_to") is None else np.asarray(st["push_to"], dtype=np.float64)
        self.push_left = int(st.get("push_left", 0))

    # -- hooks called by the env
    def before_step(self, env: PerturbableEnv, action: np.ndarray) -> np.ndarray:
        """Override the gripper command while it is forced open or closed, and the arm's motion while a task
        perturbation pushes it (``push_to``: the position action becomes ``clip((push_to - grip site) /
        output_max[:3], -1, 1)``, the rotation action 0). Returns the (possibly modified) ``(7,)`` action."""
        if self.push_left > 0 and self.push_to is not None:
            self.push_left -= 1
            scale = np.asarray(env.controller_settings["output_max"], dtype=np.float64)[:3]
            action = np.array(action, copy=True)
            action[:3] = np.clip((self.push_to - env.eef_pose()[0]) / scale, -1.0, 1.0)
            action[3:6] = 0.0
        if self.force_open_left > 0:
            self.force_open_left -= 1
            action = np.array(action, copy=True)
            action[-1] = -1.0
        elif self.force_close_left > 0:
            self.force_close_left -= 1
            action = np.array(action, copy=True)
            action[-1] = 1.0
        return action

    def _current_events(self, env: PerturbableEnv, preds: dict[str, bool]) -> list[str]:
        prefix = _event_prefix(self.spec.name)
        if prefix == START_EVENT:
            return [START_EVENT]
        if self.spec.name == "close_gripper":
            grasping = any(v for p, v in preds.items() if p.startswith("grasped("))
            if grasping and not self.grasping:
                self.grasps += 1
            self.grasping = grasping
            return [] if grasping or env.gripper_opening() < OPEN_WIDTH else [f"free({self.grasps})"]
        if self.spec.name not in ("open_gripper", "slip_fast"):
            return [p for p, v in preds.items() if v and p.startswith(prefix)]
        poses = self.task_def.object_poses(env.rs_env, env.episode)
        if self.start_z is None:
            self.start_z = {k: float(v["pos"][2]) for k, v in poses.items()}
        out = []
        for name, pose in poses.items():
            if preds.get(f"grasped({name})", False) and pose["pos"][2] - self.start_z.get(name, pose["pos"][2]) > CARRY_LIFT:
                out.append(f"carried({name})")
        return out

    def after_step(self, env: PerturbableEnv, preds: dict[str, bool] | None = None) -> dict[str, Any] | None:
        """Check the trigger after a physics step and apply the effect. Returns the info dict when it fired.

        ``preds`` are the task predicates of the current state (computed here when None).
        """
        if self.spec.name == "slip_fast":
            return self._slip(env, preds)
        if self.start_z is None and self.spec.name == "open_gripper":
            # heights at the first step of the episode (objects settle on the table)
            poses = self.task_def.object_poses(env.rs_env, env.episode)
            self.start_z = {k: float(v["pos"][2]) for k, v in poses.items()}
        if self.fired:
            return None
        if preds is None:
            preds = self.task_def.predicates(env.rs_env, env.episode)
        current = self._current_events(env, preds)
        new = [e for e in current if e not in self.seen]
        self.seen.update(new)
        self.events += len(new)
        step = env.step_count
        if self.spec.at_step is not None:
            if step < self.spec.at_step or not current:
                return None
            trigger = new[0] if new else current[0]
        elif self.pending is not None:  # a declined task perturbation: retried while its event still holds
            if self.pending not in current:
                self.pending = None
                return None
            trigger = self.pending
        else:
            if not new or self.events < self.spec.after_success:
                return None
            trigger = new[-1]
        detail = self._apply(env, trigger)
        if detail is None:  # only a task-implemented perturbation declines
            self.pending = trigger
            return None
        self.pending = None
        self.fired = True
        return {"name": self.spec.name, "step": step, "detail": detail}

    def _slip(self, env: PerturbableEnv, preds: dict[str, bool] | None) -> dict[str, Any] | None:
        """``slip_fast``: open the gripper when a carried object moves faster than :data:`SLIP_SPEED` (recurring)."""
        if preds is None:
            preds = self.task_def.predicates(env.rs_env, env.episode)
        if self.start_z is None:
            poses = self.task_def.object_poses(env.rs_env, env.episode)
            self.start_z = {k: float(v["pos"][2]) for k, v in poses.items()}
        eef = np.asarray(env.eef_pose()[0], dtype=np.float64)
        prev, self.prev_eef = self.prev_eef, eef
        self.slipped = {o for o in self.slipped if preds.get(f"grasped({o})", False)}  # re-armed once released
        step = env.step_count
        if prev is None or self.force_open_left > 0 or (self.spec.at_step is not None and step < self.spec.at_step):
            return None
        speed = float(np.linalg.norm(eef - prev)) / env.episode.spec.control_dt
        if speed <= SLIP_SPEED:
            return None
        for event in self._current_events(env, preds):
            obj = _args_of(event)[0]
            if obj in self.slipped:
                continue
            self.slipped.add(obj)
            self.force_open_left = OPEN_GRIPPER_STEPS
            self.n_fired += 1
            self.fired = True
            return {"name": self.spec.name, "step": step,
                    "detail": {"object": obj, "speed_mps": round(speed, 3), "n": self.n_fired}}
        return None

    # -- effects
    def _apply(self, env: PerturbableEnv, trigger: str) -> dict[str, Any] | None:
        args = _args_of(trigger)
        if self.spec.name == "open_gripper":
            self.force_open_left = OPEN_GRIPPER_STEPS
            return {"object": args[0], "open_steps": OPEN_GRIPPER_STEPS}
        if self.spec.name == "close_gripper":
            self.force_close_left = CLOSE_GRIPPER_STEPS
            return {"after_grasps": int(args[0]), "close_steps": CLOSE_GRIPPER_STEPS}
        if self.spec.name == "knock_top_cube":
            return knock_off(env, args[0], args[1], self.rng)
        target = None if trigger == START_EVENT else args[0]
        detail = self.task_def.perturb(env.rs_env, env.episode, self.spec.name, self.rng, target=target)
        if detail is not None:
            env.forward()
            if detail.get("push_to") is not None:
                self.push_to = np.asarray(detail["push_to"], dtype=np.float64)
                self.push_left = PUSH_STEPS
                detail = {**detail, "push_steps": PUSH_STEPS}
        return detail


def knock_off(env: PerturbableEnv, obj: str, support: str, rng: np.random.Generator) -> dict[str, Any]:
    """Teleport ``obj`` (resting on ``support``) to free table space, lying flat with a random yaw.

    The new xy is drawn in the table region ``table_offset.xy + [-0.15, 0.15] x [-0.2, 0.2]`` (m) at least 8 cm
    from every other object and 6 cm (xy) from the grip site; z = table top + the object's bottom offset.

    Returns:
        ``{"object", "from": [x, y, z], "to": [x, y, z], "support": support}`` (m, world).
    """
    rs = env.rs_env
    poses = env.task_def.object_poses(rs, env.episode)
    mobj = env.task_def.mujoco_object(rs, env.episode, obj)
    table_top = np.asarray(getattr(rs, "table_offset", (0.0, 0.0, 0.8)), dtype=float)
    eef, _ = env.eef_pose()
    others = [np.asarray(p["pos"][:2]) for n, p in poses.items() if n != obj]
    best, best_clear = None, -1.0
    for _ in range(200):
        xy = table_top[:2] + rng.uniform([-0.15, -0.2], [0.15, 0.2])
        clear = min([np.linalg.norm(xy - o) for o in others] + [np.inf])
        clear_eef = np.linalg.norm(xy - eef[:2])
        if clear >= 0.08 and clear_eef >= 0.06:
            best = xy
            break
        score = min(clear, clear_eef + 0.02)
        if score > best_clear:
            best, best_clear = xy, score
    z = table_top[2] - float(mobj.bottom_offset[2]) + 0.001
    yaw = rng.uniform(-math.pi, math.pi)
    quat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
    before = list(map(float, poses[obj]["pos"]))
    to = np.array([best[0], best[1], z])
    env.teleport({obj: (to, quat)})
    return {"object": obj, "support": support, "from": before, "to": to.round(4).tolist()}
