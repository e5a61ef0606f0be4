"""TandemDatasetWriter: LeRobot round trip, schema checks, commits, roll-back after a crash or a full disk.

Small synthetic frames (16x16 images) keep these fast; the real collector is tested in
tests/integration/test_collect.py.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from executor_vla.dataset_writer import (
    JOURNAL_PATH,
    LEROBOT_PRIVATE_WRITER_STATE,
    DatasetWriteError,
    LeRobotInternalsChanged,
    TandemDatasetWriter,
    abandon_lerobot_writer,
    check_frame,
    features_diff,
    read_journal,
)
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError

REPO = Path(__file__).resolve().parents[2]
SIZE = (16, 16)
K = 4


def make_frame(i: int, sg: int, task_index: int, goal: np.ndarray, instruction: str = "stack it all") -> dict:
    rng = np.random.default_rng(i)
    return {
        schema.image_key("agentview"): rng.integers(0, 255, (*SIZE, 3), dtype=np.uint8),
        schema.image_key("wrist"): rng.integers(0, 255, (*SIZE, 3), dtype=np.uint8),
        schema.STATE_KEY: rng.normal(size=8).astype(np.float32),
        schema.ACTION_KEY: rng.uniform(-1, 1, 7).astype(np.float32),
        schema.SUBGOAL_INDEX_KEY: np.array([sg], np.int64),
        schema.SUBGOAL_TASK_INDEX_KEY: np.array([task_index], np.int64),
        schema.GOAL_IMAGE_KEY: goal,
        schema.TRACE_KEY: rng.uniform(0, 15, (K, 2)).astype(np.float32),
        schema.TRACE_MASK_KEY: np.ones(K, np.float32),
        schema.TRACE_3D_KEY: rng.uniform(-1, 1, (schema.TRACE_3D_LEN, 5)).astype(np.float32),
        schema.TRACE_3D_MASK_KEY: np.ones(schema.TRACE_3D_LEN, np.float32),
        schema.PROGRESS_KEY: np.array([0.5], np.float32),
        schema.SUBGOAL_SUCCESS_KEY: np.array([0.0], np.float32),
        schema.TASK_SUCCESS_KEY: np.array([0.0], np.float32),
        "task": instruction,
    }


def writer(root: Path, **kw) -> TandemDatasetWriter:
    return TandemDatasetWriter(root, "tandem/test", image_size=SIZE, trace_len=K, **kw)


def write_episode(w: TandemDatasetWriter, n: int = 6, seed: int = 0, texts=("pick a", "place a")) -> list[dict]:
    frames = []
    for k, text in enumerate(texts):
        ti = w.subgoal_task_index(text)
        goal = np.full((*SIZE, 3), 40 * (k + 1), np.uint8)
        for i in range(n // len(texts)):
            f = make_frame(seed * 100 + len(frames), k, ti, goal)
            f[schema.PROGRESS_KEY] = np.array([(i + 1) / (n // len(texts))], np.float32)
            frames.append({kk: (v.copy() if isinstance(v, np.ndarray) else v) for kk, v in f.items()})
            w.add_frame(f)
    w.save_episode({"seed": seed}, state={"next_seed": seed + 1})
    return frames


def load(root: Path, **kw):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset("tandem/test", root=root, video_backend="pyav", **kw)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("image_threads", [0, 2])
def test_round_trip_through_lerobot(tmp_path, image_threads):
    root = tmp_path / "ds"
    with writer(root, image_threads=image_threads) as w:
        ep0 = write_episode(w, seed=0)
        ep1 = write_episode(w, seed=1, texts=("pick b", "place a"))
    ds = load(root, delta_timestamps={schema.ACTION_KEY: [0.0, 0.05, 0.1]})
    assert ds.num_episodes == 2 and len(ds) == 12 and ds.fps == schema.FPS
    tasks = {int(i): t for t, i in zip(ds.meta.tasks.index, ds.meta.tasks["task_index"])}
    live = ep0 + ep1
    for j, f in enumerate(live):
        item = ds[j]
        for key in (schema.image_key("agentview"), schema.image_key("wrist"), schema.GOAL_IMAGE_KEY):
            got = (item[key].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
            np.testing.assert_array_equal(got, f[key])
        np.testing.assert_array_equal(item[schema.STATE_KEY].numpy(), f[schema.STATE_KEY])
        np.testing.assert_array_equal(item[schema.ACTION_KEY].numpy()[0], f[schema.ACTION_KEY])
        np.testing.assert_array_equal(item[schema.TRACE_KEY].numpy(), f[schema.TRACE_KEY])
        assert int(item[schema.SUBGOAL_INDEX_KEY]) == int(f[schema.SUBGOAL_INDEX_KEY][0])
        assert item["task"] == "stack it all"
        assert tasks[int(item[schema.SUBGOAL_TASK_INDEX_KEY])] in ("pick a", "place a", "pick b")
    assert tasks[int(ds[6][schema.SUBGOAL_TASK_INDEX_KEY])] == "pick b"
    assert item[schema.ACTION_KEY].shape == (3, 7)  # delta_timestamps window
    j = read_journal(root)
    assert j["total_episodes"] == 2 and [e["seed"] for e in j["episodes"]] == [0, 1]
    assert j["state"]["next_seed"] == 2
    # each commit's LeRobot session wrote its own (closed) parquet files
    assert len(list((root / "data").rglob("*.parquet"))) == 2
    assert not (root / "images").exists()


def test_resume_appends_and_rejects_other_schema_without_touching_files(tmp_path):
    root = tmp_path / "ds"
    with writer(root) as w:
        write_episode(w)
    with writer(root) as w:  # auto mode: same schema -> append
        assert w.num_episodes == 1 and w.state["next_seed"] == 1 and w.recovered == []
        write_episode(w, seed=1)
    assert load(root).num_episodes == 2
    before = tree(root)
    with pytest.raises(DatasetSchemaError, match=r"different schema(.|\n)*subgoal.trace"):
        TandemDatasetWriter(root, "tandem/test", image_size=SIZE, trace_len=K + 1)
    with pytest.raises(DatasetSchemaError, match="observation.images.agentview"):
        TandemDatasetWriter(root, "tandem/test", image_size=(32, 32), trace_len=K)
    with pytest.raises(DatasetSchemaError, match="fps"):
        TandemDatasetWriter(root, "tandem/test", image_size=SIZE, trace_len=K, fps=10)
    with pytest.raises(ConfigError, match="already exists"):
        writer(root, mode="create")
    assert tree(root) == before


def test_the_label_camera_is_part_of_the_schema():
    """labels.keypoints_px records the camera its pixels are in; a dataset labelled in another camera's pixels is
    another schema, and one written before the field existed reads as agentview's."""
    vocab = (("red",), ("grasped(red)",))
    agent = schema.dataset_features(labels=vocab)
    work = schema.dataset_features(labels=vocab, label_camera="workcell")
    assert schema.label_camera_of(agent) == "agentview" and schema.label_camera_of(work) == "workcell"
    assert schema.label_camera_of(schema.dataset_features()) is None
    assert any("'workcell' pixels on disk, 'agentview' expected" in d for d in features_diff(work, agent))
    old = {k: {f: v for f, v in feat.items() if f != "info"} for k, feat in agent.items()}
    assert schema.label_camera_of(old) == "agentview" and features_diff(old, agent) == []


def test_not_a_dataset_and_bad_frames(tmp_path):
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("hi")
    with pytest.raises(DatasetSchemaError, match="not a LeRobot dataset"):
        writer(junk)
    with pytest.raises(DatasetSchemaError, match="does not exist"):
        writer(tmp_path / "nope", mode="resume")
    w = writer(tmp_path / "ds")
    ti = w.subgoal_task_index("pick a")
    f = make_frame(0, 0, ti, np.zeros((*SIZE, 3), np.uint8))
    bad = dict(f, **{schema.STATE_KEY: np.zeros(8, np.float64)})
    with pytest.raises(DatasetSchemaError, match=r"observation.state.*float32"):
        w.add_frame(bad)
    missing = {k: v for k, v in f.items() if k != schema.TRACE_KEY}
    with pytest.raises(DatasetSchemaError, match="missing key 'subgoal.trace'"):
        w.add_frame(missing)
    with pytest.raises(DatasetSchemaError, match="NaN"):
        w.add_frame(dict(f, **{schema.ACTION_KEY: np.full(7, np.nan, np.float32)}))
    with pytest.raises(DatasetSchemaError, match="no frames"):
        w.save_episode()
    check_frame(f, w.features)
    w.close()


_CRASH = textwrap.dedent("""
    import os
    from unit.test_dataset_writer import writer, write_episode
    from executor_vla.dataset_writer import TandemDatasetWriter
    from pathlib import Path
    w = writer(Path({root!r}))
    write_episode(w, seed=0)                      # committed
    if {where!r} == "commit":
        TandemDatasetWriter._commit = lambda self: os._exit(9)   # killed after LeRobot saved, before the commit
        write_episode(w, seed=1)
    else:                                            # killed while frames of episode 1 were being staged
        import numpy as np
        from unit.test_dataset_writer import make_frame
        ti = w.subgoal_task_index("a brand new subgoal")
        w.add_frame(make_frame(1, 0, ti, np.zeros((16, 16, 3), np.uint8)))
        os._exit(9)
""")


@pytest.mark.parametrize("where", ["commit", "staging"])
def test_killed_collection_keeps_committed_episodes_and_resumes(tmp_path, where):
    from executor_vla.dataset_inspect import validate_dataset

    root = tmp_path / "ds"
    code = _CRASH.format(root=str(root), where=where)
    path = os.pathsep.join([str(REPO / "tests"), str(REPO), os.environ.get("PYTHONPATH", "")])  # as pytest's pythonpath
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": path})
    assert proc.returncode == 9, proc.stderr[-3000:]
    if where == "commit":  # info.json already counts episode 1, whose parquet file has no footer
        with pytest.raises(DatasetSchemaError, match="failed validation"):
            validate_dataset(root)
    w = writer(root)
    assert w.num_episodes == 1 and w.recovered, "the interrupted write should have been rolled back"
    w.close()
    validate_dataset(root)
    ds = load(root)
    assert ds.num_episodes == 1 and len(ds) == 6
    assert "a brand new subgoal" not in set(ds.meta.tasks.index)
    with writer(root) as w:
        write_episode(w, seed=1)
    assert load(root).num_episodes == 2
    validate_dataset(root)


def test_disk_full_rolls_back_to_last_commit(tmp_path, monkeypatch):
    import PIL.Image

    from executor_vla.dataset_inspect import validate_dataset

    root = tmp_path / "ds"
    w = writer(root)
    write_episode(w, seed=0)
    real_save = PIL.Image.Image.save
    calls = {"n": 0}

    def full_disk(self, *a, **k):
        calls["n"] += 1
        if calls["n"] > 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(self, *a, **k)

    monkeypatch.setattr(PIL.Image.Image, "save", full_disk)
    with pytest.raises(DatasetWriteError, match=r"No space left(.|\n)*1 episodes, intact"):
        write_episode(w, seed=1)
    monkeypatch.undo()
    validate_dataset(root)
    assert load(root).num_episodes == 1
    w.close()
    # a write error inside LeRobot's save_episode (after its parquet writer opened) is rolled back too
    import lerobot.datasets.dataset_writer as ldw

    real = ldw.DatasetWriter._save_episode_data

    def half_written(self, buf):
        real(self, buf)
        raise OSError(errno.ENOSPC, "No space left on device")

    w = writer(root)
    monkeypatch.setattr(ldw.DatasetWriter, "_save_episode_data", half_written)
    with pytest.raises(DatasetWriteError, match="saving episode 1"):
        write_episode(w, seed=1)
    monkeypatch.undo()
    validate_dataset(root)
    with writer(root) as w2:
        assert w2.num_episodes == 1
        write_episode(w2, seed=1)
    assert load(root).num_episodes == 2


def test_checkpoint_every_batches_commits(tmp_path):
    root = tmp_path / "ds"
    with writer(root, checkpoint_every=3) as w:
        for s in range(4):
            write_episode(w, seed=s)
        assert read_journal(root)["total_episodes"] == 3  # the 4th is saved, committed on close
    assert read_journal(root)["total_episodes"] == 4
    assert len(list((root / "data").rglob("*.parquet"))) == 2
    assert (root / JOURNAL_PATH).exists()
    assert load(root).num_episodes == 4


def test_lerobot_private_writer_state_exists_and_abandoning_writes_nothing_more(tmp_path):
    """The one place that uses LeRobot's private writer state (abandon_lerobot_writer): if LeRobot renames or drops
    it, this fails here, loudly, instead of a failed collection writing files after its roll-back."""
    import gc
    from types import SimpleNamespace

    root = tmp_path / "ds"
    w = writer(root, checkpoint_every=5)
    write_episode(w, seed=0)  # saved but not committed: LeRobot holds open parquet writers and buffered metadata
    ds = w._ds
    owners = {"dataset": ds, "writer": ds.writer, "meta": ds.meta}
    for owner, attrs in LEROBOT_PRIVATE_WRITER_STATE.items():
        for attr in attrs:
            assert hasattr(owners[owner], attr), f"LeRobot has no {owner}.{attr} any more"
    assert len(ds.meta._metadata_buffer) == 1  # something would be written by finalize()/__del__
    abandon_lerobot_writer(ds)
    after = tree(root)
    ds.finalize()  # public exits are no-ops now
    w._ds = None
    del ds, owners
    gc.collect()  # LeRobot's __del__ safety nets
    assert tree(root) == after
    with pytest.raises(LeRobotInternalsChanged, match=r"dataset._is_finalized"):
        abandon_lerobot_writer(SimpleNamespace(writer=None, meta=None))


class _InterruptedWait:
    """A staged PNG job whose ``result()`` is interrupted: what SIGTERM does to the thread that waits on it."""

    def result(self):
        raise KeyboardInterrupt("SIGTERM")


def test_an_interrupt_while_discarding_staged_images_propagates(tmp_path):
    with writer(tmp_path / "ds", image_threads=2) as w:
        w.add_frame(make_frame(0, 0, w.subgoal_task_index("pick a"), np.zeros((*SIZE, 3), np.uint8)))
        w._png_jobs.append(_InterruptedWait())
        with pytest.raises(KeyboardInterrupt):
            w.discard_episode()  # a failed episode's discard must not swallow the collection's stop
        assert w.frames_in_episode == 0


def test_a_failed_png_job_is_dropped_quietly_on_discard(tmp_path):
    from concurrent.futures import Future

    failed: Future = Future()
    failed.set_exception(OSError(errno.ENOSPC, "No space left on device"))
    with writer(tmp_path / "ds", image_threads=2) as w:
        w.add_frame(make_frame(0, 0, w.subgoal_task_index("pick a"), np.zeros((*SIZE, 3), np.uint8)))
        w._png_jobs.append(failed)
        w.discard_episode()  # the discarded episode's own write error is of no further interest
        assert w.frames_in_episode == 0
