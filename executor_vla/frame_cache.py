"""All frames of a LeRobotDataset decoded once into RAM, served as Diffusion Policy windows.

LeRobot decodes the PNG images of every window on every ``__getitem__`` (about 40 ms per tandem sample
with 2 cameras x 2 observation steps + a goal image at 84 x 84 px on a 2-core CPU): on a CPU that is 3x
the cost of the training step itself. :class:`FrameCache` reads every column once through LeRobot's own
``hf_dataset`` (images kept as ``uint8``), then builds each window by index arithmetic with LeRobot's
padding rule for ``delta_timestamps``: a query index outside the frame's episode is clamped to the
episode's first/last frame and flagged in ``<key>_is_pad``.

Memory: ``frames x (cameras + goal image) x H x W x 3`` bytes, e.g. 13 k frames at 84 x 84 with two
cameras and a goal image: 0.8 GB. ``tests/unit/test_frame_cache.py`` checks items equal LeRobot's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from tandem.core import dataset_schema as schema

IMAGE_DTYPES = ("image", "video")


class FrameCache:
    """Every frame of ``lerobot_dataset`` in RAM; ``window(i)`` returns LeRobot's item for frame ``i``.

    Args:
        lerobot_dataset: an opened ``lerobot.datasets.lerobot_dataset.LeRobotDataset``.
        deltas: ``{key: [frame offsets]}`` (LeRobot ``delta_timestamps`` x fps, as ints).
        read_batch: frames decoded per read.

    The item has every per-frame column of the dataset but LeRobot's language columns: images ``float32 (3, H,
    W)`` in ``[0, 1]`` (``(T, 3, H, W)`` for windowed keys), vectors as stored (``(T, D)`` when windowed), scalars
    as 0-d tensors, the ``task`` string, and ``<key>_is_pad`` ``bool (T,)`` for each windowed key.

    Raises:
        KeyError: a frame whose episode is missing from the dataset's episode table (a corrupt dataset).
        MemoryError: when the frames do not fit in RAM (use ``dataset.cache=false``).
    """

    def __init__(self, lerobot_dataset: Any, deltas: dict[str, list[int]], read_batch: int = 256):
        hf = lerobot_dataset.hf_dataset
        features = lerobot_dataset.meta.features
        self.deltas = {k: np.asarray(v, np.int64) for k, v in deltas.items()}
        self.image_keys = [k for k in hf.column_names if features.get(k, {}).get("dtype") in IMAGE_DTYPES]
        # LeRobot's language columns are lists of row dicts, not tensors; the executor reads subgoal.task_index
        hf = hf.select_columns([k for k in hf.column_names if k not in schema.LANGUAGE_KEYS])
        n = len(hf)
        parts: dict[str, list[torch.Tensor]] = {k: [] for k in hf.column_names}
        for start in tqdm(range(0, n, read_batch), desc="caching frames", leave=False):
            rows = hf[start:min(start + read_batch, n)]
            for k, vals in rows.items():
                t = torch.stack([torch.as_tensor(v) for v in vals])
                if k in self.image_keys:  # LeRobot gives float [0, 1] from uint8 PNGs: exact round trip
                    t = (t * 255.0).round_().to(torch.uint8)
                parts[k].append(t)
        self.columns = {k: torch.cat(v) for k, v in parts.items()}
        ep = self.columns["episode_index"].numpy()
        eps = lerobot_dataset.meta.episodes
        bounds = {int(e): (int(a), int(b)) for e, a, b in
                  zip(eps["episode_index"], eps["dataset_from_index"], eps["dataset_to_index"])}
        # global 'index' -> row; episode bounds are in global indices
        self.global_index = self.columns["index"].numpy()
        self.row_of = {int(g): r for r, g in enumerate(self.global_index)}
        self.ep_from = np.array([bounds[int(e)][0] for e in ep], np.int64)
        self.ep_to = np.array([bounds[int(e)][1] for e in ep], np.int64)
        tasks = lerobot_dataset.meta.tasks
        self.task_text = {int(i): str(t) for t, i in zip(tasks.index, tasks["task_index"])}

    def __len__(self) -> int:
        return len(self.global_index)

    def _value(self, key: str, rows: np.ndarray | int) -> torch.Tensor:
        v = self.columns[key][rows]
        return v.float().div_(255.0) if key in self.image_keys else v.clone()

    def window(self, row: int) -> dict[str, Any]:
        """LeRobot's ``__getitem__`` for dataset row ``row`` (windows per ``deltas``, padded at episode edges)."""
        g = int(self.global_index[row])
        lo, hi = int(self.ep_from[row]), int(self.ep_to[row])
        item: dict[str, Any] = {}
        for key in self.columns:
            if key in self.deltas:
                q = g + self.deltas[key]
                item[f"{key}_is_pad"] = torch.from_numpy((q < lo) | (q >= hi))
                rows = np.array([self.row_of[int(x)] for x in np.clip(q, lo, hi - 1)])
                item[key] = self._value(key, rows)
            else:
                item[key] = self._value(key, row)
        item["task"] = self.task_text[int(item["task_index"])]
        return item
