"""The dataset schema shared by the dataset writer (issue 3) and the executor's data loader.

A tandem dataset is a LeRobotDataset v3 (LeRobot 0.6.1) at :data:`FPS` frames per second. Each frame
carries the robot observation, the action, and the *active subgoal's* conditioning: its index in the
episode, its text (as a LeRobot task index), its goal image and its keypoint trace.

Conventions (see ``tandem/core/types.py``):

* images: RGB, upright, origin at the top-left; LeRobot shape convention ``(H, W, 3)`` with names
  ``["height", "width", "channels"]``; stored with dtype ``"image"`` (PNG inside parquet,
  ``use_videos=False``). Loaded batches come out as ``float32 (B, [T,] 3, H, W)`` in ``[0, 1]``.
* ``observation.state``: ``float32 (8,)`` = eef position (m, world frame), eef quaternion **wxyz**,
  gripper opening (m).
* ``action``: ``float32 (7,)`` robosuite OSC_POSE delta action in ``[-1, 1]``
  ``(dx, dy, dz, dax, day, daz, gripper)``; gripper -1 open, +1 close.
* ``subgoal.task_index``: ``int64 (1,)`` index of the subgoal TEXT in LeRobot's own tasks table
  (``meta/tasks.parquet``). The writer registers every subgoal text as a LeRobot task
  (``dataset.meta.save_episode_tasks([...])`` then ``dataset.meta.get_task_index(text)``); the frame's
  ``"task"`` string is the episode's full instruction.
* ``subgoal.trace``: ``float32 (K, 2)`` keypoint trace in agentview pixels ``(x right, y down)``,
  origin top-left, resampled to ``K`` points; ``subgoal.trace_mask`` ``float32 (K,)`` 1 = valid point.
* ``subgoal.trace_3d``: ``float32 (K3, 5)`` the subgoal's 3-D trace (:class:`tandem.core.types.Trace3D`), one row per
  point ``(x, y, z, yaw, gripper)``: grip-site position in m (world frame), finger-axis yaw in rad (continuous
  along the trace), gripper command (-1 open, +1 closed); padded to ``K3`` rows by repeating the last point
  (:func:`pad_trace_3d`); ``subgoal.trace_3d_mask`` ``float32 (K3,)`` 1 = a real point.
* ``labels.*`` (optional; a task's label vocabulary of objects and predicates, ``TaskDefinition.label_vocabulary``):
  the simulator's ground truth per frame, the training targets of the learned state model (issue 12):
  ``labels.predicates`` ``float32 (P,)`` 0/1 per named predicate (``grasped(red)``, ``on(red,green)``...);
  ``labels.keypoints_3d`` ``float32 (O*2*3,)``: two keypoints per object in m (world frame), its origin and the point
  :data:`KEYPOINT_OFFSET_M` along its local x axis (so the pair says the object's yaw), named ``<obj>.k<j>.<x|y|z>``;
  ``labels.keypoints_px`` ``float32 (O*2*2,)``: the same points in the pixels of the dataset's *label camera*
  ``(x right, y down)``, origin top-left, at the dataset's image size, named ``<obj>.k<j>.<x|y>``; the feature's
  ``info.camera`` names that camera (:func:`label_camera_of`; ``agentview`` unless the collection said otherwise,
  and for datasets written before the field existed).
* ``subgoal.goal_image`` is optional: a dataset collected without rendering (``goals.goal_image=false``) has none.
* ``subgoal.progress``: ``float32 (1,)`` in ``[0, 1]``: fraction of the active subgoal's frames elapsed.
* ``subgoal.success``: ``float32 (1,)``: 1 once the subgoal's predicate holds.
* ``task.success``: ``float32 (1,)``: 1 once the whole task's success holds.
* ``language_persistent`` / ``language_events``: LeRobot 0.6's language columns (``lerobot.datasets.language``,
  dtype ``"language"``), so that LeRobot's own tools read the subgoals (``docs/lerobot_conventions.md``). Every frame
  of an episode carries the same :func:`language_persistent_rows`: one ``style="subtask"`` row per run of frames
  with the same subgoal (its text, from the run's first frame's timestamp) and one ``style="plan"`` row at each
  such boundary (the numbered list of that subtask and the ones after it, LeRobot's own plan rule); LeRobot's
  ``active_at(t, persistent=..., style="subtask")`` gives a frame's subgoal text. ``language_events`` is empty.
  The writer derives both from ``subgoal.task_index``, which stays the index tandem's readers use; datasets
  written before these columns existed have neither and still load.

This module is plain Python (no torch) so that the writer can import it cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tandem.core.errors import SubgoalSchemaError
from tandem.core.geometry import quat_to_mat
from tandem.core.types import OSC_ACTION_LAYOUT, PROPRIO_LAYOUT, Trace3D

FPS: int = 20
IMAGE_SIZE: tuple[int, int] = (128, 128)
TRACE_LEN: int = 16
#: Rows of ``subgoal.trace_3d`` (the longest expert plan, nut_assembly's pick with its wrist turns, has 13 points).
TRACE_3D_LEN: int = 16
#: Columns of a ``subgoal.trace_3d`` row.
TRACE_3D_COLUMNS: tuple[str, ...] = ("x", "y", "z", "yaw", "gripper")
STATE_DIM: int = len(PROPRIO_LAYOUT)  # 8
ACTION_DIM: int = len(OSC_ACTION_LAYOUT)  # 7

#: Cameras recorded, in order. The key of camera ``c`` is ``f"{IMAGE_PREFIX}{c}"``.
CAMERAS: tuple[str, ...] = ("agentview", "wrist")
#: Camera that the goal image and keypoint trace live in.
GOAL_CAMERA: str = "agentview"

IMAGE_PREFIX = "observation.images."
STATE_KEY = "observation.state"
ACTION_KEY = "action"
SUBGOAL_INDEX_KEY = "subgoal.index"
SUBGOAL_TASK_INDEX_KEY = "subgoal.task_index"
GOAL_IMAGE_KEY = "subgoal.goal_image"
TRACE_KEY = "subgoal.trace"
TRACE_MASK_KEY = "subgoal.trace_mask"
LABEL_PREDICATES_KEY = "labels.predicates"
LABEL_KEYPOINTS_3D_KEY = "labels.keypoints_3d"
LABEL_KEYPOINTS_PX_KEY = "labels.keypoints_px"
#: The camera whose pixels ``labels.keypoints_px`` are in, unless a dataset names another (``info.camera``).
DEFAULT_LABEL_CAMERA = "agentview"
#: Keypoints per object in the labels, and the distance (m) of the second one along the object's local x axis.
KEYPOINTS_PER_OBJECT = 2
KEYPOINT_OFFSET_M = 0.03
TRACE_3D_KEY = "subgoal.trace_3d"
TRACE_3D_MASK_KEY = "subgoal.trace_3d_mask"
PROGRESS_KEY = "subgoal.progress"
SUBGOAL_SUCCESS_KEY = "subgoal.success"
TASK_SUCCESS_KEY = "task.success"
#: LeRobot adds this string column to every frame; it holds the episode's full instruction.
TASK_KEY = "task"
#: LeRobot 0.6's language columns (``lerobot.datasets.language.LANGUAGE_PERSISTENT`` / ``LANGUAGE_EVENTS``).
LANGUAGE_PERSISTENT_KEY = "language_persistent"
LANGUAGE_EVENTS_KEY = "language_events"
LANGUAGE_KEYS: tuple[str, ...] = (LANGUAGE_PERSISTENT_KEY, LANGUAGE_EVENTS_KEY)
#: Their ``info.json`` feature entry (``lerobot.datasets.language.language_feature_info``).
LANGUAGE_DTYPE = "language"
#: The ``role`` of the rows tandem writes, as LeRobot's annotation pipeline writes its subtask and plan rows.
LANGUAGE_ROLE = "assistant"
#: LeRobot's padding flag of the action sequence when it is loaded with ``delta_timestamps``.
ACTION_IS_PAD_KEY = "action_is_pad"


def image_key(camera: str) -> str:
    """Dataset key of a camera's image, e.g. ``"observation.images.agentview"``."""
    return f"{IMAGE_PREFIX}{camera}"


def _image_feature(image_size: tuple[int, int]) -> dict[str, Any]:
    h, w = int(image_size[0]), int(image_size[1])
    return {"dtype": "image", "shape": (h, w, 3), "names": ["height", "width", "channels"]}


def dataset_features(image_size: tuple[int, int] = IMAGE_SIZE, trace_len: int = TRACE_LEN,
                     cameras: tuple[str, ...] = CAMERAS, goal_image: bool = True,
                     trace_3d_len: int = TRACE_3D_LEN,
                     labels: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
                     label_camera: str = DEFAULT_LABEL_CAMERA, language: bool = True) -> dict[str, dict[str, Any]]:
    """The ``features`` dict to pass to ``LeRobotDataset.create(..., use_videos=False)``.

    Args:
        image_size: ``(H, W)`` in px of every camera and of the goal image.
        trace_len: K, number of points each keypoint trace is resampled to.
        cameras: camera names; each gets an ``observation.images.<camera>`` image feature (may be empty: a
            low-dimensional dataset for the track executor, collected without rendering).
        goal_image: include the ``subgoal.goal_image`` feature.
        trace_3d_len: K3, rows of ``subgoal.trace_3d``.
        labels: ``(objects, predicates)`` to add the ``labels.*`` features over, or None.
        label_camera: the camera whose pixels ``labels.keypoints_px`` holds (recorded as its ``info.camera``).
        language: include LeRobot's language columns (:data:`LANGUAGE_KEYS`), which the writer fills itself.

    Returns:
        feature name -> ``{"dtype", "shape", "names"}`` in LeRobot 0.6.1's format. Frame values must
        match exactly: images ``uint8 (H, W, 3)``; ``float32`` arrays of the given shapes; the two
        ``int64 (1,)`` index features.

    Raises:
        ValueError: if ``image_size``, ``trace_len`` or ``trace_3d_len`` is not positive.
    """
    if len(image_size) != 2 or min(image_size) <= 0:
        raise ValueError(f"image_size must be (H, W) > 0, got {image_size}")
    if trace_len <= 0 or trace_3d_len <= 0:
        raise ValueError(f"trace_len and trace_3d_len must be > 0, got {trace_len} and {trace_3d_len}")
    feats: dict[str, dict[str, Any]] = {}
    for cam in cameras:
        feats[image_key(cam)] = _image_feature(image_size)
    feats[STATE_KEY] = {"dtype": "float32", "shape": (STATE_DIM,), "names": list(PROPRIO_LAYOUT)}
    feats[ACTION_KEY] = {"dtype": "float32", "shape": (ACTION_DIM,), "names": list(OSC_ACTION_LAYOUT)}
    feats[SUBGOAL_INDEX_KEY] = {"dtype": "int64", "shape": (1,), "names": None}
    feats[SUBGOAL_TASK_INDEX_KEY] = {"dtype": "int64", "shape": (1,), "names": None}
    if goal_image:
        feats[GOAL_IMAGE_KEY] = _image_feature(image_size)
    feats[TRACE_KEY] = {"dtype": "float32", "shape": (trace_len, 2), "names": None}
    feats[TRACE_MASK_KEY] = {"dtype": "float32", "shape": (trace_len,), "names": None}
    feats[TRACE_3D_KEY] = {"dtype": "float32", "shape": (trace_3d_len, len(TRACE_3D_COLUMNS)), "names": None}
    feats[TRACE_3D_MASK_KEY] = {"dtype": "float32", "shape": (trace_3d_len,), "names": None}
    if labels is not None:
        objects, predicates = labels
        feats[LABEL_PREDICATES_KEY] = {"dtype": "float32", "shape": (len(predicates),), "names": list(predicates)}
        feats[LABEL_KEYPOINTS_3D_KEY] = {"dtype": "float32", "shape": (len(objects) * KEYPOINTS_PER_OBJECT * 3,),
                                         "names": keypoint_names(objects, "xyz")}
        feats[LABEL_KEYPOINTS_PX_KEY] = {"dtype": "float32", "shape": (len(objects) * KEYPOINTS_PER_OBJECT * 2,),
                                         "names": keypoint_names(objects, "xy"), "info": {"camera": str(label_camera)}}
    feats[PROGRESS_KEY] = {"dtype": "float32", "shape": (1,), "names": None}
    feats[SUBGOAL_SUCCESS_KEY] = {"dtype": "float32", "shape": (1,), "names": None}
    feats[TASK_SUCCESS_KEY] = {"dtype": "float32", "shape": (1,), "names": None}
    if language:
        for key in LANGUAGE_KEYS:
            feats[key] = {"dtype": LANGUAGE_DTYPE, "shape": (1,), "names": None}
    return feats


def frame_features(features: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The features a caller gives per frame: ``features`` without the language columns, which the writer derives."""
    return {k: v for k, v in features.items() if v.get("dtype") != LANGUAGE_DTYPE}


def language_persistent_rows(texts: list[str], subgoal_index: list[int], fps: float) -> list[dict[str, Any]]:
    """An episode's ``language_persistent`` rows in LeRobot 0.6's row layout (``PERSISTENT_ROW_FIELDS``).

    Frames ``i`` and ``i + 1`` belong to the same subtask while their subgoal index and text are both equal. Each
    subtask starts at its first frame's timestamp ``i / fps`` (the value LeRobot stores in the frame's
    ``timestamp``), gets a ``style="subtask"`` row with its text and a ``style="plan"`` row listing it and the
    subtasks after it, one ``"<k>. <text>"`` line each, as LeRobot's ``lerobot-annotate`` writes plans. Rows are
    sorted by timestamp, then style, as LeRobot's writer sorts them.

    Args:
        texts: each frame's subgoal text, in frame order.
        subgoal_index: each frame's ``subgoal.index``.
        fps: the dataset's frames per second.

    Returns:
        dicts with ``role``, ``content``, ``style``, ``timestamp`` (s), ``camera`` (None) and ``tool_calls`` (None).

    Raises:
        SubgoalSchemaError: ``texts`` and ``subgoal_index`` differ in length, or a text is empty.
    """
    if len(texts) != len(subgoal_index):
        raise SubgoalSchemaError(f"{len(texts)} subgoal texts for {len(subgoal_index)} subgoal indices")
    starts: list[int] = []
    for i, (text, index) in enumerate(zip(texts, subgoal_index)):
        if not isinstance(text, str) or not text.strip():
            raise SubgoalSchemaError(f"frame {i}: subgoal text must be a non-empty string, got {text!r}")
        if i == 0 or text != texts[i - 1] or int(index) != int(subgoal_index[i - 1]):
            starts.append(i)
    rows: list[dict[str, Any]] = []
    for n, start in enumerate(starts):
        t = start / fps
        plan = "\n".join(f"{k}. {texts[s].strip()}" for k, s in enumerate(starts[n:], start=1))
        rows.append(_language_row(plan, "plan", t))
        rows.append(_language_row(texts[start], "subtask", t))
    return rows


def _language_row(content: str, style: str, timestamp: float) -> dict[str, Any]:
    return {"role": LANGUAGE_ROLE, "content": content, "style": style, "timestamp": float(timestamp),
            "camera": None, "tool_calls": None}


def keypoint_names(objects: tuple[str, ...], axes: str) -> list[str]:
    """Names of a flattened keypoint label: ``<obj>.k<j>.<axis>`` for each object, keypoint and axis."""
    return [f"{o}.k{j}.{a}" for o in objects for j in range(KEYPOINTS_PER_OBJECT) for a in axes]


def label_vocabulary_of(features: dict[str, dict[str, Any]]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``(objects, predicates)`` of a dataset's ``labels.*`` features (from their names), or None without labels."""
    if LABEL_PREDICATES_KEY not in features or LABEL_KEYPOINTS_3D_KEY not in features:
        return None
    names = features[LABEL_KEYPOINTS_3D_KEY].get("names") or []
    objects = tuple(dict.fromkeys(n.split(".k")[0] for n in names))
    return objects, tuple(features[LABEL_PREDICATES_KEY].get("names") or ())


def label_camera_of(features: dict[str, dict[str, Any]]) -> str | None:
    """The camera whose pixels a dataset's ``labels.keypoints_px`` holds (its ``info.camera``;
    :data:`DEFAULT_LABEL_CAMERA` for a dataset written before the field existed), or None without that feature."""
    feat = features.get(LABEL_KEYPOINTS_PX_KEY)
    if feat is None:
        return None
    return str((feat.get("info") or {}).get("camera", DEFAULT_LABEL_CAMERA))


def object_keypoints(pos: np.ndarray, quat_wxyz: np.ndarray) -> np.ndarray:
    """The two label keypoints of an object: its origin and the point :data:`KEYPOINT_OFFSET_M` along its local x
    axis, ``float64 (2, 3)`` m in the frame of ``pos`` (world). ``quat_wxyz`` is the object's orientation."""
    x_axis = quat_to_mat(quat_wxyz)[:, 0]
    p = np.asarray(pos, np.float64)
    return np.stack([p, p + KEYPOINT_OFFSET_M * x_axis])


def pad_trace_3d(trace: Trace3D | None, k: int = TRACE_3D_LEN) -> tuple[np.ndarray, np.ndarray]:
    """A 3-D trace as fixed-size rows for datasets and networks: the one conversion training and inference share.

    Points are semantic (above, grasp, lift...), so they are kept as they are, not resampled by arc length; the
    trace is padded to ``k`` rows by repeating its last point (a natural "stay there" for the network).

    Args:
        trace: the subgoal's :class:`tandem.core.types.Trace3D`, or None.
        k: K3, rows.

    Returns:
        ``(rows float32 (k, 5), mask float32 (k,))`` with rows laid out as :data:`TRACE_3D_COLUMNS` (m, world frame;
        rad; -1/+1) and mask 1 for real points; zeros and mask 0 for ``trace=None``.

    Raises:
        SubgoalSchemaError: the trace has more than ``k`` points.
    """
    rows = np.zeros((k, len(TRACE_3D_COLUMNS)), np.float32)
    mask = np.zeros(k, np.float32)
    if trace is None:
        return rows, mask
    n = len(trace)
    if n > k:
        raise SubgoalSchemaError(f"a 3-D trace of {n} points does not fit the {k} rows of {TRACE_3D_KEY}")
    rows[:n, :3] = trace.points
    rows[:n, 3] = trace.yaw
    rows[:n, 4] = trace.gripper
    rows[n:] = rows[n - 1]
    mask[:n] = 1.0
    return rows, mask
