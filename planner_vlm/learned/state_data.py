"""Training data of the state model: a tandem dataset's frames of one camera and their labels, decoded once into RAM.

A tandem dataset (LeRobotDataset v3, :mod:`tandem.core.dataset_schema`) stores each frame's images as PNG bytes in
its parquet files. Decoding them per batch would cost more than the training step on a CPU, so
:class:`StateDataset` reads the columns it needs with pyarrow (the files LeRobot itself reads), decodes every
used frame's PNG once (``uint8``, 21 KB per 84 px frame: 75 k frames take 1.6 GB, half with ``frame_stride=2``),
and cuts batches by numpy indexing (as :mod:`executor_vla.frame_cache` does for the image executor).

Targets per frame: ``labels.keypoints_px`` ``(K, 2)`` px, ``labels.keypoints_3d`` ``(K, 3)`` m and
``labels.predicates`` ``(P,)`` 0/1, named in ``meta/info.json`` (the vocabulary is read from the names), and the
proprio ``observation.state`` ``(8,)``.

The camera calibration is fitted from the labels themselves (:func:`planner_vlm.learned.camera.fit_calibration`):
the 3-D keypoints and their pixels are exact correspondences of the same projection.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from planner_vlm.learned.camera import CameraCalibration, fit_calibration
from planner_vlm.learned.proprio import proprio_features
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError

#: Correspondences used to fit the calibration (evenly spaced over the dataset).
CALIBRATION_POINTS = 5000
#: Refuse a dataset whose labels do not fit one pinhole camera better than this (px, rms).
MAX_CALIBRATION_RMS_PX = 0.5


def read_info(root: str | Path) -> dict[str, Any]:
    """``meta/info.json`` of a tandem dataset.

    Raises:
        DatasetSchemaError: not a dataset directory (names the missing file).
    """
    p = Path(root) / "meta" / "info.json"
    if not p.is_file():
        raise DatasetSchemaError(f"{root}: not a tandem dataset (no meta/info.json)")
    return json.loads(p.read_text())


def data_files(root: str | Path) -> list[str]:
    """The dataset's data parquet files, in order.

    Raises:
        DatasetSchemaError: none found.
    """
    files = sorted(glob.glob(str(Path(root) / "data" / "chunk-*" / "file-*.parquet")))
    if not files:
        raise DatasetSchemaError(f"{root}: no data/chunk-*/file-*.parquet files")
    return files


def read_columns(files: list[str], columns: list[str]) -> dict[str, np.ndarray]:
    """Numeric columns of parquet files, concatenated: ``name -> (N, *shape)`` (nested fixed-size lists become extra
    axes), read without converting rows to Python objects.

    Raises:
        DatasetSchemaError: a missing column (named) or ragged lists.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts: dict[str, list[np.ndarray]] = {c: [] for c in columns}
    for f in files:
        table = pq.read_table(f, columns=columns)
        for c in columns:
            arr = table.column(c).combine_chunks()
            n = len(arr)
            while isinstance(arr, (pa.ListArray, pa.LargeListArray, pa.FixedSizeListArray)):
                arr = arr.flatten()
            values = arr.to_numpy(zero_copy_only=False)
            if n and len(values) % n:
                raise DatasetSchemaError(f"{f}: column {c!r} has ragged lists")
            parts[c].append(values.reshape(n, -1) if n and len(values) != n else values.reshape(n))
    return {c: np.concatenate(v) for c, v in parts.items()}


def decode_png(data: bytes) -> np.ndarray:
    """``uint8 (H, W, 3)`` RGB of PNG bytes.

    Raises:
        DatasetSchemaError: bytes that are not a colour image.
    """
    import cv2

    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if img is None or img.ndim != 3:
        raise DatasetSchemaError("an image of the dataset is not a decodable colour PNG")
    return img[:, :, ::-1].copy()


def symmetric_keypoints(kp_3d: np.ndarray, order: int) -> np.ndarray:
    """The ``order`` symmetric positions of an object's second keypoint: ``kp_3d (N, 2, 3)`` (origin, x-axis point)
    -> ``(N, order, 3)``, the x-axis point turned about the vertical through the origin by ``2 pi j / order``."""
    k0, k1 = kp_3d[:, 0], kp_3d[:, 1]
    out = np.empty((len(kp_3d), order, 3))
    d = k1 - k0
    for j in range(order):
        a = 2.0 * np.pi * j / order
        c, s = np.cos(a), np.sin(a)
        out[:, j, 0] = k0[:, 0] + c * d[:, 0] - s * d[:, 1]
        out[:, j, 1] = k0[:, 1] + s * d[:, 0] + c * d[:, 1]
        out[:, j, 2] = k1[:, 2]
    return out


def journal_seeds(root: str | Path) -> dict[int, int]:
    """Episode index -> simulator seed, from the ``tandem-collect`` journal (``meta/tandem_collect.json``); empty
    when there is none or it records no seeds."""
    try:
        episodes = json.loads((Path(root) / "meta" / "tandem_collect.json").read_text()).get("episodes") or []
    except (OSError, ValueError):
        return {}
    return {int(e["episode_index"]): int(e["seed"]) for e in episodes
            if isinstance(e, dict) and isinstance(e.get("episode_index"), int) and isinstance(e.get("seed"), int)}


def seeds_of(episode_seeds: dict[int, int], episodes: np.ndarray) -> list[int] | None:
    """The sorted simulator seeds of ``episodes`` (episode indices, repeats allowed), or None where the journal does
    not record one (a dataset not written by ``tandem-collect``): what a checkpoint records it trained on."""
    eps = np.unique(np.asarray(episodes, np.int64)).tolist()
    if any(e not in episode_seeds for e in eps):
        return None
    return sorted({episode_seeds[e] for e in eps})


class StateDataset:
    """A tandem dataset's frames for the state model, in RAM.

    Args:
        root: a ``tandem-collect`` dataset with the camera's images and the ``labels.*`` features, or several of one
            task and image size (e.g. shards collected in parallel), read as one: each root's episodes are numbered
            after the previous root's (``episode`` + the earlier roots' ``total_episodes``).
        camera: the camera to read (``"agentview"``).
        frame_stride: keep every n-th frame of each episode.
        episodes: episode indices to use (default all).
        val_episodes: the last this-many of the used episodes are held out (:attr:`val_index`).
        max_frames: keep at most this many frames (evenly spaced; CI and quick looks).

    Attributes:
        objects, predicates: the label vocabulary (from ``meta/info.json``).
        images: ``uint8 (N, H, W, 3)``; proprio ``float32 (N, 8)``; proprio_features ``float32 (N, 10)``.
        keypoints_px ``float32 (N, K, 2)`` px; keypoints_3d ``float32 (N, K, 3)`` m; predicate_labels
        ``float32 (N, P)``; episode ``int64 (N,)``; frame ``int64 (N,)``.
        calibration: the camera calibration fitted from the labels; calibration_rms_px: its fit error.
        train_index, val_index: frame indices of the two splits.
        episode_seeds: episode (as numbered here) -> the simulator seed it was collected with (from the collector's
        journal; empty for a dataset without one).

    Raises:
        DatasetSchemaError: no such camera or no labels in a dataset (named), keypoint labels of another camera
            (``info.camera`` of ``labels.keypoints_px``), roots of different vocabularies or image sizes (named), no
            frames, or labels that no single pinhole camera explains.
    """

    def __init__(self, root: str | Path | Sequence[str | Path], camera: str = "agentview", frame_stride: int = 1,
                 episodes: list[int] | None = None, val_episodes: int = 0, max_frames: int | None = None):
        roots = [Path(root)] if isinstance(root, (str, Path)) else [Path(r) for r in root]
        if not roots:
            raise DatasetSchemaError("no dataset root given")
        self.roots = roots
        self.root = roots[0]
        self.camera = camera
        parts = [self._read_labels(r, camera) for r in roots]
        offsets = np.concatenate([[0], np.cumsum([p["total_episodes"] for p in parts])[:-1]]).astype(int).tolist()
        for part, offset in zip(parts, offsets):  # each root's episodes follow the previous root's
            part["columns"]["episode_index"] += offset
        first = parts[0]
        for r, part in zip(roots[1:], parts[1:]):
            for name in ("objects", "predicates", "image_size"):
                if part[name] != first[name]:
                    raise DatasetSchemaError(f"{r}: its {name} {part[name]} differ from {roots[0]}'s {first[name]}; "
                                             "read together, the datasets must be of one task and one image size")
        self.objects, self.predicates = first["objects"], first["predicates"]
        self.image_size = h, w = first["image_size"]
        col = {k: np.concatenate([p["columns"][k] for p in parts]) for k in first["columns"]}
        ep, fr = col["episode_index"], col["frame_index"]
        keep = (fr % int(frame_stride)) == 0
        if episodes is not None:
            keep &= np.isin(ep, np.asarray(episodes, np.int64))
        rows = np.flatnonzero(keep)
        if max_frames is not None and len(rows) > max_frames:
            rows = rows[np.linspace(0, len(rows) - 1, int(max_frames)).round().astype(np.int64)]
        if len(rows) == 0:
            raise DatasetSchemaError(f"{root}: no frames left (episodes={episodes}, frame_stride={frame_stride})")
        o = len(self.objects)
        self.episode, self.frame = ep[rows], fr[rows]
        self.proprio = col[schema.STATE_KEY][rows].astype(np.float32)
        self.proprio_features = proprio_features(self.proprio)
        self.predicate_labels = col[schema.LABEL_PREDICATES_KEY][rows].astype(np.float32)
        self.keypoints_3d = col[schema.LABEL_KEYPOINTS_3D_KEY][rows].astype(np.float32).reshape(-1, 2 * o, 3)
        self.keypoints_px = col[schema.LABEL_KEYPOINTS_PX_KEY][rows].astype(np.float32).reshape(-1, 2 * o, 2)
        self.images = np.empty((len(rows), h, w, 3), np.uint8)
        base = 0
        for part in parts:
            n = len(part["columns"]["episode_index"])
            mine = (rows >= base) & (rows < base + n)
            self.images[mine] = self._decode(part["files"], part["image_key"], rows[mine] - base, (h, w))
            base += n
        pick = np.linspace(0, len(rows) * 2 * o - 1, min(CALIBRATION_POINTS, len(rows) * 2 * o)).astype(np.int64)
        self.calibration, self.calibration_rms_px = fit_calibration(
            self.keypoints_3d.reshape(-1, 3)[pick], self.keypoints_px.reshape(-1, 2)[pick], (h, w), camera)
        if self.calibration_rms_px > MAX_CALIBRATION_RMS_PX:
            raise DatasetSchemaError(f"{root}: the keypoint labels do not fit one pinhole camera (rms "
                                     f"{self.calibration_rms_px:.2f} px > {MAX_CALIBRATION_RMS_PX}); were they "
                                     "collected at several image sizes or camera placements?")
        used = np.unique(self.episode)
        n_val = min(int(val_episodes), max(len(used) - 1, 0))
        is_val = np.isin(self.episode, used[len(used) - n_val:]) if n_val else np.zeros(len(rows), bool)
        self.train_index, self.val_index = np.flatnonzero(~is_val), np.flatnonzero(is_val)
        self.episodes = used.tolist()
        self.episode_seeds = {e + first: s for r, first in zip(roots, offsets) for e, s in journal_seeds(r).items()}

    def seeds(self, index: np.ndarray) -> list[int] | None:
        """The simulator seeds of the episodes of frames ``index`` ``(N,)`` (:func:`seeds_of`)."""
        return seeds_of(self.episode_seeds, self.episode[np.asarray(index, np.int64)])

    @staticmethod
    def _read_labels(root: Path, camera: str) -> dict[str, Any]:
        """One root's vocabulary, image size, data files, ``total_episodes`` (``meta/info.json``) and numeric
        columns.

        Raises:
            DatasetSchemaError: no such camera or no labels (named), or labels of another camera.
        """
        info = read_info(root)
        feats = info.get("features", {})
        img_key = schema.image_key(camera)
        vocab = schema.label_vocabulary_of(feats)
        missing = [k for k in (img_key, schema.STATE_KEY, schema.LABEL_PREDICATES_KEY, schema.LABEL_KEYPOINTS_3D_KEY,
                               schema.LABEL_KEYPOINTS_PX_KEY) if k not in feats]
        if missing or vocab is None:
            raise DatasetSchemaError(f"{root}: the state model needs {missing or 'labels'}; collect the dataset with "
                                     f"tandem-collect, rendering the {camera!r} camera, with dataset.labels=true")
        label_camera = schema.label_camera_of(feats)
        if label_camera != camera:
            raise DatasetSchemaError(f"{root}: its keypoint labels are in {label_camera!r} pixels, not the {camera!r} "
                                     f"camera's; train on camera={label_camera} or collect with "
                                     f"dataset.label_camera={camera}")
        files = data_files(root)
        col = read_columns(files, [schema.STATE_KEY, schema.LABEL_PREDICATES_KEY, schema.LABEL_KEYPOINTS_3D_KEY,
                                   schema.LABEL_KEYPOINTS_PX_KEY, "episode_index", "frame_index"])
        col["episode_index"] = col["episode_index"].reshape(-1).astype(np.int64)
        col["frame_index"] = col["frame_index"].reshape(-1).astype(np.int64)
        return {"objects": tuple(vocab[0]), "predicates": tuple(vocab[1]), "image_key": img_key,
                "total_episodes": int(info.get("total_episodes", 0)),
                "image_size": tuple(int(v) for v in feats[img_key]["shape"][:2]), "files": files, "columns": col}

    @staticmethod
    def _decode(files: list[str], key: str, rows: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        import pyarrow.parquet as pq

        out = np.empty((len(rows), *size, 3), np.uint8)
        base, k = 0, 0
        for f in files:
            column = pq.read_table(f, columns=[key]).column(key).combine_chunks()
            n = len(column)
            data = column.field("bytes") if hasattr(column, "field") else column
            while k < len(rows) and rows[k] < base + n:
                img = decode_png(data[int(rows[k] - base)].as_py())
                if img.shape[:2] != size:
                    raise DatasetSchemaError(f"{f}: frame {int(rows[k])} is {img.shape[:2]}, info.json says {size}")
                out[k] = img
                k += 1
            base += n
        return out

    def __len__(self) -> int:
        return len(self.images)

    def set_calibration(self, calibration: CameraCalibration) -> None:
        """Use ``calibration`` (e.g. the simulator camera's) instead of the fitted one."""
        self.calibration = calibration

    def batch(self, index: np.ndarray) -> dict[str, np.ndarray]:
        """Frames ``index (B,)`` as numpy arrays: ``image uint8 (B, H, W, 3)``, ``proprio_features (B, 10)``,
        ``keypoints_px (B, K, 2)``, ``keypoints_3d (B, K, 3)``, ``predicates (B, P)``."""
        index = np.asarray(index, np.int64)
        return {"image": self.images[index], "proprio_features": self.proprio_features[index],
                "keypoints_px": self.keypoints_px[index], "keypoints_3d": self.keypoints_3d[index],
                "predicates": self.predicate_labels[index]}

    def batches(self, batch_size: int, seed: int, split: str = "train"):
        """Endless iterator of random batches of the split (``"train"`` or ``"val"``).

        Raises:
            DatasetSchemaError: the split has no frames.
        """
        pool = self.train_index if split == "train" else self.val_index
        if len(pool) == 0:
            raise DatasetSchemaError(f"{self.root}: the {split} split has no frames")
        rng = np.random.default_rng(seed)
        while True:
            order = rng.permutation(pool)
            for s in range(0, len(order) - batch_size + 1, batch_size):
                yield self.batch(order[s:s + batch_size])
            if len(order) < batch_size:
                yield self.batch(rng.choice(pool, batch_size))
