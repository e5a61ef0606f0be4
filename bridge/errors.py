"""Errors of the ROS 2 bridge; all are :class:`tandem.core.errors.TandemError` subclasses."""

from __future__ import annotations

from tandem.core.errors import ConfigError, SafetyViolation, TandemError


class MalformedMessageError(TandemError, ValueError):
    """A received ROS 2 message is malformed: wrong sizes, unsupported encoding, NaN values.

    The robot env drops it, records an event and, if no valid message replaces it in time, the
    staleness watchdog commands a stop.
    """


class MissingTopicError(SafetyViolation):
    """A required topic (camera, joint state, end-effector pose) published nothing in time."""


class TransportError(TandemError):
    """The transport (Cyclone DDS or rclpy) is unavailable or failed to start."""


__all__ = ["ConfigError", "MalformedMessageError", "MissingTopicError", "SafetyViolation", "TransportError"]
