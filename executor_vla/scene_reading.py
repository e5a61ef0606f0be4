"""Run-time object keypoints for a track executor with ``scene_input="objects_3d"``, from a non-privileged reader.

In training the keypoints are the dataset's labels (the simulator's truth, recorded by ``tandem-collect``). At run
time they must come from what a robot has: :class:`SceneKeypoints` wraps a
:class:`tandem.core.protocols.ObjectKeypointReader` (the learned state model reading the agentview image and the
proprio, injected by :mod:`tandem.runtime.registry`, as components never import each other) and checks, once, that
it suits the checkpoint, and at every read, that the observation holds its camera:

* the reader is not an oracle (a non-oracle executor never gets simulator truth, not even through a helper);
* it knows every object of the checkpoint (``TrackExecutorConfig.scene_objects``); its rows are reordered to the
  checkpoint's order by name;
* its keypoints are no more ambiguous than the checkpoint's features allow: an object the reader reads modulo
  ``2 pi / m_r`` of a turn needs a checkpoint order ``m`` that ``m_r`` divides (the features see the yaw modulo
  ``2 pi / m``, :mod:`executor_vla.object_features`);
* the observation carries the reader's camera image (else a clear error names the cameras it has and how to render
  the missing one), and the keypoints it returns have the declared shape and are finite.
"""

from __future__ import annotations

import numpy as np

from tandem.core.dataset_schema import KEYPOINTS_PER_OBJECT
from tandem.core.errors import ConfigError, NonFiniteActionError
from tandem.core.protocols import ObjectKeypointReader, require_protocol
from tandem.core.types import Observation


class SceneKeypoints:
    """The object keypoints one executor conditions on, read at run time.

    Args:
        reader: an :class:`~tandem.core.protocols.ObjectKeypointReader` (e.g. the learned state model).
        objects: the checkpoint's objects, in its feature order (``TrackExecutorConfig.scene_objects``).
        orders: their symmetry orders in the checkpoint's features (``TrackExecutorConfig.scene_orders()``).

    Raises:
        ConfigError: a reader that lacks a protocol member, is an oracle, does not know one of ``objects`` (names
            both vocabularies), or reads an object more ambiguously than its order allows (names both orders).
    """

    def __init__(self, reader: ObjectKeypointReader, objects: tuple[str, ...], orders: tuple[int, ...]):
        require_protocol(reader, ObjectKeypointReader, "scene reader of a track executor")
        if reader.is_oracle:
            raise ConfigError(f"{type(reader).__name__} is an oracle (it reads the simulator's truth); a non-oracle "
                              "executor must read the objects' keypoints from its camera, e.g. with the learned state "
                              "model (checkpoints/state/<task>)")
        known = tuple(reader.objects)
        missing = [o for o in objects if o not in known]
        if missing:
            raise ConfigError(f"the executor was trained on the keypoints of {list(objects)}, but its scene reader "
                              f"{type(reader).__name__} knows {list(known)} (missing {missing}): use a state model "
                              "trained on the same task's objects")
        ambiguous = {o: (int(reader.symmetries.get(o, 1)), int(m)) for o, m in zip(objects, orders)
                     if int(m) % int(reader.symmetries.get(o, 1))}
        if ambiguous:
            raise ConfigError("the scene reader reads some objects' yaw more ambiguously than the executor's features "
                              "allow (object: (reader order, executor order); the reader's must divide the "
                              f"executor's): {ambiguous}; train the executor with executor.scene_symmetries matching "
                              "the state model's")
        self.reader, self.objects = reader, tuple(objects)
        self._known = known
        self._order = np.array([known.index(o) for o in objects], np.int64)

    @property
    def camera(self) -> str:
        """The camera the reader reads."""
        return self.reader.camera

    def read(self, observation: Observation) -> np.ndarray:
        """``float32 (O, 2, 3)`` m: the checkpoint's objects' keypoints in its order, read off ``observation``.

        Raises:
            ConfigError: the observation has no image of the reader's camera (names the cameras it has), or the
                reader returned keypoints of another shape.
            NonFiniteActionError: NaN/inf keypoints (the executor would act on them).
        """
        if self.camera not in observation.images:
            raise ConfigError(f"the track executor reads the objects' keypoints off the {self.camera!r} camera, but "
                              f"the observation has {sorted(observation.images) or 'no images'} (render it: "
                              f"env.render=true, env.cameras=[{self.camera}])")
        kp = np.asarray(self.reader.object_keypoints_3d(observation), np.float32)
        expected = (len(self._known), KEYPOINTS_PER_OBJECT, 3)
        if kp.shape != expected:
            raise ConfigError(f"{type(self.reader).__name__} returned keypoints {kp.shape}, expected {expected} "
                              f"for its objects {list(self._known)}")
        if not np.all(np.isfinite(kp)):
            raise NonFiniteActionError(f"{type(self.reader).__name__} returned NaN/inf object keypoints")
        return kp[self._order]
