"""LeRobot batches -> the inputs of :class:`executor_vla.track_policy.TrackExecutor`, windowed as tandem-train does.

``lerobot-train`` cuts windows by episode: observation frames ``t - To + 1 .. t`` padded at the episode's start by
repeating its first frame, actions ``t .. t + Tp - 1`` padded at the episode's end (``action_is_pad``). The track
executor is trained per *segment* (one subgoal attempt; the whole episode for the flat policy), as
:class:`executor_vla.track_data.TrackDataset` does and as the closed loop runs (the history restarts at every
``set_subgoal``; the executor holds still at the end of its trace):

* observation frames before the segment's first frame are replaced by that frame;
* action steps past the segment's last frame become the hold action (no arm motion, the last gripper command)
  with ``hold_after_end``, else they repeat the last action and are flagged in ``action_is_pad``.

A LeRobot batch carries only frame ``t``'s ``subgoal.*`` values, so where ``t`` sits in its segment comes from a
:class:`SegmentTable` built from the dataset once, looked up by the batch's ``index`` (the absolute frame index).
Features are computed by :func:`executor_vla.track_features.track_features` (the 2-D ablation:
:func:`executor_vla.track_data.trace_2d_features`), the functions the closed loop calls, against frame ``t``'s
trace (a trace is constant within its attempt, :mod:`tandem.runtime.labelling`). The result equals
``TrackDataset.windows`` frame for frame (``tests/unit/test_lerobot_track_plugin.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_data import TrackDataset
from executor_vla.track_features import frame_features
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError

#: Batch key of the absolute LeRobot frame index (kept by LeRobot's processors as complementary data).
INDEX_KEY = "index"


@dataclass
class SegmentTable:
    """Where every dataset frame sits in its segment, indexed by the absolute LeRobot frame index.

    Attributes:
        since_start: ``int64 (N,)`` frames since the segment's first frame (0 on it); -1 for an index the dataset
            does not hold.
        until_end: ``int64 (N,)`` frames until the segment's last frame (0 on it).
        progress: ``float32 (N,)`` TrackDataset's progress label: ``subgoal.progress``, or the episode's progress
            ``(i + 1) / n`` for the flat policy.
    """

    since_start: np.ndarray
    until_end: np.ndarray
    progress: np.ndarray

    @classmethod
    def of(cls, data: TrackDataset) -> SegmentTable:
        """The table of a loaded :class:`TrackDataset` (its segments follow its config's ``conditioning_source``)."""
        rows = np.arange(data.num_frames)
        n = int(data.dataset_index.max()) + 1 if data.num_frames else 0
        since, until = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        progress = np.zeros(n, np.float32)
        since[data.dataset_index] = rows - data.seg_start
        until[data.dataset_index] = data.seg_end - rows
        progress[data.dataset_index] = data.progress
        return cls(since, until, progress)

    def lookup(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(since_start, until_end, progress)``, each ``(B,)``, of absolute frame indices ``index (B,)``.

        Raises:
            DatasetSchemaError: an index the table's dataset does not hold (the first few named).
        """
        index = np.asarray(index, np.int64).reshape(-1)
        inside = (index >= 0) & (index < len(self.since_start))
        known = np.zeros(len(index), bool)
        known[inside] = self.since_start[index[inside]] >= 0
        if not known.all():
            raise DatasetSchemaError(f"frame indices {index[~known][:5].tolist()} are not in the dataset the "
                                     "tandem_track policy was built on")
        return self.since_start[index], self.until_end[index], self.progress[index]


def _numpy(batch: dict[str, Any], key: str, ndim: int | None, what: str) -> np.ndarray:
    """``batch[key]`` as a numpy array of ``ndim`` dimensions (any number with ``ndim=None``).

    Raises:
        DatasetSchemaError: the key is missing or has another number of dimensions (named, with ``what``).
    """
    if key not in batch:
        raise DatasetSchemaError(f"the batch has no {key!r} ({what})")
    v = batch[key]
    arr = v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v)
    if ndim is not None and arr.ndim != ndim:
        raise DatasetSchemaError(f"batch[{key!r}] is {arr.shape}, expected {ndim} dimensions ({what})")
    return arr


def trace_inputs(cfg: TrackExecutorConfig, batch: dict[str, Any], batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The trace each batch element is conditioned on: ``(rows, mask)``.

    * ``trace_input="3d"``: ``subgoal.trace_3d`` ``(B, K3, 5)`` rows ``(x, y, z, yaw, gripper)`` (m, rad, world
      frame; :data:`tandem.core.dataset_schema.TRACE_3D_COLUMNS`) and ``subgoal.trace_3d_mask`` ``(B, K3)``;
    * ``"2d"``: ``subgoal.trace`` ``(B, K, 2)`` px (x right, y down, origin top-left) and ``subgoal.trace_mask``;
    * the flat policy (``conditioning_source="instruction"``): an all-zero 3-D trace with mask 0, as the executor
      uses at run time.

    Raises:
        DatasetSchemaError: a missing trace key, or a trace of another length than the config's (named, with the
            flag to set).
    """
    if cfg.conditioning_source == "instruction":
        k = cfg.trace_3d_len
        return (np.zeros((batch_size, k, len(schema.TRACE_3D_COLUMNS)), np.float32),
                np.zeros((batch_size, k), np.float32))
    if cfg.trace_input == "3d":
        keys, shape, flag = (schema.TRACE_3D_KEY, schema.TRACE_3D_MASK_KEY), (cfg.trace_3d_len, 5), "trace_3d_len"
    else:
        keys, shape, flag = (schema.TRACE_KEY, schema.TRACE_MASK_KEY), (cfg.trace_len, 2), "trace_len"
    rows = _numpy(batch, keys[0], 3, f"the trace of trace_input={cfg.trace_input!r}")
    mask = _numpy(batch, keys[1], 2, "its mask")
    if rows.shape != (batch_size, *shape) or mask.shape != (batch_size, shape[0]):
        raise DatasetSchemaError(f"{keys[0]} is {rows.shape} with mask {mask.shape}; the policy expects "
                                 f"({batch_size}, {shape[0]}, {shape[1]}) (set --policy.{flag}={rows.shape[1]})")
    return rows, mask


def window_features(cfg: TrackExecutorConfig, proprio: np.ndarray, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``float32 (To, F)`` features of proprio frames ``(To, D)`` against one trace: the executor's own
    :func:`executor_vla.track_features.frame_features`.

    Raises:
        SubgoalSchemaError: a malformed or non-finite trace. ValueError: NaN/inf in ``proprio``.
    """
    return frame_features(cfg, proprio, rows, mask)


def batch_features(cfg: TrackExecutorConfig, states: np.ndarray, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``float32 (B, To, F)``: :func:`window_features` of each batch element (``states (B, To, D)``)."""
    return np.stack([window_features(cfg, s, r, m) for s, r, m in zip(states, rows, mask)])


def segment_windows(cfg: TrackExecutorConfig, states: np.ndarray, actions: np.ndarray, action_is_pad: np.ndarray,
                    since_start: np.ndarray, until_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut LeRobot's episode windows at the segment's bounds (see the module docstring).

    Args:
        states: ``(B, To, D)`` frames ``t - To + 1 .. t``. actions: ``(B, Tp, A)`` frames ``t .. t + Tp - 1``.
        action_is_pad: ``(B, Tp)`` LeRobot's episode-end padding. since_start, until_end: ``(B,)`` of frame ``t``.

    Returns:
        ``(states (B, To, D), actions (B, Tp, A), action_is_pad (B, Tp) bool)``.
    """
    to, tp = states.shape[1], actions.shape[1]
    first = np.maximum(np.arange(to)[None, :], (to - 1 - since_start)[:, None])  # window slot of each obs frame
    states = np.take_along_axis(states, first[..., None], axis=1)
    steps = np.arange(tp)[None, :]
    past = steps > until_end[:, None]
    actions = np.take_along_axis(actions, np.minimum(steps, until_end[:, None])[..., None], axis=1).copy()
    if cfg.hold_after_end:  # past the segment's end: stay put with the last gripper command
        actions[..., :-1] = np.where(past[..., None], 0.0, actions[..., :-1])
        return states, actions, np.zeros_like(past)
    return states, actions, past | action_is_pad.astype(bool)


def training_batch(cfg: TrackExecutorConfig, batch: dict[str, Any], table: SegmentTable) -> dict[str, torch.Tensor]:
    """The :meth:`TrackExecutor.compute_loss` batch of a LeRobot training batch (``text`` is added by the caller).

    Args:
        batch: ``index (B,)``, ``observation.state (B, To, D)``, ``action (B, Tp, A)``, ``action_is_pad (B, Tp)``,
            the trace keys of :func:`trace_inputs`, and ``subgoal.progress (B,)`` or ``(B, 1)`` (subgoal conditioning).
        table: the dataset's :class:`SegmentTable`.

    Returns:
        ``{"obs": float32 (B, To, F), "action": float32 (B, Tp, A), "action_is_pad": bool (B, Tp),
        "progress": float32 (B,)}`` on the CPU.

    Raises:
        DatasetSchemaError: a missing key or wrong shape (named), an index not in the table's dataset.
    """
    index = _numpy(batch, INDEX_KEY, 1, "the absolute frame index LeRobot's dataset adds to every item")
    states = _numpy(batch, schema.STATE_KEY, 3, f"(B, To={cfg.n_obs_steps}, {cfg.state_dim})")
    actions = _numpy(batch, schema.ACTION_KEY, 3, f"(B, Tp={cfg.horizon}, {cfg.action_dim})")
    is_pad = _numpy(batch, schema.ACTION_IS_PAD_KEY, 2, "padded action steps must be masked in the loss")
    b = len(index)
    if states.shape != (b, cfg.n_obs_steps, cfg.state_dim) or actions.shape != (b, cfg.horizon, cfg.action_dim):
        raise DatasetSchemaError(f"observation.state {states.shape} / action {actions.shape} do not match the policy's "
                                 f"(B, {cfg.n_obs_steps}, {cfg.state_dim}) / (B, {cfg.horizon}, {cfg.action_dim}); "
                                 "were the windows cut with this config's delta indices?")
    since, until, episode_progress = table.lookup(index)
    states, actions, is_pad = segment_windows(cfg, states, actions, is_pad, since, until)
    rows, mask = trace_inputs(cfg, batch, b)
    if cfg.conditioning_source == "instruction":
        progress = episode_progress
    else:
        progress = _numpy(batch, schema.PROGRESS_KEY, None, "the progress label of the done head").reshape(-1)
        if progress.shape != (b,):
            raise DatasetSchemaError(f"batch[{schema.PROGRESS_KEY!r}] holds {progress.size} values for {b} frames")
    return {"obs": torch.from_numpy(batch_features(cfg, states, rows, mask)),
            "action": torch.from_numpy(np.ascontiguousarray(actions, np.float32)),
            "action_is_pad": torch.from_numpy(is_pad), "progress": torch.from_numpy(progress.astype(np.float32))}
