"""Merge tandem datasets collected in shards (e.g. one ``tandem-collect`` per core) into one LeRobotDataset v3.

The files of the first shard's last commit are copied as they are (a complete committed dataset; its parquet
footers and row counts are checked, its frames are not read), and every episode of the later shards is written
after them, in order, through :class:`~executor_vla.dataset_writer.TandemDatasetWriter` resuming the copy as
``tandem-collect`` resumes a collection (LeRobot's own recording API, crash-safe commits, every frame checked
against the schema). So the merged dataset is what one collection would have written: LeRobot's metadata
(episodes, tasks, statistics) built by LeRobot, the first shard's tasks table kept (with any subgoal text that only
its discarded episodes registered) and each later frame's subgoal text registered again (``subgoal.task_index`` is
an index into the tasks table, which each shard numbers in its own order), and the collector's journal continued:
per-episode records with their shard and episode there (``shard``, ``shard_episode_index``), attempts' ``task_index``
renumbered, and ``next_seed`` the largest of the shards', so that ``tandem-collect`` resumes into it and a checkpoint
trained on it records its seeds.

Not LeRobot's ``aggregate_datasets`` (0.6.1), which copies parquet files without reading frames: it remaps only
``task_index`` (a later shard's frames would name other subgoal texts), fails on datasets without images (pandas
cannot write the tandem array features back: ``ArrowTypeError ... array[float32]``), and writes episode metadata
that points at metadata files that do not exist when a shard has several (every committed tandem dataset), so
its output cannot be merged again. Writing a later shard's frame again costs reading and writing it (PNG images
decoded and encoded again): 0.65 ms a low-dimensional frame on one core here (37,815 nut_assembly frames in 25 s,
with the writer's batched image embedding; 8.5 ms a frame with LeRobot's own), about 2.5 ms an 84-px image frame;
the first shard's frames cost a file copy, so put the largest shard first (pick_place_bins' 400 image episodes,
336,283 frames, 203,680 of them in the first shard: 5 min 47 s).

Checked before anything is written: every shard is a complete ``tandem-collect`` dataset (no collection running in
it), the shards share one schema (features, the labels' camera, fps) and no seed of a task is in two shards (the
same demonstration twice). A shard that cannot be read is named in the error.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from executor_vla.dataset_writer import (
    JOURNAL_FORMAT,
    JOURNAL_PATH,
    SNAPSHOT_DIR,
    SNAPSHOT_FILES,
    DatasetWriteError,
    features_diff,
    read_info,
    read_journal,
    uncommitted_changes,
)
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError


@dataclass
class MergeReport:
    """What :func:`merge_datasets` wrote.

    Attributes:
        out: the merged dataset's root.
        episodes: episodes in it (the shards' in order).
        frames: frames in it.
        shard_episodes: ``[(shard root, episodes, first merged episode index)]``.
        seeds: ``{task: number of distinct seeds}`` from the journals.
    """

    out: Path
    episodes: int
    frames: int
    shard_episodes: list[tuple[str, int, int]] = field(default_factory=list)
    seeds: dict[str, int] = field(default_factory=dict)


def check_shards(shards: Sequence[Path]) -> list[dict[str, Any]]:
    """Check that ``shards`` can be merged; return their journals.

    Raises:
        DatasetSchemaError: a shard does not exist or is not a directory, is not a tandem dataset (no
            ``meta/info.json`` or no ``tandem-collect`` journal), has uncommitted files (a collection is running in
            it, or was killed: rerun ``tandem-collect`` on it to resume or roll back), differs from the first
            shard's features or fps (every difference named, and the tasks where they differ), or shares a task's
            seed with another shard.
        ConfigError: fewer than two shards, or one named twice.
    """
    if len(shards) < 2:
        raise ConfigError(f"merge needs two or more shards, got {len(shards)}")
    resolved = [p.resolve() for p in shards]
    if len(set(resolved)) != len(resolved):
        raise ConfigError(f"a shard is named twice: {[str(p) for p in shards]}")
    infos, journals = [], []
    for p in shards:
        if not p.exists():
            raise DatasetSchemaError(f"shard {p} does not exist")
        if not p.is_dir():
            raise DatasetSchemaError(f"shard {p} is not a directory (give the dataset's root)")
        infos.append(read_info(p))
        j = read_journal(p)
        if j is None:
            raise DatasetSchemaError(f"{p}: no {JOURNAL_FORMAT} journal (meta/tandem_collect.json): not written by "
                                     "tandem-collect, so its seeds are unknown and cannot be checked for repeats")
        problems = uncommitted_changes(p)
        if problems:
            raise DatasetSchemaError(f"{p} is not at its last commit ({'; '.join(problems[:4])}): a collection is "
                                     "running in it or was killed; wait for it, or rerun tandem-collect on it to "
                                     "resume (which rolls it back to the commit)")
        _check_readable(p, infos[-1])
        journals.append(j)
    tasks = [sorted({str(r.get("task")) for r in j.get("episodes", []) if r.get("task") is not None}) for j in journals]
    first = infos[0]
    for p, info, t in zip(shards[1:], infos[1:], tasks[1:]):
        diff = features_diff(info.get("features", {}), first.get("features", {}),
                             sides=("in this shard", "in the first shard"))
        if int(info.get("fps", -1)) != int(first.get("fps", -1)):
            diff.append(f"fps {info.get('fps')} != {first.get('fps')}")
        if diff:
            why = (f"it holds {', '.join(t)}, {shards[0]} holds {', '.join(tasks[0])} (shards of one schema only); "
                   if t and tasks[0] and t != tasks[0] else "")
            raise DatasetSchemaError(f"{p} differs from {shards[0]}: {why}" + "; ".join(diff))
    owner: dict[tuple[str, int], Path] = {}
    repeats: list[str] = []
    for p, j in zip(shards, journals):
        for r in j.get("episodes", []):
            if r.get("seed") is None:
                continue
            key = (str(r.get("task")), int(r["seed"]))
            if key in owner and owner[key] != p:
                repeats.append(f"{key[0]} seed {key[1]} in {owner[key]} and {p}")
            owner.setdefault(key, p)
    if repeats:
        raise DatasetSchemaError(f"{len(repeats)} seed(s) in two shards (the same demonstration twice): "
                                 + "; ".join(repeats[:5]) + (" ..." if len(repeats) > 5 else ""))
    return journals


def _check_readable(shard: Path, info: dict[str, Any]) -> None:
    """Read the footer of every parquet file of ``shard`` (data and episode metadata) and count its frames, so that
    a damaged file is named before anything is written rather than after the earlier shards were copied.

    Raises:
        DatasetSchemaError: a file whose footer cannot be read (named), or data files whose rows differ from
            ``info``'s ``total_frames``.
    """
    import pyarrow.parquet as pq

    rows = 0
    for f in sorted(shard.glob("data/*/*.parquet")) + sorted(shard.glob("meta/episodes/*/*.parquet")):
        try:
            n = pq.read_metadata(f).num_rows
        except Exception as e:  # noqa: BLE001 - a corrupt file: name it
            raise DatasetSchemaError(f"{shard}: cannot read {f.relative_to(shard)} ({type(e).__name__}: {e})") from e
        rows += n if f.parts[-3] == "data" else 0
    total = info.get("total_frames")
    if isinstance(total, int) and rows != total:
        raise DatasetSchemaError(f"{shard}: its data files hold {rows} frames, its meta/info.json says {total}")


def merge_datasets(shards: Sequence[str | Path], out: str | Path, repo_id: str = "tandem/dataset",
                   checkpoint_every: int = 50) -> MergeReport:
    """Merge tandem dataset shards into a new dataset at ``out`` (the shards are not modified).

    The merged episodes are the shards' in the given order (shard k's episode e becomes e plus the episodes of the
    shards before it). It is written under ``<out>.merging`` and renamed to ``out`` when complete, so a failed merge
    leaves no half dataset at ``out``.

    Args:
        shards: two or more ``tandem-collect`` datasets of one schema.
        out: the new dataset's root; must not exist.
        repo_id: LeRobot repo id the writer opens the merged dataset with (offline; any string).
        checkpoint_every: the writer's commits (episodes between them).

    Returns:
        :class:`MergeReport`.

    Raises:
        ConfigError: ``out`` or ``<out>.merging`` exists (another merge running, or one killed: remove it), ``out``
            lies inside a shard, a shard is named twice, or fewer than two are given.
        DatasetSchemaError: see :func:`check_shards`; a shard whose files cannot be read (named).
        DatasetWriteError: the first shard's files cannot be copied, or a frame cannot be written (named).
    """
    from executor_vla.dataset_writer import TandemDatasetWriter

    shards = [Path(s) for s in shards]
    out = Path(out)
    if out.exists():
        raise ConfigError(f"merge output {out} already exists: name a new directory")
    tmp = out.with_name(out.name + ".merging")
    if tmp.exists():
        raise ConfigError(f"{tmp} exists: another merge into {out} is running, or one was killed (remove {tmp} "
                          "and merge again)")
    where = out.resolve()
    for p in shards:
        if p.exists() and p.resolve() in where.parents:  # (an output holding a shard exists, refused above)
            raise ConfigError(f"merge output {out} lies inside shard {p}: name a directory outside the shards (a "
                              "collection resuming in the shard would delete files it does not know)")
    journals = check_shards(shards)
    first_info = read_info(shards[0])
    report = MergeReport(out=out, episodes=0, frames=0)
    next_seeds: list[int] = []
    try:
        _copy_first_shard(shards[0], journals[0], tmp)
        report.shard_episodes.append((str(shards[0].resolve()), int(first_info["total_episodes"]), 0))
        writer = TandemDatasetWriter(tmp, repo_id, features=first_info["features"], fps=int(first_info["fps"]),
                                     robot_type=str(first_info.get("robot_type") or "panda"),
                                     checkpoint_every=checkpoint_every, mode="resume")
        with writer:
            for p, j in zip(shards[1:], journals[1:]):
                start = writer.num_episodes
                n = _copy_episodes(p, j, writer)
                report.shard_episodes.append((str(p.resolve()), n, start))
            for j in journals:
                st = j.get("state") if isinstance(j.get("state"), dict) else {}
                if isinstance(st.get("next_seed"), int):
                    next_seeds.append(int(st["next_seed"]))
            writer.update_state({"next_seed": max(next_seeds)} if next_seeds else {})
            writer.update_state({"merged_from": [str(p.resolve()) for p in shards]})
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    journal = read_journal(out) or {}
    report.episodes, report.frames = int(journal.get("total_episodes", 0)), int(journal.get("total_frames", 0))
    seeds: dict[str, set[int]] = {}
    for r in journal.get("episodes", []):
        if r.get("seed") is not None:
            seeds.setdefault(str(r.get("task")), set()).add(int(r["seed"]))
    report.seeds = {t: len(s) for t, s in sorted(seeds.items())}
    return report


def _copy_first_shard(shard: Path, journal: dict[str, Any], dest: Path) -> None:
    """Copy the files of the first shard's last commit to ``dest`` (its parquet files, the metadata LeRobot reads and
    the commit's snapshot; no staging folder, log or link), its journal's records tagged as :func:`_record` tags
    them. The first shard is a complete committed dataset, so writing the later shards into the copy is what
    resuming its collection writes; only the later shards' frames are decoded and written again.

    Raises:
        DatasetWriteError: a file cannot be read or written (named).
    """
    snapshot = f"{SNAPSHOT_DIR}/{journal.get('snapshot')}"
    names = [*journal.get("files", []), *SNAPSHOT_FILES, *(f"{snapshot}/{Path(f).name}" for f in SNAPSHOT_FILES)]
    tagged = dict(journal, episodes=[_tag(dict(r), shard, int(r["episode_index"]))
                                     if isinstance(r.get("episode_index"), int) else r
                                     for r in journal.get("episodes", [])])
    try:
        for name in names:
            if not (shard / name).is_file():
                continue  # e.g. stats.json of a dataset without frames: the writer rebuilds what LeRobot needs
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shard / name, dest / name)
        (dest / JOURNAL_PATH).write_text(json.dumps(tagged, indent=1))
    except OSError as e:
        raise DatasetWriteError(f"copying {shard} into {dest}: {e}") from e


def _copy_episodes(shard: Path, journal: dict[str, Any], writer: Any) -> int:
    """Write every episode of ``shard`` (in episode order) through ``writer``, one data file in memory at a time;
    returns how many.

    Raises:
        DatasetSchemaError: the shard's data files cannot be read, or disagree with its metadata (named).
    """
    import pyarrow.parquet as pq
    from lerobot.datasets.lerobot_dataset import LeRobotDatasetMetadata

    try:
        meta = LeRobotDatasetMetadata(writer.repo_id, root=shard)
    except Exception as e:  # noqa: BLE001 - any unreadable metadata: name the shard
        raise DatasetSchemaError(f"{shard}: cannot read its metadata ({type(e).__name__}: {e})") from e
    if int(meta.total_episodes) == 0:  # what a collection refused at start-up leaves: no tasks table, nothing to copy
        return 0
    texts = {int(i): str(t) for t, i in zip(meta.tasks.index, meta.tasks["task_index"])}
    records = {int(r["episode_index"]): r for r in journal.get("episodes", []) if isinstance(r.get("episode_index"), int)}
    expected, frames = 0, 0
    for f in sorted((shard / "data").rglob("*.parquet")):
        try:
            table = pq.read_table(f)
        except Exception as e:  # noqa: BLE001 - a corrupt file: name it
            raise DatasetSchemaError(f"{shard}: cannot read {f.relative_to(shard)} ({type(e).__name__}: {e})") from e
        per_frame = schema.frame_features(writer.features)  # the language columns are the writer's to derive
        missing = sorted(set(per_frame) - set(table.column_names))
        if missing:
            raise DatasetSchemaError(f"{shard}: {f.relative_to(shard)} lacks {missing}")
        columns = {k: table.column(k).to_pylist() for k in [*per_frame, "task_index", "episode_index",
                                                              "frame_index"]}
        by_episode: dict[int, list[int]] = {}
        for r, e in enumerate(columns["episode_index"]):
            by_episode.setdefault(int(e), []).append(r)
        for e in sorted(by_episode):
            if e != expected:
                raise DatasetSchemaError(f"{shard}: {f.relative_to(shard)} holds episode {e} where episode {expected} "
                                         "was next: its data files do not hold its episodes in order")
            rows = sorted(by_episode[e], key=lambda r: columns["frame_index"][r])
            for r in rows:
                writer.add_frame(_frame(columns, r, writer, texts, shard, e))
            writer.save_episode(_record(records.get(e, {}), writer, shard, e))
            expected += 1
            frames += len(rows)
    if expected != int(meta.total_episodes) or frames != int(meta.total_frames):
        raise DatasetSchemaError(f"{shard}: its data files hold {expected} episodes and {frames} frames, info.json "
                                 f"says {meta.total_episodes} and {meta.total_frames}")
    return expected


def _frame(columns: dict[str, list[Any]], r: int, writer: Any, texts: dict[int, str], shard: Path,
           episode: int) -> dict[str, Any]:
    """Row ``r`` of a shard's data file as a frame for :meth:`TandemDatasetWriter.add_frame`: images decoded from
    their PNG bytes, arrays shaped, ``subgoal.task_index`` registered again by its text, ``task`` the instruction."""
    import io

    import numpy as np
    from PIL import Image

    frame: dict[str, Any] = {}
    for k, ft in schema.frame_features(writer.features).items():
        v = columns[k][r]
        if ft["dtype"] in ("image", "video"):
            frame[k] = np.asarray(Image.open(io.BytesIO(v["bytes"])).convert("RGB"), dtype=np.uint8)
        else:
            frame[k] = np.asarray(v, dtype=np.dtype(ft["dtype"])).reshape(tuple(ft["shape"]))
    key = schema.SUBGOAL_TASK_INDEX_KEY
    if key in frame:
        old = int(frame[key].reshape(-1)[0])
        if old not in texts:
            raise DatasetSchemaError(f"{shard}: episode {episode} names subgoal text {old}, not in its tasks table")
        frame[key] = np.full_like(frame[key], writer.subgoal_task_index(texts[old]))
    instruction = int(columns["task_index"][r])
    if instruction not in texts:
        raise DatasetSchemaError(f"{shard}: episode {episode} names task {instruction}, not in its tasks table")
    frame["task"] = texts[instruction]
    return frame


def _record(record: dict[str, Any], writer: Any, shard: Path, episode: int) -> dict[str, Any]:
    """A shard's journal record of ``episode`` for the merge: tagged with its shard and episode there (a record that
    has them, from an earlier merge, keeps them and lists this shard in ``merged_via``), its attempts' ``task_index``
    that of their text in the merged tasks table."""
    rec = {k: v for k, v in record.items() if k != "episode_index"}
    if isinstance(rec.get("attempts"), list):
        rec["attempts"] = [dict(a, task_index=writer.subgoal_task_index(a["text"]))
                           if isinstance(a, dict) and isinstance(a.get("text"), str) and a["text"].strip() else a
                           for a in rec["attempts"]]
    return _tag(rec, shard, episode)


def _tag(rec: dict[str, Any], shard: Path, episode: int) -> dict[str, Any]:
    """``rec`` tagged with its shard and episode there; a record that has them, from an earlier merge, keeps them
    and lists this shard in ``merged_via``."""
    if "shard" in rec:  # a merge merged again: the record keeps where it was collected, and says through what
        return {**rec, "merged_via": [*rec.get("merged_via", []), str(shard.resolve())]}
    return {**rec, "shard": str(shard.resolve()), "shard_episode_index": episode}
