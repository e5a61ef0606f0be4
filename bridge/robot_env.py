"""``RobotEnv``: a real (or simulated) robot behind tandem's ``Env`` protocol, over any transport.

Observation assembly: the latest valid message of each camera (``sensor_msgs/Image``) and of the end-effector
pose (``geometry_msgs/PoseStamped``) are kept with their header stamps; ``sensor_msgs/JointState`` messages are
merged by joint name, each joint with its own stamp (:mod:`bridge.joint_states`: arm and gripper joints may come
in separate messages), and staleness is checked per joint the bridge reads; ``Observation.proprio`` is
``[eef x, y, z (m, base frame), qw, qx, qy, qz, gripper width (m)]`` (``tandem.core.types.PROPRIO_LAYOUT``).

Commands: each ``step(action)`` (or each action of ``execute_chunk(ActionChunk)``) maps the action (:mod:`bridge.action_mapping`), passes it through
the :class:`bridge.safety.SafetyLayer` and publishes a ``TwistStamped`` (MoveIt Servo) or a
``JointTrajectory`` (joint_trajectory_controller) plus, when the width changes, a gripper command;
then it waits for the next control tick (``rate_hz``) and returns the new observation.

Bad input never produces an unsafe command: malformed, out-of-order or future-stamped messages are
dropped and recorded; a missing or stale topic, a late policy, a NaN action, an e-stop, or an
exception in the caller (:meth:`RobotEnv.stop`) all make the command a stop, recorded in ``events``.
A background watchdog also publishes stops while no ``step`` arrives within the policy deadline.

``Observation.privileged`` is never set from robot data. Only the SIM-ONLY oracle side channel
(``oracle_side_channel: true``, a JSON ``std_msgs/String`` published by the simulated robot) fills
it, for rehearsals with oracle planners/verifiers/executors; never enable it on a real robot.

The task is the user's words over the cell's vocabulary: :func:`task_spec` builds the TaskSpec from ``config.task``
(its cell file: skills, objects, places; no goals, a robot has no judge); :meth:`RobotEnv.set_instruction` sets each
episode's instruction, and :meth:`RobotEnv.next_instruction` takes the next one received on ``topics.instruction``
(``std_msgs/String``). In a rehearsal the simulated robot's judge reads that instruction at each reset.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from bridge import conversions as cv
from bridge.action_mapping import action_dim, action_to_command
from bridge.config import BridgeConfig
from bridge.errors import MalformedMessageError, MissingTopicError, TransportError
from bridge.joint_states import JointStateCache
from bridge.oracle_channel import EPISODE_TOPIC
from bridge.safety import Command, SafetyLayer
from bridge.transport import Transport
from tandem.core.errors import ConfigError, NonFiniteActionError, TandemError
from tandem.core.types import ActionChunk, Observation, TaskSpec

log = logging.getLogger(__name__)


@dataclass
class Sample:
    """A converted message: ``value``, header ``stamp`` (s), local receive time ``received`` (s)."""

    value: Any
    stamp: float
    received: float


def crop_resize(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Centre-crop ``uint8 (H, W, 3)`` to the aspect ratio of ``size = (h, w)`` px, then resize (``cv2.INTER_AREA``)."""
    import cv2

    h, w = size
    H, W = img.shape[:2]
    if H * w > W * h:  # too tall
        ch = max(1, round(W * h / w))
        y0 = (H - ch) // 2
        img = img[y0:y0 + ch]
    elif H * w < W * h:  # too wide
        cw = max(1, round(H * w / h))
        x0 = (W - cw) // 2
        img = img[:, x0:x0 + cw]
    return np.ascontiguousarray(cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA))


def task_spec(config: BridgeConfig) -> TaskSpec:
    """The TaskSpec of a robot cell from ``config.task``: its name, instruction, step budget and, where the cell
    declares a vocabulary, the vocabulary with its skills (predicate templates), skill texts, objects (all of them
    unless ``task.objects`` lists some) and places (``targets``); the cameras, image size and control period of
    ``config``. ``goals`` are empty: a robot has no judge.
    """
    task, vocab = config.task, config.task.vocabulary
    objects = tuple(task.objects) or (tuple(vocab.objects) if vocab is not None else ())
    extra: dict[str, Any] = {}
    if vocab is not None:
        extra = {"skills": dict(vocab.skills), "skill_texts": dict(vocab.skill_texts),
                 "targets": tuple(vocab.places), "vocabulary": vocab}
    return TaskSpec(name=task.name, instruction=" ".join(task.instruction.split()), objects=objects,
                    max_steps=task.max_steps, goals=(), cameras=tuple(config.topics.cameras),
                    image_size=tuple(config.image_size), control_dt=config.dt, **extra)


class RobotEnv:
    """The Env protocol over ROS 2 topics (see module docstring).

    Args:
        config: the bridge config.
        transport: a :class:`bridge.transport.Transport` (DDS, rclpy, in-process, or dry-run wrapper).
        spec: the TaskSpec; default :func:`task_spec` of ``config`` (the cell's vocabulary, no goals).

    Attributes:
        events: every safety/bad-input event as JSON-safe dicts ``{"kind", "t", "detail", "stopped"}``.
        sent: number of commands published.
        camera_info: camera name -> latest ``sensor_msgs/CameraInfo`` as ``{"K" (3, 3) px, "D", "R", "P",
            "image_size", "distortion_model"}`` (for cameras with an ``info`` topic; at the camera's native size).
    """

    def __init__(self, config: BridgeConfig, transport: Transport, spec: TaskSpec | None = None):
        self.config, self.transport = config, transport
        c, t = config, config.topics
        self.spec = spec or task_spec(c)
        self.action_dim = action_dim(c.action)
        self.action_low = -np.ones(self.action_dim, np.float32)
        self.action_high = np.ones(self.action_dim, np.float32)
        if c.action.space == "joint_pos":
            self.action_low[:-1], self.action_high[:-1] = -np.pi, np.pi
        self.joint_mode = c.action.space == "joint_pos"
        self.safety = SafetyLayer(c.safety, c.dt, c.required_topics, joint_mode=self.joint_mode)
        self._lock = threading.RLock()
        self._pub_lock = threading.Lock()
        self.camera_info: dict[str, dict] = {}
        self._latest: dict[str, Sample] = {}
        self._joints = JointStateCache(t.joint_states, c.read_joints)
        self._privileged: Sample | None = None
        self._instructions: list[str] = []
        self._instruction_cond = threading.Condition()
        self.judge: dict[str, Any] | None = None
        self._last_gripper_sent: tuple[float, float] | None = None
        self._last_obs_time: float | None = None
        self._next_tick: float | None = None
        self._t0 = transport.now()
        self._step = 0
        self._closed = False
        self._watchdog_stopping = False
        self._stale_since: float | None = None
        self.sent = 0

        self._types = transport.msg_type
        for name, cam in t.cameras.items():
            transport.create_subscription(cam.image, "sensor_msgs/msg/Image",
                                          lambda m, topic=cam.image: self._on_msg(topic, m, self._conv_image))
            if cam.info:
                transport.create_subscription(cam.info, "sensor_msgs/msg/CameraInfo",
                                              lambda m, name=name: self._on_camera_info(name, m))
        transport.create_subscription(t.joint_states, "sensor_msgs/msg/JointState", self._on_joint_state)
        if t.eef_pose:
            transport.create_subscription(t.eef_pose, "geometry_msgs/msg/PoseStamped",
                                          lambda m: self._on_msg(t.eef_pose, m, cv.msg_to_pose))
        transport.create_subscription(t.estop, "std_msgs/msg/Bool", self._on_estop, reliable=True)
        transport.create_subscription(t.estop_reset, "std_msgs/msg/Bool", self._on_estop_reset, reliable=True)
        transport.create_subscription(t.instruction, "std_msgs/msg/String", self._on_instruction, reliable=True)
        self._pub_episode = None
        if c.oracle_side_channel:
            log.warning("ORACLE SIDE CHANNEL ENABLED (%s): simulation rehearsal only, never on a real robot",
                        t.oracle_privileged)
            transport.create_subscription(t.oracle_privileged, "std_msgs/msg/String", self._on_privileged)
            self._pub_episode = transport.create_publisher(EPISODE_TOPIC, "std_msgs/msg/String")
        if self.joint_mode:
            self._pub_cmd = transport.create_publisher(t.joint_trajectory_cmd, "trajectory_msgs/msg/JointTrajectory")
        else:
            self._pub_cmd = transport.create_publisher(t.twist_cmd, "geometry_msgs/msg/TwistStamped")
        self._pub_gripper = None
        try:
            if c.gripper_mode == "topic" and t.gripper_cmd:
                self._pub_gripper = transport.create_publisher(t.gripper_cmd, "control_msgs/msg/GripperCommand")
            elif c.gripper_mode == "action":
                transport.msg_type("control_msgs/action/GripperCommand")  # refuse now, not at the first grasp
        except TransportError as e:
            raise TransportError(f"gripper_mode={c.gripper_mode} (topics.gripper_cmd {t.gripper_cmd}): {e}; or set "
                                 "gripper_mode: none") from e
        self._last_step_call = transport.now()
        self._watchdog_thread = None
        if c.watchdog:
            self._watchdog_thread = threading.Thread(target=self._watchdog_loop, name="bridge-watchdog", daemon=True)
            self._watchdog_thread.start()

    # ---- receiving --------------------------------------------------------------------------------------
    def _conv_image(self, msg: Any) -> np.ndarray:
        img = cv.msg_to_image(msg)
        if self.config.image_resize and img.shape[:2] != tuple(self.config.image_size):
            img = crop_resize(img, tuple(self.config.image_size))
        if img.shape[:2] != tuple(self.config.image_size):
            raise MalformedMessageError(f"image is {img.shape[0]}x{img.shape[1]} px, config.image_size is "
                                        f"{tuple(self.config.image_size)}")
        return img

    def _on_msg(self, topic: str, msg: Any, convert) -> None:
        now = self.transport.now()
        try:
            stamp = cv.stamp_to_sec(msg.header.stamp)
            value = convert(msg)
        except (MalformedMessageError, AttributeError, TypeError, ValueError) as e:
            self.safety.record("malformed_message", now, f"{topic}: {e}")
            return
        with self._lock:
            prev = self._latest.get(topic)
            if prev is not None and stamp < prev.stamp:
                self.safety.record("out_of_order", now, f"{topic}: stamp {stamp:.6f} older than {prev.stamp:.6f}")
                return
            if stamp - now > self.config.safety.max_clock_skew_s:
                self.safety.record("clock_skew", now, f"{topic}: stamp {stamp - now:.3f} s in the future", stopped=True)
                return
            self._latest[topic] = Sample(value, stamp, now)

    def _on_joint_state(self, msg: Any) -> None:
        topic, now = self.config.topics.joint_states, self.transport.now()
        try:
            stamp = cv.stamp_to_sec(msg.header.stamp)
            js = cv.msg_to_joint_state(msg)
        except (MalformedMessageError, AttributeError, TypeError, ValueError) as e:
            self.safety.record("malformed_message", now, f"{topic}: {e}")
            return
        if stamp - now > self.config.safety.max_clock_skew_s:
            self.safety.record("clock_skew", now, f"{topic}: stamp {stamp - now:.3f} s in the future", stopped=True)
            return
        with self._lock:
            older = self._joints.update(js, stamp, now)
        if older:
            self.safety.record("out_of_order", now, f"{topic}: stamp {stamp:.6f} older than the last value of {older}")

    def _on_camera_info(self, name: str, msg: Any) -> None:
        try:
            info = cv.msg_to_camera_info(msg)
        except MalformedMessageError as e:
            self.safety.record("malformed_message", self.transport.now(), f"camera_info[{name}]: {e}")
            return
        with self._lock:
            self.camera_info[name] = info

    def _on_estop(self, msg: Any) -> None:
        if bool(getattr(msg, "data", True)):
            self.safety.trigger_estop(self.transport.now(), f"{self.config.topics.estop} = true")
            self._publish(Command.stop_command(self.joint_mode))

    def _on_estop_reset(self, msg: Any) -> None:
        if bool(getattr(msg, "data", False)):
            self.safety.reset_estop(self.transport.now(), f"{self.config.topics.estop_reset} = true")

    def _on_instruction(self, msg: Any) -> None:
        text = " ".join(str(getattr(msg, "data", "")).split())
        if not text:
            self.safety.record("malformed_message", self.transport.now(),
                               f"{self.config.topics.instruction}: an empty instruction (ignored)")
            return
        with self._instruction_cond:
            self._instructions.append(text)
            self._instruction_cond.notify_all()
        log.info("instruction received on %s: %r", self.config.topics.instruction, text)

    def _on_privileged(self, msg: Any) -> None:
        now = self.transport.now()
        try:
            d = cv.msg_to_json(msg)
            stamp = float(d.get("stamp", now))
        except (MalformedMessageError, TypeError, ValueError) as e:
            self.safety.record("malformed_message", now, f"{self.config.topics.oracle_privileged}: {e}")
            return
        with self._lock:
            self._privileged = Sample(d, stamp, now)

    # ---- the Env protocol -------------------------------------------------------------------------------
    @property
    def events(self) -> list[dict]:
        """The safety layer's events so far (``SafetyEvent.to_json()`` each), oldest first."""
        return [e.to_json() for e in self.safety.events]

    def stamps(self) -> dict[str, float | None]:
        """Freshness key (:attr:`BridgeConfig.required_topics`) -> header stamp (s) of its latest value, or None."""
        with self._lock:
            out = {k: (self._latest[k].stamp if k in self._latest else None) for k in self.config.required_topics}
            out.update(self._joints.stamps())
        return out

    def wait_for_topics(self, timeout_s: float | None = None) -> None:
        """Block until every required topic has a fresh message (and the oracle channel, if enabled).

        Raises:
            MissingTopicError: naming the topics still missing or stale after ``timeout_s`` (s).
        """
        timeout_s = self.config.startup_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            problems = self.safety.check_freshness(self.transport.now(), self.stamps())
            if self.config.oracle_side_channel and self._privileged is None:
                problems.append(("missing_topic", f"{self.config.topics.oracle_privileged}: no oracle data"))
            if not problems:
                return
            if time.monotonic() > deadline:
                raise MissingTopicError("robot topics not ready after "
                                        f"{timeout_s} s: " + "; ".join(d for _, d in problems))
            time.sleep(0.01)

    # ---- instructions ----------------------------------------------------------------------------------
    @property
    def pending_instructions(self) -> tuple[str, ...]:
        """Instructions received on ``topics.instruction`` and not yet taken, oldest first."""
        with self._instruction_cond:
            return tuple(self._instructions)

    def next_instruction(self, timeout_s: float | None = None) -> str:
        """Take the oldest instruction received on ``topics.instruction`` (``std_msgs/String``), waiting for one.

        Args:
            timeout_s: how long to wait (s); None waits until one arrives (Ctrl-C ends the wait).

        Raises:
            MissingTopicError: none arrived within ``timeout_s`` (names the topic).
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._instruction_cond:
            while not self._instructions:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise MissingTopicError(f"no instruction on {self.config.topics.instruction} within {timeout_s} s "
                                            "(publish one: ros2 topic pub --once "
                                            f"{self.config.topics.instruction} std_msgs/msg/String \"{{data: '...'}}\")")
                self._instruction_cond.wait(0.1 if left is None else min(0.1, left))
            return self._instructions.pop(0)

    def set_instruction(self, instruction: str) -> None:
        """Make ``instruction`` the task of the next episode (``spec.instruction``; the planner grounds it at reset).

        Raises:
            ConfigError: an empty instruction.
        """
        text = " ".join(str(instruction).split())
        if not text:
            raise ConfigError("the instruction is empty: give one (instruction=... or a message on "
                              f"{self.config.topics.instruction})")
        self.spec = dataclasses.replace(self.spec, instruction=text)

    # ---- episodes ---------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[Observation, dict[str, Any]]:
        """Wait for every required topic, send a stop, and return the first observation.

        A real robot is not re-positioned: ``seed`` is recorded only. The episode's task is :attr:`spec`, whose
        instruction :meth:`set_instruction` sets. SIM-ONLY, with the oracle side channel: the simulated robot is
        asked to start an episode of that instruction (:meth:`_start_oracle_episode`): its judge reads the words, and
        they become the spec's goals (the privileged oracle components plan and verify by them; every other component
        has them withheld by the runtime). Returns ``(obs, info)``, with ``info["judge"]`` in a rehearsal.

        Raises:
            MissingTopicError: if a required topic publishes nothing fresh within ``startup_timeout_s``, or the
                simulated robot does not start the episode within it.
        """
        self.wait_for_topics()
        self._start_oracle_episode()
        self._publish(Command.stop_command(self.joint_mode))
        self._t0 = self.transport.now()
        self._step = 0
        self._next_tick = None
        self._stale_since = None
        obs = self._observe()
        self._last_obs_time = self._last_step_call = self.transport.now()
        info = {"seed": seed, "instruction": self.spec.instruction, **self._oracle_info()}
        if self.judge is not None:
            info["judge"] = dict(self.judge)
        return obs, info

    def step(self, action: np.ndarray) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Send one safe command for ``action`` ``(A,)``, wait for the next tick, observe.

        Returns ``(obs, 0.0, terminated, truncated, info)``; ``info["safety_events"]`` lists this
        step's events, ``info["stopped"]`` whether the command sent was a stop, ``info["success"]``
        only with the sim-only oracle side channel. ``truncated`` once ``max_steps`` is reached or
        while the e-stop is latched.

        Raises:
            NonFiniteActionError: after commanding a stop, if ``action`` has NaN/inf.
            MissingTopicError: after commanding a stop, once required topics have been stale or missing
                for more than ``abort_after_stale_s``.
        """
        now = self.transport.now()
        self._last_step_call = now
        n_before = len(self.safety.events)
        deadline_missed = (self._last_obs_time is not None
                           and now - self._last_obs_time > self.config.safety.policy_deadline_s)
        try:
            cmd = action_to_command(action, self.config.action)
        except TandemError as e:  # NaN/inf (NonFiniteActionError) or a wrong action length (ConfigError)
            kind = "nonfinite_action" if isinstance(e, NonFiniteActionError) else "bad_action"
            self.safety.record(kind, now, str(e), stopped=True)
            self._publish(Command.stop_command(self.joint_mode))
            raise
        with self._lock:
            eef = self._latest.get(self.config.topics.eef_pose)
            joint_q = self._joints.positions(self.config.action.arm_joints) if self.joint_mode else None
        safe, _ = self.safety.filter(cmd, now=now, stamps=self.stamps(),
                                     eef_position=None if eef is None else eef.value[0],
                                     joint_positions=joint_q, deadline_missed=deadline_missed)
        self._publish(safe)
        self._check_abort(now)
        self._wait_tick()
        obs = self._observe()
        self._last_obs_time = self.transport.now()
        self._step += 1
        new_events = [e.to_json() for e in self.safety.events[n_before:]]
        info = {"safety_events": new_events, "stopped": safe.stop, **self._oracle_info()}
        terminated = bool(info.get("success", False))
        truncated = self._step >= self.spec.max_steps or self.safety.estopped
        return obs, 0.0, terminated, truncated, info

    def execute_chunk(self, chunk: ActionChunk) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Send an :class:`ActionChunk` ``(H, A)`` as timed commands, one per control tick (``chunk.dt``).

        Stops early when a step terminates, truncates or was turned into a stop by the safety layer.
        Returns the last step's ``(obs, reward, terminated, truncated, info)`` with
        ``info["executed"]`` = the number of actions sent.

        Raises:
            ConfigError: if ``chunk.space`` is not ``action.space`` or ``chunk.dt`` differs from
                ``1 / rate_hz`` by more than 1 ms (resample the chunk first).
            NonFiniteActionError, MissingTopicError: as :meth:`step`.
        """
        if chunk.space != self.config.action.space:
            raise ConfigError(f"ActionChunk.space={chunk.space!r} but the bridge maps {self.config.action.space!r}")
        if abs(chunk.dt - self.config.dt) > 1e-3:
            raise ConfigError(f"ActionChunk.dt={chunk.dt} s but the bridge runs at {self.config.dt} s per command")
        if len(chunk.actions) == 0:
            raise ConfigError("ActionChunk has no actions")
        executed = 0
        for a in chunk.actions:
            obs, r, term, trunc, info = self.step(a)
            executed += 1
            if term or trunc or info["stopped"]:
                break
        info["executed"] = executed
        return obs, r, term, trunc, info

    def _check_abort(self, now: float) -> None:
        """Raise MissingTopicError once the robot topics have been stale for ``abort_after_stale_s``."""
        problems = self.safety.check_freshness(now, self.stamps())
        if not problems:
            self._stale_since = None
            return
        if self._stale_since is None:
            self._stale_since = now
        elif now - self._stale_since > self.config.abort_after_stale_s:
            raise MissingTopicError(f"robot topics stale for more than {self.config.abort_after_stale_s} s "
                                    "(the robot was commanded to stop): " + "; ".join(d for _, d in problems))

    def stop(self, reason: str) -> None:
        """Command a stop now and record ``reason`` (use on any exception in the agent loop)."""
        self.safety.record("stop_requested", self.transport.now(), reason, stopped=True)
        self._publish(Command.stop_command(self.joint_mode))

    def close(self) -> None:
        """Send a final stop, stop the watchdog, close the transport."""
        if self._closed:
            return
        try:
            self._publish(Command.stop_command(self.joint_mode))
        finally:
            self._closed = True
            if self._watchdog_thread is not None:
                self._watchdog_thread.join(timeout=1.0)
            self.transport.close()

    # ---- internals ----------------------------------------------------------------------------------
    def _gripper_width(self) -> float:
        """Gripper opening (m) from the newest value of each gripper joint (0 when none is configured).

        Raises:
            MissingTopicError: a gripper joint was never received (``reset`` waits for every one).
        """
        a = self.config.action
        if not a.gripper_joints:
            return 0.0
        with self._lock:
            q = self._joints.positions(a.gripper_joints)
            missing = self._joints.missing(a.gripper_joints)
        if q is None:
            raise MissingTopicError(f"gripper joint(s) {missing} never received on {self.config.topics.joint_states}")
        return a.gripper_width_from_joints(q)

    def _observe(self) -> Observation:
        arm = self.config.action.arm_joints
        with self._lock:
            latest = dict(self._latest)
            priv = self._privileged
            joints = self._joints.positions(arm) if arm else None  # None until every arm joint was received
        images = {}
        for name, cam in self.config.topics.cameras.items():
            s = latest.get(cam.image)
            if s is None:
                raise MissingTopicError(f"camera {name!r} ({cam.image}) has no valid image")
            images[name] = s.value
        eef = latest.get(self.config.topics.eef_pose) if self.config.topics.eef_pose else None
        pos, quat = (np.zeros(3), np.array([1.0, 0, 0, 0])) if eef is None else eef.value
        width = self._gripper_width()
        proprio = np.concatenate([pos, quat, [width]]).astype(np.float32)
        privileged = None
        if self.config.oracle_side_channel and priv is not None:
            privileged = priv.value.get("privileged")
        return Observation(images=images, proprio=proprio, t=self.transport.now() - self._t0,
                           privileged=privileged, step=self._step, joints=joints)

    def _start_oracle_episode(self) -> None:
        """SIM-ONLY: ask the simulated robot for an episode of :attr:`spec`'s instruction and wait until its judge
        answers; :attr:`spec`'s goals become the judge's reading (none when the judge refused, with the reason in
        :attr:`judge`).

        The request ``{"episode": id, "instruction"}`` goes on :data:`bridge.oracle_channel.EPISODE_TOPIC`, re-sent
        until a ``privileged`` message carries ``"episode": id`` (a fresh random id, so a stale answer of an earlier
        run never counts).

        Raises:
            MissingTopicError: no answer within ``startup_timeout_s`` (names the topic).
        """
        if self._pub_episode is None:
            return
        episode = uuid.uuid4().hex[:12]
        request = cv.json_to_msg(self._types, {"episode": episode, "instruction": self.spec.instruction})
        timeout_s = self.config.startup_timeout_s
        deadline, resend = time.monotonic() + timeout_s, 0.0
        while True:
            with self._lock:
                priv = self._privileged
            if priv is not None and priv.value.get("episode") == episode:
                break
            now = time.monotonic()
            if now > deadline:
                raise MissingTopicError(f"the simulated robot did not start the episode on {EPISODE_TOPIC} within "
                                        f"{timeout_s} s (is tandem-sim-robot running this version?)")
            if now >= resend:
                self._pub_episode(request)
                resend = now + 0.5
            time.sleep(0.01)
        judge = priv.value.get("judge")
        judge = dict(judge) if isinstance(judge, dict) else {"refused": "the simulated robot sent no judge"}
        self.judge = judge
        goals = tuple(str(g) for g in judge.get("goals") or ()) if not judge.get("refused") else ()
        self.spec = dataclasses.replace(self.spec, goals=goals)
        if judge.get("refused"):
            log.warning("the simulated robot's judge refused %r: %s", self.spec.instruction, judge["refused"])

    def _oracle_info(self) -> dict[str, Any]:
        if not self.config.oracle_side_channel or self._privileged is None:
            return {}
        return {"success": bool(self._privileged.value.get("success", False)), "oracle_side_channel": True}

    def _wait_tick(self) -> None:
        dt = self.config.dt
        now = time.monotonic()
        if self._next_tick is None or now > self._next_tick + dt:
            self._next_tick = now + dt  # late: re-anchor instead of bursting
        else:
            self._next_tick += dt
        delay = self._next_tick - now
        if delay > 0:
            time.sleep(delay)

    def _publish(self, cmd: Command) -> None:
        with self._pub_lock:  # the main loop, the watchdog and the e-stop callback all publish
            self._publish_locked(cmd)

    def _publish_locked(self, cmd: Command) -> None:
        if self._closed:
            return
        types, now = self._types, self.transport.now()
        try:
            if self.joint_mode:
                q = np.zeros((0, len(self.config.action.arm_joints))) if cmd.stop else cmd.joint_positions[None]
                msg = cv.joint_trajectory_to_msg(types, self.config.action.arm_joints, q, self.config.dt, now,
                                                 self.config.base_frame)
            else:
                msg = cv.twist_to_msg(types, cmd.linear, cmd.angular, now, self.config.base_frame)
            self._pub_cmd(msg)
            self.sent += 1
            if cmd.gripper_width is not None and not cmd.stop:
                g = (float(cmd.gripper_width), float(cmd.gripper_effort or 0.0))
                last = self._last_gripper_sent
                if (last is None or abs(g[0] - last[0]) > self.config.action.gripper_deadband_m
                        or abs(g[1] - last[1]) > 1e-6):
                    self._send_gripper(*g)
                    self._last_gripper_sent = g
        except TandemError:
            raise
        except Exception as e:  # a transport failure must not hide behind a traceback deep in DDS
            self.safety.record("publish_failed", now, f"{type(e).__name__}: {e}", stopped=True)
            log.error("publishing a command failed: %s", e)

    def _send_gripper(self, width: float, effort: float) -> None:
        width = self.config.action.gripper_command(width)  # metres -> the driver's units
        if self.config.gripper_mode == "topic" and self._pub_gripper is not None:
            self._pub_gripper(cv.gripper_to_msg(self._types, width, effort))
        elif self.config.gripper_mode == "action":
            self.transport.send_gripper_goal(self.config.topics.gripper_cmd, width, effort)  # rclpy only

    def _watchdog_loop(self) -> None:
        """Publish stops while the policy is later than its deadline (the robot must not keep moving)."""
        dt = self.config.dt
        while not self._closed:
            time.sleep(dt)
            if self._closed or self._last_obs_time is None:
                continue
            now = self.transport.now()
            in_step = self._last_step_call > self._last_obs_time
            if not in_step and now - self._last_obs_time > self.config.safety.policy_deadline_s:
                if not self._watchdog_stopping:
                    self.safety.record("deadline_missed", now, "watchdog: no command within "
                                       f"{self.config.safety.policy_deadline_s} s", stopped=True)
                    self._watchdog_stopping = True
                self._publish(Command.stop_command(self.joint_mode))
            else:
                self._watchdog_stopping = False
