"""``LeRobotPolicyExecutor``: any LeRobot policy (ACT, Diffusion, SmolVLA, pi0, ...) behind tandem's Executor protocol.

Loading (offline, LeRobot 0.6.1): a ``pretrained_model`` directory written by ``lerobot-train``
(``config.json``, ``model.safetensors``, ``policy_preprocessor.json`` / ``policy_postprocessor.json`` with their
statistics) is read with LeRobot's own factory: ``PreTrainedConfig.from_pretrained`` -> ``get_policy_class(type)
.from_pretrained`` and ``make_pre_post_processors(cfg, pretrained_path=...)``, the same calls ``lerobot-eval`` makes
after ``make_policy``. Only local directories are accepted, so nothing is fetched from the Hugging Face hub.

Each control step (as ``lerobot.common.control_utils.predict_action`` does):

1. the tandem :class:`~tandem.core.types.Observation` becomes LeRobot's raw observation with the keys of our dataset
   schema (:mod:`tandem.core.dataset_schema`): ``observation.images.<camera>`` ``uint8 (H, W, 3)`` (origin top-left, as
   recorded) for every image feature of the policy, ``observation.state`` ``float32 (D,)`` = ``proprio`` (eef
   position m world frame, quaternion wxyz, gripper opening m), and ``"task"`` = the active subgoal's text
   (``task_text="subgoal"``) or the task's instruction (``task_text="instruction"``);
2. ``lerobot.policies.utils.prepare_observation_for_inference`` (images -> ``float32 (1, 3, H, W)`` in [0, 1],
   batch dim, device), the policy's pre-processor (rename, normalise), ``policy.select_action`` (the policy keeps
   its own observation history and action queue), the post-processor (unnormalise, to CPU);
3. the action ``float32 (A,)`` is checked for NaN/inf and clipped to the controller limits (default ``[-1, 1]``).

``set_subgoal`` calls ``policy.reset()``, which drops the queued actions (and the policy's observation history,
refilled from the next frame). LeRobot policies have no done head, so ``subgoal_done()`` is always False: the
agent's step budget ends each subgoal (run flat: one subgoal, ``agent.subgoal_step_budget=null``).

**tandem's own policy types.** A ``tandem_diffusion`` or ``tandem_track`` pretrained_model (``lerobot-train
--policy.type=tandem_diffusion|tandem_track``, :mod:`executor_vla.lerobot_plugin`) wraps a
:class:`~executor_vla.policy.DiffusionExecutor` (text, goal image, keypoint trace) or a
:class:`~executor_vla.track_policy.TrackExecutor` (proprio, the subgoal's 3-D trace, text). Each conditions on the
whole subgoal, keeps its own observation history and has a done head. LeRobot's single-frame batch carries none of
that, so for these types the loaded policy's executor is driven directly: ``set_subgoal`` / ``select_action`` /
``subgoal_done`` are the executor's (its processors are identity normalisation plus the device step, which it does
itself). A track executor samples with the fused DDIM loop at load (``TrackExecutor.optimize_for_inference``), as
tandem's own loader does. Its text is chosen by its ``conditioning_source``;
``task_text`` must name the same (``subgoal`` or ``instruction``) or loading raises ConfigError.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from tandem.core import dataset_schema as schema
from tandem.core.errors import CheckpointError, ConfigError, NonFiniteActionError, SubgoalSchemaError
from tandem.core.types import Observation, Subgoal, TaskSpec

TaskText = Literal["subgoal", "instruction"]
#: The LeRobot policy type of tandem's image executor (:mod:`executor_vla.lerobot_plugin`).
TANDEM_POLICY_TYPE = "tandem_diffusion"
#: The LeRobot policy type of tandem's track executor.
TANDEM_TRACK_POLICY_TYPE = "tandem_track"
#: tandem's own LeRobot policy types: their ``executor`` is driven directly (see the module docstring).
TANDEM_POLICY_TYPES: tuple[str, ...] = (TANDEM_POLICY_TYPE, TANDEM_TRACK_POLICY_TYPE)
#: Files a LeRobot ``pretrained_model`` directory must hold (the processors' statistics files are referenced
#: from the two processor JSON files).
REQUIRED_FILES: tuple[str, ...] = ("config.json", "model.safetensors", "policy_preprocessor.json",
                                   "policy_postprocessor.json")


class LeRobotPolicyExecutor:
    """A loaded LeRobot policy with its processors, as a :class:`tandem.core.protocols.Executor` (see module docstring).

    Args:
        policy: a ``lerobot.policies.pretrained.PreTrainedPolicy`` in eval mode.
        preprocessor, postprocessor: its ``PolicyProcessorPipeline`` pair.
        task_text: which text is given as LeRobot's ``"task"``: ``"subgoal"`` (``Subgoal.text``) or
            ``"instruction"`` (``TaskSpec.instruction``; a policy trained with ``lerobot-train`` on a tandem dataset
            saw the episode instruction there).
        camera_map: policy camera name (the ``<cam>`` of ``observation.images.<cam>``, or a whole image key such
            as ``observation.image``) -> Observation camera name, for policies whose image features are not named
            after tandem's cameras (default: the same name).
        action_low, action_high: ``(A,)`` controller limits actions are clipped to (default ``+-1``).

    Raises:
        ConfigError: a bad ``task_text``; a policy that needs inputs an Observation cannot give
            (``observation.environment_state``, other non-image non-state features); an action size different
            from the limits' size.
    """

    #: False: it sees camera images, proprio and the task text only, never ``Observation.privileged``.
    is_oracle: ClassVar[bool] = False

    def __init__(self, policy: Any, preprocessor: Any, postprocessor: Any, task_text: TaskText = "subgoal",
                 camera_map: Mapping[str, str] | None = None, action_low: np.ndarray | None = None,
                 action_high: np.ndarray | None = None):
        if task_text not in ("subgoal", "instruction"):
            raise ConfigError(f"executor.task_text must be 'subgoal' or 'instruction', got {task_text!r}")
        self.policy, self.preprocessor, self.postprocessor = policy, preprocessor, postprocessor
        self.task_text: TaskText = task_text
        self.camera_map = dict(camera_map or {})
        policy_type = getattr(policy, "name", None)
        #: the executor of a ``tandem_diffusion`` (DiffusionExecutor) or ``tandem_track`` (TrackExecutor) policy,
        #: driven directly (see the module docstring)
        self.tandem = policy.executor if policy_type in TANDEM_POLICY_TYPES else None
        if self.tandem is not None:
            self.image_keys, self.state_key, self.state_dim, self.action_dim = _tandem_io(
                policy_type, self.tandem.cfg, self.camera_map, task_text)
        else:
            self.image_keys, self.state_key, self.state_dim, self.action_dim = _policy_io(policy.config,
                                                                                          self.camera_map)
        lo = np.full(self.action_dim, -1.0, np.float32) if action_low is None else np.asarray(action_low, np.float32)
        hi = np.full(self.action_dim, 1.0, np.float32) if action_high is None else np.asarray(action_high, np.float32)
        if lo.shape != (self.action_dim,) or hi.shape != (self.action_dim,):
            raise ConfigError(f"the LeRobot policy outputs {self.action_dim}-D actions but the controller limits are "
                              f"{lo.shape} / {hi.shape}")
        self.action_low, self.action_high = lo, hi
        if self.tandem is not None:
            self.tandem.action_low, self.tandem.action_high = lo, hi
        self.device = str(getattr(policy.config, "device", "cpu") or "cpu")
        self.text: str | None = None
        self.reset()

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_pretrained(cls, path: str | Path, device: str = "cpu", task_text: TaskText = "subgoal",
                        camera_map: Mapping[str, str] | None = None, action_low: np.ndarray | None = None,
                        action_high: np.ndarray | None = None) -> LeRobotPolicyExecutor:
        """Load a LeRobot ``pretrained_model`` directory offline with LeRobot's factory (see module docstring).

        Args:
            path: e.g. ``outputs/train/<run>/checkpoints/last/pretrained_model``.
            device: torch device the policy and its pre-processor run on (``cpu``, ``cuda``, ``cuda:N``).
            task_text, camera_map, action_low, action_high: see the class.

        Raises:
            CheckpointError: not a directory, a required file missing, a policy type LeRobot does not know, or
                weights/processors LeRobot cannot load (the message keeps LeRobot's reason).
            ConfigError: see the class.
        """
        path = Path(path)
        if not path.is_dir():
            raise CheckpointError(f"LeRobot checkpoint directory {path} does not exist (expected a lerobot-train "
                                  "pretrained_model directory)")
        missing = [f for f in REQUIRED_FILES if not (path / f).is_file()]
        if missing:
            raise CheckpointError(f"{path} is not a LeRobot pretrained_model directory: missing {missing}")
        try:
            policy_type = json.loads((path / "config.json").read_text()).get("type")
        except (OSError, ValueError) as e:
            raise CheckpointError(f"{path / 'config.json'} is not valid JSON: {e}") from e

        if policy_type in TANDEM_POLICY_TYPES:
            import executor_vla.lerobot_plugin  # noqa: F401  (registers the types with LeRobot)
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        known = PreTrainedConfig.get_known_choices()
        if policy_type not in known:
            raise CheckpointError(f"{path / 'config.json'}: LeRobot policy type {policy_type!r} is not registered; "
                                  f"known types: {', '.join(sorted(known))}")
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # LeRobot prints "Loading weights from local directory"
                cfg = PreTrainedConfig.from_pretrained(path, local_files_only=True)
                cfg.device = device
                cfg.pretrained_path = path
                policy = get_policy_class(policy_type).from_pretrained(path, config=cfg, local_files_only=True)
                pre, post = make_pre_post_processors(
                    cfg, pretrained_path=str(path), preprocessor_overrides={"device_processor": {"device": device}})
        except (OSError, ValueError, KeyError, RuntimeError, TypeError) as e:
            raise CheckpointError(f"LeRobot could not load the {policy_type} policy from {path}: "
                                  f"{type(e).__name__}: {e}") from e
        policy.eval()
        if policy_type == TANDEM_TRACK_POLICY_TYPE:
            policy.executor.optimize_for_inference()  # as TrackExecutor.from_checkpoint: the fused DDIM loop
        return cls(policy, pre, post, task_text=task_text, camera_map=camera_map, action_low=action_low,
                   action_high=action_high)

    # ------------------------------------------------------------------ Executor protocol
    def reset(self) -> None:
        """Forget the subgoal and the policy's observation history and action queue."""
        if self.tandem is not None:
            self.tandem.reset()
        self.policy.reset()
        for pipeline in (self.preprocessor, self.postprocessor):
            if hasattr(pipeline, "reset"):
                pipeline.reset()
        self.text = None

    def set_subgoal(self, subgoal: Subgoal, task: TaskSpec | None = None) -> None:
        """Use ``subgoal.text`` (or ``task.instruction``, see ``task_text``) as LeRobot's ``"task"``; drop the queue.

        Raises:
            SubgoalSchemaError: ``task_text="instruction"`` without a TaskSpec, or an empty text.
        """
        if self.task_text == "instruction":
            if task is None:
                raise SubgoalSchemaError("task_text='instruction' conditions the LeRobot policy on task.instruction: "
                                         "pass the TaskSpec to set_subgoal")
            text = task.instruction
        else:
            text = subgoal.text
        if not text or not text.strip():
            raise SubgoalSchemaError(f"subgoal {subgoal.id!r}: empty {self.task_text} text for the LeRobot policy")
        if self.tandem is not None:
            self.tandem.set_subgoal(subgoal, task)  # text, goal image and trace, as its config asks
        self.policy.reset()
        self.text = text

    def raw_observation(self, observation: Observation) -> dict[str, np.ndarray]:
        """The LeRobot raw observation of ``observation``: ``{"observation.images.<cam>": uint8 (H, W, 3),
        "observation.state": float32 (D,)}`` for the policy's input features.

        Raises:
            ConfigError: a camera the policy needs is missing from ``observation.images``, an image of another
                size than the policy's feature, or proprio of another length.
            NonFiniteActionError: NaN/inf in ``observation.proprio``.
        """
        raw: dict[str, np.ndarray] = {}
        for key, (cam, h, w) in self.image_keys.items():
            img = observation.images.get(cam)
            if img is None:
                raise ConfigError(f"the LeRobot policy needs camera {cam!r} ({key}); the observation has "
                                  f"{sorted(observation.images) or 'no images (is env.render false?)'}")
            if img.shape != (h, w, 3):
                raise ConfigError(f"observation image {cam!r} is {img.shape}, the LeRobot policy expects ({h}, {w}, 3); "
                                  f"set env.image_size=[{h},{w}]")
            raw[key] = np.ascontiguousarray(img)
        if self.state_key is not None:
            if observation.proprio.shape != (self.state_dim,):
                raise ConfigError(f"observation proprio is {observation.proprio.shape}, the LeRobot policy expects "
                                  f"({self.state_dim},) ({self.state_key})")
            if not np.all(np.isfinite(observation.proprio)):
                raise NonFiniteActionError(f"observation proprio contains NaN/inf: {observation.proprio.tolist()}")
            raw[self.state_key] = observation.proprio.astype(np.float32)
        return raw

    def select_action(self, observation: Observation) -> np.ndarray:
        """Next action ``float32 (A,)`` clipped to ``[action_low, action_high]``.

        Raises:
            SubgoalSchemaError: called before ``set_subgoal``.
            ConfigError: see :meth:`raw_observation`.
            NonFiniteActionError: NaN/inf in the proprio or in the policy's action.
        """
        if self.text is None:
            raise SubgoalSchemaError("select_action called before set_subgoal")
        if self.tandem is not None:
            return self.tandem.select_action(self._renamed(observation))
        import torch
        from lerobot.policies.utils import prepare_observation_for_inference

        raw = self.raw_observation(observation)
        with torch.inference_mode():
            batch = prepare_observation_for_inference(raw, torch.device(self.device), task=self.text)
            batch = self.preprocessor(batch)
            action = self.postprocessor(self.policy.select_action(batch))
        a = np.asarray(action.detach().to("cpu", torch.float32).numpy(), np.float32).reshape(-1)
        if a.shape != (self.action_dim,):
            raise ConfigError(f"the LeRobot policy returned an action of shape {tuple(action.shape)}, expected "
                              f"(1, {self.action_dim})")
        if not np.all(np.isfinite(a)):
            raise NonFiniteActionError(f"the LeRobot policy produced NaN/inf actions: {a.tolist()}")
        return np.clip(a, self.action_low, self.action_high).astype(np.float32)

    def subgoal_done(self) -> bool:
        """The done head of a ``tandem_diffusion`` or ``tandem_track`` policy; False for other LeRobot policies,
        which have none (the agent's step budget ends the subgoal)."""
        return self.tandem.subgoal_done() if self.tandem is not None else False

    def _renamed(self, observation: Observation) -> Observation:
        """``observation`` with its images under the policy's camera names (``camera_map``)."""
        if not self.camera_map:
            return observation
        images = {key[len(schema.IMAGE_PREFIX):]: observation.images[cam] for key, (cam, _, _) in self.image_keys.items()
                  if cam in observation.images}
        return dataclasses.replace(observation, images=images)


def _tandem_io(policy_type: str, cfg: Any, camera_map: Mapping[str, str], task_text: str
               ) -> tuple[dict[str, tuple[str, int, int]], str, int, int]:
    """:func:`_policy_io` for tandem's own policy types, from the executor's config: the cameras of a
    ``tandem_diffusion`` policy (:class:`~executor_vla.config.ExecutorConfig`), none for ``tandem_track``
    (:class:`~executor_vla.track_config.TrackExecutorConfig`: proprio and the subgoal only).

    Raises:
        ConfigError: ``task_text`` names another text than the policy's ``conditioning_source``.
    """
    if cfg.use_text and task_text != cfg.conditioning_source:
        raise ConfigError(f"this {policy_type} policy conditions on the {cfg.conditioning_source} text "
                          f"(conditioning_source={cfg.conditioning_source!r}) but executor.task_text={task_text!r}; "
                          f"set executor.task_text={cfg.conditioning_source}")
    if policy_type == TANDEM_TRACK_POLICY_TYPE:
        return {}, schema.STATE_KEY, int(cfg.state_dim), int(cfg.action_dim)
    h, w = cfg.image_size
    images = {schema.image_key(c): (camera_map.get(c, c), int(h), int(w)) for c in cfg.cameras}
    return images, schema.STATE_KEY, int(cfg.state_dim), int(cfg.action_dim)


def _policy_io(cfg: Any, camera_map: Mapping[str, str]) -> tuple[dict[str, tuple[str, int, int]], str | None, int,
                                                                   int]:
    """``({image key: (Observation camera, H, W)}, state key or None, state dim, action dim)`` of a LeRobot policy.

    An image feature ``observation.images.<cam>`` reads ``Observation.images[camera_map.get(cam, cam)]``; any
    other image key (e.g. LeRobot's ``observation.image``) only through ``camera_map[key]``.

    Raises:
        ConfigError: an input feature an Observation cannot provide (``observation.environment_state``, or
            ``subgoal.goal_image``, which ``lerobot-train`` makes an image input of any LeRobot policy trained on a
            tandem dataset unless ``--policy.input_features`` lists only the cameras and the state), or no/ill-shaped
            action feature.
    """
    from lerobot.configs.types import FeatureType

    images: dict[str, tuple[str, int, int]] = {}
    state_key, state_dim = None, 0
    unsupported = []
    for key, ft in (cfg.input_features or {}).items():
        if ft.type is FeatureType.VISUAL and (key.startswith(schema.IMAGE_PREFIX) or key in camera_map):
            shape = tuple(ft.shape)
            if len(shape) != 3 or shape[0] != 3:
                raise ConfigError(f"LeRobot image feature {key} has shape {shape}, expected (3, H, W)")
            cam = key[len(schema.IMAGE_PREFIX):] if key.startswith(schema.IMAGE_PREFIX) else key
            images[key] = (camera_map.get(cam, cam), int(shape[1]), int(shape[2]))
        elif ft.type is FeatureType.STATE and key == schema.STATE_KEY:
            state_key, state_dim = key, int(np.prod(ft.shape))
        else:
            unsupported.append(f"{key} ({ft.type.name} {tuple(ft.shape)})")
    if unsupported:
        hint = (f"; {schema.GOAL_IMAGE_KEY} became an input because lerobot-train takes every image feature of the "
                "dataset: retrain with --policy.input_features listing only the cameras and observation.state"
                if any(u.startswith(schema.GOAL_IMAGE_KEY) for u in unsupported) else "")
        raise ConfigError(f"the LeRobot policy needs inputs a tandem Observation does not carry: {unsupported}; "
                          f"supported: {schema.IMAGE_PREFIX}<camera> images (or camera_map entries) and "
                          f"{schema.STATE_KEY}{hint}")
    out = cfg.output_features or {}
    act = out.get(schema.ACTION_KEY)
    if act is None or len(tuple(act.shape)) != 1:
        raise ConfigError(f"the LeRobot policy has no 1-D {schema.ACTION_KEY!r} output feature (outputs: {dict(out)})")
    return images, state_key, state_dim, int(act.shape[0])
