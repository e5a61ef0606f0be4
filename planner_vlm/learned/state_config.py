"""Configuration of the learned state model (network shape and vocabulary) and of its training.

Plain Python (no torch), so that configs and checkpoints can be read without loading the network.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tandem.core.errors import ConfigError
from tandem.core.number_fields import check_own_numbers, in_range


@dataclass(frozen=True)
class StateModelConfig:
    """The state model's network and vocabulary (fixed by the weights).

    Attributes:
        objects: object names (O), in the order of the dataset's ``labels.keypoints_*`` features.
        predicates: ground predicate names (P), in the order of ``labels.predicates``.
        symmetries: object -> order ``m >= 1`` of its visual rotational symmetry about its vertical axis (a cube
            with the same texture on every face: 4). The second keypoint of such an object (3 cm along its local x
            axis) is defined only up to a turn of ``2 pi / m``, so it is trained and scored against the nearest of
            its ``m`` symmetric positions (ADD-S of PoseCNN, Xiang et al. RSS 2018). Objects not named: 1.
        camera: the camera the model reads (``"agentview"``).
        image_size: ``(H, W)`` px of the model's input; other images are resized to it.
        channels: widths of the encoder stages at strides 2, 2, 4, 8 (e.g. 42, 42, 21, 11 px at 84 px).
        head_hidden: width of the predicate and height heads.
        use_proprio: feed the proprioception (grip-site position, 6-D rotation, gripper opening) to the heads: a
            held object's height follows the gripper's.
        heatmap_stride: stride of the keypoint heatmaps (2: 42 x 42 at 84 px).
        yaw_head: also regress each object's yaw directly, as ``(cos m yaw, sin m yaw)`` for its symmetry order
            ``m``, from an image patch around its predicted origin (:class:`~planner_vlm.learned.state_net.StateNet`);
            the second keypoint is then placed from that yaw
            (:data:`tandem.core.dataset_schema.KEYPOINT_OFFSET_M` along it). At 84 px the two label keypoints of a
            cube are 2-3 px apart, too close for their difference to give the yaw (measured: 18 deg median error
            modulo a quarter turn, near the 22.5 deg of a guess), and a grasp needs it within a few degrees.
    """

    objects: tuple[str, ...] = ()
    predicates: tuple[str, ...] = ()
    symmetries: dict[str, int] = field(default_factory=dict)
    camera: str = "agentview"
    image_size: tuple[int, int] = (84, 84)
    channels: tuple[int, int, int, int] = (16, 16, 32, 48)
    head_hidden: int = 128
    use_proprio: bool = True
    heatmap_stride: int = 2
    yaw_head: bool = True

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
        object.__setattr__(self, "objects", tuple(str(o) for o in self.objects))
        object.__setattr__(self, "predicates", tuple(str(p) for p in self.predicates))
        object.__setattr__(self, "symmetries", {str(k): int(v) for k, v in dict(self.symmetries).items()})
        object.__setattr__(self, "image_size", tuple(int(v) for v in self.image_size))
        object.__setattr__(self, "channels", tuple(int(v) for v in self.channels))
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the bad field."""
        if len(set(self.objects)) != len(self.objects):
            raise ConfigError(f"state model objects must be unique, got {list(self.objects)}")
        if len(set(self.predicates)) != len(self.predicates):
            raise ConfigError(f"state model predicates must be unique, got {list(self.predicates)}")
        unknown = sorted(set(self.symmetries) - set(self.objects))
        if unknown:
            raise ConfigError(f"state model symmetries name objects outside its vocabulary: {unknown} "
                              f"(objects: {list(self.objects)})")
        bad = {k: v for k, v in self.symmetries.items() if v < 1}
        if bad:
            raise ConfigError(f"state model symmetry orders must be >= 1, got {bad}")
        if len(self.image_size) != 2 or min(self.image_size) < 8:
            raise ConfigError(f"state model image_size must be (H, W) >= 8 px, got {list(self.image_size)}")
        if len(self.channels) != 4 or min(self.channels) < 1:
            raise ConfigError(f"state model channels must be 4 widths >= 1, got {list(self.channels)}")
        if self.head_hidden < 1:
            raise ConfigError(f"state model head_hidden must be >= 1, got {self.head_hidden}")
        if self.heatmap_stride not in (1, 2, 4):
            raise ConfigError(f"state model heatmap_stride must be 1, 2 or 4, got {self.heatmap_stride}")

    @property
    def num_keypoints(self) -> int:
        """K = 2 O: two keypoints per object."""
        return 2 * len(self.objects)

    def symmetry(self, obj: str) -> int:
        """The symmetry order of ``obj`` (1 when not declared)."""
        return int(self.symmetries.get(obj, 1))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (lists for tuples)."""
        d = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StateModelConfig:
        """Inverse of :meth:`to_dict`.

        Raises:
            ConfigError: an unknown field (named) or an invalid value.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown state model config field(s) {unknown}; known: {sorted(known)}")
        return cls(**d)


@dataclass(frozen=True)
class StateTrainConfig:
    """How the state model is trained (``tandem-train-state``; the ``train`` section).

    Attributes:
        batch_size: frames per step.
        lr: AdamW learning rate (cosine-decayed to 10% over ``max_steps`` or the time budget).
        weight_decay: AdamW weight decay.
        max_minutes: time budget (min) on ``clock``; training stops at this or ``max_steps``, whichever comes
            first.
        clock: ``"wall"`` (elapsed time) or ``"cpu"`` (this process's CPU time: with one torch thread, the time of
            one core, the same whatever else shares the machine).
        max_steps: step cap (None: the time budget alone).
        eval_every: steps between validation passes (also the snapshot cadence).
        frame_stride: use every n-th frame of each episode (consecutive frames at 20 Hz are nearly identical).
        val_episodes: the last this-many episodes are held out (validation metrics and temperature fitting).
        seed: initialisation and batch order.
        px_weight: weight of the keypoint pixel loss (Huber, px).
        heatmap_weight: weight of the heatmap cross-entropy (against a Gaussian at the label).
        metric_weight: weight of the 3-D keypoint loss (Huber, cm).
        predicate_weight: weight of the predicate loss (binary cross-entropy).
        yaw_weight: weight of the yaw loss (squared error of the unit vector ``(cos m yaw, sin m yaw)``).
        brightness, contrast: photometric augmentation amplitudes (uniform in ``1 +- a``); 0 = off.
        gripper_jitter: probability that a training frame in which no object is grasped gets the gripper opening of a
            gripper closed on nothing (the proprio feature, m, drawn uniformly in the range
            :func:`~planner_vlm.learned.state_train.closed_on_nothing_range` fits from the labels). In
            demonstrations a closed gripper almost always holds a cube, so without it the model learns the shortcut
            "closed gripper -> the stack is not built yet" (causal confusion, de Haan et al., NeurIPS 2019): after a
            failed grasp a verified ``on(x,y)`` was read as false. Redrawing over all openings instead removed the
            opening as a grasp cue and the model missed held cubes. 0 = off.
        val_frames: at most this many held-out frames per validation pass (evenly spaced).
        init_from: a state model checkpoint directory to start from (fine-tuning, e.g. on closed-loop rollouts added
            to the demonstrations, DAgger-style: Ross et al. 2011); its network config must equal ``model``'s, and its
            normalisers (height, proprio) are kept. None: random initialisation.
    """

    batch_size: int = in_range(32, ge=1)
    lr: float = in_range(2e-3, gt=0)
    weight_decay: float = in_range(1e-4, ge=0)
    max_minutes: float = in_range(30.0, gt=0, unit="min")
    max_steps: int | None = in_range(None, ge=1)
    clock: str = "wall"
    eval_every: int = in_range(500, ge=1)
    frame_stride: int = in_range(2, ge=1)
    val_episodes: int = in_range(10, ge=0)
    seed: int = 0
    px_weight: float = in_range(1.0, ge=0)
    heatmap_weight: float = in_range(0.5, ge=0)
    metric_weight: float = in_range(0.5, ge=0)
    predicate_weight: float = in_range(2.0, ge=0)
    yaw_weight: float = in_range(1.0, ge=0)
    brightness: float = in_range(0.15, ge=0, lt=1)
    contrast: float = in_range(0.15, ge=0, lt=1)
    val_frames: int = in_range(2000, ge=1)
    init_from: str | None = None
    gripper_jitter: float = in_range(0.0, ge=0, le=1)

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
        if self.batch_size < 1 or self.lr <= 0 or self.max_minutes <= 0 or self.eval_every < 1:
            raise ConfigError("state training needs batch_size >= 1, lr > 0, max_minutes > 0 and eval_every >= 1, "
                              f"got {self.batch_size}, {self.lr}, {self.max_minutes}, {self.eval_every}")
        if self.clock not in ("wall", "cpu"):
            raise ConfigError(f"state training clock must be 'wall' or 'cpu', got {self.clock!r}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"state training max_steps must be >= 1 or null, got {self.max_steps}")
        if self.frame_stride < 1 or self.val_episodes < 0 or self.val_frames < 1:
            raise ConfigError("state training needs frame_stride >= 1, val_episodes >= 0 and val_frames >= 1, got "
                              f"{self.frame_stride}, {self.val_episodes}, {self.val_frames}")
        if not 0.0 <= self.gripper_jitter <= 1.0:
            raise ConfigError(f"state training gripper_jitter is a probability in [0, 1], got {self.gripper_jitter}")
        if min(self.brightness, self.contrast) < 0 or max(self.brightness, self.contrast) >= 1:
            raise ConfigError(f"state training brightness/contrast must be in [0, 1), got {self.brightness}, "
                              f"{self.contrast}")
