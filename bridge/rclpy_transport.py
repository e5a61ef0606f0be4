"""ROS 2 node transport (``rclpy``), for robot PCs with ROS 2 installed (Humble, Jazzy, Kilted).

``rclpy`` is imported lazily, when the transport is created; the robot env, safety layer and message
conversions are the same tested code as over DDS. QoS: publishers use the ROS 2 default profile
(RELIABLE, KEEP_LAST 10); sensor subscriptions use ``qos_profile_sensor_data`` (BEST_EFFORT, which also
receives from RELIABLE publishers); e-stop, instruction and oracle subscriptions are RELIABLE (KEEP_LAST 10).
The gripper may be driven through the ``control_msgs/action/GripperCommand`` action (``gripper_mode: action``).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

from bridge.errors import TransportError
from tandem.core.errors import UnknownNameError


class RclpyTransport:
    """A ROS 2 node (``node_name``) spun by a background executor thread.

    Raises:
        TransportError: if ``rclpy`` is not importable (source your ROS 2 setup.bash first).
    """

    def __init__(self, node_name: str = "tandem_bridge", domain_id: int | None = None):
        try:
            import rclpy
            from rclpy.executors import MultiThreadedExecutor
        except ImportError as e:
            raise TransportError("transport=rclpy needs ROS 2's rclpy: source /opt/ros/<distro>/setup.bash "
                                 f"(it is not on PyPI), or use transport=dds ({e})") from e
        self._rclpy = rclpy
        self._context = rclpy.Context()
        kw = {} if domain_id is None else {"domain_id": int(domain_id)}
        rclpy.init(context=self._context, **kw)
        self.node = rclpy.create_node(node_name, context=self._context)
        self._executor = MultiThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._executor.spin, name="rclpy-spin", daemon=True)
        self._thread.start()
        self._action_clients: dict[str, Any] = {}

    def msg_type(self, name: str) -> type:
        try:
            pkg, kind, typ = name.split("/")
            return getattr(importlib.import_module(f"{pkg}.{kind}"), typ)
        except (ValueError, ImportError, AttributeError) as e:
            raise UnknownNameError("message type", name, []) from e

    def create_publisher(self, topic: str, type_name: str, reliable: bool = True, depth: int = 10):
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT)
        pub = self.node.create_publisher(self.msg_type(type_name), topic, qos)
        return pub.publish

    def create_subscription(self, topic: str, type_name: str, callback: Callable[[Any], None],
                            reliable: bool = False) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE) if reliable else qos_profile_sensor_data
        self.node.create_subscription(self.msg_type(type_name), topic, callback, qos)

    def send_gripper_goal(self, action_name: str, position: float, max_effort: float) -> None:
        """Send a ``control_msgs/action/GripperCommand`` goal (fire and forget; the next goal preempts it)."""
        from rclpy.action import ActionClient

        gripper_command = importlib.import_module("control_msgs.action").GripperCommand
        if action_name not in self._action_clients:
            self._action_clients[action_name] = ActionClient(self.node, gripper_command, action_name)
        goal = gripper_command.Goal()
        goal.command.position = float(position)
        goal.command.max_effort = float(max_effort)
        self._action_clients[action_name].send_goal_async(goal)

    def now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    def close(self) -> None:
        self._executor.shutdown()
        self.node.destroy_node()
        self._rclpy.shutdown(context=self._context)
