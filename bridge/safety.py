"""The safety layer: every robot command passes through :meth:`SafetyLayer.filter` before it leaves.

Pure python + numpy, transport independent. Checks, in this order (the first four stop the robot):

1. **E-stop latch**: once :meth:`SafetyLayer.trigger_estop` ran (e.g. from the e-stop topic), every
   command is a stop until :meth:`SafetyLayer.reset_estop` is called explicitly.
2. **Non-finite command** (NaN/inf from a policy): stop.
3. **Staleness watchdog**: every required topic (cameras, joint state, end-effector pose) must have a
   header stamp no older than ``max_message_age_s``; a topic never received is "missing"; a stamp
   more than ``max_clock_skew_s`` in the future is "clock skew". Any of these: stop.
4. **Policy deadline**: if the policy took longer than ``policy_deadline_s`` since the last
   observation, its command is based on stale data: stop.
5. **Velocity limits**: the linear (m/s) and angular (rad/s) speeds are scaled down (direction kept)
   to ``max_linear_speed_mps`` / ``max_angular_speed_radps``; joint targets are clipped to
   ``max_joint_speed_radps`` from the current joint positions.
6. **Acceleration limits**: the change from the previously sent velocity is bounded by
   ``max_linear_accel_mps2 * dt`` and ``max_angular_accel_radps2 * dt`` (a stop is always allowed).
7. **Workspace box** (base frame, m): each axis velocity is bounded so that ``p + v dt`` stays inside
   ``[workspace_min, workspace_max]``; outside the box only motion back towards it (or none) is allowed.
8. **Gripper**: the width (m) is clipped to ``[gripper_min_width_m, gripper_max_width_m]`` and the
   effort (N) to ``max_gripper_effort_n``.

A stop is zero twist (MoveIt Servo) or an empty ``JointTrajectory`` (``joint_trajectory_controller``
holds position on an empty trajectory); the gripper is left as it is. Every trip is recorded as a
:class:`SafetyEvent`. Limits follow the usual robot-arm practice (ISO 10218 speed monitoring, MoveIt
Servo's own ``incoming_command_timeout`` halt); they are a software layer, never a replacement for
the robot's own safety controller and hardware e-stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from tandem.core.errors import ConfigError


@dataclass(frozen=True)
class SafetyLimits:
    """Limits in SI units; positions in the robot's base frame (``frames.base`` of the config)."""

    workspace_min: tuple[float, float, float] = (-1.0, -1.0, 0.0)
    workspace_max: tuple[float, float, float] = (1.0, 1.0, 1.5)
    max_linear_speed_mps: float = 0.25
    max_angular_speed_radps: float = 1.0
    max_linear_accel_mps2: float = 2.0
    max_angular_accel_radps2: float = 8.0
    max_joint_speed_radps: float = 1.0
    gripper_min_width_m: float = 0.0
    gripper_max_width_m: float = 0.08
    max_gripper_effort_n: float = 40.0
    max_message_age_s: float = 0.25
    max_clock_skew_s: float = 0.05
    policy_deadline_s: float = 0.25

    def __post_init__(self) -> None:
        lo, hi = np.asarray(self.workspace_min, float), np.asarray(self.workspace_max, float)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(lo < hi):
            raise ConfigError(f"safety.workspace_min {self.workspace_min} must be < workspace_max "
                              f"{self.workspace_max} on each of x, y, z (m)")
        for name in ("max_linear_speed_mps", "max_angular_speed_radps", "max_linear_accel_mps2",
                     "max_angular_accel_radps2", "max_joint_speed_radps", "max_gripper_effort_n",
                     "max_message_age_s", "max_clock_skew_s", "policy_deadline_s"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ConfigError(f"safety.{name} must be a positive number, got {v!r}")
        if not 0 <= self.gripper_min_width_m <= self.gripper_max_width_m:
            raise ConfigError(f"safety gripper width range [{self.gripper_min_width_m}, "
                              f"{self.gripper_max_width_m}] m is invalid")


@dataclass
class Command:
    """One command for the robot, before or after the safety layer.

    Attributes:
        linear: ``float64 (3,)`` end-effector linear velocity (m/s) in the base frame.
        angular: ``float64 (3,)`` end-effector angular velocity (rad/s) in the base frame.
        gripper_width: finger gap target (m), or None for no gripper command.
        gripper_effort: gripper force limit (N), or None.
        joint_positions: ``float64 (J,)`` joint targets (rad) for joint mode, or None (twist mode).
        stop: True when this is a stop (zero twist / hold position).
    """

    linear: np.ndarray = field(default_factory=lambda: np.zeros(3))
    angular: np.ndarray = field(default_factory=lambda: np.zeros(3))
    gripper_width: float | None = None
    gripper_effort: float | None = None
    joint_positions: np.ndarray | None = None
    stop: bool = False

    @classmethod
    def stop_command(cls, joint_mode: bool = False) -> Command:
        """Zero twist (twist mode) or hold position (joint mode: ``joint_positions`` empty)."""
        return cls(joint_positions=np.zeros(0) if joint_mode else None, stop=True)

    def is_finite(self) -> bool:
        """Whether every field of the command is finite (a NaN or inf one is refused)."""
        parts = [self.linear, self.angular]
        parts += [np.asarray([v]) for v in (self.gripper_width, self.gripper_effort) if v is not None]
        if self.joint_positions is not None:
            parts.append(self.joint_positions)
        return all(np.all(np.isfinite(np.asarray(p, float))) for p in parts)


@dataclass(frozen=True)
class SafetyEvent:
    """A safety trip: ``kind`` (e.g. ``"stale"``, ``"workspace"``), local time ``t`` (s), a detail
    string, and whether the command was replaced by a stop."""

    kind: str
    t: float
    detail: str = ""
    stopped: bool = False

    def to_json(self) -> dict:
        """JSON-safe dict: ``{"kind", "t", "detail", "stopped"}`` (t in s)."""
        return {"kind": self.kind, "t": round(self.t, 6), "detail": self.detail, "stopped": self.stopped}


def _clip_norm(v: np.ndarray, max_norm: float) -> tuple[np.ndarray, bool]:
    n = float(np.linalg.norm(v))
    if n > max_norm:
        return v * (max_norm / n), True
    return v, False


class SafetyLayer:
    """Filters commands against :class:`SafetyLimits`; keeps the e-stop latch and the event log.

    Args:
        limits: the limits.
        dt: control period (s), used for the acceleration and workspace look-ahead.
        required_topics: names of the topics whose freshness the watchdog checks.
        joint_mode: True when commands are joint targets (stop = hold position).
    """

    def __init__(self, limits: SafetyLimits, dt: float, required_topics: tuple[str, ...] = (),
                 joint_mode: bool = False):
        if not dt > 0:
            raise ConfigError(f"control period dt must be > 0 s, got {dt}")
        self.limits, self.dt, self.required_topics, self.joint_mode = limits, float(dt), tuple(required_topics), joint_mode
        self.events: list[SafetyEvent] = []
        self.estopped = False
        self._prev_linear = np.zeros(3)
        self._prev_angular = np.zeros(3)

    # ---- e-stop --------------------------------------------------------------------------------------
    def trigger_estop(self, t: float, reason: str = "estop topic") -> None:
        """Latch the e-stop: every later command is a stop until :meth:`reset_estop`."""
        if not self.estopped:
            self.events.append(SafetyEvent("estop", t, reason, stopped=True))
        self.estopped = True

    def reset_estop(self, t: float, reason: str = "explicit reset") -> None:
        """Release the e-stop latch (an explicit operator action)."""
        if self.estopped:
            self.events.append(SafetyEvent("estop_reset", t, reason))
        self.estopped = False
        self._prev_linear[:] = 0.0
        self._prev_angular[:] = 0.0

    def record(self, kind: str, t: float, detail: str = "", stopped: bool = False) -> SafetyEvent:
        """Record an event raised outside the layer (malformed message, policy exception, ...)."""
        ev = SafetyEvent(kind, t, detail, stopped)
        self.events.append(ev)
        return ev

    # ---- the filter ----------------------------------------------------------------------------------
    def _stop(self, kind: str, now: float, detail: str, new: list[SafetyEvent]) -> Command:
        new.append(SafetyEvent(kind, now, detail, stopped=True))
        self._prev_linear[:] = 0.0
        self._prev_angular[:] = 0.0
        return Command.stop_command(self.joint_mode)

    def check_freshness(self, now: float, stamps: Mapping[str, float | None]) -> list[tuple[str, str]]:
        """Problems with the required topics as ``(kind, detail)``: ``missing_topic``, ``stale``, ``clock_skew``.

        Args:
            now: local time (s, same clock as the stamps).
            stamps: topic -> header stamp (s) of its latest valid message, or None if never received.
        """
        out = []
        lim = self.limits
        for topic in self.required_topics:
            s = stamps.get(topic)
            if s is None:
                out.append(("missing_topic", f"{topic}: no valid message received"))
                continue
            age = now - s
            if age < -lim.max_clock_skew_s:
                out.append(("clock_skew", f"{topic}: stamp {-age:.3f} s in the future (> {lim.max_clock_skew_s} s)"))
            elif age > lim.max_message_age_s:
                out.append(("stale", f"{topic}: last message {age:.3f} s old (> {lim.max_message_age_s} s)"))
        return out

    def filter(self, cmd: Command, *, now: float, stamps: Mapping[str, float | None],
               eef_position: np.ndarray | None = None, joint_positions: np.ndarray | None = None,
               deadline_missed: bool = False) -> tuple[Command, list[SafetyEvent]]:
        """Return the command that may be sent, and the events this call raised.

        Args:
            cmd: the requested command.
            now: local time (s).
            stamps: required topic -> latest header stamp (s) or None.
            eef_position: ``(3,)`` current end-effector position (m, base frame) for the workspace box.
            joint_positions: ``(J,)`` current joint positions (rad), joint mode only.
            deadline_missed: the policy missed its deadline for this command.

        Never raises on bad commands: they become stops, recorded as events.
        """
        lim, new = self.limits, []
        try:
            if self.estopped:
                return self._stop("estop_latched", now, "e-stop latched; reset required", new), new
            if not cmd.is_finite():
                return self._stop("nonfinite_command", now, "command contains NaN or inf", new), new
            problems = self.check_freshness(now, stamps)
            if problems:
                kind = problems[0][0]
                return self._stop(kind, now, "; ".join(d for _, d in problems), new), new
            if deadline_missed:
                return self._stop("deadline_missed", now, f"policy slower than {lim.policy_deadline_s} s", new), new
            if cmd.stop:
                self._prev_linear[:] = 0.0
                self._prev_angular[:] = 0.0
                return cmd, new
            out = replace(cmd, linear=np.asarray(cmd.linear, float).copy(), angular=np.asarray(cmd.angular, float).copy())
            if out.joint_positions is not None:
                out = self._limit_joints(out, joint_positions, now, new)
                if out.stop:
                    return out, new
            else:
                out = self._limit_twist(out, eef_position, now, new)
            out = self._limit_gripper(out, now, new)
            return out, new
        finally:
            self.events.extend(new)

    def _limit_twist(self, out: Command, eef_position: np.ndarray | None, now: float,
                     new: list[SafetyEvent]) -> Command:
        lim, dt = self.limits, self.dt
        out.linear, hit = _clip_norm(out.linear, lim.max_linear_speed_mps)
        if hit:
            new.append(SafetyEvent("linear_speed_limit", now, f"clipped to {lim.max_linear_speed_mps} m/s"))
        out.angular, hit = _clip_norm(out.angular, lim.max_angular_speed_radps)
        if hit:
            new.append(SafetyEvent("angular_speed_limit", now, f"clipped to {lim.max_angular_speed_radps} rad/s"))
        dv, hit = _clip_norm(out.linear - self._prev_linear, lim.max_linear_accel_mps2 * dt)
        if hit:
            out.linear = self._prev_linear + dv
            new.append(SafetyEvent("linear_accel_limit", now, f"limited to {lim.max_linear_accel_mps2} m/s^2"))
        dw, hit = _clip_norm(out.angular - self._prev_angular, lim.max_angular_accel_radps2 * dt)
        if hit:
            out.angular = self._prev_angular + dw
            new.append(SafetyEvent("angular_accel_limit", now, f"limited to {lim.max_angular_accel_radps2} rad/s^2"))
        if eef_position is not None:
            p = np.asarray(eef_position, float)
            lo, hi = np.asarray(lim.workspace_min, float), np.asarray(lim.workspace_max, float)
            vmin = np.minimum(0.0, (lo - p) / dt)
            vmax = np.maximum(0.0, (hi - p) / dt)
            clipped = np.clip(out.linear, vmin, vmax)
            if not np.allclose(clipped, out.linear):
                axes = "".join("xyz"[i] for i in range(3) if clipped[i] != out.linear[i])
                new.append(SafetyEvent("workspace", now, f"velocity along {axes} would leave the box "
                                                         f"{lim.workspace_min}..{lim.workspace_max} m"))
                out.linear = clipped
        self._prev_linear = out.linear.copy()
        self._prev_angular = out.angular.copy()
        return out

    def _limit_joints(self, out: Command, joint_positions: np.ndarray | None, now: float,
                      new: list[SafetyEvent]) -> Command:
        target = np.asarray(out.joint_positions, float)
        if joint_positions is None or np.asarray(joint_positions).shape != target.shape:
            return self._stop("joint_state_mismatch", now, f"cannot check joint targets {target.shape} "
                                                           f"against the joint state", new)
        q = np.asarray(joint_positions, float)
        step = self.limits.max_joint_speed_radps * self.dt
        clipped = np.clip(target, q - step, q + step)
        if not np.allclose(clipped, target):
            new.append(SafetyEvent("joint_speed_limit", now, f"clipped to {self.limits.max_joint_speed_radps} rad/s"))
        out.joint_positions = clipped
        return out

    def _limit_gripper(self, out: Command, now: float, new: list[SafetyEvent]) -> Command:
        lim = self.limits
        if out.gripper_width is not None:
            w = float(np.clip(out.gripper_width, lim.gripper_min_width_m, lim.gripper_max_width_m))
            if w != out.gripper_width:
                new.append(SafetyEvent("gripper_width_limit", now, f"{out.gripper_width:.4f} m -> {w:.4f} m"))
            out.gripper_width = w
        if out.gripper_effort is not None and out.gripper_effort > lim.max_gripper_effort_n:
            new.append(SafetyEvent("gripper_effort_limit", now,
                                   f"{out.gripper_effort:.1f} N -> {lim.max_gripper_effort_n} N"))
            out.gripper_effort = lim.max_gripper_effort_n
        return out
