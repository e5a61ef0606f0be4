"""``VLMPlanner``: a vision-language model as the high-level planner (receding horizon, LoHo-Manip style).

Each call to :meth:`VLMPlanner.plan` shows the model the task (instruction, skill vocabulary,
object and target names), the camera images, the task memory (done, remaining, failures with their reasons,
object facts: :meth:`tandem.core.memory_view.MemoryView.to_text` within ``memory_tokens``) and the output JSON schema, and asks for a done/remaining split with
the keypoint trace of the next subgoal (Goal2Skill's structured memory + LoHo-Manip's
done/remaining + trace output). After a verifier failure the agent calls it again; the failure is
in the memory view and stated as ``LAST FAILURE`` in the prompt.

Robustness: the reply goes through the strict parser (:func:`planner_vlm.plan_parser.parse_plan`).
On a :class:`~tandem.core.errors.PlanParseError` the planner does ``max_repairs`` repair rounds (the
model sees its reply and the error); if those fail too, or the client fails
(:class:`~planner_vlm.clients.base.VLMClientError`), it falls back to the current plan (empty at the
first call) and records a ``vlm_fallback`` event. It never raises on model output.

Logging: every model exchange is recorded with ``memory.record_event("vlm_exchange", step, ...)``:
prompt text (images as camera name + shape, never pixels), raw reply, parse result or error,
latency (s) and backend metadata.

Geometry (``planner.geometry``): ``image`` (the default) keeps the model's own 2-D trace of the next subgoal, in
``trace_camera``'s pixels. ``learned`` (the hybrid mode) lets the model decide the subgoals only: the next subgoal
(``remaining[0]``, of a parsed plan or of a fallback's kept plan) gets its 3-D trace ``trace_3d`` (``(K, 3)`` m,
world frame, with yaw and gripper commands: what the track executors follow) from the learned state and trace
models, as ``planner=learned`` gives its subgoals theirs (:class:`~planner_vlm.learned.geometry.LearnedGeometry`),
and that trace projected into the state model's camera replaces the model's 2-D one. :attr:`VLMPlanner.source` then
says ``"vlm+learned_geometry"``. ``pointing``: the model's ``next_trace`` holds points on the objects of
``remaining[0]`` (prompt ``plan_pointing``), which :class:`~planner_vlm.pointing.PointingGeometry` lifts to 3-D with
the camera's depth and turns into the task's expert waypoint trace; the source is ``"vlm+pointing"``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Protocol

from planner_vlm.clients.base import ChatMessage, ImagePart, TextPart, VLMClient, VLMClientError
from planner_vlm.exchange_log import exchange_record
from planner_vlm.plan_parser import DEFAULT_MAX_CHARS, parse_plan
from planner_vlm.plan_schema import plan_json_schema
from planner_vlm.point_frames import PointFrame
from planner_vlm.prompting import (
    PLAN_MEMORY_TOKENS,
    failure_note,
    memory_block,
    names_block,
    observation_images,
    skills_block,
)
from planner_vlm.prompts import load_prompt
from tandem.core.errors import ConfigError, PlanParseError
from tandem.core.evidence import GoalRead, GoalReading, predicate_args
from tandem.core.grounding import Grounding
from tandem.core.memory_view import MemoryView
from tandem.core.protocols import TaskMemory
from tandem.core.types import Observation, Plan, Subgoal, TaskSpec
from tandem.core.vocabulary import goals_equal

#: Characters of a bad reply echoed back to the model in a repair round.
REPAIR_ECHO_CHARS = 4000
#: With a geometry: how many more times the model is asked when its reply could not be used and the kept plan's next
#: subgoal cannot be traced without it (the pointing mode's points are the model's, and stale in a kept plan).
UNTRACED_FALLBACK_RETRIES = 2
#: ``planner.geometry`` values: where the next subgoal's trace comes from.
GEOMETRIES = ("image", "learned", "pointing")


class SubgoalGeometry(Protocol):
    """What the hybrid mode needs of its geometry (:class:`~planner_vlm.learned.geometry.LearnedGeometry`)."""

    is_oracle: bool
    #: What gives the traces, recorded in the planner's source (``vlm+<source>``): ``learned_geometry``, ``pointing``.
    source: str

    def reset(self) -> None:
        """Forget the episode."""
        ...

    def check_task(self, task: TaskSpec) -> None:
        """Refuse a task whose subgoals it cannot trace (ConfigError)."""
        ...

    def fill(self, subgoal: Subgoal, observation: Observation, memory: TaskMemory | None = None) -> Subgoal:
        """``subgoal`` with its 3-D trace (and the trace projected into the camera) for ``observation``."""
        ...


class VLMPlanner:
    """A :class:`~tandem.core.protocols.Planner` backed by any :class:`~planner_vlm.clients.base.VLMClient`.

    Args:
        client: the model backend (transformers, OpenAI-compatible server, or scripted).
        task: the task; may be given later through :meth:`reset`.
        prompt_version: which ``planner_vlm/prompts/plan_<version>.md`` to use.
        trace_camera: the camera whose pixels the trace is in; must be one of ``task.cameras``.
        cameras: cameras whose images are sent (default: every camera of the task present in the
            observation, in ``task.cameras`` order).
        max_repairs: repair rounds after an unparseable reply (the issue asks for 1).
        canonical_text: use ``task.subgoal_text`` as subgoal text instead of the model's wording.
        use_schema: pass the task's JSON schema to the client (enforced by servers that support it).
        max_new_tokens, temperature: per-call overrides for the client (None: client defaults).
        max_chars: longest reply the parser accepts.
        memory_tokens: the prompt's budget for the task memory, in tokens (``MemoryView.to_text``: whole
            entries are dropped, least important first).
        point_frame: the frame the model writes trace points in (None: the one the client declares for its
            model, ``client.point_frame``). The prompt (``plan_v2``) asks for it, and the parser converts the points
            to camera pixels.
        geometry: None (``planner.geometry=image``: the model's 2-D trace), or the hybrid mode's geometry, a
            non-oracle :class:`SubgoalGeometry` (a :class:`~planner_vlm.learned.geometry.LearnedGeometry`) that gives
            the next subgoal its 3-D trace (see the module docstring).

    Attributes:
        source: ``"vlm"``, or ``"vlm+learned_geometry"`` / ``"vlm+pointing"`` with a geometry (recorded with each plan in memory and in
            the episode summary's ``planner_source``).
        current: the last successfully parsed plan, or None.
        last_fallback: whether the last :meth:`plan` call fell back (no usable model output); the plan it returned
            then has ``Plan.fallback=True``, which is what the agent reads.
        fallbacks: number of fallbacks since :meth:`reset`.
        exchanges: every exchange record since :meth:`reset` (the same dicts as the ``vlm_exchange`` events).

    Raises:
        ConfigError: a geometry that is an oracle; from :meth:`reset` if ``trace_camera`` is not a camera of the
            task, or the geometry cannot trace the task's subgoals.
    """

    #: False: it sees camera images, proprio and memory only, never ``Observation.privileged``.
    is_oracle: ClassVar[bool] = False
    grounding: Grounding | None = None

    def __init__(
        self,
        client: VLMClient,
        task: TaskSpec | None = None,
        *,
        prompt_version: str = "v2",
        trace_camera: str = "agentview",
        cameras: list[str] | tuple[str, ...] | None = None,
        max_repairs: int = 1,
        canonical_text: bool = True,
        use_schema: bool = True,
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        memory_tokens: int = PLAN_MEMORY_TOKENS,
        point_frame: PointFrame | None = None,
        grounder: Any = None,
        geometry: SubgoalGeometry | None = None,
    ):
        if geometry is not None and geometry.is_oracle:
            raise ConfigError("the VLM planner is not an oracle: its geometry must not read the simulator's truth")
        self.geometry = geometry
        self.client = client
        self.grounder = grounder
        self.reference: Grounding | None = None  # the grounder's reading of the instruction, that plans are checked by
        self._read_goals = False
        self.point_frame = point_frame or client.point_frame
        self.prompt = load_prompt("plan", prompt_version)
        self.repair_prompt = load_prompt("repair", prompt_version)
        self.trace_camera = trace_camera
        self.cameras = list(cameras) if cameras else None
        self.max_repairs = int(max_repairs)
        self.canonical_text = canonical_text
        self.use_schema = use_schema
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.max_chars = int(max_chars)
        if memory_tokens < 1:
            raise ConfigError(f"memory_tokens must be >= 1, got {memory_tokens}")
        self.memory_tokens = int(memory_tokens)
        self.task: TaskSpec | None = None
        self.current: Plan | None = None
        self.exchanges: list[dict[str, Any]] = []
        self._plan_step: int = -1
        self._plan_attempts: dict[str, Any] = {}
        self.fallbacks = 0
        self.last_fallback = False
        self._next_id = 0
        if task is not None:
            self.reset(task)

    @property
    def source(self) -> str:
        """``"vlm"``, or ``"vlm+<geometry.source>"`` where a geometry gives the subgoals their 3-D traces
        (``vlm+learned_geometry``, ``vlm+pointing``)."""
        return "vlm" if self.geometry is None else f"vlm+{self.geometry.source}"

    def reset(self, task: TaskSpec) -> None:
        """Start an episode of ``task``: forget the current plan and the subgoal id counter.

        Raises:
            ConfigError: if ``trace_camera`` is not in ``task.cameras``, or the geometry cannot trace the task's
                subgoals (a trace checkpoint of another task).
        """
        if self.trace_camera not in task.cameras:
            raise ConfigError(f"planner.trace_camera={self.trace_camera!r} is not a camera of task "
                              f"{task.name!r}; cameras: {list(task.cameras)}")
        if self.geometry is not None:
            self.geometry.check_task(task)
            self.geometry.reset()
        self.task = task
        self.current = None
        self.reference = self.grounder.ground(task.instruction) if self.grounder is not None else None
        self.grounding = Grounding(  # until a plan is parsed: the VLM has read no goals yet
            instruction=task.instruction, goals=(), ordered=True, confidence=0.0, grounded_by="vlm",
            details={"plan": "none parsed yet",
                     **({"grounder": self.reference.to_json()} if self.reference is not None else {})})
        self._read_goals = False
        self.exchanges = []
        self.fallbacks = 0
        self.last_fallback = False
        self._next_id = 0
        self._plan_step, self._plan_attempts = -1, {}  # the current plan's step and the memory's attempts then

    # ------------------------------------------------------------------ prompt
    def build_messages(self, observation: Observation, view: MemoryView | Mapping[str, Any] | None) -> list[ChatMessage]:
        """The system + user messages of a plan request (user text first, then one labelled image per camera).

        ``view`` (a :class:`~tandem.core.memory_view.MemoryView`, or a ``TaskMemory.view()`` dict) goes into the
        prompt as ``view.to_text(memory_tokens)``.

        Raises:
            ConfigError: if a requested camera is missing from the observation.
        """
        task = self._task()
        cams = self.cameras or [c for c in task.cameras if c in observation.images]
        images = observation_images(observation, cams)
        H, W = self.point_frame.model_image_size(task.image_size)  # what the model sees (Qwen2.5-VL: resized)
        system, user = self.prompt.render(
            instruction=task.instruction,
            skills=skills_block(task),
            objects=names_block(task),
            targets=names_block(task, places=True),
            n_images=len(images),
            camera_list=", ".join(cams),
            width=W,
            height=H,
            memory=memory_block(view, self.memory_tokens),
            failure_note=failure_note(view),
            trace_camera=self.trace_camera,
            trace_frame=self.point_frame.describe(task.image_size),
            schema=self._schema_text(),
        )
        parts: list[TextPart | ImagePart] = [TextPart(user)]
        for img in images:
            parts += [TextPart(f"\nCamera {img.label}:"), img]
        return [ChatMessage.text("system", system), ChatMessage(role="user", parts=parts)]

    def _schema(self) -> dict[str, Any]:
        return plan_json_schema(self._task(), self.trace_camera, self.point_frame)

    def _schema_text(self) -> str:
        import json

        return json.dumps(self._schema(), separators=(",", ":"))

    # ------------------------------------------------------------------ planning
    def plan(self, observation: Observation, memory: TaskMemory | None) -> Plan:
        """Ask the model for the current done/remaining plan (see the module docstring).

        Args:
            observation: current observation; its images (``uint8 (H, W, 3)``) are sent.
            memory: task memory; its view goes into the prompt (``MemoryView.to_text``) and every exchange is recorded in it.

        Returns:
            The parsed plan (``remaining[0].trace`` set when the model gave a trace; with a geometry,
            ``remaining[0].trace_3d`` and ``.trace`` from it), or the current plan (possibly empty) with a
            ``fallback`` rationale.

        Raises:
            ConfigError: for setup errors only (no task, camera missing from the observation).
        """
        plan = self._with_geometry(self._model_plan(observation, memory), observation, memory)
        for _ in range(UNTRACED_FALLBACK_RETRIES):  # a kept plan the geometry cannot trace: ask the model again
            if not (plan.fallback and self.geometry is not None and plan.remaining
                    and plan.remaining[0].trace_3d is None):
                break
            plan = self._with_geometry(self._model_plan(observation, memory), observation, memory)
        return plan

    def _with_geometry(self, plan: Plan, observation: Observation, memory: TaskMemory | None) -> Plan:
        """``plan`` with its next subgoal traced by the geometry (unchanged without one, or with nothing remaining)."""
        if self.geometry is None or not plan.remaining:
            return plan
        plan.remaining[0] = self.geometry.fill(plan.remaining[0], observation, memory)
        return plan

    def _model_plan(self, observation: Observation, memory: TaskMemory | None) -> Plan:
        """The model's plan for ``observation``, or the fallback (see :meth:`plan`)."""
        task = self._task()
        step = int(observation.step)
        view = _safe_view(memory)
        messages = self.build_messages(observation, view)
        schema = self._schema() if self.use_schema else None
        reason = ""
        for rnd in range(1 + max(0, self.max_repairs)):
            try:
                reply = self.client.generate(messages, json_schema=schema, schema_name="tandem_plan",
                                             max_new_tokens=self.max_new_tokens, temperature=self.temperature)
            except VLMClientError as e:
                reason = f"VLM client error: {e}"
                self._log(memory, step, rnd, messages, None, {"ok": False, "error": reason}, None)
                break
            try:
                plan = parse_plan(reply.text, task, trace_camera=self.trace_camera,
                                  canonical_text=self.canonical_text, max_chars=self.max_chars,
                                  point_frame=self.point_frame)
            except PlanParseError as e:
                reason = e.reason
                self._log(memory, step, rnd, messages, reply, {"ok": False, "error": reason}, None)
                messages = [*messages, ChatMessage.text("assistant", reply.text[:REPAIR_ECHO_CHARS]),
                            ChatMessage.text("user", self.repair_prompt.render(
                                error=reason, schema=self._schema_text())[1])]
                continue
            self._assign_ids(plan)
            self._log(memory, step, rnd, messages, reply, {"ok": True}, plan)
            self._check_goals(plan, memory, step)
            self.current = plan
            self._plan_step, self._plan_attempts = step, dict(view.attempts)
            self.last_fallback = False
            return plan
        return self._fallback(memory, step, reason)

    def read_goals(self, observation: Observation, memory: TaskMemory | None) -> GoalReading | None:
        """The model's fresh read of the goals: it is asked for a plan on ``observation`` again (:meth:`plan`, one
        model call, recorded like every exchange), and every goal of its grounding holds, confidently, and every goal
        object is present (it sees them in their goal places) exactly when that plan claims the task complete. None
        before the model has grounded any goal (no parsed plan yet).

        Raises:
            ConfigError: as :meth:`plan`.
        """
        if self.grounding is None or not self.grounding.goals:
            return None
        complete = self.plan(observation, memory).claims_complete
        task = self._task()
        goals = self.grounding.goals
        objects = tuple(dict.fromkeys(a for g in goals for a in predicate_args(g) if a in task.objects))
        absent = () if complete else tuple((o, "the model's plan does not claim the task complete") for o in objects)
        return GoalReading(step=int(observation.step), source=self.source, checked_objects=objects, absent=absent,
                           goals=tuple(GoalRead(g, complete, complete, float(complete)) for g in goals))

    def _check_goals(self, plan: Plan, memory: TaskMemory | None, step: int) -> None:
        """Read the goals the first parsed plan pursues (its goal skills' predicates, in order) as the VLM's grounding
        of the instruction; where a grounder read the words too (:attr:`reference`), record whether they agree and,
        when they do not, a ``grounding_disagreement`` event naming both readings."""
        if self._read_goals:
            return
        self._read_goals = True
        task = self._task()
        vocab = task.vocabulary
        goal_skills = vocab.goal_skills if vocab is not None else tuple(s for s in task.skills if s != "pick")
        goals = tuple(dict.fromkeys(task.predicate_for(sg.skill, sg.args) for sg in [*plan.done, *plan.remaining]
                                    if sg.skill in goal_skills))
        details: dict[str, Any] = {}
        if self.reference is not None:
            ref = self.reference
            agrees = ref.ok and (goals_equal(vocab, goals, ref.goals, ref.ordered) if vocab is not None
                                 else goals == tuple(ref.goals))
            details = {"checked_against": ref.grounded_by, "agrees": bool(agrees)}
            if not agrees and memory is not None:
                memory.record_event("grounding_disagreement", step, vlm=list(goals), grounder=ref.to_json())
        self.grounding = Grounding(instruction=task.instruction, goals=goals, ordered=True, confidence=1.0,
                                   grounded_by="vlm", details=details)

    def _fallback(self, memory: TaskMemory | None, step: int, reason: str) -> Plan:
        """The current plan kept, advanced past the leading subgoals verified successful since it was made (the
        memory view's ``attempts`` grew and ``last_outcome`` is ``success``: without that, a fallback right after a
        success would run the same subgoal again); with a geometry, the next subgoal's 2-D trace is dropped when the
        plan was made on an earlier observation (the model's points of then are stale: the geometry traces it from
        the current observation, or says it cannot)."""
        self.fallbacks += 1
        self.last_fallback = True
        kept = self.current or Plan()
        done, remaining = list(kept.done), list(kept.remaining)
        view = _safe_view(memory)
        outcomes, attempts = dict(view.last_outcome), dict(view.attempts)
        advanced = []
        while remaining and outcomes.get(remaining[0].signature) == "success" and int(
                attempts.get(remaining[0].signature, 0)) > int(self._plan_attempts.get(remaining[0].signature, 0)):
            advanced.append(remaining[0].signature)
            done.append(remaining.pop(0))
        if self.geometry is not None and remaining and step != self._plan_step:
            remaining[0] = replace(remaining[0], trace=None, trace_3d=None)
        plan = Plan(done=done, remaining=remaining,
                    rationale=f"fallback (kept the current plan): {reason}"[:2000], fallback=True)
        if memory is not None:
            memory.record_event("vlm_fallback", step, component="planner", reason=reason,
                                kept_plan=plan.to_json(), had_plan=self.current is not None, advanced=advanced)
        return plan

    def _assign_ids(self, plan: Plan) -> None:
        """Give each subgoal an episode-unique id, reusing the id of the same signature in the current plan."""
        old: dict[str, list[str]] = defaultdict(list)
        if self.current is not None:
            for sg in [*self.current.done, *self.current.remaining]:
                old[sg.signature].append(sg.id)
        for sg in [*plan.done, *plan.remaining]:
            if old[sg.signature]:
                sg.id = old[sg.signature].pop(0)
            else:
                sg.id = f"vlm{self._next_id}"
                self._next_id += 1

    def _log(self, memory: TaskMemory | None, step: int, rnd: int, messages: list[ChatMessage], reply: Any,
             parse: dict[str, Any], plan: Plan | None) -> None:
        row = exchange_record("planner", self.client, self.prompt, rnd, messages, reply, parse)
        row["plan"] = None if plan is None else plan.to_json()
        self.exchanges.append(row)
        if memory is not None:
            memory.record_event("vlm_exchange", step, **row)

    def _task(self) -> TaskSpec:
        if self.task is None:
            raise ConfigError("VLMPlanner has no task: call reset(task) first")
        return self.task


def _safe_view(memory: TaskMemory | None) -> MemoryView:
    """The memory's view (an empty one without a memory)."""
    return MemoryView() if memory is None else MemoryView.from_dict(memory.view())

