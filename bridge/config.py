"""The bridge configuration: topics, message types, frames, rates, action mapping, safety limits.

Loaded from a YAML file or a Hydra ``DictConfig`` (``configs/bridge/*.yaml``); nothing about a
particular robot lives in code. :func:`load_bridge_config` validates every key and raises
:class:`tandem.core.errors.ConfigError` naming the bad or unknown key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from bridge.joint_states import joint_freshness_keys
from bridge.safety import SafetyLimits
from tandem.core.errors import ConfigError
from tandem.core.number_fields import check_own_numbers, field_faults, in_range
from tandem.core.vocabulary import TaskVocabulary

TRANSPORTS = ("dds", "rclpy", "inprocess")
ACTION_SPACES = ("eef_delta", "joint_pos")
GRIPPER_MODES = ("topic", "action", "none")


@dataclass(frozen=True)
class CameraTopic:
    """One camera: ``image`` topic (sensor_msgs/Image), optional ``info`` topic (CameraInfo)."""

    image: str
    info: str | None = None
    frame_id: str = ""


@dataclass(frozen=True)
class Topics:
    """ROS 2 topic names (without the DDS ``rt/`` prefix; the DDS transport adds it).

    Attributes:
        cameras: tandem camera name (e.g. ``"agentview"``) -> its topics.
        joint_states: sensor_msgs/JointState (joint_state_broadcaster's ``/joint_states``).
        eef_pose: geometry_msgs/PoseStamped of the end effector in the base frame.
        twist_cmd: geometry_msgs/TwistStamped out, MoveIt Servo's Cartesian command topic (eef_delta).
        joint_trajectory_cmd: trajectory_msgs/JointTrajectory out, a joint_trajectory_controller (joint_pos).
        gripper_cmd: control_msgs/msg/GripperCommand topic (gripper.mode=topic) or the
            control_msgs/action/GripperCommand action name (gripper.mode=action, rclpy only).
        estop: std_msgs/Bool in; ``true`` latches the stop.
        estop_reset: std_msgs/Bool in; ``true`` releases the latch (an explicit operator action).
        oracle_privileged: std_msgs/String in, JSON; SIM-ONLY oracle side channel (see README).
        instruction: std_msgs/String in (RELIABLE): the user's instruction; each message received starts one episode
            (queued in arrival order) where the bridge waits for one (``docs/ros2-bridge.md``).
    """

    cameras: dict[str, CameraTopic] = field(default_factory=dict)
    joint_states: str = "/joint_states"
    eef_pose: str | None = None
    twist_cmd: str | None = None
    joint_trajectory_cmd: str | None = None
    gripper_cmd: str | None = None
    estop: str = "/tandem/estop"
    estop_reset: str = "/tandem/estop_reset"
    oracle_privileged: str | None = None
    instruction: str = "/tandem/instruction"


@dataclass(frozen=True)
class ActionMapping:
    """How a tandem action ``(A,)`` becomes a robot command.

    ``eef_delta`` (A = 7, robosuite OSC layout, each in [-1, 1]): linear velocity (m/s) =
    ``a[0:3] * linear_scale_mps``; angular (rad/s) = ``a[3:6] * angular_scale_radps``, both in the
    base frame; gripper ``a[6]`` (-1 open, +1 close) maps linearly to a width between
    ``gripper_open_width_m`` and ``gripper_closed_width_m``.
    ``joint_pos`` (A = J + 1): ``a[:J]`` are joint targets (rad) for ``arm_joints``; ``a[J]`` the gripper.
    In every space, ``arm_joints`` (base to wrist) are also read from the joint-state topic into
    ``Observation.joints`` (rad) once each was received (None before that, or with no ``arm_joints``); the learned
    planner turns a pick's close a half turn the other way where the wrist has no room for it (:func:`tandem.core.wrist.resolve_yaw`).

    The measured gripper width (m) is ``gripper_joint_scale * sum(q[gripper_joints]) + gripper_joint_offset``
    (Franka: two finger joints of width / 2 each in m, scale 1; Robotiq 2F-85 knuckle in rad: 0 open, 0.7929
    closed, scale -0.085 / 0.7929, offset 0.085). The gripper command's ``position`` is
    ``gripper_command_scale * width + gripper_command_offset`` in the driver's units: franka_gripper's
    GripperCommand action takes HALF the finger gap (``gripper_action_server.cpp``: ``target_width = 2 *
    command.position``), scale 0.5; a Robotiq GripperActionController takes the knuckle angle in rad, scale
    -0.7929 / 0.085, offset 0.7929. ``gripper_command_limits`` is the driver's accepted range of ``position``
    (franka: [0, max_width / 2]); the open and closed widths must map inside it. The safety layer checks the width
    in metres before this. A new gripper command is sent only when the width moved by more than
    ``gripper_deadband_m`` (m) from the last one sent, so a continuous policy output does not preempt the gripper
    action every step.

    Raises:
        ConfigError: a non-positive scale or force, open and closed widths that are equal (or closed > open), a
            zero command or joint scale, or an open/closed command outside ``gripper_command_limits``; the message
            names the key.
    """

    space: str = "eef_delta"
    linear_scale_mps: float = 0.1
    angular_scale_radps: float = 0.5
    gripper_open_width_m: float = 0.08
    gripper_closed_width_m: float = 0.0
    gripper_effort_n: float = 20.0
    arm_joints: tuple[str, ...] = ()
    gripper_joints: tuple[str, ...] = ()
    gripper_joint_scale: float = 1.0
    gripper_joint_offset: float = 0.0
    gripper_command_scale: float = 1.0
    gripper_command_offset: float = 0.0
    gripper_command_limits: tuple[float, float] | None = None
    gripper_deadband_m: float = 0.002

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
        errs = []
        for name in ("linear_scale_mps", "angular_scale_radps", "gripper_effort_n"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                errs.append(f"action.{name} must be a positive number, got {v!r}")
        o, c = self.gripper_open_width_m, self.gripper_closed_width_m
        if not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in (o, c)):
            errs.append(f"action.gripper_open_width_m / gripper_closed_width_m must be >= 0 m, got {o!r} / {c!r}")
        elif not o > c:
            errs.append(f"action.gripper_open_width_m ({o} m) must be greater than gripper_closed_width_m ({c} m)")
        for name in ("gripper_joint_scale", "gripper_command_scale"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v != 0):
                errs.append(f"action.{name} must be a non-zero number, got {v!r}")
        if not self.gripper_deadband_m >= 0:
            errs.append(f"action.gripper_deadband_m must be >= 0 m, got {self.gripper_deadband_m!r}")
        lim = self.gripper_command_limits
        if lim is not None:
            if len(lim) != 2 or not lim[0] < lim[1]:
                errs.append(f"action.gripper_command_limits must be [low, high] with low < high, got {lim!r}")
            elif not errs:
                for what, width in (("open", o), ("closed", c)):
                    cmd = self.gripper_command(width)
                    if not lim[0] - 1e-9 <= cmd <= lim[1] + 1e-9:
                        errs.append(f"action.gripper_{what}_width_m {width} m maps to gripper command {cmd:.4g} "
                                    f"(gripper_command_scale {self.gripper_command_scale} x width + "
                                    f"gripper_command_offset {self.gripper_command_offset}), outside the driver's "
                                    f"gripper_command_limits {list(lim)}")
        if errs:
            raise ConfigError("; ".join(errs))

    def gripper_command(self, width_m: float) -> float:
        """Finger gap (m) -> the gripper driver's ``position`` (its units, see the class docstring)."""
        return self.gripper_command_scale * float(width_m) + self.gripper_command_offset

    def gripper_width_from_command(self, position: float) -> float:
        """Inverse of :meth:`gripper_command`: a driver ``position`` -> finger gap (m)."""
        return (float(position) - self.gripper_command_offset) / self.gripper_command_scale

    def gripper_width_from_joints(self, joint_positions: np.ndarray) -> float:
        """Finger gap (m) from the positions of ``gripper_joints`` (rad or m)."""
        return float(self.gripper_joint_scale * np.sum(joint_positions) + self.gripper_joint_offset)

    def gripper_joint_position(self, width_m: float) -> float:
        """Inverse of :meth:`gripper_width_from_joints` when every gripper joint has the same position."""
        return (float(width_m) - self.gripper_joint_offset) / self.gripper_joint_scale / max(len(self.gripper_joints), 1)


#: The project root: relative cell-file paths not found from the working directory are looked up here.
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def resolve_cell_path(path: str | Path) -> Path:
    """A cell (vocabulary) file's path: absolute as given; relative, from the working directory if it is there, else
    from :data:`PROJECT_ROOT` (so ``configs/bridge/cells/stack_three.yaml`` works from any directory).

    Raises:
        ConfigError: no such file (names both places looked in).
    """
    p = Path(path).expanduser()
    if p.is_absolute():
        candidates = [p]
    else:
        candidates = [Path.cwd() / p, PROJECT_ROOT / p]
    for c in candidates:
        if c.is_file():
            return c
    raise ConfigError(f"bridge.task.vocabulary: no cell file {str(path)!r} (looked in "
                      f"{' and '.join(str(c.parent) for c in candidates)})")


def load_cell_vocabulary(value: Any) -> TaskVocabulary | None:
    """``task.vocabulary`` -> a :class:`TaskVocabulary`: a path to a YAML/JSON file in its form (a cell file,
    ``configs/bridge/cells/*.yaml``), an inline mapping of the same keys, a vocabulary, or None (none declared).

    Raises:
        ConfigError: a missing or unreadable file, or an invalid vocabulary (one line naming the file and key).
    """
    if value is None or isinstance(value, TaskVocabulary):
        return value
    if isinstance(value, (str, Path)):
        return TaskVocabulary.load(resolve_cell_path(value))
    if isinstance(value, Mapping):
        return TaskVocabulary.from_dict(value, where="bridge.task.vocabulary")
    raise ConfigError(f"bridge.task.vocabulary: expected a cell file path or a mapping, got {type(value).__name__}")


@dataclass(frozen=True)
class TaskConfig:
    """The task as the robot side knows it (no simulator, no judge).

    Attributes:
        name: the task's name (recorded; a learned model may be chosen by it).
        instruction: the default instruction of the first episode (``tandem-bridge instruction=...`` overrides it;
            empty: the bridge waits for one on ``topics.instruction``).
        objects: object names the planner may refer to; default: the vocabulary's objects. With a vocabulary, each
            must be one of its objects.
        max_steps: control-step budget of one episode.
        vocabulary: the cell's declared vocabulary (:class:`tandem.core.vocabulary.TaskVocabulary`): a path to a
            cell file, an inline mapping, or None. After construction it holds the loaded vocabulary (or None).

    Raises:
        ConfigError: a bad cell file or vocabulary, an object outside it, or ``max_steps < 1`` (one named line).
    """

    name: str = "robot_task"
    instruction: str = ""
    objects: tuple[str, ...] = ()
    max_steps: int = 400
    vocabulary: Any = None

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
        if not isinstance(self.instruction, str):
            raise ConfigError(f"task.instruction must be a string, got {self.instruction!r}")
        if not isinstance(self.max_steps, int) or self.max_steps < 1:
            raise ConfigError(f"task.max_steps must be an integer >= 1, got {self.max_steps!r}")
        vocab = load_cell_vocabulary(self.vocabulary)
        object.__setattr__(self, "vocabulary", vocab)
        if vocab is not None:
            unknown = [o for o in self.objects if o not in vocab.objects]
            if unknown:
                raise ConfigError(f"task.objects: {unknown[0]!r} is not an object of the cell vocabulary "
                                  f"{vocab.task!r} (known: {sorted(vocab.objects)})")


@dataclass(frozen=True)
class BridgeConfig:
    """Everything the bridge needs (see ``configs/bridge/*.yaml``).

    Attributes:
        transport: ``dds`` (Cyclone DDS, no ROS install), ``rclpy`` (a ROS 2 node), ``inprocess`` (tests).
        domain_id: ROS_DOMAIN_ID / DDS domain (0..232).
        loopback_only: DDS only: bind Cyclone to 127.0.0.1, no multicast (rehearsal and tests).
        rate_hz: control rate (Hz); one command per ``step``.
        base_frame: ``header.frame_id`` of commands and the frame of the workspace box.
        image_size: ``(H, W)`` px of every camera image in the Observation.
        image_resize: centre-crop each camera image to the aspect of ``image_size`` and resize it (OpenCV
            ``INTER_AREA``); if False a camera of another size is a malformed message.
        startup_timeout_s: ``reset`` waits this long (s) for every required topic.
        watchdog: run the background watchdog that sends stops when the policy misses its deadline.
        abort_after_stale_s: if required topics stay stale or missing this long (s) during an episode,
            ``step`` raises :class:`bridge.errors.MissingTopicError` (after commanding a stop) to end it.
        dry_run: log commands instead of sending them.
        oracle_side_channel: read ``topics.oracle_privileged`` into ``Observation.privileged``;
            SIM-ONLY (rehearsal with oracle planner/verifier/executor), never on a real robot.
        gripper_mode: ``topic`` (control_msgs/msg/GripperCommand on a topic), ``action``
            (control_msgs/action/GripperCommand, rclpy transport only) or ``none``.
    """

    transport: str = "dds"
    domain_id: int = in_range(0, ge=0, le=232)
    loopback_only: bool = True
    rate_hz: float = in_range(20.0, gt=0, unit="Hz")
    base_frame: str = "base_link"
    image_size: tuple[int, int] = (128, 128)
    image_resize: bool = False
    startup_timeout_s: float = in_range(10.0, gt=0, unit="s")
    watchdog: bool = True
    abort_after_stale_s: float = in_range(2.0, gt=0, unit="s")
    dry_run: bool = False
    oracle_side_channel: bool = False
    gripper_mode: str = "topic"
    topics: Topics = field(default_factory=Topics)
    action: ActionMapping = field(default_factory=ActionMapping)
    safety: SafetyLimits = field(default_factory=SafetyLimits)
    task: TaskConfig = field(default_factory=TaskConfig)

    def __post_init__(self) -> None:
        check_own_numbers(self)  # every number of the tree (topics, action, safety, task): finite, in its declared range

    @property
    def dt(self) -> float:
        """Control period (s): ``1 / rate_hz``."""
        return 1.0 / self.rate_hz

    @property
    def read_joints(self) -> tuple[str, ...]:
        """Joints the bridge reads by name: the arm joints (``joint_pos``) and the gripper joints."""
        arm = self.action.arm_joints if self.action.space == "joint_pos" else ()
        return tuple(dict.fromkeys((*arm, *self.action.gripper_joints)))

    @property
    def required_topics(self) -> tuple[str, ...]:
        """Freshness keys the watchdog enforces: every camera image, each joint read by name (``"<joint_states>[j]"``,
        :mod:`bridge.joint_states`; the joint-state topic itself when none is), the eef pose."""
        req = [c.image for c in self.topics.cameras.values()]
        req += joint_freshness_keys(self.topics.joint_states, self.read_joints)
        if self.action.space == "eef_delta" and self.topics.eef_pose:
            req.append(self.topics.eef_pose)
        return tuple(req)


def _build(cls, data: Mapping[str, Any] | None, where: str):
    """``cls`` built from the section ``data`` (named ``where`` in messages; the bridge's own keys are named as they
    are, a sub-section's as ``<where>.<key>``).

    Raises:
        ConfigError: an unknown key; a number field holding a non-number, NaN, infinity or a value outside its
            declared range (one line naming the key, before ``cls`` is built); ``cls``'s own refusals.
    """
    data = dict(data or {})
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown} in {where}; known: {sorted(known)}")
    kw = {}
    for name, value in data.items():
        if isinstance(value, list) and name != "vocabulary":
            value = tuple(value)
        kw[name] = value
    for key, message in field_faults(cls, kw, "" if where == "bridge" else where):
        raise ConfigError(f"{key} {message}")
    try:
        return cls(**kw)
    except TypeError as e:
        raise ConfigError(f"bad {where}: {e}") from e


def bridge_config_from_dict(d: Mapping[str, Any]) -> BridgeConfig:
    """Validate a plain dict (from YAML or ``OmegaConf.to_container``) into a :class:`BridgeConfig`.

    Raises:
        ConfigError: on unknown keys, bad enum values, inconsistent topics, or a number that is not one, not finite or
            outside its field's range (``domain_id`` 0..232, ``rate_hz``, ``startup_timeout_s`` and
            ``abort_after_stale_s`` > 0); the message names the key.
    """
    d = dict(d)
    topics = dict(d.pop("topics", {}) or {})
    cams = {}
    for name, c in (topics.pop("cameras", {}) or {}).items():
        cams[name] = _build(CameraTopic, {"image": c} if isinstance(c, str) else c, f"topics.cameras.{name}")
    topics_cfg = _build(Topics, {**topics, "cameras": cams}, "topics")
    action = _build(ActionMapping, d.pop("action", {}), "action")
    safety = _build(SafetyLimits, d.pop("safety", {}), "safety")
    task = _build(TaskConfig, d.pop("task", {}), "task")
    cfg = _build(BridgeConfig, {**d, "topics": topics_cfg, "action": action, "safety": safety, "task": task}, "bridge")
    if cfg.transport not in TRANSPORTS:
        raise ConfigError(f"bridge.transport={cfg.transport!r}; expected one of {TRANSPORTS}")
    if action.space not in ACTION_SPACES:
        raise ConfigError(f"action.space={action.space!r}; expected one of {ACTION_SPACES}")
    if cfg.gripper_mode not in GRIPPER_MODES:
        raise ConfigError(f"gripper_mode={cfg.gripper_mode!r}; expected one of {GRIPPER_MODES}")
    if cfg.gripper_mode == "action" and cfg.transport != "rclpy":
        raise ConfigError("gripper_mode=action needs transport=rclpy (an action over raw DDS is not implemented; "
                          "use gripper_mode=topic)")
    if not topics_cfg.cameras:
        raise ConfigError("topics.cameras is empty: the bridge needs at least one camera")
    if action.space == "eef_delta" and not (topics_cfg.twist_cmd and topics_cfg.eef_pose):
        raise ConfigError("action.space=eef_delta needs topics.twist_cmd and topics.eef_pose")
    if action.space == "joint_pos" and not (topics_cfg.joint_trajectory_cmd and action.arm_joints):
        raise ConfigError("action.space=joint_pos needs topics.joint_trajectory_cmd and action.arm_joints")
    if cfg.oracle_side_channel and not topics_cfg.oracle_privileged:
        raise ConfigError("oracle_side_channel=true needs topics.oracle_privileged")
    if action.gripper_effort_n > safety.max_gripper_effort_n:
        raise ConfigError(f"action.gripper_effort_n ({action.gripper_effort_n} N) exceeds "
                          f"safety.max_gripper_effort_n ({safety.max_gripper_effort_n} N)")
    for what in ("open", "closed"):
        w = getattr(action, f"gripper_{what}_width_m")
        if not safety.gripper_min_width_m <= w <= safety.gripper_max_width_m:
            raise ConfigError(f"action.gripper_{what}_width_m ({w} m) is outside the safety range "
                              f"[{safety.gripper_min_width_m}, {safety.gripper_max_width_m}] m")
    return cfg


def load_bridge_config(path: str | Path) -> BridgeConfig:
    """Read a bridge YAML file (the ``bridge:`` key if present, else the whole file).

    Raises:
        ConfigError: if the file is missing, not YAML, or invalid.
    """
    path = Path(path)
    try:
        d = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read bridge config {path}: {e}") from e
    if not isinstance(d, dict):
        raise ConfigError(f"bridge config {path} is not a mapping")
    return bridge_config_from_dict(d.get("bridge", d))
