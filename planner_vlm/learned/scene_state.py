"""What the learned state model says about one observation: predicates with probabilities, keypoints, confidence.

numpy only: the planner, the verifier and the trace model read a :class:`SceneState`, never the network.

Conventions: keypoints are two per object in the order of :attr:`SceneState.objects` (the object's origin, then the
point 3 cm along its local x axis: :func:`tandem.core.dataset_schema.object_keypoints`); pixels ``(x, y)`` in the
model camera's image at the model's image size (x right, y down, origin top-left); 3-D points in m, world frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tandem.core.errors import UnknownNameError


@dataclass
class SceneState:
    """The state model's reading of one observation.

    Attributes:
        objects: object names, in the model's vocabulary order (O).
        predicates: ground predicate names, in the vocabulary order (P).
        probabilities: ``float64 (P,)`` calibrated probability that each predicate holds (temperature-scaled).
        keypoints_px: ``float64 (O, 2, 2)`` px, ``(x, y)``.
        keypoints_3d: ``float64 (O, 2, 3)`` m, world frame.
        object_confidence: ``float64 (O,)`` in [0, 1]: how sharply the model located each object (heatmap peak
            sharpness compared with the training scenes; 1 = as sharp as in training, 0 = not found).
        scene_confidence: in [0, 1]: how much the whole image looks like the training scenes (the least sharp
            keypoint heatmap against the training distribution); low under a shift (new table, light, colours).
        heatmap_entropy: ``float64 (O, 2)`` nats, the raw signal behind the confidences.
        object_uncertainty: ``float64 (O,)`` or None (a reader without entropy references): how diffuse each
            object's origin heatmap is against the training frames, ``(H - H50) / (H99 - H50)`` of that keypoint
            (<= 0: as sharp as a typical training frame, 1: the training 99th percentile). Unlike
            :attr:`object_confidence`, which stays 1 below the 99th percentile (it flags scenes unlike the training
            ones), it ranks objects within a familiar scene: a diffuse read (an object hidden behind another) is
            far more often centimetres off than a sharp one. With ``best_localized_first`` the learned planner plans the
            best-localized object first.
        depth_moved: ``bool (O,)`` or None (no depth image read): the objects whose 3-D read the camera's depth
            contradicted and moved along their rays (:mod:`planner_vlm.learned.depth_heights`).
    """

    objects: tuple[str, ...]
    predicates: tuple[str, ...]
    probabilities: np.ndarray
    keypoints_px: np.ndarray
    keypoints_3d: np.ndarray
    object_confidence: np.ndarray
    scene_confidence: float
    heatmap_entropy: np.ndarray
    object_uncertainty: np.ndarray | None = field(default=None)
    depth_moved: np.ndarray | None = field(default=None)

    def probability(self, predicate: str) -> float:
        """Calibrated ``p(predicate holds)``.

        Raises:
            UnknownNameError: a predicate outside the model's vocabulary (lists the known ones).
        """
        if predicate not in self.predicates:
            raise UnknownNameError("predicate", predicate, list(self.predicates))
        return float(self.probabilities[self.predicates.index(predicate)])

    def truth(self, threshold: float = 0.5) -> dict[str, bool]:
        """Predicate -> ``probability >= threshold`` (the state the symbolic planner searches over)."""
        return {p: bool(v >= threshold) for p, v in zip(self.predicates, self.probabilities)}

    def object_index(self, obj: str) -> int:
        """Index of ``obj`` in :attr:`objects`.

        Raises:
            UnknownNameError: an object outside the vocabulary.
        """
        if obj not in self.objects:
            raise UnknownNameError("object", obj, list(self.objects))
        return self.objects.index(obj)

    def position(self, obj: str) -> np.ndarray:
        """``(3,)`` m, world frame: the object's origin keypoint."""
        return self.keypoints_3d[self.object_index(obj), 0].copy()

    def to_json(self) -> dict[str, Any]:
        """JSON-safe summary: probabilities, 3-D origins, confidences and uncertainties (rounded), for logs and
        memory."""
        def obj(i: int) -> dict[str, Any]:
            d = {"pos": np.round(self.keypoints_3d[i, 0], 4).tolist(),
                 "px": np.round(self.keypoints_px[i, 0], 2).tolist(),
                 "confidence": round(float(self.object_confidence[i]), 3)}
            if self.object_uncertainty is not None:
                d["uncertainty"] = round(float(self.object_uncertainty[i]), 3)
            if self.depth_moved is not None and self.depth_moved[i]:
                d["depth_moved"] = True
            return d

        return {
            "predicates": {p: round(float(v), 4) for p, v in zip(self.predicates, self.probabilities)},
            "objects": {o: obj(i) for i, o in enumerate(self.objects)},
            "scene_confidence": round(float(self.scene_confidence), 3),
        }
