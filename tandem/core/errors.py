"""Error hierarchy of tandem.

Every error a user can cause (bad config, bad model output, bad checkpoint, unstable
simulation) is a :class:`TandemError`, so callers can catch one type and report a clear
message instead of a traceback from deep inside robosuite, torch or a VLM client.
This module imports nothing from the project.
"""

from __future__ import annotations

from collections.abc import Sequence


class TandemError(Exception):
    """Base class of every error raised on purpose by tandem."""


class ConfigError(TandemError, ValueError):
    """A configuration value is invalid (bad Hydra override, inconsistent sizes, ...)."""


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """The suggestion that ends a message about an unknown ``name``: ``"; did you mean 'seed'?"`` for the closest of
    ``known`` (difflib's ratio at least 0.6), else ``""``."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class UnknownNameError(ConfigError, KeyError):
    """A name (task, skill, object, camera, perturbation, variant) is not registered.

    Attributes:
        kind: what kind of name it was, e.g. ``"task"``.
        name: the offending name.
        known: the names that would have been accepted.

    ``where`` (e.g. ``"for task 'stack_three'"``) narrows the message: "unknown perturbation 'x' for task
    'stack_three'; known perturbations for task 'stack_three': ...".
    """

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...], where: str = ""):
        self.kind, self.name, self.known = kind, name, sorted(known)
        at = f" {where}" if where else ""
        super().__init__(f"unknown {kind} {name!r}{at}; known {kind}s{at}: {', '.join(self.known) or '(none)'}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class UnknownTaskError(UnknownNameError):
    """A task name that no task registry knows (the message suggests the closest known one)."""
    def __init__(self, name: str, known):
        super().__init__("task", name, known)


class UnknownSkillError(UnknownNameError):
    """A skill name the task does not declare (the message suggests the closest known one)."""
    def __init__(self, name: str, known):
        super().__init__("skill", name, known)


class UnknownObjectError(UnknownNameError):
    """An object name the task does not declare (the message suggests the closest known one)."""
    def __init__(self, name: str, known):
        super().__init__("object", name, known)


class PlanParseError(TandemError, ValueError):
    """A planner or verifier model output could not be turned into a valid Plan/Verdict.

    Attributes:
        text: the offending model output (truncated to 4000 characters for display).
        reason: why it was rejected.
    """

    def __init__(self, reason: str, text: str = ""):
        self.reason = reason
        self.text = text
        shown = text if len(text) <= 4000 else text[:4000] + f"... [{len(text) - 4000} more chars]"
        super().__init__(f"{reason}; model output was: {shown!r}")


class SubgoalSchemaError(TandemError, ValueError):
    """A Subgoal (or its trace / goal image) violates the data contract in tandem.core.types."""


class BuildError(TandemError):
    """A component of a stack cannot be built from what it was given (a corrupt or mismatched checkpoint, a library
    that fails while loading one).

    Bad input, never an episode's outcome: it stops a demo or an evaluation (exit status 2) and is never recorded as
    a policy's failed episode. ``tandem.runtime.registry.build_stack`` raises it, chained, for any non-tandem error
    a builder raises.
    """


class CheckpointError(BuildError):
    """A checkpoint is missing, corrupt, or does not match the config/statistics it claims."""


class OutputFolderError(TandemError, OSError):
    """An output folder cannot be created or written (a read-only file system, a file in its place, no permission).

    Raised before a command does any work (:mod:`tandem.core.output_folders`).
    """


class SimUnstableError(TandemError):
    """The physics simulation became unstable (NaN or exploding qpos/qvel).

    Ends the episode as failed with this reason recorded; never crashes a batch evaluation.
    """


class PlacementError(TandemError):
    """Initial object placement failed for a seed (the placement sampler found no valid pose)."""


class DatasetSchemaError(TandemError, ValueError):
    """A dataset on disk is malformed or has a schema different from the one expected."""


class NonFiniteActionError(TandemError, ValueError):
    """A policy produced (or was given) NaN/inf values."""


class SafetyViolation(TandemError):
    """A robot command was rejected by the safety layer (workspace, velocity, staleness, e-stop)."""


class PrivilegedAccessError(TandemError):
    """A component that is not an oracle read ``Observation.privileged`` (the simulator's truth).

    Raised by the guard that :mod:`tandem.core.privileged` puts in place of the privileged state in every
    observation the runtime hands to a component whose ``is_oracle`` is False; the message names the component.
    """


class StaleObservationError(TandemError):
    """An image of an observation was read after the simulator had moved on, and it had not been rendered.

    Raised by :class:`tandem.core.lazy_images.LazyImages`: images are rendered when first read, and only while the
    simulator still holds the observed state. A component that keeps an observation to read later (a verifier's
    ``before``, a planner in a worker thread) must have it rendered first (``LazyImages.materialize``).
    """
