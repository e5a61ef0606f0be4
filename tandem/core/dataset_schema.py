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
* ``subgoal.progress``: ``float32 (1,)`` in ``[0, 1]``: fraction of the active subgoal's frames elapsed.
* ``subgoal.success``: ``float32 (1,)``: 1 once the subgoal's predicate holds.
* ``task.success``: ``float32 (1,)``: 1 once the whole task's success holds.

This module is plain Python (no torch) so that the writer can import it cheaply.
"""

from __future__ import annotations

from typing import Any

from tandem.core.types import OSC_ACTION_LAYOUT, PROPRIO_LAYOUT

FPS: int = 20
IMAGE_SIZE: tuple[int, int] = (128, 128)
TRACE_LEN: int = 16
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
PROGRESS_KEY = "subgoal.progress"
SUBGOAL_SUCCESS_KEY = "subgoal.success"
TASK_SUCCESS_KEY = "task.success"
#: LeRobot adds this string column to every frame; it holds the episode's full instruction.
TASK_KEY = "task"
#: LeRobot's padding flag of the action sequence when it is loaded with ``delta_timestamps``.
ACTION_IS_PAD_KEY = "action_is_pad"


def image_key(camera: str) -> str:
    """Dataset key of a camera's image, e.g. ``"observation.images.agentview"``."""
    return f"{IMAGE_PREFIX}{camera}"


def _image_feature(image_size: tuple[int, int]) -> dict[str, Any]:
    h, w = int(image_size[0]), int(image_size[1])
    return {"dtype": "image", "shape": (h, w, 3), "names": ["height", "width", "channels"]}


def dataset_features(image_size: tuple[int, int] = IMAGE_SIZE, trace_len: int = TRACE_LEN,
                     cameras: tuple[str, ...] = CAMERAS) -> dict[str, dict[str, Any]]:
    """The ``features`` dict to pass to ``LeRobotDataset.create(..., use_videos=False)``.

    Args:
        image_size: ``(H, W)`` in px of every camera and of the goal image.
        trace_len: K, number of points each keypoint trace is resampled to.
        cameras: camera names; each gets an ``observation.images.<camera>`` image feature.

    Returns:
        feature name -> ``{"dtype", "shape", "names"}`` in LeRobot 0.6.1's format. Frame values must
        match exactly: images ``uint8 (H, W, 3)``; ``float32`` arrays of the given shapes; the two
        ``int64 (1,)`` index features.

    Raises:
        ValueError: if ``image_size`` or ``trace_len`` is not positive.
    """
    if len(image_size) != 2 or min(image_size) <= 0:
        raise ValueError(f"image_size must be (H, W) > 0, got {image_size}")
    if trace_len <= 0:
        raise ValueError(f"trace_len must be > 0, got {trace_len}")
    feats: dict[str, dict[str, Any]] = {}
    for cam in cameras:
        feats[image_key(cam)] = _image_feature(image_size)
    feats[STATE_KEY] = {"dtype": "float32", "shape": (STATE_DIM,), "names": list(PROPRIO_LAYOUT)}
    feats[ACTION_KEY] = {"dtype": "float32", "shape": (ACTION_DIM,), "names": list(OSC_ACTION_LAYOUT)}
    feats[SUBGOAL_INDEX_KEY] = {"dtype": "int64", "shape": (1,), "names": None}
    feats[SUBGOAL_TASK_INDEX_KEY] = {"dtype": "int64", "shape": (1,), "names": None}
    feats[GOAL_IMAGE_KEY] = _image_feature(image_size)
    feats[TRACE_KEY] = {"dtype": "float32", "shape": (trace_len, 2), "names": None}
    feats[TRACE_MASK_KEY] = {"dtype": "float32", "shape": (trace_len,), "names": None}
    feats[PROGRESS_KEY] = {"dtype": "float32", "shape": (1,), "names": None}
    feats[SUBGOAL_SUCCESS_KEY] = {"dtype": "float32", "shape": (1,), "names": None}
    feats[TASK_SUCCESS_KEY] = {"dtype": "float32", "shape": (1,), "names": None}
    return feats
