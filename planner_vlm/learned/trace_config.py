"""Configuration of the learned trace model (vocabulary and network) and of its training. Plain Python, no torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tandem.core.errors import ConfigError


@dataclass(frozen=True)
class TraceModelConfig:
    """The trace model's vocabulary and network (fixed by the weights).

    Attributes:
        objects: objects with keypoints (O), in the order of the dataset's ``labels.keypoints_3d``.
        skills: skill names (S), e.g. ``("pick", "stack")``.
        arg_names: every name a subgoal argument can take (A): the objects and the task's targets (bins, pegs).
        symmetries: object -> order ``m >= 1`` of its visual rotational symmetry about its vertical axis (as in the
            state model): its yaw is only known modulo ``2 pi / m``.
        trace_len: K3, rows of a predicted trace (:data:`tandem.core.dataset_schema.TRACE_3D_LEN`).
        hidden: width of the MLP. layers: hidden layers.
        use_gripper_opening: whether the proprio's gripper opening is an input. It says nothing the skill does not
            (a pick starts open, a stack holds a cube), and in demonstrations a pick never starts with the gripper
            closed; after a failed grasp it does, and a model that reads the opening put the re-pick's grasp point
            8-14 mm off (stack_three, seed 1020). False zeroes it; True (the default of older checkpoints) keeps it.
        yaw_correction_deg: bound (deg) of the regressed yaw correction added to the chosen candidate (``tanh`` times
            this). 0: the yaw is exactly a candidate (the gripper's yaw or an argument's, up to a quarter turn), as
            for a stack_three cube, whose expert grasp yaw is the cube's own; off the demonstrations' states a free
            correction drifted 7-29 deg from the state model's cube yaw (seeds 1019, 1020, 1046, 1049).
    """

    objects: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    arg_names: tuple[str, ...] = ()
    symmetries: dict[str, int] = field(default_factory=dict)
    trace_len: int = 16
    hidden: int = 256
    layers: int = 3
    use_gripper_opening: bool = True
    yaw_correction_deg: float = 45.0

    def __post_init__(self) -> None:
        for name in ("objects", "skills", "arg_names"):
            object.__setattr__(self, name, tuple(str(v) for v in getattr(self, name)))
            if len(set(getattr(self, name))) != len(getattr(self, name)):
                raise ConfigError(f"trace model {name} must be unique, got {list(getattr(self, name))}")
        object.__setattr__(self, "symmetries", {str(k): int(v) for k, v in dict(self.symmetries).items()})
        if not self.skills:
            raise ConfigError("trace model needs at least one skill")
        missing = sorted(set(self.objects) - set(self.arg_names))
        if missing:
            raise ConfigError(f"trace model arg_names must include every object; missing {missing}")
        if not 0.0 <= self.yaw_correction_deg <= 90.0:
            raise ConfigError(f"trace model yaw_correction_deg must be in [0, 90], got {self.yaw_correction_deg}")
        bad = {k: v for k, v in self.symmetries.items() if k not in self.objects or v < 1}
        if bad:
            raise ConfigError(f"trace model symmetries must name its objects with orders >= 1, got {bad}")
        if self.trace_len < 2 or self.hidden < 1 or self.layers < 1:
            raise ConfigError(f"trace model needs trace_len >= 2, hidden >= 1, layers >= 1, got {self.trace_len}, "
                              f"{self.hidden}, {self.layers}")

    def symmetry(self, obj: str) -> int:
        """The symmetry order of ``obj`` (1 when not declared)."""
        return int(self.symmetries.get(obj, 1))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        d = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TraceModelConfig:
        """Inverse of :meth:`to_dict`.

        Raises:
            ConfigError: an unknown field (named) or an invalid value.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown trace model config field(s) {unknown}; known: {sorted(known)}")
        return cls(**d)


@dataclass(frozen=True)
class TraceTrainConfig:
    """How the trace model is trained (``tandem-train-trace``; the ``train`` section).

    Attributes:
        batch_size: subgoal starts per step. lr: AdamW learning rate (cosine-decayed). weight_decay: AdamW's.
        steps: optimisation steps. max_minutes: wall-clock cap (min).
        keypoint_noise_m: standard deviation (m) of the Gaussian noise added to every input keypoint, per sample and
            per step, so that the model is trained on inputs as noisy as the state model's predictions.
        val_episodes: the last this-many episodes are held out for the validation metrics.
        seed: initialisation, noise and batch order.
        eval_every: steps between held-out evaluations.
    """

    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    steps: int = 6000
    max_minutes: float = 10.0
    keypoint_noise_m: float = 0.004
    val_episodes: int = 20
    seed: int = 0
    eval_every: int = 500

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.lr <= 0 or self.steps < 1 or self.max_minutes <= 0 or self.eval_every < 1:
            raise ConfigError("trace training needs batch_size, steps, eval_every >= 1 and lr, max_minutes > 0, got "
                              f"{self.batch_size}, {self.steps}, {self.eval_every}, {self.lr}, {self.max_minutes}")
        if self.keypoint_noise_m < 0 or self.val_episodes < 0:
            raise ConfigError(f"trace training keypoint_noise_m and val_episodes must be >= 0, got "
                              f"{self.keypoint_noise_m}, {self.val_episodes}")
