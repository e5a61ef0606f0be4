"""tandem's ROS 2 bridge: a robot env behind the Env protocol, a safety layer, DDS and rclpy transports.

Imports only ``tandem.types``, ``tandem.protocols`` and ``tandem.errors`` from the project
(enforced by import-linter). ``cyclonedds`` and ``rclpy`` are imported lazily, by the transports.
"""
