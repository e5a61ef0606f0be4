"""Cyclone DDS transport, wire-compatible with ROS 2's ``rmw_cyclonedds_cpp``, with no ROS install.

Conventions followed (sources in the README section "DDS conventions"):

* Topic ``/a/b`` is the DDS topic ``rt/a/b`` (ROS 2 design article "Topic and Service name mapping
  to DDS": prefix ``rt`` for topics, ``rq``/``rr`` for service request/reply).
* Type ``pkg/msg/T`` is the DDS type ``pkg::msg::dds_::T_`` (``rosidl_generator_dds_idl``), with
  the ROS field layout (:mod:`bridge.messages`), plain CDR (XCDR1), as ``rmw_cyclonedds_cpp`` sends.
* The DDS domain id is ``ROS_DOMAIN_ID``.
* QoS: publishers are RELIABLE / KEEP_LAST(depth) / VOLATILE (the ROS 2 default profile); sensor
  subscriptions are BEST_EFFORT / KEEP_LAST(1), which match both reliable publishers and the
  ``SensorDataQoS`` best-effort publishers of camera drivers; e-stop and instruction subscriptions are RELIABLE /
  KEEP_LAST(10).

``loopback_only=True`` binds Cyclone to 127.0.0.1 with multicast off and 127.0.0.1 as the only
discovery peer, so no packet leaves the machine (rehearsal and tests).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from bridge.errors import TransportError
from tandem.core.errors import UnknownNameError

log = logging.getLogger(__name__)

#: Cyclone DDS configuration that keeps every packet on the loopback interface.
LOOPBACK_XML = (
    '<CycloneDDS><Domain Id="any"><General><Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>'
    "<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>"
    "<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex><Peers><Peer address=\"127.0.0.1\"/></Peers>"
    "</Discovery></Domain></CycloneDDS>"
)

_domains: dict[int, Any] = {}
_domains_lock = threading.Lock()


def ros_topic_to_dds(topic: str) -> str:
    """``/joint_states`` -> ``rt/joint_states`` (ROS 2 topic-name mangling for DDS)."""
    if not topic.startswith("/"):
        topic = "/" + topic
    return "rt" + topic


class DdsTransport:
    """Publish/subscribe ROS 2-typed messages over Cyclone DDS.

    Args:
        domain_id: DDS domain (= ROS_DOMAIN_ID), 0..232.
        loopback_only: keep all traffic on 127.0.0.1 (see :data:`LOOPBACK_XML`).
        poll_s: period (s) of the reader thread that takes samples and runs callbacks.

    Raises:
        TransportError: if the ``cyclonedds`` package (``pip install 'tandem[ros]'``) is missing or the
            participant cannot be created.
    """

    def __init__(self, domain_id: int = 0, loopback_only: bool = True, poll_s: float = 0.002):
        try:
            from cyclonedds.domain import Domain, DomainParticipant

            from bridge.messages import REGISTRY
        except ImportError as e:  # pragma: no cover - depends on the install
            raise TransportError(f"the DDS transport needs the cyclonedds package (pip install 'tandem[ros]'): {e}") from e
        self._registry = REGISTRY
        try:
            if loopback_only:
                with _domains_lock:
                    if domain_id not in _domains:
                        _domains[domain_id] = Domain(domain_id, LOOPBACK_XML)
            self.participant = DomainParticipant(domain_id)
        except Exception as e:
            raise TransportError(f"cannot create a Cyclone DDS participant on domain {domain_id}: {e}") from e
        self.domain_id = domain_id
        self._readers: list[tuple[Any, Callable[[Any], None], str]] = []
        self._topics: dict[str, Any] = {}
        self._writers: list[Any] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poll_s = poll_s
        self._thread = threading.Thread(target=self._spin, name=f"dds-reader-{domain_id}", daemon=True)
        self._thread.start()

    def msg_type(self, name: str) -> type:
        """The IDL message class of ROS 2 interface ``name``; raises UnknownNameError for one it does not carry."""
        if name not in self._registry:
            raise UnknownNameError("message type", name, list(self._registry))
        return self._registry[name]

    def _topic(self, topic: str, type_name: str) -> Any:
        from cyclonedds.topic import Topic

        key = ros_topic_to_dds(topic)
        if key not in self._topics:
            self._topics[key] = Topic(self.participant, key, self.msg_type(type_name))
        return self._topics[key]

    @staticmethod
    def _qos(reliable: bool, depth: int) -> Any:
        from cyclonedds.core import Policy, Qos
        from cyclonedds.util import duration

        rel = Policy.Reliability.Reliable(duration(seconds=1)) if reliable else Policy.Reliability.BestEffort
        return Qos(rel, Policy.History.KeepLast(depth), Policy.Durability.Volatile,
                   Policy.DataRepresentation(use_cdrv0_representation=True))

    def create_publisher(self, topic: str, type_name: str, reliable: bool = True, depth: int = 10):
        """A function that writes one message on ``topic`` (DDS name ``rt/<topic>``; KEEP_LAST ``depth``)."""
        from cyclonedds.pub import DataWriter

        with self._lock:
            writer = DataWriter(self.participant, self._topic(topic, type_name), qos=self._qos(reliable, depth))
            self._writers.append(writer)
        cls = self.msg_type(type_name)

        def publish(msg: Any) -> None:
            if not isinstance(msg, cls):
                raise TypeError(f"{topic} carries {type_name}, got {type(msg).__name__}")
            writer.write(msg)

        return publish

    def create_subscription(self, topic: str, type_name: str, callback: Callable[[Any], None],
                            reliable: bool = False, depth: int | None = None) -> None:
        """Run ``callback`` on each sample; ``depth`` (KEEP_LAST) defaults to 1 for sensor data (only the newest
        counts) and 10 for RELIABLE topics (e-stop, instructions, the oracle channel), where none may be lost."""
        from cyclonedds.sub import DataReader

        depth = depth if depth is not None else (10 if reliable else 1)
        with self._lock:
            reader = DataReader(self.participant, self._topic(topic, type_name), qos=self._qos(reliable, depth))
            self._readers.append((reader, callback, topic))

    def _spin(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                readers = list(self._readers)
            for reader, cb, topic in readers:
                try:
                    samples = reader.take(N=32)
                except Exception as e:  # a sample that cannot be deserialised
                    log.warning("DDS take on %s failed: %s", topic, e)
                    continue
                for s in samples:
                    if getattr(s, "sample_info", None) is not None and not s.sample_info.valid_data:
                        continue
                    try:
                        cb(s)
                    except Exception as e:  # callbacks must not kill the reader thread
                        log.exception("callback for %s raised: %s", topic, e)
            time.sleep(self._poll_s)

    def now(self) -> float:
        """Wall-clock time (s), the stamp of outgoing headers."""
        return time.time()

    def close(self) -> None:
        """Stop the reader thread and delete the participant (and every reader/writer under it)."""
        self._stop.set()
        self._thread.join(timeout=1.0)
        with self._lock:
            self._readers.clear()
            self._writers.clear()
            self._topics.clear()
        self.participant = None
