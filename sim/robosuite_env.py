"""robosuite -> tandem adapter: :class:`RobosuiteEnv` implements ``tandem.core.protocols.Env``.

What it adds on top of robosuite 1.5.2 (see /work/shared/FIELD-NOTES.md for the measured facts):

* **Fast offscreen rendering**: MSAA off (``model.vis.quality.offsamples = 0`` and re-created context buffers)
  and the table's planar reflection off (``mjRND_REFLECTION`` cleared). Images are rendered by the adapter
  *after* the final ``mj_forward`` of a step (so they never lag qpos) and flipped upright (origin top-left).
* **Seeding**: ``reset(seed)`` builds ``np.random.default_rng(seed)``, draws the episode from it
  (``task.sample_spec``), and gives the same generator to robosuite (``env.rng``: robot init noise) and to every
  placement sampler. Same seed -> identical initial state and instruction.
* **Exact save/restore**: ``mj_getState/mj_setState(mjSTATE_INTEGRATION)`` + ``mj_forward``, plus each gripper's
  Python-side ``current_action`` and the adapter's own counters.
* **Robustness**: NaN/inf actions raise :class:`NonFiniteActionError`; diverging physics raises
  :class:`SimUnstableError` (NaN, |qpos| or |qvel| beyond limits, or a MuJoCo bad-qacc/qpos/qvel warning, after
  which MuJoCo silently resets the data).

Proprio frame: the end-effector pose in ``Observation.proprio`` is the **grip site** frame
(``gripper0_right_grip_site``), i.e. the frame the OSC controller tracks (``controller.ref_name``). robosuite's
``robot0_eef_quat`` is the *hand body* frame, rotated ~45 deg in yaw w.r.t. the site; we do not use it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import mujoco
import numpy as np

from sim import cameras as camgeo
from sim.perturbations import ADDED_SUBGOALS, EDITABLE_MODEL_FIELDS, PerturbationSpec, Perturber
from sim.tasks.base import TaskDefinition, TaskEpisode
from sim.tasks.registry import make_task
from tandem.core.errors import (
    ConfigError,
    NonFiniteActionError,
    PlacementError,
    SimUnstableError,
    TandemError,
    UnknownNameError,
)
from tandem.core.grounding import Grounding, InstructionRefused
from tandem.core.lazy_images import LazyImages
from tandem.core.types import Observation, TaskSpec, check_depth

#: How each seed's instruction is worded without a user's (``RobosuiteEnv(instructions=...)``).
INSTRUCTION_STYLES: tuple[str, ...] = ("seed", "paraphrase")
#: User-facing camera name -> robosuite/MuJoCo camera name.
CAMERA_ALIASES: dict[str, str] = {"agentview": "agentview", "wrist": "robot0_eye_in_hand"}

#: Contact penetration (m) between a free object and anything else beyond which a placement is redrawn at reset.
PENETRATION_TOL = 0.002
#: Placement draws per reset before :class:`PlacementError`.
MAX_PLACEMENT_DRAWS = 10
#: Settling at reset: the arm holds still (zero OSC delta, gripper open) for at least ``SETTLE_MIN_STEPS`` and at
#: most ``SETTLE_MAX_STEPS`` control steps, until every free object moves slower than these speeds.
SETTLE_MIN_STEPS = 2
SETTLE_MAX_STEPS = 20
SETTLED_LINEAR_SPEED = 0.005  # m/s
SETTLED_ANGULAR_SPEED = 0.05  # rad/s
#: The hold action used while settling (OSC_ACTION_LAYOUT): no motion, gripper open.
HOLD_ACTION = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0])

#: |qpos| (m or rad) and |qvel| (m/s or rad/s) beyond which the simulation counts as diverged.
QPOS_LIMIT = 50.0
QVEL_LIMIT = 500.0

_BAD_WARNINGS = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL)
_STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION


def seed_placement(rs_env: Any, rng: np.random.Generator) -> None:
    """Make robosuite draw the episode from ``rng``: the env's own rng (robot init noise) and every placement
    sampler in the tree of each placement initializer the env holds: ``rs_env.placement_initializer``, and any other
    attribute named ``*placement*initializer`` (LIBERO's two conditional samplers). A ``SequentialCompositeSampler``
    hands each sub-sampler the rng it had at construction, so setting ``env.rng`` alone does not reach them
    (FIELD-NOTES, "Seeding"). The one place tandem reseeds robosuite."""
    rs_env.rng = rng
    stack = [v for k, v in vars(rs_env).items() if "placement" in k and k.endswith("initializer")]
    while stack:
        s = stack.pop()
        if s is None:
            continue
        s.rng = rng
        stack.extend(getattr(s, "samplers", {}).values())


class RobosuiteEnv:
    """A registered long-horizon task in robosuite (Panda arm, OSC_POSE delta controller), gymnasium-style.

    Args:
        task: registry name, e.g. ``"stack_three"``.
        cameras: user camera names; ``"agentview"`` and ``"wrist"`` (= robosuite ``robot0_eye_in_hand``),
            or any other camera of the MuJoCo model by its own name.
        image_size: ``(H, W)`` in px of every camera.
        control_freq: control steps per second (Hz); ``TaskSpec.control_dt = 1 / control_freq``.
        render: if False no images are rendered (``Observation.images == {}``) and no GL context is created.
        lazy_images: if True (default) ``Observation.images`` is a :class:`tandem.core.lazy_images.LazyImages`: a
            camera is rendered when a component first reads it, while the simulator still holds that state (the
            joint positions are unchanged), so a stack that reads no images at a step renders none. False: every
            camera is rendered at every step.
        perturbation: optional :class:`sim.perturbations.PerturbationSpec` applied inside ``step``.
        max_steps: episode budget in control steps; defaults to the task's ``max_steps``. Given, it is a fixed cap.
        perturbation_budget: when the perturbation fires and undoes finished work, the episode's budget
            (``spec.max_steps``, without ``max_steps`` given) grows by the task's ``steps_per_subgoal`` for each
            subgoal it adds (:data:`sim.perturbations.ADDED_SUBGOALS`), and ``info["perturbation"]["added_steps"]``
            says by how much: the budget stays what the task allows for the work asked. False: the task's budget.
        depth_cameras: cameras (among ``cameras``) whose depth images ``Observation.depth`` carries (an RGB-D
            camera: :meth:`render_depth`, lazy as the images are); empty: none.
        instruction: the user's instruction for every episode; None: each seed's own. The scene is still drawn per
            seed; the goals the env judges success by are the task's reference reading of these words
            (:meth:`TaskDefinition.read_instruction`), checked here, before the simulator is built.
        instructions: without ``instruction``, how each seed's instruction is worded: ``"seed"`` (the task's
            template, as drawn) or ``"paraphrase"`` (the seed's goals worded by the held-out part of the phrasing
            grammar, :func:`tandem.core.phrasing.phrase`, drawn from the seed; the judge reads them back).

    Attributes:
        spec: TaskSpec of the current episode (after ``reset``).
        action_dim: 7 (OSC_ACTION_LAYOUT).
        action_low, action_high: ``float32 (7,)``, read back from the live controller (``[-1, 1]``).
        task_def: the :class:`TaskDefinition`.
        episode: the current :class:`TaskEpisode`.
        rs_env: the raw robosuite environment (privileged use only).
        controller: the live robosuite OSC arm controller (``input_type``, ``output_max`` are read from it).
        controller_settings: JSON-safe dict of the live controller's settings (type, input_type,
            input_ref_frame, ref_site, output_max/min, input_max, goal_update_mode).
        seed: seed of the current episode.

    Raises:
        UnknownTaskError: unknown task name.
        UnknownNameError: unknown camera name.
        ConfigError: the controller is not a delta OSC_POSE controller, or bad sizes.
        InstructionRefused: the task's reference reading refuses ``instruction`` (the scene cannot satisfy it, or
            it names what the task lacks; one line naming the word or goal at fault).
    """

    def __init__(
        self,
        task: str,
        cameras: tuple[str, ...] | list[str] = ("agentview", "wrist"),
        image_size: tuple[int, int] = (128, 128),
        control_freq: int = 20,
        render: bool = True,
        perturbation: PerturbationSpec | None = None,
        max_steps: int | None = None,
        lazy_images: bool = True,
        perturbation_budget: bool = True,
        depth_cameras: tuple[str, ...] | list[str] = (),
        instruction: str | None = None,
        instructions: str = "seed",
    ) -> None:
        self.task_def: TaskDefinition = make_task(task)
        if instructions not in INSTRUCTION_STYLES:
            raise ConfigError(f"instructions must be one of {list(INSTRUCTION_STYLES)}, got {instructions!r}")
        self.instruction = instruction
        self.instructions = instructions
        self._reading: Grounding | None = None
        if instruction is not None:
            self._reading = self.task_def.read_instruction(str(instruction))
            if not self._reading.ok:
                raise InstructionRefused(f"instruction refused by the reference reading of task {task!r}: "
                                         f"{self._reading.refused}")
        if perturbation is not None:
            Perturber.validate(perturbation, self.task_def)  # raises UnknownNameError before the slow build
        self.task_name = task
        self.image_size = (int(image_size[0]), int(image_size[1]))
        if min(self.image_size) <= 0:
            raise ConfigError(f"image_size must be positive (H, W) in px, got {image_size}")
        if control_freq <= 0:
            raise ConfigError(f"control_freq must be > 0 Hz, got {control_freq}")
        self.render_enabled = bool(render)
        self.lazy_images = bool(lazy_images)
        self.camera_names: tuple[str, ...] = tuple(cameras) if render else ()
        self.depth_camera_names: tuple[str, ...] = tuple(depth_cameras) if render else ()
        unknown = [c for c in self.depth_camera_names if c not in self.camera_names]
        if unknown:
            raise ConfigError(f"depth_cameras {unknown} are not among the env's cameras {list(self.camera_names)}")
        self.control_freq = control_freq
        self._max_steps_override = max_steps
        self.perturbation_budget = bool(perturbation_budget)
        # The task picks robot (Panda) and controller (OSC_POSE delta); the adapter checks the live controller below.
        self.rs_env = self.task_def.make_robosuite_env(
            has_renderer=False,
            has_offscreen_renderer=self.render_enabled,
            use_camera_obs=False,
            renderer="mujoco",
            control_freq=control_freq,
            horizon=10**9,
            ignore_done=True,
            hard_reset=False,
        )
        try:
            self._check_built_env()
        except Exception:
            self.rs_env.close()  # do not leak the GL context / sim of a rejected config
            raise

        self.perturbation = perturbation
        self._perturber: Perturber | None = None
        m = self.rs_env.sim.model._model
        #: the model's own values of the fields perturbations may edit (restored at reset and restore_state)
        self._model_defaults = {f: np.array(getattr(m, f), copy=True) for f in EDITABLE_MODEL_FIELDS}
        self.episode: TaskEpisode | None = None
        self.spec: TaskSpec | None = None  # type: ignore[assignment]
        self.seed: int | None = None
        self._step = 0
        self._warn_base = np.zeros(len(_BAD_WARNINGS), dtype=np.int64)
        self._closed = False

    def _check_built_env(self) -> None:
        """Validate cameras and the live controller; set up action limits and fast rendering."""
        sim = self.rs_env.sim
        known = camgeo.camera_names_in_model(sim)
        self._rs_cameras: dict[str, str] = {}
        for name in self.camera_names:
            rs_name = CAMERA_ALIASES.get(name, name)
            if rs_name not in known:
                raise UnknownNameError("camera", name, sorted(set(CAMERA_ALIASES) | set(known)))
            self._rs_cameras[name] = rs_name

        robot = self.rs_env.robots[0]
        self.robot = robot
        self.arm = robot.arms[0]
        self.controller = robot.part_controllers[self.arm]
        if getattr(self.controller, "input_type", None) != "delta" or type(self.controller).__name__ != "OperationalSpaceController":
            raise ConfigError(
                f"RobosuiteEnv needs a delta OSC_POSE arm controller; got {type(self.controller).__name__} "
                f"input_type={getattr(self.controller, 'input_type', None)!r}"
            )
        low, high = self.rs_env.action_spec
        self.action_low = np.asarray(low, dtype=np.float32)
        self.action_high = np.asarray(high, dtype=np.float32)
        self.action_dim = int(self.action_low.shape[0])
        if self.action_dim != 7:
            raise ConfigError(f"expected a 7-D OSC_POSE + gripper action, robosuite reports {self.action_dim}")
        self.eef_site_id = int(robot.eef_site_id[self.arm])
        self._finger_qpos_idx = list(robot._ref_gripper_joint_pos_indexes[self.arm])
        c = self.controller
        #: live controller settings (robosuite 1.5 silently ignores unknown config keys: trust only these)
        self.controller_settings = {
            "type": type(c).__name__, "input_type": c.input_type, "input_ref_frame": c.input_ref_frame,
            "ref_site": c.ref_name, "output_max": np.asarray(c.output_max, float).tolist(),
            "output_min": np.asarray(c.output_min, float).tolist(), "input_max": np.asarray(c.input_max, float).tolist(),
            "goal_update_mode": getattr(c, "_goal_update_mode", None),
        }
        if self.render_enabled:
            self._setup_fast_rendering()

    # ------------------------------------------------------------------ rendering
    def _setup_fast_rendering(self) -> None:
        """MSAA off + reflections off in the offscreen context (FIELD-NOTES: most of the render cost)."""
        sim = self.rs_env.sim
        ctx = sim._render_context_offscreen
        if ctx is None:
            raise ConfigError("robosuite created no offscreen render context (has_offscreen_renderer=False?)")
        ctx.gl_ctx.make_current()
        sim.model._model.vis.quality.offsamples = 0
        ctx.con.free()
        ctx._set_mujoco_context_and_buffers()
        ctx.scn.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0

    def render_camera(self, camera: str, image_size: tuple[int, int] | None = None) -> np.ndarray:
        """Render one camera of the current state.

        Args:
            camera: a user camera name (``"agentview"``, ``"wrist"``) or a MuJoCo camera name.
            image_size: ``(H, W)`` px; defaults to the env's ``image_size``.

        Returns:
            ``uint8 (H, W, 3)`` RGB, upright, origin top-left.

        Raises:
            ConfigError: the env was built with ``render=False``.
            UnknownNameError: unknown camera.
        """
        return np.ascontiguousarray(self._render(camera, image_size, "render_camera()", depth=False)[::-1])

    def _render(self, camera: str, image_size: tuple[int, int] | None, caller: str, depth: bool) -> Any:
        """MuJoCo's render of ``camera`` (bottom-up): RGB, or ``(RGB, z-buffer)`` with ``depth``."""
        if not self.render_enabled:
            raise ConfigError(f"{caller} needs RobosuiteEnv(render=True)")
        rs_cam = self.rs_camera_name(camera)
        h, w = image_size or self.image_size
        # robosuite never re-binds its GL context before rendering: with several envs (or after another env was
        # closed) in one process it would render through the wrong/destroyed context. Bind ours every time.
        self.rs_env.sim._render_context_offscreen.gl_ctx.make_current()
        return self.rs_env.sim.render(width=w, height=h, camera_name=rs_cam, depth=depth)

    def render_depth(self, camera: str, image_size: tuple[int, int] | None = None) -> np.ndarray:
        """Render one camera's depth image of the current state, as an RGB-D camera measures it.

        Args:
            camera: a user camera name (``"agentview"``) or a MuJoCo camera name.
            image_size: ``(H, W)`` px; defaults to the env's ``image_size``.

        Returns:
            ``float32 (H, W)`` depth in m along the camera's optical axis (robosuite's
            ``camera_utils.get_real_depth_map`` of MuJoCo's z-buffer), upright, origin top-left, pixel-aligned with
            :meth:`render_camera`.

        Raises:
            ConfigError: the env was built with ``render=False``.
            UnknownNameError: unknown camera.
        """
        from robosuite.utils.camera_utils import get_real_depth_map

        _, z_buffer = self._render(camera, image_size, "render_depth()", depth=True)
        return np.ascontiguousarray(get_real_depth_map(self.rs_env.sim, z_buffer)[::-1], dtype=np.float32)

    def rs_camera_name(self, camera: str) -> str:
        """MuJoCo camera name behind a user camera name.

        Raises:
            UnknownNameError: not a camera of the model.
        """
        rs_cam = CAMERA_ALIASES.get(camera, camera)
        known = camgeo.camera_names_in_model(self.rs_env.sim)
        if rs_cam not in known:
            raise UnknownNameError("camera", camera, sorted(set(CAMERA_ALIASES) | set(known)))
        return rs_cam

    def camera_calibration(self, camera: str = "agentview", image_size: tuple[int, int] | None = None) -> dict[str, Any]:
        """The calibration of a fixed camera, as a robot's calibration routine would give it (not privileged state):
        ``{"camera", "image_size": [H, W], "intrinsics": K (3x3) px, "world_from_camera": (4x4)}``, the camera's pose
        in the world (m) in OpenCV axes (x right, y down, z forward), so that a world point ``p`` projects to
        ``K @ R.T @ (p - t)`` in the upright image (the format of ``planner_vlm.learned.camera.CameraCalibration``).

        Args:
            camera: user camera name (``"agentview"``). image_size: ``(H, W)`` px (default: the env's).

        Raises:
            UnknownNameError: not a camera of the model.
        """
        rs_cam = self.rs_camera_name(camera)
        size = tuple(int(v) for v in (image_size or self.image_size))
        return {"camera": camera, "image_size": list(size),
                "intrinsics": camgeo.intrinsics(self.rs_env.sim, rs_cam, size).tolist(),
                "world_from_camera": camgeo.extrinsics(self.rs_env.sim, rs_cam).tolist()}

    def world_to_pixel(self, points: np.ndarray, camera: str = "agentview") -> np.ndarray:
        """Project world points (m) ``(N, 3)`` into ``camera`` at the env's ``image_size``.

        Returns:
            ``float32 (N, 2)`` ``(x, y)`` px, x right, y down, origin top-left of the upright image; not clipped.

        Raises:
            UnknownNameError: unknown camera. ValueError: bad shape.
        """
        return camgeo.world_to_pixel(self.rs_env.sim, self.rs_camera_name(camera), self.image_size, points)

    # ------------------------------------------------------------------ episode
    def interpenetrations(self) -> list[tuple[str, str, float]]:
        """Contacts that penetrate deeper than :data:`PENETRATION_TOL` and involve a free object.

        robosuite's placement samplers test only horizontal radii, so two objects can spawn inside each other
        (pick_place_bins seed 1: the cereal box and the can by 5.8 mm before this check).

        Returns:
            ``[(root body 1, root body 2, depth m > 0)]``, deepest first; empty when the scene is valid.
        """
        m, d = self.rs_env.sim.model._model, self.rs_env.sim.data._data
        free_roots = {int(m.body_rootid[m.jnt_bodyid[j]]) for j in range(m.njnt)
                      if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE}
        found: dict[tuple[str, str], float] = {}
        for i in range(d.ncon):
            c = d.contact[i]
            if c.dist >= -PENETRATION_TOL:
                continue
            r1, r2 = int(m.body_rootid[m.geom_bodyid[c.geom1]]), int(m.body_rootid[m.geom_bodyid[c.geom2]])
            if r1 in free_roots or r2 in free_roots:
                key = tuple(sorted((m.body(r1).name, m.body(r2).name)))
                found[key] = max(found.get(key, 0.0), -float(c.dist))
        return sorted(((a, b, depth) for (a, b), depth in found.items()), key=lambda x: -x[2])

    def _free_object_speeds(self) -> tuple[float, float]:
        """Largest linear (m/s) and angular (rad/s) speed over the model's free-joint objects."""
        m, d = self.rs_env.sim.model._model, self.rs_env.sim.data._data
        lin, ang = 0.0, 0.0
        for j in range(m.njnt):
            if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                a = int(m.jnt_dofadr[j])
                lin = max(lin, float(np.linalg.norm(d.qvel[a:a + 3])))
                ang = max(ang, float(np.linalg.norm(d.qvel[a + 3:a + 6])))
        return lin, ang

    def _settle(self) -> int:
        """Let the scene come to rest before the first observation: robosuite drops objects 5-10 mm above their
        support. The arm holds still (:data:`HOLD_ACTION`) for :data:`SETTLE_MIN_STEPS` to :data:`SETTLE_MAX_STEPS`
        control steps, until every free object is slower than :data:`SETTLED_LINEAR_SPEED` and
        :data:`SETTLED_ANGULAR_SPEED`. Returns the control steps taken (not counted in ``step_count``)."""
        for k in range(1, SETTLE_MAX_STEPS + 1):
            self.rs_env.step(HOLD_ACTION)
            self.forward()
            if k >= SETTLE_MIN_STEPS:
                lin, ang = self._free_object_speeds()
                if lin < SETTLED_LINEAR_SPEED and ang < SETTLED_ANGULAR_SPEED:
                    return k
        return SETTLE_MAX_STEPS

    def reset(self, seed: int | None = None) -> tuple[Observation, dict[str, Any]]:
        """Start an episode drawn from ``seed`` (a fresh random seed if None).

        Returns:
            ``(observation, info)`` with ``info = {"seed", "instruction", "goals", "success", "predicates"}``.

        Raises:
            PlacementError: objects could not be placed for this seed (message names task and seed).
        """
        from robosuite.utils.errors import RandomizationError

        if self._closed:
            raise TandemError("RobosuiteEnv.reset() after close()")
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**31))
        self.seed = int(seed)
        rng = np.random.default_rng(self.seed)
        self.episode = self.task_def.sample_spec(rng)
        reading = self._reading if self._reading is not None else self._paraphrased(self.episode)
        if reading is not None:
            self.episode = self.task_def.episode_for_reading(self.episode, reading)
        max_steps = self._max_steps_override or self.episode.spec.max_steps or self.task_def.max_steps
        self.spec = dataclasses.replace(
            self.episode.spec,
            max_steps=int(max_steps),
            cameras=self.camera_names,
            image_size=self.image_size,
            control_dt=1.0 / self.control_freq,
        )
        self.episode.spec = self.spec
        self._restore_model_defaults()  # undo the previous episode's perturbation (materials, lights, collisions)
        seed_placement(self.rs_env, rng)
        self.task_def.configure_episode(self.rs_env, self.episode)
        overlaps: list[tuple[str, str, float]] = []
        for _ in range(MAX_PLACEMENT_DRAWS):
            try:
                self.rs_env.reset()
            except RandomizationError as e:
                raise PlacementError(f"task {self.task_name!r}: object placement failed for seed {self.seed}: {e}") from e
            fixed = self.task_def.after_reset(self.rs_env, self.episode, self.seed)
            self.forward()
            overlaps = [] if fixed else self.interpenetrations()
            if not overlaps:
                break
        else:
            raise PlacementError(f"task {self.task_name!r} seed {self.seed}: objects interpenetrate after "
                                 f"{MAX_PLACEMENT_DRAWS} placement draws: {overlaps}")
        self._settle()
        self._step = 0
        d = self.rs_env.sim.data._data
        self._warn_base = np.array([d.warning[w].number for w in _BAD_WARNINGS], dtype=np.int64)
        self._perturber = (
            Perturber(self.perturbation, self.task_def, np.random.default_rng([self.seed, 7]))
            if self.perturbation is not None else None
        )
        preds = self.task_def.predicates(self.rs_env, self.episode)
        obs = self._observe(preds)
        info = {
            "seed": self.seed,
            "instruction": self.spec.instruction,
            "goals": list(self.spec.goals),
            "success": obs.privileged["success"],
            "predicates": preds,
        }
        return obs, info

    def set_instruction(self, instruction: str | None) -> Grounding | None:
        """Judge episodes from the next :meth:`reset` on by the task's reference reading of ``instruction`` (as the
        ``instruction`` argument does); None: each seed's own again. Returns the reading (None for None).

        Raises:
            InstructionRefused: the reference reading refuses ``instruction`` (one line; the env is unchanged).
        """
        reading = None
        if instruction is not None:
            reading = self.task_def.read_instruction(str(instruction))
            if not reading.ok:
                raise InstructionRefused(f"instruction refused by task {self.task_name!r}'s reference reading: "
                                         f"{reading.refused}")
        self.instruction, self._reading = instruction, reading
        return reading

    def _paraphrased(self, drawn: TaskEpisode) -> Grounding | None:
        """With ``instructions="paraphrase"``: the seed's goals worded by the phrasing grammar's held-out part (its own
        random stream, so the scene stays the seed's), as the judge reads them; None otherwise.

        Raises:
            ConfigError: the judge reads the paraphrase as other goals than the seed's (a grammar fault, named).
        """
        if self.instructions != "paraphrase":
            return None
        from tandem.core.phrasing import phrase
        from tandem.core.vocabulary import goals_equal

        vocab = self.task_def.vocabulary
        text, ordered = phrase(vocab, tuple(drawn.spec.goals), np.random.default_rng([self.seed, 61]), "heldout")
        reading = self.task_def.read_instruction(text)
        if not reading.ok or not goals_equal(vocab, reading.goals, drawn.spec.goals, ordered):
            raise ConfigError(f"task {self.task_name!r} seed {self.seed}: the reference reading of the paraphrase "
                              f"{text!r} is {reading.refused or list(reading.goals)}, not the seed's goals "
                              f"{list(drawn.spec.goals)}")
        return reading

    def _require_episode(self) -> None:
        if self.episode is None:
            raise TandemError("RobosuiteEnv: call reset() before step()/save_state()")

    def step(self, action: np.ndarray) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Apply one action ``float (7,)`` (OSC_ACTION_LAYOUT); values are clipped to ``[action_low, action_high]``.

        Returns:
            ``(obs, reward, terminated, truncated, info)``: reward = 1.0 on task success else 0.0;
            terminated = task success; truncated = ``step >= spec.max_steps``;
            ``info = {"success", "predicates", "step"}`` plus ``"perturbation": {"name", "step", "detail"}``
            on the step a perturbation fires, with ``"added_steps"``: the control steps its undone work added to
            ``spec.max_steps`` (``perturbation_budget``).

        Raises:
            NonFiniteActionError: NaN/inf in ``action``.
            ConfigError: ``action`` is not shape ``(7,)``.
            SimUnstableError: the physics diverged during this step.
        """
        self._require_episode()
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (self.action_dim,):
            raise ConfigError(f"action must have shape ({self.action_dim},), got {np.shape(action)}")
        if not np.all(np.isfinite(a)):
            raise NonFiniteActionError(f"action contains NaN/inf: {a.tolist()}")
        a = np.clip(a, self.action_low, self.action_high)
        if self._perturber is not None:
            a = self._perturber.before_step(self, a)
        self.rs_env.step(a)
        self.forward()
        self._check_stable()
        self._step += 1
        preds = self.task_def.predicates(self.rs_env, self.episode)
        fired = self._perturber.after_step(self, preds) if self._perturber is not None else None
        if fired is not None:  # objects moved: re-evaluate
            preds = self.task_def.predicates(self.rs_env, self.episode)
            fired = {**fired, "added_steps": self._extend_budget(fired["name"])}
        obs = self._observe(preds)
        success = bool(obs.privileged["success"])
        truncated = self._step >= self.spec.max_steps
        info: dict[str, Any] = {"success": success, "predicates": preds, "step": self._step}
        if fired is not None:
            info["perturbation"] = fired
        return obs, float(success), success, truncated, info

    def _extend_budget(self, perturbation: str) -> int:
        """Grow ``spec.max_steps`` by the work ``perturbation`` undid (``perturbation_budget``); returns the control
        steps added (0: nothing undone, the option off, or a fixed ``max_steps`` cap)."""
        if not self.perturbation_budget or self._max_steps_override is not None:
            return 0
        added = ADDED_SUBGOALS[perturbation] * self.task_def.steps_per_subgoal
        if added:
            self._set_max_steps(self.spec.max_steps + added)
        return added

    def _set_max_steps(self, max_steps: int) -> None:
        """Replace the episode's ``spec.max_steps`` (control steps), in the env's spec and in its episode's."""
        self.spec = dataclasses.replace(self.spec, max_steps=int(max_steps))
        self.episode.spec = self.spec  # type: ignore[union-attr]

    def forward(self) -> None:
        """``mj_forward``: recompute derived quantities (poses, contacts) after qpos was written."""
        mujoco.mj_forward(self.rs_env.sim.model._model, self.rs_env.sim.data._data)

    def _check_stable(self) -> None:
        d = self.rs_env.sim.data._data
        warn = np.array([d.warning[w].number for w in _BAD_WARNINGS], dtype=np.int64)
        problems = []
        if np.any(warn > self._warn_base):
            names = [w.name for w, n, b in zip(_BAD_WARNINGS, warn, self._warn_base) if n > b]
            problems.append(f"MuJoCo warnings {names} (MuJoCo reset the state)")
        self._warn_base = warn
        qpos, qvel = d.qpos, d.qvel
        if not (np.all(np.isfinite(qpos)) and np.all(np.isfinite(qvel))):
            problems.append("NaN/inf in qpos/qvel")
        else:
            if np.max(np.abs(qpos)) > QPOS_LIMIT:
                i = int(np.argmax(np.abs(qpos)))
                problems.append(f"|qpos[{i}]| = {abs(qpos[i]):.3g} > {QPOS_LIMIT}")
            if np.max(np.abs(qvel)) > QVEL_LIMIT:
                i = int(np.argmax(np.abs(qvel)))
                problems.append(f"|qvel[{i}]| = {abs(qvel[i]):.3g} > {QVEL_LIMIT}")
        if problems:
            raise SimUnstableError(
                f"task {self.task_name!r} seed {self.seed} step {self._step + 1}: simulation unstable: "
                + "; ".join(problems)
            )

    # ------------------------------------------------------------------ observation
    def eef_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Grip-site pose: ``(pos float64 (3,) m world, rotation matrix float64 (3, 3) site->world)``."""
        d = self.rs_env.sim.data._data
        return d.site_xpos[self.eef_site_id].copy(), d.site_xmat[self.eef_site_id].reshape(3, 3).copy()

    def wrist_angle(self) -> float:
        """Angle (rad) of the arm's last joint (Panda joint 7), for the expert's joint-limit-aware yaw choice."""
        return float(self._arm_qpos()[-1])

    def joint_positions(self) -> np.ndarray:
        """``float32 (7,)`` the arm's joint angles (rad, Panda joint 1..7; robosuite's ``robot0_joint_pos``), as a
        real arm reports them (:attr:`tandem.core.types.Observation.joints`)."""
        return self._arm_qpos().astype(np.float32)

    def _arm_qpos(self) -> np.ndarray:
        """``float64 (7,)`` the arm joints' qpos (rad), copied."""
        return self.rs_env.sim.data._data.qpos[self.robot._ref_joint_pos_indexes]

    def gripper_opening(self) -> float:
        """Distance between the two Panda fingers (m): ``q_finger1 - q_finger2``."""
        q = self.rs_env.sim.data._data.qpos
        return float(q[self._finger_qpos_idx[0]] - q[self._finger_qpos_idx[1]])

    def proprio(self) -> np.ndarray:
        """``float32 (8,)`` = grip-site position (m, world), grip-site quaternion wxyz, gripper opening (m)."""
        pos, mat = self.eef_pose()
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, mat.reshape(-1))
        if quat[0] < 0:  # canonical sign: w >= 0
            quat = -quat
        return np.concatenate([pos, quat, [self.gripper_opening()]]).astype(np.float32)

    def _observe(self, preds: dict[str, bool] | None = None) -> Observation:
        if preds is None:
            preds = self.task_def.predicates(self.rs_env, self.episode)
        if self.lazy_images and self.camera_names:
            qpos = self.rs_env.sim.data.qpos.copy()
            images: dict[str, np.ndarray] | LazyImages = LazyImages(
                self.camera_names, self.render_camera, lambda: self._holds_state(qpos), step=self._step)
        else:
            images = {name: self.render_camera(name) for name in self.camera_names}
        depth: dict[str, np.ndarray] | LazyImages | None = None
        if self.depth_camera_names:
            if self.lazy_images:
                qpos = self.rs_env.sim.data.qpos.copy()
                depth = LazyImages(self.depth_camera_names, self.render_depth, lambda: self._holds_state(qpos),
                                   step=self._step, check=check_depth)
            else:
                depth = {name: self.render_depth(name) for name in self.depth_camera_names}
        success = all(preds.get(g, False) for g in self.spec.goals)
        privileged = {
            "task": self.task_name,
            "objects": self.task_def.object_poses(self.rs_env, self.episode),
            "predicates": dict(preds),
            "success": bool(success),
            "goals": list(self.spec.goals),
        }
        return Observation(images=images, proprio=self.proprio(), t=self.t, privileged=privileged, step=self._step,
                           joints=self.joint_positions(), depth=depth)

    def _holds_state(self, qpos: np.ndarray) -> bool:
        """Whether the simulator is open and still at the joint positions ``qpos`` (a lazy image's state)."""
        sim = None if self._closed else getattr(self.rs_env, "sim", None)
        return sim is not None and np.array_equal(sim.data.qpos, qpos)

    def observe(self) -> Observation:
        """Observation of the current state without stepping (e.g. after ``restore_state``/``teleport``)."""
        self._require_episode()
        return self._observe()

    @property
    def t(self) -> float:
        """Episode time in s (``step * control_dt``)."""
        return self._step / self.control_freq

    @property
    def step_count(self) -> int:
        """Control steps since reset."""
        return self._step

    # ------------------------------------------------------------------ state
    def save_state(self) -> dict[str, Any]:
        """Exact snapshot: MuJoCo integration state, gripper ``current_action``, adapter counters, perturbation state.

        Returns an opaque dict for :meth:`restore_state` (numpy arrays, copied).
        """
        self._require_episode()
        m, d = self.rs_env.sim.model._model, self.rs_env.sim.data._data
        state = np.empty(mujoco.mj_stateSize(m, _STATE_SPEC))
        mujoco.mj_getState(m, d, state, _STATE_SPEC)
        return {
            "mj_state": state,
            "gripper_actions": {arm: np.array(g.current_action, copy=True) for arm, g in self.robot.gripper.items()},
            "step": self._step,
            "rs_timestep": self.rs_env.timestep,
            "rs_cur_time": self.rs_env.cur_time,
            "warn_base": self._warn_base.copy(),
            "perturber": None if self._perturber is None else self._perturber.get_state(),
            "seed": self.seed,
            "max_steps": self.spec.max_steps,  # grown by a perturbation that fired (perturbation_budget)
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`save_state` snapshot of the same episode bit-exactly (then ``mj_forward``).

        Raises:
            ConfigError: the snapshot is malformed or has the wrong size for this model.
        """
        self._require_episode()
        m, d = self.rs_env.sim.model._model, self.rs_env.sim.data._data
        try:
            mj = np.asarray(state["mj_state"], dtype=np.float64)
            if mj.shape != (mujoco.mj_stateSize(m, _STATE_SPEC),):
                raise ConfigError(f"restore_state: state size {mj.shape} does not match this model")
            mujoco.mj_setState(m, d, mj, _STATE_SPEC)
            for arm, act in state["gripper_actions"].items():
                self.robot.gripper[arm].current_action = np.array(act, copy=True)
            self._step = int(state["step"])
            self.rs_env.timestep = state["rs_timestep"]
            self.rs_env.cur_time = state["rs_cur_time"]
            self._warn_base = np.array(state["warn_base"], copy=True)
        except KeyError as e:
            raise ConfigError(f"restore_state: snapshot lacks key {e}") from e
        if self._perturber is not None and state.get("perturber") is not None:
            self._perturber.set_state(state["perturber"])
        self._restore_model_defaults()
        for field, index, value in self._perturber.model_edits if self._perturber is not None else ():
            self.set_model_value(field, index, value)
        if state.get("max_steps") is not None and int(state["max_steps"]) != self.spec.max_steps:
            self._set_max_steps(int(state["max_steps"]))
        self.forward()

    def set_model_value(self, field: str, index: int, value: Any) -> None:
        """Write row ``index`` of MuJoCo model array ``field`` (a scalar or a list; one of
        :data:`sim.perturbations.EDITABLE_MODEL_FIELDS`: material and geom colours, light diffuse colours, geom
        collision masks). Undone at the next :meth:`reset`.

        Raises:
            ConfigError: ``field`` is not editable.
        """
        if field not in self._model_defaults:
            raise ConfigError(f"set_model_value: {field!r} is not one of {list(EDITABLE_MODEL_FIELDS)}")
        array = getattr(self.rs_env.sim.model._model, field)
        array[int(index)] = np.asarray(value, dtype=array.dtype).reshape(np.shape(array[int(index)]))

    def _restore_model_defaults(self) -> None:
        """Write back the model's own values of :data:`sim.perturbations.EDITABLE_MODEL_FIELDS`."""
        m = self.rs_env.sim.model._model
        for field, default in self._model_defaults.items():
            getattr(m, field)[...] = default

    def teleport(self, poses: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """Move objects to poses instantly (free-joint qpos = pos + wxyz quat, qvel = 0), then ``mj_forward``.

        Args:
            poses: object name -> ``(pos (3,) m world, quat (4,) wxyz)``.

        Raises:
            UnknownObjectError: a name that is not an object of the episode.
        """
        self._require_episode()
        sim = self.rs_env.sim
        for name, (pos, quat) in poses.items():
            obj = self.task_def.mujoco_object(self.rs_env, self.episode, name)
            q = np.asarray(quat, dtype=np.float64)
            q = q / max(np.linalg.norm(q), 1e-12)
            sim.data.set_joint_qpos(obj.joints[0], np.concatenate([np.asarray(pos, dtype=np.float64), q]))
            sim.data.set_joint_qvel(obj.joints[0], np.zeros(6))
        self.forward()

    def close(self) -> None:
        """Release the robosuite env and its GL context. Idempotent."""
        if not self._closed:
            self._closed = True
            with contextlib.suppress(Exception):  # closing must never raise
                self.rs_env.close()

    def __enter__(self) -> RobosuiteEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

