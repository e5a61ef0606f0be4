"""Message conversion round trips for every message type, through the CDR wire encoding."""

from __future__ import annotations

import struct

import numpy as np
import pytest

pytest.importorskip("cyclonedds", reason="the DDS message types need the cyclonedds package (tandem[ros])")

from bridge import conversions as cv  # noqa: E402
from bridge import messages as m  # noqa: E402
from bridge.errors import MalformedMessageError  # noqa: E402

types = m.REGISTRY.__getitem__
T = 1764460800.123456789


def wire(msg):
    """Serialise to CDR bytes and back (what crosses the DDS wire)."""
    data = msg.serialize()
    assert data[:2] == b"\x00\x01", "plain CDR little endian (XCDR1), as rmw_cyclonedds_cpp"
    return type(msg).deserialize(data)


def test_type_names_follow_rosidl_dds_convention():
    for ros_name, cls in m.REGISTRY.items():
        pkg, kind, name = ros_name.split("/")
        assert cls.__idl_typename__.replace(".", "::") == f"{pkg}::{kind}::dds_::{name}_"


def test_time_and_vector3_byte_layout():
    # builtin_interfaces/Time: int32 sec, uint32 nanosec, after the 4-byte encapsulation header
    assert m.Time(sec=7, nanosec=9).serialize() == b"\x00\x01\x00\x00" + struct.pack("<iI", 7, 9)
    assert m.Vector3(x=1.0, y=2.0, z=3.0).serialize() == b"\x00\x01\x00\x00" + struct.pack("<3d", 1, 2, 3)
    # Header: Time then string (uint32 length incl. NUL, bytes, NUL)
    h = m.Header(stamp=m.Time(sec=1, nanosec=2), frame_id="base").serialize()
    assert h == b"\x00\x01\x00\x00" + struct.pack("<iII", 1, 2, 5) + b"base\x00"


def test_stamp_round_trip():
    stamp = wire(cv.sec_to_stamp(types, T))
    assert abs(cv.stamp_to_sec(stamp) - T) < 1e-6
    with pytest.raises(MalformedMessageError, match="nanosec"):
        cv.stamp_to_sec(m.Time(sec=1, nanosec=1_500_000_000))


def test_image_round_trip_and_encodings():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (6, 5, 3), dtype=np.uint8)
    msg = wire(cv.image_to_msg(types, img, T, "cam"))
    assert (msg.height, msg.width, msg.step, msg.encoding, msg.header.frame_id) == (6, 5, 15, "rgb8", "cam")
    np.testing.assert_array_equal(cv.msg_to_image(msg), img)
    # bgr8 with row padding (step > 3 W)
    padded = np.zeros((6, 16), np.uint8)
    padded[:, :15] = img[:, :, ::-1].reshape(6, 15)
    bgr = m.Image(height=6, width=5, encoding="bgr8", step=16, data=padded.tobytes())
    np.testing.assert_array_equal(cv.msg_to_image(wire(bgr)), img)


@pytest.mark.parametrize("kw,match", [
    ({"encoding": "mono16"}, "unsupported"),
    ({"step": 10}, "step"),
    ({"data": b"\x00" * 7}, "bytes"),
    ({"height": 0}, "empty"),
])
def test_malformed_images_raise(kw, match):
    base = dict(height=2, width=2, encoding="rgb8", step=6, data=b"\x00" * 12)
    with pytest.raises(MalformedMessageError, match=match):
        cv.msg_to_image(m.Image(**{**base, **kw}))


def test_camera_info_round_trip():
    K = np.array([[100.0, 0, 64], [0, 100.0, 64], [0, 0, 1]])
    msg = wire(cv.camera_info_to_msg(types, K, (128, 160), T, "cam", D=[0.1, 0, 0, 0, 0]))
    d = cv.msg_to_camera_info(msg)
    np.testing.assert_allclose(d["K"], K)
    np.testing.assert_allclose(d["P"][:, :3], K)
    np.testing.assert_allclose(d["R"], np.eye(3))
    assert d["image_size"] == (128, 160) and d["distortion_model"] == "plumb_bob"
    np.testing.assert_allclose(d["D"], [0.1, 0, 0, 0, 0])


def test_joint_state_round_trip_and_malformed():
    msg = wire(cv.joint_state_to_msg(types, ["a", "b"], np.array([0.1, -0.2]), T, velocity=[1.0, 2.0]))
    d = cv.msg_to_joint_state(msg)
    assert d["name"] == ["a", "b"]
    np.testing.assert_allclose(d["position"], [0.1, -0.2])
    np.testing.assert_allclose(d["velocity"], [1.0, 2.0])
    assert d["effort"].size == 0
    with pytest.raises(MalformedMessageError, match="2 names but 1"):
        cv.msg_to_joint_state(m.JointState(name=["a", "b"], position=[0.0]))
    with pytest.raises(MalformedMessageError, match="NaN"):
        cv.msg_to_joint_state(m.JointState(name=["a"], position=[float("nan")]))
    with pytest.raises(MalformedMessageError, match="repeat"):
        cv.msg_to_joint_state(m.JointState(name=["a", "a"], position=[0.0, 0.0]))
    with pytest.raises(MalformedMessageError, match="velocity"):
        cv.msg_to_joint_state(m.JointState(name=["a"], position=[0.0], velocity=[1.0, 2.0]))


def test_pose_round_trip_converts_quaternion_order():
    q_wxyz = np.array([np.cos(0.3), 0, 0, np.sin(0.3)])
    msg = wire(cv.pose_to_msg(types, [0.1, 0.2, 0.3], q_wxyz, T, "base"))
    assert msg.pose.orientation.w == pytest.approx(q_wxyz[0]) and msg.pose.orientation.z == pytest.approx(q_wxyz[3])
    pos, q = cv.msg_to_pose(msg)
    np.testing.assert_allclose(pos, [0.1, 0.2, 0.3])
    np.testing.assert_allclose(q, q_wxyz)
    bad = m.PoseStamped(pose=m.Pose(orientation=m.Quaternion(x=0, y=0, z=0, w=2.0)))
    with pytest.raises(MalformedMessageError, match="unit quaternion"):
        cv.msg_to_pose(bad)


def test_twist_round_trip():
    msg = wire(cv.twist_to_msg(types, [0.1, -0.2, 0.3], [0.0, 0.5, -0.5], T, "base_link"))
    assert msg.header.frame_id == "base_link"
    lin, ang = cv.msg_to_twist(msg)
    np.testing.assert_allclose(lin, [0.1, -0.2, 0.3])
    np.testing.assert_allclose(ang, [0.0, 0.5, -0.5])
    with pytest.raises(MalformedMessageError):
        cv.msg_to_twist(m.TwistStamped(twist=m.Twist(linear=m.Vector3(x=float("inf")))))


def test_joint_trajectory_round_trip():
    q = np.array([[0.0, 0.1, 0.2], [0.1, 0.2, 0.3]])
    msg = wire(cv.joint_trajectory_to_msg(types, ["j1", "j2", "j3"], q, 0.05, T))
    d = cv.msg_to_joint_trajectory(msg)
    assert d["joint_names"] == ["j1", "j2", "j3"]
    np.testing.assert_allclose(d["positions"], q)
    np.testing.assert_allclose(d["time_from_start"], [0.05, 0.10])
    empty = cv.msg_to_joint_trajectory(wire(cv.joint_trajectory_to_msg(types, ["j1"], np.zeros((0, 1)), 0.05, T)))
    assert empty["positions"].shape == (0, 1)
    with pytest.raises(MalformedMessageError, match="point 0"):
        cv.msg_to_joint_trajectory(m.JointTrajectory(joint_names=["a", "b"], points=[m.JointTrajectoryPoint(positions=[0.0])]))


def test_gripper_command_round_trip():
    assert cv.msg_to_gripper(wire(cv.gripper_to_msg(types, 0.04, 20.0))) == (0.04, 20.0)
    with pytest.raises(MalformedMessageError):
        cv.msg_to_gripper(m.GripperCommand(position=float("nan"), max_effort=1.0))


def test_string_json_and_bool_round_trip():
    assert cv.msg_to_json(wire(cv.json_to_msg(types, {"a": [1, 2], "b": True}))) == {"a": [1, 2], "b": True}
    assert wire(m.Bool(data=True)).data is True
    for bad in ("not json", "[1, 2]"):
        with pytest.raises(MalformedMessageError):
            cv.msg_to_json(m.String(data=bad))
