"""tandem's ROS 2 bridge: a robot env behind the Env protocol, a safety layer, DDS and rclpy transports.

Imports only ``tandem.core.types``, ``tandem.core.protocols`` and ``tandem.core.errors`` from the project
(enforced by import-linter). ``cyclonedds`` and ``rclpy`` are imported lazily, by the transports.
"""
