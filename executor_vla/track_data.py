"""Training data of the track executor: a tandem LeRobotDataset v3 held in RAM as numpy windows.

The track executor needs no images, so the whole dataset (state, action, subgoal index and text, traces,
progress) fits in a few MB. It is read once from the dataset's parquet files (LeRobot v3 layout, the same files
``LeRobotDataset`` reads), featurised with :func:`executor_vla.track_features.track_features` (the function the
closed loop calls), and batches are cut by numpy indexing: about 10,000 samples/s of training on one core,
where a per-sample ``DataLoader`` would dominate.

Windows (Diffusion Policy's convention, within one subgoal attempt, a *segment*):

* observation frames ``t - To + 1 .. t``, padded at the segment's start by repeating its first frame (LeRobot
  pads the same way at episode starts; the executor's history restarts at every ``set_subgoal``);
* actions ``t .. t + Tp - 1`` (with ``action_space="setpoint"`` their position part is each step's OSC set-point,
  grip site + ``position_scale_m`` x the commanded delta, minus the grip site at frame ``t``); steps past the segment's last frame are the hold action (no arm motion, the last
  gripper command: the executor stays at the end of its trace until the agent verifies) with
  ``hold_after_end``, else they repeat the last action and are flagged in ``action_is_pad`` (masked in the loss).

A flat policy (``conditioning_source="instruction"``) sees the whole episode as one segment, conditioned on the
instruction, with episode progress as its progress label.

With ``scene_input="objects_3d"`` each frame's features also hold its own ``labels.keypoints_3d`` (the objects'
keypoints, in the order of the dataset's label vocabulary or of ``cfg.scene_objects``) relative to its grip site
(:mod:`executor_vla.object_features`); at run time the learned state model reads them off the camera image.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from executor_vla.dataset_inspect import load_tables
from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_features import frame_features
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError

#: LeRobot's tolerance (s) between a frame's timestamp and ``frame_index / fps``.
TIMESTAMP_TOLERANCE_S = 1e-4


def check_timing(columns: dict[str, np.ndarray], fps: int, where: str) -> None:
    """Refuse a dataset whose timestamps do not match ``frame_index / fps`` (windows are cut by frame index).

    Raises:
        DatasetSchemaError: naming the first bad frame (episode, frame, timestamp, expected).
    """
    if "timestamp" not in columns or "frame_index" not in columns:
        return
    ts = np.asarray(columns["timestamp"], np.float64).reshape(-1)
    fi = np.asarray(columns["frame_index"], np.float64).reshape(-1)
    err = np.abs(ts - fi / fps)
    bad = np.flatnonzero(err > TIMESTAMP_TOLERANCE_S)
    if len(bad):
        i = int(bad[0])
        ep = int(np.asarray(columns.get("episode_index", np.zeros(len(ts))))[i])
        raise DatasetSchemaError(f"{where}: episode {ep} frame {int(fi[i])} has timestamp {ts[i]:.4f} s, expected "
                                 f"{fi[i] / fps:.4f} s at {fps} fps (tolerance {TIMESTAMP_TOLERANCE_S} s, as LeRobot)")


@dataclass
class TrackStats:
    """Normalisation statistics: feature mean/std ``(F,)`` and action min/max ``(A,)`` (controller units)."""

    feature_mean: np.ndarray
    feature_std: np.ndarray
    action_min: np.ndarray
    action_max: np.ndarray

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict of the four statistics (lists of floats)."""
        return {k: np.asarray(v, np.float64).tolist() for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TrackStats:
        """The statistics of a :meth:`to_json` dict (float32 arrays)."""
        return cls(**{k: np.asarray(d[k], np.float32) for k in ("feature_mean", "feature_std", "action_min",
                                                               "action_max")})


class TrackDataset:
    """A tandem dataset as in-memory training windows for :class:`executor_vla.track_policy.TrackExecutor`.

    Args:
        root: a dataset directory written by ``tandem-collect`` (LeRobotDataset v3, :mod:`tandem.core.dataset_schema`).
        cfg: the executor config (horizons, trace input, conditioning source).
        episodes: episode indices to use (default all).
        val_episodes: the last this-many of them are held out for the validation loss.

    Attributes:
        state: ``float32 (N, 8)`` proprio per frame.
        dataset_index: ``int64 (N,)`` each row's absolute LeRobot frame index (the dataset's ``index`` column, the
            ``index`` of a LeRobot batch; the row number if the column is absent).
        seg_start, seg_end: ``int64 (N,)`` row of the first and of the last frame of each row's segment (its subgoal
            attempt; its episode for the flat policy).
        features: ``float32 (N, F)`` per-frame features (of each frame against its own segment's trace).
        texts: the conditioning texts, indexed by ``text_id``; ``text_id (N,)`` per frame.
        train_index, val_index: frame indices usable as window ends.
        tasks, objects: the task names and subgoal argument names seen (the checkpoint's vocabulary).
        scene_objects: with ``scene_input="objects_3d"``, the objects of the keypoint features in their order
            (``cfg.scene_objects``, else the dataset's label vocabulary); ``()`` otherwise.

    Raises:
        DatasetSchemaError: not a tandem dataset, a missing feature the config needs (named), an fps other than
            20, timestamps that disagree with the frame indices, or (``scene_input="objects_3d"``) no object labels
            or labels that lack one of ``cfg.scene_objects``.
    """

    def __init__(self, root: str | Path, cfg: TrackExecutorConfig, episodes: list[int] | None = None,
                 val_episodes: int = 0):
        self.root, self.cfg = Path(root), cfg
        t = load_tables(root, committed_only=True)
        fps = int(t.info.get("fps", -1))
        if fps != schema.FPS:
            raise DatasetSchemaError(f"{root}: dataset recorded at {fps} fps, the executor runs at {schema.FPS} Hz")
        check_timing(t.columns, fps, str(root))
        need = [schema.STATE_KEY, schema.ACTION_KEY, schema.SUBGOAL_INDEX_KEY, schema.SUBGOAL_TASK_INDEX_KEY,
                schema.PROGRESS_KEY, "episode_index", "task_index"]
        need += ([schema.TRACE_3D_KEY, schema.TRACE_3D_MASK_KEY] if cfg.trace_input == "3d"
                 else [schema.TRACE_KEY, schema.TRACE_MASK_KEY])
        missing = [k for k in need if k not in t.columns]
        if missing:
            raise DatasetSchemaError(f"{root}: dataset lacks {missing} needed by the track executor "
                                     f"(trace_input={cfg.trace_input!r}); collect it with tandem-collect")
        col = t.columns
        ep = col["episode_index"].reshape(-1).astype(np.int64)
        keep = np.ones(len(ep), bool) if episodes is None else np.isin(ep, np.asarray(episodes, np.int64))
        if not keep.any():
            raise DatasetSchemaError(f"{root}: no frames in episodes {episodes}")
        idx = np.flatnonzero(keep)
        ids = col["index"].reshape(-1) if "index" in col else np.arange(len(keep))
        self.dataset_index = ids[idx].astype(np.int64)
        ep = ep[idx]
        state = col[schema.STATE_KEY][idx].astype(np.float32)
        self.actions = col[schema.ACTION_KEY][idx].astype(np.float32)
        sub = col[schema.SUBGOAL_INDEX_KEY][idx].reshape(-1).astype(np.int64)
        flat = cfg.conditioning_source == "instruction"
        seg_key = ep if flat else ep * 100_000 + sub
        starts = np.flatnonzero(np.r_[True, seg_key[1:] != seg_key[:-1]])
        ends = np.r_[starts[1:], len(seg_key)] - 1
        self.seg_start = np.repeat(starts, ends - starts + 1)
        self.seg_end = np.repeat(ends, ends - starts + 1)
        if flat:
            pos = np.arange(len(ep)) - self.seg_start
            self.progress = ((pos + 1) / (self.seg_end - self.seg_start + 1)).astype(np.float32)
        else:
            self.progress = col[schema.PROGRESS_KEY][idx].reshape(-1).astype(np.float32)
        text_col = (col["task_index"] if flat else col[schema.SUBGOAL_TASK_INDEX_KEY])[idx].reshape(-1).astype(np.int64)
        uniq = np.unique(text_col)
        self.texts = [t.tasks.get(int(u), "") for u in uniq]
        self.text_id = np.searchsorted(uniq, text_col)
        self.state = state
        #: ``float32 (N, 3)`` OSC position set-point each frame commanded (m): grip site + scale x position delta.
        self.setpoints = state[:, :3] + np.float32(cfg.position_scale_m) * self.actions[:, :3]
        if cfg.trace_input == "3d":
            self._trace_cols = (col[schema.TRACE_3D_KEY][idx].astype(np.float32),
                                col[schema.TRACE_3D_MASK_KEY][idx].astype(np.float32))
        else:
            self._trace_cols = (col[schema.TRACE_KEY][idx].astype(np.float32),
                                col[schema.TRACE_MASK_KEY][idx].astype(np.float32))
        if flat:  # the flat policy has no trace: an all-zero trace with mask 0, as the executor uses at run time
            self._trace_cols = (np.zeros((len(ep), cfg.trace_3d_len, len(schema.TRACE_3D_COLUMNS)), np.float32),
                                np.zeros((len(ep), cfg.trace_3d_len), np.float32))
        keypoints, self.scene_objects = self._scene_keypoints(t, idx)
        if keypoints is not None and not cfg.scene_objects:  # the label vocabulary's order becomes the checkpoint's
            self.cfg = cfg = replace(cfg, scene_objects=self.scene_objects)
        feats = []
        for s, e in zip(starts, ends):
            rows, mask = self.segment_trace(s)
            feats.append(frame_features(cfg, state[s:e + 1], rows, mask,
                                        None if keypoints is None else keypoints[s:e + 1]))
        self.features = np.concatenate(feats, axis=0)
        episodes_sorted = np.unique(ep)
        n_val = min(int(val_episodes), max(len(episodes_sorted) - 1, 0))
        val_eps = episodes_sorted[len(episodes_sorted) - n_val:] if n_val else np.array([], np.int64)
        is_val = np.isin(ep, val_eps)
        self.train_index, self.val_index = np.flatnonzero(~is_val), np.flatnonzero(is_val)
        self.episodes = episodes_sorted.tolist()
        self.num_frames = len(ep)
        journal = t.journal or {}
        self.tasks = tuple(sorted({str(r.get("task")) for r in journal.get("episodes", []) if r.get("task")}))
        objs: set[str] = set()
        for r in journal.get("episodes", []):
            for a in r.get("attempts", []):
                sig = str(a.get("signature", ""))
                objs.update(x.strip() for x in sig.partition("(")[2].rstrip(")").split(",") if x.strip())
        self.objects = tuple(sorted(objs))

    def _scene_keypoints(self, tables: Any, idx: np.ndarray) -> tuple[np.ndarray | None, tuple[str, ...]]:
        """``(keypoints float32 (N, O, 2, 3) m, objects)`` of the used rows ``idx`` for ``scene_input="objects_3d"``
        (objects in the order of ``cfg.scene_objects``, else the label vocabulary's); ``(None, ())`` otherwise."""
        cfg = self.cfg
        if cfg.scene_input == "none":
            return None, ()
        vocab = schema.label_vocabulary_of(tables.info.get("features", {}))
        if vocab is None or schema.LABEL_KEYPOINTS_3D_KEY not in tables.columns:
            raise DatasetSchemaError(f"{self.root}: scene_input={cfg.scene_input!r} trains on the objects' keypoints "
                                     f"({schema.LABEL_KEYPOINTS_3D_KEY}), which this dataset lacks; collect it with "
                                     "tandem-collect (dataset.labels=true)")
        labelled = vocab[0]
        objects = cfg.scene_objects or labelled
        missing = [o for o in objects if o not in labelled]
        if missing:
            raise DatasetSchemaError(f"{self.root}: scene_objects {list(objects)} name {missing}, which the labels "
                                     f"lack (they hold {list(labelled)})")
        kp = tables.columns[schema.LABEL_KEYPOINTS_3D_KEY][idx].astype(np.float32).reshape(
            len(idx), len(labelled), schema.KEYPOINTS_PER_OBJECT, 3)
        return kp[:, [labelled.index(o) for o in objects]], tuple(objects)

    def segment_trace(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """The trace (rows, mask) that frame ``i``'s segment is conditioned on: ``(K3, 5)`` and ``(K3,)`` for the
        3-D trace, ``(K, 2)`` and ``(K,)`` px for the 2-D one."""
        s = int(self.seg_start[i])
        return self._trace_cols[0][s], self._trace_cols[1][s]

    # ------------------------------------------------------------------ statistics
    def stats(self) -> TrackStats:
        """Mean/std of the training frames' features (std floored at 1e-3) and min/max of their actions (of every
        step of their action windows with ``action_space="setpoint"``, whose position part depends on the step)."""
        f = self.features[self.train_index]
        std = np.maximum(f.std(0), 1e-3)
        if self.cfg.action_space == "delta":
            a = self.actions[self.train_index]
            a_min, a_max = a.min(0), a.max(0)
        else:
            lo, hi = [], []
            for part in np.array_split(self.train_index, max(1, len(self.train_index) // 20_000)):
                w = self.windows(part)["action"].reshape(-1, self.cfg.action_dim)
                lo.append(w.min(0))
                hi.append(w.max(0))
            a_min, a_max = np.min(lo, 0), np.max(hi, 0)
        return TrackStats(f.mean(0).astype(np.float32), std.astype(np.float32), a_min.astype(np.float32),
                          a_max.astype(np.float32))

    # ------------------------------------------------------------------ windows
    def windows(self, index: np.ndarray) -> dict[str, np.ndarray]:
        """Training windows ending at frames ``index (B,)``.

        Returns:
            ``{"obs": float32 (B, To, F), "text_id": int64 (B,), "action": float32 (B, Tp, A),
            "action_is_pad": bool (B, Tp), "progress": float32 (B,)}``.
        """
        cfg = self.cfg
        index = np.asarray(index, np.int64)
        offs = np.arange(-cfg.n_obs_steps + 1, 1)
        obs_idx = np.maximum(index[:, None] + offs[None, :], self.seg_start[index][:, None])
        act_idx = index[:, None] + np.arange(cfg.horizon)[None, :]
        end = self.seg_end[index][:, None]
        pad = act_idx > end
        act_idx = np.minimum(act_idx, end)
        actions = self.actions[act_idx]
        if cfg.hold_after_end:  # past the segment's end: stay put with the last gripper command
            actions = actions.copy()
            actions[..., :-1] = np.where(pad[..., None], 0.0, actions[..., :-1])
        if cfg.action_space == "setpoint":  # set-points relative to the grip site now; the hold stays at the end
            actions = actions.copy()
            held = self.state[act_idx, :3] if cfg.hold_after_end else self.setpoints[act_idx]
            target = np.where(pad[..., None], held, self.setpoints[act_idx])
            actions[..., :3] = target - self.state[index, :3][:, None, :]
        if cfg.hold_after_end:
            pad = np.zeros_like(pad)
        return {"obs": self.features[obs_idx], "text_id": self.text_id[index], "action": actions,
                "action_is_pad": pad, "progress": self.progress[index]}

    def attach_text_embeddings(self, embeddings: np.ndarray) -> None:
        """Give every batch a ``text (B, E)`` column: ``embeddings (len(texts), E)`` row ``i`` is ``texts[i]``'s.

        Raises:
            DatasetSchemaError: a row count other than ``len(texts)``.
        """
        emb = np.asarray(embeddings, np.float32)
        if emb.ndim != 2 or emb.shape[0] != len(self.texts):
            raise DatasetSchemaError(f"text embeddings must be ({len(self.texts)}, E), got {emb.shape}")
        self.text_embeddings = emb

    def batches(self, batch_size: int, seed: int, split: str = "train"):
        """Endless iterator of random batches (numpy windows as torch tensors; ``text`` too once
        :meth:`attach_text_embeddings` was called).

        Raises:
            DatasetSchemaError: the split has no frames.
        """
        pool = self.train_index if split == "train" else self.val_index
        if len(pool) == 0:
            raise DatasetSchemaError(f"{self.root}: the {split} split has no frames")
        rng = np.random.default_rng(seed)
        emb = getattr(self, "text_embeddings", None)
        while True:
            w = self.windows(pool[rng.integers(0, len(pool), size=batch_size)])
            if emb is not None:
                w["text"] = emb[w["text_id"]]
            yield {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in w.items()}
