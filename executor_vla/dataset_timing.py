"""Timing checks of a dataset against the control rate the executor runs at.

tandem's executors step at the env's control rate (``schema.FPS`` = 20 Hz: robosuite ``control_freq``, the bridge's
``rate_hz``), and their training windows are built by frame index (``delta_timestamps`` x fps, and
:class:`~executor_vla.frame_cache.FrameCache` by index arithmetic): one frame must be one control step. A dataset
recorded at another rate, or with a frame that is late or early, would silently teach other dynamics.

The timestamp rule is LeRobot's: within an episode consecutive timestamps are ``1 / fps`` apart, to within
``tolerance_s`` (``LeRobotDataset(..., tolerance_s=1e-4)``, the default of LeRobot 0.6.1, documented as "each
timestamp is separated to the next by 1/fps +/- tolerance_s"). LeRobot 0.6.1 no longer checks this when a dataset
opens, so tandem does.
"""

from __future__ import annotations

import numpy as np

#: LeRobot's default ``tolerance_s`` (s).
LEROBOT_TOLERANCE_S = 1e-4


def timing_problems(fps: float, timestamps: np.ndarray, episode_index: np.ndarray, control_hz: float,
                    tolerance_s: float = LEROBOT_TOLERANCE_S, limit: int = 5) -> list[str]:
    """Everything wrong with a dataset's timing, one readable line each (empty when it is right).

    Args:
        fps: the dataset's ``meta/info.json`` fps (Hz).
        timestamps: ``(N,)`` the ``timestamp`` column (s), rows in dataset order.
        episode_index: ``(N,)`` the ``episode_index`` column.
        control_hz: the control rate the executor is trained for and run at (Hz).
        tolerance_s: allowed deviation of each frame-to-frame interval from ``1 / fps`` (s).
        limit: frames reported at most (the count of all bad frames is given).

    Returns:
        problems: an fps that differs from ``control_hz``; frames whose interval to the previous frame of the same
        episode is not ``1 / fps +- tolerance_s`` (episode, frame, interval).
    """
    problems: list[str] = []
    if not abs(float(fps) - float(control_hz)) <= 1e-9:
        problems.append(f"the dataset is recorded at {fps:g} fps but the executor runs at the {control_hz:g} Hz "
                        "control rate (training windows are built by frame index: one frame must be one control "
                        "step); re-collect at the control rate or resample the dataset")
    ts = np.asarray(timestamps, np.float64).reshape(-1)
    ep = np.asarray(episode_index, np.int64).reshape(-1)
    if ts.shape != ep.shape:
        return [*problems, f"timestamp ({ts.size}) and episode_index ({ep.size}) columns differ in length"]
    if ts.size < 2 or not fps > 0:
        return problems
    same = ep[1:] == ep[:-1]
    gap = np.diff(ts)
    bad = np.flatnonzero(same & ~(np.abs(gap - 1.0 / fps) <= tolerance_s))
    if bad.size:
        frame_in_episode = np.arange(ts.size) - np.searchsorted(ep, ep, side="left") if np.all(np.diff(ep) >= 0) \
            else None
        shown = []
        for i in bad[:limit]:
            where = f"frame {frame_in_episode[i + 1]}" if frame_in_episode is not None else f"row {i + 1}"
            shown.append(f"episode {ep[i + 1]} {where}: {gap[i]:.4f} s after the previous frame")
        problems.append(f"{bad.size} frame(s) are not 1/fps = {1.0 / fps:.4f} s +- {tolerance_s:g} s (LeRobot's "
                        f"tolerance_s) after the previous one: " + "; ".join(shown)
                        + ("; ..." if bad.size > limit else ""))
    return problems
