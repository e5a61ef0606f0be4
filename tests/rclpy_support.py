"""Where the rclpy tests run: ROS 2's rclpy (``pip install 'tandem[rclpy]'``, ROS 2 Jazzy wheels for Python 3.12 on
Linux x86_64, or a ROS 2 install's setup.bash); else they skip with one line naming what is missing."""

from __future__ import annotations

import importlib.util

import pytest

RCLPY_MISSING = ("rclpy is not installed: pip install 'tandem[rclpy]' (ROS 2 Jazzy wheels, Python 3.12 on Linux "
                 "x86_64) or source /opt/ros/<distro>/setup.bash")
CONTROL_MSGS_MISSING = ("ROS 2's control_msgs (the gripper's GripperCommand) is not on PyPI: it comes with a ROS 2 "
                        "install (ros-<distro>-control-msgs)")


def have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_rclpy() -> None:
    """Skip the calling test, naming the missing piece, unless rclpy and the bridge's PyPI message packages import."""
    if not have("rclpy"):
        pytest.skip(RCLPY_MISSING)
    for pkg in ("std_msgs", "sensor_msgs", "geometry_msgs", "trajectory_msgs"):
        if not have(pkg):
            pytest.skip(f"ROS 2's {pkg} is not installed (pip install 'tandem[rclpy]')")
