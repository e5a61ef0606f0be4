"""The Cyclone DDS transport on loopback: ROS 2 wire naming (``rt/`` topics, ``dds_`` type names)."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

pytest.importorskip("cyclonedds", reason="the DDS transport needs the cyclonedds package (tandem[ros])")

from bridge import conversions as cv  # noqa: E402
from bridge import messages as m  # noqa: E402
from bridge.dds_transport import LOOPBACK_XML, DdsTransport, ros_topic_to_dds  # noqa: E402


@pytest.fixture
def domain() -> int:
    """A random DDS domain per test, so parallel runs do not cross-talk."""
    return random.randint(1, 200)


def wait_for(pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.01)
    return pred()


def test_topic_name_mangling():
    assert ros_topic_to_dds("/joint_states") == "rt/joint_states"
    assert ros_topic_to_dds("servo_node/delta_twist_cmds") == "rt/servo_node/delta_twist_cmds"


def test_loopback_config_pins_127_0_0_1():
    assert '<NetworkInterface address="127.0.0.1"/>' in LOOPBACK_XML
    assert "<AllowMulticast>false</AllowMulticast>" in LOOPBACK_XML


def test_raw_dds_reader_on_rt_topic_receives_ros_typed_message(domain):
    """What a ROS 2 node on rmw_cyclonedds_cpp would see: topic rt/joint_states, type JointState_."""
    from cyclonedds.domain import DomainParticipant
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic

    t = DdsTransport(domain)
    try:
        raw = DomainParticipant(domain)
        reader = DataReader(raw, Topic(raw, "rt/joint_states", m.JointState))
        pub = t.create_publisher("/joint_states", "sensor_msgs/msg/JointState")
        got = []

        def poll():
            pub(cv.joint_state_to_msg(t.msg_type, ["j1"], [0.25], time.time()))
            got.extend(reader.take())
            return bool(got)

        assert wait_for(poll)
        assert got[0].name == ["j1"] and got[0].position == [0.25]
        assert m.JointState.__idl_typename__.replace(".", "::") == "sensor_msgs::msg::dds_::JointState_"
    finally:
        t.close()


def test_two_transports_exchange_images(domain):
    a, b = DdsTransport(domain), DdsTransport(domain)
    try:
        got = []
        b.create_subscription("/cam/image_raw", "sensor_msgs/msg/Image", got.append)
        pub = a.create_publisher("/cam/image_raw", "sensor_msgs/msg/Image")
        img = np.random.default_rng(0).integers(0, 255, (32, 48, 3), dtype=np.uint8)

        def poll():
            pub(cv.image_to_msg(a.msg_type, img, time.time(), "cam"))
            time.sleep(0.02)
            return bool(got)

        assert wait_for(poll)
        np.testing.assert_array_equal(cv.msg_to_image(got[-1]), img)
    finally:
        a.close()
        b.close()
