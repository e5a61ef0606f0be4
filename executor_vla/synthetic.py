"""A tiny synthetic dataset in the tandem schema, for CI, the ``debug`` train config and tests.

It is NOT robot data: a point "end effector" moves toward a per-subgoal target drawn as a coloured
square in the images, so a policy can learn something in a few steps, but nothing here is meant to
be realistic. The 3-D trace of a subgoal goes from the start to the target in the state's own units
(``observation.state[:2]`` is the point's position scaled to ``[0, 1]``, z = 0), so the track executor, which
sees the trace relative to the end effector, can learn the same motion. With ``labels=True`` every frame also
carries the ``labels.*`` features: the four coloured objects (``obj0``..``obj3``: the episode's targets, the others
elsewhere) as two keypoints each in the same units, so a flat policy that sees the objects
(``scene_input="objects_3d"``) can learn where the instruction sends it. The real dataset comes from
``tandem-collect`` (issue 3); both follow :mod:`tandem.core.dataset_schema`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tandem.core import dataset_schema as schema
from tandem.core.types import Trace3D


def _draw(img: np.ndarray, xy: np.ndarray, color: tuple[int, int, int], r: int = 4) -> None:
    h, w = img.shape[:2]
    x, y = int(np.clip(xy[0], 0, w - 1)), int(np.clip(xy[1], 0, h - 1))
    img[max(0, y - r):y + r + 1, max(0, x - r):x + r + 1] = color


def _label_columns(object_px: np.ndarray, object_yaw: np.ndarray, pos: np.ndarray,
                   image_size: tuple[int, int]) -> dict[str, np.ndarray]:
    """The ``labels.*`` values of one frame: objects at ``object_px (O, 2)`` px with yaws ``(O,)`` rad, the point at
    ``pos (2,)`` px; 3-D keypoints in the state's units (px / image size, z = 0)."""
    h, w = image_size
    origin = np.concatenate([object_px / np.array([w, h]), np.zeros((len(object_px), 1))], axis=1)
    axis = np.stack([np.cos(object_yaw), np.sin(object_yaw), np.zeros_like(object_yaw)], axis=1)
    kp3 = np.stack([origin, origin + schema.KEYPOINT_OFFSET_M * axis], axis=1)  # (O, 2, 3)
    kp_px = kp3[..., :2] * np.array([w, h])
    at = (np.linalg.norm(object_px - pos, axis=1) <= 1.0).astype(np.float32)
    return {schema.LABEL_KEYPOINTS_3D_KEY: kp3.reshape(-1).astype(np.float32),
            schema.LABEL_KEYPOINTS_PX_KEY: kp_px.reshape(-1).astype(np.float32),
            schema.LABEL_PREDICATES_KEY: at}


def make_synthetic_dataset(root: str | Path, n_episodes: int = 2, subgoals_per_episode: int = 2,
                           frames_per_subgoal: int = 12, image_size: tuple[int, int] = (32, 32),
                           trace_len: int = schema.TRACE_LEN, seed: int = 0,
                           repo_id: str = "tandem/synthetic", fps: int = schema.FPS, labels: bool = False):
    """Write a LeRobotDataset v3 following :func:`tandem.core.dataset_schema.dataset_features` and return it.

    Each episode has ``subgoals_per_episode`` subgoals of ``frames_per_subgoal`` frames. Subgoal texts
    are registered as LeRobot tasks (``subgoal.task_index`` points into ``meta/tasks.parquet``) and each
    frame's ``task`` is the episode instruction, as the real writer does.

    Args:
        root: directory to create; must not exist (LeRobot refuses to overwrite).
        image_size: ``(H, W)`` px of every image (small by default to keep CI fast).
        fps: frames per second recorded in ``meta/info.json`` (timestamps are ``frame_index / fps``).
        labels: also write ``labels.keypoints_3d`` (each object's origin at its position, z = 0, and the point
            :data:`tandem.core.dataset_schema.KEYPOINT_OFFSET_M` along its random yaw), ``labels.keypoints_px`` and
            ``labels.predicates`` (``at(objX)``: the point within 1 px of it).

    Returns:
        the finalized ``LeRobotDataset`` (open it again for reading with ``delta_timestamps``).

    Raises:
        FileExistsError: if ``root`` exists.
    """
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root = Path(root)
    if root.exists():
        raise FileExistsError(f"synthetic dataset root {root} exists; LeRobotDataset.create needs a new directory")
    rng = np.random.default_rng(seed)
    h, w = image_size
    colors = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)]
    objects = tuple(f"obj{i}" for i in range(len(colors)))
    vocabulary = (objects, tuple(f"at({o})" for o in objects)) if labels else None
    # written with LeRobot's add_frame, not tandem's writer, which alone fills the language columns
    feats = schema.dataset_features(image_size=image_size, trace_len=trace_len, labels=vocabulary, language=False)
    ds = LeRobotDataset.create(repo_id=repo_id, fps=fps, features=feats, root=root,  # PNG frames: no video decoder
                               robot_type="panda", use_videos=False, video_backend="pyav")  # (and no torchcodec probe)
    for ep in range(n_episodes):
        names = [f"obj{(ep + k) % len(colors)}" for k in range(subgoals_per_episode)]
        texts = [f"move to the {n}" for n in names]
        instruction = "visit " + " then ".join(names)
        ds.meta.save_episode_tasks(texts)  # subgoal texts become LeRobot tasks
        pos = rng.uniform(0.2, 0.8, size=2) * np.array([w, h])
        targets = rng.uniform(0.15, 0.85, size=(subgoals_per_episode, 2)) * np.array([w, h])
        if labels:  # every object's position (px) and yaw; the episode's targets are its objects
            object_px = rng.uniform(0.15, 0.85, size=(len(objects), 2)) * np.array([w, h])
            object_yaw = rng.uniform(-np.pi, np.pi, size=len(objects))
            for k, n in enumerate(names):
                object_px[objects.index(n)] = targets[k]
        for k in range(subgoals_per_episode):
            goal_img = np.zeros((h, w, 3), np.uint8)
            _draw(goal_img, targets[k], colors[(ep + k) % len(colors)])
            _draw(goal_img, targets[k], (255, 255, 255), r=1)
            start = pos.copy()
            trace = np.linspace(start, targets[k], trace_len).astype(np.float32)
            trace_mask = np.ones(trace_len, np.float32)
            trace_mask[-2:] = 0.0 if k % 2 else 1.0  # exercise padded traces too
            grip = 1.0 if k % 2 else -1.0
            trace_3d, trace_3d_mask = schema.pad_trace_3d(Trace3D(
                points=np.array([[*(start / np.array([w, h])), 0.0], [*(targets[k] / np.array([w, h])), 0.0]]),
                yaw=np.zeros(2), gripper=np.array([grip, grip])))
            task_index = ds.meta.get_task_index(texts[k])
            for f in range(frames_per_subgoal):
                delta = targets[k] - pos
                act2 = np.clip(delta / 4.0, -1, 1)
                pos = pos + act2 * 2.0
                img = np.zeros((h, w, 3), np.uint8)
                for j in range(subgoals_per_episode):
                    _draw(img, targets[j], colors[(ep + j) % len(colors)])
                _draw(img, pos, (255, 255, 255), r=2)
                wrist = np.full((h, w, 3), int(255 * f / frames_per_subgoal), np.uint8)
                state = np.zeros(schema.STATE_DIM, np.float32)
                state[:2] = pos / np.array([w, h])
                state[3] = 1.0
                state[7] = 0.04
                action = np.zeros(schema.ACTION_DIM, np.float32)
                action[:2] = act2
                action[6] = 1.0 if k % 2 else -1.0
                progress = (f + 1) / frames_per_subgoal
                frame = {
                    schema.image_key("agentview"): img,
                    schema.image_key("wrist"): wrist,
                    schema.STATE_KEY: state,
                    schema.ACTION_KEY: action,
                    schema.SUBGOAL_INDEX_KEY: np.array([k], np.int64),
                    schema.SUBGOAL_TASK_INDEX_KEY: np.array([task_index], np.int64),
                    schema.GOAL_IMAGE_KEY: goal_img,
                    schema.TRACE_KEY: trace,
                    schema.TRACE_MASK_KEY: trace_mask,
                    schema.TRACE_3D_KEY: trace_3d,
                    schema.TRACE_3D_MASK_KEY: trace_3d_mask,
                    schema.PROGRESS_KEY: np.array([progress], np.float32),
                    schema.SUBGOAL_SUCCESS_KEY: np.array([float(f == frames_per_subgoal - 1)], np.float32),
                    schema.TASK_SUCCESS_KEY: np.array(
                        [float(k == subgoals_per_episode - 1 and f == frames_per_subgoal - 1)], np.float32),
                    "task": instruction,
                }
                if labels:
                    frame.update(_label_columns(object_px, object_yaw, pos, (h, w)))
                ds.add_frame(frame)
        ds.save_episode()
    ds.finalize()
    return ds
