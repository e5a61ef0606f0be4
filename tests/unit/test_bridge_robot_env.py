"""RobotEnv over the in-process transport: observation assembly, commands, and every kind of bad input.

Time is a manual clock shared by the fake robot and the env (the transport's clock, which stamps messages and
judges their age): message ages and policy deadlines are set by advancing it, never by how fast a loaded machine
runs the test. Only the pacing of commands (``execute_chunk``) and the watchdog thread use real time.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("cyclonedds", reason="the message types need the cyclonedds package (tandem[ros])")

from bridge import conversions as cv  # noqa: E402
from bridge.config import bridge_config_from_dict  # noqa: E402
from bridge.errors import MissingTopicError  # noqa: E402
from bridge.robot_env import RobotEnv  # noqa: E402
from bridge.runner import run_guarded  # noqa: E402
from bridge.transport import DryRunTransport, InProcessBus, InProcessTransport  # noqa: E402
from tandem.core.errors import ConfigError, NonFiniteActionError  # noqa: E402
from tandem.core.protocols import Env  # noqa: E402

H, W = 8, 10


class ManualClock:
    """A clock that moves only when told (s)."""

    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


def config(**over) -> dict:
    d = {
        "transport": "inprocess", "rate_hz": 100.0, "base_frame": "base", "image_size": [H, W],
        "startup_timeout_s": 0.3, "watchdog": False,
        "topics": {"cameras": {"front": {"image": "/front/image", "info": "/front/camera_info"}}, "joint_states": "/joint_states", "eef_pose": "/eef",
                   "twist_cmd": "/servo/twist", "gripper_cmd": "/gripper/cmd"},
        "action": {"linear_scale_mps": 0.1, "angular_scale_radps": 0.5, "gripper_joints": ["f1", "f2"]},
        "safety": {"workspace_min": [-1, -1, 0], "workspace_max": [1, 1, 1], "max_message_age_s": 0.2,
                   "policy_deadline_s": 0.2, "max_linear_accel_mps2": 100.0, "max_angular_accel_radps2": 100.0},
    }
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(d.get(k), dict):
            d[k] = {**d[k], **v}
        else:
            d[k] = v
    return d


class FakeRobot:
    """Publishes camera, joints and pose on the bus; records the commands it receives."""

    def __init__(self, bus: InProcessBus, clock: ManualClock):
        self.clock = clock
        self.t = InProcessTransport(bus, clock)
        ty = self.t.msg_type
        self.ty = ty
        self.pub_img = self.t.create_publisher("/front/image", "sensor_msgs/msg/Image")
        self.pub_js = self.t.create_publisher("/joint_states", "sensor_msgs/msg/JointState")
        self.pub_pose = self.t.create_publisher("/eef", "geometry_msgs/msg/PoseStamped")
        self.pub_estop = self.t.create_publisher("/tandem/estop", "std_msgs/msg/Bool")
        self.pub_reset = self.t.create_publisher("/tandem/estop_reset", "std_msgs/msg/Bool")
        self.twists, self.grippers, self.trajs = [], [], []
        self.t.create_subscription("/servo/twist", "geometry_msgs/msg/TwistStamped", self.twists.append)
        self.t.create_subscription("/gripper/cmd", "control_msgs/msg/GripperCommand", self.grippers.append)
        self.t.create_subscription("/jtc/joint_trajectory", "trajectory_msgs/msg/JointTrajectory", self.trajs.append)
        self.img = np.arange(H * W * 3, dtype=np.uint8).reshape(H, W, 3)

    def publish(self, stamp: float | None = None, pos=(0.1, 0.0, 0.5), width=0.06):
        s = self.clock() if stamp is None else stamp
        self.pub_img(cv.image_to_msg(self.ty, self.img, s, "cam"))
        self.pub_js(cv.joint_state_to_msg(self.ty, ["j1", "f1", "f2"], [0.3, width / 2, width / 2], s))
        self.pub_pose(cv.pose_to_msg(self.ty, pos, [1, 0, 0, 0], s, "base"))

    def last_twist(self):
        return cv.msg_to_twist(self.twists[-1])


@pytest.fixture
def rig():
    bus = InProcessBus()
    robot = FakeRobot(bus, ManualClock())
    envs = []

    def make(**over):
        env = RobotEnv(bridge_config_from_dict(config(**over)), InProcessTransport(bus, robot.clock))
        envs.append(env)
        return env

    yield robot, make, bus
    for e in envs:
        e.close()


def kinds(env) -> list[str]:
    return [e["kind"] for e in env.events]


def test_observation_assembly_and_env_protocol(rig):
    robot, make, _ = rig
    env = make()
    assert isinstance(env, Env) and env.action_dim == 7
    robot.publish()
    obs, info = env.reset(seed=3)
    np.testing.assert_array_equal(obs.images["front"], robot.img)
    np.testing.assert_allclose(obs.proprio, [0.1, 0, 0.5, 1, 0, 0, 0, 0.06], atol=1e-6)
    assert obs.privileged is None and info["seed"] == 3 and "success" not in info


def test_step_sends_mapped_twist_and_gripper(rig):
    robot, make, _ = rig
    env = make()
    robot.publish()
    env.reset()
    robot.publish()
    obs, r, term, trunc, info = env.step(np.array([0.5, 0, -0.5, 0, 0, 1.0, 1.0], np.float32))
    lin, ang = robot.last_twist()
    np.testing.assert_allclose(lin, [0.05, 0, -0.05])
    np.testing.assert_allclose(ang, [0, 0, 0.5])
    assert robot.twists[-1].header.frame_id == "base"
    assert cv.msg_to_gripper(robot.grippers[-1])[0] == pytest.approx(0.0)  # +1 = closed
    assert not info["stopped"] and not term and not trunc
    n = len(robot.grippers)
    robot.publish()
    env.step(np.array([0.5, 0, -0.5, 0, 0, 1.0, 1.0]))
    assert len(robot.grippers) == n  # unchanged gripper target is not re-sent


def test_missing_topic_at_reset_raises_naming_it(rig):
    robot, make, _ = rig
    env = make()
    robot.pub_img(cv.image_to_msg(robot.ty, robot.img, robot.clock(), "cam"))
    with pytest.raises(MissingTopicError, match="/joint_states"):
        env.reset()


def test_stale_topic_stops(rig):
    robot, make, _ = rig
    env = make()
    robot.publish()
    env.reset()
    robot.clock.advance(0.25)
    robot.publish(stamp=robot.clock() - 1.0)  # older than max_message_age_s = 0.2 s (and out of order)
    _, _, _, _, info = env.step(np.full(7, 0.5))
    assert info["stopped"] and "stale" in kinds(env)
    lin, ang = robot.last_twist()
    assert not lin.any() and not ang.any()


def test_malformed_out_of_order_and_future_messages_are_dropped(rig):
    robot, make, _ = rig
    env = make()
    robot.publish()
    env.reset()
    now = robot.clock()
    robot.pub_js(robot.ty("sensor_msgs/msg/JointState")(header=cv.make_header(robot.ty, now, ""), name=["a", "b"],
                                                        position=[0.0], velocity=[], effort=[]))
    robot.pub_img(robot.ty("sensor_msgs/msg/Image")(header=cv.make_header(robot.ty, now, ""), height=H, width=W,
                                                    encoding="rgb8", step=3 * W, data=b"\x00" * 5))
    robot.pub_pose(cv.pose_to_msg(robot.ty, [0, 0, 0.5], [1, 0, 0, 0], now - 10.0, "base"))  # older than the last
    robot.pub_pose(cv.pose_to_msg(robot.ty, [0, 0, 0.5], [1, 0, 0, 0], now + 5.0, "base"))  # clock skew
    robot.pub_pose(cv.pose_to_msg(robot.ty, [0, 0, float("nan")], [1, 0, 0, 0], now, "base"))
    k = kinds(env)
    assert k.count("malformed_message") == 3 and "out_of_order" in k and "clock_skew" in k
    assert env._latest["/eef"].value[0][2] == pytest.approx(0.5)


def test_wrong_image_size_is_malformed(rig):
    robot, make, _ = rig
    env = make()
    robot.pub_img(cv.image_to_msg(robot.ty, np.zeros((4, 4, 3), np.uint8), robot.clock(), "cam"))
    assert "malformed_message" in kinds(env) and "config.image_size" in env.events[-1]["detail"]


def test_nan_action_stops_then_raises(rig):
    robot, make, _ = rig
    env = make()
    robot.publish()
    env.reset()
    n = len(robot.twists)
    with pytest.raises(NonFiniteActionError):
        env.step(np.array([np.nan, 0, 0, 0, 0, 0, 0]))
    assert len(robot.twists) == n + 1 and not robot.last_twist()[0].any()
    assert kinds(env)[-1] == "nonfinite_action"


def test_policy_deadline_miss_stops(rig):
    robot, make, _ = rig
    env = make()
    robot.publish()
    env.reset()
    robot.clock.advance(0.25)  # the "policy" takes longer than policy_deadline_s = 0.2 s
    robot.publish()
    _, _, _, _, info = env.step(np.full(7, 0.5))
    assert info["stopped"] and [e["kind"] for e in info["safety_events"]] == ["deadline_missed"]


def test_estop_topic_latches_until_reset_topic(rig):
    robot, make, _ = rig
    env = make()
    robot.publish()
    env.reset()
    robot.pub_estop(robot.ty("std_msgs/msg/Bool")(data=True))
    assert not robot.last_twist()[0].any()  # a stop is sent at once
    for _ in range(2):
        robot.publish()
        _, _, _, trunc, info = env.step(np.full(7, 0.5))
        assert info["stopped"] and trunc
    robot.pub_reset(robot.ty("std_msgs/msg/Bool")(data=True))
    robot.publish()
    _, _, _, trunc, info = env.step(np.full(7, 0.5))
    assert not info["stopped"] and not trunc
    assert {"estop", "estop_latched", "estop_reset"} <= set(kinds(env))


def test_workspace_limit_through_env(rig):
    robot, make, _ = rig
    env = make()
    robot.publish(pos=(0.0, 0.0, 0.9995))
    env.reset()
    robot.publish(pos=(0.0, 0.0, 0.9995))
    env.step(np.array([0, 0, 1.0, 0, 0, 0, -1]))  # 0.1 m/s up, 0.5 mm below the top face
    assert robot.last_twist()[0][2] == pytest.approx(0.05)  # 0.0005 m left / dt 0.01 s (100 Hz)
    assert "workspace" in kinds(env)


def test_agent_exception_commands_stop(rig):
    robot, make, _ = rig
    env = make()
    robot.publish()
    env.reset()
    robot.publish()
    env.step(np.full(7, 0.5))
    assert robot.last_twist()[0].any()

    def episode():
        raise RuntimeError("planner crashed")

    with pytest.raises(RuntimeError):
        run_guarded(env, episode)
    assert not robot.last_twist()[0].any()
    assert env.events[-1]["kind"] == "stop_requested" and "planner crashed" in env.events[-1]["detail"]


def test_watchdog_thread_stops_a_silent_policy(rig):
    robot, make, _ = rig
    env = make(watchdog=True, safety={"policy_deadline_s": 0.05})
    robot.publish()
    env.reset()
    robot.publish()
    env.step(np.full(7, 0.5))
    assert robot.last_twist()[0].any()
    robot.clock.advance(0.2)  # no step: the watchdog must stop the robot
    deadline = time.monotonic() + 10.0  # the watchdog thread polls every dt of real time
    while robot.last_twist()[0].any() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not robot.last_twist()[0].any()
    assert "deadline_missed" in kinds(env)


def test_dry_run_sends_nothing(rig):
    robot, make, bus = rig
    dry = DryRunTransport(InProcessTransport(bus, robot.clock))
    env = RobotEnv(bridge_config_from_dict(config()), dry)
    try:
        robot.publish()
        env.reset()
        robot.publish()
        env.step(np.full(7, 0.5))
        assert robot.twists == [] and robot.grippers == []
        assert [t for t, _ in dry.sent].count("/servo/twist") == 2
    finally:
        env.close()


def test_oracle_side_channel_is_off_by_default(rig):
    robot, make, _ = rig
    env = make()
    pub = robot.t.create_publisher("/tandem/oracle/privileged", "std_msgs/msg/String")
    pub(cv.json_to_msg(robot.ty, {"privileged": {"predicates": {}}, "success": True}))
    robot.publish()
    obs, info = env.reset()
    assert obs.privileged is None and "success" not in info


def test_joint_mode_sends_trajectory_and_holds_on_stop(rig):
    robot, make, _ = rig
    env = make(topics={"joint_trajectory_cmd": "/jtc/joint_trajectory", "twist_cmd": None},
               action={"space": "joint_pos", "arm_joints": ["j1"]})
    assert env.action_dim == 2
    robot.publish()
    env.reset()
    assert cv.msg_to_joint_trajectory(robot.trajs[-1])["positions"].shape == (0, 1)  # stop = empty = hold
    robot.publish()
    env.step(np.array([0.305, -1.0]))
    d = cv.msg_to_joint_trajectory(robot.trajs[-1])
    assert d["joint_names"] == ["j1"] and d["positions"][0, 0] == pytest.approx(0.305)
    robot.publish()
    env.step(np.array([3.0, -1.0]))  # far away: clipped to max_joint_speed * dt from q = 0.3
    assert cv.msg_to_joint_trajectory(robot.trajs[-1])["positions"][0, 0] == pytest.approx(0.31)
    assert "joint_speed_limit" in kinds(env)


def test_image_resize_crops_to_aspect_then_resizes(rig):
    robot, make, _ = rig
    env = make(image_resize=True)
    big = np.zeros((16, 40, 3), np.uint8)
    big[:, 10:30] = 255  # the centre crop (16 x 20 for an 8 x 10 target) is all white
    robot.pub_img(cv.image_to_msg(robot.ty, big, robot.clock(), "cam"))
    img = env._latest["/front/image"].value
    assert img.shape == (H, W, 3) and img.min() == 255


def test_gripper_deadband(rig):
    robot, make, _ = rig
    env = make(action={"gripper_deadband_m": 0.005})
    robot.publish()
    env.reset()
    widths = []
    for g in (-1.0, -0.95, -0.5, -0.45):  # widths 0.08, 0.078, 0.06, 0.058 m
        robot.publish()
        env.step(np.array([0, 0, 0, 0, 0, 0, g]))
        widths = [cv.msg_to_gripper(x)[0] for x in robot.grippers]
    assert widths == pytest.approx([0.08, 0.06])


def test_planner_exception_inside_the_agent_loop_stops_the_robot(rig):
    """A planner that raises inside tandem's real agent loop: the episode fails, the robot is stopped."""
    from memory.task_memory import TaskMemoryV1
    from tandem.runtime.agent import HierarchicalAgent
    from tandem.runtime.rollout import run_episode

    class CrashingPlanner:
        is_oracle, source = False, "crashing"
        grounding = None

        def reset(self, task):
            pass

        def plan(self, observation, memory):
            raise RuntimeError("VLM server returned garbage")

        def read_goals(self, observation, memory):
            return None

    class IdleExecutor:
        is_oracle = False

        def reset(self):
            pass

        def set_subgoal(self, subgoal, task=None):
            pass

        def select_action(self, observation):
            return np.zeros(7, np.float32)

        def subgoal_done(self):
            return False

    robot, make, _ = rig
    env = make()
    robot.publish()
    class NoVerifier:
        is_oracle = False

        def reset(self, task, memory):
            pass

        def verify(self, before, after, subgoal):
            raise AssertionError("never reached: the planner raises first")

    agent = HierarchicalAgent(planner=CrashingPlanner(), verifier=NoVerifier(), executor=IdleExecutor(),
                              memory=TaskMemoryV1())
    result = run_guarded(env, lambda: run_episode(env, agent, seed=0, record_video=False))
    assert not result.summary["success"] and "VLM server returned garbage" in result.summary["failure"]
    assert not robot.last_twist()[0].any()
    assert env.events[-1]["kind"] == "stop_requested" and "garbage" in env.events[-1]["detail"]


def test_prolonged_staleness_ends_the_episode_after_a_stop(rig):
    robot, make, _ = rig
    env = make(abort_after_stale_s=0.1)
    robot.publish()
    env.reset()
    robot.clock.advance(0.25)  # the robot went silent
    _, _, _, _, info = env.step(np.full(7, 0.5))  # first stale step: stop, keep going
    assert info["stopped"]
    robot.clock.advance(0.15)
    with pytest.raises(MissingTopicError, match="stale for more than 0.1 s"):
        env.step(np.full(7, 0.5))
    assert not robot.last_twist()[0].any()


def test_camera_info_and_bad_action_length(rig):
    robot, make, _ = rig
    env = make()
    pub = robot.t.create_publisher("/front/camera_info", "sensor_msgs/msg/CameraInfo")
    K = np.array([[50.0, 0, 5], [0, 50.0, 4], [0, 0, 1]])
    pub(cv.camera_info_to_msg(robot.ty, K, (H, W), robot.clock(), "cam"))
    np.testing.assert_allclose(env.camera_info["front"]["K"], K)
    robot.publish()
    env.reset()
    with pytest.raises(ConfigError, match="7"):
        env.step(np.zeros(5))
    assert env.events[-1]["kind"] == "bad_action" and not robot.last_twist()[0].any()


def test_action_chunk_is_sent_as_timed_commands(rig):
    from tandem.core.types import ActionChunk

    robot, make, _ = rig
    env = make()
    robot.publish()
    env.reset()
    n = len(robot.twists)
    chunk = ActionChunk(actions=np.tile([0.1, 0, 0, 0, 0, 0, -1], (4, 1)), dt=0.01)
    t0 = time.monotonic()
    *_, info = env.execute_chunk(chunk)
    assert info["executed"] == 4 and len(robot.twists) == n + 4
    assert time.monotonic() - t0 >= 0.03  # paced at dt, not sent in a burst
    with pytest.raises(ConfigError, match="dt"):
        env.execute_chunk(ActionChunk(actions=np.zeros((2, 7)), dt=0.05))
    with pytest.raises(ConfigError, match="space"):
        env.execute_chunk(ActionChunk(actions=np.zeros((2, 7)), dt=0.01, space="joint_pos"))


def publish_split(robot, width=0.06, stamp=None, arm=True, gripper=True):
    """Arm and gripper joints in separate JointState messages, as joint_state_broadcaster + a gripper driver do."""
    s = robot.clock() if stamp is None else stamp
    robot.pub_img(cv.image_to_msg(robot.ty, robot.img, s, "cam"))
    robot.pub_pose(cv.pose_to_msg(robot.ty, (0.1, 0.0, 0.5), [1, 0, 0, 0], s, "base"))
    if arm:
        robot.pub_js(cv.joint_state_to_msg(robot.ty, ["j1", "j2"], [0.3, -0.2], s))
    if gripper:
        robot.pub_js(cv.joint_state_to_msg(robot.ty, ["f1", "f2"], [width / 2, width / 2], s))


def test_split_joint_states_are_merged_by_name(rig):
    """Issue 13: arm [j1, j2] and gripper [f1, f2] alternating on /joint_states read as width 0.0, 0.06, 0.0, 0.06."""
    robot, make, _ = rig
    env = make()
    publish_split(robot)
    obs, _ = env.reset()
    widths = [float(obs.proprio[7])]
    for _ in range(3):
        robot.clock.advance(0.01)
        publish_split(robot)
        obs, *_ = env.step(np.zeros(7))
        widths.append(float(obs.proprio[7]))
    assert widths == pytest.approx([0.06] * 4)
    # the arm message arriving last does not hide the gripper
    robot.clock.advance(0.01)
    publish_split(robot, width=0.04, arm=False)
    publish_split(robot, width=0.0, gripper=False)
    obs, *_ = env.step(np.zeros(7))
    assert obs.proprio[7] == pytest.approx(0.04)


def test_each_joint_keeps_its_own_freshness(rig):
    robot, make, _ = rig
    env = make()
    publish_split(robot)
    env.reset()
    robot.clock.advance(0.25)
    publish_split(robot, gripper=False)  # the gripper driver went silent; the arm keeps publishing
    _, _, _, _, info = env.step(np.full(7, 0.5))
    assert info["stopped"]
    (ev,) = [e for e in info["safety_events"] if e["stopped"]]
    assert ev["kind"] == "stale" and "/joint_states[f1]" in ev["detail"] and "/joint_states[f2]" in ev["detail"]
    assert "j1" not in ev["detail"]  # arm joints are not read by name in eef_delta mode


def test_a_gripper_joint_never_received_is_named_at_reset(rig):
    robot, make, _ = rig
    env = make()
    publish_split(robot, gripper=False)
    with pytest.raises(MissingTopicError, match=r"/joint_states\[f1\]: no valid message"):
        env.reset()


def test_an_older_message_does_not_overwrite_a_newer_joint_value(rig):
    robot, make, _ = rig
    env = make()
    publish_split(robot, width=0.06)
    env.reset()
    publish_split(robot, width=0.02, stamp=robot.clock() - 0.05, arm=False)  # late delivery of an old message
    obs, *_ = env.step(np.zeros(7))
    assert obs.proprio[7] == pytest.approx(0.06)
    assert any(e["kind"] == "out_of_order" and "['f1', 'f2']" in e["detail"] for e in env.events)


def test_joint_mode_reads_arm_joints_from_their_own_messages(rig):
    robot, make, _ = rig
    env = make(topics={"joint_trajectory_cmd": "/jtc/joint_trajectory", "twist_cmd": None},
               action={"space": "joint_pos", "arm_joints": ["j1", "j2"]})
    publish_split(robot)
    env.reset()
    robot.clock.advance(0.01)
    publish_split(robot)
    env.step(np.array([0.305, -0.2, -1.0]))
    d = cv.msg_to_joint_trajectory(robot.trajs[-1])
    assert d["joint_names"] == ["j1", "j2"] and d["positions"][0] == pytest.approx([0.305, -0.2])


def test_gripper_command_is_sent_in_the_driver_units(rig):
    """franka_gripper takes half the finger gap: opening to 0.08 m sends position 0.04 (effort as configured)."""
    robot, make, _ = rig
    env = make(action={"gripper_command_scale": 0.5, "gripper_command_limits": [0.0, 0.04], "gripper_effort_n": 30.0})
    robot.publish()
    env.reset()
    robot.publish()
    env.step(np.array([0, 0, 0, 0, 0, 0, -1.0]))
    assert cv.msg_to_gripper(robot.grippers[-1]) == pytest.approx((0.04, 30.0))


def test_the_arm_joints_reach_the_observation_in_every_action_space(rig):
    """Observation.joints (rad, arm_joints' order) is what the learned planner keeps the wrist's turn inside its
    limit with; in eef_delta mode too, where the arm joints are read but not required fresh."""
    robot, make, _ = rig
    eef = make(action={"arm_joints": ["j2", "j1"]})
    publish_split(robot)
    obs, _ = eef.reset()
    np.testing.assert_allclose(obs.joints, [-0.2, 0.3], atol=1e-6)
    joint = make(topics={"joint_trajectory_cmd": "/jtc/joint_trajectory", "twist_cmd": None},
                 action={"space": "joint_pos", "arm_joints": ["j1", "j2"]})
    publish_split(robot)
    obs, _ = joint.reset()
    np.testing.assert_allclose(obs.joints, [0.3, -0.2], atol=1e-6)
    # no arm_joints configured (the UR example), or one never received: not known, never zeros
    plain = make()
    publish_split(robot)
    assert plain.reset()[0].joints is None
    partial = make(action={"arm_joints": ["j1", "j3"]})
    publish_split(robot)
    assert partial.reset()[0].joints is None
