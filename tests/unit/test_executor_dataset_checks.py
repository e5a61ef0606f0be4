"""Opening a dataset for training refuses what the closed loop would not reproduce (issue 13, Part 2, items 10-11):
another recording rate, frames off the 1/fps grid (LeRobot's tolerance_s), and images of another size."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from test_executor_policy import batch, make, small_cfg

from executor_vla.data import ExecutorDataset
from executor_vla.dataset_timing import LEROBOT_TOLERANCE_S, timing_problems
from executor_vla.synthetic import make_synthetic_dataset
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def root20(tmp_path_factory):
    root = tmp_path_factory.mktemp("timing") / "ds20"
    make_synthetic_dataset(root, n_episodes=2, subgoals_per_episode=1, frames_per_subgoal=10, image_size=(32, 32))
    return root


def test_lerobot_tolerance_is_the_documented_default():
    import inspect

    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    assert LEROBOT_TOLERANCE_S == inspect.signature(LeRobotDataset.__init__).parameters["tolerance_s"].default == 1e-4


def test_timing_rules():
    ep = np.repeat([0, 1], 10)
    ts = np.concatenate([np.arange(10), np.arange(10)]) / 20.0
    assert timing_problems(20, ts, ep, control_hz=20) == []
    assert timing_problems(20, ts + np.tile([0, 5e-5], 10), ep, control_hz=20) == []  # within 1e-4 s
    (fps,) = timing_problems(29, np.arange(20) / 29.0, ep, control_hz=20)
    assert "29 fps" in fps and "20 Hz" in fps
    late = ts.copy()
    late[9] += 0.03  # the last frame of episode 0 is 0.03 s late
    (p,) = timing_problems(20, late, ep, control_hz=20)
    assert "1 frame(s)" in p and "episode 0 frame 9: 0.0800 s" in p
    jitter = ts.copy()
    jitter[3] += 1.5e-4
    assert "2 frame(s)" in timing_problems(20, jitter, ep, control_hz=20)[0]  # frames 3 and 4 are off the grid


def test_a_29_fps_dataset_is_refused(tmp_path):
    root = tmp_path / "ds29"
    make_synthetic_dataset(root, n_episodes=1, subgoals_per_episode=1, frames_per_subgoal=8, fps=29)
    with pytest.raises(DatasetSchemaError, match=r"recorded at 29 fps but the executor runs at the 20 Hz"):
        ExecutorDataset(root, small_cfg())


def test_a_late_last_timestamp_is_refused(root20, tmp_path):
    root = tmp_path / "late"
    shutil.copytree(root20, root)
    (f,) = sorted((root / "data").rglob("*.parquet"))
    table = pq.read_table(f)
    ts = table.column("timestamp").to_numpy().copy()
    ep = table.column("episode_index").to_numpy()
    last0 = int(np.flatnonzero(ep == 0)[-1])
    ts[last0] += 0.03
    table = table.set_column(table.schema.get_field_index("timestamp"), "timestamp",
                             pa.array(ts, type=table.schema.field("timestamp").type))
    pq.write_table(table, f)
    with pytest.raises(DatasetSchemaError, match=r"episode 0 frame 9: 0\.0800 s after the previous frame"):
        ExecutorDataset(root, small_cfg())
    ExecutorDataset(root20, small_cfg())  # the untouched copy opens


def test_images_of_another_size_are_refused_not_resized(root20):
    with pytest.raises(DatasetSchemaError, match=r"not the executor's 16x16 px.*observation.images.agentview 32x32"):
        ExecutorDataset(root20, small_cfg(image_size=(16, 16)))
    ex = make(image_size=(16, 16))
    b = batch(small_cfg())  # 32 px images
    with pytest.raises(DatasetSchemaError, match=r"observation.images.agentview is \(32, 32\) px"):
        ex.compute_loss(b)
    assert schema.image_key("agentview") in b
