"""The data types that flow between planner, memory, executor, verifier and env.

numpy only (torch stays inside ``executor_vla``). Conventions used everywhere:

* Images: ``uint8 (H, W, 3)`` RGB, upright, origin at the top-left, x right, y down.
* Positions in metres in the **world frame** of the simulator (robot base frame on a real robot).
* Quaternions are **wxyz** (scalar first), as in MuJoCo.
* Times in seconds.
* Pixel coordinates are ``(x, y)`` = (column, row), floats, in the camera's native resolution.

This module imports nothing from the project; it raises plain ``ValueError`` on malformed data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from tandem.core.vocabulary import TaskVocabulary

#: Layout of ``Observation.proprio`` in simulation and in datasets (D = 8).
PROPRIO_LAYOUT: tuple[str, ...] = ("eef_x", "eef_y", "eef_z", "eef_qw", "eef_qx", "eef_qy", "eef_qz", "gripper_m")

#: Layout of the robosuite OSC_POSE action (A = 7): delta position (scaled to [-1, 1]),
#: delta axis-angle (scaled to [-1, 1]), gripper (-1 open, +1 close).
OSC_ACTION_LAYOUT: tuple[str, ...] = ("dx", "dy", "dz", "dax", "day", "daz", "gripper")

VerdictSource = Literal["oracle", "vlm", "learned"]
ActionSpace = Literal["eef_delta", "joint_pos", "eef_twist"]


def check_image(name: str, img: Any) -> None:
    """Raise ``ValueError`` naming the camera unless ``img`` is an ``uint8 (H, W, 3)`` array."""
    if not (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3):
        raise ValueError(f"Observation.images[{name!r}] must be uint8 (H, W, 3), got "
                         f"{getattr(img, 'dtype', type(img))} {getattr(img, 'shape', '')}")


def check_depth(name: str, depth: Any) -> None:
    """Raise ``ValueError`` naming the camera unless ``depth`` is a ``float32 (H, W)`` array of depths (m, > 0, NaN
    where the sensor has no return)."""
    if not (isinstance(depth, np.ndarray) and depth.dtype == np.float32 and depth.ndim == 2):
        raise ValueError(f"Observation.depth[{name!r}] must be float32 (H, W) m, got "
                         f"{getattr(depth, 'dtype', type(depth))} {getattr(depth, 'shape', '')}")
    if np.any(depth[np.isfinite(depth)] <= 0):
        raise ValueError(f"Observation.depth[{name!r}] has depths <= 0 m (use NaN for no return)")


@dataclass
class Observation:
    """One observation of the world.

    Attributes:
        images: camera name -> ``uint8 (H, W, 3)`` RGB, upright, origin top-left: a ``dict``, or in simulation a
            :class:`tandem.core.lazy_images.LazyImages` that renders a camera when it is first read.
        proprio: ``float32 (D,)``; in sim D = 8 laid out as :data:`PROPRIO_LAYOUT`:
            end-effector position (m, world frame), end-effector quaternion (wxyz),
            gripper opening (m, distance between the fingers).
        t: time since episode start (s).
        privileged: simulator-only ground truth (object poses, predicate values). The simulator
            sets it; a real robot never does. Only components named ``oracle`` may read it.
        step: control step index since reset.
        joints: ``float32 (J,)`` the arm's joint angles (rad, base to wrist: the Panda's joint 1..7, so
            ``joints[-1]`` is the wrist), as the robot reports them (robosuite's ``robot0_joint_pos``, the bridge's
            ``/joint_states``); None where they are not known. Not privileged: a real arm reports them.
        depth: camera name -> ``float32 (H, W)`` depth image (m, along the camera's optical axis, NaN: no return),
            upright, origin top-left, pixel-aligned with ``images[camera]`` (an RGB-D camera; robosuite renders it):
            a ``dict``, or in simulation a :class:`tandem.core.lazy_images.LazyImages`; None where no camera gives
            depth. Not privileged: a real RGB-D camera measures it.

    Raises:
        ValueError: a ``proprio`` that is not 1-D, ``joints`` that are not 1-D and finite, or a depth image that is
            not ``float32 (H, W)`` with positive depths (the message names the field).
    """

    images: dict[str, np.ndarray]
    proprio: np.ndarray
    t: float = 0.0
    privileged: dict[str, Any] | None = None
    step: int = 0
    joints: np.ndarray | None = None
    depth: Mapping[str, np.ndarray] | None = None

    def __post_init__(self) -> None:
        if not getattr(self.images, "validates_on_read", False):  # tandem.core.lazy_images.LazyImages checks on read
            for name, img in self.images.items():
                check_image(name, img)
        if self.depth is not None and not getattr(self.depth, "validates_on_read", False):
            for name, d in self.depth.items():
                check_depth(name, d)
        self.proprio = np.asarray(self.proprio, dtype=np.float32)
        if self.proprio.ndim != 1:
            raise ValueError(f"Observation.proprio must be 1-D (D,), got shape {self.proprio.shape}")
        if self.joints is not None:
            self.joints = np.asarray(self.joints, dtype=np.float32)
            if self.joints.ndim != 1 or not len(self.joints) or not np.all(np.isfinite(self.joints)):
                raise ValueError(f"Observation.joints must be a finite 1-D (J,) array of rad, got {self.joints!r}")


@dataclass(frozen=True)
class TaskSpec:
    """What a task asks for, symbolically. No simulator state.

    Attributes:
        name: registry name, e.g. ``"stack_three"``.
        instruction: the natural-language instruction given to the planner.
        objects: object names the planner may refer to, e.g. ``("red", "green", "blue")``.
        max_steps: control-step budget for the whole episode.
        skills: skill name -> predicate template that is true once the skill succeeded,
            with ``{0}``, ``{1}`` standing for the subgoal's args, e.g. ``{"stack": "on({0},{1})"}``.
        goals: ordered goal predicates whose conjunction is task success, e.g.
            ``("on(red,green)", "on(blue,red)")``: the judge's reading of the instruction. They belong to the judge
            (the env's success check and oracle components): the runtime withholds them from every other component
            (:func:`tandem.core.privileged.task_for`), which must ground the instruction itself.
        targets: non-graspable places the planner may refer to (bins, pegs).
        skill_texts: skill name -> text template with ``{0}``, ``{1}`` for the args, e.g.
            ``{"stack": "stack the {0} cube on the {1} cube"}``; used to word subgoals.
        cameras: camera names the env renders, e.g. ``("agentview", "wrist")``.
        image_size: ``(H, W)`` in px of every camera.
        control_dt: seconds per control step.
        vocabulary: the task's declared vocabulary (:class:`tandem.core.vocabulary.TaskVocabulary`): what the
            instruction may name, the skills, places and impossibility rules; None where none is declared.
        arg_words: object or place name -> the words a subgoal text uses for it, e.g.
            ``{"alphabet_soup_1": "alphabet soup"}`` (LIBERO's instance names); a name without an entry is written
            as it is.
    """

    name: str
    instruction: str
    objects: tuple[str, ...]
    max_steps: int
    skills: dict[str, str] = field(default_factory=dict)
    goals: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    skill_texts: dict[str, str] = field(default_factory=dict)
    cameras: tuple[str, ...] = ("agentview", "wrist")
    image_size: tuple[int, int] = (128, 128)
    control_dt: float = 0.05
    vocabulary: TaskVocabulary | None = None
    arg_words: dict[str, str] = field(default_factory=dict)

    def predicate_for(self, skill: str, args: tuple[str, ...] | list[str]) -> str:
        """Ground predicate string that is true once ``skill(*args)`` succeeded.

        Raises:
            KeyError: if ``skill`` is not one of ``self.skills`` (message names the known skills).
        """
        if skill not in self.skills:
            raise KeyError(f"skill {skill!r} not in task {self.name!r}; known: {sorted(self.skills)}")
        return self.skills[skill].format(*args)

    def subgoal_text(self, skill: str, args: tuple[str, ...] | list[str]) -> str:
        """Natural-language text of ``skill(*args)`` from ``skill_texts`` (falls back to ``"skill a b"``), each arg in
        its :attr:`arg_words`."""
        words = [self.arg_words.get(a, a) for a in args]
        template = self.skill_texts.get(skill)
        return template.format(*words) if template else " ".join([skill, *words])


@dataclass
class KeypointTrace:
    """A 2-D path the gripper should follow, in the pixels of one camera.

    Attributes:
        camera: camera name, e.g. ``"agentview"``.
        points: ``float32 (K, 2)`` pixel coordinates ``(x, y)``, x right, y down, origin at the
            top-left of that camera's image at its native resolution; ordered start -> end.
        image_size: ``(H, W)`` in px of that camera; all points lie in ``[0, W) x [0, H)``.
    """

    camera: str
    points: np.ndarray
    image_size: tuple[int, int] = (128, 128)

    def __post_init__(self) -> None:
        self.points = np.asarray(self.points, dtype=np.float32)
        if self.points.ndim != 2 or self.points.shape[1] != 2 or len(self.points) == 0:
            raise ValueError(f"KeypointTrace.points must be (K, 2) with K >= 1, got {self.points.shape}")
        if not np.all(np.isfinite(self.points)):
            raise ValueError("KeypointTrace.points contains NaN or inf")

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ``{"camera", "points", "image_size"}`` (points in px, rounded to 0.01)."""
        return {"camera": self.camera, "points": self.points.round(2).tolist(), "image_size": list(self.image_size)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KeypointTrace:
        """The trace of a :meth:`to_json` dict."""
        return cls(camera=d["camera"], points=np.asarray(d["points"], np.float32), image_size=tuple(d["image_size"]))


@dataclass
class Trace3D:
    """The subgoal's path for the gripper in 3-D: LoHo-Manip's keypoint trace lifted off the image plane.

    One camera's 2-D trace confuses height with depth, and a stack must land within about 2 cm, so the executor is
    given the trace in metres, with the gripper's yaw and open/close command at each point (the orientation a
    2-D trace cannot say: cube yaw, nut handles, elongated objects). A :class:`KeypointTrace` is its projection
    into one camera.

    Attributes:
        points: ``float32 (K, 3)`` grip-site positions in m, world frame (robot base frame on a real robot),
            ordered start -> end; ``K >= 1``.
        yaw: ``float32 (K,)`` rad, yaw about world +z of the gripper's finger axis (the grip site's x axis) at
            each point, with the gripper pointing down. Continuous along the trace (not wrapped), so the turn
            between consecutive points, and its direction, is ``yaw[k+1] - yaw[k]``.
        gripper: ``float32 (K,)`` gripper command at each point: -1 open, +1 closed (robosuite's convention).
        frame: name of the frame of ``points`` (``"world"``).

    Raises:
        ValueError: wrong shapes, lengths that disagree, non-finite values or a gripper value outside [-1, 1].
    """

    points: np.ndarray
    yaw: np.ndarray
    gripper: np.ndarray
    frame: str = "world"

    def __post_init__(self) -> None:
        self.points = np.asarray(self.points, dtype=np.float32)
        self.yaw = np.asarray(self.yaw, dtype=np.float32).reshape(-1)
        self.gripper = np.asarray(self.gripper, dtype=np.float32).reshape(-1)
        k = len(self.points)
        if self.points.ndim != 2 or self.points.shape[1] != 3 or k == 0:
            raise ValueError(f"Trace3D.points must be (K, 3) with K >= 1, got {self.points.shape}")
        if self.yaw.shape != (k,) or self.gripper.shape != (k,):
            raise ValueError(f"Trace3D.yaw and .gripper must be ({k},), got {self.yaw.shape} and {self.gripper.shape}")
        for name, arr in (("points", self.points), ("yaw", self.yaw), ("gripper", self.gripper)):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"Trace3D.{name} contains NaN or inf")
        if np.any(np.abs(self.gripper) > 1.0):
            raise ValueError(f"Trace3D.gripper must be in [-1, 1], got {self.gripper.tolist()}")

    def __len__(self) -> int:
        return len(self.points)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ``{"points", "yaw", "gripper", "frame"}`` (m and rad, rounded to 1e-4)."""
        return {"points": self.points.round(4).tolist(), "yaw": self.yaw.round(4).tolist(),
                "gripper": self.gripper.tolist(), "frame": self.frame}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Trace3D:
        """The trace of a :meth:`to_json` dict (``frame`` defaults to ``world``)."""
        return cls(points=np.asarray(d["points"], np.float32), yaw=np.asarray(d["yaw"], np.float32),
                   gripper=np.asarray(d["gripper"], np.float32), frame=d.get("frame", "world"))


@dataclass
class Subgoal:
    """One step of a plan: a skill applied to named objects.

    Attributes:
        id: unique within an episode, e.g. ``"sg3"``.
        skill: skill name, one of the task's ``TaskSpec.skills`` (``pick``, ``place``, ``stack``, ``insert``).
        args: object/target names, e.g. ``("red", "green")``.
        text: natural-language description, e.g. ``"stack the red cube on the green cube"``.
        goal_image: ``uint8 (H, W, 3)`` image of the world once the subgoal is achieved (agentview),
            or None until a GoalProducer fills it.
        trace: 2-D path of the gripper in a named camera, or None.
        trace_3d: the same path in 3-D with yaw and gripper commands (:class:`Trace3D`), or None.
    """

    id: str
    skill: str
    args: tuple[str, ...]
    text: str
    goal_image: np.ndarray | None = None
    trace: KeypointTrace | None = None
    trace_3d: Trace3D | None = None

    def __post_init__(self) -> None:
        self.args = tuple(self.args)
        if self.goal_image is not None and (self.goal_image.dtype != np.uint8 or self.goal_image.ndim != 3):
            raise ValueError(f"Subgoal.goal_image must be uint8 (H, W, 3), got {self.goal_image.dtype} {self.goal_image.shape}")

    @property
    def signature(self) -> str:
        """``skill(arg1,arg2)``: identifies the subgoal's meaning independent of its id."""
        return f"{self.skill}({','.join(self.args)})"

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict (the goal image is summarised by its shape, not stored)."""
        return {
            "id": self.id,
            "skill": self.skill,
            "args": list(self.args),
            "text": self.text,
            "goal_image": None if self.goal_image is None else list(self.goal_image.shape),
            "trace": None if self.trace is None else self.trace.to_json(),
            "trace_3d": None if self.trace_3d is None else self.trace_3d.to_json(),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Subgoal:
        """The subgoal of a :meth:`to_json` dict (traces included; the goal image is not serialised)."""
        trace, trace_3d = d.get("trace"), d.get("trace_3d")
        return cls(id=d["id"], skill=d["skill"], args=tuple(d["args"]), text=d["text"],
                   trace=None if trace is None else KeypointTrace.from_json(trace),
                   trace_3d=None if trace_3d is None else Trace3D.from_json(trace_3d))


@dataclass
class Plan:
    """A done/remaining split of the task (LoHo-Manip style).

    The plan claims the task is complete only when :attr:`claims_complete` holds: nothing remains, something was
    done, and it is not a fallback. An empty plan (nothing done, nothing remaining) never claims completion, so a
    planner that fails and returns ``Plan()`` cannot end an episode as a claimed success.

    Attributes:
        done: subgoals already achieved, in order.
        remaining: subgoals still to do, in order; ``remaining[0]`` is the next one.
        rationale: free text from the planner (for logs; never executed).
        fallback: the planner could not make a new plan (e.g. its model gave no usable output) and this is what it
            fell back to (e.g. its previous plan). The agent may execute a fallback's ``remaining`` subgoals but
            never takes a fallback as the end of the task.
    """

    done: list[Subgoal] = field(default_factory=list)
    remaining: list[Subgoal] = field(default_factory=list)
    rationale: str = ""
    fallback: bool = False

    @property
    def next(self) -> Subgoal | None:
        """The subgoal to run next (``remaining[0]``), or None when nothing remains."""
        return self.remaining[0] if self.remaining else None

    @property
    def claims_complete(self) -> bool:
        """Whether the plan says the task is achieved: ``done`` non-empty, ``remaining`` empty, not a fallback."""
        return bool(self.done) and not self.remaining and not self.fallback

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ``{"done", "remaining", "rationale", "fallback"}``."""
        return {"done": [s.to_json() for s in self.done], "remaining": [s.to_json() for s in self.remaining],
                "rationale": self.rationale, "fallback": bool(self.fallback)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Plan:
        """The plan of a :meth:`to_json` dict."""
        return cls(done=[Subgoal.from_json(s) for s in d["done"]],
                   remaining=[Subgoal.from_json(s) for s in d["remaining"]], rationale=d.get("rationale", ""),
                   fallback=bool(d.get("fallback", False)))


@dataclass(frozen=True)
class Verdict:
    """The verifier's decision on one subgoal.

    Attributes:
        success: whether the subgoal was achieved.
        confidence: in [0, 1].
        reason: short human-readable reason (recorded in memory and shown to a replanning VLM).
        source: ``"oracle"`` (simulator predicates), ``"vlm"`` or ``"learned"``.
        uncertain: the verifier could not decide with enough confidence (a calibrated verifier whose confidence is
            below its threshold). The agent does not take an uncertain verdict as final: it keeps the subgoal
            active for a few more control steps and verifies again (``AgentConfig.verify_rechecks``); an uncertain
            verdict left after the re-checks counts as a failure, never as success.
    """

    success: bool
    confidence: float
    reason: str
    source: VerdictSource
    uncertain: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.confidence) <= 1.0:
            raise ValueError(f"Verdict.confidence must be in [0, 1], got {self.confidence}")

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ``{"success", "confidence", "reason", "source", "uncertain"}``."""
        return {"success": bool(self.success), "confidence": float(self.confidence), "reason": self.reason,
                "source": self.source, "uncertain": bool(self.uncertain)}


@dataclass(frozen=True)
class RetryPolicy:
    """How the agent should execute one attempt at a subgoal, as decided by task memory (its lessons).

    Attributes:
        speed_scale: in (0, 1]; the agent multiplies every action component but the last (the gripper, see
            :data:`OSC_ACTION_LAYOUT`) by it, so a delta-action executor moves slower (1 = unchanged).
        reason: why, for logs and the attempt record (e.g. ``"2 slips of stack(red,blue) in this episode"``).
    """

    speed_scale: float = 1.0
    reason: str = ""

    def __post_init__(self) -> None:
        if not 0.0 < float(self.speed_scale) <= 1.0:
            raise ValueError(f"RetryPolicy.speed_scale must be in (0, 1], got {self.speed_scale}")

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ``{"speed_scale", "reason"}``."""
        return {"speed_scale": float(self.speed_scale), "reason": self.reason}


@dataclass
class ActionChunk:
    """A sequence of actions to execute open-loop.

    Attributes:
        actions: ``float32 (H, A)``; for ``space="eef_delta"`` A = 7 laid out as :data:`OSC_ACTION_LAYOUT`.
        dt: seconds between consecutive actions.
        space: ``"eef_delta"`` (robosuite OSC_POSE delta), ``"joint_pos"`` or ``"eef_twist"``.
    """

    actions: np.ndarray
    dt: float = 0.05
    space: ActionSpace = "eef_delta"

    def __post_init__(self) -> None:
        self.actions = np.asarray(self.actions, dtype=np.float32)
        if self.actions.ndim != 2:
            raise ValueError(f"ActionChunk.actions must be (H, A), got {self.actions.shape}")
        if not np.all(np.isfinite(self.actions)):
            raise ValueError("ActionChunk.actions contains NaN or inf")


def to_jsonable(x: Any) -> Any:
    """Convert a value to plain JSON types: numpy arrays/scalars -> lists/numbers, tuples/sets -> lists,
    objects with ``to_json()`` -> their JSON, dict keys -> str, non-finite floats and anything else JSON
    cannot encode (paths, enums, ...) -> ``str()``, so a log line is always writable and strictly valid JSON.
    """
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist())
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return to_jsonable(x.item())
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in x]
    if hasattr(x, "to_json"):
        return to_jsonable(x.to_json())
    return str(x)


@dataclass
class EpisodeLog:
    """Everything that happened in one episode, replayable from disk.

    Attributes:
        steps: one row per control step: ``{"step", "t", "subgoal_id", "action": (A,), "proprio": (D,)}``.
        events: one row per plan, verdict, replan, perturbation or error: ``{"kind", "step", ...}``.
        meta: task name, seed, instruction, config.
    """

    steps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def add_step(self, **row: Any) -> None:
        """Append one control step's row (made JSON-safe)."""
        self.steps.append(to_jsonable(row))

    def add_event(self, kind: str, step: int, **data: Any) -> None:
        """Append a ``kind`` event (plan, verdict, replan, ...) at ``step`` with JSON-safe ``data``."""
        self.events.append({"kind": kind, "step": int(step), **to_jsonable(data)})

    def save_jsonl(self, path: str | Path) -> Path:
        """Write one JSON object per line: a ``meta`` line, then steps and events in step order.

        Returns the path written.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"type": "meta", **to_jsonable(self.meta)}]
        merged = [(r["step"], 0, {"type": "step", **r}) for r in self.steps]
        merged += [(e["step"], 1, {"type": "event", **e}) for e in self.events]
        rows += [r for _, _, r in sorted(merged, key=lambda x: (x[0], x[1]))]
        with path.open("w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        return path

    @classmethod
    def load_jsonl(cls, path: str | Path) -> EpisodeLog:
        """Inverse of :meth:`save_jsonl`.

        Raises:
            ValueError: on a line that is not JSON or has an unknown ``type`` (message names the line).
        """
        log = cls()
        for i, line in enumerate(Path(path).read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{i}: not JSON ({e})") from e
            kind = row.pop("type", None)
            if kind == "meta":
                log.meta = row
            elif kind == "step":
                log.steps.append(row)
            elif kind == "event":
                log.events.append(row)
            else:
                raise ValueError(f"{path}:{i}: unknown row type {kind!r}")
        return log
