"""The typed stack configuration: one dataclass schema per config section and per config-group option.

Every entry point composes its config with Hydra from ``configs/`` over these schemas (registered in Hydra's
ConfigStore by :func:`register_configs`), so a typo or a wrong type fails while the command line is parsed, with
the key named (``Key 'modle' not in 'VLMPlannerConfig'``, ``full_key: planner.modle``). Values are then checked
as a whole by :func:`load` before anything is built or run: each schema's :meth:`Schema.check` raises a
:class:`~tandem.core.errors.ConfigError` naming the full key, e.g. ``env.image_size must be [H, W] with H, W >= 1,
got [84, 84, 3]``. Non-Hydra callers (the evaluation's variants, tests, benchmarks) pass plain dicts through the
same :func:`load`.

Sections of a stack (:class:`StackConfig`): ``task``, ``env``, ``planner``, ``verifier``, ``executor``,
``goals``, ``perturb``, ``agent``, ``memory``. The component sections (``planner``, ``verifier``, ``executor``,
``goals``) are polymorphic: the schema is chosen by the section's ``name`` (``planner=vlm`` -> :class:`VLMPlannerConfig`),
as registered with the builder in :mod:`tandem.runtime.registry`.

How to add a config option, e.g. ``planner=learned`` with a ``checkpoint`` option:

1. here, a schema::

       @component_schema("planner")
       @dataclass
       class LearnedPlannerConfig(ComponentConfig):
           name: str = "learned"
           checkpoint: str | None = None   # every option typed, with its default

           def check(self) -> None:         # values (types are checked by OmegaConf)
               if not self.checkpoint:
                   raise FieldError("checkpoint", "must name a checkpoint directory")

2. in :mod:`tandem.runtime.registry`, its builder: ``@PLANNERS.register("learned")`` on a function
   ``(spec: LearnedPlannerConfig, ctx: BuildContext) -> Planner``;
3. ``configs/planner/learned.yaml`` whose defaults list starts with ``learned_schema`` (:func:`register_configs`
   stores every component schema as ``<group>/<name>_schema``).

A new option of an existing section (e.g. ``verifier.point_frame``) is one typed field in its schema; the builder
reads it as an attribute.

Executor-internal hyperparameters (the fields of ``executor_vla.config.ExecutorConfig``) are accepted by name in
``executor=diffusion`` and validated by ``ExecutorConfig`` itself.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, override

from memory.lessons import RetryRules
from planner_vlm.prompting import PLAN_MEMORY_TOKENS, VERIFY_MEMORY_TOKENS
from tandem.core.dataset_schema import DEFAULT_LABEL_CAMERA
from tandem.core.errors import ConfigError, UnknownNameError, did_you_mean
from tandem.core.grasp_clearance import PANDA_EMPTY_OPENING_M
from tandem.core.number_fields import (
    check_numbers,
    deferred_number_checks,
    field_faults,
    in_range,
    non_numbers,
)
from tandem.core.types import TaskSpec
from tandem.core.wrist import PANDA_WRIST_LIMIT_RAD

_DEFER_CHECKS: contextvars.ContextVar[bool] = contextvars.ContextVar("tandem_defer_config_checks", default=False)


@contextlib.contextmanager
def deferred_checks() -> Iterator[None]:
    """Within this block, constructing a schema does not check it (default values may be incomplete, e.g. an empty
    ``out``); :func:`load` checks the finished config, naming full keys."""
    token = _DEFER_CHECKS.set(True)
    try:
        with deferred_number_checks():  # the components' own configs too (TrainConfig, ...)
            yield
    finally:
        _DEFER_CHECKS.reset(token)


class FieldError(ConfigError):
    """A config value that its schema refuses. :func:`load` prefixes the section path: ``env.image_size ...``.

    Attributes:
        field: the field's name within its schema, e.g. ``"image_size"``.
        message: what is wrong, e.g. ``"must be [H, W] with H, W >= 1, got [84, 84, 3]"``.
    """

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field} {message}")


@dataclass
class Schema:
    """Base of every config schema. Types are checked by OmegaConf; :meth:`check` checks values, after the numbers
    (finite, and inside the range a field declares with :func:`tandem.core.number_fields.in_range`).

    Constructing a schema directly checks it at once (``__post_init__``); :func:`load` checks the whole tree after
    construction so that the error names the full key.
    """

    def __post_init__(self) -> None:
        if not _DEFER_CHECKS.get():
            check_numbers(self)
            self.check()

    def check(self) -> None:
        """Raise :class:`FieldError` for a value this schema refuses (the default accepts every value)."""


#: How each seed's instruction is worded without a user's (``sim.robosuite_env.INSTRUCTION_STYLES``).
INSTRUCTION_STYLES: tuple[str, ...] = ("seed", "paraphrase")


# ------------------------------------------------------------------------------------------- plain sections
@dataclass
class TaskConfig(Schema):
    """``task``: which registered task to run (``sim.tasks.registry``), e.g. ``stack_three``."""

    name: str = "stack_three"

    @override
    def check(self) -> None:
        if not self.name:
            raise FieldError("name", "must name a task")


@dataclass
class EnvConfig(Schema):
    """``env``: the simulated cameras and control rate.

    Attributes:
        cameras: the cameras of the observations, e.g. ``["agentview", "wrist"]``.
        image_size: ``[H, W]`` px of every camera.
        control_freq: control steps per second (Hz).
        render: render camera images (off: no GL context, about 3x faster, for stacks that need no images).
        lazy_images: render a camera only when a component reads it, at that step (``tandem.core.lazy_images``);
            off: every camera at every step.
        perturbation_budget: a perturbation that undoes finished work (a pulled or knocked-off object to pick and
            place again, a dropped one to pick again) adds the task's step budget for that work to the episode's
            (``sim.perturbations.ADDED_SUBGOALS`` x ``steps_per_subgoal``); off: the task's budget alone.
        depth_cameras: cameras (among ``cameras``) that also give depth images (``Observation.depth``, m: an RGB-D
            camera). A learned planner or verifier with ``use_depth`` adds its camera here itself, and so does a learned
            planner whose first-plan depth absent check runs (``use_absent_thresholds``, a state checkpoint that
            records ``support_z_m`` and no presence model), whatever its ``use_depth``.
    """

    cameras: tuple[str, ...] = ("agentview", "wrist")
    image_size: tuple[int, int] = (128, 128)
    control_freq: int = 20
    render: bool = True
    lazy_images: bool = True
    perturbation_budget: bool = True
    depth_cameras: tuple[str, ...] = ()

    @override
    def check(self) -> None:
        size = list(self.image_size)
        if len(size) != 2 or min(size) < 1:
            raise FieldError("image_size", f"must be [H, W] with H, W >= 1, got {size}")
        if not self.cameras or len(set(self.cameras)) != len(self.cameras):
            raise FieldError("cameras", f"must be non-empty and unique, got {list(self.cameras)}")
        if self.control_freq < 1:
            raise FieldError("control_freq", f"must be >= 1 Hz, got {self.control_freq}")
        unknown = [c for c in self.depth_cameras if c not in self.cameras]
        if unknown:
            raise FieldError("depth_cameras", f"{unknown} are not among cameras {list(self.cameras)}")


@dataclass
class PerturbConfig(Schema):
    """``perturb``: a mid-episode disturbance (``sim.perturbations``), or ``none``.

    Attributes:
        name: perturbation name, e.g. ``knock_top_cube``; ``none`` for no perturbation.
        at_step: fire at the first control step >= this one (None: event-based, see ``after_success``).
        after_success: fire right after the n-th success event of the perturbation's kind (n >= 1).
    """

    name: str = "none"
    at_step: int | None = None
    after_success: int = 1

    @override
    def check(self) -> None:
        if self.at_step is not None and self.at_step < 0:
            raise FieldError("at_step", f"must be >= 0 or null, got {self.at_step}")
        if self.after_success < 1:
            raise FieldError("after_success", f"must be >= 1, got {self.after_success}")


@dataclass
class AgentConfig(Schema):
    """``agent``: the budgets of the closed loop (the ONE place their defaults are written).

    Attributes:
        max_attempts_per_subgoal: attempts at one subgoal signature (e.g. ``stack(red,green)``) before
            the agent gives up on the episode.
        subgoal_step_budget: control steps one attempt may take before it is verified anyway; None means the
            whole episode's budget (``TaskSpec.max_steps`` of the task given to ``reset``), as a flat policy
            that runs the task as one subgoal needs.
        max_plans: planner calls per episode (initial plan + replans) before giving up; guards against
            planner-verifier loops (RoboMemory's planner-critic loop guard).
        verify_rechecks: how many times an uncertain verdict (``Verdict.uncertain``) is re-checked before it counts
            as a failure; 0 = never (the first uncertain verdict is a failure).
        recheck_steps: control steps the executor keeps running the subgoal before each re-check, >= 1.
        async_planning: run the planner in a worker thread (:mod:`tandem.runtime.planning_worker`): ``act`` never
            calls it. Until the first plan arrives, and after a failed verdict until the new plan arrives, ``act``
            returns the agent's ``hold_action``; after a success the executor goes on with the current plan's next
            subgoal while the planner works.
        plan_switch_steps: with ``async_planning``, a new plan whose next subgoal differs from the running one
            switches to it only when the running attempt's step count is a multiple of this (the executor's
            action-chunk length, e.g. 8 for the diffusion executor: the chunk boundary); 1 switches at once.
        confirm_reads: reads of the goals (``Planner.read_goals``) that must each confirm every grounded goal true
            and confident, and every goal object present, before the agent claims success, >= 1. With more than one
            the agent holds still between the reads (it needs a ``hold_action``).
        confirm_gap_steps: control steps between two confirmation reads, >= 1.
    """

    max_attempts_per_subgoal: int = 3
    subgoal_step_budget: int | None = 400
    max_plans: int = 40
    verify_rechecks: int = 2
    recheck_steps: int = 5
    async_planning: bool = False
    plan_switch_steps: int = 1
    confirm_reads: int = 2
    confirm_gap_steps: int = 10

    @override
    def check(self) -> None:
        if self.max_attempts_per_subgoal < 1:
            raise FieldError("max_attempts_per_subgoal", f"must be >= 1, got {self.max_attempts_per_subgoal}")
        if self.subgoal_step_budget is not None and self.subgoal_step_budget < 1:
            raise FieldError("subgoal_step_budget", f"must be >= 1 or null (the task's max_steps), "
                                                    f"got {self.subgoal_step_budget}")
        if self.max_plans < 1:
            raise FieldError("max_plans", f"must be >= 1, got {self.max_plans}")
        if self.verify_rechecks < 0:
            raise FieldError("verify_rechecks", f"must be >= 0, got {self.verify_rechecks}")
        if self.recheck_steps < 1:
            raise FieldError("recheck_steps", f"must be >= 1 control step, got {self.recheck_steps}")
        if self.plan_switch_steps < 1:
            raise FieldError("plan_switch_steps", f"must be >= 1 control step, got {self.plan_switch_steps}")
        if self.confirm_reads < 1:
            raise FieldError("confirm_reads", f"must be >= 1, got {self.confirm_reads}")
        if self.confirm_gap_steps < 1:
            raise FieldError("confirm_gap_steps", f"must be >= 1 control step, got {self.confirm_gap_steps}")

    def step_budget(self, task: TaskSpec) -> int:
        """Control steps per attempt for ``task``: ``subgoal_step_budget``, or ``task.max_steps`` when None."""
        return int(task.max_steps) if self.subgoal_step_budget is None else int(self.subgoal_step_budget)


_RETRY_RULES = RetryRules()  # the retry rules' defaults are written once, in memory.lessons.RetryRules


@dataclass
class MemoryConfig(Schema):
    """``memory``: the task memory (:class:`memory.task_memory.TaskMemoryV1`): lessons across episodes and the
    retry rules (:class:`memory.lessons.RetryRules`, whose defaults these are). All defaults: no retry policy and
    no lessons. The memory is persisted to ``<out_dir>/memory.sqlite`` (``tandem-replay <out_dir>``).

    Attributes:
        lessons: ``null`` (no lessons across episodes), ``store`` (learn from the earlier, ended episodes of the
            store the episode is written to) or the path of another ``memory.sqlite`` (or its run directory) to
            learn from, read only.
        slip_escalation: slips of one subgoal within an episode before its next attempt runs at ``slow_scale``
            speed; null: never.
        slow_scale: speed factor of a slowed-down attempt, in (0, 1).
        min_slip_episodes: earlier episodes with slips of a skill before lessons slow it down from its first attempt.
        min_slow_attempts: slowed-down retries after a slip in earlier episodes needed to compare the recoveries.
        max_plain_retry_rate: lessons slow a skill down only if a plain retry after a slip succeeded less often than
            this, in (0, 1].
    """

    lessons: str | None = None
    slip_escalation: int | None = _RETRY_RULES.slip_escalation
    slow_scale: float = _RETRY_RULES.slow_scale
    min_slip_episodes: int = _RETRY_RULES.min_slip_episodes
    min_slow_attempts: int = _RETRY_RULES.min_slow_attempts
    max_plain_retry_rate: float = _RETRY_RULES.max_plain_retry_rate

    @override
    def check(self) -> None:
        if self.lessons is not None and not str(self.lessons).strip():
            raise FieldError("lessons", "must be null, store or the path of a memory.sqlite, got ''")
        for name in ("slip_escalation", "min_slip_episodes", "min_slow_attempts"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise FieldError(name, f"must be >= 1{' or null' if name == 'slip_escalation' else ''}, got {v}")
        if not 0.0 < self.slow_scale < 1.0:
            raise FieldError("slow_scale", f"must be in (0, 1), got {self.slow_scale}")
        if not 0.0 < self.max_plain_retry_rate <= 1.0:
            raise FieldError("max_plain_retry_rate", f"must be in (0, 1], got {self.max_plain_retry_rate}")

    def retry_rules(self) -> RetryRules:
        """These rules as :class:`memory.lessons.RetryRules`."""
        return RetryRules(slip_escalation=self.slip_escalation, slow_scale=float(self.slow_scale),
                          min_slip_episodes=int(self.min_slip_episodes),
                          min_slow_attempts=int(self.min_slow_attempts),
                          max_plain_retry_rate=float(self.max_plain_retry_rate))


# ------------------------------------------------------------------------------------------- components
@dataclass
class ComponentConfig(Schema):
    """Base of the polymorphic sections (``planner``, ``verifier``, ``executor``, ``goals``): ``name`` picks the
    variant, and with it the schema (see :mod:`tandem.runtime.registry`)."""

    name: str = ""


#: component kind (config section) -> how errors name it.
COMPONENT_KINDS: dict[str, str] = {"planner": "planner", "verifier": "verifier", "executor": "executor",
                                   "goals": "goal producer"}
#: Names of the design (ARCHITECTURE.md) that cannot be built yet; asking for one says so.
NOT_IMPLEMENTED: dict[str, tuple[str, ...]] = {}
_SCHEMAS: dict[str, dict[str, type[ComponentConfig]]] = {kind: {} for kind in COMPONENT_KINDS}

def component_schema[C: type](kind: str) -> Callable[[C], C]:
    """Class decorator: the schema is the config of ``<kind>=<its name default>`` (e.g. ``planner=vlm``).

    Raises:
        ValueError: an unknown kind, or a name registered twice.
    """
    def deco(cls: C) -> C:
        name = cls().name
        if kind not in _SCHEMAS or not name or name in _SCHEMAS[kind]:
            raise ValueError(f"cannot register {cls.__name__} as {kind}={name!r}")
        _SCHEMAS[kind][name] = cls
        return cls

    return deco


def component_names(kind: str) -> tuple[str, ...]:
    """The names with a schema for ``kind`` (``planner``, ``verifier``, ``executor``, ``goals``), sorted."""
    return tuple(sorted(_SCHEMAS[kind]))


def unknown_component(kind: str, name: str) -> UnknownNameError:
    """The error for a ``kind`` name that has no schema; names of the design not built yet say so."""
    label = COMPONENT_KINDS[kind]
    err = UnknownNameError(label, name, component_names(kind))
    if name in NOT_IMPLEMENTED.get(kind, ()):
        err.args = (f"{label} {name!r} is not implemented yet (a design placeholder, see docs/evaluation.md); "
                    f"known {label}s: {', '.join(component_names(kind))}",)
    return err


def schema_of(kind: str, name: str) -> type[ComponentConfig]:
    """The schema of ``<kind>=<name>``.

    Raises:
        UnknownNameError: no such name (the message lists the known names).
    """
    if name not in _SCHEMAS[kind]:
        raise unknown_component(kind, name)
    return _SCHEMAS[kind][name]


@component_schema("planner")
@dataclass
class OraclePlannerConfig(ComponentConfig):
    """``planner=oracle``: symbolic planner over the simulator's predicates (privileged)."""

    name: str = "oracle"


@component_schema("planner")
@dataclass
class InstructionPlannerConfig(ComponentConfig):
    """``planner=instruction``: the whole instruction as one subgoal (flat policies; non-privileged)."""

    name: str = "instruction"


def check_camera_calibration(calibration: dict[str, Any] | None) -> None:
    """Refuse a ``camera_calibration`` section that lacks one of its keys (None is allowed: no override).

    Raises:
        FieldError: naming the missing keys.
    """
    if calibration is not None:
        missing = [k for k in ("intrinsics", "world_from_camera", "image_size") if k not in calibration]
        if missing:
            raise FieldError("camera_calibration", f"lacks {missing} (needs intrinsics 3x3, world_from_camera 4x4, "
                                                   "image_size [H, W])")


#: ``planner=vlm planner.geometry`` values (the same as ``planner_vlm.vlm_planner.GEOMETRIES``; a unit test keeps
#: them equal without this module importing the planner).
VLM_GEOMETRIES: tuple[str, ...] = ("image", "learned", "pointing")


@dataclass
class VLMClientConfig(ComponentConfig):
    """Options of a VLM client (``planner_vlm.factory.make_vlm_client``), shared by the VLM planner and verifier.

    Attributes:
        backend: ``openai`` (any OpenAI-compatible server: vLLM, Ollama, SGLang), ``transformers`` (a local model
            directory) or ``scripted`` (replayed ``replies``, for tests).
        base_url, model, api_key_env: openai: server URL, served model name, and the NAME of the environment
            variable that holds the key (never the key itself).
        timeout_s, max_retries, backoff_s: openai: per request (s); retries on timeouts and 408/409/425/429/5xx;
            first backoff (s), doubled per retry.
        use_json_schema: send ``response_format=json_schema`` (dropped automatically if the server rejects it).
        model_path, device, dtype, seed: transformers: model directory; ``auto|cpu|cuda|cuda:N|mps``;
            ``auto|float32|float16|bfloat16``; sampling seed.
        replies: scripted: the replies, replayed in order (the last repeats).
        temperature, max_new_tokens: sampling (0 = greedy).
        prompt_version: ``planner_vlm/prompts/<plan|verify>_<version>.md``.
        memory_tokens: the prompt's budget for the task memory, in tokens (``MemoryView.to_text`` drops whole
            entries, least important first).
        cameras: cameras sent to the model (None: all cameras of the task).
        max_repairs: repair rounds after an unparseable reply, before the fallback.
    """

    backend: str = "openai"
    base_url: str | None = "http://127.0.0.1:8000/v1"
    model: str | None = "Qwen/Qwen2.5-VL-7B-Instruct"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = in_range(1.0, ge=0, unit="s")
    use_json_schema: bool = True
    model_path: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    seed: int = 0
    replies: list[str] = field(default_factory=list)
    temperature: float = 0.0
    max_new_tokens: int = 512
    prompt_version: str = "v1"
    cameras: list[str] | None = None
    max_repairs: int = 1
    memory_tokens: int = PLAN_MEMORY_TOKENS

    @override
    def check(self) -> None:
        if self.backend not in ("openai", "transformers", "scripted"):
            raise FieldError("backend", f"must be openai, transformers or scripted, got {self.backend!r}")
        if self.timeout_s <= 0:
            raise FieldError("timeout_s", f"must be > 0 s, got {self.timeout_s}")
        for name in ("max_retries", "max_repairs"):
            if getattr(self, name) < 0:
                raise FieldError(name, f"must be >= 0, got {getattr(self, name)}")
        for name in ("max_new_tokens", "memory_tokens"):
            if getattr(self, name) < 1:
                raise FieldError(name, f"must be >= 1, got {getattr(self, name)}")
        if self.temperature < 0:
            raise FieldError("temperature", f"must be >= 0, got {self.temperature}")


@component_schema("planner")
@dataclass
class VLMPlannerConfig(VLMClientConfig):
    """``planner=vlm`` (``planner_vlm.factory.make_vlm_planner``). Besides the client options:

    Attributes:
        trace_camera: the camera whose pixels the predicted keypoint trace is in.
        canonical_text: subgoal text = the task's wording of skill(args), not the model's free text.
        point_frame: the frame the model writes trace points in, converted to camera pixels
            (``planner_vlm.point_frames``): ``auto`` (by model name: Qwen2.5-VL the pixels of its processor's
            resized image, 128 px -> 140 px; Qwen2-VL / Qwen3-VL a 0-1000 grid; scripted camera pixels; any other
            model 0-1), or ``pixels``, ``resized_pixels``, ``grid1000``, ``unit``.
        point_frame_resize: ``resized_pixels`` only: the server's ``{factor, min_pixels, max_pixels}``.
        check_grounding: where a learned instruction grounder exists for the task (``grounder_checkpoint``, or the
            shipped ``checkpoints/grounder/<task>``), read the instruction with it too and record in memory where
            the VLM's first plan pursues other goals (``grounding_disagreement``); the VLM still decides.
        grounder_checkpoint: that grounder's checkpoint directory (None: the shipped one, where there is one).
        geometry: where the next subgoal's trace comes from: ``image`` (the model's own 2-D trace in
            ``trace_camera``'s pixels; no shipped executor follows one) or ``learned`` (the hybrid mode: the model
            decides the subgoals, and the learned state and trace models give the next one its 3-D trace in m, world
            frame, as ``planner=learned`` does: ``planner_vlm.learned.geometry.LearnedGeometry``; the env then renders
            the state model's camera, and its depth where the state checkpoint uses it) or ``pointing`` (the model
            points in ``trace_camera``'s image at the object to move and where it goes; tandem lifts the points to
            3-D with that camera's rendered depth and calibration and builds the trace from the task's skill waypoint
            geometry, the expert's: ``planner_vlm.pointing.PointingGeometry``; prompt ``plan_pointing``; the env
            renders ``trace_camera``'s depth). Recorded in the summary's ``planner_source`` (``vlm`` /
            ``vlm+learned_geometry`` / ``vlm+pointing``).
        state_checkpoint, trace_checkpoint: ``geometry=learned``: the state and trace model checkpoint directories
            (None: the shipped ``checkpoints/state/<task>`` and ``checkpoints/trace/<task>``).
        camera_calibration, torch_threads, use_depth: ``geometry=learned``: as ``LearnedPerceptionConfig``;
            ``camera_calibration`` is also the pointing camera's calibration for ``geometry=pointing`` (None in
            simulation: the simulator camera's).
    """

    name: str = "vlm"
    prompt_version: str = "v2"  # plan_v2 asks for the trace points in point_frame
    check_grounding: bool = True
    grounder_checkpoint: str | None = None
    trace_camera: str = "agentview"
    canonical_text: bool = True
    point_frame: str = "auto"
    point_frame_resize: dict[str, int] | None = None
    geometry: str = "image"
    state_checkpoint: str | None = None
    trace_checkpoint: str | None = None
    camera_calibration: dict[str, Any] | None = None
    torch_threads: int | None = 1
    use_depth: bool = True

    @override
    def check(self) -> None:
        super().check()
        if self.point_frame not in ("auto", "pixels", "resized_pixels", "grid1000", "unit"):
            raise FieldError("point_frame", "must be auto, pixels, resized_pixels, grid1000 or unit, got "
                                            f"{self.point_frame!r}")
        if self.geometry not in VLM_GEOMETRIES:
            raise FieldError("geometry", f"must be {' or '.join(VLM_GEOMETRIES)}, got {self.geometry!r}")
        if self.torch_threads is not None and self.torch_threads < 1:
            raise FieldError("torch_threads", f"must be >= 1 or null, got {self.torch_threads}")
        check_camera_calibration(self.camera_calibration)

    @property
    def learned_geometry(self) -> bool:
        """Whether the learned state and trace models give the subgoals their 3-D traces (``geometry=learned``)."""
        return self.geometry == "learned"

    @property
    def pointing(self) -> bool:
        """Whether the model's points, lifted with depth, give the subgoals their 3-D traces (``geometry=pointing``)."""
        return self.geometry == "pointing"


@dataclass
class LearnedPerceptionConfig(ComponentConfig):
    """What the learned planner and verifier share: the state model and the camera it reads.

    Attributes:
        state_checkpoint: a ``tandem-train-state`` checkpoint directory (None: the shipped
            ``checkpoints/state/<task>``).
        camera_calibration: the camera's calibration, overriding both the simulator camera's (injected in
            simulation) and the checkpoint's: ``{"intrinsics": 3x3 px, "world_from_camera": 4x4 (m, OpenCV axes),
            "image_size": [H, W], "camera": "agentview"}``; on a robot, its calibration routine's result.
        torch_threads: ``torch.set_num_threads`` at load (None: torch's default).
        use_depth: check the state model's 3-D reads against the camera's depth image (an RGB-D camera), where the
            state checkpoint has depth offsets (``scripts/fit_depth_offsets.py``) and the observation carries depth;
            in simulation the env then renders the camera's depth (``env.depth_cameras``). False: the image alone for
            the scene's reads (a learned planner's first-plan depth absent check still reads the depth where it
            runs: ``use_absent_thresholds``, ``support_z_m`` in the state checkpoint, no presence model).
    """

    state_checkpoint: str | None = None
    camera_calibration: dict[str, Any] | None = None
    torch_threads: int | None = 1
    use_depth: bool = True

    @override
    def check(self) -> None:
        wrong_type = non_numbers(self)
        if wrong_type:  # before the range checks (here and in subclasses), which would raise a TypeError on a string
            raise FieldError(*wrong_type[0])
        if self.torch_threads is not None and self.torch_threads < 1:
            raise FieldError("torch_threads", f"must be >= 1 or null, got {self.torch_threads}")
        check_camera_calibration(self.camera_calibration)


def check_positive_length(name: str, value: float | None) -> None:
    """Refuse a length field ``name`` (m) that is not finite and > 0 (None is allowed: the rule it sets is off).

    Raises:
        FieldError: naming ``name``.
    """
    if value is not None and not (math.isfinite(value) and value > 0):
        raise FieldError(name, f"must be a finite length > 0 m, or null (off), got {value}")


@component_schema("planner")
@dataclass
class LearnedPlannerConfig(LearnedPerceptionConfig):
    """``planner=learned`` (``planner_vlm.learned.learned_planner.LearnedPlanner``): the symbolic search over the
    predicates a learned state model reads off the agentview image, with learned 3-D traces. Non-privileged.

    Attributes:
        trace_checkpoint: a ``tandem-train-trace`` checkpoint directory (None: the shipped ``checkpoints/trace/<task>``).
        grounder_checkpoint: a ``tandem-train-grounder`` checkpoint directory (None: the shipped
            ``checkpoints/grounder/<task>``): the learned instruction grounder that turns the instruction's words into
            the goals this planner pursues (``planner_vlm.learned.grounder``).
        threshold: a predicate holds when its calibrated probability is at least this, in (0, 1).
        completion_confidence: the task is reported complete only when every goal predicate's probability is at least
            this, in [threshold, 1); goals that read true below it are planned again.
        min_object_confidence: at the first plan, an instruction object found with less confidence counts as absent
            (the instruction is refused), in [0, 1).
        use_absent_thresholds: at the first plan, an instruction object whose heatmap uncertainty is above the state
            checkpoint's absent threshold for it (``absent_uncertainty``, fitted by
            ``scripts/fit_absent_uncertainty.py``; :mod:`planner_vlm.learned.absence`) also counts as absent, and so
            does one whose read pixel shows, in the camera's depth, the bare surface the objects rest on, where the
            state checkpoint records it (``support_z_m``; the env then renders that camera's depth).
        presence_checkpoint: a presence model checkpoint directory (``scripts/train_presence.py``;
            ``planner_vlm.learned.presence_model``), None: the shipped ``checkpoints/presence/<task>`` where the task
            has one (pick_place_bins), else none. Under ``use_absent_thresholds``, at the first plan an instruction
            object it reads absent counts as absent; the env then renders its cameras (the wrist camera is read at
            the first plan only).
        use_presence: false: no presence model, even where one is shipped.
        min_scene_confidence: below this the scene is recorded as unlike the training scenes, in [0, 1].
        best_localized_first: where the task's goals may be met in any order, plan the object the state model
            localizes best first (its sharpest heatmap); false (the default) keeps the instruction's order. Measured
            per task (docs/results/non-privileged-high-level.md): on for pick_place_bins, where hidden objects are misread; off for nut_assembly.
        empty_grip_m: a gripper closed to less than this opening (m, the proprio's) holds nothing, whatever the
            state model reads (default: ``tandem.core.grasp_clearance.PANDA_EMPTY_OPENING_M``, 5 mm); None: off.
        max_close_offset_m: a pick trace whose close lands farther than this (m, xy, > 0) from its object as read
            is asked again from where the episode started (``LearnedPlanner``, step 4 of its docs); None: off.
        held_ray_m: after a verified pick of ``x``, a hand held apart by something holds ``x`` unless the state model
            locates ``x`` sharply with its camera ray farther than this (m, > 0) from the grip site
            (``planner_vlm.learned.hand_evidence``); None: off.
        wrist_limit_rad: the wrist joint's limit (rad, > 0; default the Panda's joint 7,
            ``tandem.core.wrist.PANDA_WRIST_LIMIT_RAD``): a pick's close whose turn would take the wrist past it
            (less 0.3 rad) is turned a half turn the other way, as the experts choose (``LearnedPlanner``, step 4
            of its docs); None: off.
        hidden_uncertainty: a pick whose object's heatmap uncertainty is above this (hidden, e.g. behind the arm) is
            planned from the object's last sharp read (``LearnedPlanner``, step 4 of its docs; default 0.5, chosen
            on the three tasks' validation seeds, README); None: off.
        grasp_prior_m, grasp_prior_deg: a pick's close farther than ``grasp_prior_m`` (m, xy, > 0) or turned more
            than ``grasp_prior_deg`` (deg, in (0, 90]) from its object's demonstrated grasp, where the trace
            checkpoint records one (``planner_vlm.learned.grasp_prior``), is moved onto it; ``grasp_prior_m`` None:
            off.
        geometric_picks: a pick of an object whose expert pick geometry the trace checkpoint records (nut_assembly's
            nuts, pick_place_bins' objects read upright; ``tandem.core.pick_geometry``) gets that
            geometry over the object as read instead of the trace model's trace (``LearnedPlanner``, step 4 of its
            docs); false: the trace model's for every pick.

    Raises (``check``):
        FieldError: a field that is not a number where one is needed, or out of its range.
    """

    name: str = "learned"
    trace_checkpoint: str | None = None
    grounder_checkpoint: str | None = None
    threshold: float = 0.5
    completion_confidence: float = 0.9
    min_object_confidence: float = 0.05
    use_absent_thresholds: bool = True
    presence_checkpoint: str | None = None
    use_presence: bool = True
    min_scene_confidence: float = 0.5
    best_localized_first: bool = False
    empty_grip_m: float | None = PANDA_EMPTY_OPENING_M
    max_close_offset_m: float | None = 0.03
    held_ray_m: float | None = 0.06  # planner_vlm.learned.hand_evidence.HELD_RAY_M
    wrist_limit_rad: float | None = PANDA_WRIST_LIMIT_RAD
    hidden_uncertainty: float | None = 0.5  # planner_vlm.learned.learned_planner.HIDDEN_UNCERTAINTY
    grasp_prior_m: float | None = 0.01  # planner_vlm.learned.learned_planner.GRASP_PRIOR_M
    grasp_prior_deg: float = 15.0  # planner_vlm.learned.learned_planner.GRASP_PRIOR_DEG
    geometric_picks: bool = True

    @override
    def check(self) -> None:
        super().check()
        if self.hidden_uncertainty is not None and not (math.isfinite(self.hidden_uncertainty)
                                                        and self.hidden_uncertainty > 0):
            raise FieldError("hidden_uncertainty", f"must be > 0 or null, got {self.hidden_uncertainty}")
        check_positive_length("max_close_offset_m", self.max_close_offset_m)
        check_positive_length("held_ray_m", self.held_ray_m)
        check_positive_length("grasp_prior_m", self.grasp_prior_m)
        if not (math.isfinite(self.grasp_prior_deg) and 0 < self.grasp_prior_deg <= 90):
            raise FieldError("grasp_prior_deg", f"must be in (0, 90] deg, got {self.grasp_prior_deg}")
        if self.wrist_limit_rad is not None and not (math.isfinite(self.wrist_limit_rad) and self.wrist_limit_rad > 0):
            raise FieldError("wrist_limit_rad", f"must be > 0 rad or null, got {self.wrist_limit_rad}")
        if self.empty_grip_m is not None and not 0.0 < self.empty_grip_m < 0.08:
            raise FieldError("empty_grip_m", f"must be in (0, 0.08) m (the Panda opens 8 cm) or null, got "
                                             f"{self.empty_grip_m}")
        if not 0.0 < self.threshold < 1.0:
            raise FieldError("threshold", f"must be in (0, 1), got {self.threshold}")
        if not self.threshold <= self.completion_confidence < 1.0:
            raise FieldError("completion_confidence",
                             f"must be in [threshold={self.threshold}, 1), got {self.completion_confidence}")
        if not 0.0 <= self.min_object_confidence < 1.0:
            raise FieldError("min_object_confidence", f"must be in [0, 1), got {self.min_object_confidence}")
        if not 0.0 <= self.min_scene_confidence <= 1.0:
            raise FieldError("min_scene_confidence", f"must be in [0, 1], got {self.min_scene_confidence}")


@component_schema("verifier")
@dataclass
class LearnedVerifierConfig(LearnedPerceptionConfig):
    """``verifier=learned`` (``planner_vlm.learned.learned_verifier.LearnedVerifier``): the state model applied to the
    observation after the subgoal, temperature-calibrated; verdicts less confident than ``confidence_threshold``
    (in (0.5, 1]) are uncertain and re-checked (``agent.verify_rechecks``); a pick whose object the hand holds is a
    success (``held_ray_m``, m, > 0, as ``LearnedPlannerConfig``; None: off). Non-privileged."""

    name: str = "learned"
    confidence_threshold: float = 0.9
    held_ray_m: float | None = 0.06  # planner_vlm.learned.hand_evidence.HELD_RAY_M

    @override
    def check(self) -> None:
        super().check()
        if not 0.5 < self.confidence_threshold <= 1.0:
            raise FieldError("confidence_threshold", f"must be in (0.5, 1], got {self.confidence_threshold}")
        check_positive_length("held_ray_m", self.held_ray_m)


@component_schema("verifier")
@dataclass
class OracleVerifierConfig(ComponentConfig):
    """``verifier=oracle``: subgoal predicates from the simulator (privileged)."""

    name: str = "oracle"


@component_schema("verifier")
@dataclass
class OracleTaskVerifierConfig(ComponentConfig):
    """``verifier=oracle_task``: the simulator's whole-task success flag (privileged; for ``planner=instruction``)."""

    name: str = "oracle_task"


@component_schema("verifier")
@dataclass
class VLMVerifierConfig(VLMClientConfig):
    """``verifier=vlm`` (``planner_vlm.factory.make_vlm_verifier``): judges each subgoal from before/after images,
    with the task memory as context (``verify_v2``)."""

    name: str = "vlm"
    max_new_tokens: int = 256
    prompt_version: str = "v2"  # verify_v2: with the task memory
    memory_tokens: int = VERIFY_MEMORY_TOKENS


@component_schema("executor")
@dataclass
class ScriptedExecutorConfig(ComponentConfig):
    """``executor=scripted``: the simulator's waypoint experts (privileged)."""

    name: str = "scripted"


@dataclass
class CheckpointExecutorConfig(ComponentConfig):
    """Wiring of an executor loaded from a checkpoint.

    Attributes:
        checkpoint: the checkpoint directory (None: the shipped one, where the executor has one); ``{task}`` in it is
            replaced by the task's name (``checkpoints/flat_state/{task}``: one checkpoint per task of a suite).
        device: torch device, e.g. ``cpu``, ``cuda``, ``cuda:1``.
        torch_threads: ``torch.set_num_threads`` at load (1 when several workers share a small CPU); None: default.
    """

    checkpoint: str | None = None
    device: str = "cpu"
    torch_threads: int | None = None

    @override
    def check(self) -> None:
        if self.torch_threads is not None and self.torch_threads < 1:
            raise FieldError("torch_threads", f"must be >= 1 or null, got {self.torch_threads}")
        if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", self.device):
            raise FieldError("device", f"must be cpu, cuda, cuda:N or mps, got {self.device!r}")


@component_schema("executor")
@dataclass
class LeRobotExecutorConfig(CheckpointExecutorConfig):
    """``executor=lerobot``: any LeRobot policy (a ``pretrained_model`` directory) behind the Executor protocol.

    Attributes:
        task_text: the ``task`` string given to the policy: ``subgoal`` (the active subgoal's text) or
            ``instruction``.
        camera_map: policy camera (the ``<cam>`` of ``observation.images.<cam>``) -> tandem camera.
    """

    name: str = "lerobot"
    task_text: str = "subgoal"
    camera_map: dict[str, str] = field(default_factory=dict)

    @override
    def check(self) -> None:
        super().check()
        if self.task_text not in ("subgoal", "instruction"):
            raise FieldError("task_text", f"must be subgoal or instruction, got {self.task_text!r}")


@component_schema("executor")
@dataclass
class OracleRemoteExecutorConfig(CheckpointExecutorConfig):
    """``executor.name=oracle_remote`` (bridge rehearsal only): the scripted expert's waypoints over the SIM-ONLY
    oracle side channel; ``checkpoint`` and ``device`` are unused."""

    name: str = "oracle_remote"


@dataclass
class TandemCheckpointWiring(CheckpointExecutorConfig):
    """Wiring of a tandem executor checkpoint (``executor=diffusion`` / ``track``), besides the checkpoint itself.

    Attributes:
        state_checkpoint: the learned state model (a ``tandem-train-state`` checkpoint directory) with which a track
            checkpoint trained with ``scene_input=objects_3d`` reads the objects' keypoints off the camera image at
            run time (None: the shipped ``checkpoints/state/<task>``); unused by other checkpoints.
        camera_calibration: that state model's camera calibration, as
            :attr:`LearnedPerceptionConfig.camera_calibration` (None: the simulator camera's, or the checkpoint's).
    """

    state_checkpoint: str | None = None
    camera_calibration: dict[str, Any] | None = None

    def check(self) -> None:
        super().check()
        check_camera_calibration(self.camera_calibration)


def _checkpoint_executor_config(name: str, network_cls: type, cls_name: str, doc: str) -> type[CheckpointExecutorConfig]:
    """``executor=<name>``: the wiring fields plus every field of ``network_cls`` (an executor_vla config dataclass)
    by name, typed ``Any``, default None = not set; ``network_cls`` validates them. The executor_vla config modules
    are plain Python (no torch)."""
    wiring = {f.name for f in dataclasses.fields(TandemCheckpointWiring)}
    network = [(f.name, Any, field(default=None)) for f in dataclasses.fields(network_cls)
               if f.init and f.name not in wiring]

    def network_fields(self: Any) -> dict[str, Any]:
        """The network config's fields set in this section (not None), by name."""
        return {n: getattr(self, n) for n, _, _ in network if getattr(self, n) is not None}

    cls = dataclasses.make_dataclass(cls_name, [("name", str, field(default=name)), *network],
                                     bases=(TandemCheckpointWiring,), namespace={"network_fields": network_fields})
    cls.__doc__ = doc
    cls.__module__ = __name__
    return cls


def _diffusion_executor_config() -> type[CheckpointExecutorConfig]:
    from executor_vla.config import ExecutorConfig

    return _checkpoint_executor_config(
        "diffusion", ExecutorConfig, "DiffusionExecutorConfig",
        "``executor=diffusion``: a tandem executor checkpoint of either family from ``checkpoint`` (None: the shipped "
        "``checkpoints/<task>_diffusion``, or ``<task>_flat`` under ``planner=instruction``), plus the network "
        "fields of ``executor_vla.config.ExecutorConfig`` (the image executor's training; see :meth:`network_fields`).")


def _track_executor_config() -> type[CheckpointExecutorConfig]:
    from executor_vla.track_config import TrackExecutorConfig

    return _checkpoint_executor_config(
        "track", TrackExecutorConfig, "TrackExecutorSection",
        "``executor=track``: the track executor's training config (the fields of "
        "``executor_vla.track_config.TrackExecutorConfig``), or a track checkpoint to run from ``checkpoint``.")


DiffusionExecutorConfig = component_schema("executor")(_diffusion_executor_config())
TrackExecutorSection = component_schema("executor")(_track_executor_config())


@component_schema("goals")
@dataclass
class NoGoalsConfig(ComponentConfig):
    """``goals=none``: no goal image or trace (text-only subgoals)."""

    name: str = "none"


@component_schema("goals")
@dataclass
class OracleGoalsConfig(ComponentConfig):
    """``goals=oracle``: teleport-render-restore goal images and projected expert traces (privileged).

    Attributes:
        camera: the camera whose image is the goal image and whose pixels the 2-D trace is in.
        goal_image: render a goal image per subgoal (needs a rendering env).
        trace: fill the 2-D keypoint trace (in ``camera``'s pixels).
        trace_3d: fill the 3-D trace (m, world frame, with yaw and gripper commands): what the track executor follows.
    """

    name: str = "oracle"
    camera: str = "agentview"
    goal_image: bool = True
    trace: bool = True
    trace_3d: bool = True


# ------------------------------------------------------------------------------------------- whole configs
def component(kind: str, default: str) -> Any:
    """A polymorphic section of kind ``kind`` (``planner``, ``verifier``, ``executor``, ``goals``): None until
    :func:`load` types it by its ``name`` (``default`` when the section is absent). Hydra fills it from the config
    group of the same name, whose options name their schema (``planner/vlm_schema``)."""
    return field(default=None, metadata={"component": kind, "default": default})


@dataclass
class StackConfig(Schema):
    """A whole stack: what :func:`tandem.runtime.registry.build_stack` builds. Component sections hold the schema
    their ``name`` selects (:func:`load` resolves them).

    Attributes:
        instruction: the user's instruction (``instruction="put the red cube on the blue cube"``); None: each seed's
            own. The scene is still drawn per seed; the judge reads its goals from these words, and refuses words
            the scene cannot satisfy before anything is built. Non-oracle planners ground the words themselves.
        instructions: without ``instruction``, how each seed's instruction is worded: ``seed`` (the task's template)
            or ``paraphrase`` (the held-out part of the phrasing grammar, drawn from the seed).
        oracle_truth_url: SIM-ONLY, PRIVILEGED: the ``base_url`` of an oracle-sim VLM server
            (``tandem-oracle-sim-vlm``, :mod:`tandem.runtime.oracle_sim_vlm`) to which the agent posts the
            simulator's truth before every control step, so that the server can answer ``planner=vlm`` and
            ``verifier=vlm`` with the oracle's plans, points and verdicts; the stack is then recorded as privileged
            (``oracle_components`` names the truth channel). None (the default): nothing is posted.
    """

    instruction: str | None = None
    instructions: str = "seed"
    oracle_truth_url: str | None = None
    task: TaskConfig = field(default_factory=TaskConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    planner: Any = component("planner", "oracle")
    verifier: Any = component("verifier", "oracle")
    executor: Any = component("executor", "scripted")
    goals: Any = component("goals", "none")
    perturb: PerturbConfig = field(default_factory=PerturbConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)

    @override
    def check(self) -> None:
        if self.instructions not in INSTRUCTION_STYLES:
            raise FieldError("instructions", f"must be one of {list(INSTRUCTION_STYLES)}, got {self.instructions!r}")
        if self.instruction is not None and not isinstance(self.instruction, str):
            raise FieldError("instruction", f"must be text, got {self.instruction!r}")
        if self.oracle_truth_url is not None and not (isinstance(self.oracle_truth_url, str)
                                                      and self.oracle_truth_url.startswith(("http://", "https://"))):
            raise FieldError("oracle_truth_url", f"must be an http(s) URL of an oracle-sim VLM server or null, got "
                                                 f"{self.oracle_truth_url!r}")


@dataclass
class DemoConfig(StackConfig):
    """``tandem-demo`` (``configs/demo.yaml``).

    Attributes:
        seed: episode seed, >= 0; default 5000, a held-out seed no shipped model was trained, validated or
            evaluated on (demonstrations are collected from seed 0, so a learned model would be shown a scene it
            trained on; configs/demo.yaml says which ranges are taken).
        video: write ``episode.mp4``.
        out_dir: where the video, ``episode.jsonl``, ``memory.jsonl``, ``memory.sqlite`` and ``summary.json`` go.
    """

    seed: int = 5000
    video: bool = True
    out_dir: str = "outputs/demo"

    @override
    def check(self) -> None:
        super().check()
        if self.seed < 0:
            raise FieldError("seed", f"must be >= 0, got {self.seed}")


@dataclass
class DartConfig(Schema):
    """``dart``: DART noise on executed actions (Laskey et al. 2017); the dataset keeps the clean action.

    Attributes:
        sigma: standard deviation in action units (the OSC action is in [-1, 1]); 0 = none.
        gripper: also perturb the gripper command.
    """

    sigma: float = in_range(0.0, ge=0)
    gripper: bool = False


@dataclass
class DatasetWriteConfig(Schema):
    """``dataset`` of ``tandem-collect``.

    Attributes:
        trace_len: K keypoints per trace.
        labels: record per-frame ground truth (the task's predicates, two keypoints per object in m and px).
        label_camera: the camera whose pixels the keypoint labels are in (one of ``env.cameras`` when rendering;
            ``agentview`` by default; e.g. ``workcell`` for pick_place_bins' state model).
        checkpoint_every: commit after every N episodes.
        image_threads: threads encoding PNGs while the simulator steps; 0 = inline.
    """

    trace_len: int = 16
    labels: bool = True
    label_camera: str = DEFAULT_LABEL_CAMERA
    checkpoint_every: int = 1
    image_threads: int = 0

    @override
    def check(self) -> None:
        if not self.label_camera:
            raise FieldError("label_camera", "must name a camera, got an empty string")
        if self.trace_len < 1:
            raise FieldError("trace_len", f"must be >= 1, got {self.trace_len}")
        if self.checkpoint_every < 1:
            raise FieldError("checkpoint_every", f"must be >= 1, got {self.checkpoint_every}")
        if self.image_threads < 0:
            raise FieldError("image_threads", f"must be >= 0, got {self.image_threads}")


@dataclass
class CollectConfig(StackConfig):
    """``tandem-collect`` (``configs/collect.yaml``).

    Attributes:
        episodes: target number of episodes in the dataset (existing ones count), >= 1.
        out: the dataset directory.
        repo_id: recorded in the dataset; never fetched.
        seed: first episode seed (later ones +1, +2, ...), >= 0; on resume, the dataset's recorded next seed where that
            is later (seeds never repeat within a dataset).
        resume: ``auto`` (create, or append to a dataset of the same schema), ``create`` or ``resume``.
        keep_failed: also save episodes whose task failed.
        max_tries: cap on episodes run (None: 3 x the episodes still needed).
        max_steps: control-step cap per episode (None: the task's).
        perturb_fraction: with ``perturb=<name>``, the fraction of episodes that get it, in [0, 1].
    """

    episodes: int = 10
    out: str = ""
    repo_id: str = "tandem/dataset"
    seed: int = 0
    resume: str = "auto"
    keep_failed: bool = False
    max_tries: int | None = None
    max_steps: int | None = None
    perturb_fraction: float = 1.0
    dart: DartConfig = field(default_factory=DartConfig)
    dataset: DatasetWriteConfig = field(default_factory=DatasetWriteConfig)

    @override
    def check(self) -> None:
        super().check()
        if self.episodes < 1:
            raise FieldError("episodes", f"must be >= 1, got {self.episodes}")
        if not self.out:
            raise FieldError("out", "must name the dataset directory (out=<dir>)")
        if self.seed < 0:
            raise FieldError("seed", f"must be >= 0, got {self.seed}")
        if self.resume not in ("auto", "create", "resume"):
            raise FieldError("resume", f"must be auto, create or resume, got {self.resume!r}")
        for name in ("max_tries", "max_steps"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise FieldError(name, f"must be >= 1 or null, got {v}")
        if not 0.0 <= self.perturb_fraction <= 1.0:
            raise FieldError("perturb_fraction", f"must be in [0, 1], got {self.perturb_fraction}")


@dataclass
class SimRobotConfig(Schema):
    """``sim_robot``: the simulated robot PC of a bridge rehearsal (``tandem-sim-robot``).

    Attributes:
        task: the task it simulates. seed: its episode seed, >= 0.
        goals_limit: the judge keeps only the first n goals of its reading of the bridge's instruction (a short
            rehearsal; a shorter instruction does the same); None: all.
        command_timeout_s: hold still when no twist came for this long (s).
        duration_s: stop after this long (s); None: until Ctrl-C.
        publish_for_s: stop publishing after this long (s; rehearses a dead driver); None: never.
    """

    task: str = "stack_three"
    seed: int = 0
    goals_limit: int | None = None
    command_timeout_s: float = 0.25
    duration_s: float | None = in_range(None, gt=0, unit="s")
    publish_for_s: float | None = in_range(None, gt=0, unit="s")

    @override
    def check(self) -> None:
        if self.seed < 0:
            raise FieldError("seed", f"must be >= 0, got {self.seed}")
        if self.goals_limit is not None and self.goals_limit < 1:
            raise FieldError("goals_limit", f"must be >= 1 or null, got {self.goals_limit}")
        if self.command_timeout_s <= 0:
            raise FieldError("command_timeout_s", f"must be > 0 s, got {self.command_timeout_s}")


@dataclass
class BridgeRunConfig(Schema):
    """``tandem-bridge`` and ``tandem-sim-robot`` (``configs/bridge/*.yaml``).

    Attributes:
        planner, verifier, executor: the agent's components.
        goals: the goal producer: only ``none`` builds on a robot (nothing to render); present so that a planner's
            config option that selects it (``planner=learned`` selects ``goals=none``) composes here too.
        agent: the loop's budgets. memory: the task memory's lessons and retry rules.
        episodes: episodes to run, >= 1. seed: first episode seed, >= 0. out_dir: artefacts.
        bridge: the robot side (``bridge.config.BridgeConfig``: transport, topics, action mapping, safety, the task
            and its cell vocabulary), validated by ``bridge.config.bridge_config_from_dict``.
        sim_robot: the simulated robot of a rehearsal.
        instruction: the first episode's instruction (``tandem-bridge instruction="..."``); None:
            ``bridge.task.instruction``. An empty one waits for a message on ``bridge.topics.instruction``.
        wait_for_instruction: every episode waits for its instruction on ``bridge.topics.instruction``
            (``std_msgs/String``), one episode per message; False: the first episode runs ``instruction`` and each
            later one (``episodes`` > 1) waits for a message.
        instruction_timeout_s: how long (s) to wait for an instruction message; None: until one arrives (Ctrl-C).
    """

    planner: Any = component("planner", "oracle")
    verifier: Any = component("verifier", "oracle")
    executor: Any = component("executor", "oracle_remote")
    goals: Any = component("goals", "none")
    agent: AgentConfig = field(default_factory=AgentConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    episodes: int = 1
    seed: int = 0
    out_dir: str = "outputs/bridge"
    bridge: dict[str, Any] = field(default_factory=dict)
    sim_robot: SimRobotConfig = field(default_factory=SimRobotConfig)
    instruction: str | None = None
    wait_for_instruction: bool = False
    instruction_timeout_s: float | None = None

    @override
    def check(self) -> None:
        super().check()
        if self.episodes < 1:
            raise FieldError("episodes", f"must be >= 1, got {self.episodes}")
        if self.instruction_timeout_s is not None and not self.instruction_timeout_s > 0:
            raise FieldError("instruction_timeout_s", f"must be > 0 s or null, got {self.instruction_timeout_s}")
        if self.seed < 0:
            raise FieldError("seed", f"must be >= 0, got {self.seed}")
        from bridge.config import bridge_config_from_dict

        try:
            bridge_config_from_dict(self.bridge)
        except ConfigError as e:
            raise _bridge_field_error(e) from e


def _bridge_field_error(error: ConfigError) -> FieldError:
    """``bridge.config``'s one-line error (keys named within the bridge section: ``rate_hz must be ...``,
    ``action.space=...``) as the error of the ``bridge`` section, naming the full key (``bridge.rate_hz``)."""
    from bridge.config import BridgeConfig

    text = str(error).removeprefix("bridge.")
    first = re.match(r"[a-z_][a-z0-9_]*", text)
    if first and first.group(0) in {f.name for f in dataclasses.fields(BridgeConfig)}:
        return FieldError("", f"bridge.{text}")
    return FieldError("bridge", f"is invalid: {error}")


def check_fields(cls: type, values: Mapping[str, Any]) -> None:
    """Check ``values`` (keyword arguments for the dataclass ``cls``, e.g. a CLI section holding the fields of a
    component's own config) by ``cls``'s number fields and their declared ranges, before ``cls`` is built, so that
    the error names the key (:func:`tandem.core.number_fields.field_faults`).

    Raises:
        FieldError: the first fault, naming the field.
    """
    for key, message in field_faults(cls, values):
        raise FieldError(key, message)


# ------------------------------------------------------------------------------------------- loading
def _node_dict(node: Any) -> Any:
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(node, (DictConfig, ListConfig)):  # a mandatory '???' left unset raises, naming its key
        return OmegaConf.to_container(node, resolve=True, throw_on_missing=True)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return {f.name: _node_dict(getattr(node, f.name)) for f in dataclasses.fields(node)}
    if isinstance(node, Mapping):
        return {k: _node_dict(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_node_dict(v) for v in node]
    return node


def _resolve_components(schema: type[Schema], data: dict[str, Any], path: str) -> dict[str, Any]:
    """Type each polymorphic section (:func:`component`) by the schema its ``name`` selects."""
    for f in dataclasses.fields(schema):
        kind = f.metadata.get("component")
        if kind is None:
            continue
        where = f"{path}{f.name}"
        section = data.get(f.name)
        if section is None:
            section = {"name": f.metadata["default"]}
        elif isinstance(section, str):
            section = {"name": section}
        elif isinstance(section, Mapping) and "name" not in section:  # options of the default variant
            section = {**section, "name": f.metadata["default"]}
        if not isinstance(section, Mapping) or not section.get("name"):
            raise ConfigError(f"{where} must be a name or a mapping with a 'name', got {section!r}")
        data[f.name] = _merge_typed(schema_of(kind, str(section["name"])), dict(section), where)
    return data


def _merge_typed(schema: type[Schema], data: Any, path: str) -> Any:
    """An OmegaConf node of ``schema`` with ``data`` merged in; unknown keys and wrong types raise ConfigError."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not isinstance(data, Mapping):
        raise ConfigError(f"{path.rstrip('.') or 'config'} must be a mapping, got {data!r}")
    data = _resolve_components(schema, dict(data), f"{path}." if path else "")
    try:
        with deferred_checks():
            return OmegaConf.merge(OmegaConf.structured(schema), data)
    except OmegaConfBaseException as e:
        key = ".".join(p for p in (path, getattr(e, "full_key", "") or "") if p)
        msg = str(e).splitlines()[0]
        if type(e).__name__ == "ConfigKeyError":
            owner = getattr(e, "object_type", None) or schema  # the schema the key is missing from
            names = sorted(f.name for f in dataclasses.fields(owner)) if dataclasses.is_dataclass(owner) else []
            parent, _, leaf = key.rpartition(".")
            raise ConfigError(f"unknown config key {key}; known keys of {parent or 'the config'}: "
                              f"{', '.join(names) or '?'}{did_you_mean(leaf, names)}") from e
        raise ConfigError(f"config key {key}: {msg}") from e


def load[S: Schema](schema: type[S], data: Any, path: str = "") -> S:
    """``data`` (a plain dict, an OmegaConf node or a schema instance) as a checked instance of ``schema``.

    Component sections are typed by their ``name`` (see the module docstring); missing keys take the schema's
    defaults.

    Args:
        schema: e.g. :class:`StackConfig`, :class:`DemoConfig`, :class:`VLMPlannerConfig`.
        data: the config.
        path: the section's key in the whole config, for messages (e.g. ``"planner"``).

    Raises:
        ConfigError: an unknown key, a wrong type or a refused value (a NaN or infinite number anywhere, a number outside
            the range its field declares: :func:`tandem.core.number_fields.check_numbers`); the message names the full
            key.
        UnknownNameError: a component ``name`` that is not registered (the message lists the known names).
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        plain = _node_dict(data)
    except OmegaConfBaseException as e:
        key = ".".join(p for p in (path, getattr(e, "full_key", "") or "") if p)
        if type(e).__name__ == "MissingMandatoryValue":
            raise ConfigError(f"config key {key} is mandatory (??? in the YAML): set it, e.g. {key}=<value>") from e
        raise ConfigError(f"config key {key}: {str(e).splitlines()[0]}") from e
    node = _merge_typed(schema, plain, path)
    try:
        with deferred_checks():
            obj = OmegaConf.to_object(node)
    except OmegaConfBaseException as e:
        key = ".".join(p for p in (path, getattr(e, "full_key", "") or "") if p)
        raise ConfigError(f"config key {key}: {str(e).splitlines()[0]}") from e
    check_numbers(obj, path)  # before the schemas' own checks, whose comparisons a NaN would pass
    for where, sub in _walk(obj, path):
        try:
            sub.check()
        except FieldError as e:
            key = ".".join(p for p in (where, e.field) if p)
            raise ConfigError(f"{key} {e.message}" if key else e.message) from e
    return obj  # type: ignore[return-value]


def _walk(obj: Any, path: str) -> Iterator[tuple[str, Schema]]:
    """Every schema instance in ``obj`` with its key, outermost first."""
    if isinstance(obj, Schema):
        yield path, obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _walk(getattr(obj, f.name), f"{path}.{f.name}" if path else f.name)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")


def to_dict(cfg: Any) -> dict[str, Any]:
    """A schema instance (or any config) as plain JSON-safe dicts and lists, e.g. for ``summary.json``."""
    return _node_dict(cfg)


def register_configs() -> None:
    """Store the schemas in Hydra's ConfigStore: the whole-config schemas as ``<name>_schema`` (``demo_schema``,
    ``collect_schema``, ``bridge_schema``) and every registered component schema as ``<group>/<name>_schema``
    (``planner/vlm_schema``). The YAML files under ``configs/`` name them first in their defaults list."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    with deferred_checks():
        cs.store(name="demo_schema", node=DemoConfig)
        cs.store(name="collect_schema", node=CollectConfig)
        cs.store(name="bridge_schema", node=BridgeRunConfig)
        for kind, schemas in _SCHEMAS.items():
            for name, schema in schemas.items():
                cs.store(group=kind, name=f"{name}_schema", node=schema)


__all__ = [
    "COMPONENT_KINDS", "NOT_IMPLEMENTED", "AgentConfig", "BridgeRunConfig", "CheckpointExecutorConfig", "CollectConfig", "ComponentConfig", "DartConfig",
    "DatasetWriteConfig", "DemoConfig", "DiffusionExecutorConfig", "EnvConfig", "FieldError", "TrackExecutorSection",
    "InstructionPlannerConfig", "LearnedPerceptionConfig", "LearnedPlannerConfig", "LearnedVerifierConfig",
    "LeRobotExecutorConfig", "MemoryConfig", "NoGoalsConfig", "OracleGoalsConfig",
    "OraclePlannerConfig", "OracleRemoteExecutorConfig", "OracleTaskVerifierConfig", "OracleVerifierConfig",
    "PerturbConfig", "Schema", "ScriptedExecutorConfig", "SimRobotConfig", "StackConfig", "TaskConfig",
    "VLMClientConfig", "VLMPlannerConfig", "VLMVerifierConfig", "component", "component_names", "component_schema",
    "deferred_checks", "load", "register_configs", "schema_of", "to_dict", "unknown_component",
]
