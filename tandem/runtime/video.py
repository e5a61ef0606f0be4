"""Episode video frames: agentview with subgoal text, keypoint trace and goal-image inset, wrist view beside.

Uses OpenCV for drawing and imageio (ffmpeg) for MP4 encoding.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from tandem.core.interrupts import interrupts_held
from tandem.core.types import Observation, Subgoal

#: Upscaling of the 128 px camera images so that text is legible.
DISPLAY_SCALE = 3


def _put_text(img: np.ndarray, text: str, org: tuple[int, int], scale: float = 0.45) -> None:
    cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255), 1, cv2.LINE_AA)


def compose_frame(
    obs: Observation,
    subgoal: Subgoal | None,
    header: str = "",
    main_camera: str = "agentview",
    side_camera: str = "wrist",
) -> np.ndarray:
    """Render one video frame.

    Args:
        obs: observation whose ``images[main_camera]`` and ``images[side_camera]`` are ``uint8 (H, W, 3)``.
        subgoal: active subgoal; its ``text`` is written, its ``trace`` (pixels of ``trace.camera`` at
            ``trace.image_size``) drawn as a polyline if it belongs to ``main_camera``, and its
            ``goal_image`` shown as an inset in the top-right corner.
        header: extra line (e.g. ``"step 120  attempt 2"``).

    Returns:
        ``uint8 (S*H + 40, S*(W_main + W_side), 3)`` RGB frame, S = :data:`DISPLAY_SCALE`.

    Raises:
        KeyError: if a camera is missing from ``obs.images``.
    """
    s = DISPLAY_SCALE
    main = obs.images[main_camera]
    h, w = main.shape[:2]
    big = cv2.resize(main, (w * s, h * s), interpolation=cv2.INTER_NEAREST)
    if subgoal is not None and subgoal.trace is not None and subgoal.trace.camera == main_camera:
        th, tw = subgoal.trace.image_size
        pts = subgoal.trace.points * np.array([w * s / tw, h * s / th], dtype=np.float32)
        pts_i = np.round(pts).astype(np.int32).reshape(-1, 1, 2)
        cv2.polylines(big, [pts_i], False, (255, 220, 0), 2, cv2.LINE_AA)
        cv2.circle(big, tuple(int(v) for v in pts_i[-1, 0]), 5, (255, 60, 0), -1, cv2.LINE_AA)
    if subgoal is not None and subgoal.goal_image is not None:
        inset_w = w * s // 3
        inset = cv2.resize(subgoal.goal_image, (inset_w, inset_w * subgoal.goal_image.shape[0] // subgoal.goal_image.shape[1]))
        ih = inset.shape[0]
        big[4:4 + ih, -inset_w - 4:-4] = inset
        cv2.rectangle(big, (w * s - inset_w - 5, 3), (w * s - 3, 4 + ih), (255, 255, 255), 1)
        _put_text(big, "goal", (w * s - inset_w, 18 + ih), 0.4)
    panels = [big]
    if side_camera in obs.images:
        side = obs.images[side_camera]
        panels.append(cv2.resize(side, (side.shape[1] * s * h // side.shape[0], h * s), interpolation=cv2.INTER_NEAREST))
    frame = np.concatenate(panels, axis=1)
    bar = np.zeros((40, frame.shape[1], 3), dtype=np.uint8)
    _put_text(bar, subgoal.text if subgoal is not None else "(no active subgoal)", (6, 16), 0.5)
    _put_text(bar, header, (6, 34), 0.4)
    return np.concatenate([bar, frame], axis=0)


class VideoWriter:
    """Streams frames to an MP4 (H.264 via imageio-ffmpeg) at ``fps`` frames per second.

    Frames are written and the file is finished with SIGINT and SIGTERM held back (:func:`interrupts_held`), so that
    an interrupt never kills ffmpeg halfway: the video closed after Ctrl-C or SIGTERM plays, with the frames so far.
    """

    def __init__(self, path: str | Path, fps: float = 20.0):
        import imageio.v2 as imageio

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = imageio.get_writer(str(self.path), fps=fps, codec="libx264", quality=7,
                                          macro_block_size=8, ffmpeg_log_level="error")

    def add(self, frame: np.ndarray) -> None:
        """Append one ``uint8 (H, W, 3)`` RGB frame."""
        with interrupts_held():
            self._writer.append_data(frame)

    def close(self) -> Path:
        """Finish the file (its index written: it plays); returns its path."""
        with interrupts_held():
            self._writer.close()
        return self.path
