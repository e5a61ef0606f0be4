"""The transport interface of the bridge, and two small transports: in-process and dry-run.

A transport moves ROS 2-typed messages. The robot env and the simulated robot only use this
interface, so the same tested logic runs over Cyclone DDS (:mod:`bridge.dds_transport`), over a
ROS 2 node (:mod:`bridge.rclpy_transport`) or in-process (unit tests).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

log = logging.getLogger(__name__)

Publisher = Callable[[Any], None]


@runtime_checkable
class Transport(Protocol):
    """Publish/subscribe for ROS 2 interfaces named like ``"sensor_msgs/msg/Image"``.

    Topic names are ROS 2 names (``/joint_states``); a DDS transport maps them to ``rt/joint_states``.
    Callbacks may run on a transport thread; they must be quick and must not raise.
    """

    def msg_type(self, name: str) -> type:
        """Message class for a ROS 2 interface name. Raises UnknownNameError if not supported."""
        ...

    def create_publisher(self, topic: str, type_name: str, reliable: bool = True, depth: int = 10) -> Publisher:
        """A function that publishes one message on ``topic`` (KEEP_LAST ``depth``)."""
        ...

    def create_subscription(self, topic: str, type_name: str, callback: Callable[[Any], None],
                            reliable: bool = False) -> None:
        """Call ``callback`` with every message received on ``topic`` (best effort unless ``reliable``)."""
        ...

    def now(self) -> float:
        """Current time (s) on the clock used for header stamps (wall clock, or ROS time for rclpy)."""
        ...

    def close(self) -> None:
        """Stop delivering and release the transport's resources."""
        ...


def _idl_registry() -> dict[str, type]:
    from bridge.messages import REGISTRY  # needs cyclonedds (the `ros` extra)

    return REGISTRY


class InProcessBus:
    """A synchronous in-process message bus shared by several :class:`InProcessTransport` s (tests)."""

    def __init__(self) -> None:
        self.subs: dict[str, list[Callable[[Any], None]]] = defaultdict(list)
        self.lock = threading.Lock()

    def deliver(self, topic: str, msg: Any) -> None:
        """Hand ``msg`` to every subscriber of ``topic``, on the caller's thread."""
        with self.lock:
            callbacks = list(self.subs[topic])
        for cb in callbacks:
            cb(msg)


class InProcessTransport:
    """Delivers each published message synchronously to subscribers of the same bus (for tests).

    Uses the IDL classes of :mod:`bridge.messages` as message types.
    """

    def __init__(self, bus: InProcessBus, clock: Callable[[], float] = time.time):
        self.bus, self._clock = bus, clock

    def msg_type(self, name: str) -> type:
        """The message class of ROS 2 interface ``name`` (the dataclasses of :mod:`bridge.messages`)."""
        from tandem.core.errors import UnknownNameError

        reg = _idl_registry()
        if name not in reg:
            raise UnknownNameError("message type", name, list(reg))
        return reg[name]

    def create_publisher(self, topic: str, type_name: str, reliable: bool = True, depth: int = 10) -> Publisher:
        """A function that delivers one message on ``topic`` to the bus's subscribers."""
        cls = self.msg_type(type_name)

        def publish(msg: Any) -> None:
            if not isinstance(msg, cls):
                raise TypeError(f"{topic} carries {type_name}, got {type(msg).__name__}")
            self.bus.deliver(topic, msg)

        return publish

    def create_subscription(self, topic: str, type_name: str, callback: Callable[[Any], None],
                            reliable: bool = False) -> None:
        """Call ``callback`` with every message delivered on ``topic``."""
        self.msg_type(type_name)
        with self.bus.lock:
            self.bus.subs[topic].append(callback)

    def now(self) -> float:
        """The transport's clock (s)."""
        return self._clock()

    def close(self) -> None:
        """Nothing to release: the bus lives in memory."""
        pass


class DryRunTransport:
    """Wraps a transport: subscriptions are real, publications are logged and kept in ``sent``, never sent."""

    def __init__(self, inner: Transport):
        self.inner = inner
        self.sent: list[tuple[str, Any]] = []

    def msg_type(self, name: str) -> type:
        """The wrapped transport's message class for ``name``."""
        return self.inner.msg_type(name)

    def create_publisher(self, topic: str, type_name: str, reliable: bool = True, depth: int = 10) -> Publisher:
        """A function that logs the message and keeps it in :attr:`sent` instead of publishing it (nothing reaches
        the robot)."""
        self.inner.msg_type(type_name)

        def publish(msg: Any) -> None:
            self.sent.append((topic, msg))
            log.info("[dry-run] %s %s", topic, msg)

        return publish

    def create_subscription(self, topic, type_name, callback, reliable: bool = False) -> None:
        """Subscribe through the wrapped transport (a dry run still reads the robot)."""
        self.inner.create_subscription(topic, type_name, callback, reliable)

    def now(self) -> float:
        """The wrapped transport's clock (s)."""
        return self.inner.now()

    def close(self) -> None:
        """Close the wrapped transport."""
        self.inner.close()


def make_transport(kind: str, domain_id: int = 0, loopback_only: bool = True, dry_run: bool = False,
                   node_name: str = "tandem_bridge", bus: InProcessBus | None = None) -> Transport:
    """Transport by name: ``dds`` (Cyclone DDS), ``rclpy`` (a ROS 2 node) or ``inprocess`` (tests).

    ``dry_run`` wraps it in :class:`DryRunTransport` (subscribes for real, never publishes).

    Raises:
        TransportError: if the transport's package is missing. UnknownNameError: unknown ``kind``.
    """
    from tandem.core.errors import UnknownNameError

    if kind == "dds":
        from bridge.dds_transport import DdsTransport

        t: Transport = DdsTransport(domain_id, loopback_only=loopback_only)
    elif kind == "rclpy":
        from bridge.rclpy_transport import RclpyTransport

        t = RclpyTransport(node_name, domain_id=domain_id)
    elif kind == "inprocess":
        t = InProcessTransport(bus or InProcessBus())
    else:
        raise UnknownNameError("transport", kind, ["dds", "rclpy", "inprocess"])
    return DryRunTransport(t) if dry_run else t
