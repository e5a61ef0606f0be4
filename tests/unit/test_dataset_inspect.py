"""dataset_inspect: validation fails loudly on malformed / mixed-schema datasets; stats; contact sheet."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_dataset_writer import SIZE, K, make_frame, write_episode, writer

from executor_vla.dataset_inspect import contact_sheet, dataset_stats, format_stats, validate_dataset
from executor_vla.dataset_writer import TandemDatasetWriter
from tandem.core import dataset_schema as schema
from tandem.core.errors import DatasetSchemaError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("inspect") / "good"
    with writer(root) as w:
        write_episode(w, seed=0)
        write_episode(w, seed=1, texts=("pick b", "place b"))
    return root


def test_valid_dataset_stats_and_sheet(good, tmp_path):
    t = validate_dataset(good)
    st = dataset_stats(t)
    assert st["episodes"] == 2 and st["frames"] == 12 and st["attempts"] == 4
    assert set(st["per_subgoal"]) == {"pick a", "place a", "pick b", "place b"}
    assert st["per_subgoal"]["pick a"]["frames_mean"] == 3.0
    assert st["failed_attempts"] == 4  # the synthetic frames never set subgoal.success
    assert len(st["action"]["mean"]) == schema.ACTION_DIM
    assert "pick a" in format_stats(st)
    png = contact_sheet(t, tmp_path / "sheet.png", max_rows=3)
    from PIL import Image

    im = np.asarray(Image.open(png))
    assert im.shape[0] > 3 * SIZE[0] * 2 and im.shape[2] == 3


def test_mixed_schema_fails_loudly(good, tmp_path):
    other = tmp_path / "other"  # same tandem features but K + 2 trace points
    with TandemDatasetWriter(other, "tandem/test", image_size=SIZE, trace_len=K + 2) as w:
        f = make_frame(0, 0, w.subgoal_task_index("x"), np.zeros((*SIZE, 3), np.uint8))
        f[schema.TRACE_KEY] = np.zeros((K + 2, 2), np.float32)
        f[schema.TRACE_MASK_KEY] = np.ones(K + 2, np.float32)
        f[schema.PROGRESS_KEY] = np.array([1.0], np.float32)
        w.add_frame(f)
        w.save_episode()
    mixed = tmp_path / "mixed"
    shutil.copytree(good, mixed)
    stray = next((other / "data").rglob("*.parquet"))
    shutil.copy(stray, mixed / "data" / "chunk-000" / "file-009.parquet")
    with pytest.raises(DatasetSchemaError, match=r"mixed schema(.|\n)*subgoal.trace"):
        validate_dataset(mixed)


def test_malformed_datasets_fail_loudly(good, tmp_path):
    truncated = tmp_path / "truncated"
    shutil.copytree(good, truncated)
    f = next((truncated / "data").rglob("*.parquet"))
    f.write_bytes(f.read_bytes()[:200])
    with pytest.raises(DatasetSchemaError, match="unreadable parquet"):
        validate_dataset(truncated)

    bad_info = tmp_path / "bad_info"
    shutil.copytree(good, bad_info)
    import json

    info = json.loads((bad_info / "meta" / "info.json").read_text())
    info["total_frames"] = 99
    info["features"][schema.STATE_KEY]["shape"] = [9]
    (bad_info / "meta" / "info.json").write_text(json.dumps(info))
    with pytest.raises(DatasetSchemaError) as e:
        validate_dataset(bad_info, open_with_lerobot=False)
    assert "observation.state" in str(e.value)

    with pytest.raises(DatasetSchemaError, match="not a LeRobot dataset"):
        validate_dataset(tmp_path)


def test_cli_inspect_exit_codes(good, tmp_path):
    sheet = tmp_path / "s.png"
    ok = subprocess.run([sys.executable, "-m", "tandem.cli.dataset", "inspect", str(good), "--sheet", str(sheet),
                         "--no-lerobot"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "2 episodes, 12 frames" in ok.stdout and sheet.exists()
    broken = tmp_path / "broken"
    shutil.copytree(good, broken)
    next((broken / "data").rglob("*.parquet")).write_bytes(b"PAR1 not really")
    bad = subprocess.run([sys.executable, "-m", "tandem.cli.dataset", "inspect", str(broken), "--no-sheet"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "failed validation" in bad.stderr


def test_a_dataset_without_agentview_is_drawn_from_its_own_camera(tmp_path):
    # pick_place_bins' state-model datasets record only the task's fixed `workcell` camera (64 x 128 there)
    root = tmp_path / "workcell_only"
    with writer(root, cameras=("workcell",), goal_image=False) as w:
        ti = w.subgoal_task_index("pick a")
        for i in range(4):
            f = make_frame(i, 0, ti, np.zeros((*SIZE, 3), np.uint8))
            f[schema.image_key("workcell")] = np.full((*SIZE, 3), 200, np.uint8)
            for k in (schema.image_key("agentview"), schema.image_key("wrist"), schema.GOAL_IMAGE_KEY):
                f.pop(k)
            f[schema.PROGRESS_KEY] = np.array([(i + 1) / 4], np.float32)
            w.add_frame(f)
        w.save_episode({"seed": 0}, state={"next_seed": 1})
    from PIL import Image

    im = np.asarray(Image.open(contact_sheet(validate_dataset(root), tmp_path / "sheet.png", scale=1)))
    first = im[24:24 + SIZE[0], :SIZE[1]]
    assert (first == 200).all()  # the workcell frame, with no agentview trace drawn over it
    assert im.shape[0] == 24 + SIZE[0] + 4
