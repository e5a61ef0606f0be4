"""Conversions between ROS 2 messages and numpy, independent of the transport.

Every function works on any object with the ROS 2 field names, so the same code converts
``rclpy`` messages and the Cyclone DDS IDL classes of :mod:`bridge.messages`. Constructors take a
``types`` resolver: ROS 2 interface name (``"sensor_msgs/msg/Image"``) -> message class
(``Transport.msg_type``).

Conventions: images ``uint8 (H, W, 3)`` RGB, origin top-left (``sensor_msgs/Image`` rows go top to
bottom, REP 104 / ``sensor_msgs`` docs); quaternions in tandem are **wxyz**, in ROS ``geometry_msgs``
they are xyzw (converted here); stamps are seconds (float) <-> ``builtin_interfaces/Time``.

Every ``msg_to_*`` raises :class:`bridge.errors.MalformedMessageError` (naming the field) on bad
sizes, unsupported encodings or non-finite numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bridge.errors import MalformedMessageError

TypeResolver = Callable[[str], type]

#: Image encodings accepted (``sensor_msgs/image_encodings.hpp`` names) -> channel order.
SUPPORTED_ENCODINGS = ("rgb8", "bgr8")


def _finite(name: str, x: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(x)):
        raise MalformedMessageError(f"{name} contains NaN or inf: {x.tolist()}")
    return x


# ---- time ---------------------------------------------------------------------------------------------
def stamp_to_sec(stamp: Any) -> float:
    """``builtin_interfaces/Time`` -> seconds (float).

    Raises:
        MalformedMessageError: if ``nanosec`` is outside ``[0, 1e9)``.
    """
    sec, nsec = int(stamp.sec), int(stamp.nanosec)
    if not 0 <= nsec < 1_000_000_000:
        raise MalformedMessageError(f"header.stamp.nanosec={nsec} outside [0, 1e9)")
    return sec + nsec * 1e-9


def sec_to_stamp(types: TypeResolver, t: float) -> Any:
    """Seconds (float, >= 0) -> ``builtin_interfaces/Time`` (ROS 2 ``rclpy.time`` convention)."""
    sec = math.floor(t)
    nsec = min(int(round((t - sec) * 1e9)), 999_999_999)
    return types("builtin_interfaces/msg/Time")(sec=int(sec), nanosec=nsec)


def duration_to_sec(d: Any) -> float:
    """Seconds of a ROS 2 ``builtin_interfaces/Duration`` or ``Time`` (``sec + nanosec * 1e-9``)."""
    return int(d.sec) + int(d.nanosec) * 1e-9


def sec_to_duration(types: TypeResolver, t: float) -> Any:
    """A ROS 2 ``builtin_interfaces/msg/Time`` of ``t`` seconds (nanoseconds rounded, at most 999,999,999)."""
    sec = math.floor(t)
    nsec = min(int(round((t - sec) * 1e9)), 999_999_999)
    return types("builtin_interfaces/msg/Duration")(sec=int(sec), nanosec=nsec)


def make_header(types: TypeResolver, t: float, frame_id: str) -> Any:
    """``std_msgs/Header`` with ``stamp`` = ``t`` (s) and ``frame_id``."""
    return types("std_msgs/msg/Header")(stamp=sec_to_stamp(types, t), frame_id=frame_id)


# ---- sensor_msgs/Image, CameraInfo ----------------------------------------------------------------------
def image_to_msg(types: TypeResolver, img: np.ndarray, t: float, frame_id: str) -> Any:
    """``uint8 (H, W, 3)`` RGB -> ``sensor_msgs/Image`` (``rgb8``, ``step`` = 3 W, little endian).

    Raises:
        MalformedMessageError: if ``img`` is not ``uint8 (H, W, 3)``.
    """
    if not (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3):
        raise MalformedMessageError(f"image must be uint8 (H, W, 3), got {getattr(img, 'dtype', None)} "
                                    f"{getattr(img, 'shape', None)}")
    h, w, _ = img.shape
    return types("sensor_msgs/msg/Image")(header=make_header(types, t, frame_id), height=h, width=w,
                                          encoding="rgb8", is_bigendian=0, step=3 * w,
                                          data=np.ascontiguousarray(img).tobytes())


def msg_to_image(msg: Any) -> np.ndarray:
    """``sensor_msgs/Image`` (``rgb8`` or ``bgr8``, any ``step`` >= 3 W) -> ``uint8 (H, W, 3)`` RGB.

    Raises:
        MalformedMessageError: on an unsupported encoding, zero size, ``step`` < 3 W, or a data
            length different from ``step * height``.
    """
    h, w, step, enc = int(msg.height), int(msg.width), int(msg.step), str(msg.encoding)
    if enc not in SUPPORTED_ENCODINGS:
        raise MalformedMessageError(f"image encoding {enc!r} unsupported; supported: {SUPPORTED_ENCODINGS}")
    if h <= 0 or w <= 0:
        raise MalformedMessageError(f"image size {h}x{w} is empty")
    if step < 3 * w:
        raise MalformedMessageError(f"image step {step} < 3 * width {w}")
    data = msg.data
    buf = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else data.astype(np.uint8)
    if buf.size != step * h:
        raise MalformedMessageError(f"image data has {buf.size} bytes, expected step*height = {step * h}")
    img = buf.reshape(h, step)[:, : 3 * w].reshape(h, w, 3)
    if enc == "bgr8":
        img = img[:, :, ::-1]
    return np.ascontiguousarray(img)


def camera_info_to_msg(types: TypeResolver, K: np.ndarray, image_size: tuple[int, int], t: float,
                       frame_id: str, D: Sequence[float] = ()) -> Any:
    """Pinhole intrinsics ``K (3, 3)`` (px) -> ``sensor_msgs/CameraInfo`` (``plumb_bob``, R = I, P = [K|0])."""
    K = np.asarray(K, np.float64).reshape(3, 3)
    P = np.concatenate([K, np.zeros((3, 1))], axis=1)
    h, w = image_size
    return types("sensor_msgs/msg/CameraInfo")(
        header=make_header(types, t, frame_id), height=int(h), width=int(w), distortion_model="plumb_bob",
        d=[float(x) for x in D], k=K.ravel().tolist(), r=np.eye(3).ravel().tolist(), p=P.ravel().tolist(),
        binning_x=0, binning_y=0, roi=types("sensor_msgs/msg/RegionOfInterest")())


def msg_to_camera_info(msg: Any) -> dict[str, Any]:
    """``sensor_msgs/CameraInfo`` -> ``{"K": (3, 3), "D": (N,), "R": (3, 3), "P": (3, 4), "image_size": (H, W),
    "distortion_model": str}``.

    Raises:
        MalformedMessageError: on wrong array sizes or non-finite values.
    """
    k, r, p = (np.asarray(list(x), np.float64) for x in (msg.k, msg.r, msg.p))
    if k.size != 9 or r.size != 9 or p.size != 12:
        raise MalformedMessageError(f"CameraInfo k/r/p sizes {k.size}/{r.size}/{p.size}, expected 9/9/12")
    return {"K": _finite("CameraInfo.k", k).reshape(3, 3), "R": _finite("CameraInfo.r", r).reshape(3, 3),
            "P": _finite("CameraInfo.p", p).reshape(3, 4), "D": np.asarray(list(msg.d), np.float64),
            "image_size": (int(msg.height), int(msg.width)), "distortion_model": str(msg.distortion_model)}


# ---- sensor_msgs/JointState -------------------------------------------------------------------------------
def joint_state_to_msg(types: TypeResolver, names: Sequence[str], position: np.ndarray, t: float,
                       velocity: np.ndarray | None = None, effort: np.ndarray | None = None,
                       frame_id: str = "") -> Any:
    """Joint names + positions ``(J,)`` (rad or m) [+ velocities, efforts] -> ``sensor_msgs/JointState``."""
    f = lambda x: [] if x is None else [float(v) for v in np.asarray(x).ravel()]  # noqa: E731
    return types("sensor_msgs/msg/JointState")(header=make_header(types, t, frame_id), name=list(names),
                                               position=f(position), velocity=f(velocity), effort=f(effort))


def msg_to_joint_state(msg: Any) -> dict[str, np.ndarray]:
    """``sensor_msgs/JointState`` -> ``{"name": list[str], "position": (J,), "velocity": (J,) or (0,),
    "effort": (J,) or (0,)}``.

    Raises:
        MalformedMessageError: if ``position`` and ``name`` lengths differ, ``velocity``/``effort``
            are neither empty nor of length J, names repeat, or a position is NaN/inf.
    """
    names = [str(n) for n in msg.name]
    pos = np.asarray(list(msg.position), np.float64)
    if len(pos) != len(names):
        raise MalformedMessageError(f"JointState has {len(names)} names but {len(pos)} positions")
    if len(set(names)) != len(names):
        raise MalformedMessageError(f"JointState names repeat: {names}")
    out = {"name": names, "position": _finite("JointState.position", pos)}
    for key in ("velocity", "effort"):
        v = np.asarray(list(getattr(msg, key)), np.float64)
        if v.size not in (0, len(names)):
            raise MalformedMessageError(f"JointState.{key} has {v.size} values for {len(names)} joints")
        out[key] = v
    return out


# ---- geometry_msgs ---------------------------------------------------------------------------------------
def pose_to_msg(types: TypeResolver, position: np.ndarray, quat_wxyz: np.ndarray, t: float, frame_id: str) -> Any:
    """Position ``(3,)`` (m) + quaternion ``(4,)`` **wxyz** -> ``geometry_msgs/PoseStamped`` (xyzw on the wire)."""
    p = np.asarray(position, np.float64)
    q = np.asarray(quat_wxyz, np.float64)
    pose = types("geometry_msgs/msg/Pose")(
        position=types("geometry_msgs/msg/Point")(x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=types("geometry_msgs/msg/Quaternion")(x=float(q[1]), y=float(q[2]), z=float(q[3]), w=float(q[0])))
    return types("geometry_msgs/msg/PoseStamped")(header=make_header(types, t, frame_id), pose=pose)


def msg_to_pose(msg: Any) -> tuple[np.ndarray, np.ndarray]:
    """``geometry_msgs/PoseStamped`` -> (position ``(3,)`` m, unit quaternion ``(4,)`` **wxyz**).

    Raises:
        MalformedMessageError: on NaN/inf or a quaternion whose norm differs from 1 by more than 1e-2.
    """
    p, o = msg.pose.position, msg.pose.orientation
    pos = _finite("PoseStamped.pose.position", np.array([p.x, p.y, p.z], np.float64))
    q = _finite("PoseStamped.pose.orientation", np.array([o.w, o.x, o.y, o.z], np.float64))
    n = float(np.linalg.norm(q))
    if abs(n - 1.0) > 1e-2:
        raise MalformedMessageError(f"PoseStamped orientation is not a unit quaternion (norm {n:.4f})")
    return pos, q / n


def twist_to_msg(types: TypeResolver, linear: np.ndarray, angular: np.ndarray, t: float, frame_id: str) -> Any:
    """Linear ``(3,)`` (m/s) + angular ``(3,)`` (rad/s) velocity in ``frame_id`` -> ``geometry_msgs/TwistStamped``."""
    v3 = types("geometry_msgs/msg/Vector3")
    lin, ang = np.asarray(linear, np.float64), np.asarray(angular, np.float64)
    tw = types("geometry_msgs/msg/Twist")(linear=v3(x=float(lin[0]), y=float(lin[1]), z=float(lin[2])),
                                          angular=v3(x=float(ang[0]), y=float(ang[1]), z=float(ang[2])))
    return types("geometry_msgs/msg/TwistStamped")(header=make_header(types, t, frame_id), twist=tw)


def msg_to_twist(msg: Any) -> tuple[np.ndarray, np.ndarray]:
    """``geometry_msgs/TwistStamped`` -> (linear ``(3,)`` m/s, angular ``(3,)`` rad/s).

    Raises:
        MalformedMessageError: on NaN/inf.
    """
    lin, ang = msg.twist.linear, msg.twist.angular
    return (_finite("TwistStamped.twist.linear", np.array([lin.x, lin.y, lin.z], np.float64)),
            _finite("TwistStamped.twist.angular", np.array([ang.x, ang.y, ang.z], np.float64)))


# ---- trajectory_msgs/JointTrajectory ---------------------------------------------------------------------
def joint_trajectory_to_msg(types: TypeResolver, names: Sequence[str], positions: np.ndarray, dt: float,
                            t: float, frame_id: str = "") -> Any:
    """Joint targets ``(N, J)`` (rad), one every ``dt`` s -> ``trajectory_msgs/JointTrajectory`` whose point
    ``i`` has ``time_from_start`` = ``(i + 1) * dt`` (the joint_trajectory_controller convention)."""
    positions = np.atleast_2d(np.asarray(positions, np.float64))
    pt = types("trajectory_msgs/msg/JointTrajectoryPoint")
    points = [pt(positions=row.tolist(), velocities=[], accelerations=[], effort=[],
                 time_from_start=sec_to_duration(types, (i + 1) * dt)) for i, row in enumerate(positions)]
    return types("trajectory_msgs/msg/JointTrajectory")(header=make_header(types, t, frame_id),
                                                        joint_names=list(names), points=points)


def msg_to_joint_trajectory(msg: Any) -> dict[str, Any]:
    """``trajectory_msgs/JointTrajectory`` -> ``{"joint_names", "positions": (N, J), "time_from_start": (N,) s}``.

    Raises:
        MalformedMessageError: if a point's position count differs from the joint count, or NaN/inf.
    """
    names = [str(n) for n in msg.joint_names]
    rows, times = [], []
    for i, p in enumerate(msg.points):
        q = np.asarray(list(p.positions), np.float64)
        if q.size != len(names):
            raise MalformedMessageError(f"JointTrajectory point {i} has {q.size} positions for {len(names)} joints")
        rows.append(_finite(f"JointTrajectory.points[{i}].positions", q))
        times.append(duration_to_sec(p.time_from_start))
    return {"joint_names": names, "positions": np.asarray(rows, np.float64).reshape(len(rows), len(names)),
            "time_from_start": np.asarray(times, np.float64)}


# ---- control_msgs/GripperCommand ---------------------------------------------------------------------------
def gripper_to_msg(types: TypeResolver, width_m: float, max_effort_n: float) -> Any:
    """Finger gap (m) + force limit (N) -> ``control_msgs/msg/GripperCommand``."""
    return types("control_msgs/msg/GripperCommand")(position=float(width_m), max_effort=float(max_effort_n))


def msg_to_gripper(msg: Any) -> tuple[float, float]:
    """``control_msgs/msg/GripperCommand`` -> (width m, max effort N).

    Raises:
        MalformedMessageError: on NaN/inf.
    """
    v = _finite("GripperCommand", np.array([msg.position, msg.max_effort], np.float64))
    return float(v[0]), float(v[1])


# ---- std_msgs ----------------------------------------------------------------------------------------------
def json_to_msg(types: TypeResolver, payload: dict[str, Any]) -> Any:
    """JSON-safe dict -> ``std_msgs/String`` (used by the sim-only oracle side channel)."""
    return types("std_msgs/msg/String")(data=json.dumps(payload))


def msg_to_json(msg: Any) -> dict[str, Any]:
    """``std_msgs/String`` holding a JSON object -> dict.

    Raises:
        MalformedMessageError: if the data is not a JSON object.
    """
    try:
        d = json.loads(msg.data)
    except (TypeError, ValueError) as e:
        raise MalformedMessageError(f"std_msgs/String is not JSON: {e}") from e
    if not isinstance(d, dict):
        raise MalformedMessageError(f"std_msgs/String JSON is a {type(d).__name__}, expected an object")
    return d
