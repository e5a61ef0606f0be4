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

Surprises (``configs/suite/surprises.yaml`` draws one per episode; a robust stack notices each from its own
observations, never from the simulator's truth):

* ``vanish`` (any task): on the n-th goal predicate that first holds (an object placed), an object is removed from the
  scene: the object just placed, or (one time in two, when there is one) a goal object not yet placed and not held.
  Its geoms stop colliding (``geom_contype``/``geom_conaffinity`` 0) and it is parked at :data:`VANISH_POS`, a metre
  below the floor behind the robot, out of every camera, its free joint pinned there at every step (qpos
  rewritten, qvel 0). The task can no longer succeed: a robust stack must not claim success (it should report the
  object missing and stop, or keep looking until its budget ends).
* ``knock_at_release`` (stack_three): at the release step of a stack (the step the gripper command turns open while
  the cube it held rests centred over another object), the cube is knocked off onto free table space as in
  ``knock_top_cube``. The stack's verifier must not read the stack as done; the planner must pick and stack again.
* ``appearance_shift`` (any task): on the n-th goal predicate that first holds, the work surface (the table's, or
  the bins', visual materials ``mat_rgba`` and material-less visual geoms' ``geom_rgba``) is tinted by a drawn
  colour and the scene's lights (``light_diffuse``) are dimmed or brightened (:data:`LIGHT_SCALE`), so perception
  sees a shifted appearance; nothing moves. A robust stack keeps reading the scene (its models and thresholds
  still hold) and finishes the task.
* ``move_hidden`` (any task): while the grip site is above an object (within :data:`HIDE_XY` in xy, between
  :data:`HIDE_DZ` above its centre: the arm hides it from the main, front camera), the object is moved
  :data:`HIDE_SHIFT_M` (3-6 cm, xy) to a spot where it interpenetrates nothing. Candidates: objects not grasped
  and named in no goal predicate that holds (no finished work is moved). A robust stack re-localises it before
  closing the fingers (or re-picks after a failed grasp).
* ``drop_after_grasp`` (any task): once an object is first grasped (the n-th grasp onset), the gripper command is
  forced open for :data:`DROP_OPEN_STEPS` control steps, so the grasp is lost right after it succeeded. A robust
  stack's verifier reads the pick as failed and the pick is done again.

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
    def step_count(self) -> int:
        """Control steps since the episode's reset."""
        ...

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

    def interpenetrations(self) -> list[tuple[str, str, float]]:
        """Contacts deeper than the env's tolerance that involve a free object: ``[(body, body, depth m)]``."""
        ...

    def set_model_value(self, field: str, index: int, value: Any) -> None:
        """Write row ``index`` of MuJoCo model array ``field`` (one of :data:`EDITABLE_MODEL_FIELDS`)."""
        ...

#: Every perturbation name; a task supports those in its ``perturbation_names``.
PERTURBATIONS: tuple[str, ...] = ("knock_top_cube", "open_gripper", "close_gripper", "pull_from_bin", "slip_fast",
                                  "jam_on_peg", "miss_grasp", "topple", "vanish", "knock_at_release",
                                  "appearance_shift", "move_hidden", "drop_after_grasp")
#: Perturbations implemented by the task itself through ``TaskDefinition.perturb``.
TASK_IMPLEMENTED: tuple[str, ...] = ("pull_from_bin", "jam_on_peg", "miss_grasp", "topple")
#: Subgoals of work each perturbation undoes when it fires, for which the env extends the episode's step budget by
#: the task's :attr:`TaskScene.steps_per_subgoal` each (``RobosuiteEnv(perturbation_budget=True)``): a pulled or
#: knocked-off object must be picked and placed again (2), a dropped or slipped-away one picked again (1). Those that
#: undo nothing finished add nothing: ``close_gripper`` and ``jam_on_peg`` (a detour within the running subgoal),
#: ``topple`` (the episode's starting scene), and ``slip_fast`` (caused by the agent's own speed: the lesson the
#: memory benchmark measures is to avoid it). Surprises: ``knock_at_release`` undoes a pick and a stack (2),
#: ``drop_after_grasp`` and ``move_hidden`` a pick at most (1); ``appearance_shift`` moves nothing (0) and ``vanish``
#: makes the task impossible (0: no budget can bring the object back).
ADDED_SUBGOALS: dict[str, int] = {"knock_top_cube": 2, "pull_from_bin": 2, "open_gripper": 1, "miss_grasp": 1,
                                  "close_gripper": 0, "jam_on_peg": 0, "topple": 0, "slip_fast": 0,
                                  "vanish": 0, "knock_at_release": 2, "appearance_shift": 0, "move_hidden": 1,
                                  "drop_after_grasp": 1}
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
#: ``vanish``: where a removed object is parked (m, world): 1 m below the floor (z = 0), 1.5 m behind the robot base.
VANISH_POS = np.array([-1.5, 0.0, -1.0])
#: ``knock_at_release``: a released object counts as over another when their centres are this close in xy (m) ...
RELEASE_XY = 0.025
#: ... and it is between these heights (m) above the other's centre.
RELEASE_DZ = (0.01, 0.08)
#: ``appearance_shift``: bodies whose visual geoms (group 1) make the work surface (robosuite's table arena, bins).
SURFACE_BODIES: tuple[str, ...] = ("table", "bin1", "bin2")
#: ``appearance_shift``: range of the per-channel factor the surface's colour is multiplied by.
TINT = (0.35, 1.0)
#: ``appearance_shift``: the lights' diffuse colour is multiplied by a factor drawn from one of these ranges (dimmer
#: or brighter, one time in two each), then clipped to [0, 1].
LIGHT_SCALE = ((0.35, 0.6), (1.3, 1.45))
#: ``move_hidden``: the grip site hides an object when within this xy distance (m) of its centre ...
HIDE_XY = 0.04
#: ... and between these heights (m) above it.
HIDE_DZ = (0.05, 0.25)
#: ``move_hidden``: how far (m, xy) the hidden object moves.
HIDE_SHIFT_M = (0.03, 0.06)
#: ``move_hidden``: spots tried before declining (retried at the next step while the object is still hidden).
HIDE_TRIES = 30
#: Control steps the gripper is forced open by ``drop_after_grasp``.
DROP_OPEN_STEPS = 10
#: The MuJoCo model fields that perturbations may edit (``PerturbableEnv.set_model_value``); the env restores them at
#: every reset and after ``restore_state`` (then re-applies :attr:`Perturber.model_edits`).
EDITABLE_MODEL_FIELDS: tuple[str, ...] = ("mat_rgba", "light_diffuse", "geom_rgba", "geom_contype",
                                          "geom_conaffinity")


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
            "topple": START_EVENT, "drop_after_grasp": "grasped(", "knock_at_release": "released(",
            "move_hidden": "hidden(", "vanish": "goal", "appearance_shift": "goal"}[name]


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
        self.gripper_cmd = (0.0, 0.0)  # (previous, current) step's gripper command as applied (-1 open, +1 close)
        self.held: list[str] = []  # objects grasped at the previous step (knock_at_release)
        self.vanished: str | None = None  # vanish: the object pinned at VANISH_POS
        self.model_edits: list[tuple[str, int, list[float]]] = []  # (field, row, value) written to the model

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
        """The perturber's state, to restore with :meth:`set_state` (e.g. after a simulator state reload)."""
        return {"fired": self.fired, "events": self.events, "seen": sorted(self.seen),
                "force_open_left": self.force_open_left, "force_close_left": self.force_close_left,
                "grasps": self.grasps, "grasping": self.grasping,
                "start_z": None if self.start_z is None else dict(self.start_z), "rng": self.rng.bit_generator.state,
                "slipped": sorted(self.slipped), "n_fired": self.n_fired,
                "prev_eef": None if self.prev_eef is None else self.prev_eef.tolist(), "pending": self.pending,
                "push_to": None if self.push_to is None else self.push_to.tolist(), "push_left": self.push_left,
                "gripper_cmd": list(self.gripper_cmd), "held": list(self.held), "vanished": self.vanished,
                "model_edits": [[f, i, list(v)] for f, i, v in self.model_edits]}

    def set_state(self, st: dict[str, Any]) -> None:
        """Restore a :meth:`get_state`."""
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
        self.gripper_cmd = tuple(st.get("gripper_cmd", (0.0, 0.0)))  # type: ignore[assignment]
        self.held, self.vanished = list(st.get("held", ())), st.get("vanished")
        self.model_edits = [(str(f), int(i), list(v)) for f, i, v in st.get("model_edits", ())]

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
        self.gripper_cmd = (self.gripper_cmd[1], float(action[-1]))
        return action

    def _current_events(self, env: PerturbableEnv, preds: dict[str, bool]) -> list[str]:
        prefix = _event_prefix(self.spec.name)
        if prefix == START_EVENT:
            return [START_EVENT]
        if prefix == "goal":  # vanish, appearance_shift: goal predicates that hold (START_EVENT too with at_step)
            goals = [g for g in env.episode.spec.goals if preds.get(g, False)]
            return goals + ([START_EVENT] if self.spec.at_step is not None else [])
        if prefix == "hidden(":
            return self._hidden(env, preds)
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
        if self.vanished is not None:
            self._pin_vanished(env)
        if preds is None:
            preds = self.task_def.predicates(env.rs_env, env.episode)
        if self.spec.name == "knock_at_release":
            released = self._released(env, preds)
            self.held = [o for o in self.task_def.object_poses(env.rs_env, env.episode) if preds.get(f"grasped({o})")]
            preds = {**preds, **{e: True for e in released}}
        if self.start_z is None and self.spec.name == "open_gripper":
            # heights at the first step of the episode (objects settle on the table)
            poses = self.task_def.object_poses(env.rs_env, env.episode)
            self.start_z = {k: float(v["pos"][2]) for k, v in poses.items()}
        if self.fired:
            return None
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

    # -- surprises: triggers
    def _released(self, env: PerturbableEnv, preds: dict[str, bool]) -> list[str]:
        """``knock_at_release``: ``released(x,y)`` on the step the gripper command turned open while ``x``, grasped
        at the previous step, is centred over object ``y`` (:data:`RELEASE_XY`, :data:`RELEASE_DZ`)."""
        before, now = self.gripper_cmd
        if not (now < 0.0 <= before) or not self.held:
            return []
        poses = self.task_def.object_poses(env.rs_env, env.episode)
        out = []
        for x in self.held:
            px = np.asarray(poses[x]["pos"], dtype=float)
            for y, pose in poses.items():
                d = px - np.asarray(pose["pos"], dtype=float)
                if y != x and np.linalg.norm(d[:2]) < RELEASE_XY and RELEASE_DZ[0] < d[2] < RELEASE_DZ[1]:
                    out.append(f"released({x},{y})")
        return out

    def _hidden(self, env: PerturbableEnv, preds: dict[str, bool]) -> list[str]:
        """``move_hidden``: ``hidden(x)`` while the grip site is above object ``x`` (:data:`HIDE_XY`,
        :data:`HIDE_DZ`), ``x`` not grasped and named in no goal predicate that holds."""
        done = {a for g in env.episode.spec.goals if preds.get(g, False) for a in _args_of(g)}
        site = np.asarray(env.eef_pose()[0], dtype=float)
        out = []
        for x, pose in self.task_def.object_poses(env.rs_env, env.episode).items():
            d = site - np.asarray(pose["pos"], dtype=float)
            if (x not in done and not preds.get(f"grasped({x})", False) and np.linalg.norm(d[:2]) < HIDE_XY
                    and HIDE_DZ[0] < d[2] < HIDE_DZ[1]):
                out.append(f"hidden({x})")
        return out

    # -- surprises: effects
    def _vanish(self, env: PerturbableEnv, trigger: str) -> dict[str, Any]:
        """Remove an object (see the module doc): the one just placed (``trigger``'s first argument) or, one time in
        two, a goal object not yet placed and not held; returns ``{"object", "kind": "placed" | "unplaced", "from",
        "to"}`` (m, world)."""
        preds = self.task_def.predicates(env.rs_env, env.episode)
        goals = env.episode.spec.goals
        unplaced = sorted({_args_of(g)[0] for g in goals if not preds.get(g, False)}
                          - {o for o in self.task_def.object_poses(env.rs_env, env.episode)
                             if preds.get(f"grasped({o})", False)})
        placed = [] if trigger == START_EVENT else [_args_of(trigger)[0]]
        use_unplaced = bool(unplaced) and (not placed or self.rng.uniform() < 0.5)
        target = str(unplaced[int(self.rng.integers(len(unplaced)))]) if use_unplaced else placed[0]
        before = np.asarray(self.task_def.object_poses(env.rs_env, env.episode)[target]["pos"], dtype=float)
        for gid in object_geoms(env, target):
            self._edit(env, "geom_contype", gid, [0])
            self._edit(env, "geom_conaffinity", gid, [0])
        self.vanished = target
        self._pin_vanished(env)
        return {"object": target, "kind": "unplaced" if use_unplaced else "placed",
                "from": before.round(4).tolist(), "to": VANISH_POS.tolist()}

    def _pin_vanished(self, env: PerturbableEnv) -> None:
        """Hold the vanished object at :data:`VANISH_POS`, at rest (its joint frozen)."""
        env.teleport({str(self.vanished): (VANISH_POS, np.array([1.0, 0.0, 0.0, 0.0]))})

    def _edit(self, env: PerturbableEnv, field: str, index: int, value: list[float]) -> None:
        """Write a model value and record it in :attr:`model_edits` (re-applied after ``restore_state``)."""
        env.set_model_value(field, index, value)
        self.model_edits.append((field, int(index), [float(v) for v in value]))

    # -- effects
    def _apply(self, env: PerturbableEnv, trigger: str) -> dict[str, Any] | None:
        args = _args_of(trigger)
        if self.spec.name == "open_gripper":
            self.force_open_left = OPEN_GRIPPER_STEPS
            return {"object": args[0], "open_steps": OPEN_GRIPPER_STEPS}
        if self.spec.name == "close_gripper":
            self.force_close_left = CLOSE_GRIPPER_STEPS
            return {"after_grasps": int(args[0]), "close_steps": CLOSE_GRIPPER_STEPS}
        if self.spec.name in ("knock_top_cube", "knock_at_release"):
            return knock_off(env, args[0], args[1], self.rng)
        if self.spec.name == "drop_after_grasp":
            self.force_open_left = DROP_OPEN_STEPS
            return {"object": args[0], "open_steps": DROP_OPEN_STEPS}
        if self.spec.name == "vanish":
            return self._vanish(env, trigger)
        if self.spec.name == "appearance_shift":
            return shift_appearance(env, self.rng, self._edit)
        if self.spec.name == "move_hidden":
            return move_aside(env, args[0], self.rng)
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


def _model(env: PerturbableEnv) -> Any:
    """The raw ``mujoco.MjModel`` behind ``env``."""
    return env.rs_env.sim.model._model


def object_geoms(env: PerturbableEnv, obj: str) -> list[int]:
    """Ids of every geom of object ``obj``: those of its root body and of the bodies below it."""
    m = _model(env)
    root = m.body(env.task_def.mujoco_object(env.rs_env, env.episode, obj).root_body).id
    bodies = {root}
    for b in range(root + 1, m.nbody):  # MuJoCo numbers bodies depth first: a parent precedes its children
        if int(m.body_parentid[b]) in bodies:
            bodies.add(b)
    return [g for g in range(m.ngeom) if int(m.geom_bodyid[g]) in bodies]


def surface_geoms(env: PerturbableEnv) -> list[int]:
    """Ids of the visual geoms (group 1) of the work surface's bodies (:data:`SURFACE_BODIES`)."""
    m = _model(env)
    return [g for g in range(m.ngeom)
            if int(m.geom_group[g]) == 1 and m.body(int(m.geom_bodyid[g])).name in SURFACE_BODIES]


def shift_appearance(env: PerturbableEnv, rng: np.random.Generator, edit: Any) -> dict[str, Any]:
    """``appearance_shift``: tint the work surface and rescale the lights (see the module doc).

    Args:
        env: the simulator adapter.
        rng: draws the tint (:data:`TINT`, per RGB channel) and the light factor (:data:`LIGHT_SCALE`).
        edit: ``edit(env, field, row, value)`` writes one model row and records it (``Perturber._edit``).

    Returns:
        ``{"materials": [names], "geoms": n, "tint": [r, g, b], "light_scale": s, "light_diffuse": {"from": [[r, g,
        b], ...], "to": [...]}}``: the surface's materials tinted, the material-less surface geoms tinted, the factors.
    """
    m = _model(env)
    geoms = surface_geoms(env)
    tint = rng.uniform(*TINT, size=3)
    mats = sorted({int(m.geom_matid[g]) for g in geoms if int(m.geom_matid[g]) >= 0})
    for mat in mats:
        rgba = np.array(m.mat_rgba[mat], dtype=float)
        edit(env, "mat_rgba", mat, [*(rgba[:3] * tint), rgba[3]])
    bare = [g for g in geoms if int(m.geom_matid[g]) < 0]
    for g in bare:
        rgba = np.array(m.geom_rgba[g], dtype=float)
        edit(env, "geom_rgba", g, [*(rgba[:3] * tint), rgba[3]])
    scale = float(rng.uniform(*LIGHT_SCALE[int(rng.integers(2))]))
    before = np.array(m.light_diffuse, dtype=float)
    for i in range(m.nlight):
        edit(env, "light_diffuse", i, np.clip(before[i] * scale, 0.0, 1.0).tolist())
    return {"materials": [m.material(i).name for i in mats], "geoms": len(bare), "tint": tint.round(3).tolist(),
            "light_scale": round(scale, 3), "light_diffuse": {"from": before.round(3).tolist(),
                                                               "to": np.array(m.light_diffuse).round(3).tolist()}}


def move_aside(env: PerturbableEnv, obj: str, rng: np.random.Generator) -> dict[str, Any] | None:
    """``move_hidden``: move ``obj`` :data:`HIDE_SHIFT_M` (xy, random direction; height and orientation kept) to a
    spot where, after ``mj_forward``, it interpenetrates nothing (another object, a bin wall, the gripper).

    Returns:
        ``{"object", "from": [x, y, z], "to": [x, y, z], "shift_m"}`` (m, world), or None (put back where it was) when
        :data:`HIDE_TRIES` draws found no free spot.
    """
    joint = env.task_def.mujoco_object(env.rs_env, env.episode, obj).joints[0]
    qpos = np.asarray(env.rs_env.sim.data.get_joint_qpos(joint), dtype=float)  # the body origin, not a task's point
    before, quat = qpos[:3].copy(), qpos[3:7].copy()
    for _ in range(HIDE_TRIES):
        angle, dist = rng.uniform(-math.pi, math.pi), rng.uniform(*HIDE_SHIFT_M)
        to = before + dist * np.array([math.cos(angle), math.sin(angle), 0.0])
        env.teleport({obj: (to, quat)})
        if not env.interpenetrations():
            return {"object": obj, "from": before.round(4).tolist(), "to": to.round(4).tolist(),
                    "shift_m": round(float(dist), 4)}
    env.teleport({obj: (before, quat)})
    return None
