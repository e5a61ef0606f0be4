"""The rclpy transport: real ROS 2 nodes (ROS 2 Jazzy's rclpy from PyPI, ``tandem[rclpy]``, or a ROS 2 install).

Messages really cross between rclpy nodes (Fast DDS), and between an rclpy node and tandem's own Cyclone DDS
transport in both directions (the DDS transport's claim of ROS 2 wire compatibility, checked against a real ROS 2
stack). Skipped, with one line naming the missing piece, where rclpy is not installed; the missing-rclpy error itself
is tested everywhere. Discovery stays on this machine (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, tests/conftest.py).
"""

from __future__ import annotations

import random
import sys
import time

import numpy as np
import pytest
from rclpy_support import CONTROL_MSGS_MISSING, have, require_rclpy

from bridge import conversions as cv
from bridge.errors import TransportError


def wait_for(pred, publish, timeout=10.0):
    """Publish (``publish()``) every 50 ms until ``pred()`` or ``timeout`` (s); late joiners miss VOLATILE samples."""
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        publish()
        time.sleep(0.05)
    return pred()


@pytest.fixture
def domain() -> int:
    """A random ROS_DOMAIN_ID per test, so parallel runs do not cross-talk."""
    return random.randint(1, 200)


def test_rclpy_missing_is_one_line_naming_both_ways_to_get_it(monkeypatch):
    from bridge.rclpy_transport import RclpyTransport

    monkeypatch.setitem(sys.modules, "rclpy", None)  # import rclpy now raises ImportError, installed or not
    with pytest.raises(TransportError, match=r"pip install 'tandem\[rclpy\]'.*source /opt/ros/<distro>/setup.bash") as e:
        RclpyTransport()
    assert "\n" not in str(e.value)


def test_rclpy_node_round_trip(domain):
    require_rclpy()
    from bridge.rclpy_transport import RclpyTransport

    a, b = RclpyTransport("tandem_test_a", domain_id=domain), RclpyTransport("tandem_test_b", domain_id=domain)
    try:
        got = []
        b.create_subscription("/tandem_test/twist", "geometry_msgs/msg/TwistStamped", got.append)
        pub = a.create_publisher("/tandem_test/twist", "geometry_msgs/msg/TwistStamped")
        assert wait_for(lambda: got, lambda: pub(cv.twist_to_msg(a.msg_type, [0.1, 0, 0], [0, 0, 0.2], a.now(), "base")))
        lin, ang = cv.msg_to_twist(got[0])
        np.testing.assert_allclose(lin, [0.1, 0, 0])
        np.testing.assert_allclose(ang, [0, 0, 0.2])
        assert got[0].header.frame_id == "base"
    finally:
        a.close()
        b.close()


def test_every_message_type_the_bridge_uses_resolves_except_control_msgs(domain):
    """The PyPI packages carry every type the bridge needs but the gripper's, whose package is named when missing."""
    require_rclpy()
    from bridge.rclpy_transport import RclpyTransport

    t = RclpyTransport("tandem_test_types", domain_id=domain)
    try:
        for name in ("sensor_msgs/msg/Image", "sensor_msgs/msg/CameraInfo", "sensor_msgs/msg/JointState",
                     "geometry_msgs/msg/PoseStamped", "geometry_msgs/msg/TwistStamped", "std_msgs/msg/String",
                     "std_msgs/msg/Bool", "trajectory_msgs/msg/JointTrajectory"):
            assert t.msg_type(name).__name__ == name.rsplit("/", 1)[1]
        if not have("control_msgs"):
            with pytest.raises(TransportError, match="control_msgs, which is not installed.*not on PyPI"):
                t.msg_type("control_msgs/msg/GripperCommand")
    finally:
        t.close()


def test_a_gripper_topic_without_control_msgs_is_refused_naming_gripper_mode(domain):
    require_rclpy()
    if have("control_msgs"):
        pytest.skip("control_msgs is installed here (a ROS 2 install): the missing-package path cannot be exercised")
    from bridge.config import bridge_config_from_dict
    from bridge.rclpy_transport import RclpyTransport
    from bridge.robot_env import RobotEnv

    cfg = bridge_config_from_dict({
        "transport": "rclpy", "domain_id": domain, "watchdog": False,
        "topics": {"cameras": {"front": "/front/image"}, "eef_pose": "/eef", "twist_cmd": "/twist",
                   "gripper_cmd": "/gripper/command"}})
    t = RclpyTransport("tandem_test_gripper", domain_id=domain)
    try:
        with pytest.raises(TransportError, match=r"gripper_mode=topic .*control_msgs.*set gripper_mode: none") as e:
            RobotEnv(cfg, t)
        assert "\n" not in str(e.value)
    finally:
        t.close()


def test_gripper_command_over_rclpy(domain):
    require_rclpy()
    if not have("control_msgs"):
        pytest.skip(CONTROL_MSGS_MISSING)
    from bridge.rclpy_transport import RclpyTransport

    a, b = RclpyTransport("tandem_test_ga", domain_id=domain), RclpyTransport("tandem_test_gb", domain_id=domain)
    try:
        got = []
        b.create_subscription("/gripper/command", "control_msgs/msg/GripperCommand", got.append, reliable=True)
        pub = a.create_publisher("/gripper/command", "control_msgs/msg/GripperCommand")
        assert wait_for(lambda: got, lambda: pub(cv.gripper_to_msg(a.msg_type, 0.04, 20.0)))
        assert cv.msg_to_gripper(got[0]) == pytest.approx((0.04, 20.0))
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("direction", ["rclpy_to_dds", "dds_to_rclpy"])
def test_a_ros2_node_and_the_cyclone_dds_transport_understand_each_other(domain, direction):
    """A real ROS 2 node (rclpy on Fast DDS) and tandem's Cyclone DDS transport (loopback only) exchange an image, a
    joint state, a twist and a joint trajectory: same ``rt/`` topic names, same ``pkg::msg::dds_::T_`` types, same
    CDR layout. This is what lets ``transport: dds`` talk to a robot's ROS 2 nodes without a ROS install."""
    require_rclpy()
    pytest.importorskip("cyclonedds", reason="the DDS transport needs the cyclonedds package (tandem[ros])")
    from bridge.dds_transport import DdsTransport
    from bridge.rclpy_transport import RclpyTransport

    ros, dds = RclpyTransport("tandem_test_interop", domain_id=domain), DdsTransport(domain, loopback_only=True)
    src, dst = (ros, dds) if direction == "rclpy_to_dds" else (dds, ros)
    img = np.random.default_rng(0).integers(0, 255, (24, 32, 3), dtype=np.uint8)
    cases = [
        ("sensor_msgs/msg/Image", lambda: cv.image_to_msg(src.msg_type, img, src.now(), "cam_optical_frame"),
         lambda m: np.testing.assert_array_equal(cv.msg_to_image(m), img)),
        ("sensor_msgs/msg/JointState", lambda: cv.joint_state_to_msg(src.msg_type, ["j1", "j2"], [0.25, -1.5], src.now()),
         lambda m: np.testing.assert_allclose(cv.msg_to_joint_state(m)["position"], [0.25, -1.5])),
        ("geometry_msgs/msg/TwistStamped",
         lambda: cv.twist_to_msg(src.msg_type, [0.1, 0, 0], [0, 0, 0.2], src.now(), "base_link"),
         lambda m: np.testing.assert_allclose(np.concatenate(cv.msg_to_twist(m)), [0.1, 0, 0, 0, 0, 0.2])),
        ("trajectory_msgs/msg/JointTrajectory",
         lambda: cv.joint_trajectory_to_msg(src.msg_type, ["j1"], [[0.3]], 0.05, src.now(), "base_link"),
         lambda m: np.testing.assert_allclose(cv.msg_to_joint_trajectory(m)["positions"], [[0.3]])),
    ]
    try:
        for i, (type_name, make, check) in enumerate(cases):
            got: list = []
            topic = f"/tandem_test/interop{i}"
            dst.create_subscription(topic, type_name, got.append, reliable=True)
            pub = src.create_publisher(topic, type_name)
            assert wait_for(lambda got=got: got, lambda pub=pub, make=make: pub(make())), f"{type_name}: nothing crossed"
            check(got[0])
    finally:
        ros.close()
        dds.close()
