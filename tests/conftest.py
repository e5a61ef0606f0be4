"""Test-wide environment: headless rendering, no hub access (the runtime environment of every tandem process), and
ROS 2 discovery kept on this machine (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, read by rclpy's nodes and passed
on to the rehearsal's subprocesses)."""

import os

from tandem.runtime.environment import prepare_runtime

prepare_runtime()
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
