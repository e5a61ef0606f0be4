"""Merging dataset shards: every frame keeps its subgoal text, the journal's seeds and records follow their episodes,
the collector resumes into the merge, and the shards that must not be merged are refused before anything is written.

Small synthetic frames (16x16 images, tests/unit/test_dataset_writer.py's helpers).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_dataset_writer import SIZE, K, load, make_frame

from executor_vla.dataset_merge import check_shards, merge_datasets
from executor_vla.dataset_writer import TandemDatasetWriter, episode_seeds, read_journal
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError

VOCAB = (("cube_a", "cube_b"), ("grasped(cube_a)", "on(cube_a,cube_b)"))


def writer(root: Path, label_camera: str = "agentview", images: bool = True, **kw) -> TandemDatasetWriter:
    more = {} if images else {"cameras": (), "goal_image": False}
    return TandemDatasetWriter(root, "tandem/test", image_size=SIZE, trace_len=K, labels=VOCAB,
                               label_camera=label_camera, **more, **kw)


def episode(w: TandemDatasetWriter, seed: int, texts: tuple[str, ...]) -> None:
    n_kp = len(VOCAB[0]) * schema.KEYPOINTS_PER_OBJECT
    for k, text in enumerate(texts):
        ti = w.subgoal_task_index(text)
        for i in range(3):
            f = make_frame(seed * 100 + 3 * k + i, k, ti, np.full((*SIZE, 3), 40 * (k + 1), np.uint8))
            f[schema.LABEL_PREDICATES_KEY] = np.array([k, seed % 2], np.float32)
            f[schema.LABEL_KEYPOINTS_3D_KEY] = np.full(n_kp * 3, seed, np.float32)
            f[schema.LABEL_KEYPOINTS_PX_KEY] = np.full(n_kp * 2, k, np.float32)
            w.add_frame({key: v for key, v in f.items() if key in w.features or key == "task"})
    attempts = [{"text": t, "task_index": w.subgoal_task_index(t), "success": True} for t in texts]
    w.save_episode({"seed": seed, "task": "stack_two", "success": True, "attempts": attempts},
                   state={"next_seed": seed + 1})


def shard(root: Path, seeds: list[int], texts: tuple[str, ...], **kw) -> Path:
    w = writer(root, checkpoint_every=1, **kw)
    for s in seeds:
        episode(w, s, texts)
    w.close()
    return root


def frame_texts(root: Path) -> list[tuple[int, int, str]]:
    """(episode, frame, subgoal text) of every frame, read back with LeRobot."""
    ds = load(root)
    texts = {int(i): t for t, i in zip(ds.meta.tasks.index, ds.meta.tasks["task_index"])}
    return [(int(it["episode_index"]), int(it["frame_index"]), texts[int(it[schema.SUBGOAL_TASK_INDEX_KEY])])
            for it in (ds[i] for i in range(len(ds)))]


def test_merged_frames_keep_their_subgoal_texts_and_the_journal_its_seeds(tmp_path):
    # the shards register their texts in different orders: shard b's index 0 is "place b", shard a's is "pick a"
    a = shard(tmp_path / "a", [0, 1], ("pick a", "place a"))
    b = shard(tmp_path / "b", [5, 6, 7], ("place b", "pick a", "go home"))
    texts_a, texts_b = frame_texts(a), frame_texts(b)
    report = merge_datasets([a, b], tmp_path / "m", repo_id="tandem/test")
    assert (report.episodes, report.frames) == (5, 2 * 6 + 3 * 9)
    assert report.shard_episodes == [(str(a.resolve()), 2, 0), (str(b.resolve()), 3, 2)]
    assert frame_texts(tmp_path / "m") == texts_a + [(e + 2, f, t) for e, f, t in texts_b]
    ds, da, db = load(tmp_path / "m"), load(a), load(b)
    for i, j in ((0, (da, 0)), (len(ds) - 1, (db, len(db) - 1))):  # images, labels and actions are the shards'
        for key in (schema.image_key("agentview"), schema.LABEL_KEYPOINTS_3D_KEY, schema.ACTION_KEY):
            assert np.array_equal(ds[i][key].numpy(), j[0][j[1]][key].numpy()), key
    j = read_journal(tmp_path / "m")
    assert [(r["episode_index"], r["seed"], r["shard"], r["shard_episode_index"]) for r in j["episodes"]] == \
        [(0, 0, str(a.resolve()), 0), (1, 1, str(a.resolve()), 1), (2, 5, str(b.resolve()), 0),
         (3, 6, str(b.resolve()), 1), (4, 7, str(b.resolve()), 2)]
    tasks = {t: int(i) for t, i in zip(ds.meta.tasks.index, ds.meta.tasks["task_index"])}
    assert all(att["task_index"] == tasks[att["text"]] for r in j["episodes"] for att in r["attempts"])
    assert j["state"]["next_seed"] == 8 and j["state"]["merged_from"] == [str(a.resolve()), str(b.resolve())]
    assert episode_seeds(tmp_path / "m") == {"stack_two": [0, 1, 5, 6, 7]}
    info = json.loads((tmp_path / "m" / "meta" / "info.json").read_text())
    assert info["features"][schema.LABEL_KEYPOINTS_PX_KEY]["info"]["camera"] == "agentview"
    # the shards are untouched, and the collector resumes into the merge at the next seed
    assert frame_texts(b) == texts_b
    w = writer(tmp_path / "m", mode="resume")
    assert w.num_episodes == 5 and w.state["next_seed"] == 8
    episode(w, 8, ("go home",))
    w.close()
    assert frame_texts(tmp_path / "m")[-1] == (5, 2, "go home")


def test_low_dimensional_shards_merge_and_a_merge_merges_again(tmp_path):
    a = shard(tmp_path / "a", [0, 1], ("pick a", "place a"), images=False)
    b = shard(tmp_path / "b", [2], ("go home", "pick a"), images=False)
    c = shard(tmp_path / "c", [3], ("place a",), images=False)
    merge_datasets([a, b], tmp_path / "ab")
    merge_datasets([tmp_path / "ab", c], tmp_path / "abc")
    records = read_journal(tmp_path / "abc")["episodes"]  # where each episode was collected survives a second merge
    assert [(r["shard"], r["shard_episode_index"], r.get("merged_via")) for r in records] == [
        (str(a.resolve()), 0, [str((tmp_path / "ab").resolve())]), (str(a.resolve()), 1, [str((tmp_path / "ab").resolve())]),
        (str(b.resolve()), 0, [str((tmp_path / "ab").resolve())]), (str(c.resolve()), 0, None)]
    assert frame_texts(tmp_path / "abc") == frame_texts(a) + [(e + 2, f, t) for e, f, t in frame_texts(b)] + \
        [(e + 3, f, t) for e, f, t in frame_texts(c)]
    assert episode_seeds(tmp_path / "abc") == {"stack_two": [0, 1, 2, 3]}


def test_refused_shards_leave_nothing_behind(tmp_path):
    a = shard(tmp_path / "a", [0, 1], ("pick a",))
    with pytest.raises(DatasetSchemaError, match="stack_two seed 1 in"):
        merge_datasets([a, shard(tmp_path / "b", [1, 2], ("pick a",))], tmp_path / "m")
    with pytest.raises(DatasetSchemaError, match="'workcell' pixels in this shard, 'agentview' in the first shard"):
        merge_datasets([a, shard(tmp_path / "c", [3], ("pick a",), label_camera="workcell")], tmp_path / "m")
    with pytest.raises(ConfigError, match="named twice"):
        merge_datasets([a, tmp_path / "a"], tmp_path / "m")
    with pytest.raises(ConfigError, match="two or more"):
        merge_datasets([a], tmp_path / "m")
    with pytest.raises(DatasetSchemaError, match="nothing does not exist"):
        merge_datasets([a, tmp_path / "nothing"], tmp_path / "m")
    (tmp_path / "plain").mkdir()
    with pytest.raises(DatasetSchemaError, match="info.json"):
        merge_datasets([a, tmp_path / "plain"], tmp_path / "m")
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.merging").exists()
    d = shard(tmp_path / "d", [9], ("pick a",))
    (tmp_path / "m.merging").mkdir()  # another merge's work (or a user's directory) is never deleted
    (tmp_path / "m.merging" / "notes.txt").write_text("keep")
    with pytest.raises(ConfigError, match="another merge"):
        merge_datasets([a, d], tmp_path / "m")
    assert (tmp_path / "m.merging" / "notes.txt").read_text() == "keep"
    (tmp_path / "m").mkdir()
    with pytest.raises(ConfigError, match="already exists"):
        merge_datasets([a, d], tmp_path / "m")


def test_an_unreadable_or_running_shard_is_refused(tmp_path):
    a = shard(tmp_path / "a", [0], ("pick a",))
    b = shard(tmp_path / "b", [3], ("pick a",))
    committed = sorted((b / "data").rglob("*.parquet"))[0]
    shutil.copyfile(committed, committed.with_name("file-999.parquet"))  # what a running collection writes next
    with pytest.raises(DatasetSchemaError, match="not at its last commit .*uncommitted data/chunk-000/file-999"):
        merge_datasets([a, b], tmp_path / "m")
    c = shard(tmp_path / "c", [4], ("pick a",))
    data = sorted((c / "data").rglob("*.parquet"))[0]
    data.write_bytes(data.read_bytes()[:100])  # a committed file damaged on disk
    with pytest.raises(DatasetSchemaError, match=r"c: cannot read data/chunk-000/file-000.parquet"):
        check_shards([a, c])  # found by the checks, before any shard is copied
    with pytest.raises(DatasetSchemaError, match=r"c: cannot read data/chunk-000/file-000.parquet"):
        merge_datasets([a, c], tmp_path / "m")
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.merging").exists()


def test_cli_merges_and_refuses_with_exit_status_2(tmp_path, capsys):
    from tandem.cli.dataset import main

    a = shard(tmp_path / "a", [0], ("pick a",))
    b = shard(tmp_path / "b", [1], ("place a",))
    args = ["merge", str(tmp_path / "m"), str(a), str(b)]
    main(args)
    assert "2 episodes, 6 frames; distinct seeds stack_two: 2" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main(args)
    assert refused.value.code == 2 and "already exists" in capsys.readouterr().err


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_first_shard_is_copied_from_its_last_commit_and_left_as_it_was(tmp_path, monkeypatch):
    a = shard(tmp_path / "a", [0, 1], ("pick a", "place a"))
    b = shard(tmp_path / "b", [2], ("place a",))
    (a / "images" / "stale").mkdir(parents=True)  # a killed episode's staging folder, and a user's notes
    (a / "images" / "stale" / "frame.png").write_bytes(b"png")
    (a / "notes.txt").write_text("mine")
    before = _tree(a)
    merge_datasets([a, b], tmp_path / "m", repo_id="tandem/test")
    assert _tree(a) == before  # the shard is untouched
    assert not (tmp_path / "m" / "images").exists() and not (tmp_path / "m" / "notes.txt").exists()
    merged = _tree(tmp_path / "m")
    for name in read_journal(a)["files"]:  # the first shard's committed parquet files are copied byte for byte
        assert merged[name] == before[name], name
    assert frame_texts(tmp_path / "m")[:12] == frame_texts(a)

    import executor_vla.dataset_merge as dm

    def full_disk(src, dst, *args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dm.shutil, "copyfile", full_disk)
    with pytest.raises(dm.DatasetWriteError, match=r"copying .*a into .*m2\.merging: \[Errno 28\]"):
        merge_datasets([a, b], tmp_path / "m2")
    assert not (tmp_path / "m2").exists() and not (tmp_path / "m2.merging").exists()


def test_outputs_inside_a_shard_files_as_shards_and_empty_shards(tmp_path, capsys, monkeypatch):
    """Found by a new user's trial: a merge written inside a shard's data/ (which a collection resuming there would
    delete), a shard given as a file (a traceback), an empty later shard (a traceback)."""
    a = shard(tmp_path / "a", [0], ("pick a",))
    b = shard(tmp_path / "b", [1], ("pick a",))
    for out in (a / "data" / "chunk-000" / "m", a / "sub"):  # inside a shard (one that holds a shard exists)
        with pytest.raises(ConfigError, match="lies inside shard"):
            merge_datasets([a, b], out)
    assert not (a / "sub").exists() and not (a / "data" / "chunk-000" / "m.merging").exists()
    with pytest.raises(DatasetSchemaError, match="info.json is not a directory"):
        merge_datasets([a, a / "meta" / "info.json"], tmp_path / "m")
    empty = writer(tmp_path / "empty")
    empty.close()
    report = merge_datasets([a, tmp_path / "empty", b], tmp_path / "m")
    assert report.episodes == 2 and report.shard_episodes[1][1] == 0

    from tandem.cli import dataset as cli

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt("SIGTERM")

    monkeypatch.setattr("executor_vla.dataset_merge.merge_datasets", interrupted)
    monkeypatch.setattr("tandem.cli.dataset.stop_on_signals", lambda: None)  # keep pytest's own signal handlers
    with pytest.raises(SystemExit) as info:
        cli.main(["merge", str(tmp_path / "m3"), str(a), str(b)])
    assert info.value.code == 130 and "interrupted: nothing was written" in capsys.readouterr().err
