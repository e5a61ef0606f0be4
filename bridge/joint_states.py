"""Joint states merged by name, each joint with its own stamp.

``/joint_states`` often carries several publishers: joint_state_broadcaster for the arm, a gripper driver for the
fingers (franka_gripper publishes ``<arm>_finger_joint1/2`` on its own ``joint_states``, remapped or merged onto
``/joint_states`` by many launch files), each message holding only its own joints. Keeping the latest *message*
would alternate between "no finger joints" (gripper width 0) and the real width at every message. Here each joint
keeps its latest position and the header stamp of the message it came in, so the gripper width and the arm
joints are always read from the newest value of each joint, and staleness is checked per joint.

The freshness key of a joint is ``"<topic>[<joint>]"`` (e.g. ``/joint_states[fr3_finger_joint1]``); a bridge that
reads no joint by name checks the topic itself (``"<topic>"``: the newest message of any joint).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


def joint_freshness_keys(topic: str, joints: Sequence[str]) -> tuple[str, ...]:
    """Freshness keys of ``joints`` on ``topic`` (``("<topic>",)`` when no joint is read by name)."""
    names = tuple(dict.fromkeys(joints))
    return tuple(f"{topic}[{n}]" for n in names) if names else (topic,)


@dataclass
class JointReading:
    """One joint's latest value: ``position`` (rad or m), the header ``stamp`` (s) and local ``received`` time (s)."""

    position: float
    stamp: float
    received: float


class JointStateCache:
    """Latest position and stamp of every joint seen on one JointState topic (not thread-safe: lock outside).

    Args:
        topic: the JointState topic (for freshness keys and messages).
        required: joints whose freshness matters (arm joints in joint mode, gripper joints); empty: the topic.
    """

    def __init__(self, topic: str, required: Sequence[str] = ()):
        self.topic = topic
        self.required = tuple(dict.fromkeys(required))
        self.joints: dict[str, JointReading] = {}
        self.latest_stamp: float | None = None

    def update(self, joint_state: Mapping[str, object], stamp: float, received: float) -> list[str]:
        """Merge one converted message (``bridge.conversions.msg_to_joint_state``) stamped ``stamp`` (s).

        Returns:
            the joints whose update was dropped because this message is older than their current value.
        """
        older = []
        for name, q in zip(joint_state["name"], np.asarray(joint_state["position"], np.float64)):
            cur = self.joints.get(name)
            if cur is not None and stamp < cur.stamp:
                older.append(name)
                continue
            self.joints[name] = JointReading(float(q), stamp, received)
        if self.latest_stamp is None or stamp > self.latest_stamp:
            self.latest_stamp = stamp
        return older

    def positions(self, names: Sequence[str]) -> np.ndarray | None:
        """``(len(names),)`` latest positions, or None if a joint was never received."""
        if any(n not in self.joints for n in names):
            return None
        return np.asarray([self.joints[n].position for n in names], np.float64)

    def missing(self, names: Sequence[str]) -> list[str]:
        """Joints of ``names`` never received."""
        return [n for n in names if n not in self.joints]

    def stamps(self) -> dict[str, float | None]:
        """Freshness key -> stamp (s) of the newest value of that joint (or of the topic), None if never received."""
        if not self.required:
            return {self.topic: self.latest_stamp}
        return {key: (self.joints[n].stamp if n in self.joints else None)
                for n, key in zip(self.required, joint_freshness_keys(self.topic, self.required))}
