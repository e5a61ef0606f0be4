"""A simulated robot on the bridge's transport: any ``tandem.core.protocols.Env`` published as a ROS 2 robot.

It plays the robot-PC side of a deployment so the whole bridge can be rehearsed on one machine:

* publishes each camera as ``sensor_msgs/Image`` (+ ``CameraInfo`` when intrinsics are given), the
  arm joints (``action.arm_joints``, from ``Observation.joints``) and the gripper fingers on ``/joint_states``
  (``sensor_msgs/JointState``), and the end-effector pose as
  ``geometry_msgs/PoseStamped`` in ``base_frame``, all stamped with the transport clock;
* executes received ``geometry_msgs/TwistStamped`` and (``gripper_mode: topic``) ``control_msgs/GripperCommand`` by mapping
  them back to an env action (:func:`bridge.action_mapping.twist_to_action`), like MoveIt Servo it
  holds still when no command arrived within ``command_timeout_s`` (Servo's
  ``incoming_command_timeout``);
* optionally publishes the SIM-ONLY oracle side channel (:mod:`bridge.oracle_channel`): the privileged state and
  the judge's verdict. The judge is the env's reference reading of the instruction the *bridge* runs (sent on
  ``/tandem/oracle/episode`` at each bridge episode, :meth:`SimRobotNode.start_episode`); the channel never
  publishes goals of its own (no seed's draw, no ``spec``): success is judged on the user's words.

The env is stepped only while fresh commands arrive; when idle, the last observation is republished
with new stamps (a real robot keeps publishing while it stands still).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np

from bridge import conversions as cv
from bridge.action_mapping import twist_to_action
from bridge.config import BridgeConfig
from bridge.errors import MalformedMessageError
from bridge.oracle_channel import EPISODE_TOPIC, PRIVILEGED_TOPIC, OracleChannelServer
from bridge.transport import Transport
from tandem.core.errors import TandemError
from tandem.core.protocols import Env
from tandem.core.types import Observation, to_jsonable

log = logging.getLogger(__name__)


class SimRobotNode:
    """Serve ``env`` as a ROS 2 robot over ``transport`` with the topics of ``config``.

    Args:
        env: the simulated env (7-D OSC_POSE ``eef_delta`` actions).
        transport: the transport (DDS on loopback for rehearsals).
        config: the same bridge config the bridge uses (topics, frames, rate, action mapping).
        command_timeout_s: hold still when the latest twist is older than this (s).
        camera_intrinsics: camera name -> ``K (3, 3)`` (px) to publish ``CameraInfo``; optional.
        oracle: publish the sim-only oracle side channel (privileged state without goals, success, the judge's
            reading) and serve episode requests.
        waypoints_fn: sim-only: subgoal JSON -> ``{"waypoints": [...], ...}`` for the oracle channel.
        goals_limit: sim-only: the judge keeps only the first ``goals_limit`` goals of its reading (a shortened
            task for quick rehearsals and tests); None keeps all. A shorter instruction does the same honestly.

    Attributes:
        judge: the judge's reading of the current episode's instruction, ``{"episode", "instruction", "goals",
            "refused"}``, or None before the bridge started an episode (success is then False).
        episodes_started: how many bridge episodes were served.
    """

    def __init__(self, env: Env, transport: Transport, config: BridgeConfig, command_timeout_s: float = 0.25,
                 camera_intrinsics: dict[str, np.ndarray] | None = None, oracle: bool = True,
                 waypoints_fn=None, goals_limit: int | None = None):
        if config.action.space != "eef_delta":
            raise MalformedMessageError("the simulated robot executes eef_delta (TwistStamped) commands only")
        self.env, self.transport, self.config = env, transport, config
        self.command_timeout_s = command_timeout_s
        self.camera_intrinsics = camera_intrinsics or {}
        self.goals_limit = goals_limit
        self.judge: dict[str, Any] | None = None
        self.episodes_started = 0
        self.first_seed: int | None = None
        self._episode_requests: list[dict] = []
        t = config.topics
        self._lock = threading.Lock()
        self._twist: tuple[np.ndarray, np.ndarray, float] | None = None
        self._gripper_width: float | None = None
        self._gripper_action = -1.0
        self.steps = 0
        self.commands_received = 0
        self.last_obs: Observation | None = None
        self.last_info: dict[str, Any] = {}
        tp = transport
        self._pub_img = {n: tp.create_publisher(c.image, "sensor_msgs/msg/Image", depth=1) for n, c in t.cameras.items()}
        self._pub_info = {n: tp.create_publisher(c.info, "sensor_msgs/msg/CameraInfo")
                          for n, c in t.cameras.items() if c.info and n in self.camera_intrinsics}
        self._pub_js = tp.create_publisher(t.joint_states, "sensor_msgs/msg/JointState")
        self._pub_pose = tp.create_publisher(t.eef_pose, "geometry_msgs/msg/PoseStamped")
        self._pub_oracle = tp.create_publisher(t.oracle_privileged or PRIVILEGED_TOPIC, "std_msgs/msg/String") if oracle else None
        tp.create_subscription(t.twist_cmd, "geometry_msgs/msg/TwistStamped", self._on_twist, reliable=False)
        if t.gripper_cmd and config.gripper_mode == "topic":  # what the bridge sends (gripper_mode none: it never grips)
            tp.create_subscription(t.gripper_cmd, "control_msgs/msg/GripperCommand", self._on_gripper, reliable=True)
        self.oracle_server = OracleChannelServer(tp, waypoints_fn) if (oracle and waypoints_fn) else None
        if oracle:
            tp.create_subscription(EPISODE_TOPIC, "std_msgs/msg/String", self._on_episode, reliable=True)

    # ---- commands in ---------------------------------------------------------------------------------
    def _on_twist(self, msg: Any) -> None:
        try:
            lin, ang = cv.msg_to_twist(msg)
        except MalformedMessageError as e:
            log.warning("dropping malformed twist: %s", e)
            return
        with self._lock:
            self._twist = (lin, ang, self.transport.now())
            self.commands_received += 1

    def _on_gripper(self, msg: Any) -> None:
        try:
            position, _ = cv.msg_to_gripper(msg)
        except MalformedMessageError:
            return
        width = self.config.action.gripper_width_from_command(position)  # the driver's units -> metres
        with self._lock:
            self._gripper_width = width

    def _on_episode(self, msg: Any) -> None:
        try:
            req = cv.msg_to_json(msg)
        except MalformedMessageError as e:
            log.warning("dropping a malformed episode request: %s", e)
            return
        if isinstance(req.get("episode"), str) and isinstance(req.get("instruction"), str):
            with self._lock:
                self._episode_requests.append(req)

    # ---- episodes --------------------------------------------------------------------------------------
    def start_episode(self, instruction: str, episode: str | None = None) -> dict[str, Any]:
        """Start a bridge episode of ``instruction``: the env's judge reads it (``env.set_instruction``, the task's
        reference reading), the scene is reset (seed ``first_seed + episodes_started``) and :attr:`judge` becomes
        ``{"episode", "instruction", "goals", "refused"}``. A refused instruction (or an env without a reference
        reading) leaves the scene as it is, with no goals and success False; the reason is in ``judge["refused"]``.
        Publishes at once and returns the judge.
        """
        judge: dict[str, Any] = {"episode": episode, "instruction": instruction, "goals": [], "refused": None}
        set_instruction = getattr(self.env, "set_instruction", None)
        try:
            if set_instruction is None:
                raise TandemError(f"{type(self.env).__name__} has no reference reading (set_instruction) to judge "
                                  "an instruction")
            set_instruction(instruction)
        except TandemError as e:
            judge["refused"] = str(e)
            log.warning("the judge refused %r: %s", instruction, e)
        else:
            self.reset(seed=(self.first_seed or 0) + self.episodes_started)
            judge["goals"] = list(self.env.spec.goals)[: self.goals_limit]
        self.episodes_started += 1
        self.judge = judge
        if self.last_obs is not None:
            self.publish(self.last_obs, self.last_info)
        return judge

    def serve_episode_requests(self) -> bool:
        """Start an episode for the newest request not served yet (older ones were superseded); True if one was."""
        with self._lock:
            reqs, self._episode_requests = self._episode_requests, []
        current = self.judge.get("episode") if self.judge else None
        new = [r for r in reqs if r["episode"] != current]
        if not new:
            return False
        self.start_episode(new[-1]["instruction"], new[-1]["episode"])
        return True

    def judged_success(self, obs: Observation | None = None) -> bool:
        """Whether every goal of the judge's reading holds in ``obs`` (default the last observation); False before
        an episode was started or when the judge refused the instruction."""
        obs = self.last_obs if obs is None else obs
        judge = self.judge
        if obs is None or obs.privileged is None or judge is None or judge["refused"]:
            return False
        preds = obs.privileged.get("predicates") or {}
        return all(bool(preds.get(g, False)) for g in judge["goals"])

    # ---- state out ---------------------------------------------------------------------------------------
    def publish(self, obs: Observation, info: dict[str, Any]) -> None:
        """Publish ``obs`` (images, arm and finger joints, eef pose) and the oracle channel, stamped now."""
        types, c, now = self.transport.msg_type, self.config, self.transport.now()
        for name, pub in self._pub_img.items():
            frame = c.topics.cameras[name].frame_id or f"{name}_optical_frame"
            pub(cv.image_to_msg(types, obs.images[name], now, frame))
            if name in self._pub_info:
                self._pub_info[name](cv.camera_info_to_msg(types, self.camera_intrinsics[name],
                                                           obs.images[name].shape[:2], now, frame))
        a = c.action
        width = float(obs.proprio[7]) if obs.proprio.shape[0] >= 8 else 0.0
        names: list[str] = []
        positions: list[float] = []
        if a.arm_joints and obs.joints is not None and len(obs.joints) == len(a.arm_joints):
            names, positions = list(a.arm_joints), [float(q) for q in obs.joints]
        if a.gripper_joints:
            names += list(a.gripper_joints)
            positions += [a.gripper_joint_position(width)] * len(a.gripper_joints)
        self._pub_js(cv.joint_state_to_msg(types, names, positions, now))
        self._pub_pose(cv.pose_to_msg(types, obs.proprio[:3], obs.proprio[3:7], now, c.base_frame))
        if self._pub_oracle is not None and obs.privileged is not None:
            priv = {k: v for k, v in obs.privileged.items() if k != "goals"}  # the judge's goals go in "judge"
            judge, success = self.judge, self.judged_success(obs)
            priv["success"] = success
            self._pub_oracle(cv.json_to_msg(types, {
                "stamp": now, "step": self.steps, "privileged": to_jsonable(priv), "success": success,
                "episode": None if judge is None else judge["episode"], "judge": judge}))

    # ---- loop -------------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> Observation:
        """Reset the env and publish its first observation (the first seed given is :attr:`first_seed`)."""
        if self.first_seed is None and seed is not None:
            self.first_seed = int(seed)
        obs, info = self.env.reset(seed=seed)
        self.last_obs, self.last_info, self.steps = obs, info, 0
        self.publish(obs, info)
        return obs

    def step_once(self) -> bool:
        """Serve episode and oracle requests; step the env with the latest fresh command (else hold); publish.

        Returns True if the env was stepped.
        """
        if self._pub_oracle is not None:
            self.serve_episode_requests()
        if self.oracle_server is not None:
            self.oracle_server.serve_pending()
        now = self.transport.now()
        with self._lock:
            twist, width = self._twist, self._gripper_width
        stepped = False
        if twist is not None and now - twist[2] <= self.command_timeout_s:
            action = twist_to_action(twist[0], twist[1], width, self.config.action, self._gripper_action)
            self._gripper_action = float(action[6])
            obs, _r, _term, _trunc, info = self.env.step(action)
            self.last_obs, self.last_info = obs, info
            self.steps += 1
            stepped = True
        self.publish(self.last_obs, self.last_info)
        return stepped

    def run(self, duration_s: float | None = None, max_steps: int | None = None,
            stop_event: threading.Event | None = None, publish_for_s: float | None = None) -> None:
        """Run at ``config.rate_hz`` until ``duration_s`` (s), ``max_steps`` env steps or ``stop_event``.

        ``publish_for_s``: stop publishing (return) after this many seconds, to rehearse a robot
        driver that dies (the bridge's watchdog must then stop the robot).
        """
        dt, t0 = self.config.dt, time.monotonic()
        nxt = t0
        while True:
            if stop_event is not None and stop_event.is_set():
                return
            el = time.monotonic() - t0
            if (duration_s is not None and el >= duration_s) or (publish_for_s is not None and el >= publish_for_s):
                return
            if max_steps is not None and self.steps >= max_steps:
                return
            self.step_once()
            nxt += dt
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.monotonic()

