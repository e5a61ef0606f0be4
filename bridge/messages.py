"""ROS 2 message types as Cyclone DDS IDL dataclasses, wire-compatible with ``rmw_cyclonedds_cpp``.

Each class reproduces the field layout (names, order, IDL types) of the ROS 2 ``.msg`` definition
(ROS 2 Jazzy/Kilted ``common_interfaces``, ``rcl_interfaces`` and ``control_msgs``) and carries the
DDS type name that ``rosidl_typesupport_introspection`` / ``rmw_cyclonedds_cpp`` put on the wire:
``<package>::msg::dds_::<Type>_``. Field names match the ROS 2 Python classes, so the conversion
code in :mod:`bridge.conversions` works unchanged on these and on real ``rclpy`` messages.

Encoding: plain CDR (XCDR1, little endian, encapsulation ``0x0001``), "final" extensibility, as
``rmw_cyclonedds_cpp`` uses. Sources: ROS 2 design article "Topic and Service name mapping to DDS"
(``rt/`` prefix), ``rosidl_generator_dds_idl`` (``dds_`` namespace and trailing underscore),
and the ``.msg`` files of ``common_interfaces`` / ``control_msgs``.

No ``from __future__ import annotations`` here: cyclonedds resolves the annotations at run time.

Requires the ``cyclonedds`` Python package (``pip install 'tandem[ros]'``); only
:mod:`bridge.dds_transport` and the tests import this module.
"""



from dataclasses import dataclass, field

from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float64, int32, sequence, uint8, uint32


def _zeros(n: int):
    return lambda: [0.0] * n


# ---- builtin_interfaces ---------------------------------------------------------------------------
@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    """builtin_interfaces/msg/Time: ``sec`` (s, int32) + ``nanosec`` (ns, uint32)."""

    sec: int32 = 0
    nanosec: uint32 = 0


@dataclass
class Duration(IdlStruct, typename="builtin_interfaces::msg::dds_::Duration_"):
    """builtin_interfaces/msg/Duration: ``sec`` (s, int32) + ``nanosec`` (ns, uint32)."""

    sec: int32 = 0
    nanosec: uint32 = 0


# ---- std_msgs ---------------------------------------------------------------------------------------
@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    """std_msgs/msg/Header: ``stamp`` (Time) + ``frame_id``."""

    stamp: Time = field(default_factory=Time)
    frame_id: str = ""


@dataclass
class String(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    """std_msgs/msg/String."""

    data: str = ""


@dataclass
class Bool(IdlStruct, typename="std_msgs::msg::dds_::Bool_"):
    """std_msgs/msg/Bool (IDL ``boolean``)."""

    data: bool = False


# ---- sensor_msgs ------------------------------------------------------------------------------------
@dataclass
class Image(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
    """sensor_msgs/msg/Image: row-major pixels, ``step`` = bytes per row, origin top-left."""

    header: Header = field(default_factory=Header)
    height: uint32 = 0
    width: uint32 = 0
    encoding: str = ""
    is_bigendian: uint8 = 0
    step: uint32 = 0
    data: sequence[uint8] = field(default_factory=bytes)


@dataclass
class RegionOfInterest(IdlStruct, typename="sensor_msgs::msg::dds_::RegionOfInterest_"):
    """sensor_msgs/msg/RegionOfInterest (px)."""

    x_offset: uint32 = 0
    y_offset: uint32 = 0
    height: uint32 = 0
    width: uint32 = 0
    do_rectify: bool = False


@dataclass
class CameraInfo(IdlStruct, typename="sensor_msgs::msg::dds_::CameraInfo_"):
    """sensor_msgs/msg/CameraInfo: ``k`` (3x3 row-major intrinsics, px), ``d`` distortion,
    ``r`` rectification (3x3), ``p`` projection (3x4)."""

    header: Header = field(default_factory=Header)
    height: uint32 = 0
    width: uint32 = 0
    distortion_model: str = ""
    d: sequence[float64] = field(default_factory=list)
    k: array[float64, 9] = field(default_factory=_zeros(9))
    r: array[float64, 9] = field(default_factory=_zeros(9))
    p: array[float64, 12] = field(default_factory=_zeros(12))
    binning_x: uint32 = 0
    binning_y: uint32 = 0
    roi: RegionOfInterest = field(default_factory=RegionOfInterest)


@dataclass
class JointState(IdlStruct, typename="sensor_msgs::msg::dds_::JointState_"):
    """sensor_msgs/msg/JointState: positions (rad or m), velocities (rad/s or m/s), efforts (N m or N)."""

    header: Header = field(default_factory=Header)
    name: sequence[str] = field(default_factory=list)
    position: sequence[float64] = field(default_factory=list)
    velocity: sequence[float64] = field(default_factory=list)
    effort: sequence[float64] = field(default_factory=list)


# ---- geometry_msgs ----------------------------------------------------------------------------------
@dataclass
class Vector3(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    """``geometry_msgs/Vector3``: x, y, z (m or m/s, by use)."""
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Point(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    """``geometry_msgs/Point``: a position x, y, z in m."""
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Quaternion(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    """geometry_msgs/msg/Quaternion: **xyzw** order on the wire (ROS), default identity."""

    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    w: float64 = 1.0


@dataclass
class Pose(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    """``geometry_msgs/Pose``: a position (m) and an orientation (quaternion xyzw, ROS order)."""
    position: Point = field(default_factory=Point)
    orientation: Quaternion = field(default_factory=Quaternion)


@dataclass
class PoseStamped(IdlStruct, typename="geometry_msgs::msg::dds_::PoseStamped_"):
    """``geometry_msgs/PoseStamped``: a pose with its header (frame and time stamp)."""
    header: Header = field(default_factory=Header)
    pose: Pose = field(default_factory=Pose)


@dataclass
class Twist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    """geometry_msgs/msg/Twist: ``linear`` (m/s), ``angular`` (rad/s)."""

    linear: Vector3 = field(default_factory=Vector3)
    angular: Vector3 = field(default_factory=Vector3)


@dataclass
class TwistStamped(IdlStruct, typename="geometry_msgs::msg::dds_::TwistStamped_"):
    """geometry_msgs/msg/TwistStamped: the MoveIt Servo Cartesian command."""

    header: Header = field(default_factory=Header)
    twist: Twist = field(default_factory=Twist)


# ---- trajectory_msgs --------------------------------------------------------------------------------
@dataclass
class JointTrajectoryPoint(IdlStruct, typename="trajectory_msgs::msg::dds_::JointTrajectoryPoint_"):
    """``trajectory_msgs/JointTrajectoryPoint``: joint positions (rad), velocities, accelerations, efforts and
    the time from the trajectory's start."""
    positions: sequence[float64] = field(default_factory=list)
    velocities: sequence[float64] = field(default_factory=list)
    accelerations: sequence[float64] = field(default_factory=list)
    effort: sequence[float64] = field(default_factory=list)
    time_from_start: Duration = field(default_factory=Duration)


@dataclass
class JointTrajectory(IdlStruct, typename="trajectory_msgs::msg::dds_::JointTrajectory_"):
    """``trajectory_msgs/JointTrajectory``: joint names and the points to pass through."""
    header: Header = field(default_factory=Header)
    joint_names: sequence[str] = field(default_factory=list)
    points: sequence[JointTrajectoryPoint] = field(default_factory=list)


# ---- control_msgs -----------------------------------------------------------------------------------
@dataclass
class GripperCommand(IdlStruct, typename="control_msgs::msg::dds_::GripperCommand_"):
    """control_msgs/msg/GripperCommand: ``position`` (m, finger gap for a parallel gripper),
    ``max_effort`` (N). This is also the ``command`` field of the GripperCommand action goal."""

    position: float64 = 0.0
    max_effort: float64 = 0.0


#: ROS 2 interface name -> IDL class, for :class:`bridge.dds_transport.DdsTransport`.
REGISTRY: dict[str, type] = {
    "builtin_interfaces/msg/Time": Time,
    "builtin_interfaces/msg/Duration": Duration,
    "std_msgs/msg/Header": Header,
    "std_msgs/msg/String": String,
    "std_msgs/msg/Bool": Bool,
    "sensor_msgs/msg/Image": Image,
    "sensor_msgs/msg/RegionOfInterest": RegionOfInterest,
    "sensor_msgs/msg/CameraInfo": CameraInfo,
    "sensor_msgs/msg/JointState": JointState,
    "geometry_msgs/msg/Vector3": Vector3,
    "geometry_msgs/msg/Point": Point,
    "geometry_msgs/msg/Quaternion": Quaternion,
    "geometry_msgs/msg/Pose": Pose,
    "geometry_msgs/msg/PoseStamped": PoseStamped,
    "geometry_msgs/msg/Twist": Twist,
    "geometry_msgs/msg/TwistStamped": TwistStamped,
    "trajectory_msgs/msg/JointTrajectoryPoint": JointTrajectoryPoint,
    "trajectory_msgs/msg/JointTrajectory": JointTrajectory,
    "control_msgs/msg/GripperCommand": GripperCommand,
}
