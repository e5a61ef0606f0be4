"""The ONE builder registry: config names -> components, so that every entry point builds stacks the same way.

``tandem-demo``, ``tandem-collect``, ``tandem-eval`` (:func:`build_stack`), ``tandem-bridge``
(:func:`build_bridge_stack`), ``tandem-sim-robot`` (:func:`build_sim_env`) and ``tandem-train``'s in-sim evaluation
(:func:`build_agent`) all build through here. Each component kind has a :class:`Registry` (:data:`PLANNERS`,
:data:`VERIFIERS`, :data:`EXECUTORS`, :data:`GOAL_PRODUCERS`) mapping a name to its config schema
(:mod:`tandem.runtime.config`) and its builder ``(spec, ctx) -> component``. Heavy components are imported lazily
inside their builders, so that the scripted demo never imports torch.

How to add a variant (e.g. ``planner=learned``): its schema in :mod:`tandem.runtime.config`, then here::

    @PLANNERS.register("learned")
    def _learned_planner(spec: LearnedPlannerConfig, ctx: BuildContext) -> Planner:
        from planner_vlm.learned_planner import LearnedPlanner

        return LearnedPlanner.from_checkpoint(spec.checkpoint)

and ``configs/planner/learned.yaml`` (defaults: ``learned_schema``). The component must implement its protocol
(:mod:`tandem.core.protocols`), ``is_oracle`` included; the agent refuses one that does not.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tandem.core.errors import BuildError, CheckpointError, ConfigError, TandemError
from tandem.core.interrupts import reraise_interrupt
from tandem.core.protocols import Env, Executor, GoalProducer, Planner, TaskMemory, Verifier
from tandem.runtime.agent import HierarchicalAgent
from tandem.runtime.config import (
    BridgeRunConfig,
    CheckpointExecutorConfig,
    ComponentConfig,
    EnvConfig,
    InstructionPlannerConfig,
    LearnedPerceptionConfig,
    LearnedPlannerConfig,
    LearnedVerifierConfig,
    LeRobotExecutorConfig,
    MemoryConfig,
    NoGoalsConfig,
    OracleGoalsConfig,
    OraclePlannerConfig,
    OracleRemoteExecutorConfig,
    OracleTaskVerifierConfig,
    OracleVerifierConfig,
    PerturbConfig,
    ScriptedExecutorConfig,
    StackConfig,
    TandemCheckpointWiring,
    TaskConfig,
    VLMPlannerConfig,
    VLMVerifierConfig,
    component_names,
    load,
    schema_of,
    unknown_component,
)

logger = logging.getLogger(__name__)

#: The planner whose single whole-task subgoal matches executors trained with ``conditioning_source="instruction"``.
FLAT_PLANNER = "instruction"
#: Trained executor checkpoints committed with the project: ``<task>_diffusion`` (subgoal-conditioned) and
#: ``<task>_flat`` (the flat baseline); see checkpoints/README.md for the commands that made them.
SHIPPED_CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"
#: Sub-folder of :data:`SHIPPED_CHECKPOINTS` holding the image executors (Diffusion Policy's U-Net over camera
#: images); the track executors sit at the top level and are looked up first.
SHIPPED_IMAGE_SUBDIR = "image"


@dataclass(frozen=True)
class BuildContext:
    """What a builder may use besides its own config section.

    Attributes:
        env: the env the stack drives (a simulator or a robot).
        simulated: whether ``env`` is the simulator (privileged builders such as ``executor=scripted`` and
            ``goals=oracle`` need the live simulator).
        task: the task's registry name (``stack_three``) in simulation, the robot config's task name on a robot.
        planner: the planner's name (an executor checks that its checkpoint's conditioning matches it).
        transport: the bridge's transport on a robot (``executor.name=oracle_remote``), else None.
    """

    env: Env
    simulated: bool
    task: str
    planner: str
    transport: Any = None

    def require_simulator(self, what: str) -> Any:
        """``env``, which must be the simulator for ``what`` (e.g. ``"executor=scripted"``).

        Raises:
            ConfigError: on a robot (names what to use instead).
        """
        if not self.simulated:
            raise ConfigError(f"{what} reads the live simulator and cannot run on a robot; choose a component "
                              "that does not need it")
        return self.env


class Registry[T]:
    """Name -> builder for one kind of component; each name's config schema is the one
    :func:`tandem.runtime.config.component_schema` registered for it.

    Args:
        kind: the config section, e.g. ``"planner"`` (one of :data:`tandem.runtime.config.COMPONENT_KINDS`).
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._builders: dict[str, Callable[[Any, BuildContext], T]] = {}

    def register(self, name: str) -> Callable[[Callable[[Any, BuildContext], T]], Callable[[Any, BuildContext], T]]:
        """Decorator: register ``builder(spec, ctx) -> component`` for ``<kind>=<name>``.

        Raises:
            ValueError: ``name`` has no schema, or already has a builder.
        """
        if name in self._builders or name not in component_names(self.kind):
            raise ValueError(f"{self.kind}={name!r} needs one schema (tandem.runtime.config) and one builder")

        def deco(builder: Callable[[Any, BuildContext], T]) -> Callable[[Any, BuildContext], T]:
            self._builders[name] = builder
            return builder

        return deco

    def names(self) -> tuple[str, ...]:
        """The names this registry builds, sorted."""
        return tuple(sorted(self._builders))

    def build(self, spec: Any, ctx: BuildContext) -> T:
        """The component for ``spec``: a loaded schema instance, or a mapping with a ``name`` (loaded here).

        Raises:
            UnknownNameError, ConfigError: an unknown name or a bad option (named); the tandem errors the builder
                raises (CheckpointError, ...). BuildError: any other error of the builder (a library failing to load
                a corrupt file), chained, naming the component.
            KeyboardInterrupt: an interrupt while building, also one hidden in another exception.
        """
        if not isinstance(spec, ComponentConfig):
            name = spec.get("name") if isinstance(spec, dict) else None
            spec = load(schema_of(self.kind, str(name)), spec, self.kind)
        if spec.name not in self._builders:
            raise unknown_component(self.kind, spec.name)
        try:
            return self._builders[spec.name](spec, ctx)
        except TandemError:
            raise
        except Exception as e:  # noqa: BLE001 - a broken component is bad input: one named error, not a traceback
            reraise_interrupt(e)
            raise BuildError(f"{self.kind}={spec.name} cannot be built: {type(e).__name__}: {e}") from e


PLANNERS: Registry[Planner] = Registry("planner")
VERIFIERS: Registry[Verifier] = Registry("verifier")
EXECUTORS: Registry[Executor] = Registry("executor")
GOAL_PRODUCERS: Registry[GoalProducer | None] = Registry("goals")
#: config section -> its registry.
REGISTRIES: dict[str, Registry[Any]] = {"planner": PLANNERS, "verifier": VERIFIERS, "executor": EXECUTORS,
                                        "goals": GOAL_PRODUCERS}


# ------------------------------------------------------------------------------------------- planners
@PLANNERS.register("oracle")
def _oracle_planner(spec: OraclePlannerConfig, ctx: BuildContext) -> Planner:
    """Symbolic planner over the simulator's predicates (privileged)."""
    from planner_vlm.oracle_planner import OraclePlanner

    return OraclePlanner()


@PLANNERS.register("instruction")
def _instruction_planner(spec: InstructionPlannerConfig, ctx: BuildContext) -> Planner:
    """No decomposition: the whole instruction as one subgoal (flat policies)."""
    from planner_vlm.instruction_planner import InstructionPlanner

    return InstructionPlanner()


@PLANNERS.register("vlm")
def _vlm_planner(spec: VLMPlannerConfig, ctx: BuildContext) -> Planner:
    """A VLM behind an OpenAI-compatible server or a local transformers model (ConfigError for a bad backend); with
    ``geometry=learned``, the learned state and trace models give its subgoals their 3-D traces
    (:func:`_learned_geometry`)."""
    from planner_vlm.factory import make_vlm_planner

    grounder = None
    if spec.check_grounding:
        path = (resolve_perception_checkpoint(spec.grounder_checkpoint, ctx.task, "grounder")
                if spec.grounder_checkpoint or (SHIPPED_CHECKPOINTS / "grounder" / ctx.task / "config.json").is_file()
                else None)
        if path is not None:
            from planner_vlm.learned.grounder import InstructionGrounder

            grounder = InstructionGrounder.load(path)
    geometry = (_learned_geometry(spec, ctx) if spec.learned_geometry
                else _pointing_geometry(spec, ctx) if spec.pointing else None)
    return make_vlm_planner(asdict(spec), grounder=grounder, geometry=geometry)


def _pointing_geometry(spec: VLMPlannerConfig, ctx: BuildContext) -> Any:
    """The pointing mode's :class:`~planner_vlm.pointing.PointingGeometry`: the task's skill waypoint geometry
    (:func:`sim.tasks.registry.point_geometry`, the expert's) and ``spec.trace_camera``'s calibration
    (``spec.camera_calibration``, else the simulator camera's).

    Raises:
        ConfigError: a task without a pointing geometry, or no calibration on a robot.
    """
    from planner_vlm.learned.camera import CameraCalibration
    from planner_vlm.pointing import PointingGeometry
    from sim.tasks.registry import point_geometry

    if spec.camera_calibration is not None:
        raw: dict[str, Any] = {"camera": spec.trace_camera, **dict(spec.camera_calibration)}
    elif ctx.simulated:
        raw = ctx.env.camera_calibration(spec.trace_camera)  # type: ignore[attr-defined]  # a sim env's method
    else:
        raise ConfigError("planner.geometry=pointing on a robot needs planner.camera_calibration (the pointing "
                          "camera's intrinsics, world_from_camera and image_size)")
    return PointingGeometry(point_geometry(ctx.task), CameraCalibration.from_json(raw), camera=spec.trace_camera)


# ------------------------------------------------------------------------------------------- learned perception
#: The commands that train the learned perception models, named by errors about missing checkpoints.
PERCEPTION_TRAIN_COMMANDS: dict[str, str] = {
    "state": "tandem-train-state dataset.root=<an image dataset of the task, e.g. datasets/{task}_84>",
    "trace": "tandem-train-trace dataset.root=<a dataset of the task, e.g. datasets/{task}_lowdim>",
    "presence": "python scripts/train_presence.py --train <scenes.npz> --val <scenes.npz> --out <dir>",
    "grounder": "tandem-train-grounder task={task} out=checkpoints/grounder/{task}",
}


def resolve_perception_checkpoint(checkpoint: str | None, task: str, kind: str) -> Path:
    """The checkpoint directory of a learned perception model: ``checkpoint`` when set (a relative path that does not
    exist from the working directory is also tried from the project root), else the shipped
    ``checkpoints/<kind>/<task>`` (``kind``: ``"state"`` or ``"trace"``), as ``checkpoints/image/`` holds the image
    executors.

    Raises:
        ConfigError: none given and none shipped for the task (names the command that trains one).
    """
    if checkpoint:
        path = Path(str(checkpoint))
        if not path.is_absolute() and not path.exists() and (SHIPPED_CHECKPOINTS.parent / path).exists():
            path = SHIPPED_CHECKPOINTS.parent / path
        return path
    path = SHIPPED_CHECKPOINTS / kind / task
    if not (path / "config.json").is_file():
        raise ConfigError(f"no shipped {kind} model checkpoint for task {task!r} (checkpoints/{kind}/{task}); train one "
                          f"with `{PERCEPTION_TRAIN_COMMANDS[kind].format(task=task)}` and pass its checkpoint "
                          f"directory as {kind}_checkpoint=<dir>/checkpoint")
    return path


def presence_checkpoint(spec: Any, task: str) -> Path | None:
    """The presence model checkpoint a learned planner config ``spec`` uses: its ``presence_checkpoint`` (a relative
    path is also tried from the project root), else the shipped ``checkpoints/presence/<task>`` where one exists;
    None where ``use_presence`` or ``use_absent_thresholds`` is off, or none is given or shipped.

    Raises:
        ConfigError: a ``presence_checkpoint`` that is not a directory, or one given while ``use_presence`` or
            ``use_absent_thresholds`` is off (it would not be used; named).
    """
    if not isinstance(spec, LearnedPlannerConfig):
        return None
    if not spec.use_presence or not spec.use_absent_thresholds:
        if spec.presence_checkpoint:
            off = "use_presence" if not spec.use_presence else "use_absent_thresholds"
            raise ConfigError(f"planner.presence_checkpoint is given but planner.{off} is false, so it would not be "
                              f"used; drop one of the two")
        return None
    if spec.presence_checkpoint:
        path = resolve_perception_checkpoint(spec.presence_checkpoint, task, "presence")
        if not path.is_dir():
            raise ConfigError(f"planner.presence_checkpoint {spec.presence_checkpoint!r} is not a directory; train "
                              f"one with scripts/train_presence.py or leave it null")
        return path
    shipped = SHIPPED_CHECKPOINTS / "presence" / task
    return shipped if (shipped / "config.json").is_file() else None


def presence_cameras(cfg: StackConfig) -> tuple[str, ...]:
    """The cameras the presence model of ``cfg``'s learned planner reads, from its ``config.json`` without loading
    it; empty when there is none or it cannot be read (loading it later raises the real error).

    Raises:
        ConfigError: the presence model names other objects than the planner's state model, i.e. it was trained
            for another task (checked here, before the env is built for its cameras).
    """
    try:
        path = presence_checkpoint(cfg.planner, cfg.task.name)
        raw = json.loads((path / "config.json").read_text()) if path is not None else None
    except (ConfigError, OSError, ValueError):
        return ()
    model = raw.get("model") if isinstance(raw, dict) else None
    if path is None or not isinstance(model, dict):
        return ()
    cameras, objects = model.get("cameras", []), model.get("objects")
    try:  # only a learned planner has a presence model (presence_checkpoint is None for the others)
        state = resolve_perception_checkpoint(cfg.planner.state_checkpoint, cfg.task.name, "state")
        state_objects = json.loads((state / "config.json").read_text())["model"]["objects"]
    except (ConfigError, OSError, ValueError, KeyError, TypeError):
        state_objects = None  # loading the state model later raises the real error
    if isinstance(objects, list) and isinstance(state_objects, list) and sorted(objects) != sorted(state_objects):
        raise ConfigError(f"the presence model {path} knows the objects {objects}, but the state model of task "
                          f"{cfg.task.name!r} reads {state_objects}: it was trained for another task; train one with "
                          f"scripts/train_presence.py or leave planner.presence_checkpoint null")
    return tuple(str(c) for c in cameras) if isinstance(cameras, list) else ()


def state_model_sections(cfg: StackConfig) -> list[Any]:
    """The planner and verifier sections of ``cfg`` that read the learned state model: a learned planner or verifier
    (:class:`LearnedPerceptionConfig`), and the VLM planner with ``geometry=learned``. Each has ``state_checkpoint``,
    ``camera_calibration``, ``torch_threads`` and ``use_depth``."""
    return [s for s in (cfg.planner, cfg.verifier) if isinstance(s, LearnedPerceptionConfig)
            or (isinstance(s, VLMPlannerConfig) and s.learned_geometry)]


def perception_camera(cfg: StackConfig) -> tuple[str, tuple[int, int]] | None:
    """``(camera, (H, W) px)`` the learned state model of ``cfg``'s planner or verifier reads (a learned one, or the
    VLM planner with ``geometry=learned``: :func:`state_model_sections`), or of its executor
    (a track checkpoint with ``scene_input="objects_3d"``), from the checkpoints' ``config.json`` without loading
    them: the first section whose checkpoint can be read; None when none reads one or none can be read (loading an
    unreadable one later raises the real error)."""
    sections: list[Any] = state_model_sections(cfg)
    if isinstance(cfg.executor, TandemCheckpointWiring) and cfg.executor.name in ("diffusion", "track"):
        try:
            if checkpoint_scene_input(resolve_checkpoint(cfg.executor, cfg.task.name, cfg.planner.name)) != "none":
                sections.append(cfg.executor)
        except ConfigError:
            pass
    for section in sections:
        try:
            path = resolve_perception_checkpoint(section.state_checkpoint, cfg.task.name, "state")
            model = json.loads((path / "config.json").read_text())["model"]
            return str(model.get("camera", "agentview")), tuple(int(v) for v in model["image_size"])
        except (ConfigError, OSError, ValueError, KeyError, TypeError):
            continue  # the next section may name a readable checkpoint (the planner's and verifier's can differ)
    return None


def perception_depth(cfg: StackConfig) -> bool:
    """Whether a planner or verifier of ``cfg`` that reads the learned state model (:func:`state_model_sections`)
    reads the camera's depth: its ``use_depth`` is set and its
    state checkpoint's ``config.json`` has a depth offset for some object, or (the learned planner's first-plan absent
    check, ``use_absent_thresholds``, where no presence model supersedes it) records the support surface
    ``support_z_m`` (read without loading the model).
    Raises nothing: an unreadable checkpoint reads no depth (loading it later raises the real error)."""
    for section in state_model_sections(cfg):
        try:
            path = resolve_perception_checkpoint(section.state_checkpoint, cfg.task.name, "state")
            raw = json.loads((path / "config.json").read_text())
        except (ConfigError, OSError, ValueError):
            continue
        if not isinstance(raw, dict):
            continue
        offsets = raw.get("depth_offsets_m")
        if section.use_depth and isinstance(offsets, list) and any(v is not None for v in offsets):
            return True
        if raw.get("support_z_m") is not None and getattr(section, "use_absent_thresholds", False):
            try:
                superseded = presence_checkpoint(section, cfg.task.name) is not None  # a presence model does
            except ConfigError:
                superseded = False  # (building the planner raises the real error)
            if not superseded:
                return True
    return False


#: Loaded state models by (checkpoint, calibration): a learned planner and verifier share one network.
_STATE_MODELS: dict[tuple[str, str], Any] = {}


def _state_model(spec: LearnedPerceptionConfig | VLMPlannerConfig | TandemCheckpointWiring, ctx: BuildContext) -> Any:
    """The state model of ``spec`` with the camera calibration injected: ``spec.camera_calibration`` if given, else
    the simulator camera's (in simulation), else the one stored with the checkpoint (a robot without a calibration in
    its config: logged).

    Raises:
        ConfigError: no checkpoint (names the training command), a bad calibration. CheckpointError: a bad checkpoint.
    """
    from planner_vlm.learned.camera import CameraCalibration
    from planner_vlm.learned.state_model import StateModel

    set_torch_threads(spec.torch_threads)
    path = resolve_perception_checkpoint(spec.state_checkpoint, ctx.task, "state")
    camera = json.loads((path / "config.json").read_text()).get("model", {}).get("camera", "agentview") if (
        path / "config.json").is_file() else "agentview"
    if spec.camera_calibration is not None:
        raw: dict[str, Any] | None = {"camera": camera, **dict(spec.camera_calibration)}
    elif ctx.simulated:
        raw = ctx.env.camera_calibration(camera)  # type: ignore[attr-defined]  # a sim env's method
    else:
        raw = None
        logger.warning("learned state model on a robot without a camera_calibration in its config: using the "
                       "calibration stored with %s (the training camera)", path)
    key = (str(path.resolve()), json.dumps(raw, sort_keys=True))
    if key not in _STATE_MODELS:
        _STATE_MODELS.clear()  # one model at a time: a new episode config replaces the previous one
        _STATE_MODELS[key] = StateModel.from_checkpoint(path, None if raw is None else CameraCalibration.from_json(raw))
    return _STATE_MODELS[key]


def _learned_geometry(spec: VLMPlannerConfig, ctx: BuildContext) -> Any:
    """The hybrid mode's :class:`~planner_vlm.learned.geometry.LearnedGeometry`: the state model of
    ``spec.state_checkpoint`` (:func:`_state_model`, shared with a learned verifier) and the trace model of
    ``spec.trace_checkpoint`` (None: the shipped ones of the task), with the learned planner's default rules.

    Raises:
        ConfigError: a missing checkpoint (names the training command). CheckpointError: a bad checkpoint.
    """
    from planner_vlm.learned.geometry import LearnedGeometry
    from planner_vlm.learned.trace_model import TraceModel
    from sim.tasks.registry import read_pick_geometry

    state = _state_model(spec, ctx)
    trace = TraceModel.from_checkpoint(resolve_perception_checkpoint(spec.trace_checkpoint, ctx.task, "trace"))
    return LearnedGeometry(state, trace, use_depth=spec.use_depth, pick_geometry_reader=read_pick_geometry)


@PLANNERS.register("learned")
def _learned_planner(spec: LearnedPlannerConfig, ctx: BuildContext) -> Planner:
    """The state-tracker planner: learned predicates -> goal regression, learned 3-D traces (non-privileged).

    Raises:
        ConfigError: a missing checkpoint (names the training command). CheckpointError: a bad checkpoint.
    """
    from planner_vlm.learned.grounder import InstructionGrounder
    from planner_vlm.learned.learned_planner import LearnedPlanner
    from planner_vlm.learned.trace_model import TraceModel
    from sim.tasks.registry import read_pick_geometry

    state = _state_model(spec, ctx)
    trace = TraceModel.from_checkpoint(resolve_perception_checkpoint(spec.trace_checkpoint, ctx.task, "trace"))
    grounder = InstructionGrounder.load(resolve_perception_checkpoint(spec.grounder_checkpoint, ctx.task, "grounder"))
    presence_path = presence_checkpoint(spec, ctx.task)
    presence = None
    if presence_path is not None:
        from planner_vlm.learned.presence_model import PresenceModel

        presence = PresenceModel.from_checkpoint(presence_path)
    return LearnedPlanner(state, trace, threshold=spec.threshold, completion_confidence=spec.completion_confidence,
                          min_object_confidence=spec.min_object_confidence,
                          min_scene_confidence=spec.min_scene_confidence,
                          best_localized_first=spec.best_localized_first, empty_grip_m=spec.empty_grip_m,
                          max_close_offset_m=spec.max_close_offset_m, held_ray_m=spec.held_ray_m,
                          wrist_limit_rad=spec.wrist_limit_rad, use_depth=spec.use_depth,
                          hidden_uncertainty=spec.hidden_uncertainty, grasp_prior_m=spec.grasp_prior_m,
                          grasp_prior_deg=spec.grasp_prior_deg, use_absent_thresholds=spec.use_absent_thresholds,
                          geometric_picks=spec.geometric_picks, presence_model=presence, grounder=grounder,
                          pick_geometry_reader=read_pick_geometry)  # the task's kinds: planner_vlm can't import sim


# ------------------------------------------------------------------------------------------- verifiers
@VERIFIERS.register("learned")
def _learned_verifier(spec: LearnedVerifierConfig, ctx: BuildContext) -> Verifier:
    """The state model on the observation after each subgoal, temperature-calibrated; low confidence is uncertain.

    Raises:
        ConfigError: a missing checkpoint. CheckpointError: a bad checkpoint.
    """
    from planner_vlm.learned.learned_verifier import LearnedVerifier

    return LearnedVerifier(_state_model(spec, ctx), confidence_threshold=spec.confidence_threshold,
                           held_ray_m=spec.held_ray_m, use_depth=spec.use_depth)


@VERIFIERS.register("oracle")
def _oracle_verifier(spec: OracleVerifierConfig, ctx: BuildContext) -> Verifier:
    """Subgoal predicates from the simulator (privileged)."""
    from planner_vlm.oracle_verifier import OracleVerifier

    return OracleVerifier()


@VERIFIERS.register("oracle_task")
def _oracle_task_verifier(spec: OracleTaskVerifierConfig, ctx: BuildContext) -> Verifier:
    """The simulator's whole-task success flag (privileged; the single subgoal of ``planner=instruction``)."""
    from planner_vlm.oracle_task_verifier import OracleTaskSuccessVerifier

    return OracleTaskSuccessVerifier()


@VERIFIERS.register("vlm")
def _vlm_verifier(spec: VLMVerifierConfig, ctx: BuildContext) -> Verifier:
    """A VLM judging before/after images."""
    from planner_vlm.factory import make_vlm_verifier

    return make_vlm_verifier(asdict(spec))


# ------------------------------------------------------------------------------------------- executors
def resolve_checkpoint(spec: CheckpointExecutorConfig, task: str, planner: str) -> Path:
    """The diffusion executor's checkpoint directory.

    ``spec.checkpoint`` when set, with ``{task}`` replaced by ``task`` (a relative path that does not exist from the
    working directory is also tried from the project root); otherwise the shipped one for ``task``: ``<task>_flat``
    under ``planner=instruction``, else ``<task>_diffusion``, looked up in ``checkpoints/``, then in
    ``checkpoints/image/``; a task of a family (``libero_10/<name>``) then falls back to the family's multi-task
    checkpoint, ``checkpoints/<family>_<kind>`` (``checkpoints/libero_10_diffusion``).

    Raises:
        ConfigError: no checkpoint given and none shipped for the task (lists the shipped ones).
    """
    if spec.checkpoint:
        path = Path(str(spec.checkpoint).replace("{task}", task))
        if not path.is_absolute() and not path.exists() and (SHIPPED_CHECKPOINTS.parent / path).exists():
            path = SHIPPED_CHECKPOINTS.parent / path
        return path
    kind = "flat" if planner == FLAT_PLANNER else "diffusion"
    roots = (SHIPPED_CHECKPOINTS, SHIPPED_CHECKPOINTS / SHIPPED_IMAGE_SUBDIR)
    names = [task] + ([task.partition("/")[0]] if "/" in task else [])
    for name in names:
        for root in roots:
            path = root / f"{name}_{kind}"
            if (path / "config.json").is_file():
                return path
    shipped = sorted(str(p.parent.relative_to(SHIPPED_CHECKPOINTS)) for root in roots for p in root.glob("*/config.json"))
    raise ConfigError(f"no shipped {kind} executor checkpoint for task {task!r} (shipped: "
                      f"{', '.join(shipped) or 'none'}); pass executor.checkpoint=<dir written by tandem-train>")


def _checkpoint_executor_dict(checkpoint: str | Path) -> dict[str, Any] | None:
    try:
        raw = json.loads((Path(checkpoint) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    ex = raw.get("executor") if isinstance(raw, dict) else None
    return ex if isinstance(ex, dict) else None


def check_executor_task(checkpoint: str | Path, task: str) -> None:
    """Refuse an executor checkpoint trained on other tasks than ``task``, from the ``tasks`` its ``config.json``
    records (a track checkpoint; one that records none, or an unreadable file, is not refused here: loading it raises
    the real error).

    Raises:
        CheckpointError: ``task`` is not among the checkpoint's training tasks (named, with them).
    """
    ex = _checkpoint_executor_dict(checkpoint)
    trained = ex.get("tasks") if ex is not None else None
    if isinstance(trained, list) and trained and task not in trained:
        raise CheckpointError(f"executor checkpoint {checkpoint} was trained on task(s) {trained}, not {task!r}: "
                              f"use a checkpoint trained for it (or leave executor.checkpoint null for the shipped "
                              f"one)")


def checkpoint_scene_input(checkpoint: str | Path) -> str:
    """``scene_input`` recorded in a track executor checkpoint's ``config.json`` (``"objects_3d"``: it reads the
    objects' keypoints with a learned state model); ``"none"`` for other checkpoints or an unreadable file."""
    ex = _checkpoint_executor_dict(checkpoint)
    src = ex.get("scene_input", "none") if ex is not None else "none"
    return src if isinstance(src, str) else "none"


def checkpoint_conditioning(checkpoint: str | Path) -> str | None:
    """``conditioning_source`` (``"subgoal"`` or ``"instruction"``) recorded in a tandem executor checkpoint's
    ``config.json``; None when the file cannot be read (loading the checkpoint then raises the real error)."""
    ex = _checkpoint_executor_dict(checkpoint)
    src = ex.get("conditioning_source", "subgoal") if ex is not None else None
    return src if isinstance(src, str) else None


def executor_observation_spec(cfg: StackConfig) -> tuple[tuple[str, ...], tuple[int, int]] | None:
    """``(cameras, (H, W) px)`` that ``cfg``'s trained diffusion executor was trained on, read from its checkpoint's
    ``config.json`` without loading it; None for other executors or an unreadable checkpoint (loading it later
    raises the real error). The env is built to match, so a checkpoint trained at 84 x 84 px runs as is.

    Raises:
        ConfigError: from :func:`resolve_checkpoint`.
    """
    if cfg.executor.name not in ("diffusion", "track"):
        return None
    ex = _checkpoint_executor_dict(resolve_checkpoint(cfg.executor, cfg.task.name, cfg.planner.name))
    if ex is None or "cameras" not in ex or "image_size" not in ex:  # e.g. a track checkpoint: it sees no images
        return None
    return tuple(ex["cameras"]), tuple(int(v) for v in ex["image_size"])


def check_executor_conditioning(planner: str, checkpoint: str | Path | None,
                                conditioning: str | None = None) -> None:
    """Refuse a diffusion checkpoint whose conditioning does not match the planner's subgoals.

    A flat checkpoint (``conditioning_source="instruction"``, trained on whole episodes, done head on episode
    progress) belongs under ``planner=instruction``; a subgoal-conditioned one under a decomposing planner.
    Mixed, the executor would be conditioned silently on text it was not trained on.

    Args:
        planner: the planner name (``cfg.planner.name``).
        checkpoint: the checkpoint directory (read with :func:`checkpoint_conditioning` unless ``conditioning``).
        conditioning: the checkpoint's ``conditioning_source`` if already known.

    Raises:
        ConfigError: naming the checkpoint, its conditioning and what to use instead.
    """
    src = conditioning if conditioning is not None else (
        checkpoint_conditioning(checkpoint) if checkpoint else None)
    if src is None:
        return
    if planner == FLAT_PLANNER and src != "instruction":
        raise ConfigError(
            f"planner=instruction runs the whole task as one subgoal, but executor checkpoint {checkpoint} is "
            f"subgoal-conditioned (conditioning_source={src!r}): it would be conditioned on the full instruction, "
            "which it never saw in training. Use a flat checkpoint (tandem-train executor=flat) or a planner that "
            f"decomposes the task ({', '.join(p for p in PLANNERS.names() if p != FLAT_PLANNER)})")
    if planner != FLAT_PLANNER and src == "instruction":
        raise ConfigError(
            f"executor checkpoint {checkpoint} is the flat baseline (conditioning_source='instruction', trained on "
            f"whole episodes): under planner={planner} every subgoal would be conditioned on the whole instruction. "
            "Run it with planner=instruction verifier=oracle_task agent.subgoal_step_budget=null (the 'flat' "
            "variant of configs/eval.yaml)")


def set_torch_threads(n: int | None) -> None:
    """``torch.set_num_threads(n)`` for CPU inference when ``n`` is set (1 avoids OpenMP oversubscription when
    several workers share a small CPU); None keeps torch's default."""
    if n:
        import torch

        torch.set_num_threads(int(n))


@EXECUTORS.register("scripted")
def _scripted_executor(spec: ScriptedExecutorConfig, ctx: BuildContext) -> Executor:
    """The simulator's waypoint experts driving the live env (privileged)."""
    from sim.experts import ScriptedExecutor

    return ScriptedExecutor(ctx.require_simulator("executor=scripted"))


@EXECUTORS.register("diffusion")
def _diffusion_executor(spec: TandemCheckpointWiring, ctx: BuildContext) -> Executor:
    """A tandem executor checkpoint from ``spec.checkpoint`` (or the shipped one) on ``spec.device``, of either
    family (:mod:`executor_vla.loading`: the track executor or the image DiffusionExecutor), with the inference
    overrides the family allows (:func:`executor_vla.loading.overrides_for`). Its conditioning
    must match the planner (:func:`check_executor_conditioning`): checked from ``config.json`` before the weights
    load, and again from the loaded config.

    A track checkpoint trained with ``scene_input="objects_3d"`` gets the learned state model of
    ``spec.state_checkpoint`` (None: the shipped ``checkpoints/state/<task>``), with the camera calibration of
    :func:`_state_model`, as its reader of the objects' keypoints: non-privileged, it reads the camera image.

    Raises:
        ConfigError: no checkpoint, or one whose conditioning does not match the planner; no state model for a
            scene-input checkpoint (names the training command), or one whose objects differ from the checkpoint's.
            CheckpointError: a missing, corrupt or mismatched checkpoint.
    """
    checkpoint = resolve_checkpoint(spec, ctx.task, ctx.planner)
    check_executor_task(checkpoint, ctx.task)
    check_executor_conditioning(ctx.planner, checkpoint)
    from executor_vla.loading import load_executor, overrides_for

    set_torch_threads(spec.torch_threads)
    executor = load_executor(checkpoint, device=spec.device, overrides=overrides_for(checkpoint, spec))
    check_executor_conditioning(ctx.planner, checkpoint, conditioning=executor.cfg.conditioning_source)
    if checkpoint_scene_input(checkpoint) != "none":
        executor.attach_scene_reader(_state_model(spec, ctx))
    executor.action_low, executor.action_high = ctx.env.action_low, ctx.env.action_high
    return executor


@EXECUTORS.register("track")
def _track_executor(spec: Any, ctx: BuildContext) -> Executor:
    """``executor=track executor.checkpoint=<dir>``: a track executor checkpoint (the same loader as ``diffusion``,
    which loads either family); the section's non-null inference settings apply, others are refused."""
    return _diffusion_executor(spec, ctx)


@EXECUTORS.register("lerobot")
def _lerobot_executor(spec: LeRobotExecutorConfig, ctx: BuildContext) -> Executor:
    """Any LeRobot policy from a ``pretrained_model`` directory behind the Executor protocol; actions clipped to the
    env's ``action_low/high``.

    Raises:
        ConfigError: no checkpoint, or a device torch cannot use here. CheckpointError: an unreadable checkpoint.
    """
    if not spec.checkpoint:
        raise ConfigError("executor=lerobot needs executor.checkpoint=<a LeRobot pretrained_model directory, "
                          "e.g. outputs/train/<run>/checkpoints/last/pretrained_model>")
    from executor_vla.lerobot_executor import LeRobotPolicyExecutor
    from executor_vla.loading import check_device

    check_device(spec.device)
    set_torch_threads(spec.torch_threads)
    return LeRobotPolicyExecutor.from_pretrained(
        spec.checkpoint, device=spec.device, task_text=spec.task_text, camera_map=dict(spec.camera_map) or None,
        action_low=ctx.env.action_low, action_high=ctx.env.action_high)


@EXECUTORS.register("oracle_remote")
def _oracle_remote_executor(spec: OracleRemoteExecutorConfig, ctx: BuildContext) -> Executor:
    """SIM-ONLY bridge rehearsal: the scripted expert's waypoints over the oracle side channel.

    Raises:
        ConfigError: outside the bridge, or without ``bridge.oracle_side_channel=true``.
    """
    if ctx.transport is None or ctx.simulated:
        raise ConfigError("executor.name=oracle_remote runs only in tandem-bridge, against tandem-sim-robot")
    if not ctx.env.config.oracle_side_channel:
        raise ConfigError("executor.name=oracle_remote needs bridge.oracle_side_channel=true (simulation only)")
    from bridge.oracle_channel import OracleChannelClient
    from tandem.runtime.oracle_remote import OracleRemoteExecutor

    return OracleRemoteExecutor(OracleChannelClient(ctx.transport))


# ------------------------------------------------------------------------------------------- goal producers
@GOAL_PRODUCERS.register("none")
def _no_goals(spec: NoGoalsConfig, ctx: BuildContext) -> GoalProducer | None:
    """No goal image or trace."""
    return None


@GOAL_PRODUCERS.register("oracle")
def _oracle_goals(spec: OracleGoalsConfig, ctx: BuildContext) -> GoalProducer | None:
    """Teleport-render-restore goal images and projected expert traces in ``spec.camera`` pixels (privileged)."""
    from sim.goal_render import OracleGoalProducer

    return OracleGoalProducer(ctx.require_simulator("goals=oracle"), camera=spec.camera, goal_image=spec.goal_image,
                              trace_points=spec.trace, trace_3d=spec.trace_3d)


# ------------------------------------------------------------------------------------------- envs and stacks
@dataclass
class Stack:
    """A ready-to-run stack: the env and the agent that drives it."""

    env: Env
    agent: HierarchicalAgent

    def close(self) -> None:
        """Stop the agent's planning worker (with ``agent.async_planning``), then close the env."""
        self.agent.close()
        self.env.close()


def build_sim_env(task: TaskConfig, env: EnvConfig, perturb: PerturbConfig | None = None,
                  instruction: str | None = None, instructions: str = "seed") -> Env:
    """The robosuite env of ``task`` with ``env``'s cameras, image size (H, W px), control rate and rendering, for
    the user's ``instruction`` (None: each seed's own, worded as ``instructions`` says: ``seed`` or ``paraphrase``).

    Raises:
        UnknownTaskError / UnknownNameError: an unknown task or perturbation.
        InstructionRefused: the task's reference reading refuses ``instruction`` (before the simulator is built).
    """
    from sim.perturbations import PerturbationSpec
    from sim.robosuite_env import RobosuiteEnv

    spec = None
    if perturb is not None and perturb.name and perturb.name != "none":
        spec = PerturbationSpec(name=perturb.name, at_step=perturb.at_step, after_success=perturb.after_success)
    return RobosuiteEnv(task.name, cameras=tuple(env.cameras), image_size=tuple(env.image_size),
                        control_freq=int(env.control_freq), render=bool(env.render), perturbation=spec,
                        lazy_images=bool(env.lazy_images), perturbation_budget=bool(env.perturbation_budget),
                        depth_cameras=tuple(env.depth_cameras), instruction=instruction, instructions=instructions)


def build_memory(spec: MemoryConfig | None = None) -> TaskMemory:
    """A fresh :class:`memory.task_memory.TaskMemoryV1` (the only memory so far) with ``spec``'s lessons and retry
    rules (:class:`tandem.runtime.config.MemoryConfig`; None: its defaults, i.e. no retry policy, no lessons).

    Raises:
        MemoryStoreError / MemorySchemaError: a ``lessons`` store that cannot be read (the file is left untouched).
    """
    from memory.task_memory import TaskMemoryV1

    spec = spec if spec is not None else MemoryConfig()
    return TaskMemoryV1(lessons=spec.lessons, rules=spec.retry_rules())


def build_agent(cfg: StackConfig | BridgeRunConfig, ctx: BuildContext, executor: Executor | None = None,
                goals: bool = True, hold_action: np.ndarray | None = None) -> HierarchicalAgent:
    """The HierarchicalAgent of ``cfg``'s planner, verifier, executor (or the given ``executor``, e.g. the one being
    trained), goal producer (when ``goals``), memory and budgets, for the env of ``ctx``.

    ``hold_action`` (``float32 (A,)``) is what the agent returns while it waits for a plan with
    ``agent.async_planning``; without one, ``agent.async_planning=true`` is refused (ConfigError).

    Raises:
        UnknownNameError / ConfigError / CheckpointError: from the builders. MemoryStoreError: an unreadable
            ``memory.lessons`` store.
    """
    truth_sink = None
    url = getattr(cfg, "oracle_truth_url", None)
    if url:  # SIM-ONLY, privileged: the oracle-sim VLM server answers from the truth posted here
        from tandem.runtime.oracle_sim_vlm import POINT_CAMERA, OracleTruthPublisher

        env = ctx.require_simulator("oracle_truth_url")
        truth_sink = OracleTruthPublisher(url, {POINT_CAMERA: env.camera_calibration(POINT_CAMERA)})
    return HierarchicalAgent(
        planner=PLANNERS.build(cfg.planner, ctx),
        verifier=VERIFIERS.build(cfg.verifier, ctx),
        executor=executor if executor is not None else EXECUTORS.build(cfg.executor, ctx),
        memory=build_memory(cfg.memory),
        goal_producer=GOAL_PRODUCERS.build(cfg.goals, ctx) if goals else None,
        config=cfg.agent,
        hold_action=hold_action,
        truth_sink=truth_sink,
    )


def build_stack(cfg: Any, executor: Executor | None = None) -> Stack:
    """Simulator env + HierarchicalAgent from a stack config (a :class:`StackConfig`, e.g. a loaded demo or collect
    config, or a plain nested dict / OmegaConf node with the sections of one; see :func:`tandem.runtime.config.load`).

    A diffusion executor's env is built with the cameras and image size its checkpoint was trained on.

    Args:
        cfg: the stack config.
        executor: use this executor instead of building ``cfg.executor`` (``tandem-train``'s in-sim evaluation).

    Raises:
        UnknownNameError: an unknown task, planner, verifier, executor, goal producer or perturbation.
        ConfigError: a bad option (named). CheckpointError: a bad executor checkpoint.
    """
    if not isinstance(cfg, StackConfig):
        cfg = load(StackConfig, cfg)
    env_cfg = cfg.env
    spec = executor_observation_spec(cfg) if executor is None else None
    if spec is not None and (tuple(env_cfg.cameras), tuple(env_cfg.image_size)) != spec:
        logger.info("env cameras/image size %s -> %s, as the executor checkpoint was trained",
                    (tuple(env_cfg.cameras), tuple(env_cfg.image_size)), spec)
        env_cfg = replace(env_cfg, cameras=spec[0], image_size=spec[1])
    seen = perception_camera(cfg)
    if seen is not None:  # a learned planner/verifier reads this camera: render it (at its size unless an executor
        camera, size = seen  # checkpoint fixed the size; the state model then resizes)
        cams = tuple(env_cfg.cameras) if camera in env_cfg.cameras else (*env_cfg.cameras, camera)
        size = tuple(env_cfg.image_size) if spec is not None else size
        if (cams, size, True) != (tuple(env_cfg.cameras), tuple(env_cfg.image_size), env_cfg.render):
            logger.info("env renders %s at %s for the learned state model", cams, size)
            env_cfg = replace(env_cfg, cameras=cams, image_size=size, render=True)
        extra = tuple(c for c in presence_cameras(cfg) if c not in env_cfg.cameras)
        if extra:  # the presence model's other views, read at the first plan only (lazy images render on read)
            logger.info("env also renders %s for the presence model", extra)
            env_cfg = replace(env_cfg, cameras=(*env_cfg.cameras, *extra))
        if perception_depth(cfg) and camera not in env_cfg.depth_cameras:
            logger.info("env renders %s's depth for the learned state model", camera)
            env_cfg = replace(env_cfg, depth_cameras=(*env_cfg.depth_cameras, camera))
    if isinstance(cfg.planner, VLMPlannerConfig) and cfg.planner.pointing:  # the points are lifted with its depth
        camera = cfg.planner.trace_camera
        if camera not in env_cfg.cameras or camera not in env_cfg.depth_cameras:
            logger.info("env renders %s and its depth for the pointing VLM planner", camera)
            env_cfg = replace(env_cfg, render=True,
                              cameras=tuple(env_cfg.cameras) if camera in env_cfg.cameras else (*env_cfg.cameras, camera),
                              depth_cameras=tuple(env_cfg.depth_cameras) if camera in env_cfg.depth_cameras
                              else (*env_cfg.depth_cameras, camera))
    env = build_sim_env(cfg.task, env_cfg, cfg.perturb, instruction=cfg.instruction, instructions=cfg.instructions)
    try:
        ctx = BuildContext(env=env, simulated=True, task=cfg.task.name, planner=cfg.planner.name)
        # OSC delta action zeros: no motion, and robosuite's gripper command 0 keeps the fingers where they are
        agent = build_agent(cfg, ctx, executor=executor, hold_action=np.zeros(env.action_dim, dtype=np.float32))
    except BaseException:
        env.close()
        raise
    return Stack(env=env, agent=agent)


def build_robot_env(cfg: BridgeRunConfig, transport: Any) -> Env:
    """The ROS 2 robot env (:class:`bridge.robot_env.RobotEnv`) of ``cfg.bridge`` on ``transport``.

    Raises:
        ConfigError: an invalid bridge config (named).
    """
    from bridge.config import bridge_config_from_dict
    from bridge.robot_env import RobotEnv

    return RobotEnv(bridge_config_from_dict(cfg.bridge), transport)


def build_bridge_stack(cfg: Any, transport: Any) -> Stack:
    """Robot env + HierarchicalAgent for ``tandem-bridge``: planner, verifier and executor as in simulation (the same
    builders, the same checks), no goal producer (no simulator to render).

    Raises:
        UnknownNameError / ConfigError / CheckpointError: from the builders, e.g. a flat checkpoint under a
            decomposing planner, or ``executor=scripted`` (it needs the live simulator).
    """
    if not isinstance(cfg, BridgeRunConfig):
        cfg = load(BridgeRunConfig, cfg)
    if cfg.goals.name != "none":
        raise ConfigError(f"goals={cfg.goals.name} cannot run on a robot: there is no simulator to render goal images "
                          "or expert traces; use goals=none")
    env = build_robot_env(cfg, transport)
    try:
        ctx = BuildContext(env=env, simulated=False, task=env.spec.name, planner=cfg.planner.name,
                           transport=transport)
        agent = build_agent(cfg, ctx, goals=False)
    except BaseException:
        env.close()
        raise
    return Stack(env=env, agent=agent)


__all__ = [
    "EXECUTORS", "FLAT_PLANNER", "GOAL_PRODUCERS", "PLANNERS", "REGISTRIES", "SHIPPED_CHECKPOINTS", "VERIFIERS",
    "BuildContext", "Registry", "Stack", "build_agent", "build_bridge_stack", "build_memory", "build_robot_env",
    "build_sim_env", "build_stack", "check_executor_conditioning", "check_executor_task", "checkpoint_conditioning", "checkpoint_scene_input",
    "executor_observation_spec", "perception_camera", "state_model_sections", "presence_cameras", "presence_checkpoint", "resolve_checkpoint",
    "resolve_perception_checkpoint", "set_torch_threads",
]
