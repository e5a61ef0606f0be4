"""Configuration of the learned trace model (vocabulary and network) and of its training. Plain Python and numpy, no
torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from planner_vlm.learned.grasp_check import Workcell
from planner_vlm.learned.grasp_prior import GraspPrior
from tandem.core.errors import ConfigError
from tandem.core.number_fields import check_own_numbers, in_range

#: Orders of the trace model's output slots (see :attr:`TraceModelConfig.slot_order`).
SLOT_ORDERS = ("start", "end", "event")


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
            closed; after a failed grasp it does, and a model that reads the opening puts the re-pick's grasp point
            off. False zeroes it; True (the default of older checkpoints) keeps it.
        yaw_correction_deg: bound (deg) of the regressed yaw correction added to the chosen candidate (``tanh`` times
            this). 0: the yaw is exactly a candidate (the gripper's yaw or an argument's, up to a quarter turn), as
            for a stack_three cube, whose expert grasp yaw is the cube's own; off the demonstrations' states a free
            correction drifts from the state model's cube yaw.
        slot_order: which output slot predicts which trace point. ``"start"`` (the default of older checkpoints):
            slot k is the trace's row k. ``"end"``: slot 0 is still row 0 (the gripper now), and slot k >= 1 is the
            k-th row from the end, so a skill's closing points (a pick's hover, grasp, close and lift) sit in the
            same slots whatever number of wrist-turn points the expert put before them (pick_place_bins: 0-4).
            With ``"start"`` the slots of those points shifted with that number, and the network blended them: a
            pick's hover point came out 6 cm off in xy on a trace with three turn points. ``"event"``: slot 0 is row
            0, and the trace's *event* row (the first whose gripper command differs from row 0's: a pick's close, a
            place's release; the last row when none does) sits in slot ``trace_len // 2``, the rows before and after
            it in the slots before and after (:func:`planner_vlm.learned.trace_model.event_slots`). A nut_assembly
            pick has 3-6 points before its close and 2-7 after (wrist turns on both sides), so neither end aligns
            its grasp: with ``"end"`` the held-out grasp height was 40 mm off at the 90th percentile (a blend of the
            grasp and the lift above it), with ``"event"`` 1.5 mm.
        coherent_turns: whether the decoded yaws are made one turn of the wrist, from the gripper's yaw now to the
            last point's (:func:`planner_vlm.learned.trace_model.coherent_turns`). False: each row's half turn is its
            own decision (older checkpoints).
        workcell: the task's static scene for the learned planner's grasp check
            (:class:`planner_vlm.learned.grasp_check.Workcell` as a dict: the source bin's walls, the objects'
            extents), recorded at training from the dataset's task (``TaskDefinition.workcell``); empty: no check.
            It changes no weight.
        ensemble: members (>= 1): independently initialised networks trained on the same samples with different
            seeds (``TraceTrainConfig.seed + k``), each keeping its own best held-out snapshot; their outputs (point
            decodings, yaw and turn logits, gripper and length logits) are averaged before decoding, a deep
            ensemble (Lakshminarayanan et al. 2017). 1: one network (older checkpoints).
        grasp_prior: the demonstrated grasp of each object in its own frame where the demonstrations agree
            (:class:`planner_vlm.learned.grasp_prior.GraspPrior` as a dict), fitted at training from the dataset's
            pick attempts (``tandem-train-trace model.grasp_prior=true``) or added to a checkpoint by
            ``scripts/fit_grasp_prior.py``; the learned planner moves a pick's close that misses it onto it. It
            changes no weight. Empty: none (older checkpoints).
        pick_geometry: the static facts of the task's expert pick geometry, as a dict naming its ``kind``
            (:mod:`tandem.core.pick_geometry`; e.g. nut_assembly's ``nut_pegs``: each nut's handle grasp, squaring
            and peg, the robot's base), recorded at training from the dataset's task
            (``TaskDefinition.pick_geometry``); with the learned planner's ``geometric_picks`` a pick of such an
            object gets the expert's geometry over the object as read instead of the network's trace. Only its
            being a mapping is checked here: the learned planner reads it with the reader of kinds the runtime hands
            it. It changes no weight. Empty: none.
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
    slot_order: str = "start"
    coherent_turns: bool = False
    workcell: dict[str, Any] = field(default_factory=dict)
    ensemble: int = 1
    grasp_prior: dict[str, Any] = field(default_factory=dict)
    pick_geometry: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
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
        if self.slot_order not in SLOT_ORDERS:
            raise ConfigError(f"trace model slot_order must be one of {list(SLOT_ORDERS)}, got {self.slot_order!r}")
        bad = {k: v for k, v in self.symmetries.items() if k not in self.objects or v < 1}
        if bad:
            raise ConfigError(f"trace model symmetries must name its objects with orders >= 1, got {bad}")
        if self.workcell:
            Workcell.from_dict(self.workcell)  # raises ConfigError naming a malformed field
        if self.grasp_prior:
            unknown = sorted(set(GraspPrior.from_dict(self.grasp_prior).objects) - set(self.objects))  # likewise
            if unknown:
                raise ConfigError(f"trace model grasp_prior names {unknown}, not among its objects {list(self.objects)}")
        if not isinstance(self.pick_geometry, dict):  # its kind and fields: read by the learned planner
            raise ConfigError(f"trace model pick_geometry must be a mapping naming its kind, got "
                              f"{type(self.pick_geometry).__name__}")
        if self.ensemble < 1:
            raise ConfigError(f"trace model ensemble must be >= 1 member, got {self.ensemble}")
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
        steps: optimisation steps. max_minutes: wall-clock cap (min). Both per network: an ensemble
            (``TraceModelConfig.ensemble``) trains its members one after another, each to these limits.
        keypoint_noise_m: standard deviation (m) of the Gaussian noise added to every input keypoint, per sample and
            per step, so that the model is trained on inputs as noisy as the state model's predictions.
        carry_height_jitter_m: half-width (m) of a uniform vertical shift given, per sample and per step, to the
            gripper and the object it carries at the start of a carrying subgoal (one whose trace starts closed:
            place, stack, insert), with the trace's row 0 (the gripper now) moved with them. The expert's other
            points do not depend on that height, but in the demonstrations a carry always starts at the end of the
            expert's lift, so without it the network tied the release height to the start height: 3 cm lower at
            the start put pick_place_bins' release points 15-20 mm too low, where the learned executor's lift can
            end 3 cm short. 0: off (the default of older recipes).
        carry_offset_jitter_m: half-width (m, in x and y) of a random shift of the carried object in the fingers at
            the start of a carrying subgoal, with the trace's rows over the target moved against it
            (:func:`planner_vlm.learned.trace_train.start_jitter`). 0: off.
        carry_flip_fraction: share of the carrying samples whose object is turned by a half turn about the gripper
            (a nut held with its handle the other way round), the rows over the target moved to release the object,
            not the gripper, where the expert releases it. 0: off.
        start_jitter_m: half-width (m, per axis) of a uniform shift of the gripper at the start of the other
            subgoals (an open gripper: pick), with the trace's rows tied to the start moved along
            (:func:`planner_vlm.learned.trace_train.start_jitter`): a re-pick starts about 10 cm lower than any
            pick of the demonstrations, and a 10 cm lower start put the previous pick_place_bins model's grasp points
            4 cm off in height at the median (``benchmarks/trace_start_shift.py``). 0: off.
        repick_fraction: share of those pick samples whose gripper instead starts right above the grasp point
            (within ``repick_radius_m`` in x and y, 0 to ``repick_height_m`` above it), as a re-pick does after a
            grasp that closed on nothing (:func:`planner_vlm.learned.trace_train.start_jitter`). No demonstrated pick
            starts there: on pick_place_bins' held-out seeds, 11 of 52 failed picks had a learned grasp point 2-160 cm
            from a well-read object, most from starts 2-8 cm from it. It cut the re-pick grasp error (p90 44 -> 4
            mm) but gained nothing closed loop (docs/learned-high-level.md). 0: off.
        repick_radius_m: half-width (m) in x and y of a re-pick start around the grasp point.
        repick_height_m: highest start (m) of a re-pick above the grasp point.
        val_episodes: the last this-many episodes are held out for the validation metrics.
        seed: initialisation, noise and batch order.
        eval_every: steps between held-out evaluations.
    """

    batch_size: int = in_range(128, ge=1)
    lr: float = in_range(1e-3, gt=0)
    weight_decay: float = in_range(1e-4, ge=0)
    steps: int = in_range(6000, ge=1)
    max_minutes: float = in_range(10.0, gt=0, unit="min")
    keypoint_noise_m: float = in_range(0.004, ge=0, unit="m")
    carry_height_jitter_m: float = in_range(0.0, ge=0, unit="m")
    carry_offset_jitter_m: float = in_range(0.0, ge=0, unit="m")
    carry_flip_fraction: float = in_range(0.0, ge=0, le=1)
    start_jitter_m: float = in_range(0.0, ge=0, unit="m")
    repick_fraction: float = in_range(0.0, ge=0, le=1)
    repick_radius_m: float = in_range(0.05, ge=0, unit="m")
    repick_height_m: float = in_range(0.15, ge=0, unit="m")
    val_episodes: int = in_range(20, ge=0)
    seed: int = 0
    eval_every: int = in_range(500, ge=1)

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges, naming the field, whoever builds it
        if self.batch_size < 1 or self.lr <= 0 or self.steps < 1 or self.max_minutes <= 0 or self.eval_every < 1:
            raise ConfigError("trace training needs batch_size, steps, eval_every >= 1 and lr, max_minutes > 0, got "
                              f"{self.batch_size}, {self.steps}, {self.eval_every}, {self.lr}, {self.max_minutes}")
        jitters = (self.keypoint_noise_m, self.carry_height_jitter_m, self.carry_offset_jitter_m, self.start_jitter_m,
                   self.repick_radius_m, self.repick_height_m, self.val_episodes)
        if min(jitters) < 0:
            raise ConfigError(f"trace training keypoint_noise_m, carry_height_jitter_m, carry_offset_jitter_m, "
                              f"start_jitter_m, repick_radius_m, repick_height_m and val_episodes must be >= 0, got "
                              f"{jitters}")
        for name in ("repick_fraction", "carry_flip_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"trace training {name} must be in [0, 1], got {getattr(self, name)}")

    @property
    def augments_starts(self) -> bool:
        """Whether any start augmentation of :func:`planner_vlm.learned.trace_train.start_jitter` is on."""
        return max(self.carry_height_jitter_m, self.carry_offset_jitter_m, self.carry_flip_fraction,
                   self.start_jitter_m, self.repick_fraction) > 0
