"""The learned state model: one agentview image (+ proprio) -> a :class:`~planner_vlm.learned.scene_state.SceneState`.

It wraps :class:`~planner_vlm.learned.state_net.StateNet` with what a trained model carries besides its weights:

* the **camera calibration** (:class:`~planner_vlm.learned.camera.CameraCalibration`) that lifts the predicted
  pixels to 3-D at the predicted heights; it is stored with the checkpoint and can be overridden for a real robot
  (the runtime injects the simulator camera's);
* the **temperature** of the predicate logits (temperature scaling, Guo et al., ICML 2017 "On Calibration of Modern
  Neural Networks"), fitted on held-out frames, so that ``p(predicate)`` is a calibrated probability;
* the **entropy reference** of each keypoint heatmap on held-out training-distribution frames (median and 99th
  percentile): the confidence signal. A scene unlike the training scenes (another table, light, unseen colours)
  gives diffuse heatmaps; a keypoint's confidence is ``exp(-max(0, H - H99) / max(H99 - H50, 0.1))``, 1 within the
  training range and falling with every further spread beyond it. :attr:`SceneState.scene_confidence` is the least
  confident keypoint's, an object's confidence its least confident keypoint's;
* the **rest heights** of the objects (:mod:`planner_vlm.learned.rest_heights`), fitted from the labels: an object
  that no predicate says is supported (not grasped, on nothing) is lifted to 3-D at its resting mode's height (the
  one nearest the regressed height: upright or lying) rather than at the regressed one, which one camera confuses
  with depth.
* the **depth offsets** of the objects (:mod:`planner_vlm.learned.depth_heights`, ``scripts/fit_depth_offsets.py``):
  where the observation carries the camera's depth image (an RGB-D camera), an object whose 3-D read the depth
  contradicts is moved along its ray to the depth's height.

Checkpoints are directories (safetensors + JSON, never pickle), like the executor's::

    model.safetensors   # StateNet weights and buffers
    config.json         # {"format": "tandem-state-model/1", "model": StateModelConfig, "calibration": {...},
                        #  "temperature": T, "entropy_reference": {"p50": [K], "p99": [K]},
                        #  "rest_heights": [per object: [[z0, z1], ...] its resting modes, null: none]
                        #  (optional; [z0, z1] per object: one mode, as before resting modes),
                        #  "depth_offsets_m": [per object: m or null] (optional),
                        #  "absent_uncertainty": [per object: unitless or null] (optional),
                        #  "support_z_m": m or null (optional), "metrics": {...}}
    command.txt         # the command that produced it

It never reads ``Observation.privileged``: it works from the image and the proprio, as on a robot.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file

from planner_vlm.learned.camera import CameraCalibration
from planner_vlm.learned.checkpoint_files import load_matching_weights, read_checkpoint_config
from planner_vlm.learned.depth_heights import depth_checked_keypoints
from planner_vlm.learned.proprio import proprio_features
from planner_vlm.learned.rest_heights import (
    apply_rest_heights,
    as_rest_modes,
    free_mask,
    rest_heights_from_json,
    rest_heights_to_json,
)
from planner_vlm.learned.scene_state import SceneState
from planner_vlm.learned.state_config import StateModelConfig
from planner_vlm.learned.state_net import StateNet
from tandem.core.dataset_schema import KEYPOINT_OFFSET_M
from tandem.core.errors import CheckpointError, ConfigError
from tandem.core.number_fields import finite_number
from tandem.core.types import Observation

FORMAT = "tandem-state-model/1"
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
COMMAND = "command.txt"
#: Floor (nats) of the entropy spread ``H99 - H50`` used by the confidence.
MIN_ENTROPY_SPREAD = 0.1


def resize_image(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``uint8 (H, W, 3)`` image resized to ``size = (H', W')`` (area interpolation; unchanged if equal)."""
    if image.shape[:2] == tuple(size):
        return image
    import cv2

    return cv2.resize(image, (int(size[1]), int(size[0])), interpolation=cv2.INTER_AREA)


def camera_geometry(cal: CameraCalibration) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(k_inv (3, 3), rot (3, 3), pos (3,))`` float32 tensors of ``cal`` (for
    :func:`planner_vlm.learned.state_net.lift_to_height`)."""
    return (torch.tensor(np.linalg.inv(cal.intrinsics), dtype=torch.float32),
            torch.tensor(cal.rotation, dtype=torch.float32), torch.tensor(cal.position, dtype=torch.float32))


def keypoint_confidence(entropy: np.ndarray, p50: np.ndarray, p99: np.ndarray) -> np.ndarray:
    """Per-keypoint confidence in [0, 1] from heatmap entropies ``(..., K)`` and the training references ``(K,)``
    (see the module docstring)."""
    spread = np.maximum(np.asarray(p99) - np.asarray(p50), MIN_ENTROPY_SPREAD)
    return np.exp(-np.maximum(np.asarray(entropy) - np.asarray(p99), 0.0) / spread)


def keypoint_uncertainty(entropy: np.ndarray, p50: np.ndarray, p99: np.ndarray) -> np.ndarray:
    """Per-keypoint ``(H - H50) / max(H99 - H50, 0.1)`` from heatmap entropies ``(..., K)`` nats and the training
    references ``(K,)``: unbounded, <= 0 as sharp as a typical training frame, 1 at the training 99th percentile
    (:attr:`~planner_vlm.learned.scene_state.SceneState.object_uncertainty`). NaN where a reference is infinite
    (a model saved without references)."""
    spread = np.maximum(np.asarray(p99) - np.asarray(p50), MIN_ENTROPY_SPREAD)
    with np.errstate(invalid="ignore"):
        out = (np.asarray(entropy) - np.asarray(p50)) / spread
    return np.where(np.isfinite(np.asarray(p99)), out, np.nan)


class StateModel:
    """A trained state model ready to read observations (see the module docstring).

    Args:
        cfg: the network's config (vocabulary, image size, camera).
        calibration: the camera's calibration (at any image size; rescaled to ``cfg.image_size``).
        net: the network (a fresh one when None).
        temperature: predicate logit temperature (> 0).
        entropy_p50, entropy_p99: ``(K,)`` nats, the heatmap entropy reference (None: every keypoint confident).
        metrics: held-out metrics recorded at training time (JSON-safe).
        rest_heights: ``(O, M, 2)`` m, each object's resting modes, a height per keypoint (NaN: none; ``(O, 2)``:
            one mode each; None: no object has one), see :mod:`planner_vlm.learned.rest_heights`.
        depth_offsets: ``(O,)`` m, each object's origin behind the surface its depth pixel sees (NaN: not checked;
            None: no object is), see :mod:`planner_vlm.learned.depth_heights`.
        absent_uncertainty: ``(O,)`` unitless, each object's absent threshold at an episode's first frame (NaN: none;
            None: no object has one), see :mod:`planner_vlm.learned.absence`.
        support_z: world z (m) of the surface the task's objects rest on, where the task has one that the camera sees
            around them (pick_place_bins' bin floors, ``TaskDefinition.support_z``); with the camera's depth, the first
            plan's absent check also reads it (:func:`planner_vlm.learned.absence.absent_by_depth`). None: not checked.

    Raises:
        ConfigError: a calibration for another camera, a non-positive temperature, depth offsets or absent
            thresholds of another length, or a ``support_z`` that is not a finite number.
    """

    #: Not an oracle: it reads images and proprio only.
    is_oracle = False

    def __init__(self, cfg: StateModelConfig, calibration: CameraCalibration, net: StateNet | None = None,
                 temperature: float = 1.0, entropy_p50: np.ndarray | None = None,
                 entropy_p99: np.ndarray | None = None, metrics: dict[str, Any] | None = None,
                 rest_heights: np.ndarray | None = None, depth_offsets: np.ndarray | None = None,
                 absent_uncertainty: np.ndarray | None = None, support_z: float | None = None):
        if calibration.camera != cfg.camera:
            raise ConfigError(f"the state model reads camera {cfg.camera!r}, the calibration is for "
                              f"{calibration.camera!r}")
        if not temperature > 0:
            raise ConfigError(f"state model temperature must be > 0, got {temperature}")
        self.cfg = cfg
        self.net = net if net is not None else StateNet(cfg)
        self.net.eval()
        self.temperature = float(temperature)
        k = cfg.num_keypoints
        self.entropy_p50 = np.zeros(k) if entropy_p50 is None else np.asarray(entropy_p50, np.float64)
        self.entropy_p99 = np.full(k, np.inf) if entropy_p99 is None else np.asarray(entropy_p99, np.float64)
        self.metrics = dict(metrics or {})
        self.rest_heights = np.full((len(cfg.objects), 1, 2), np.nan)
        if rest_heights is not None:
            self.set_rest_heights(rest_heights)
        self.depth_offsets = np.full(len(cfg.objects), np.nan)
        if depth_offsets is not None:
            self.set_depth_offsets(depth_offsets)
        self.absent_uncertainty = np.full(len(cfg.objects), np.nan)
        if absent_uncertainty is not None:
            self.set_absent_uncertainty(absent_uncertainty)
        self.support_z = None if support_z is None else finite_number(support_z, "state model support_z_m")
        self.command = ""
        self.set_calibration(calibration)

    # ------------------------------------------------------------------ calibration
    def set_calibration(self, calibration: CameraCalibration) -> None:
        """Use ``calibration`` (rescaled to the model's image size) to lift pixels to 3-D."""
        self.calibration = calibration.resized(self.cfg.image_size)

    def set_rest_heights(self, rest_heights: np.ndarray) -> None:
        """Use ``rest_heights`` m for free objects: ``(O, M, 2)`` resting modes or ``(O, 2)`` one each (NaN: none).

        Raises:
            ConfigError: neither shape for the model's vocabulary.
        """
        try:
            self.rest_heights = as_rest_modes(rest_heights, len(self.cfg.objects))
        except ValueError as e:
            raise ConfigError(str(e)) from e

    def set_depth_offsets(self, offsets: np.ndarray) -> None:
        """Use ``offsets (O,)`` m (NaN: that object is not checked) for the depth check.

        Raises:
            ConfigError: not one value per object of the vocabulary.
        """
        arr = np.asarray([np.nan if v is None else v for v in np.asarray(offsets, object).reshape(-1)], np.float64)
        if arr.shape != (len(self.cfg.objects),):
            raise ConfigError(f"depth offsets must be one per object {list(self.cfg.objects)}, got {arr.shape}")
        self.depth_offsets = arr

    def set_absent_uncertainty(self, thresholds: np.ndarray) -> None:
        """Use ``thresholds (O,)`` (unitless; NaN or None: that object has none) for the first plan's absent check.

        Raises:
            ConfigError: not a list of one number (or null) per object of the vocabulary, in its order, or a value
                that is not > 0 and finite; the message names ``absent_uncertainty``.
        """
        names = list(self.cfg.objects)
        values = thresholds.tolist() if isinstance(thresholds, np.ndarray) else thresholds
        if not isinstance(values, (list, tuple)) or len(values) != len(names):
            raise ConfigError(f"absent_uncertainty must be a list of one number (or null) per object {names}, in that "
                              f"order; got {values!r}")
        bad = [v for v in values if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)))]
        if bad:
            raise ConfigError(f"absent_uncertainty entries must be numbers or null, got {bad!r} in {values!r}")
        arr = np.array([np.nan if v is None else float(v) for v in values], np.float64)
        if (arr[~np.isnan(arr)] <= 0).any() or np.isinf(arr).any():
            raise ConfigError(f"absent_uncertainty entries must be > 0 and finite (or null), got {values!r}")
        self.absent_uncertainty = arr

    @property
    def reads_depth(self) -> bool:
        """Whether the checkpoint has a depth offset for some object (an RGB-D camera's depth is then used)."""
        return bool(np.isfinite(self.depth_offsets).any())

    def geometry(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(k_inv, rot, pos)`` float32 tensors of the calibration, for :class:`StateNet`."""
        return camera_geometry(self.calibration)

    # ------------------------------------------------------------------ inference
    @torch.no_grad()
    def predict_arrays(self, images: np.ndarray, proprio: np.ndarray) -> dict[str, np.ndarray]:
        """Raw predictions for a batch.

        Args:
            images: ``uint8 (B, H, W, 3)`` RGB of the model's camera (resized to ``cfg.image_size`` if needed).
            proprio: ``(B, 8)`` as :data:`tandem.core.types.PROPRIO_LAYOUT`.

        Returns:
            ``{"px": (B, K, 2) px, "z": (B, K) m, "keypoints_3d": (B, K, 3) m, "yaw": (B, O) rad or None,
            "logits": (B, P) (before the temperature), "probabilities": (B, P) calibrated, "entropy": (B, K) nats,
            "confidence": (B, K)}``. With the yaw head, each object's second keypoint is placed from its yaw
            (:meth:`place_second_keypoints`). Objects that no predicate supports (all ``p < 0.5``) and that have a
            resting mode are lifted at the one nearest their regressed height (:func:`~planner_vlm.learned.rest_heights.apply_rest_heights`); ``"z"``
            then holds the heights used.

        Raises:
            ValueError: images that are not ``uint8 (B, H, W, 3)``, or a batch-size mismatch.
        """
        imgs = np.asarray(images)
        if imgs.dtype != np.uint8 or imgs.ndim != 4 or imgs.shape[-1] != 3:
            raise ValueError(f"state model images must be uint8 (B, H, W, 3), got {imgs.dtype} {imgs.shape}")
        if len(np.atleast_2d(proprio)) != len(imgs):
            raise ValueError(f"{len(imgs)} images but {len(np.atleast_2d(proprio))} proprio rows")
        imgs = np.stack([resize_image(i, self.cfg.image_size) for i in imgs])
        x = torch.from_numpy(imgs).permute(0, 3, 1, 2).float().div_(255.0)
        pf = torch.from_numpy(proprio_features(proprio))
        out = self.net(x, pf, self.geometry())
        p3d = out["keypoints_3d"].double().numpy()
        px = out["px"].double().numpy()
        z = out["z"].double().numpy()
        logits = out["predicate_logits"].double().numpy()
        probabilities = 1.0 / (1.0 + np.exp(-logits / self.temperature))
        if np.isfinite(self.rest_heights).any():
            free = free_mask(self.cfg.objects, self.cfg.predicates, probabilities)
            p3d, z = apply_rest_heights(p3d, px, z, free, self.rest_heights, self.calibration)
        yaw = None
        if "yaw_vec" in out:
            yaw = self.yaws(out["yaw_vec"].double().numpy())
            p3d, px = self.place_second_keypoints(p3d, px, yaw)
        entropy = out["entropy"].double().numpy()
        return {"px": px, "z": z, "yaw": yaw,
                "keypoints_3d": p3d, "logits": logits,
                "probabilities": probabilities, "entropy": entropy,
                "confidence": keypoint_confidence(entropy, self.entropy_p50, self.entropy_p99)}

    def yaws(self, yaw_vec: np.ndarray) -> np.ndarray:
        """Object yaws ``(B, O)`` rad (world frame, about +z) from the yaw head's ``(B, O, 2)`` ``(cos m yaw, sin m
        yaw)``: ``atan2 / m``, one of the ``m`` equivalent yaws of an object with symmetry order ``m``."""
        m = np.array([self.cfg.symmetry(o) for o in self.cfg.objects], np.float64)
        return np.arctan2(yaw_vec[..., 1], yaw_vec[..., 0]) / m

    def place_second_keypoints(self, keypoints_3d: np.ndarray, px: np.ndarray, yaw: np.ndarray
                               ) -> tuple[np.ndarray, np.ndarray]:
        """Keypoints ``(B, K, 3)`` m and ``(B, K, 2)`` px with each object's second keypoint replaced by the point
        :data:`~tandem.core.dataset_schema.KEYPOINT_OFFSET_M` from its origin along ``yaw (B, O)`` rad (horizontal,
        as for an upright object), projected through the calibration."""
        p3d, out_px = keypoints_3d.copy(), px.copy()
        k0 = p3d[:, 0::2]
        k1 = k0 + KEYPOINT_OFFSET_M * np.stack([np.cos(yaw), np.sin(yaw), np.zeros_like(yaw)], axis=-1)
        p3d[:, 1::2] = k1
        proj = self.calibration.project(k1.reshape(-1, 3)).reshape(k1.shape[0], k1.shape[1], 2)
        out_px[:, 1::2] = np.where(np.isfinite(proj), proj, px[:, 1::2])
        return p3d, out_px

    def predict(self, observation: Observation, use_depth: bool = True) -> SceneState:
        """The scene state of one observation (its ``cfg.camera`` image and proprio; never ``privileged``).

        With ``use_depth``, depth offsets in the checkpoint and the camera's depth image in ``observation.depth``,
        the objects' 3-D reads are checked against the depth (:meth:`depth_checked`).

        Raises:
            ConfigError: the observation has no image of the model's camera (names the cameras it has).
        """
        image = observation.images.get(self.cfg.camera)
        if image is None:
            raise ConfigError(f"the learned state model reads the {self.cfg.camera!r} camera, but the observation has "
                              f"{sorted(observation.images) or 'no images'} (render it: env.render=true, env.cameras)")
        state = self.scene_state(self.predict_arrays(image[None], np.asarray(observation.proprio)[None]), 0)
        if use_depth and self.reads_depth and observation.depth is not None:  # (a lazy depth renders only here)
            depth = observation.depth.get(self.cfg.camera)
            if depth is not None:
                state = self.depth_checked(state, depth)
        return state

    def depth_checked(self, state: SceneState, depth: np.ndarray) -> SceneState:
        """``state`` with the objects' 3-D reads checked against ``depth`` (``float32 (H, W)`` m, the camera's depth
        image): :func:`~planner_vlm.learned.depth_heights.depth_checked_keypoints`; ``depth_moved`` says which
        moved. Objects the task never grasps count as not held.

        Raises:
            ValueError: a depth image that is not 2-D.
        """
        grasped = np.array([state.probability(f"grasped({o})") if f"grasped({o})" in state.predicates else 0.0
                            for o in state.objects])
        kp, moved = depth_checked_keypoints(state.keypoints_3d, state.keypoints_px, grasped, state.object_uncertainty,
                                            np.asarray(depth, np.float64), self.calibration, self.depth_offsets,
                                            self.rest_heights)
        return replace(state, keypoints_3d=kp, depth_moved=moved)

    def scene_state(self, out: dict[str, np.ndarray], row: int) -> SceneState:
        """Row ``row`` of a :meth:`predict_arrays` batch ``out`` as a :class:`SceneState` (what :meth:`predict`
        returns for that frame): an object's confidence is the lower of its two keypoints', the scene's the lowest
        of all (1.0 for a model without objects).

        Raises:
            IndexError: ``row`` outside the batch.
        """
        o = len(self.cfg.objects)
        conf = out["confidence"][row].reshape(o, 2)
        uncertainty = keypoint_uncertainty(out["entropy"][row], self.entropy_p50, self.entropy_p99).reshape(o, 2)[:, 0]
        return SceneState(objects=self.cfg.objects, predicates=self.cfg.predicates,
                          probabilities=out["probabilities"][row], keypoints_px=out["px"][row].reshape(o, 2, 2),
                          keypoints_3d=out["keypoints_3d"][row].reshape(o, 2, 3), object_confidence=conf.min(axis=1),
                          scene_confidence=float(conf.min()) if conf.size else 1.0,
                          heatmap_entropy=out["entropy"][row].reshape(o, 2),
                          object_uncertainty=None if np.isnan(uncertainty).any() else uncertainty)

    # ------------------------------------------------------------------ tandem.core.protocols.ObjectKeypointReader
    @property
    def camera(self) -> str:
        """The camera whose image the model reads (``cfg.camera``)."""
        return self.cfg.camera

    @property
    def objects(self) -> tuple[str, ...]:
        """The object vocabulary, in the order of :meth:`object_keypoints_3d`'s rows."""
        return tuple(self.cfg.objects)

    @property
    def symmetries(self) -> dict[str, int]:
        """Each object's symmetry order: its second keypoint is read modulo ``2 pi / m`` (``cfg.symmetry``)."""
        return {o: self.cfg.symmetry(o) for o in self.cfg.objects}

    def object_keypoints_3d(self, observation: Observation) -> np.ndarray:
        """``float64 (O, 2, 3)`` m, world frame: each object's origin and x-axis keypoint, read off the observation's
        :attr:`camera` image and proprio (never ``privileged``), for an executor that conditions on them.

        Raises:
            ConfigError: the observation has no image of the model's camera.
        """
        return self.predict(observation).keypoints_3d

    # ------------------------------------------------------------------ checkpoints
    def save(self, path: str | Path, command: str = "", extra: dict[str, Any] | None = None) -> Path:
        """Write the checkpoint directory ``path`` (see the module docstring); returns it."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        sd = {k: v.detach().cpu().contiguous().clone() for k, v in self.net.state_dict().items()}
        save_file(sd, str(path / WEIGHTS), metadata={"format": FORMAT})
        cfg = {"format": FORMAT, "model": self.cfg.to_dict(), "calibration": self.calibration.to_json(),
               "temperature": self.temperature,
               "entropy_reference": {"p50": self.entropy_p50.tolist(),
                                     "p99": [float(v) if np.isfinite(v) else None for v in self.entropy_p99]},
               "rest_heights": rest_heights_to_json(self.rest_heights),
               "depth_offsets_m": [None if not np.isfinite(v) else round(float(v), 5) for v in self.depth_offsets],
               "absent_uncertainty": [None if not np.isfinite(v) else round(float(v), 4)
                                      for v in self.absent_uncertainty],
               "support_z_m": self.support_z,
               "metrics": self.metrics, "extra": extra or {}}
        (path / CONFIG).write_text(json.dumps(cfg, indent=2))
        (path / COMMAND).write_text((command or self.command or "(unknown)").strip() + "\n")
        return path

    @classmethod
    def from_checkpoint(cls, path: str | Path, calibration: CameraCalibration | None = None) -> StateModel:
        """Load a checkpoint directory; ``calibration`` overrides the stored one (a real robot's camera).

        Raises:
            CheckpointError: a missing file, another format, an invalid config, or weights that do not match.
        """
        path = Path(path)
        raw = read_checkpoint_config(path, CONFIG, WEIGHTS, FORMAT, "state model")
        try:
            cfg = StateModelConfig.from_dict(raw["model"])
            stored = CameraCalibration.from_json(raw["calibration"])
            ref = raw.get("entropy_reference") or {}
            p99 = None if ref.get("p99") is None else np.array([np.inf if v is None else v for v in ref["p99"]])
            rest = raw.get("rest_heights")
            rest = None if rest is None else rest_heights_from_json(rest)
            net = StateNet(cfg)
            load_matching_weights(net, path / WEIGHTS, "state model")
            model = cls(cfg, calibration if calibration is not None else stored, net=net,
                        temperature=float(raw.get("temperature", 1.0)), entropy_p50=ref.get("p50"),
                        entropy_p99=p99, metrics=raw.get("metrics"), rest_heights=rest,
                        depth_offsets=raw.get("depth_offsets_m"),
                        absent_uncertainty=raw.get("absent_uncertainty"), support_z=raw.get("support_z_m"))
        except (ConfigError, KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"{path}: invalid state model checkpoint: {e}") from e
        model.command = (path / COMMAND).read_text().strip() if (path / COMMAND).is_file() else ""
        return model
